/**
 * Counters: `store.counters(name, { ttl, flushEvery })`, an int64 a key.
 *
 * @module
 */

import type { Duration } from './durations'
import { DurableHandle, type KindParts } from './handles'
import type { NativeCounters } from './native'
import type { SignalOptions } from './signals'
import { invalidArg, type Key } from './values'

type CountersParts = Extract<KindParts, { kind: 'counters' }>

/** What counters answer: `'int'` gives `number`s (the default), `'bigint'` gives `bigint`s of the whole int64 range. */
export type CounterType = 'int' | 'bigint'

/** The JS type of each counter type. */
export interface CounterTypes {
	/** A safe integer (up to 2^53-1). */
	int: number
	/** An int64. */
	bigint: bigint
}

/** The options of counters. */
export interface CountersOptions {
	/**
	 * `'bigint'` answers `bigint`s, for counters that may pass 2^53 (they
	 * hold an int64, as in Rust, Go and Python); `'int'`, the default,
	 * answers `number`s.
	 */
	type?: CounterType
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
 * Counters, or one branch of them: an int64 a key. A missing or expired
 * counter is 0; racing adds count exactly; a sum past the int64 range is
 * `LimitError` and changes nothing.
 *
 * `N` is what they answer: `number` unless opened with `{ type: 'bigint' }`.
 * A step is a safe integer `number` or a `bigint` either way. A `number`
 * cannot hold a counter past 2^53 exactly, so number counters answer such a
 * value with `LimitError` (from `add` or `max` the change is kept, and the
 * message says so): open counters that may grow that far with
 * `{ type: 'bigint' }`.
 *
 * @example
 * ```ts
 * const attempts = store.counters('attempts', { ttl: '1h' })
 * if ((await attempts.add(email)) > 10) return { status: 429 }
 * ```
 */
export class Counters<N extends number | bigint = number> extends DurableHandle<CountersParts> {
	/** @internal Made by `store.counters` and `under`; `store` is the addon's store. */
	constructor(native: NativeCounters, name: string, store?: object) {
		super({ kind: 'counters', native, name, store })
	}

	/** The branch of `owners`. */
	under(...owners: Key[]): Counters<N> {
		const { native, name, store } = this.branch(owners)
		return new Counters<N>(native, name, store)
	}

	/** Adds `n` (one when not given; negative allowed) and resolves with the new value. */
	add(key: Key, n: number | bigint = 1, options?: SignalOptions): Promise<N> {
		return this.write((c) => c.change(key, n, false), options?.signal)
	}

	/** Keeps the larger of the counter and `n`, and resolves with it. */
	max(key: Key, n: number | bigint, options?: SignalOptions): Promise<N> {
		return this.write((c) => c.change(key, n, true), options?.signal)
	}

	/** The counter's value: 0 when missing or expired. */
	async get(key: Key): Promise<N> {
		try {
			return this.native.get(key) as N
		} catch (e) {
			throw invalidArg(e, { bucket: this.name })
		}
	}

	/** Deletes the counter; resolves with whether a live one was there. */
	delete(key: Key, options?: SignalOptions): Promise<boolean> {
		return this.write((c) => c.delete(key), options?.signal)
	}

	/** Removes this branch's counters and every branch under it. */
	clear(options?: SignalOptions): Promise<void> {
		return this.write((c) => c.clear(), options?.signal)
	}
}
