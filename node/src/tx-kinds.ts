/**
 * Counters, quotas and once answers inside a transaction (KV-16):
 * `tx.with(counters)`, `tx.with(quota)` and `tx.with(once)` commit or roll
 * back with the transaction's buckets. What keeps its state in memory is
 * `InvalidError` at `tx.with`, with the engine's reason: counters with
 * `flushEvery` and rate limits. A run of once inside a transaction is
 * `InvalidError` too: its claim and its answer are writes of their own.
 *
 * @module
 */

import { InvalidError } from './errors'
import { branchOf, type KindParts } from './handles'
import type { Allowance } from './limits'
import { native, type NativeTx } from './native'
import { callIn } from './reads'
import type { Scope } from './scope'
import type { Key } from './values'

/** The calls of one handle inside a transaction, closed with it. */
class Joined<P extends KindParts> {
	readonly #native: NativeTx
	readonly #scope: Scope
	/** @internal */
	readonly parts: P

	/** @internal Made by `tx.with`. */
	constructor(native: NativeTx, scope: Scope, parts: P) {
		this.#native = native
		this.#scope = scope
		this.parts = parts
	}

	/** The handle's name. */
	get name(): string {
		return this.parts.name
	}

	/** Runs an addon call on the open transaction. @internal */
	protected run<R>(f: (tx: NativeTx) => R): R {
		return callIn(this.#scope, 'transaction', this.name, () => f(this.#native))
	}

	/** The same calls on another branch of the handle. @internal */
	protected branch(parts: P): [NativeTx, Scope, P] {
		return [this.#native, this.#scope, parts]
	}
}

type CountersParts = Extract<KindParts, { kind: 'counters' }>
type QuotaParts = Extract<KindParts, { kind: 'quota' }>
type OnceParts = Extract<KindParts, { kind: 'once' }>

/** Durable counters inside a transaction (`tx.with(counters)`). */
export class TxCounters<N extends number | bigint = number> extends Joined<CountersParts> {
	/** The branch of `owners`, inside the same transaction. */
	under(...owners: Key[]): TxCounters<N> {
		const native = branchOf(this.parts.native, owners)
		return new TxCounters<N>(...this.branch({ ...this.parts, native }))
	}

	/** Adds `n` (one when not given); the new value as the transaction sees it. */
	async add(key: Key, n: number | bigint = 1): Promise<N> {
		return this.run((tx) => this.parts.native.change(key, n, false, tx)) as N
	}

	/** Keeps the larger of the counter and `n`; resolves with it. */
	async max(key: Key, n: number | bigint): Promise<N> {
		return this.run((tx) => this.parts.native.change(key, n, true, tx)) as N
	}

	/** The counter as the transaction sees it: 0 when missing or expired. */
	async get(key: Key): Promise<N> {
		return this.run((tx) => this.parts.native.get(key, tx)) as N
	}

	/** Deletes the counter; resolves with whether a live one was there. */
	async delete(key: Key): Promise<boolean> {
		return this.run((tx) => this.parts.native.delete(key, tx) as boolean)
	}
}

/** A quota inside a transaction (`tx.with(quota)`). */
export class TxQuota<W extends string = string> extends Joined<QuotaParts> {
	/** The branch of `owners`, inside the same transaction. */
	under(...owners: Key[]): TxQuota<W> {
		const native = branchOf(this.parts.native, owners)
		return new TxQuota<W>(...this.branch({ ...this.parts, native }))
	}

	/** Counts `n` uses (one when not given) in every window or in none; commits with the transaction. */
	async allow(key: Key, n?: number): Promise<Allowance<W>> {
		return this.run((tx) => this.parts.native.change(key, n, false, tx)) as Allowance<W>
	}

	/** Gives `n` uses back to the windows that have not reset. */
	async refund(key: Key, n?: number): Promise<Allowance<W>> {
		return this.run((tx) => this.parts.native.change(key, n, true, tx)) as Allowance<W>
	}

	/** The answer one use would get, as the transaction sees it. */
	async peek(key: Key): Promise<Allowance<W>> {
		return this.run((tx) => this.parts.native.peek(key, tx)) as Allowance<W>
	}

	/** Forgets the key: every window starts again at its next use. */
	async reset(key: Key): Promise<void> {
		this.run((tx) => this.parts.native.reset(key, tx))
	}
}

/** A once's answers inside a transaction (`tx.with(once)`): `get` and `delete`. */
export class TxOnce<T> extends Joined<OnceParts> {
	/** The answer kept for `key` as the transaction sees it, or `undefined`. */
	async get(key: Key): Promise<T | undefined> {
		const value = this.run((tx) => this.parts.native.get(key, tx))
		return value === undefined ? undefined : (this.parts.decode(value, key) as T)
	}

	/** Forgets the answer kept for `key`; resolves with whether one was kept. */
	async delete(key: Key): Promise<boolean> {
		return this.run((tx) => this.parts.native.delete(key, tx) as boolean)
	}
}

/**
 * `parts` inside the transaction `native`, or `InvalidError` at once for
 * what cannot join it (the engine's reason) or a handle of another store.
 * @internal
 */
export function joinKind(tx: NativeTx, scope: Scope, parts: KindParts): unknown {
	native.admit(tx, parts.native)
	switch (parts.kind) {
		case 'counters':
			return new TxCounters(tx, scope, parts)
		case 'quota':
			return new TxQuota(tx, scope, parts)
		case 'once':
			return new TxOnce(tx, scope, parts)
	}
	throw new InvalidError(`tx.with cannot take a ${parts.kind}`, { bucket: parts.name })
}
