/**
 * A limit store for app frameworks, on `kv.db`: where a framework keeps its
 * limit counts (sign-ins, password resets, codes sent), shared by every
 * process that opens the same store, with no Redis.
 *
 * It has the shape of the framework's `LimitStore` contract:
 *
 * ```ts
 * import { open } from 'tinystore'
 * import { limitStore } from 'tinystore/limit-store'
 *
 * const store = await open('data')
 * const limits = limitStore(store, { maxEntries: 200_000 })
 * await limits.update(['sign-in:ada'], (entries, now) => {
 *   const count = (entries.get('sign-in:ada')?.value as number | undefined) ?? 0
 *   return { 'sign-in:ada': { value: count + 1, expiresAt: now + 60_000 } }
 * })
 * ```
 *
 * Every rule (keys stored as their SHA-256, versions checked at commit,
 * expiry on the store's clock, the bound, the 2 s deadline, 64 calls in
 * flight) is the engine's; this module converts values and calls `apply`.
 *
 * @module
 */

import { InvalidError } from './errors'
import { native, type NativeLimitStore, type NativeLimitUpdate } from './native'
import { nativeOf, type Store } from './store'

/** One entry: a JSON value and when it expires, in ms on the store's clock. */
export interface LimitEntry<V = unknown> {
	/** The value: anything `JSON.stringify` writes, at most 4 KB of JSON. */
	value: V
	/** When the entry expires, in ms since the epoch on the store's clock. */
	expiresAt: number
}

/**
 * What `apply` returns: for each key to change, its new entry, or `null` to
 * delete it. Keys left out are kept as they are. A `Map` or a plain object.
 */
export type LimitChanges = ReadonlyMap<string, LimitEntry | null> | Readonly<Record<string, LimitEntry | null>> | void

/**
 * `apply(entries, now)`: the live entries of the keys (a key without one is
 * absent from the map) and the store's clock in ms. Synchronous; it may run
 * more than once when another process changed a key meanwhile, and only
 * its last run is written.
 */
export type LimitApply = (entries: ReadonlyMap<string, LimitEntry>, now: number) => LimitChanges

/** A log line: `{ kind: 'limit-store-filling' | 'limit-store-full', msg }`. */
export interface LimitStoreLogLine {
	/** `limit-store-filling` (a warning) or `limit-store-full` (an error). */
	kind: 'limit-store-filling' | 'limit-store-full'
	/** What happened, in words. */
	msg: string
}

/** Where the store logs; `console` unless given (a pino or winston logger fits). */
export interface LimitStoreLogger {
	/** Called with the `limit-store-filling` line. */
	warn(line: LimitStoreLogLine): void
	/** Called with the `limit-store-full` line, at most once a minute. */
	error(line: LimitStoreLogLine): void
}

/** The options of {@link limitStore}. */
export interface LimitStoreOptions {
	/** The bound on live entries (default 1,000,000). */
	maxEntries?: number
	/** Where to log the filling and full lines (default `console`). */
	logger?: LimitStoreLogger
	/** The name its rows live under in `kv.db` (default `limit-store`). */
	name?: string
}

/** The framework's `LimitStore` contract, as this store meets it. */
export interface LimitStore {
	/** True: every process that opens the same `kv.db` sees the same entries. */
	readonly shared: true
	/** The bound on live entries. */
	readonly maxEntries: number
	/**
	 * Atomically: reads the live entries of `keys`, calls `apply` with them
	 * and the store's clock, and writes what it returns (`null` deletes),
	 * with no other update to these keys in between, across processes.
	 * Resolves with the keys' live entries after the write.
	 *
	 * Rejects (the framework's "unavailable") with a `LimitError` when the
	 * store is full and a key is new, or 64 calls are in flight; with an
	 * `OutcomeUnknownError` when no answer came within 2 s; with
	 * `InvalidError` or `LimitError` for a bad entry (nothing written).
	 */
	update(keys: readonly string[], apply: LimitApply): Promise<ReadonlyMap<string, LimitEntry>>
	/** The live entries of `keys`, judged on the store's clock. */
	read(keys: readonly string[]): Promise<ReadonlyMap<string, LimitEntry>>
	/** Removes expired entries; resolves with how many went. */
	sweep(): Promise<number>
}

type NativeEntry = ReturnType<NativeLimitStore['read']>[number]

/** The core's refusal of a type the limit store `name` does not take. */
function refused(word: string, got: unknown, name: string, key?: string): Error {
	return native.refusal(word, shown(got), name, key)
}

function shown(got: unknown): string {
	let text: string
	try {
		text = `${typeof got} ${String(got)}`
	} catch {
		text = typeof got
	}
	return text.slice(0, 200)
}

function keyList(keys: readonly string[], name: string): string[] {
	if (!Array.isArray(keys)) throw refused('limit_keys', keys, name)
	for (const k of keys) {
		if (typeof k !== 'string') throw refused('limit_key', k, name)
	}
	return [...keys]
}

function entryMap(keys: string[], entries: NativeEntry[]): Map<string, LimitEntry> {
	const out = new Map<string, LimitEntry>()
	keys.forEach((k, i) => {
		const e = entries[i]
		if (e) out.set(k, { value: JSON.parse(e.value) as unknown, expiresAt: e.expiresAt })
	})
	return out
}

type Returned = Parameters<NativeLimitUpdate['commit']>[0][number]

/**
 * What `apply` returned, as the core takes it: per key its entry, with the
 * value as JSON text (or why it is not), or no expiry to delete it. The
 * core checks the keys and the expiry.
 */
function returned(changes: LimitChanges, name: string): Returned[] {
	if (changes === undefined || changes === null) return []
	if (typeof changes !== 'object') throw refused('limit_changes', changes, name)
	const pairs: Iterable<[string, LimitEntry | null]> =
		changes instanceof Map ? changes.entries() : Object.entries(changes as Record<string, LimitEntry | null>)
	const out: Returned[] = []
	for (const [key, entry] of pairs) {
		if (typeof key !== 'string') throw refused('limit_changed_key', key, name)
		if (entry === null) {
			out.push({ key })
			continue
		}
		if (typeof entry !== 'object' || entry === undefined) throw refused('limit_entry', entry, name, key)
		if (typeof entry.expiresAt !== 'number') throw refused('limit_expiry', entry.expiresAt, name, key)
		let text: string | undefined
		let notJson: string | undefined
		try {
			text = JSON.stringify(entry.value)
			if (text === undefined) notJson = `JSON.stringify gives nothing for ${typeof entry.value}`
		} catch (e) {
			notJson = (e as Error).message
		}
		out.push({ key, expiresAt: entry.expiresAt, value: text, notJson })
	}
	return out
}

/** One run of `apply` on the update's entries; the update is given up if it throws. */
function runApply(u: NativeLimitUpdate, name: string, keys: string[], apply: LimitApply): Returned[] {
	try {
		return returned(apply(entryMap(keys, u.entries()), u.now()), name)
	} catch (e) {
		u.cancel()
		throw e
	}
}

class KvLimitStore implements LimitStore {
	readonly shared = true as const
	readonly #native: NativeLimitStore
	readonly #logger: LimitStoreLogger

	constructor(nativeStore: NativeLimitStore, logger: LimitStoreLogger) {
		this.#native = nativeStore
		this.#logger = logger
	}

	get maxEntries(): number {
		return this.#native.maxEntries
	}

	async update(keys: readonly string[], apply: LimitApply): Promise<ReadonlyMap<string, LimitEntry>> {
		const name = this.#native.name
		if (typeof apply !== 'function') throw refused('update_needs_function', apply, name)
		const list = keyList(keys, name)
		const u = this.#native.begin(list)
		try {
			while (!(await u.commit(runApply(u, name, list, apply)))) {
				// another update changed a key meanwhile: apply runs again on the entries now
			}
			return entryMap(list, u.entries())
		} finally {
			this.#log(u.takeEvents())
		}
	}

	async read(keys: readonly string[]): Promise<ReadonlyMap<string, LimitEntry>> {
		const list = keyList(keys, this.#native.name)
		return entryMap(list, this.#native.read(list))
	}

	sweep(): Promise<number> {
		return this.#native.sweep()
	}

	#log(events: Array<{ kind: string; message: string; error: boolean }>): void {
		for (const e of events) {
			const line = { kind: e.kind as LimitStoreLogLine['kind'], msg: e.message }
			if (e.error) this.#logger.error(line)
			else this.#logger.warn(line)
		}
	}
}

/**
 * A limit store over an open store, for a framework's `rateLimit.store`.
 * Two stores opened on one directory, in one process or in several, are
 * two handles on the same entries.
 */
export function limitStore(store: Store, options: LimitStoreOptions = {}): LimitStore {
	const nativeStore = nativeOf.get(store)
	const name = options.name ?? native.NativeLimitStore.defaultName()
	if (nativeStore === undefined) throw refused('limit_store', store, name)
	const max = options.maxEntries
	if (max !== undefined && typeof max !== 'number') {
		throw new InvalidError(`maxEntries must be a number, not ${typeof max}`, { bucket: name })
	}
	const logger = options.logger ?? console
	return new KvLimitStore(native.NativeLimitStore.open(nativeStore, max, options.name), logger)
}
