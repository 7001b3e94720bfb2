/**
 * The store: `const store = await open('data')`, its handles, its test
 * clock and maintenance.
 *
 * @module
 */

import { Bucket, type BucketOptions } from './bucket'
import { type Codec, checkCodec } from './codec'
import { type CounterType, type CounterTypes, Counters, type CountersOptions } from './counters'
import type { Duration, Rate } from './durations'
import { InvalidError } from './errors'
import { Quota, RateLimit, type RateLimitOptions } from './limits'
import { native, type NativeMaintenance, type NativeStore, type NativeTx } from './native'
import { Once, type OnceOptions } from './once'
import { refuseNestedTx, runInside, type Scope, waitsForOwnTx } from './scope'
import { abortError, abortedAs, type AbortSignalLike, SignalCancel, type SignalOptions, signalOf } from './signals'
import { Tx } from './tx'
import { crossingOf, dateArg, invalidArg, type TypedOptions, type ValueType, type ValueTypes } from './values'
import { View } from './view'

/** What `make` opens of the handle `name`; an argument of the wrong type is `InvalidError` naming it. */
function opening<T>(name: string, make: () => T): T {
	try {
		return make()
	} catch (e) {
		throw invalidArg(e, { bucket: String(name) })
	}
}

/** The options of `open`. */
export interface OpenOptions {
	/**
	 * A test clock that starts at this time. The store is then manual: nothing
	 * runs in the background, and `store.maintain()` does the flushes and
	 * sweeps when the test says. Move it with `store.clock.advance('16m')`.
	 */
	clock?: Date
	/**
	 * A memory budget in bytes (at least 1 MiB) for the values the store
	 * holds at once; by default there is none. A call holds the memory its
	 * value may need before it makes the value (a write its size, a read the
	 * largest value, 1 MiB; a page of `list` 4 MiB) and waits its turn while
	 * the budget is spent, so the process stays within it under any load.
	 * Inside `store.tx()` or `store.view()` a call takes what is free or is
	 * `LimitError` at once (run the transaction again).
	 */
	memory?: number
	/**
	 * How many bytes of kv.db each reader maps into memory, a whole number
	 * from 0 (default: 1 GiB, or 0 with a `memory` budget). Mapped reads
	 * cost no system call, so a `get` over a million keys costs about what
	 * one over ten thousand does; the price is that a mapped page that
	 * cannot be read (a failing disk, or kv.db cut short by another program
	 * in the middle of a read) stops the process with SIGBUS instead of
	 * raising an error. Set 0 to read with plain system calls instead: on a
	 * network filesystem, or wherever an error beats a crash.
	 */
	mmapSize?: number
	/**
	 * Whether a reader keeps its read-mark lock in `kv.db-shm` between reads
	 * while the file is quiet (default: true; false with a test clock). A
	 * `get` then skips two system calls. The lock is given back within
	 * milliseconds of another process's commit and before this store's
	 * writer begins. Set false to have every read take and give back its
	 * lock, as plain SQLite does: for a program that runs a blocking
	 * checkpoint of kv.db itself and must not wait those milliseconds.
	 */
	keepReadLocks?: boolean
	/**
	 * Whether the files the store creates are its group's as well as its
	 * owner's: a new directory 0770 and files 0660, for processes of several
	 * users in one group. By default (false) they are the owner's only, 0700
	 * and 0600 whatever the umask: anyone who can write `kv.db-limits` can
	 * reset every rate limit. Files that exist keep their permissions.
	 */
	shareWithGroup?: boolean
}

/** The addon's store behind each `Store`, for the package's own tests. @internal */
export const nativeOf = new WeakMap<Store, NativeStore>()

/** What one `maintain()` did. */
export type Maintenance = NativeMaintenance

/**
 * The store's clock. Expiry is judged on it; it never goes backwards. Only
 * a store opened with a test clock can be moved.
 */
export class Clock {
	readonly #native: NativeStore

	/** @internal Made by the store. */
	constructor(native: NativeStore) {
		this.#native = native
	}

	/** Whether this is a test clock (the store was opened with `clock`). */
	get manual(): boolean {
		return this.#native.isManual()
	}

	/** The time now. */
	now(): Date {
		return new Date(this.#native.now())
	}

	/** Moves a test clock forward by `by` (`'16m'`, `'1h30m'`, or ms); returns the new time. */
	advance(by: Duration): Date {
		return new Date(this.#native.advance(by))
	}

	/** Sets a test clock to `to`, which must not be before its time now. */
	set(to: Date): void {
		this.#native.setClock(dateArg(to, 'the clock', {}) ?? Number.NaN)
	}
}

/**
 * An open store: one directory, one `kv.db` inside it. Open it with
 * {@link open}; close it with `close()` or `await using`.
 */
export class Store implements AsyncDisposable {
	readonly #native: NativeStore
	/** The store's clock; a test clock can be moved. */
	readonly clock: Clock

	/** @internal Made by {@link open}. */
	constructor(nativeStore: NativeStore) {
		this.#native = nativeStore
		this.clock = new Clock(nativeStore)
		nativeOf.set(this, nativeStore)
	}

	/** The directory of the store. */
	get dir(): string {
		return this.#native.dir()
	}

	/** Whether the store is closed (calls then reject with `ClosedError`). */
	get closed(): boolean {
		return this.#native.isClosed()
	}

	/**
	 * A bucket of scalar values of one type, so that what Python, Go and Rust
	 * write under the same name reads back right:
	 * `store.bucket('names', { type: 'string' })` holds strings.
	 */
	bucket<K extends Exclude<ValueType, 'json' | 'auto'>>(name: string, options: BucketOptions & { type: K }): Bucket<ValueTypes[K]>
	/**
	 * A bucket of values of type `T`, each kept by its kind unless `type`
	 * says otherwise (`'json'` keeps every value as JSON):
	 * `store.bucket<number>('sign-in-codes', { ttl: '15m' })` keeps integers
	 * as Python's `int` and Go's `int64` do, and
	 * `store.bucket<Session>('sessions', { idle: '30d' })` objects as JSON.
	 * A `T` of strings, bytes, booleans or bigints needs its `type` (see
	 * `ValueType`), because a row of bytes reads back by its kind as JSON.
	 */
	bucket<T = unknown>(name: string, ...options: TypedOptions<BucketOptions, T>): Bucket<T>
	/**
	 * A bucket with its own codec in place of the choice by type: values are
	 * kept as the bytes of `codec.encode` and read with `codec.decode`:
	 * `store.bucket('points', { codec: { encode, decode } })`.
	 */
	bucket<T>(name: string, options: BucketOptions & { codec: Codec<T> }): Bucket<T>
	bucket(name: string, options?: BucketOptions & { type?: ValueType; codec?: Codec<unknown> }): Bucket<unknown> {
		const { ttl, idle, type, codec } = options ?? {}
		if (codec !== undefined) checkCodec(codec, String(name))
		return opening(name, () => new Bucket(this.#native.bucket(name, ttl, idle, type, codec !== undefined), [], this.#native, codec))
	}

	/**
	 * A rate limit: `rate` requests per span, `burst` at once (the rate's
	 * count when not given): `store.rateLimit('sign-in-guesses', { rate: '5/m', burst: 5 })`.
	 */
	rateLimit(name: string, options: RateLimitOptions): RateLimit {
		const rate: unknown = options?.rate
		if (rate !== undefined && typeof rate !== 'string') {
			throw new InvalidError(`a rate is text as '5/m', not ${typeof rate}`, { bucket: String(name) })
		}
		return opening(name, () => new RateLimit(this.#native.rateLimit(name, rate as string | undefined, options?.burst), name))
	}

	/**
	 * A quota of one to eight named windows, each a rate such as `'100/5h'`:
	 * `store.quota('messages', { session: '100/5h', weekly: '300/7d' })`.
	 * A window's name is `[a-z][a-z0-9_]{0,31}`.
	 */
	quota<W extends string>(name: string, windows: Record<W, Rate>): Quota<W> {
		if (typeof windows !== 'object' || windows === null) {
			throw new InvalidError("a quota needs windows, as { weekly: '300/7d' }", { bucket: name })
		}
		const names = Object.keys(windows) as W[]
		return opening(name, () => new Quota<W>(this.#native.quota(name, names, names.map((w) => windows[w])), name, this.#native))
	}

	/**
	 * Counters that answer `bigint`s, for counts that may pass 2^53:
	 * `store.counters('bytes-sent', { type: 'bigint' })`.
	 */
	counters<K extends CounterType>(name: string, options: CountersOptions & { type: K }): Counters<CounterTypes[K]>
	/** Counters, an int64 a key, answering numbers: `store.counters('attempts', { ttl: '1h' })`. */
	counters(name: string, options?: CountersOptions): Counters<number>
	counters(name: string, options?: CountersOptions): Counters<number | bigint> {
		const type = options?.type ?? 'int'
		return opening(name, () => new Counters(this.#native.counters(name, options?.ttl, options?.flushEvery, type), name, this.#native))
	}

	/** A once whose answers are scalars of one type (see `bucket`). */
	once<K extends Exclude<ValueType, 'json' | 'auto'>>(name: string, options: OnceOptions & { type: K }): Once<ValueTypes[K]>
	/**
	 * A once whose answers are of type `T`, each kept by its kind as a
	 * bucket's values are unless `type` says otherwise:
	 * `store.once<{ id: number }>('sends', { keep: '1d' })`.
	 */
	once<T = unknown>(name: string, ...options: TypedOptions<OnceOptions, T>): Once<T>
	once(name: string, options?: OnceOptions & { type?: ValueType }): Once<unknown> {
		const type = options?.type ?? 'auto'
		return opening(name, () => new Once(this.#native.once(name, options?.keep, type), name, crossingOf(type), [], this.#native))
	}

	/** Every name in the file, with its kind (`values`, `counters`, ...), by name. */
	async names(): Promise<{ name: string; kind: string }[]> {
		return this.#native.names().map(([name, kind]) => ({ name: name as string, kind: kind as string }))
	}

	/**
	 * Runs `fn` in a transaction and resolves with what it returns, once
	 * everything it wrote is durable. `tx.with(bucket)` is a bucket inside
	 * the transaction: its calls see the transaction's own writes, and
	 * others see none of them before the commit. If `fn` throws (or its
	 * Promise rejects), everything it wrote rolls back and `tx` rejects with
	 * that error. Transactions run one at a time, each with the store's
	 * writer to itself, so of two taking the last item exactly one gets it.
	 *
	 * Keep `fn` short: other writes wait while it runs, and one still open
	 * after 10 seconds is rolled back (`LimitError`). Inside `fn`, a write of
	 * this store outside the transaction (a plain bucket's `set`, another
	 * `store.tx`) would wait for the transaction, so it is `InvalidError`.
	 *
	 * `signal` gives up on the transaction: aborted while `tx` waits for
	 * the writer's turn, `fn` never runs; aborted while `fn` runs, `fn` is
	 * not cut short but nothing it wrote is committed. Either way `tx`
	 * rejects with `AbortError` and nothing was written. Aborted once the
	 * commit began, it changes nothing.
	 *
	 * @example
	 * ```ts
	 * const order = await store.tx(async (tx) => {
	 *   const item = await tx.with(stock).take('last-ticket')
	 *   if (item === undefined) throw new SoldOut()
	 *   await tx.with(orders).under(userId).set(orderId, { item })
	 *   return orderId
	 * })
	 * ```
	 */
	async tx<R>(fn: (tx: Tx) => R | Promise<R>, options?: SignalOptions): Promise<R> {
		if (typeof fn !== 'function') {
			throw native.refusal('tx_needs_function', `${typeof fn} ${String(fn)}`)
		}
		refuseNestedTx(this.#native)
		const signal = signalOf(options, {})
		if (signal?.aborted) throw abortError(signal)
		const watch = signal && new SignalCancel(signal)
		try {
			return await this.#txWatched(fn, signal, watch)
		} finally {
			watch?.stop()
		}
	}

	/** {@link Store.tx} with `watch` firing the engine's cancel when `signal` aborts. */
	async #txWatched<R>(fn: (tx: Tx) => R | Promise<R>, signal?: AbortSignalLike, watch?: SignalCancel): Promise<R> {
		const begin = (): Promise<NativeTx> => this.#native.transaction()
		const native = await (watch ? (watch.call(begin) as Promise<NativeTx>) : begin()).catch((e: unknown) =>
			Promise.reject(abortedAs(signal, e)),
		)
		if (signal?.aborted) {
			// The turn came as the signal aborted: `fn` does not start.
			await native.rollback()
			throw abortError(signal)
		}
		const scope: Scope = { open: true }
		let result: R
		try {
			result = await runInside(native, () => fn(new Tx(native, scope)))
		} catch (e) {
			scope.open = false
			// Resolves once the writer has let go; `fn`'s error is the answer.
			await native.rollback().catch(() => undefined)
			throw e
		}
		scope.open = false
		await native.commit(watch?.cancel).catch((e: unknown) => Promise.reject(abortedAs(signal, e)))
		return result
	}

	/**
	 * Runs `fn` with a view of one snapshot of the file and resolves with
	 * what it returns. `view.with(bucket)` reads a bucket as the file was at
	 * the view's first read, whatever commits meanwhile; it has no writes.
	 * Keep `fn` short: the file keeps what the snapshot may still read.
	 *
	 * @example
	 * ```ts
	 * const [plan, used] = await store.view(async (v) => [
	 *   await v.with(plans).get(userId),
	 *   await v.with(usage).get(userId),
	 * ])
	 * ```
	 */
	async view<R>(fn: (view: View) => R | Promise<R>): Promise<R> {
		if (typeof fn !== 'function') {
			throw native.refusal('view_needs_function', `${typeof fn} ${String(fn)}`)
		}
		let snapshot
		try {
			snapshot = this.#native.snapshot()
		} catch (e) {
			throw invalidArg(e, {})
		}
		const scope: Scope = { open: true }
		try {
			return await fn(new View(snapshot, scope))
		} finally {
			scope.open = false
			snapshot.close()
		}
	}

	/**
	 * Groups committed since the store opened and the writes in them: how
	 * well concurrent writes were grouped (one fsync per group).
	 */
	groupStats(): { groups: number; writes: number } {
		const [groups = 0, writes = 0] = this.#native.groupStats()
		return { groups, writes }
	}

	/**
	 * Flushes what memory holds (counters, rate limits, idle renewals) and
	 * deletes cleared and expired rows in bounded batches; says how many.
	 * An ordinary store does this by itself; a store with a test clock only
	 * when a test calls this.
	 */
	maintain(): Promise<Maintenance> {
		const refused = waitsForOwnTx(this.#native, {})
		if (refused) return Promise.reject(refused)
		return this.#native.maintain()
	}

	/** Writes what memory holds and closes the file. Calls after this are `ClosedError`. */
	close(): Promise<void> {
		const refused = waitsForOwnTx(this.#native, {})
		if (refused) return Promise.reject(refused)
		return this.#native.close()
	}

	/** Closes the store at the end of an `await using` block. */
	[Symbol.asyncDispose](): Promise<void> {
		return this.close()
	}
}

/**
 * Opens the store in `dir` (a directory; `kv.db` lives inside it), creating
 * both if needed.
 *
 * @example
 * ```ts
 * await using store = await open('data')
 * const sessions = store.bucket<Session>('sessions', { idle: '30d' })
 * ```
 */
export async function open(dir: string, options?: OpenOptions): Promise<Store> {
	const clock = options?.clock
	if (clock !== undefined && !(clock instanceof Date)) {
		throw new InvalidError('the clock option is a Date')
	}
	const memory = options?.memory
	if (memory !== undefined && typeof memory !== 'number') {
		throw new InvalidError(`memory is a budget in bytes (a number), not ${typeof memory}`)
	}
	const mmapSize = options?.mmapSize
	if (mmapSize !== undefined && typeof mmapSize !== 'number') {
		throw new InvalidError(`mmapSize is a number of bytes (0 maps nothing), not ${typeof mmapSize}`)
	}
	const keepReadLocks = options?.keepReadLocks
	if (keepReadLocks !== undefined && typeof keepReadLocks !== 'boolean') {
		throw new InvalidError(`keepReadLocks is true or false, not ${typeof keepReadLocks}`)
	}
	const shareWithGroup = options?.shareWithGroup
	if (shareWithGroup !== undefined && typeof shareWithGroup !== 'boolean') {
		throw new InvalidError(`shareWithGroup is true or false, not ${typeof shareWithGroup}`)
	}
	try {
		return new Store(native.NativeStore.open(dir, clock?.getTime(), memory, mmapSize, keepReadLocks, shareWithGroup))
	} catch (e) {
		throw invalidArg(e, {})
	}
}
