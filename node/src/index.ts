/**
 * TinyStore KV for Node and Bun: sessions, one-time codes, rate limits,
 * quotas, counters and the answers of requests sent twice, in one SQLite
 * file (`kv.db`) that Python, Go and Rust programs share.
 *
 * ```ts
 * import { open } from 'tinystore'
 *
 * await using store = await open('data')
 * const codes = store.bucket<number>('sign-in-codes', { ttl: '15m' })
 * await codes.set(digest(code), user.id)
 * ```
 *
 * @packageDocumentation
 */

export { Bucket } from './bucket'
export type { BucketOptions, CreateOptions, Created, Entry, ListOptions, Page, SetOptions, VersionOptions } from './bucket'
export type { Codec, RawValue } from './codec'
export type { Duration, DurationText, DurationUnit, Rate } from './durations'
export {
	CancelledError,
	ClosedError,
	ConflictError,
	CorruptError,
	InvalidError,
	IoError,
	LimitError,
	OutcomeUnknownError,
	TinystoreError,
} from './errors'
export type { ErrorCode, ErrorWhat } from './errors'
export { Config, EnvLayer, field, fromEnv, openConfig } from './config'
export type { ConfigOptions, EnvOptions, Field, FieldOptions, Schema, Settings, Source } from './config'
export { Counters } from './counters'
export { onLog } from './logs'
export type { LogHandler, LogRecord } from './logs'
export type { CounterType, CounterTypes, CountersOptions } from './counters'
export { Quota, RateLimit } from './limits'
export type { Allowance, RateLimitOptions, WindowUsage } from './limits'
export { Once } from './once'
export type { OnceOptions } from './once'
export { AbortError } from './signals'
export type { AbortSignalLike, SignalOptions } from './signals'
export { Clock, open, Store } from './store'
export type { Maintenance, OpenOptions } from './store'
export { Tx, TxBucket } from './tx'
export { TxCounters, TxOnce, TxQuota } from './tx-kinds'
export type { Key, ReadsByKind, TypedOptions, TypeFor, ValueType, ValueTypes } from './values'
export { View, ViewBucket } from './view'
