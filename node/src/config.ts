/**
 * Typed settings (KV-20): an object of fields, from layers. In order: the
 * fields' defaults, partial `defaults` objects and the environment (`.env`
 * files, then `process.env`) in the order given, then the updates kept in `kv.db` field by
 * field, which every handle, in this process or another, sees.
 *
 * ```ts
 * import { field, openConfig } from 'tinystore'
 *
 * const settings = openConfig(store, 'app', {
 * 	port: field.int(8080),
 * 	timeout: field.duration('30s'),
 * 	limits: { rps: field.int(100) },
 * 	token: field.str('', { secret: true }),
 * }, { env: { prefix: 'APP', files: ['.env'] } })
 * settings.get().limits.rps // from memory
 * await settings.update((s) => { s.limits.rps = 200 }) // kept in kv.db
 * for await (const s of settings.watch()) server.setRate(s.limits.rps)
 * ```
 *
 * This module only describes the schema to the engine and converts; the
 * layering, the parsing of variables, the checks and the kept rows are the
 * engine's, the same in every language.
 *
 * @module
 */

import { InvalidError } from './errors'
import { native, type NativeConfig } from './native'
import { nativeOf, type Store } from './store'

/** How a field is marked. */
export interface FieldOptions {
	/** Comes from the defaults and environment alone: never kept, refused by `update`, hidden by `sources`. */
	secret?: boolean
	/** May not be left empty by the layers (an error at open naming the variable), nor emptied by `update`. */
	required?: boolean
	/** The variable that sets it, instead of the prefix and the path (`APP_LIMITS_RPS`). */
	env?: string
}

/** One field of a schema: its engine type, default and marks. `T` is its value's type. */
export interface Field<T> extends FieldOptions {
	/** The engine's type: `str`, `int`, `float`, `bool`, `duration`, `json` or `list:<type>`. */
	readonly type: string
	/** The default, in the engine's form (a duration as milliseconds). */
	readonly default: T | undefined
	/** Only for typing: the field's value type. */
	readonly __value?: T
}

/** A schema: fields, and nested objects of fields (structs). */
export interface Schema {
	readonly [name: string]: Field<unknown> | Schema
}

/** The settings a schema describes. */
export type Settings<S extends Schema> = {
	-readonly [K in keyof S]: S[K] extends Field<infer T> ? T : S[K] extends Schema ? Settings<S[K]> : never
}

type Item = 'str' | 'int' | 'float' | 'bool' | 'duration' | 'json'
type ItemValue<I extends Item> = I extends 'str' ? string : I extends 'bool' ? boolean : I extends 'json' ? unknown : number

function make<T>(type: string, def: T | undefined, options: FieldOptions | undefined): Field<T> {
	return { type, default: def, ...options }
}

/** Field makers: `field.int(8080)`, `field.duration('30s')`, `field.list('str', [])`. */
export const field = {
	/** Text. */
	str: (def?: string, options?: FieldOptions): Field<string> => make('str', def, options),
	/** A whole number; a variable reads `42`. */
	int: (def?: number, options?: FieldOptions): Field<number> => make('int', def, options),
	/** A number; a variable reads `0.25`. */
	float: (def?: number, options?: FieldOptions): Field<number> => make('float', def, options),
	/** `true`/`false`; a variable also reads 1/0, yes/no, on/off. */
	bool: (def?: boolean, options?: FieldOptions): Field<boolean> => make('bool', def, options),
	/** A span in milliseconds; the default and a variable may be text as `'1h30m'`. */
	duration: (def?: number | string, options?: FieldOptions): Field<number> =>
		make('duration', typeof def === 'string' ? native.parseDuration(def) : def, options) as Field<number>,
	/** A list of one item type; a variable reads `a.com,b.com` or a JSON array. */
	list: <I extends Item>(item: I, def?: ItemValue<I>[], options?: FieldOptions): Field<ItemValue<I>[]> =>
		make(`list:${item}`, def, options),
	/** Any JSON value; a variable reads JSON. */
	json: <T = unknown>(def?: T, options?: FieldOptions): Field<T> => make('json', def, options),
}

/** Where the environment layer reads from. */
export interface EnvOptions {
	/** Each field's variable is this, `_`, and its path in upper snake case. `''` for none. */
	prefix: string
	/** `.env` files under the process's variables, a later one over an earlier; a missing one is skipped. */
	files?: string[]
	/** The variables to read instead of `process.env`. */
	vars?: Record<string, string | undefined>
}

/** The environment as a layer, for where it stands among `defaults`: see {@link fromEnv}. */
export class EnvLayer {
	/** Where this layer reads the environment from. */
	readonly options: EnvOptions

	/** @internal Made by {@link fromEnv}. */
	constructor(options: EnvOptions) {
		this.options = options
	}
}

/**
 * The environment as one of the `defaults` layers, over those before it and
 * under those after: `defaults: [fromFile, fromEnv('APP', { files: ['.env'] })]`
 * lets the variables win, `defaults: [fromEnv('APP'), fromFile]` the file.
 */
export function fromEnv(prefix: string, options?: Omit<EnvOptions, 'prefix'>): EnvLayer {
	return new EnvLayer({ ...options, prefix })
}

/** How a config opens. */
export interface ConfigOptions<S extends Schema> {
	/**
	 * Partial defaults over the fields', in order, each over the one before
	 * (what a JSON or YAML file reads as), and at most one {@link fromEnv}.
	 */
	defaults?: Array<object | EnvLayer>
	/** Read the environment, over every `defaults` object. Without it (or a `fromEnv`) no variable is read. */
	env?: EnvOptions
	/** Checks whole settings before an update is written: throw (or return a message) to refuse. */
	validate?: (settings: Settings<S>) => string | void
}

/** Where a field's value came from. */
export interface Source {
	/** The field's path, as `limits.rps`. */
	path: string
	/** `default`, `defaults`, `env_file`, `env` or `kept`. */
	from: string
	/** The variable, for `env` and `env_file`. */
	var?: string
	/** The file, for `env_file`. */
	file?: string
	/** Which defaults object, for `defaults`. */
	layer?: number
	/** The version that kept it, for `kept`. */
	version?: string
	/** Why a value kept for the field was left out, if one was. */
	leftOut?: string
}

function isField(v: unknown): v is Field<unknown> {
	return typeof v === 'object' && v !== null && typeof (v as { type?: unknown }).type === 'string'
}

function describe(schema: Schema, at: string, out: object[]): void {
	for (const [name, v] of Object.entries(schema)) {
		const path = at + name
		if (isField(v)) {
			out.push({ path, type: v.type, default: v.default ?? null, secret: !!v.secret, required: !!v.required, env: v.env ?? null })
		} else {
			describe(v, `${path}.`, out)
		}
	}
}

/** Typed settings kept in a store (KV-20). */
export class Config<S extends Schema> {
	readonly #native: NativeConfig
	#cached: [number, Settings<S>] | undefined

	/** @internal Made by {@link openConfig}. */
	constructor(nativeConfig: NativeConfig) {
		this.#native = nativeConfig
	}

	/**
	 * The settings now, from memory (rebuilt once a change). Treat it as
	 * read-only. When `validate` refuses the kept values together, they are
	 * all left out, and `sources` says why.
	 */
	get(): Settings<S> {
		const g = this.#native.generation()
		if (this.#cached === undefined || this.#cached[0] !== g) {
			this.#cached = [g, JSON.parse(this.#native.get()) as Settings<S>]
		}
		return this.#cached[1]
	}

	/**
	 * Changes a copy of the settings with `change` (which mutates it or
	 * returns new settings), checks the result by the fields' types and
	 * `validate`, and keeps the fields that changed. A value of the wrong
	 * type, a secret field, an emptied required field or a refusal is
	 * `InvalidError`, and nothing is written.
	 */
	async update(change: (s: Settings<S>) => Settings<S> | void): Promise<void> {
		const copy = structuredClone(this.get())
		const result = change(copy) ?? copy
		await this.#native.update(JSON.stringify(result))
	}

	/** Gives the field at `path`, or every field of the struct there, back to the layers. */
	reset(path: string): Promise<void> {
		return this.#native.reset(path)
	}

	/** Where each field's value came from (secret fields are not listed). */
	sources(): Source[] {
		return JSON.parse(this.#native.sources()) as Source[]
	}

	/**
	 * The settings after every change from now on, by any handle or process
	 * (another process's within a second); behind, it skips to the latest.
	 * Ends when the store closes or `signal` (an `AbortSignal`) aborts.
	 */
	watch(options?: { signal?: { readonly aborted: boolean } }): AsyncIterableIterator<Settings<S>> {
		const steps = this.#native.watch()
		let stopped = false
		const signal = options?.signal
		// The engine decides each step; a step waits a bounded time, so an
		// abort is heard within it.
		const next = async (): Promise<IteratorResult<Settings<S>>> => {
			while (!stopped && !signal?.aborted) {
				const changed = await steps.next()
				if (changed === null) break
				if (changed && !stopped) return { done: false, value: this.get() }
			}
			return { done: true, value: undefined }
		}
		const it: AsyncIterableIterator<Settings<S>> = {
			next,
			return: async () => {
				stopped = true
				return { done: true, value: undefined }
			},
			[Symbol.asyncIterator]: () => it,
		}
		return it
	}
}

/**
 * Opens config `name` of `schema` on `store`. A variable that does not read
 * as its field's type, or a required field left empty, is `InvalidError`
 * naming the variable.
 */
export function openConfig<S extends Schema>(store: Store, name: string, schema: S, options?: ConfigOptions<S>): Config<S> {
	const nativeStore = nativeOf.get(store)
	if (nativeStore === undefined) throw new InvalidError(`config ${JSON.stringify(name)}: not a store`)
	const fields: object[] = []
	describe(schema, '', fields)
	// In the order given: the engine reads the environment where it stands,
	// and refuses a second one.
	const given = [...(options?.defaults ?? [])]
	if (options?.env) given.push(new EnvLayer(options.env))
	const layers = { layers: given.map((layer) => (layer instanceof EnvLayer ? envLayer(layer.options) : { defaults: layer })) }
	const validate = options?.validate
	// The engine calls this where it checks a whole config; a string refuses it.
	const check = validate && ((json: string) => refusal(validate, JSON.parse(json) as Settings<S>))
	const n = native.NativeConfig.open(nativeStore, name, JSON.stringify(fields), JSON.stringify(layers), check)
	return new Config<S>(n)
}

/** An environment layer as the engine reads it. */
function envLayer(env: EnvOptions): object {
	const vars = env.vars ?? process.env
	const read = Object.fromEntries(Object.entries(vars).filter(([, v]) => v !== undefined))
	return { env: { prefix: env.prefix, files: env.files ?? [], vars: read } }
}

/** Why `validate` refuses `s`, if it does: its answer, or what it threw. */
function refusal<S>(validate: (s: S) => string | void, s: S): string | undefined {
	try {
		const why = validate(s)
		return typeof why === 'string' ? why : undefined
	} catch (e) {
		return e instanceof Error ? e.message : String(e)
	}
}
