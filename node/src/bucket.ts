/**
 * Buckets of values: `store.bucket<T>(name, options)`.
 *
 * @module
 */

import { branchOf } from './handles'
import { type Codec, decodeWith, encodeWith, takeDecoded } from './codec'
import type { Duration } from './durations'
import { bareSet, type NativeBucket, type NativeEntry, native, type SetHandle, setHandle } from './native'
import { waitsForOwnTx, writeOnStore } from './scope'
import { type SignalOptions, withSignal } from './signals'
import { type Crossing, crossingOf, dateArg, decodeAs, encodeAs, invalidArg, type Key, showKey, type ValueType } from './values'

/** The options of a bucket. `ttl` and `idle` together are `Invalid`. */
export interface BucketOptions {
	/** Each key expires this long after it is created; a later `set` keeps a live key's expiry. */
	ttl?: Duration
	/** Each key expires this long after it was last read or written. */
	idle?: Duration
}

/** A key with its value, version and expiry. */
export interface Entry<T> {
	/** The key, without its owners (a `Uint8Array` only when its bytes are not UTF-8). */
	key: string | Uint8Array
	/** The value. */
	value: T
	/** The revision that wrote the value; pass it as `ifVersion`. Versions never repeat. */
	version: string
	/** When the key expires, if it does. */
	expiresAt: Date | undefined
}

/**
 * What `createEntry` did: whether it wrote, and the key's entry either way:
 * the one written (the value given, its version and expiry) or the live one
 * found. `entry.version` is the claim a later write binds to with `ifVersion`.
 */
export interface Created<T> {
	/** Whether the key was absent (or expired) and now holds the value given. */
	written: boolean
	/** The entry written, or the live one found. */
	entry: Entry<T>
}

/** The entry `createEntry` answers: the one written holds the value given, the one found is decoded. @internal */
export function createdOf<T>(
	answer: { written: boolean; entry: NativeEntry },
	given: T,
	decode: (e: NativeEntry) => Entry<T>,
): Created<T> {
	const { written, entry } = answer
	if (!written) return { written, entry: decode(entry) }
	entry.value = given
	return { written, entry: entry as Entry<T> }
}

/** One page of `list`. */
export interface Page<T> {
	/** The entries, in the byte order of their keys' text. */
	entries: Entry<T>[]
	/** The cursor of the next page (`list({ after: next })`), when there may be one. */
	next: string | Uint8Array | undefined
}

/** The options of `set`. */
export interface SetOptions extends SignalOptions {
	/** Expire this long from now, in place of the bucket's `ttl` and the key's own expiry. */
	ttl?: Duration
	/** Expire at this time; a time in the past makes the key absent at once. */
	expiresAt?: Date
	/** Write only if the key is live at this version; otherwise `ConflictError`. */
	ifVersion?: string
}

/** The options of `create`. */
export interface CreateOptions extends SignalOptions {
	/** Expire this long from now, in place of the bucket's `ttl`. */
	ttl?: Duration
	/** Expire at this time. */
	expiresAt?: Date
}

/** The options of `take`, `delete` and `expire`. */
export interface VersionOptions extends SignalOptions {
	/** Apply only if the key is live at this version; otherwise `ConflictError`. */
	ifVersion?: string
}

/** The options of `list`. */
export interface ListOptions {
	/** Start after this key: the `next` of the page before. */
	after?: Key
	/** Keys a page holds, 1 to 1000 (100 when not given). */
	limit?: number
}

/** What a transaction or view needs of a bucket: the addon's bucket, its owners, its store. @internal */
export interface BucketParts {
	readonly native: NativeBucket
	readonly owners: readonly Key[]
	readonly store: object | undefined
	/** The bucket's own codec, when it has one. */
	readonly codec?: Codec<unknown> | undefined
}

/** The parts of each bucket, for `tx.with` and `view.with`. @internal */
export const bucketParts = new WeakMap<object, BucketParts>()

/**
 * A bucket of values of type `T`, or one branch of it (`under`).
 *
 * Reads run inline and answer an already-resolved Promise; writes go to the
 * store's writer and resolve once durable, committed together with every
 * other write waiting at the time.
 *
 * @example
 * ```ts
 * const codes = store.bucket<number>('sign-in-codes', { ttl: '15m' })
 * await codes.set(digest(code), user.id)
 * const userId = await codes.take(digest(code)) // undefined if wrong, used or expired
 * ```
 */
export class Bucket<T> {
	readonly #native: NativeBucket
	/** The name, read from the addon once: each read of its getter there costs a napi call and a new string. */
	readonly #name: string
	/** How values cross to the addon: by kind, as JSON text, or as they are. */
	readonly #crossing: Crossing
	/** The addon's handle of this bucket for `bareSet`, made at the first set without options. */
	#handle: SetHandle | undefined
	readonly #owners: readonly Key[]
	readonly #store: object | undefined
	readonly #codec: Codec<T> | undefined

	/**
	 * @internal Made by `store.bucket` and `under`; `store` is the addon's
	 * store it belongs to; `codec` the bucket's own, over a bucket of bytes.
	 */
	constructor(native: NativeBucket, owners: readonly Key[] = [], store?: object, codec?: Codec<T>) {
		this.#native = native
		this.#name = native.name
		this.#crossing = crossingOf(native.valueType)
		this.#owners = owners
		this.#store = store
		this.#codec = codec
		bucketParts.set(this, { native, owners, store, codec: codec as Codec<unknown> | undefined })
	}

	/** The bucket's name. */
	get name(): string {
		return this.#name
	}

	/** The type of the bucket's values. */
	get type(): ValueType {
		return this.#native.valueType as ValueType
	}

	/** The owners of this branch, outermost first. */
	get owners(): readonly Key[] {
		return this.#owners
	}

	/**
	 * The branch of `owners`: the keys that belong to them. Branches nest, and
	 * `under(a).under(b)` is `under(a, b)`.
	 */
	under(...owners: Key[]): Bucket<T> {
		const native = branchOf(this.#native, owners)
		return new Bucket<T>(native, [...this.#owners, ...owners], this.#store, this.#codec)
	}

	#decode(value: unknown, key: Key): T {
		if (this.#codec) return decodeWith(this.#codec, value, this.#name, () => showKey(key, this.#owners))
		// By kind, only JSON text needs a parse: null and numbers are values already.
		if (this.#crossing === 'as-is' || (this.#crossing === 'auto' && typeof value !== 'string')) return value as T
		return decodeAs(this.#crossing, value, this.#name, () => showKey(key, this.#owners)) as T
	}

	#encode(value: T, key: Key): unknown {
		if (this.#codec) return encodeWith(this.#codec, value, this.#name, () => showKey(key, this.#owners))
		// By kind, only an object or array needs its JSON here: the addon keeps the rest.
		if (this.#crossing === 'as-is' || (this.#crossing === 'auto' && (typeof value !== 'object' || value === null))) {
			return value
		}
		return encodeAs(this.#crossing, value, this.#name, () => showKey(key, this.#owners))
	}

	#entry(e: NativeEntry): Entry<T> {
		if (this.#codec) e.value = decodeWith(this.#codec, e.value, this.#name, () => showKey(e.key, this.#owners))
		else if (this.#crossing !== 'as-is') e.value = this.#decode(e.value, e.key)
		return e as Entry<T>
	}

	/** The value of a live key, or `undefined`. In an `idle` bucket this keeps the key alive. */
	async get(key: Key): Promise<T | undefined> {
		const value = this.#native.get(key)
		return value === undefined ? undefined : this.#decode(value, key)
	}

	/** The value with its version and expiry, or `undefined`. Renews as `get` does. */
	async entry(key: Key): Promise<Entry<T> | undefined> {
		const e = this.#native.entry(key)
		return e === undefined ? undefined : this.#entry(e)
	}

	/** Whether a live key is there. Renews as `get` does. */
	async has(key: Key): Promise<boolean> {
		return this.#native.has(key)
	}

	/**
	 * Writes the value, durably, and resolves with the version written (the
	 * one `entry` reads and `ifVersion` takes). A value over 1 MiB is
	 * `LimitError`; one JSON cannot write, or not of the bucket's type, is
	 * `InvalidError`.
	 */
	set(key: Key, value: T, options?: SetOptions): Promise<string> {
		const refused = waitsForOwnTx(this.#store, { bucket: this.#name })
		if (refused) return Promise.reject(refused)
		try {
			const encoded = this.#encode(value, key)
			if (options == null) return bareSet((this.#handle ??= setHandle(this.#native)), key, encoded)
			return withSignal<string>(options.signal, { bucket: this.#name }, () =>
				this.#native.set(
					key,
					encoded,
					options.ttl,
					dateArg(options.expiresAt, 'expiresAt', { bucket: this.#name }),
					options.ifVersion,
				),
			)
		} catch (e) {
			return Promise.reject(invalidArg(e, { bucket: this.#name }))
		}
	}

	/** Writes the value only if the key is absent (or expired); resolves with whether it did. */
	create(key: Key, value: T, options?: CreateOptions): Promise<boolean> {
		return this.#create(key, value, options, false)
	}

	/**
	 * `create`, resolving with the key's entry as well: the one written or the
	 * live one found. Its `entry.version` is the claim a later `set` binds to:
	 *
	 * ```ts
	 * const { written, entry } = await seen.createEntry(event.id, 'claimed', { ttl: '10m' })
	 * if (written) await seen.set(event.id, 'done', { ifVersion: entry.version, ttl: '7d' })
	 * ```
	 */
	createEntry(key: Key, value: T, options?: CreateOptions): Promise<Created<T>> {
		const made = this.#create<{ written: boolean; entry: NativeEntry }>(key, value, options, true)
		return made.then((c) => createdOf(c, value, (e) => this.#entry(e)))
	}

	/** `create`, answering (`entry`) `{ written, entry }` or whether it wrote. */
	#create<R>(key: Key, value: T, options: CreateOptions | undefined, entry: boolean): Promise<R> {
		const expiresAt = () => dateArg(options?.expiresAt, 'expiresAt', { bucket: this.#name })
		return writeOnStore<R>(
			this.#store,
			this.#name,
			() => this.#native.create(key, this.#encode(value, key), options?.ttl, expiresAt(), entry),
			options?.signal,
		)
	}

	/**
	 * Reads and deletes the key in one write: of racing callers exactly one
	 * gets the value. A value that no longer reads is `CorruptError` and stays.
	 */
	take(key: Key, options?: VersionOptions): Promise<T | undefined> {
		const ifVersion = options?.ifVersion
		if (this.#codec) {
			return writeOnStore<T | undefined>(
				this.#store,
				this.#name,
				() =>
					takeDecoded(
						(v) => this.#decode(v, key),
						(check) => this.#native.take(key, ifVersion, check),
					).catch((e: unknown) => Promise.reject(invalidArg(e, { bucket: this.#name }))),
				options?.signal,
			)
		}
		const taken = writeOnStore<unknown>(this.#store, this.#name, () => this.#native.take(key, ifVersion), options?.signal)
		if (this.#crossing === 'as-is') return taken as Promise<T | undefined>
		return taken.then((v) => (v === undefined ? undefined : this.#decode(v, key)))
	}

	/** Deletes the key; resolves with whether a live key was there. */
	delete(key: Key, options?: VersionOptions): Promise<boolean> {
		return writeOnStore(this.#store, this.#name, () => this.#native.delete(key, options?.ifVersion), options?.signal)
	}

	/**
	 * Gives a live key a new expiry (a span from now, or a time), keeping
	 * its value and version; resolves with whether a live key was there.
	 */
	expire(key: Key, when: Duration | Date, options?: VersionOptions): Promise<boolean> {
		return writeOnStore(
			this.#store,
			this.#name,
			() =>
				when instanceof Date
					? this.#native.expire(key, undefined, when.getTime(), options?.ifVersion)
					: this.#native.expire(key, when, undefined, options?.ifVersion),
			options?.signal,
		)
	}

	/** Removes this branch and every branch under it, for every reader at once. */
	clear(options?: SignalOptions): Promise<void> {
		return writeOnStore(this.#store, this.#name, () => this.#native.clear(), options?.signal)
	}

	/** A page of this branch's own keys, in the byte order of their text. Renews nothing. */
	async list(options?: ListOptions): Promise<Page<T>> {
		let page
		try {
			page = this.#native.list(options?.after, options?.limit)
		} catch (e) {
			throw invalidArg(e, { bucket: this.#name })
		}
		return { entries: page.entries.map((e) => this.#entry(e)), next: page.next }
	}

	/** Every key of this branch, a page at a time, holding no snapshot between pages. Renews nothing. */
	async *all(): AsyncGenerator<Entry<T>, void, undefined> {
		let after: Key | undefined
		for (;;) {
			const page = await this.list({ after, limit: native.MAX_PAGE })
			yield* page.entries
			if (page.next === undefined) return
			after = page.next
		}
	}
}
