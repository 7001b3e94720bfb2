/**
 * Loads the addon, typed by the declarations napi-rs writes from its Rust
 * (addon.ts). Private: the package's classes wrap it. The addon is
 * `tinystore.<platform>.node`: beside package.json in a checkout (`make
 * node`), or, as napi-rs lays a release out, in the package
 * `tinystore-<platform>` that npm installs beside this one (an optional
 * dependency for each platform; npm and Bun install only the one that fits).
 *
 * @module
 */

import { existsSync } from 'node:fs'
import { join } from 'node:path'

import type * as Addon from './addon'
import { makeError, useEngineText } from './errors'

/**
 * What the addon exports, as napi-rs declares it from the `#[napi]` items of
 * bindings/node/src: addon.ts is generated (`make generate`), never edited,
 * and only its types are imported, so it costs nothing at run time.
 */
export type NativeModule = typeof Addon

export type {
	NativeBucket,
	NativeClaim,
	NativeConfig,
	NativeContext,
	NativeCounters,
	NativeLimitStore,
	NativeLimitUpdate,
	NativeOnce,
	NativeQuota,
	NativeRateLimit,
	NativeSnapshot,
	NativeStore,
	NativeTx,
} from './addon'

/** What `maintain()` did. */
export type NativeMaintenance = Awaited<ReturnType<Addon.NativeStore['maintain']>>

/** An entry as the addon gives it (JSON values still as text). */
export type NativeEntry = NonNullable<ReturnType<Addon.NativeBucket['entry']>>

/** A page as the addon gives it. */
export type NativePage = ReturnType<Addon.NativeBucket['list']>

/** Where a bucket's read runs: a transaction or a snapshot (the store when left out). */
export type NativeScope = Addon.NativeTx | Addon.NativeSnapshot

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
 * (a fifth of a `get`'s time; see bindings/node/src/fast_reads.rs). A `get`
 * in a transaction or snapshot is the addon's own method.
 */
function useBareGet(loaded: NativeModule): void {
	const bare = loaded.fastReads().get
	const inScope = loaded.NativeBucket.prototype.get
	type WithHandle = Addon.NativeBucket & { [readHandle]?: unknown }
	loaded.NativeBucket.prototype.get = function get(this: WithHandle, key: unknown, scope?: NativeScope | null): unknown {
		if (scope !== undefined && scope !== null) return inScope.call(this, key, scope)
		return bare((this[readHandle] ??= this.readHandle()), key)
	}
}

/** The addon, loaded once per thread. */
export const native: NativeModule = load()

/** The fulfil and reject functions of the Promises of bare sets in flight, by number. */
const fulfil: (((version: string) => void) | undefined)[] = []
const fail: (((e: unknown) => void) | undefined)[] = []
/** Numbers free for reuse, and the next never used. */
const freeIds: number[] = []
let nextId = 0

/**
 * Fulfils the Promises whose numbers the addon wrote into `fast.ids`, each
 * with the version at the same place of `fast.versions`, as the decimal
 * text every version of the package is.
 */
function settled(n: number): void {
	const { ids, versions } = fast
	for (let i = 0; i < n; i++) {
		const id = ids[i] as number
		const f = fulfil[id]
		fulfil[id] = fail[id] = undefined
		freeIds.push(id)
		f?.(String(versions[i]))
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

/** The addon's C `set`, as `tinystore_bucket_set` in bindings/node/src/fast_writes.rs says: 1 when it did the set. */
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
export function setHandle(bucket: Addon.NativeBucket): SetHandle {
	const handle = bucket.readHandle()
	return { handle, address: cSet === undefined ? 0 : fast.address(handle) }
}

/**
 * A bucket's `set` without options through the addon's bare
 * `set(handle, key, value, id)`: the same write without napi-rs' per-call
 * bookkeeping of a method, and with a Promise made here and kept by number,
 * which the addon settles a group at a time (see
 * bindings/node/src/fast_writes.rs). Under Bun a string key and value go
 * through the C `set` first; what it declines goes through napi. Bad input
 * throws, as the method does.
 */
export function bareSet(h: SetHandle, key: unknown, value: unknown): Promise<string> {
	const id = freeIds.pop() ?? nextId++
	if (!(cSet !== undefined && typeof key === 'string' && typeof value === 'string' && viaC(h, key, value, id))) {
		try {
			fast.set(h.handle, key, value, id)
		} catch (e) {
			freeIds.push(id)
			throw e
		}
	}
	return new Promise<string>((resolve, reject) => {
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
