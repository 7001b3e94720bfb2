// The Node/Bun runner of the conformance cases: every step of
// tests/conformance/cases/*.json through the public API of the npm package
// (node/), failing on any operation it does not know. It mirrors
// tests/conformance/rust/tests/run.rs; see tests/conformance/README.md.

import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { open, TinystoreError } from '../../../node/dist/esm/index.mjs'
import { isBig, keyArg, lossy, millis, packageType, parseJson, sameJson, sameValue, show, text, toJs } from './values.mjs'

/** 2026-10-20T09:00:00Z, the start of every case's clock. */
export const START = new Date('2026-10-20T09:00:00Z')

/** The cases' `"codec": "refusing"` (tests/conformance/README.md). */
const refusing = {
	encode(value) {
		if (value === 'refuse') throw new Error('the test codec refuses this value')
		return new TextEncoder().encode(value)
	},
	decode(bytes) {
		if (Buffer.from(bytes).toString() === 'bad') throw new Error('the test codec cannot read this')
		return new TextDecoder().decode(bytes)
	},
}

const here = dirname(fileURLToPath(import.meta.url))

/** Every case of every file, in file order, with its file's name: `{ file, case }`. */
export function fileCases() {
	const dir = join(here, '..', 'cases')
	return readdirSync(dir)
		.filter((f) => f.endsWith('.json'))
		.sort()
		.flatMap((file) => parseJson(readFileSync(join(dir, file), 'utf8')).map((c) => ({ file, case: c })))
}

/** Every case of every file, in file order. */
export function cases() {
	return fileCases().map((c) => c.case)
}

/**
 * The case files that need what a PostgreSQL store does not carry yet, and
 * the text of the refusal, as every runner reads them:
 * `{ refusal, files: { name: why } }`.
 */
export function notOnPostgres() {
	return JSON.parse(readFileSync(join(here, '..', 'not_on_postgres.json'), 'utf8'))
}

/** The PostgreSQL server CI starts (`make pg-start`; make exports its location). */
export function postgresServer() {
	const server = process.env.TINYSTORE_TEST_PG
	if (!server) {
		throw new Error(
			'the PostgreSQL run needs a server: run `make pg-start` (a cluster on 127.0.0.1:55432), then ' +
				'`export TINYSTORE_TEST_PG=postgres://postgres@127.0.0.1:55432/postgres`, or run it through make',
		)
	}
	return server
}

/** A location in `schema`, dropped first so that a case starts on an empty store. */
export function emptySchema(server, schema) {
	execFileSync('psql', [server, '-v', 'ON_ERROR_STOP=1', '-qc', `DROP SCHEMA IF EXISTS ${schema} CASCADE`], {
		stdio: ['ignore', 'ignore', 'pipe'],
	})
	return `${server}${server.includes('?') ? '&' : '?'}schema=${schema}`
}

/** A case's failure: which step, and why. */
class StepFailure extends Error {}

/** What a call gave back, before it is compared (as the Rust runner's `Out`). */
const nothing = { kind: 'nothing' }
const json = (v) => ({ kind: 'json', v })
const value = (ty, v) => ({ kind: 'value', ty, v })
const allowance = (a) => ({ kind: 'allow', a })
const entry = (ty, e) => ({ kind: 'entry', ty, e })

/** Whether an answer is a success, for `race`. */
function success(out) {
	if (out.error !== undefined) return false
	const o = out.ok
	switch (o.kind) {
		case 'nothing':
		case 'entry':
			return true
		case 'json':
			return o.v !== null && o.v !== false
		case 'value':
			return o.v !== undefined
		case 'allow':
			return o.a.ok
	}
	throw new Error(`no answer kind ${o.kind}`)
}

/** Settles a call into `{ ok }` or `{ error }`, whether it threw or rejected. */
async function settle(call) {
	try {
		return { ok: await call() }
	} catch (error) {
		return { error }
	}
}

/**
 * One case on a new store, with the test clock at START: in a new directory,
 * or at `location` (a PostgreSQL schema the caller emptied).
 */
export class Runner {
	constructor(location) {
		this.owned = location === undefined
		this.dir = location ?? mkdtempSync(join(tmpdir(), 'tinystore-conformance-'))
		this.opens = []
		this.handles = new Map()
		this.versions = new Map()
		this.ran = 0
	}

	async start() {
		this.store = await open(this.dir, { clock: START })
	}

	async dispose() {
		if (!this.store.closed) await this.store.close()
		if (this.owned) rmSync(this.dir, { recursive: true, force: true })
	}

	now() {
		return this.store.clock.now().getTime()
	}

	openHandle(step) {
		const opt = (k) => (step[k] === undefined || step[k] === null ? undefined : step[k])
		const { name } = step
		let h
		switch (step.kind) {
			case 'bucket': {
				const options = { ttl: opt('ttl'), idle: opt('idle') }
				if (step.codec !== undefined) {
					if (step.codec !== 'refusing') throw new Error(`unknown codec ${step.codec}`)
					h = { kind: 'bucket', ty: step.type, main: this.store.bucket(name, { ...options, codec: refusing }), big: null }
					break
				}
				const open = (big) => this.store.bucket(name, { ...options, type: packageType(step.type, big) })
				// An int bucket also gets a `bigint` twin on the same name, for values past 2^53.
				h = { kind: 'bucket', ty: step.type, main: open(false), big: step.type === 'int' ? () => open(true) : null }
				break
			}
			case 'counters': {
				const options = { ttl: opt('ttl'), flushEvery: opt('flush_every') }
				// Number counters, with a `bigint` twin on the same name for steps and answers past 2^53.
				h = { kind: 'counters', c: this.store.counters(name, options), big: () => this.store.counters(name, { ...options, type: 'bigint' }) }
				break
			}
			case 'rate_limit':
				h = { kind: 'rate_limit', r: this.store.rateLimit(name, { rate: step.rate, burst: opt('burst') }) }
				break
			case 'quota':
				h = { kind: 'quota', q: this.store.quota(name, step.windows) }
				break
			case 'once':
				h = { kind: 'once', ty: step.type, o: this.store.once(name, { keep: opt('keep'), type: packageType(step.type) }) }
				break
			default:
				throw new Error(`the Node runner does not know the kind ${step.kind}`)
		}
		this.handles.set(step.as, h)
	}

	/** The handle a call names, in the branch of its `under`. */
	handle(step) {
		const h = this.handles.get(step.on)
		if (h === undefined) throw new Error(`no handle ${step.on} opened before`)
		const owners = (step.under ?? []).map(keyArg)
		if (owners.length === 0) return h
		switch (h.kind) {
			case 'bucket':
				return { ...h, main: h.main.under(...owners), big: h.big && (() => h.big().under(...owners)) }
			case 'counters':
				return { ...h, c: h.c.under(...owners), big: () => h.big().under(...owners) }
			case 'rate_limit':
				return { ...h, r: h.r.under(...owners) }
			case 'quota':
				return { ...h, q: h.q.under(...owners) }
			case 'once':
				return { ...h, o: h.o.under(...owners) }
		}
		throw new Error(`no handle kind ${h.kind}`)
	}

	async reopen() {
		const at = this.store.clock.now()
		await this.store.close()
		this.store = await open(this.dir, { clock: at })
		this.handles.clear()
		for (const step of this.opens) this.openHandle(step)
	}

	/** Runs one call; `index` fills `{i}` in its key; inside `tx` a bucket call runs through `tx.with(bucket)`. */
	async call(step, index, tx) {
		const { op } = step
		const key = step.key === undefined ? undefined : typeof step.key === 'string' ? step.key.replaceAll('{i}', String(index)) : keyArg(step.key)
		const n = step.n ?? 1
		const ifVersion = step.if_version === undefined ? undefined : this.version(step.if_version)
		const h = this.handle(step)
		// A step marked outside uses the handle itself, from inside the transaction;
		// a run of once too (inside a transaction it is refused).
		if (step.outside === true || op === 'run') tx = undefined
		// Every kind joins through tx.with; what cannot join throws there.
		const inTx = (b) => (tx === undefined ? b : tx.with(b))
		// A bucket of ints reads and writes through its bigint twin when the case's value is past 2^53.
		const bucket = (v) => inTx(h.big && isBig(h.ty, v) ? h.big() : h.main)
		// Counters count through their bigint twin when the step or the answer is past 2^53.
		const counters = () => inTx(typeof step.n === 'bigint' || typeof step.expect === 'bigint' ? h.big() : h.c)
		switch (`${h.kind}.${op}`) {
			case 'bucket.set': {
				const options = { ifVersion }
				if (step.ttl !== undefined) options.ttl = step.ttl
				if (step.expires_in !== undefined) {
					const e = step.expires_in
					options.expiresAt = new Date(e.startsWith('-') ? this.now() - millis(e.slice(1)) : this.now() + millis(e))
				}
				return json(await bucket(step.value).set(key, toJs(h.ty, step.value), options))
			}
			case 'bucket.get':
				return value(h.ty, await bucket(step.expect).get(key))
			case 'bucket.has':
				return json(await inTx(h.main).has(key))
			case 'bucket.entry': {
				const e = await bucket(step.expect?.value).entry(key)
				return e === undefined ? json(null) : entry(h.ty, e)
			}
			case 'bucket.create':
				return json(await bucket(step.value).create(key, toJs(h.ty, step.value), step.ttl === undefined ? {} : { ttl: step.ttl }))
			case 'bucket.create_entry': {
				const options = step.ttl === undefined ? {} : { ttl: step.ttl }
				const c = await bucket(step.value).createEntry(key, toJs(h.ty, step.value), options)
				return { ...entry(h.ty, c.entry), written: c.written }
			}
			case 'bucket.take':
				return value(h.ty, await bucket(step.expect).take(key, { ifVersion }))
			case 'bucket.delete':
				return json(await inTx(h.main).delete(key, { ifVersion }))
			case 'bucket.expire':
				return json(await inTx(h.main).expire(key, step.ttl, { ifVersion }))
			case 'bucket.clear':
				await inTx(h.main).clear()
				return nothing
			case 'bucket.list': {
				const options = {}
				if (step.after !== undefined) options.after = keyArg(step.after)
				if (step.limit !== undefined) options.limit = step.limit
				const page = await inTx(h.main).list(options)
				return json({ keys: page.entries.map((e) => lossy(e.key)), next: page.next === undefined ? null : lossy(page.next) })
			}
			case 'bucket.all': {
				const keys = []
				for await (const e of inTx(h.main).all()) keys.push(lossy(e.key))
				return json({ keys, count: keys.length })
			}
			case 'counters.add':
				return json(await counters().add(key, n))
			case 'counters.max':
				return json(await counters().max(key, n))
			case 'counters.get':
				return json(await counters().get(key))
			case 'counters.delete':
				await inTx(h.c).delete(key)
				return nothing
			case 'rate_limit.allow':
				return allowance(await inTx(h.r).allow(key, n))
			case 'rate_limit.peek':
				return allowance(await inTx(h.r).peek(key))
			case 'rate_limit.reset':
				await inTx(h.r).reset(key)
				return nothing
			case 'quota.allow':
				return allowance(await inTx(h.q).allow(key, n))
			case 'quota.peek':
				return allowance(await inTx(h.q).peek(key))
			case 'quota.refund':
				return allowance(await inTx(h.q).refund(key, n))
			case 'quota.reset':
				await inTx(h.q).reset(key)
				return nothing
			case 'once.run':
				return this.runOnce(h, key, step)
			case 'once.get':
				return value(h.ty, await inTx(h.o).get(key))
			case 'once.delete':
				return json(await inTx(h.o).delete(key))
		}
		throw new Error(`the Node runner does not know the call ${op} on a ${h.kind}`)
	}

	/** A `tx` step inside a transaction: opens another of the same store from inside the first. */
	async nestedTx(step) {
		await this.store.tx(async (tx) => {
			for (const inner of step.steps) this.check(inner, await settle(() => this.call(inner, 0, tx)))
		})
		return nothing
	}

	async runOnce(h, key, step) {
		const got = await h.o.run(key, async () => {
			this.ran++
			// Steps of the run's own function, inside the run.
			for (const inner of step.inside ?? []) {
				const o = await settle(() => this.call(inner, 0))
				try {
					this.check(inner, o)
				} catch (e) {
					throw e instanceof StepFailure ? new StepFailure(`inside the run, ${inner.op}: ${e.message}`) : e
				}
			}
			if (step.fails !== undefined) {
				// The run must fail with this very error (`FAILED` in the case).
				throw Object.assign(new Error(`FAILED: ${step.fails}`), { ownError: true })
			}
			return toJs(h.ty, step.returns)
		})
		return value(h.ty, got)
	}

	version(name) {
		if (typeof name === 'object' && name !== null) return String(name.text)
		if (!this.versions.has(name)) throw new Error(`no version saved as ${name}`)
		return this.versions.get(name)
	}

	/** Compares an answer (`{ ok }` or `{ error }`) with a step's `expect` or `error`. */
	check(step, out) {
		if (step.error !== undefined) {
			const code = step.error
			if (out.error === undefined) fail(`expected ${code}, got success`)
			const e = out.error
			if (code === 'FAILED') {
				if (!e?.ownError) fail(`expected the function's own error, got ${describe(e)}`)
				return
			}
			if (!(e instanceof TinystoreError)) fail(`expected ${code}, got ${describe(e)}`)
			if (e.code !== code) fail(`expected ${code}, got ${describe(e)}`)
			if (step.error_bucket !== undefined && e.what?.bucket !== step.error_bucket) {
				fail(`the error should name bucket ${step.error_bucket}: ${describe(e)}`)
			}
			if (step.error_key !== undefined && e.what?.key !== text(step.error_key)) {
				fail(`the error should name key ${text(step.error_key)}: ${describe(e)}`)
			}
			// A JS error's message ends with the bucket and key it names, if any.
			if (step.error_message !== undefined && e.message !== step.error_message && !e.message.startsWith(`${step.error_message} (`)) {
				fail(`the error should say ${JSON.stringify(step.error_message)}: ${describe(e)}`)
			}
			if (step.error_text !== undefined && e.message !== step.error_text) {
				fail(`the error should read ${JSON.stringify(step.error_text)}: ${describe(e)}`)
			}
			return
		}
		if (out.error !== undefined) fail(`unexpected error: ${describe(out.error)}`)
		if (!('expect' in step)) return
		const expected = step.expect
		const o = out.ok
		switch (o.kind) {
			case 'nothing':
				return fail('a call that answers nothing has no expect')
			case 'value':
				if (expected === null ? o.v === undefined : o.v !== undefined && sameValue(o.ty, expected, o.v)) return
				return fail(`expected ${show(expected)}, got ${show(o.v)}`)
			case 'allow':
				return checkAllow(expected, o.a, this.now())
			case 'entry': {
				if (expected === null) fail(`expected no entry, got ${show(o.e.value)}`)
				const expiresIn = o.e.expiresAt === undefined ? null : o.e.expiresAt.getTime() - this.now()
				for (const [f, w] of Object.entries(expected)) {
					const fine =
						f === 'value'
							? sameValue(o.ty, w, o.e.value)
							: f === 'version'
								? o.e.version === this.version(w)
								: f === 'expires_in'
									? expiresIn === (w === null ? null : millis(w))
									: f === 'written' && o.written !== undefined
										? o.written === w
										: fail(`an entry has no field ${f}`)
					if (!fine) {
						fail(`${f}: expected ${show(w)}, got value ${show(o.e.value)}, version ${o.e.version}, expires_in ${expiresIn} ms`)
					}
				}
				return
			}
			case 'json': {
				const got = o.v
				if (expected && typeof expected === 'object' && !Array.isArray(expected) && got && typeof got === 'object') {
					for (const [f, w] of Object.entries(expected)) {
						if (!sameJson(w, got[f])) fail(`${f}: expected ${show(w)}, got ${show(got)}`)
					}
					return
				}
				if (!sameJson(expected, got)) fail(`expected ${show(expected)}, got ${show(got)}`)
				return
			}
		}
		throw new Error(`no answer kind ${o.kind}`)
	}

	/** Runs one step of a case. */
	async step(step) {
		switch (step.op) {
			case 'open': {
				const out = await settle(async () => this.openHandle(step))
				if (out.error === undefined && step.error === undefined) this.opens.push(step)
				return this.check(step, out.error === undefined ? { ok: nothing } : out)
			}
			case 'advance': {
				const by = step.by
				const out = await settle(async () => {
					if (by.startsWith('-')) this.store.clock.set(new Date(this.now() - millis(by.slice(1))))
					else this.store.clock.advance(by)
					return nothing
				})
				return this.check(step, out)
			}
			case 'maintain': {
				const m = await this.store.maintain()
				for (const [f, w] of Object.entries(step.expect ?? {})) {
					if (m[f] !== w) fail(`maintain ${f}: expected ${w}, got ${JSON.stringify(m)}`)
				}
				return
			}
			case 'reopen':
				return this.reopen()
			case 'close':
				return this.store.close()
			case 'race': {
				const before = this.ran
				// Every copy starts in this turn of the event loop, as N requests in flight would.
				const outs = await Promise.all(Array.from({ length: step.n }, (_, i) => settle(() => this.call(step.step, i))))
				const wins = outs.filter(success).length
				if (wins !== step.expect_successes) {
					const errors = [...new Set(outs.filter((o) => o.error).map((o) => describe(o.error)))]
					fail(`race: ${wins} of ${step.n} succeeded, expected ${step.expect_successes}${errors.length ? `; errors: ${errors.join('; ')}` : ''}`)
				}
				if (step.expect_ran !== undefined && this.ran - before !== step.expect_ran) {
					fail(`race: the function ran ${this.ran - before} times, expected ${step.expect_ran}`)
				}
				for (const o of outs) if (o.error === undefined && 'expect' in step.step) this.check(step.step, o)
				return
			}
			case 'tx': {
				if (typeof this.store.tx !== 'function') {
					throw new Error('the package has no transactions: store.tx is missing (KV-16)')
				}
				const rollback = new Error('the case ends this transaction with an error')
				const out = await settle(() =>
					this.store.tx(async (tx) => {
						for (const inner of step.steps) {
							const o = await settle(() => (inner.op === 'tx' ? this.nestedTx(inner) : this.call(inner, 0, tx)))
							try {
								this.check(inner, o)
							} catch (e) {
								throw e instanceof StepFailure ? new StepFailure(`in tx, ${inner.op}: ${e.message}`) : e
							}
						}
						// An error or an exception (`fail: "panic"`): JS has one way to throw.
						if (step.fail) throw rollback
					}),
				)
				if (out.error instanceof StepFailure) throw out.error
				if (step.fail ? out.error !== rollback : out.error !== undefined) {
					fail(`tx ended with ${out.error === undefined ? 'a commit' : describe(out.error)}`)
				}
				return
			}
			default: {
				const out = await settle(() => this.call(step, 0))
				if (step.save !== undefined && out.error === undefined) {
					const o = out.ok
					if (o.kind === 'json' && typeof o.v === 'string') this.versions.set(step.save, o.v)
					else if (o.kind === 'entry') this.versions.set(step.save, o.e.version)
				}
				return this.check(step, out)
			}
		}
	}

	/** Runs every step of a case in order; throws at the first that fails, naming it. */
	async run(c) {
		for (const [i, step] of c.steps.entries()) {
			try {
				await this.step(step)
			} catch (e) {
				const why = e instanceof StepFailure ? e.message : `${describe(e)}\n${e?.stack ?? ''}`
				throw new Error(`${c.id} ${JSON.stringify(c.title)}, step ${i + 1} (${step.op}): ${why}`)
			}
		}
	}
}

function fail(message) {
	throw new StepFailure(message)
}

function describe(e) {
	if (e instanceof TinystoreError) return `${e.constructor.name} ${e.code}: ${e.message} (what ${JSON.stringify(e.what)})`
	return e instanceof Error ? `${e.constructor.name}: ${e.message}` : String(e)
}

function checkAllow(expected, a, now) {
	const since = (t) => (t === undefined ? null : t.getTime() - now)
	const problems = []
	if ('ok' in expected && expected.ok !== a.ok) problems.push(`ok ${a.ok} != ${expected.ok}`)
	if ('left' in expected && expected.left !== a.left) problems.push(`left ${a.left} != ${expected.left}`)
	if ('retry_in' in expected) {
		const want = expected.retry_in === null ? null : millis(expected.retry_in)
		if (want !== since(a.retryAt)) problems.push(`retry_in ${since(a.retryAt)} ms != ${expected.retry_in}`)
	}
	for (const [name, w] of Object.entries(expected.windows ?? {})) {
		const got = a.windows?.[name]
		if (got === undefined) {
			problems.push(`no window ${name}`)
			continue
		}
		for (const f of ['used', 'limit', 'left']) {
			if (f in w && w[f] !== got[f]) problems.push(`${name}.${f} ${got[f]} != ${w[f]}`)
		}
		if ('resets_in' in w) {
			const want = w.resets_in === null ? null : millis(w.resets_in)
			if (want !== since(got.resetsAt)) problems.push(`${name}.resets_in ${since(got.resetsAt)} ms != ${w.resets_in}`)
		}
	}
	if (problems.length) fail(problems.join('; '))
}
