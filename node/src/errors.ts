/**
 * The errors of TinyStore: one class per kind of the engine's error table,
 * each with a stable `code` and, when one key caused it, `what`.
 *
 * A missing key is never an error: reads answer `undefined`.
 *
 * @module
 */

/** The stable codes of the error kinds, the same in every language. */
export type ErrorCode =
	| 'INVALID'
	| 'LIMIT'
	| 'CONFLICT'
	| 'CORRUPT'
	| 'CLOSED'
	| 'OUTCOME_UNKNOWN'
	| 'IO'
	| 'CANCELLED'

/** What an error is about: the handle's name and the path of owners and key (`owner/owner/key`). */
export interface ErrorWhat {
	/** The bucket (or rate limit, quota, counters, once) the error is about. */
	bucket?: string
	/** The path of owners and key, as `owner/owner/key`. */
	key?: string
}

/**
 * The base class of every error TinyStore throws or rejects with.
 *
 * @example
 * ```ts
 * try {
 *   await codes.set(digest(code), userId, { ifVersion })
 * } catch (e) {
 *   if (e instanceof ConflictError) console.log(e.code, e.what.key)
 * }
 * ```
 */
export class TinystoreError extends Error {
	/** The kind's stable code, as `'INVALID'`. */
	readonly code: ErrorCode
	/** The bucket and key the error is about, when one key caused it. */
	readonly what: ErrorWhat

	/**
	 * @param code - the kind's code
	 * @param message - what went wrong, naming the input
	 * @param what - the bucket and the path of owners and key
	 */
	constructor(code: ErrorCode, message: string, what: ErrorWhat = {}) {
		super(describe(message, what))
		this.code = code
		this.what = what
		this.name = new.target.name
	}
}

/** The engine's text of an error: the message, then the bucket and key it is about. */
type EngineText = (message: string, bucket?: string, key?: string) => string

/**
 * How every error's text is made: by the engine, so that an error this
 * package finds reads as one the engine raised. The addon gives it when it
 * loads (native.ts), before any call can fail.
 */
let engineText: EngineText | undefined

/** @internal Called once by native.ts with the addon's `errorText`. */
export function useEngineText(text: EngineText): void {
	engineText = text
}

function describe(message: string, what: ErrorWhat): string {
	if (engineText === undefined) throw new Error('tinystore: an error was made before the addon loaded')
	return engineText(message, what.bucket, what.key)
}

/** The constructor of an error class of one kind. */
type KindClass = new (message: string, what?: ErrorWhat) => TinystoreError

/**
 * The class of one kind of error: a `TinystoreError` whose `code` is
 * `code`, made with what went wrong and the bucket and key it is about.
 */
function kindClass(code: ErrorCode): KindClass {
	return class extends TinystoreError {
		/** @param message - what went wrong, naming the input @param what - the bucket and key */
		constructor(message: string, what: ErrorWhat = {}) {
			super(code, message, what)
		}
	}
}

/** Bad input: a name, key, value, duration, rate, option or type. Nothing was written. */
export class InvalidError extends kindClass('INVALID') {}

/** A bound was reached: a value over 1 MiB, a counter past int64, a full memory bound. */
export class LimitError extends kindClass('LIMIT') {}

/** A version check failed: the key is absent, expired or at another version. */
export class ConflictError extends kindClass('CONFLICT') {}

/** A row does not read as the bucket's type, or the file is damaged. */
export class CorruptError extends kindClass('CORRUPT') {}

/** The store is closed. */
export class ClosedError extends kindClass('CLOSED') {}

/**
 * The commit of a group failed after this write ran in it: the write may or
 * may not be in the file. Read the key before writing it again.
 */
export class OutcomeUnknownError extends kindClass('OUTCOME_UNKNOWN') {}

/** The file system or SQLite failed; nothing of this call was written. */
export class IoError extends kindClass('IO') {}

/** The caller gave up before its write started; nothing was written. */
export class CancelledError extends kindClass('CANCELLED') {}

/** The class of each code. */
export const errorClasses: Record<ErrorCode, KindClass> = {
	INVALID: InvalidError,
	LIMIT: LimitError,
	CONFLICT: ConflictError,
	CORRUPT: CorruptError,
	CLOSED: ClosedError,
	OUTCOME_UNKNOWN: OutcomeUnknownError,
	IO: IoError,
	CANCELLED: CancelledError,
}

/**
 * Makes the error of a code (what the addon calls for every engine error).
 * An unknown code, from an addon newer than this package, is a plain
 * `TinystoreError` that still carries its code.
 */
export function makeError(code: string, message: string, bucket?: string, key?: string): TinystoreError {
	const what: ErrorWhat = {}
	if (bucket !== undefined) what.bucket = bucket
	if (key !== undefined) what.key = key
	const Class = (errorClasses as Record<string, (typeof errorClasses)[ErrorCode] | undefined>)[code]
	return Class ? new Class(message, what) : new TinystoreError(code as ErrorCode, message, what)
}
