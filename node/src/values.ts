/**
 * The types a bucket's values can have, and how a bucket without a type
 * keeps them.
 *
 * Every type keeps the row kinds every language shares (KV-3), so that a
 * value written by Python, Go or Rust under the same name reads back right.
 * A bucket without a `type` (`'auto'`) keeps each value by its kind, as the
 * typed buckets of every language keep that kind: a safe integer as an
 * integer, any other number as its float bits, a string as its UTF-8, a
 * `Uint8Array` as bytes, a boolean as 1 or 0, a `bigint` as an integer,
 * `null` as nothing, an object or array as JSON. It reads each row by its
 * kind: nothing as `null`, an integer as a number, bytes as JSON. So
 * `store.bucket<number>('sign-in-codes')` and Python's
 * `store.bucket("sign-in-codes", int)` share their rows, and so do
 * `store.bucket<Session>('sessions')` and a dataclass, a Go struct or a
 * serde struct. Bytes that are not JSON (text, bytes, float bits) are
 * `CorruptError` to it: a bucket of strings, bytes, floats, booleans or
 * bigints says so with its `type`, and TypeScript asks for it.
 *
 * | `type`     | TypeScript   | kept as                         | reads what others wrote as       |
 * | ---------- | ------------ | ------------------------------- | -------------------------------- |
 * | `'auto'`   | integers, objects, arrays, `null` | by its kind (above) | `int`, `int64`, `i64`; dicts, structs, serde structs |
 * | `'json'`   | any JSON     | JSON text                       | dicts, structs, serde structs    |
 * | `'string'` | `string`     | UTF-8 bytes                     | `str`, `string`, `String`        |
 * | `'bytes'`  | `Uint8Array` | bytes                           | `bytes`, `[]byte`, `Vec<u8>`     |
 * | `'int'`    | `number`     | an integer (safe integers only) | `int`, `int64`, `i64`            |
 * | `'bigint'` | `bigint`     | an integer, or 8 bytes for uint64 | `int`, `int64`/`uint64`, `i64`/`u64` |
 * | `'float'`  | `number`     | the 8 bytes of its bits         | `float`, `float64`, `f64`        |
 * | `'bool'`   | `boolean`    | the integer 1 or 0              | `bool`                           |
 * | `'set'`    | `null`       | nothing: a member of a set      | `None`, `struct{}`, `()`         |
 *
 * @module
 */

import type { RawValue } from './codec'
import { native } from './native'
import { CorruptError, type ErrorWhat, InvalidError, TinystoreError } from './errors'

/** The `type` option of a bucket or `once`: what its values are. */
export type ValueType = 'auto' | 'json' | 'string' | 'bytes' | 'int' | 'bigint' | 'float' | 'bool' | 'set' | 'raw'

/** The TypeScript type of each value type but JSON. */
export interface ValueTypes {
	/** Text. */
	string: string
	/** Bytes. */
	bytes: Uint8Array
	/** A safe integer (up to 2^53-1); an integer row beyond that is `Corrupt`. */
	int: number
	/** An int64 or uint64. */
	bigint: bigint
	/** A float, -0, NaN and infinities included. */
	float: number
	/** A boolean. */
	bool: boolean
	/**
	 * A member of a set: the key is the member and `null` its value (a row
	 * of nothing), so `get` answers `null` for a member and `undefined` for
	 * none, and `has` says which.
	 */
	set: null
	/**
	 * A row as it is, whatever type wrote it: `null`, a `bigint` or a
	 * `Uint8Array` (see `RawValue`). It writes a safe integer number or a
	 * string (as its UTF-8 bytes) too.
	 */
	raw: RawValue
}

/**
 * Whether a bucket without a type reads back every value of `T` as it was
 * written: integers (as `number`), `null`, objects and arrays, or a `T` that
 * is `unknown`. A string, a `Uint8Array`, a boolean or a `bigint` is kept by
 * its kind too, but its row reads back as JSON, a number or bytes only a
 * typed bucket tells apart, so such a `T` needs its `type`.
 */
export type ReadsByKind<T> = unknown extends T
	? true
	: [T] extends [number | null | object]
		? [Extract<T, Uint8Array | ((...args: never[]) => unknown)>] extends [never]
			? true
			: false
		: false

/** The value types that hold `T`: JSON always, by kind when it reads back so, and the scalar types of its kind. */
export type TypeFor<T> =
	| 'json'
	| (ReadsByKind<T> extends true ? 'auto' : never)
	| (T extends string
			? 'string'
			: T extends Uint8Array
				? 'bytes'
				: T extends number
					? 'int' | 'float'
					: T extends bigint
						? 'bigint'
						: T extends boolean
							? 'bool'
							: T extends null
								? 'set'
								: never)

/** A key or an owner: text, bytes, or an integer (`42` and `'42'` are one key). */
export type Key = string | number | bigint | Uint8Array

/** Shows a key in a message, as the engine shows every key (`owner/key`, bytes escaped `\xNN`). */
export function showKey(key: Key, owners: readonly Key[] = []): string {
	return native.showPath(owners, key)
}

/**
 * The options argument of a bucket or `once` of `T` without a codec:
 * optional when a bucket without a type reads `T` back, otherwise with the
 * `type` that does.
 */
export type TypedOptions<O, T> =
	ReadsByKind<T> extends true ? [options?: O & { type?: TypeFor<T> }] : [options: O & { type: TypeFor<T> }]

/**
 * A value of a bucket without a type as the addon takes it: an object or
 * array as its JSON text; every other value as it is, for the addon to
 * keep by its kind (`undefined`, a function or a symbol is refused there).
 */
export function toAuto(value: unknown, bucket: string, key: () => string): unknown {
	if (typeof value !== 'object' || value === null || value instanceof Uint8Array) return value
	return toJson(value, bucket, key)
}

/** A value of a bucket without a type as the addon read it: JSON as its text, `null` or a number. */
export function fromAuto(value: unknown, bucket: string, key: () => string): unknown {
	return typeof value === 'string' ? fromJson(value, bucket, key) : value
}

/**
 * How a bucket's values cross to the addon: by kind (`'auto'`, objects as
 * their JSON text), as JSON text, or as they are (every other type). @internal
 */
export type Crossing = 'auto' | 'json' | 'as-is'

/** The crossing of a value type, as the addon names it. @internal */
export function crossingOf(valueType: string): Crossing {
	return valueType === 'auto' || valueType === 'json' ? valueType : 'as-is'
}

/** A value as the addon takes it, by its crossing. @internal */
export function encodeAs(crossing: Crossing, value: unknown, bucket: string, key: () => string): unknown {
	if (crossing === 'auto') return toAuto(value, bucket, key)
	if (crossing === 'json') return toJson(value, bucket, key)
	return value
}

/** A value as the addon gave it, by its crossing. @internal */
export function decodeAs(crossing: Crossing, value: unknown, bucket: string, key: () => string): unknown {
	if (crossing === 'auto') return fromAuto(value, bucket, key)
	if (crossing === 'json') return fromJson(value, bucket, key)
	return value
}

/** Encodes a value of a JSON bucket; what JSON cannot write is `Invalid`. */
export function toJson(value: unknown, bucket: string, key: () => string): string {
	let text: string | undefined
	try {
		text = JSON.stringify(value)
	} catch (e) {
		throw native.codecFault('json_encode', String((e as Error)?.message ?? e), bucket, key())
	}
	if (text === undefined) {
		throw native.codecFault('json_type', typeof value, bucket, key())
	}
	return text
}

/** Decodes the text of a JSON row (the addon checked that it is JSON). */
export function fromJson(text: unknown, bucket: string, key: () => string): unknown {
	try {
		return JSON.parse(text as string)
	} catch (e) {
		throw native.codecFault('json_decode', String((e as Error)?.message ?? e), bucket, key())
	}
}

/**
 * The error for an argument of the wrong JS type: the addon's own
 * conversion errors (from callers in plain JavaScript) become `InvalidError`
 * naming the handle, as every bad input is (KV-18).
 */
export function invalidArg(e: unknown, what: ErrorWhat): unknown {
	if (e instanceof TinystoreError || !(e instanceof Error)) return e
	return new InvalidError(`a wrong type of argument: ${e.message}`, what)
}

/** A `Date` option as milliseconds, or `InvalidError` naming it. */
export function dateArg(value: unknown, name: string, what: ErrorWhat): number | undefined {
	if (value === undefined) return undefined
	if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
		throw new InvalidError(`${name} is a valid Date, not ${String(value)}`, what)
	}
	return value.getTime()
}
