/**
 * Counters: `store.counters(name, { ttl, flushEvery })`, an int64 a key.
 *
 * @module
 */

import type { Duration } from './durations'
import type { NativeCounters } from './native'
import { waitsForOwnTx } from './scope'
import { invalidArg, type Key } from './values'

/** The options of counters. */
export interface CountersOptions {
	/** Each counter expires this long after its first change and starts again from 0: a window that does not slide. */
	ttl?: Duration
	/**
	 * Keep the counters in memory and write them every period (at least a
	 * second), by `maintain` and on close, instead of on every change. A
	 * crash loses at most one period of changes.
	 */
	flushEvery?: Duration
}

/**
 * Counters, or one branch of them. A missing or expired counter is 0;
 * racing adds count exactly; a sum past the int64 range is `LimitError` and
 * changes nothing. Values are `number`s: past 2^53 they lose precision.
 *
 * @example
 * ```ts
 * const attempts = store.counters('attempts', { ttl: '1h' })
 * if ((await attempts.add(email)) > 10) return { status: 429 }
 * ```
 */
export class Counters {
	readonly #native: NativeCounters
	readonly #store: object | undefined
	/** The counters' name. */
	readonly name: string

	/** @internal Made by `store.counters` and `under`; `store` is the addon's store. */
	constructor(native: NativeCounters, name: string, store?: object) {
		this.#native = native
		this.name = name
		this.#store = store
	}

	/** The branch of `owners`. */
	under(...owners: Key[]): Counters {
		let native = this.#native
		for (const owner of owners) native = native.under(owner)
		return new Counters(native, this.name, this.#store)
	}

	/** Adds `n` (one when not given; negative allowed) and resolves with the new value. */
	add(key: Key, n = 1): Promise<number> {
		const refused = waitsForOwnTx(this.#store, { bucket: this.name })
		if (refused) return Promise.reject(refused)
		try {
			return this.#native.add(key, n)
		} catch (e) {
			return Promise.reject(invalidArg(e, { bucket: this.name }))
		}
	}

	/** Keeps the larger of the counter and `n`, and resolves with it. */
	max(key: Key, n: number): Promise<number> {
		const refused = waitsForOwnTx(this.#store, { bucket: this.name })
		if (refused) return Promise.reject(refused)
		try {
			return this.#native.max(key, n)
		} catch (e) {
			return Promise.reject(invalidArg(e, { bucket: this.name }))
		}
	}

	/** The counter's value: 0 when missing or expired. */
	async get(key: Key): Promise<number> {
		return this.#native.get(key)
	}

	/** Deletes the counter; resolves with whether a live one was there. */
	delete(key: Key): Promise<boolean> {
		const refused = waitsForOwnTx(this.#store, { bucket: this.name })
		if (refused) return Promise.reject(refused)
		try {
			return this.#native.delete(key)
		} catch (e) {
			return Promise.reject(invalidArg(e, { bucket: this.name }))
		}
	}

	/** Removes this branch's counters and every branch under it. */
	clear(): Promise<void> {
		const refused = waitsForOwnTx(this.#store, { bucket: this.name })
		if (refused) return Promise.reject(refused)
		try {
			return this.#native.clear()
		} catch (e) {
			return Promise.reject(invalidArg(e, { bucket: this.name }))
		}
	}
}
