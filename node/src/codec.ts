/**
 * Raw buckets and a bucket's own codec.
 *
 * `store.bucket(name, { type: 'raw' })` reads every value as its row keeps
 * it, whatever type or language wrote it: `null` (nothing, a set member), a
 * `bigint` (integers and booleans) or a `Uint8Array` (text, bytes, float
 * bits, uint64, JSON; an empty string is empty bytes). What it writes, a
 * bucket of the matching type reads back.
 *
 * `store.bucket<Point>(name, { codec: { encode, decode } })` keeps values as
 * the bytes of `encode` and reads them with `decode`. A value `decode`
 * refuses is `CorruptError` naming the bucket and key, and a `take` of it
 * leaves it in place.
 *
 * @module
 */

import { CorruptError, InvalidError } from './errors'
import { native } from './native'

/** A value of a raw bucket: a row as it is. */
export type RawValue = null | bigint | Uint8Array

/** A bucket's own codec, in place of the choice by type. */
export interface Codec<T> {
	/** The bytes that keep `value`; a throw is `InvalidError` and writes nothing. */
	encode(value: T): Uint8Array
	/** The value kept in `bytes`; a throw is `CorruptError`, and a `take` keeps the value. */
	decode(bytes: Uint8Array): T
}

/** Refuses an option that is not a codec, naming the bucket. @internal */
export function checkCodec(codec: unknown, bucket: string): asserts codec is Codec<unknown> {
	const c = codec as Partial<Codec<unknown>> | null
	if (typeof c !== 'object' || c === null || typeof c.encode !== 'function' || typeof c.decode !== 'function') {
		throw new InvalidError('codec is an object with encode(value) => Uint8Array and decode(bytes) => value', {
			bucket,
		})
	}
}

/** The bytes of `value` through `codec`; a failure is `InvalidError` naming the key. @internal */
export function encodeWith<T>(codec: Codec<T>, value: T, bucket: string, key: () => string): Uint8Array {
	let out: unknown
	try {
		out = codec.encode(value)
	} catch (e) {
		throw native.codecFault('encode', String((e as Error)?.message ?? e), bucket, key())
	}
	if (!(out instanceof Uint8Array)) {
		throw native.codecFault('not_bytes', typeof out, bucket, key())
	}
	return out
}

/** The value of a byte row through `codec`; a failure is `CorruptError` naming the key. @internal */
export function decodeWith<T>(codec: Codec<T>, bytes: unknown, bucket: string, key: () => string): T {
	try {
		return codec.decode(bytes as Uint8Array)
	} catch (e) {
		throw native.codecFault('decode', String((e as Error)?.message ?? e), bucket, key())
	}
}

/**
 * A take through a codec by the engine's checked take: `take` hands the
 * engine `check`, which it calls with the row's value after reading it and
 * before taking it (inside a transaction's write; on the store before the
 * write, which then takes the key only if it is still the row checked). A
 * value that does not decode is never taken, and the take rejects with the
 * decode's own error. @internal
 */
export async function takeDecoded<T>(
	decode: (value: unknown) => T,
	take: (check: (value: unknown) => boolean) => unknown,
): Promise<T | undefined> {
	let decoded: { value: T } | undefined
	let failure: { error: unknown } | undefined
	const check = (value: unknown): boolean => {
		try {
			decoded = { value: decode(value) }
			return true
		} catch (error) {
			failure = { error }
			return false
		}
	}
	try {
		return (await take(check)) === undefined ? undefined : decoded?.value
	} catch (e) {
		throw failure ? failure.error : e
	}
}
