/**
 * Rate limits and quotas: `store.rateLimit(name, { rate, burst })` and
 * `store.quota(name, { session: '100/5h', weekly: '300/7d' })`. Both answer
 * with the same shape, and a refusal is an answer, never an error.
 *
 * @module
 */

import type { Rate } from './durations'
import { branchOf, DurableHandle, type KindParts, kindParts } from './handles'
import { addonFile, type NativeQuota, type NativeRateLimit, native as addon } from './native'
import type { SignalOptions } from './signals'
import { invalidArg, type Key } from './values'

type QuotaParts = Extract<KindParts, { kind: 'quota' }>

/** One window of a quota, as an answer reports it. */
export interface WindowUsage {
	/** Uses counted in the window since it started. */
	used: number
	/** The window's limit. */
	limit: number
	/** Uses left before the window refuses. */
	left: number
	/** When the window resets; `undefined` while it has not started. */
	resetsAt: Date | undefined
}

/**
 * The answer of `allow`, `peek` and `refund`: whether the request passes,
 * how many more would pass now, when to try again after a refusal, and, for
 * a quota, each window's usage.
 */
export interface Allowance<W extends string = never> {
	/** Whether the request passed (and was counted). */
	ok: boolean
	/** How many more would pass now: for a quota, the least over its windows. */
	left: number
	/** After a refusal, when the same request would pass; `undefined` when it passed. */
	retryAt: Date | undefined
	/** Each window of a quota by name (empty for a rate limit). */
	windows: Record<W, WindowUsage>
}

/** The addon's C `allow` of a rate limit, as `tinystore_rate_limit_allow` in bindings/node/src/fast_allow.rs says. */
type CAllow = (limit: number, key: Uint8Array, len: number, n: number) => number

/**
 * Under Bun, the addon's C `allow` through Bun's FFI: a napi call there
 * costs more than the engine's whole `allow`. Undefined under Node (whose
 * napi calls are cheap) or when the FFI cannot open the addon.
 */
const cAllow: CAllow | undefined = (() => {
	if (!('Bun' in globalThis)) return undefined
	try {
		const { dlopen, FFIType } = require('bun:ffi')
		const lib = dlopen(addonFile, {
			tinystore_rate_limit_allow: { args: [FFIType.ptr, FFIType.ptr, FFIType.u32, FFIType.f64], returns: FFIType.f64 },
		})
		return lib.symbols.tinystore_rate_limit_allow as CAllow
	} catch {
		return undefined
	}
})()

/** Where a string key's UTF-8 goes for the C `allow` (one thread runs this module). */
const keyBytes = new Uint8Array(256)
const utf8 = new TextEncoder()

/** The options of a rate limit. */
export interface RateLimitOptions {
	/** Requests per span, refilled continuously: `'5/m'`, `'100/s'`. */
	rate: Rate
	/** Requests let through at once (the rate's count when not given). */
	burst?: number
}

/**
 * A rate limit (GCRA): `rate` requests per span, `burst` at once, with no
 * window edge that lets twice the rate through. Its state lives in memory
 * and reaches `kv.db` every second, so `allow` costs no disk write.
 *
 * @example
 * ```ts
 * const guesses = store.rateLimit('sign-in-guesses', { rate: '5/m', burst: 5 })
 * const guess = await guesses.allow(ip)
 * if (!guess.ok) return { status: 429, retryAt: guess.retryAt }
 * ```
 */
export class RateLimit {
	readonly #native: NativeRateLimit
	/** The addon's bare `allow` of this limit (bindings/node/src/fast_allow.rs), made at the first `allow`. */
	#allow: (((key: unknown, n?: number) => number | object) & { address: number }) | undefined
	/** The rate limit's name. */
	readonly name: string

	/** @internal Made by `store.rateLimit` and `under`. */
	constructor(native: NativeRateLimit, name: string) {
		this.#native = native
		this.name = name
		kindParts.set(this, { kind: 'rateLimit', native, name, store: undefined })
	}

	/** The branch of `owners`: its keys are limited apart from the others. */
	under(...owners: Key[]): RateLimit {
		const native = branchOf(this.#native, owners)
		return new RateLimit(native, this.name)
	}

	/** Takes `n` requests (one when not given), or none. More than the burst at once is `InvalidError`. */
	async allow(key: Key, n = 1): Promise<Allowance> {
		try {
			// A count goes through the bare call, which answers a number when it can:
			// the object is made here, where it costs a fraction of making it in the addon.
			if (!Number.isSafeInteger(n) || n < 1) return this.#native.allow(key, n) as Allowance
			const allow = (this.#allow ??= addon.rateLimitAllow(this.#native))
			let r: number | object = Number.NaN
			if (cAllow !== undefined && typeof key === 'string') {
				// A key that fits the buffer goes through C; NaN says only napi can answer (nothing was counted).
				const { read, written } = utf8.encodeInto(key, keyBytes)
				if (read === key.length && written > 0) r = cAllow(allow.address, keyBytes, written, n)
			}
			if (typeof r === 'number' && Number.isNaN(r)) r = n === 1 ? allow(key) : allow(key, n)
			if (typeof r !== 'number') return r as Allowance
			if (r >= 0) return { ok: true, left: r, retryAt: undefined, windows: {} }
			return { ok: false, left: 0, retryAt: new Date(-1 - r), windows: {} }
		} catch (e) {
			throw invalidArg(e, { bucket: this.name })
		}
	}

	/** The answer one request would get now, counting nothing. */
	async peek(key: Key): Promise<Allowance> {
		return this.#native.peek(key) as Allowance
	}

	/** Forgets the key: its next request has the full burst. */
	async reset(key: Key): Promise<void> {
		this.#native.reset(key)
	}
}

/**
 * A quota: uses counted against a plan in named windows that reset on
 * their own, a span after a key's first use. `allow` counts in every
 * window or in none, in one durable write.
 *
 * @example
 * ```ts
 * const messages = store.quota('messages', { session: '100/5h', weekly: '300/7d' })
 * const used = await messages.allow(userId)
 * if (!used.ok) return { status: 429, retryAt: used.retryAt, left: used.windows.weekly.left }
 * await messages.refund(userId) // the work failed: give the use back
 * ```
 */
export class Quota<W extends string = string> extends DurableHandle<QuotaParts> {
	/** @internal Made by `store.quota` and `under`; `store` is the addon's store. */
	constructor(native: NativeQuota, name: string, store?: object) {
		super({ kind: 'quota', native, name, store })
	}

	/** The branch of `owners`: its keys count apart from the others. */
	under(...owners: Key[]): Quota<W> {
		const { native, name, store } = this.branch(owners)
		return new Quota<W>(native, name, store)
	}

	/**
	 * Counts `n` uses (one when not given) in every window, or in none when
	 * one has no room. A refusal's `retryAt` is when the windows that refused
	 * reset. `n` over the smallest limit is `InvalidError`.
	 */
	allow(key: Key, n = 1, options?: SignalOptions): Promise<Allowance<W>> {
		return this.write((q) => q.change(key, n, false), options?.signal)
	}

	/** The answer one use would get now, counting nothing. */
	async peek(key: Key): Promise<Allowance<W>> {
		return this.native.peek(key) as Allowance<W>
	}

	/** Gives `n` uses back to the windows that have not reset since, never below zero. */
	refund(key: Key, n = 1, options?: SignalOptions): Promise<Allowance<W>> {
		return this.write((q) => q.change(key, n, true), options?.signal)
	}

	/** Forgets the key: every window starts again at its next use. */
	reset(key: Key, options?: SignalOptions): Promise<void> {
		return this.write((q) => q.reset(key), options?.signal)
	}
}
