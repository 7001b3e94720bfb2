/**
 * The addon's handle behind each counters, quota, rate limit and once the
 * package made, for `tx.with(handle)`: a registry, so that the handles'
 * own fields stay private.
 *
 * @module
 */

import type { NativeCounters, NativeOnce, NativeQuota, NativeRateLimit } from './native'
import { writeOnStore } from './scope'
import type { AbortSignalLike } from './signals'
import type { Key } from './values'

/** A handle of a kind other than a bucket, as a transaction takes it. @internal */
export type KindParts =
	| { kind: 'counters'; native: NativeCounters; name: string; store: object | undefined }
	| { kind: 'quota'; native: NativeQuota; name: string; store: object | undefined }
	| { kind: 'rateLimit'; native: NativeRateLimit; name: string; store: object | undefined }
	| {
			kind: 'once'
			native: NativeOnce
			name: string
			store: object | undefined
			decode: (value: unknown, key: Key) => unknown
	  }

/** The parts of every handle made, by handle. @internal */
export const kindParts = new WeakMap<object, KindParts>()

/** The branch of `owners` under a handle of the addon, one owner at a time. @internal */
export function branchOf<N extends { under(owner: unknown): N }>(native: N, owners: readonly Key[]): N {
	for (const owner of owners) native = native.under(owner)
	return native
}

type DurableParts = Extract<KindParts, { kind: 'counters' | 'quota' }>

/**
 * Counters or a quota: a durable handle of the store, whose changes are
 * writes through its writer, registered for `tx.with`. @internal
 */
export class DurableHandle<P extends DurableParts> {
	readonly #parts: P
	/** The handle's name. */
	readonly name: string

	/** @internal */
	constructor(parts: P) {
		this.#parts = parts
		this.name = parts.name
		kindParts.set(this, parts)
	}

	/** @internal The addon's handle. */
	protected get native(): P['native'] {
		return this.#parts.native
	}

	/** @internal The parts of the branch of `owners`. */
	protected branch(owners: readonly Key[]): P {
		return { ...this.#parts, native: branchOf(this.#parts.native, owners) }
	}

	/** @internal A write of the addon's handle on the store, given up when `signal` aborts first. */
	protected write<R>(call: (native: P['native']) => unknown, signal: AbortSignalLike | undefined): Promise<R> {
		return writeOnStore(this.#parts.store, this.name, () => call(this.#parts.native), signal)
	}
}
