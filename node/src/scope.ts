/**
 * Which transactions and runs of `once` the running code is inside. While
 * `store.tx(fn)` runs `fn`, the store's writer does nothing but that
 * transaction, so a write of the same store made from `fn` outside the
 * transaction (a plain bucket's `set`, another `store.tx`) would wait for
 * the transaction, and the transaction for it, until the engine's limit
 * rolled it back; a run of a key of once inside its own run would wait for
 * itself. The engine refuses those calls with `InvalidError` instead,
 * naming the way out: the package hands it the running code's context, and
 * the decision and its message are the engine's.
 *
 * Kept with `AsyncLocalStorage`, so it follows `fn` across its awaits and
 * not into unrelated requests, whose writes simply wait their turn.
 *
 * @module
 */

import { AsyncLocalStorage } from 'node:async_hooks'

import type { ErrorWhat } from './errors'
import { native, type NativeClaim, type NativeContext, type NativeStore, type NativeTx } from './native'
import { type AbortSignalLike, withSignal } from './signals'
import { invalidArg } from './values'

/** A transaction or view, and whether it is still open. */
export interface Scope {
	/** False once it has ended: its handles are then `ClosedError`. */
	open: boolean
}

/** The engine's record of what the running code is inside. */
const inside = new AsyncLocalStorage<NativeContext>()

/** The running code's context, as the engine's calls take it. */
export function callerContext(): NativeContext | undefined {
	return inside.getStore()
}

/** Runs `fn` inside the transaction `tx`. */
export function runInside<R>(tx: NativeTx, fn: () => R): R {
	return inside.run((inside.getStore() ?? native.callerContext()).insideTx(tx), fn)
}

/** Runs `fn` inside the run of once that `claim` holds. */
export function runInsideRun<R>(claim: NativeClaim, fn: () => R): R {
	return inside.run((inside.getStore() ?? native.callerContext()).insideRun(claim), fn)
}

/**
 * The engine's refusal of a write of `store` from inside one of its own
 * open transactions, or `undefined` when the write may wait its turn.
 */
export function waitsForOwnTx(store: object | undefined, what: ErrorWhat): Error | undefined {
	const caller = inside.getStore()
	if (caller === undefined || store === undefined) return undefined
	try {
		;(store as NativeStore).refuseWrite(caller, what.bucket)
		return undefined
	} catch (e) {
		return e as Error
	}
}

/**
 * Runs `write`, an addon call of a handle of `store` named `bucket` on the
 * store itself, as a Promise of its answer: the engine's refusal from
 * inside one of the store's own transactions, or a bad argument, rejects.
 * `signal` gives up on it as signals.ts says.
 */
export function writeOnStore<R>(
	store: object | undefined,
	bucket: string,
	write: () => unknown,
	signal?: AbortSignalLike,
): Promise<R> {
	const refused = waitsForOwnTx(store, { bucket })
	if (refused) return Promise.reject(refused)
	try {
		return signal === undefined ? (write() as Promise<R>) : withSignal<R>(signal, { bucket }, write)
	} catch (e) {
		return Promise.reject(invalidArg(e, { bucket }))
	}
}

/** Throws the engine's refusal of a transaction of `store` opened inside one of its own. */
export function refuseNestedTx(store: object): void {
	const caller = inside.getStore()
	if (caller !== undefined) (store as NativeStore).refuseTx(caller)
}
