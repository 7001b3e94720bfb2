/**
 * The addon's handle behind each counters, quota, rate limit and once the
 * package made, for `tx.with(handle)`: a registry, so that the handles'
 * own fields stay private.
 *
 * @module
 */

import type { NativeCounters, NativeOnce, NativeQuota, NativeRateLimit } from './native'
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
