/**
 * `once`: the work of a request sent twice runs once per key, and the
 * answer is kept for `keep` (a day unless set).
 *
 * @module
 */

import type { Duration } from './durations'
import { InvalidError } from './errors'
import { branchOf, kindParts } from './handles'
import { native, type NativeOnce } from './native'
import { callerContext, runInsideRun, writeOnStore } from './scope'
import { type SignalOptions, withSignal } from './signals'
import { type Crossing, decodeAs, encodeAs, type Key, showKey } from './values'

/** What the addon's `begin` answers: the kept answer, or the claim of the run. */
type Begun = Awaited<ReturnType<NativeOnce['begin']>>

/** The options of a once. */
export interface OnceOptions {
	/** How long an answer is kept after its run (a day when not given). */
	keep?: Duration
}

/**
 * A once, or one branch of it: `run(key, fn)` returns the answer kept for
 * the key, or runs `fn` and keeps what it returns. A second `run` of the
 * same key while the first runs, in this process or another, waits for it
 * (without blocking the event loop) and returns its answer. If `fn` throws,
 * nothing is kept and the next `run` runs `fn` again.
 *
 * @example
 * ```ts
 * const sends = store.once<{ id: number }>('sends', { keep: '1d' })
 * const sent = await sends.run(idempotencyKey, async () => ({ id: await save() }))
 * ```
 */
export class Once<T> {
	readonly #native: NativeOnce
	readonly #crossing: Crossing
	readonly #owners: readonly Key[]
	readonly #store: object | undefined
	/** The once's name. */
	readonly name: string

	/** @internal Made by `store.once` and `under`; `store` is the addon's store. */
	constructor(native: NativeOnce, name: string, crossing: Crossing, owners: readonly Key[] = [], store?: object) {
		this.#native = native
		this.name = name
		this.#crossing = crossing
		this.#owners = owners
		this.#store = store
		kindParts.set(this, { kind: 'once', native, name, store, decode: (value, key) => this.#decode(value, key) })
	}

	/** The branch of `owners`: its keys run apart from the others. */
	under(...owners: Key[]): Once<T> {
		const native = branchOf(this.#native, owners)
		return new Once<T>(native, this.name, this.#crossing, [...this.#owners, ...owners], this.#store)
	}

	#decode(value: unknown, key: Key): T {
		if (this.#crossing === 'as-is') return value as T
		return decodeAs(this.#crossing, value, this.name, () => showKey(key, this.#owners)) as T
	}

	/**
	 * The answer kept for `key`, or the answer of `fn`, run once. A `run` of
	 * a key inside its own run is `InvalidError`, not a deadlock. `signal`
	 * gives up waiting for the key (another run of it, or the writer): then
	 * nothing runs and `run` rejects with `AbortError`. Once `fn` started it
	 * runs to its end, and what it returns is kept, whatever the signal.
	 */
	async run(key: Key, fn: () => T | Promise<T>, options?: SignalOptions): Promise<T> {
		if (typeof fn !== 'function') {
			// Refused before the key is claimed, rather than a TypeError from inside the run.
			throw native.refusal('run_needs_function', `${typeof fn} ${String(fn)}`, this.name, showKey(key, this.#owners))
		}
		// The engine refuses a run inside a transaction of the store, or
		// inside a run of the same key: each would wait for itself.
		const begun = await withSignal<Begun>(options?.signal, { bucket: this.name }, () =>
			this.#native.begin(key, callerContext()),
		)
		if (begun.kept) return this.#decode(begun.value, key)
		const claim = begun.claim
		let value: T
		try {
			value = await runInsideRun(claim, fn)
		} catch (e) {
			claim.abandon()
			throw e
		}
		let kept: unknown
		try {
			kept = encodeAs(this.#crossing, value, this.name, () => showKey(key, this.#owners))
		} catch (e) {
			claim.abandon()
			throw e
		}
		await claim.keep(kept)
		return value
	}

	/** The answer kept for `key`, or `undefined`. */
	async get(key: Key): Promise<T | undefined> {
		const value = this.#native.get(key)
		return value === undefined ? undefined : this.#decode(value, key)
	}

	/** Forgets the answer kept for `key`, so the next run runs again; resolves with whether one was kept. */
	delete(key: Key, options?: SignalOptions): Promise<boolean> {
		return writeOnStore(this.#store, this.name, () => this.#native.delete(key), options?.signal)
	}
}
