/**
 * Loads the addon and types what it exports. Private: the package's classes
 * wrap it. The addon is `tinystore.<platform>.node`: beside package.json in a
 * checkout (`make node`), or, as napi-rs lays a release out, in the package
 * `tinystore-<platform>` that npm installs beside this one (an optional
 * dependency for each platform; npm and Bun install only the one that fits).
 *
 * @module
 */

import { existsSync } from 'node:fs'
import { join } from 'node:path'

import { makeError, useEngineText } from './errors'

/** What `maintain()` did. */
export interface NativeMaintenance {
	flushed: number
	renewed: number
	cleared: number
	expired: number
	more: boolean
}

/** An entry as the addon gives it (JSON values still as text). */
export interface NativeEntry {
	key: string | Uint8Array
	value: unknown
	version: string
	expiresAt: Date | undefined
}

/** A page as the addon gives it. */
export interface NativePage {
	entries: NativeEntry[]
	next: string | Uint8Array | undefined
}

/** The addon's bucket. */
export interface NativeBucket {
	readonly name: string
	readonly valueType: string
	under(owner: unknown): NativeBucket
	get(key: unknown, scope?: NativeScope): unknown
	entry(key: unknown, scope?: NativeScope): NativeEntry | undefined
	has(key: unknown, scope?: NativeScope): boolean
	list(after: unknown, limit: number | undefined, scope?: NativeScope): NativePage
	set(key: unknown, value: unknown, ttl: unknown, expiresAt: number | undefined, ifVersion: string | undefined): Promise<void>
	create(key: unknown, value: unknown, ttl: unknown, expiresAt: number | undefined): Promise<boolean>
	take(key: unknown, ifVersion: string | undefined): Promise<unknown>
	delete(key: unknown, ifVersion: string | undefined): Promise<boolean>
	expire(key: unknown, ttl: unknown, atMs: number | undefined, ifVersion: string | undefined): Promise<boolean>
	clear(): Promise<void>
	/** A handle of this bucket for the bare `get` of `fastReads()`. */
	readHandle(): unknown
}

/** Where a bucket's read runs: a transaction or snapshot (the store itself when left out). */
export type NativeScope = NativeTx | NativeSnapshot

/** The addon's open transaction: calls run inside it, at once. */
export interface NativeTx {
	set(bucket: NativeBucket, key: unknown, value: unknown, ttl: unknown, expiresAt: number | undefined, ifVersion: string | undefined): void
	create(bucket: NativeBucket, key: unknown, value: unknown, ttl: unknown, expiresAt: number | undefined): boolean
	/** `check` (a codec's decode) runs before the delete; its `false` keeps the value. */
	take(bucket: NativeBucket, key: unknown, ifVersion: string | undefined, check?: (value: unknown) => boolean): unknown
	delete(bucket: NativeBucket, key: unknown, ifVersion: string | undefined): boolean
	expire(bucket: NativeBucket, key: unknown, ttl: unknown, atMs: number | undefined, ifVersion: string | undefined): boolean
	clear(bucket: NativeBucket): void
	checkCounters(counters: NativeCounters): void
	refuseRateLimit(limit: NativeRateLimit): void
	counterChange(counters: NativeCounters, key: unknown, n: unknown, max: boolean): number | bigint
	counterGet(counters: NativeCounters, key: unknown): number | bigint
	counterDelete(counters: NativeCounters, key: unknown): boolean
	quotaChange(quota: NativeQuota, key: unknown, n: number | undefined, refund: boolean): unknown
	quotaPeek(quota: NativeQuota, key: unknown): unknown
	quotaReset(quota: NativeQuota, key: unknown): void
	onceGet(once: NativeOnce, key: unknown): unknown
	onceDelete(once: NativeOnce, key: unknown): boolean
	commit(): Promise<void>
	rollback(): Promise<void>
}

/** The addon's read snapshot. */
export interface NativeSnapshot {
	close(): void
}

/** The addon's rate limit. */
export interface NativeRateLimit {
	under(owner: unknown): NativeRateLimit
	allow(key: unknown, n: number | undefined): unknown
	peek(key: unknown): unknown
	reset(key: unknown): void
}

/** The addon's quota. */
export interface NativeQuota {
	under(owner: unknown): NativeQuota
	allow(key: unknown, n: number | undefined): Promise<unknown>
	peek(key: unknown): unknown
	refund(key: unknown, n: number | undefined): Promise<unknown>
	reset(key: unknown): Promise<void>
}

/** The addon's counters. */
export interface NativeCounters {
	under(owner: unknown): NativeCounters
	add(key: unknown, n: number | bigint | undefined): Promise<number | bigint>
	max(key: unknown, n: number | bigint): Promise<number | bigint>
	get(key: unknown): number | bigint
	delete(key: unknown): Promise<boolean>
	clear(): Promise<void>
}

/** The transactions and runs of once the running code is inside, as the engine's guards take it. */
export interface NativeContext {
	insideTx(tx: NativeTx): NativeContext
	insideRun(claim: NativeClaim): NativeContext
}

/** The run of one key, held until it keeps an answer or lets go. */
export interface NativeClaim {
	keep(value: unknown): Promise<void>
	abandon(): void
}

/** The addon's once. */
export interface NativeOnce {
	under(owner: unknown): NativeOnce
	begin(key: unknown, caller?: NativeContext): Promise<{ kept: true; value: unknown } | { kept: false; claim: NativeClaim }>
	get(key: unknown): unknown
	delete(key: unknown): Promise<boolean>
}

/** The addon's store. */
export interface NativeStore {
	dir(): string
	isManual(): boolean
	now(): number
	advance(by: unknown): number
	setClock(ms: number): void
	maintain(): Promise<NativeMaintenance>
	close(): Promise<void>
	isClosed(): boolean
	names(): string[][]
	groupStats(): number[]
	failNextCommitForTests(): void
	transaction(): Promise<NativeTx>
	/** Throws the engine's refusal of a call of `name` that would wait for a transaction `caller` is inside. */
	refuseWrite(caller: NativeContext, name?: string): void
	/** Throws the engine's refusal of a transaction opened inside one of `caller`'s. */
	refuseTx(caller: NativeContext): void
	snapshot(): NativeSnapshot
	bucket(name: string, ttl: unknown, idle: unknown, valueType: string): NativeBucket
	rateLimit(name: string, rate: string, burst: number | undefined): NativeRateLimit
	quota(name: string, names: string[], rates: string[]): NativeQuota
	counters(name: string, ttl: unknown, flushEvery: unknown, valueType: string): NativeCounters
	once(name: string, keep: unknown, valueType: string): NativeOnce
}

/** The addon's exports. */
export interface NativeModule {
	init(makeError: (code: string, message: string, bucket?: string, key?: string) => Error): void
	errorCodes(): string[]
	errorText(message: string, bucket?: string, key?: string): string
	codecFault(word: 'encode' | 'decode' | 'not_bytes', detail: string): string
	showPath(owners: readonly unknown[], key: unknown): string
	forwardLogs(sink: (record: [level: string, target: string, message: string]) => void): boolean
	/** A caller's context inside nothing, for the engine's guards (see scope.ts). */
	callerContext(): NativeContext
	parseDuration(text: string): number
	fastReads(): { get(handle: unknown, key: unknown): unknown }
	/** The bare `set(handle, key, value, id)` of a bucket and its settled numbers: see bindings/node/src/fast_set.rs. */
	fastWrites(
		settled: (n: number) => void,
		failed: (id: number, error: unknown) => void,
	): { set(handle: unknown, key: unknown, value: unknown, id: number): void; address(handle: unknown): number; ids: Uint32Array }
	/** The bare `allow(key, n?)` of a rate limit: see bindings/node/src/fast_limits.rs for its answer. */
	rateLimitAllow(limit: NativeRateLimit): ((key: unknown, n?: number) => number | object) & { address: number }
	NativeStore: {
		open(
			dir: string,
			clockMs: number | undefined,
			memory?: number,
			mmapSize?: number,
			keepReadLocks?: boolean,
			shareWithGroup?: boolean,
		): NativeStore
	}
	NativeBucket: { prototype: NativeBucket }
}

function platformTag(): string {
	const { platform, arch } = process
	if (platform !== 'linux') return `${platform}-${arch}`
	// glibc reports its version in the process report; musl does not.
	const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined
	return `linux-${arch}-${report?.header?.glibcVersionRuntime ? 'gnu' : 'musl'}`
}

/** The package of the prebuilt addon for this platform, laid out as napi-rs does. */
const platformPackage = `tinystore-${platformTag()}`

/** The addon's file: the checkout's own build first, then the platform package. */
function findAddon(): string {
	const local = join(__dirname, '..', '..', `tinystore.${platformTag()}.node`)
	if (existsSync(local)) return local
	try {
		return require.resolve(platformPackage)
	} catch {
		throw new Error(
			`tinystore: no native addon for this platform (${platformTag()}): the package ${platformPackage} ` +
				`is not installed, and ${local} is missing. Install tinystore again without --omit=optional ` +
				'(or --no-optional), or build the addon with `make node` in the TinyStore repository.',
		)
	}
}

/** The addon's file, which Bun's FFI opens again for the C `allow` of a rate limit (limits.ts). */
export const addonFile = findAddon()

function load(): NativeModule {
	const loaded = require(addonFile) as NativeModule
	useEngineText(loaded.errorText)
	loaded.init(makeError)
	useBareGet(loaded)
	return loaded
}

/** Where a bucket keeps its read handle, made at its first `get`. */
const readHandle = Symbol('tinystore read handle')

/**
 * Makes every bucket's `get` on the store the addon's bare `get(handle,
 * key)`: the same read, without napi-rs' per-call bookkeeping of a method
 * (a fifth of a `get`'s time; see bindings/node/src/fast_get.rs). A `get`
 * in a transaction or snapshot is the addon's own method.
 */
function useBareGet(loaded: NativeModule): void {
	const bare = loaded.fastReads().get
	const inScope = loaded.NativeBucket.prototype.get
	type WithHandle = NativeBucket & { [readHandle]?: unknown }
	loaded.NativeBucket.prototype.get = function get(this: WithHandle, key: unknown, scope?: NativeScope): unknown {
		if (scope !== undefined) return inScope.call(this, key, scope)
		return bare((this[readHandle] ??= this.readHandle()), key)
	}
}

/** The addon, loaded once per thread. */
export const native: NativeModule = load()

/** The fulfil and reject functions of the Promises of bare sets in flight, by number. */
const fulfil: (((v: undefined) => void) | undefined)[] = []
const fail: (((e: unknown) => void) | undefined)[] = []
/** Numbers free for reuse, and the next never used. */
const freeIds: number[] = []
let nextId = 0

/** Fulfils the Promises whose numbers the addon wrote into `fast.ids`. */
function settled(n: number): void {
	const ids = fast.ids
	for (let i = 0; i < n; i++) {
		const id = ids[i] as number
		const f = fulfil[id]
		fulfil[id] = fail[id] = undefined
		freeIds.push(id)
		f?.(undefined)
	}
}

/** Rejects the Promise of number `id` with the addon's error. */
function failed(id: number, error: unknown): void {
	const f = fail[id]
	fulfil[id] = fail[id] = undefined
	freeIds.push(id)
	f?.(error)
}

const fast = native.fastWrites(settled, failed)

/** The addon's C `set`, as `tinystore_bucket_set` in bindings/node/src/fast_set.rs says: 1 when it did the set. */
type CSet = (handle: number, key: Uint8Array, keyLen: number, value: Uint8Array, valueLen: number, id: number) => number

/**
 * Under Bun, the addon's C `set` through Bun's FFI: a napi call there costs
 * more than the rest of a set's work on the JS thread. Undefined under Node
 * (whose napi calls are cheap) or when the FFI cannot open the addon.
 */
const cSet: CSet | undefined = (() => {
	if (!('Bun' in globalThis)) return undefined
	try {
		const { dlopen, FFIType } = require('bun:ffi')
		const lib = dlopen(addonFile, {
			tinystore_bucket_set: {
				args: [FFIType.ptr, FFIType.ptr, FFIType.u32, FFIType.ptr, FFIType.u32, FFIType.u32],
				returns: FFIType.i32,
			},
		})
		return lib.symbols.tinystore_bucket_set as CSet
	} catch {
		return undefined
	}
})()

/** Where a string key's and value's UTF-8 go for the C `set` (one thread runs this module). */
const setKey = new Uint8Array(256)
const setValue = new Uint8Array(1024)
const utf8 = new TextEncoder()

/** What `bareSet` needs of a bucket: its read handle, and under Bun where it lives. */
export interface SetHandle {
	readonly handle: unknown
	readonly address: number
}

/** The `SetHandle` of a bucket, made once at its first set without options. */
export function setHandle(bucket: NativeBucket): SetHandle {
	const handle = bucket.readHandle()
	return { handle, address: cSet === undefined ? 0 : fast.address(handle) }
}

/**
 * A bucket's `set` without options through the addon's bare
 * `set(handle, key, value, id)`: the same write without napi-rs' per-call
 * bookkeeping of a method, and with a Promise made here and kept by number,
 * which the addon settles a group at a time (see
 * bindings/node/src/fast_set.rs). Under Bun a string key and value go
 * through the C `set` first; what it declines goes through napi. Bad input
 * throws, as the method does.
 */
export function bareSet(h: SetHandle, key: unknown, value: unknown): Promise<void> {
	const id = freeIds.pop() ?? nextId++
	if (!(cSet !== undefined && typeof key === 'string' && typeof value === 'string' && viaC(h, key, value, id))) {
		try {
			fast.set(h.handle, key, value, id)
		} catch (e) {
			freeIds.push(id)
			throw e
		}
	}
	return new Promise<void>((resolve, reject) => {
		fulfil[id] = resolve
		fail[id] = reject
	})
}

/** Tries the C `set` (Bun): whether it did the set, which it cannot for a key or value its buffer does not hold. */
function viaC(h: SetHandle, key: string, value: string, id: number): boolean {
	const k = utf8.encodeInto(key, setKey)
	if (k.read !== key.length || k.written === 0) return false
	const v = utf8.encodeInto(value, setValue)
	return v.read === value.length && (cSet as CSet)(h.address, setKey, k.written, setValue, v.written, id) === 1
}
