/**
 * Views: `store.view(async (v) => { ... })` reads several keys from one
 * snapshot of the file (KV-16).
 *
 * @module
 */

import type { Bucket, Entry, ListOptions, Page } from './bucket'
import type { NativeSnapshot } from './native'
import type { Codec } from './codec'
import { partsOf, SessionReads } from './reads'
import type { Scope } from './scope'
import type { Key, ValueType } from './values'

/**
 * A read snapshot, given to the function of `store.view`. `view.with(bucket)`
 * reads that bucket as the file was at the view's first read. After the
 * function returns, the view and every handle of it are `ClosedError`.
 *
 * @example
 * ```ts
 * const [plan, used] = await store.view(async (v) => [
 *   await v.with(plans).get(userId),
 *   await v.with(usage).get(userId),
 * ])
 * ```
 */
export class View {
	readonly #native: NativeSnapshot
	readonly #scope: Scope

	/** @internal Made by `store.view`. */
	constructor(native: NativeSnapshot, scope: Scope) {
		this.#native = native
		this.#scope = scope
	}

	/** Whether the view is still open (its function has not returned). */
	get open(): boolean {
		return this.#scope.open
	}

	/** `bucket` (or a branch of it) read in this view. A bucket of another store is `InvalidError`. */
	with<T>(bucket: Bucket<T>): ViewBucket<T> {
		const parts = partsOf(bucket, this.#scope.store, 'view.with')
		const reads = new SessionReads<T>(
			this.#native,
			parts.native,
			parts.owners,
			this.#scope,
			'view',
			parts.codec as Codec<T> | undefined,
		)
		reads.check()
		return new ViewBucket<T>(reads)
	}
}

/**
 * A bucket, or one branch of it, read in a view (`view.with(bucket)`): a
 * `Bucket`'s reads, each seeing the file as it was at the view's first
 * read, renewing nothing. It has no writes: its type has none, and from
 * plain JavaScript `set`, `create`, `take`, `delete`, `expire` and `clear`
 * reject with `InvalidError`. After the view, every call is `ClosedError`.
 */
export class ViewBucket<T> {
	readonly #reads: SessionReads<T>

	/** @internal Made by `view.with` and `under`. */
	constructor(reads: SessionReads<T>) {
		this.#reads = reads
	}

	/** The bucket's name. */
	get name(): string {
		return this.#reads.bucket.name
	}

	/** The type of the bucket's values. */
	get type(): ValueType {
		return this.#reads.bucket.valueType as ValueType
	}

	/** The owners of this branch, outermost first. */
	get owners(): readonly Key[] {
		return this.#reads.owners
	}

	/** The branch of `owners`, in the same view. */
	under(...owners: Key[]): ViewBucket<T> {
		return new ViewBucket<T>(this.#reads.under(owners))
	}

	/** The value of a live key in the view, or `undefined`. */
	async get(key: Key): Promise<T | undefined> {
		return this.#reads.get(key)
	}

	/** The value with its version and expiry in the view, or `undefined`. */
	async entry(key: Key): Promise<Entry<T> | undefined> {
		return this.#reads.entry(key)
	}

	/** Whether a live key is there in the view. */
	async has(key: Key): Promise<boolean> {
		return this.#reads.has(key)
	}

	/** A page of this branch's own keys in the view. */
	async list(options?: ListOptions): Promise<Page<T>> {
		return this.#reads.list(options)
	}

	/** Every key of this branch in the view, a page at a time, all from the one snapshot. */
	all(): AsyncGenerator<Entry<T>, void, undefined> {
		return this.#reads.all()
	}

	// The writes a caller in plain JavaScript may try on a view: each rejects
	// with the engine's InvalidError for a write in a snapshot, which names
	// the way to write, rather than a TypeError that says nothing of views.
	// Not in the type, so TypeScript refuses them before they run. The
	// engine refuses every write in a snapshot alike, before it reads any
	// argument; `clear`, which takes none, asks it for that answer.
	static {
		for (const write of ['set', 'create', 'take', 'delete', 'expire', 'clear']) {
			Object.defineProperty(ViewBucket.prototype, write, {
				async value(this: ViewBucket<unknown>): Promise<void> {
					const reads = this.#reads
					reads.call(() => reads.bucket.clear(reads.source))
				},
				writable: true,
				configurable: true,
			})
		}
	}
}
