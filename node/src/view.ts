/**
 * Views: `store.view(async (v) => { ... })` reads several keys from one
 * snapshot of the file (KV-16).
 *
 * @module
 */

import type { Bucket } from './bucket'
import type { NativeSnapshot } from './native'
import { ScopedBucket, TxOrView } from './reads'
import type { Key } from './values'

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
export class View extends TxOrView<NativeSnapshot> {
	/** `bucket` (or a branch of it) read in this view. A bucket of another store is `InvalidError`. */
	with<T>(bucket: Bucket<T>): ViewBucket<T> {
		return new ViewBucket<T>(this.readsOf<T>(bucket, 'view', 'view.with'))
	}
}

/**
 * A bucket, or one branch of it, read in a view (`view.with(bucket)`): a
 * `Bucket`'s reads, each seeing the file as it was at the view's first
 * read, renewing nothing. It has no writes: its type has none, and from
 * plain JavaScript `set`, `create`, `take`, `delete`, `expire` and `clear`
 * reject with `InvalidError`. After the view, every call is `ClosedError`.
 */
export class ViewBucket<T> extends ScopedBucket<T> {
	/** The branch of `owners`, in the same view. */
	under(...owners: Key[]): ViewBucket<T> {
		return new ViewBucket<T>(this.reads.under(owners))
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
					const reads = this.reads
					reads.call(() => reads.bucket.clear(reads.source))
				},
				writable: true,
				configurable: true,
			})
		}
	}
}
