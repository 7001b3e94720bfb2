/**
 * Which transactions the running code is inside. While `store.tx(fn)` runs
 * `fn`, the store's writer does nothing but that transaction, so a write
 * of the same store made from `fn` outside the transaction (a plain
 * bucket's `set`, another `store.tx`) would wait for the transaction, and
 * the transaction for it, until the engine's limit rolled it back. Those
 * calls are refused with `InvalidError` instead, naming the way out.
 *
 * Tracked with `AsyncLocalStorage`, so it follows `fn` across its awaits
 * and not into unrelated requests, whose writes simply wait their turn.
 *
 * @module
 */

import { AsyncLocalStorage } from 'node:async_hooks'

import { type ErrorWhat, InvalidError } from './errors'
import { native } from './native'

/** A transaction or view, and whether it is still open. */
export interface Scope {
	/** The addon's store it belongs to (its identity only). */
	readonly store: object
	/** False once it has ended: its handles are then `ClosedError`. */
	open: boolean
}

/** The transactions the running code is inside, outermost first. */
const inside = new AsyncLocalStorage<readonly Scope[]>()

/** Runs `fn` inside the transaction `tx`. */
export function runInside<R>(tx: Scope, fn: () => R): R {
	return inside.run([...(inside.getStore() ?? []), tx], fn)
}

/** Whether the running code is inside an open transaction of `store`. */
export function insideTx(store: object | undefined): boolean {
	const scopes = inside.getStore()
	return scopes !== undefined && scopes.some((s) => s.open && s.store === store)
}

/**
 * The refusal of a write of `store` from inside one of its own open
 * transactions, or `undefined` when the write may wait its turn. The text
 * is the engine's (`message`, or its refusal of any such write).
 */
export function waitsForOwnTx(store: object | undefined, what: ErrorWhat, message?: string): InvalidError | undefined {
	if (!insideTx(store)) return undefined
	return new InvalidError(message ?? native.insideTxMessage(), what)
}
