/**
 * The types a bucket's values can have, and the JSON of the default type.
 *
 * A bucket holds JSON unless its `type` option says otherwise. The other
 * types keep the row kinds every language shares (KV-3), so that a value
 * written by Python, Go or Rust under the same name reads back right:
 *
 * | `type`     | TypeScript   | kept as                         | reads what others wrote as       |
 * | ---------- | ------------ | ------------------------------- | -------------------------------- |
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
import { CorruptError, type ErrorWhat, InvalidError, TinystoreError } from './errors'

/** The `type` option of a bucket or `once`: what its values are. */
export type ValueType = 'json' | 'string' | 'bytes' | 'int' | 'bigint' | 'float' | 'bool' | 'set' | 'raw'

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

/** The value types that hold `T`: JSON always, and the scalar types of its kind. */
export type TypeFor<T> =
	| 'json'
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

/** Shows a key in a message. */
export function showKey(key: Key, owners: readonly Key[] = []): string {
	return [...owners, key].map((k) => (k instanceof Uint8Array ? Buffer.from(k).toString('hex') : String(k))).join('/')
}

/** Encodes a value of a JSON bucket; what JSON cannot write is `Invalid`. */
export function toJson(value: unknown, bucket: string, key: string): string {
	let text: string | undefined
	try {
		text = JSON.stringify(value)
	} catch (e) {
		throw new InvalidError(`the value cannot be written as JSON: ${(e as Error).message}`, { bucket, key })
	}
	if (text === undefined) {
		throw new InvalidError(`a value of type ${typeof value} cannot be written as JSON`, { bucket, key })
	}
	return text
}

/** Decodes the text of a JSON row (the addon checked that it is JSON). */
export function fromJson(text: unknown, bucket: string, key: string): unknown {
	try {
		return JSON.parse(text as string)
	} catch (e) {
		throw new CorruptError(`the row is not JSON: ${(e as Error).message}`, { bucket, key })
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
