/**
 * `{ signal }`: giving up on a call that waits, with an `AbortSignal`.
 *
 * What a call gives up, and when, is the engine's rule, the same in every
 * language (Go's context, Python's task cancellation): a write whose group
 * has not started writes nothing; one whose group started finishes with
 * it; a transaction or a run of once waiting for its turn stops waiting.
 * This module only wires a signal to the engine's cancel of one call, and
 * rejects as Node's own APIs do (`fs.promises.readFile(path, { signal })`):
 * with an {@link AbortError} whose `cause` is `signal.reason`.
 *
 * @module
 */

import { CancelledError, InvalidError, type ErrorWhat } from './errors'
import { native } from './native'

/**
 * An `AbortSignal` (`controller.signal`, `AbortSignal.timeout(ms)`), typed
 * by the members the package uses, so that its types need neither the DOM
 * library nor `@types/node`. At run time it must be an `AbortSignal`.
 */
export interface AbortSignalLike {
	/** Whether it has aborted. */
	readonly aborted: boolean
	/** Why it aborted. */
	readonly reason: unknown
	/** Listens for the abort. */
	addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void
	/** Stops listening. */
	removeEventListener(type: 'abort', listener: () => void): void
}

/** The option of every call that waits for the store's writer or another process. */
export interface SignalOptions {
	/**
	 * Gives up on the call when it aborts. The call rejects with an
	 * {@link AbortError} only when nothing of it was written; a write that
	 * had started when the signal aborted answers as it ended.
	 */
	signal?: AbortSignalLike
}

/**
 * The rejection of a call given up through its `signal`: nothing of the
 * call was written. As Node's own APIs reject (`fs`, `timers/promises`):
 * `name` is `'AbortError'`, `code` is `'ABORT_ERR'`, and `cause` is the
 * signal's `reason` (a `DOMException` named `AbortError` for a plain
 * `abort()`, `TimeoutError` for `AbortSignal.timeout`, or your own).
 */
export class AbortError extends Error {
	/** Node's code of an aborted operation. */
	readonly code = 'ABORT_ERR'

	/** @param options - `cause`: the signal's `reason` */
	constructor(options?: { cause?: unknown }) {
		super('This operation was aborted', options)
		this.name = 'AbortError'
	}
}

/** A `signal` option that is not an `AbortSignal`: bad input, nothing done. */
function checkSignal(signal: unknown, what: ErrorWhat): asserts signal is AbortSignalLike | undefined {
	if (signal !== undefined && !(signal instanceof AbortSignal)) {
		const got = signal === null ? 'null' : typeof signal
		throw new InvalidError(`signal must be an AbortSignal; got ${got}`, what)
	}
}

/**
 * The engine's cancel of a call, fired when `signal` aborts, until
 * {@link SignalCancel.stop} removes the listener.
 */
export class SignalCancel {
	/** The addon's cancel: armed for a call, or given to a commit. */
	readonly cancel = new native.NativeCancel()
	readonly #signal: AbortSignalLike
	readonly #fire = (): void => this.cancel.fire()

	/** @param signal - a signal not aborted */
	constructor(signal: AbortSignalLike) {
		this.#signal = signal
		signal.addEventListener('abort', this.#fire, { once: true })
	}

	/** Makes `call`, one addon call, with this cancel armed for its write. */
	call(call: () => unknown): unknown {
		this.cancel.arm()
		try {
			return call()
		} finally {
			native.disarmCancel()
		}
	}

	/** Removes the listener: the call has settled. */
	stop(): void {
		this.#signal.removeEventListener('abort', this.#fire)
	}
}

/**
 * Runs `call`, one addon call that may wait, under `signal`: an aborted
 * signal calls nothing and rejects at once; one that aborts later fires
 * the engine's cancel of the call, and the call's `CancelledError` (the
 * engine gave it up) becomes the {@link AbortError}. The listener is
 * removed once the call settles. A bad `signal`, and what `call` throws,
 * are thrown, for the caller to map as its other bad input.
 */
export function withSignal<R>(signal: AbortSignalLike | undefined, what: ErrorWhat, call: () => unknown): Promise<R> {
	checkSignal(signal, what)
	if (signal === undefined) return Promise.resolve(call() as R | Promise<R>)
	if (signal.aborted) return Promise.reject(abortError(signal))
	const watch = new SignalCancel(signal)
	let answer: unknown
	try {
		answer = watch.call(call)
	} catch (e) {
		watch.stop()
		throw e
	}
	// Answered already (inside a transaction): nothing waited.
	if (typeof (answer as Promise<R> | undefined)?.then !== 'function') {
		watch.stop()
		return Promise.resolve(answer as R)
	}
	return (answer as Promise<R>).then(
		(v) => {
			watch.stop()
			return v
		},
		(e: unknown) => {
			watch.stop()
			throw abortedAs(signal, e)
		},
	)
}

/** The rejection of a call given up through `signal`. */
export function abortError(signal: AbortSignalLike): AbortError {
	return new AbortError({ cause: signal.reason })
}

/** The engine's `CancelledError` of a call given up through `signal`, as an {@link AbortError}. */
export function abortedAs(signal: AbortSignalLike | undefined, e: unknown): unknown {
	return signal?.aborted && e instanceof CancelledError ? abortError(signal) : e
}

/** {@link checkSignal} for a call that checks its options before it starts. */
export function signalOf(options: SignalOptions | undefined, what: ErrorWhat): AbortSignalLike | undefined {
	const signal = options?.signal
	checkSignal(signal, what)
	return signal
}
