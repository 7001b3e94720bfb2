/**
 * The reads of a bucket inside a transaction or a view, shared by
 * `TxBucket` and `ViewBucket`: the same conversions as a `Bucket`'s reads,
 * run on the transaction's or snapshot's connection, refused once it ended.
 *
 * @module
 */

import { branchOf } from './handles'
import { bucketParts, type Entry, type ListOptions, type Page } from './bucket'
import { type Codec, decodeWith, encodeWith } from './codec'
import { ClosedError, InvalidError } from './errors'
import { native, type NativeBucket, type NativeEntry, type NativeScope } from './native'
import type { Scope } from './scope'
import { type Crossing, crossingOf, decodeAs, encodeAs, invalidArg, type Key, showKey, type ValueType } from './values'

/**
 * A transaction or a view: the addon's transaction or snapshot, and the scope that ends
 * when the function given it returns. @internal
 */
export class TxOrView<N extends NativeScope> {
	/** @internal The transaction's or snapshot's calls. */
	protected readonly native: N
	readonly #scope: Scope

	/** @internal Made by `store.tx` and `store.view`. */
	constructor(native: N, scope: Scope) {
		this.native = native
		this.#scope = scope
	}

	/** Whether it is still open (its function has not returned). */
	get open(): boolean {
		return this.#scope.open
	}

	/**
	 * The reads of `bucket` (a `with(bucket)` argument, which the engine
	 * admits: one of its store's) in this `kind`, transaction or view. @internal
	 */
	protected readsOf<T>(bucket: unknown, kind: 'transaction' | 'view', call: string): ScopedReads<T> {
		const parts = typeof bucket === 'object' && bucket !== null ? bucketParts.get(bucket) : undefined
		if (parts === undefined) {
			throw new InvalidError(`${call} takes a bucket of the store (store.bucket(name) or a branch of one)`)
		}
		native.admit(this.native, parts.native)
		const codec = parts.codec as Codec<T> | undefined
		const reads = new ScopedReads<T>(this.native, parts.native, parts.owners, this.#scope, kind, codec)
		reads.check()
		return reads
	}

	/** @internal The scope, for the handles of other kinds joined to it. */
	protected get scope(): Scope {
		return this.#scope
	}
}

/**
 * Runs `f`, an addon call of the handle `name` in `scope` (a `kind`,
 * transaction or view): `ClosedError` once it has ended, and a wrong JS
 * type `InvalidError`. @internal
 */
export function callIn<R>(scope: Scope, kind: string, name: string, f: () => R): R {
	if (!scope.open) throw native.refusal(kind === 'view' ? 'view_ended' : 'tx_ended', undefined, name)
	try {
		return f()
	} catch (e) {
		throw invalidArg(e, { bucket: name })
	}
}

/** One bucket (or branch) read through a transaction or snapshot. @internal */
export class ScopedReads<T> {
	/** The transaction's or snapshot's calls. */
	readonly source: NativeScope
	/** The addon's bucket of this branch. */
	readonly bucket: NativeBucket
	/** The owners of this branch, outermost first. */
	readonly owners: readonly Key[]
	/** The transaction or view, open or ended. */
	readonly scope: Scope
	/** `'transaction'` or `'view'`, for messages. */
	readonly kind: string
	/** The bucket's own codec, when it has one: values decode here, not in the engine. */
	readonly codec: Codec<T> | undefined
	readonly #crossing: Crossing

	constructor(
		source: NativeScope,
		bucket: NativeBucket,
		owners: readonly Key[],
		scope: Scope,
		kind: string,
		codec?: Codec<T>,
	) {
		this.source = source
		this.bucket = bucket
		this.owners = owners
		this.scope = scope
		this.kind = kind
		this.codec = codec
		this.#crossing = crossingOf(bucket.valueType)
	}

	/** The same reads on the branch of `owners`. */
	under(owners: Key[]): ScopedReads<T> {
		let native: NativeBucket
		try {
			native = branchOf(this.bucket, owners)
		} catch (e) {
			throw invalidArg(e, { bucket: this.bucket.name })
		}
		return new ScopedReads<T>(this.source, native, [...this.owners, ...owners], this.scope, this.kind, this.codec)
	}

	/** Throws `ClosedError` once the transaction or view has ended. */
	check(): void {
		callIn(this.scope, this.kind, this.bucket.name, () => undefined)
	}

	/** Runs an addon call, mapping a wrong JS type to `InvalidError`. */
	call<R>(f: () => R): R {
		return callIn(this.scope, this.kind, this.bucket.name, f)
	}

	/** The value of a row as the bucket's type. */
	decode(value: unknown, key: Key): T {
		if (this.codec) return decodeWith(this.codec, value, this.bucket.name, () => showKey(key, this.owners))
		if (this.#crossing === 'as-is') return value as T
		return decodeAs(this.#crossing, value, this.bucket.name, () => showKey(key, this.owners)) as T
	}

	/** A value as the addon takes it (JSON as its text). */
	encode(value: T, key: Key): unknown {
		if (this.codec) return encodeWith(this.codec, value, this.bucket.name, () => showKey(key, this.owners))
		if (this.#crossing === 'as-is') return value
		return encodeAs(this.#crossing, value, this.bucket.name, () => showKey(key, this.owners))
	}

	/** An entry with its value as the bucket's type. */
	entryOf(e: NativeEntry): Entry<T> {
		if (this.codec) e.value = decodeWith(this.codec, e.value, this.bucket.name, () => showKey(e.key, this.owners))
		else if (this.#crossing !== 'as-is') e.value = decodeAs(this.#crossing, e.value, this.bucket.name, () => showKey(e.key, this.owners))
		return e as Entry<T>
	}

	/** The value of a live key, or `undefined`. */
	get(key: Key): T | undefined {
		const value = this.call(() => this.bucket.get(key, this.source))
		return value === undefined ? undefined : this.decode(value, key)
	}

	/** The value with its version and expiry, or `undefined`. */
	entry(key: Key): Entry<T> | undefined {
		const e = this.call(() => this.bucket.entry(key, this.source))
		return e === undefined ? undefined : this.entryOf(e)
	}

	/** Whether a live key is there. */
	has(key: Key): boolean {
		return this.call(() => this.bucket.has(key, this.source))
	}

	/** A page of the branch's own keys. */
	list(options?: ListOptions): Page<T> {
		const page = this.call(() => this.bucket.list(options?.after, options?.limit, this.source))
		return { entries: page.entries.map((e) => this.entryOf(e)), next: page.next }
	}

	/** Every key of the branch, a page at a time. */
	async *all(): AsyncGenerator<Entry<T>, void, undefined> {
		let after: Key | undefined
		for (;;) {
			const page = this.list({ after, limit: native.MAX_PAGE })
			yield* page.entries
			if (page.next === undefined) return
			after = page.next
		}
	}
}

/**
 * The reads every bucket in a transaction or a view has, each seeing what
 * its transaction or snapshot sees. @internal
 */
export class ScopedBucket<T> {
	/** @internal */
	protected readonly reads: ScopedReads<T>

	/** @internal Made by `with` and `under`. */
	constructor(reads: ScopedReads<T>) {
		this.reads = reads
	}

	/** The bucket's name. */
	get name(): string {
		return this.reads.bucket.name
	}

	/** The type of the bucket's values. */
	get type(): ValueType {
		return this.reads.bucket.valueType as ValueType
	}

	/** The owners of this branch, outermost first. */
	get owners(): readonly Key[] {
		return this.reads.owners
	}

	/** The value of a live key as the transaction or view sees it, or `undefined`. */
	async get(key: Key): Promise<T | undefined> {
		return this.reads.get(key)
	}

	/** The value with its version and expiry as the transaction or view sees it, or `undefined`. */
	async entry(key: Key): Promise<Entry<T> | undefined> {
		return this.reads.entry(key)
	}

	/** Whether a live key is there, as the transaction or view sees it. */
	async has(key: Key): Promise<boolean> {
		return this.reads.has(key)
	}

	/** A page of this branch's own keys as the transaction or view sees them. */
	async list(options?: ListOptions): Promise<Page<T>> {
		return this.reads.list(options)
	}

	/** Every key of this branch as the transaction or view sees it, a page at a time. */
	all(): AsyncGenerator<Entry<T>, void, undefined> {
		return this.reads.all()
	}
}
