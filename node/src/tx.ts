/**
 * Transactions: `store.tx(async (tx) => { ... })` writes several buckets
 * all or nothing (KV-16).
 *
 * @module
 */

import { type Bucket, type CreateOptions, type Created, createdOf, type SetOptions, type VersionOptions } from './bucket'
import type { Counters } from './counters'
import { kindParts } from './handles'
import type { Quota, RateLimit } from './limits'
import type { Once } from './once'
import { joinKind, type TxCounters, type TxOnce, type TxQuota } from './tx-kinds'
import type { Duration } from './durations'
import type { NativeEntry, NativeTx } from './native'
import { takeDecoded } from './codec'
import { ScopedBucket, TxOrView, type ScopedReads } from './reads'
import { dateArg, type Key } from './values'

/**
 * An open transaction, given to the function of `store.tx`. `tx.with(bucket)`
 * is that bucket inside the transaction. After the function returns, the
 * transaction and every handle of it are `ClosedError`.
 *
 * @example
 * ```ts
 * await store.tx(async (tx) => {
 *   const userId = await tx.with(codes).take(digest(code))
 *   if (userId === undefined) throw new Error('wrong or used code')
 *   await tx.with(sessions).under(userId).set(digest(token), { userId, device: 'web' })
 * })
 * ```
 */
export class Tx extends TxOrView<NativeTx> {
	/**
	 * `bucket` (or a branch of it) inside this transaction: its writes commit
	 * with the transaction's or not at all, and its reads see the
	 * transaction's own writes. Durable counters, a quota and a once's
	 * answers (`get`, `delete`) join the same way. Counters with
	 * `flushEvery` and rate limits keep their state in memory and are
	 * `InvalidError`, saying so, as is a handle of another store.
	 */
	with<T>(bucket: Bucket<T>): TxBucket<T>
	with<N extends number | bigint>(counters: Counters<N>): TxCounters<N>
	with<W extends string>(quota: Quota<W>): TxQuota<W>
	with<T>(once: Once<T>): TxOnce<T>
	with(limit: RateLimit): never
	with(handle: unknown): unknown {
		const kind = typeof handle === 'object' && handle !== null ? kindParts.get(handle) : undefined
		if (kind !== undefined) return joinKind(this.native, this.scope, kind)
		return this.#bucket(handle as Bucket<unknown>)
	}

	#bucket<T>(bucket: Bucket<T>): TxBucket<T> {
		return new TxBucket<T>(this.native, this.readsOf<T>(bucket, 'transaction', 'tx.with'))
	}
}

/**
 * A bucket, or one branch of it, inside a transaction (`tx.with(bucket)`).
 * It has a `Bucket`'s calls; each runs inside the transaction at once and
 * answers an already-resolved Promise. Reads see the transaction's own
 * writes, and others see none of them before the commit. Reads renew no
 * `idle` key. An error of one call (a `ConflictError` of `ifVersion`, say)
 * changes nothing and leaves the transaction usable: catch it to go on, or
 * let it reach `store.tx` to roll everything back. After the transaction,
 * every call is `ClosedError`.
 */
export class TxBucket<T> extends ScopedBucket<T> {
	readonly #native: NativeTx

	/** @internal Made by `tx.with` and `under`. */
	constructor(native: NativeTx, reads: ScopedReads<T>) {
		super(reads)
		this.#native = native
	}

	/** The branch of `owners`, inside the same transaction. */
	under(...owners: Key[]): TxBucket<T> {
		return new TxBucket<T>(this.#native, this.reads.under(owners))
	}

	/**
	 * Writes the value inside the transaction, durable when the transaction
	 * commits; answers the version written.
	 */
	async set(key: Key, value: T, options?: SetOptions): Promise<string> {
		const r = this.reads
		return r.call(() => r.bucket.set(key, ...valueArgs(r, key, value, options), options?.ifVersion, this.#native) as string)
	}

	/** Writes the value only if the key is absent (or expired); answers whether it did. */
	async create(key: Key, value: T, options?: CreateOptions): Promise<boolean> {
		const r = this.reads
		return r.call(() => r.bucket.create(key, ...valueArgs(r, key, value, options), false, this.#native) as boolean)
	}

	/** `create` inside the transaction, answering the entry written or found (as `Bucket.createEntry`). */
	async createEntry(key: Key, value: T, options?: CreateOptions): Promise<Created<T>> {
		const r = this.reads
		const c = r.call(() => r.bucket.create(key, ...valueArgs(r, key, value, options), true, this.#native))
		return createdOf(c as { written: boolean; entry: NativeEntry }, value, (e) => r.entryOf(e))
	}

	/**
	 * Reads and deletes the key inside the transaction: of concurrent
	 * transactions taking it, exactly one gets the value. A value that does
	 * not read is `CorruptError` and stays.
	 */
	async take(key: Key, options?: VersionOptions): Promise<T | undefined> {
		const r = this.reads
		if (r.codec) {
			return takeDecoded(
				(v) => r.decode(v, key),
				(check) => r.call(() => r.bucket.take(key, options?.ifVersion, check, this.#native)),
			)
		}
		const value = r.call(() => r.bucket.take(key, options?.ifVersion, undefined, this.#native))
		return value === undefined ? undefined : r.decode(value, key)
	}

	/** Deletes the key inside the transaction; answers whether a live key was there. */
	async delete(key: Key, options?: VersionOptions): Promise<boolean> {
		const r = this.reads
		return r.call(() => r.bucket.delete(key, options?.ifVersion, this.#native) as boolean)
	}

	/**
	 * Gives a live key a new expiry (a span from now, or a time) inside the
	 * transaction; answers whether a live key was there.
	 */
	async expire(key: Key, when: Duration | Date, options?: VersionOptions): Promise<boolean> {
		const r = this.reads
		return r.call(
			() =>
				(when instanceof Date
					? r.bucket.expire(key, undefined, when.getTime(), options?.ifVersion, this.#native)
					: r.bucket.expire(key, when, undefined, options?.ifVersion, this.#native)) as boolean,
		)
	}

	/** Removes this branch and every branch under it inside the transaction (at most 10,000 keys, else `LimitError`). */
	async clear(): Promise<void> {
		const r = this.reads
		r.call(() => r.bucket.clear(this.#native))
	}
}

/** The addon's arguments of a write after its key: the value encoded, the `ttl`, and `expiresAt` in ms. */
function valueArgs<T>(r: ScopedReads<T>, key: Key, value: T, options: CreateOptions | undefined) {
	return [r.encode(value, key), options?.ttl, dateArg(options?.expiresAt, 'expiresAt', { bucket: r.bucket.name })] as const
}
