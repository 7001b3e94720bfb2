// The bad-input catalogue (KV-18) for Node and Bun: every bad input
// a JavaScript caller can give (a wrong type, a bad name, key, value, duration,
// rate, window, option or call, NaN and Infinity where a number is refused, a
// closed store) is refused with the right error class and a message naming
// what was wrong, and kv.db and kv.db-wal hash the same before and after. The
// Rust catalogue (core/tests/bad_input.rs) covers the core's rules case by case;
// this one covers what the TypeScript layer adds or converts.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'

import { ClosedError, InvalidError, LimitError, open, type Store, TinystoreError } from 'tinystore'

import { freshDir, T0, testStore } from './helpers.mjs'

type ErrorClass = typeof InvalidError | typeof LimitError | typeof ClosedError
// Wrong types on purpose: what a JavaScript caller without TypeScript can pass.
type Loose = any

function digest(path: string): string | undefined {
	return existsSync(path) ? createHash('sha256').update(readFileSync(path)).digest('hex') : undefined
}

/** The core's quoting of an input in a message (Rust's debug form). */
function quoted(text: string): string {
	return JSON.stringify(text).replace(/\\u0000/g, '\\0')
}

/** Bad inputs refused on one store, whose files must not change. */
class Catalogue {
	count = 0
	readonly #dir: string
	readonly #before: [string | undefined, string | undefined]

	constructor(dir: string) {
		this.#dir = dir
		this.#before = this.state()
	}

	state(): [string | undefined, string | undefined] {
		return [digest(join(this.#dir, 'kv.db')), digest(join(this.#dir, 'kv.db-wal'))]
	}

	/** `call()` throws or rejects with `cls`, its message naming each of `names`. */
	async refused(what: string, call: () => unknown, cls: ErrorClass, ...names: string[]): Promise<void> {
		let error: unknown
		try {
			await call()
		} catch (e) {
			error = e
		}
		assert.ok(error !== undefined, `${what}: accepted`)
		assert.ok(error instanceof cls, `${what}: ${(error as Error).name}: ${(error as Error).message}`)
		for (const n of names) {
			assert.ok((error as Error).message.includes(n), `${what}: the error should name ${n}: ${(error as Error).message}`)
		}
		this.count++
	}

	/** Checks that nothing refused changed the file. */
	done(): void {
		assert.deepEqual(this.state(), this.#before, 'a refused input changed the file')
		assert.ok(this.count > 0)
	}
}

/** A store with a handle of every kind already opened, so the cases register nothing. */
async function fixture(): Promise<{ store: Store; dir: string }> {
	const dir = freshDir()
	const store = await open(dir, { clock: T0 })
	await store.bucket<string>('texts', { type: 'string' }).set('kept', 'v')
	await store.bucket<number[]>('numbers').set('kept', [1])
	await store.bucket('ints', { type: 'int' }).set('kept', 1)
	await store.bucket('big', { type: 'bigint' }).set('kept', 1n)
	await store.counters('attempts').add('kept')
	await store.rateLimit('guesses', { rate: '5/m' }).allow('kept')
	await store.quota('messages', { daily: '100/d' }).allow('kept')
	await store.once('sends', { type: 'string' }).run('kept', () => 'sent')
	return { store, dir }
}

/** A catalogue over a settled store: a blocking write queues behind every write in flight. */
async function catalogue(store: Store, dir: string): Promise<Catalogue> {
	await store.bucket<string>('texts', { type: 'string' }).set('settled', 'v')
	return new Catalogue(dir)
}

const BAD_NAMES = ['', 'Sessions', 'a b', 'ünï', 'a\0b', '-lead', '_lead', 'a/b', 'a.b', 'a'.repeat(65)]

test('KV-18 bad names are InvalidError naming them, and write nothing', async () => {
	const { store, dir } = await fixture()
	await using _ = store
	const c = await catalogue(store, dir)
	for (const name of BAD_NAMES) {
		await c.refused(`bucket ${quoted(name)}`, () => store.bucket(name).get('k'), InvalidError, quoted(name))
		await c.refused(`counters ${quoted(name)}`, () => store.counters(name).get('k'), InvalidError, quoted(name))
	}
	for (const name of [undefined, null, 7, {}]) {
		await c.refused(`a name of ${typeof name}`, () => store.bucket(name as Loose).get('k'), InvalidError)
	}
	// A name keeps its kind (KV-2).
	await c.refused('texts as counters', () => store.counters('texts').get('k'), InvalidError, 'texts')
	await c.refused('attempts as a bucket', () => store.bucket('attempts').get('k'), InvalidError, 'attempts')
	await c.refused('sends as a rate limit', () => store.rateLimit('sends', { rate: '1/s' }).allow('k'), InvalidError, 'sends')
	c.done()
})

test('KV-18 bad keys are InvalidError naming bucket and path, and write nothing', async () => {
	const { store, dir } = await fixture()
	await using _ = store
	const b = store.bucket<string>('texts', { type: 'string' })
	const c = await catalogue(store, dir)
	await c.refused('empty bytes key', () => b.set(new Uint8Array(0), 'v'), InvalidError, 'empty', 'texts')
	await c.refused('600 NULs', () => b.set(new Uint8Array(600), 'v'), InvalidError, '1024')
	// JavaScript values that are not keys: a key is text, bytes, a safe integer or a bigint.
	for (const bad of [undefined, null, 1.5, NaN, Infinity, -0.5, 2 ** 60, true, ['k'], { k: 1 }, Symbol('k')]) {
		const shown = typeof bad === 'symbol' ? 'symbol' : JSON.stringify(bad) ?? String(bad)
		await c.refused(`a key ${shown}`, () => b.set(bad as Loose, 'v'), InvalidError)
		await c.refused(`a key ${shown}, get`, () => b.get(bad as Loose), InvalidError)
		await c.refused(`an owner ${shown}`, () => b.under(bad as Loose).get('k'), InvalidError)
	}
	c.done()
})

test('KV-18 bad values are refused naming them, and write nothing', async () => {
	const { store, dir } = await fixture()
	await using _ = store
	const texts = store.bucket<string>('texts', { type: 'string' })
	const json = store.bucket<unknown>('numbers')
	const ints = store.bucket('ints', { type: 'int' })
	const big = store.bucket('big', { type: 'bigint' })
	const bytes = store.bucket('texts', { type: 'bytes' })
	const bools = store.bucket('ints', { type: 'bool' })
	const c = await catalogue(store, dir)
	const huge = 'x'.repeat(2 ** 20 + 1)
	await c.refused('a value over 1 MiB', () => texts.set('k', huge), LimitError, '1 MiB', 'texts')
	await c.refused('a value over 1 MiB, create', () => texts.create('k', huge), LimitError, '1 MiB')
	await c.refused('a value over 1 MiB, kept', () => texts.set('kept', huge), LimitError, '1 MiB', 'kept')
	await c.refused('bytes over 1 MiB', () => bytes.set('k', new Uint8Array(2 ** 20 + 1)), LimitError, '1 MiB')
	await c.refused('JSON over 1 MiB', () => json.set('k', [huge]), LimitError, '1 MiB')
	await c.refused('undefined as JSON', () => json.set('k', undefined), InvalidError, 'numbers')
	await c.refused('a function as JSON', () => json.set('k', () => 1), InvalidError, 'numbers')
	await c.refused('a bigint inside JSON', () => json.set('k', { n: 1n }), InvalidError, 'numbers')
	const cycle: Record<string, unknown> = {}
	cycle.self = cycle
	await c.refused('a cycle as JSON', () => json.set('k', cycle), InvalidError, 'numbers')
	await c.refused('a fraction in an int bucket', () => ints.set('k', 1.5), InvalidError, 'ints')
	await c.refused('NaN in an int bucket', () => ints.set('k', NaN), InvalidError, 'ints')
	await c.refused('Infinity in an int bucket', () => ints.set('k', Infinity), InvalidError, 'ints')
	await c.refused('an unsafe integer', () => ints.set('k', 2 ** 53), InvalidError, 'ints')
	await c.refused('text in an int bucket', () => ints.set('k', '1' as Loose), InvalidError, 'ints')
	const past = 'is outside int64 and uint64 (bucket big, key k)'
	await c.refused('a bigint past uint64', () => big.set('k', 2n ** 64n), InvalidError, `the integer ${2n ** 64n} ${past}`)
	await c.refused('a bigint below int64', () => big.set('k', -(2n ** 63n) - 1n), InvalidError, `${-(2n ** 63n) - 1n} ${past}`)
	await c.refused('a bigint past 128 bits', () => big.set('k', 2n ** 200n), InvalidError, `the integer ${2n ** 200n} ${past}`)
	await c.refused('a number in a bigint bucket', () => big.set('k', 1 as Loose), InvalidError, 'big')
	await c.refused('a number in a string bucket', () => texts.set('k', 1 as Loose), InvalidError, 'texts')
	await c.refused('a string in a bytes bucket', () => bytes.set('k', 'v' as Loose), InvalidError, 'texts')
	await c.refused('a number in a bool bucket', () => bools.set('k', 1 as Loose), InvalidError, 'ints')
	c.done()
})

const BAD_DURATIONS = ['', '10', '-1s', '1.5h', '1 h', ' 1h', '1hr', '90mins', '30m1h', '1h1h', 'NaN', '1e3s', '١٠s']
const BAD_RATES = ['', '10', '/s', '0/s', '-1/s', '+10/s', '1.5/s', 'NaN/s', '10/fortnight', '10 / s', '10/s;x', '5/0s']

test('KV-18 bad durations and rates are InvalidError quoting them, NaN and Infinity included', async () => {
	const { store, dir } = await fixture()
	await using _ = store
	const texts = store.bucket<string>('texts', { type: 'string' })
	const c = await catalogue(store, dir)
	for (const d of BAD_DURATIONS) {
		await c.refused(`ttl ${quoted(d)}`, () => store.bucket('t0', { ttl: d as Loose }).get('k'), InvalidError, quoted(d))
		await c.refused(`expire in ${quoted(d)}`, () => texts.expire('kept', d as Loose), InvalidError)
		await c.refused(`a set's ttl ${quoted(d)}`, () => texts.set('kept', 'w', { ttl: d as Loose }), InvalidError)
	}
	// A duration may be a number of milliseconds: only a whole, finite, non-negative one.
	const notSpan = ': a span of time is from 0 to 2^53 - 1 ms, never negative'
	await c.refused('a negative ttl in the core\'s text', () => store.bucket('t0', { ttl: -60000 }).get('k'), InvalidError, `ttl is -60000 ms${notSpan}`)
	await c.refused('advance by a negative step in the core\'s text', () => store.clock.advance(-1000), InvalidError, `the clock's step is -1000 ms${notSpan}`)
	for (const ms of [NaN, Infinity, -Infinity, -1]) {
		await c.refused(`ttl ${ms} ms`, () => store.bucket('t0', { ttl: ms as Loose }).get('k'), InvalidError, 'ttl')
		await c.refused(`expire in ${ms} ms`, () => texts.expire('kept', ms as Loose), InvalidError)
		await c.refused(`advance by ${ms} ms`, () => store.clock.advance(ms as Loose), InvalidError)
	}
	// Past what a number holds exactly (2^53 - 1 ms, about 285,000 years): refused naming it, not saturated.
	for (const [ms, shown] of [
		[2 ** 64, '18446744073709552000'],
		[2 ** 53, '9007199254740992'],
		[Number.MAX_VALUE, 'ms'],
	] as const) {
		await c.refused(`ttl ${ms} ms`, () => store.bucket('t0', { ttl: ms }).get('k'), InvalidError, 'ttl', shown)
		await c.refused(`a set's ttl of ${ms} ms`, () => texts.set('kept', 'w', { ttl: ms }), InvalidError, 'ttl', shown)
		await c.refused(`expire in ${ms} ms`, () => texts.expire('kept', ms), InvalidError, shown)
		await c.refused(`advance by ${ms} ms`, () => store.clock.advance(ms), InvalidError, shown)
		await c.refused(`once keep ${ms} ms`, () => store.once('o0', { keep: ms }).get('k'), InvalidError, 'keep', shown)
	}
	for (const bad of [true, {}, [], 10n]) {
		await c.refused(`ttl of ${typeof bad}`, () => store.bucket('t0', { ttl: bad as Loose }).get('k'), InvalidError, 'ttl')
	}
	for (const r of BAD_RATES) {
		await c.refused(`rate ${quoted(r)}`, () => store.rateLimit('r0', { rate: r as Loose }).allow('k'), InvalidError, quoted(r))
		await c.refused(`window ${quoted(r)}`, () => store.quota('q0', { daily: r as Loose }).allow('k'), InvalidError, quoted(r))
	}
	await c.refused('a rate of a number', () => store.rateLimit('r0', { rate: 5 as Loose }).allow('k'), InvalidError)
	await c.refused('no rate', () => store.rateLimit('r0', {} as Loose).allow('k'), InvalidError)
	await c.refused('ttl 0', () => store.bucket('t0', { ttl: 0 }).get('k'), InvalidError, 't0')
	await c.refused('an expiresAt of text', () => texts.set('k', 'v', { expiresAt: 'tomorrow' as Loose }), InvalidError)
	await c.refused('an invalid Date', () => texts.set('k', 'v', { expiresAt: new Date(NaN) }), InvalidError)
	await c.refused('a type unknown', () => store.bucket('t2', { type: 'decimal' as Loose }).get('k'), InvalidError, 'decimal')
	c.done()
})

test('KV-18 bad limits, windows and counts are InvalidError naming them', async () => {
	const { store, dir } = await fixture()
	await using _ = store
	const guesses = store.rateLimit('guesses', { rate: '5/m' })
	const messages = store.quota('messages', { daily: '100/d' })
	const attempts = store.counters('attempts')
	const big = store.counters('wide', { type: 'bigint' })
	await big.add('top', 2n ** 63n - 2n)
	const c = await catalogue(store, dir)
	for (const burst of [0, NaN, Infinity, -1, 1.5]) {
		await c.refused(`burst ${burst}`, () => store.rateLimit('r0', { rate: '5/m', burst }).allow('k'), InvalidError, 'burst', 'r0')
	}
	for (const n of [NaN, Infinity, -1, 1.5, '1' as Loose]) {
		await c.refused(`allow ${String(n)}`, () => guesses.allow('k', n), InvalidError)
		await c.refused(`quota allow ${String(n)}`, () => messages.allow('k', n), InvalidError)
		// A counter adds any safe integer, negative ones included.
		if (n !== -1) await c.refused(`add ${String(n)}`, () => attempts.add('k', n), InvalidError)
	}
	await c.refused('a quota without windows', () => store.quota('q0', {}).allow('k'), InvalidError, 'q0')
	await c.refused('add past a safe integer', () => attempts.add('k', 2 ** 53), InvalidError, 'whole number from -(2^53-1) to 2^53-1', 'attempts')
	await c.refused('a bigint counter past int64', () => big.add('top', 2n), LimitError, 'int64', 'wide', 'top')
	await c.refused('a bigint step past int64', () => big.add('k', 2n ** 63n), InvalidError, 'int64', 'wide')
	const stepPast = "a counter's step is 9223372036854775808: it must fit int64, from -2^63 to 2^63-1"
	await c.refused("a bigint step past int64's text", () => big.add('k', 2n ** 63n), InvalidError, stepPast, '(bucket wide)')
	const wide = -(2n ** 200n)
	await c.refused('a bigint step past 128 bits, shown as given', () => big.add('k', wide), InvalidError, `a counter's step is ${wide}: it must fit int64`)
	c.done()
	assert.equal(await attempts.get('k'), 0, 'a refused add changes nothing')
	assert.equal(await big.get('top'), 2n ** 63n - 2n, 'a refused add changes nothing')
})

test('KV-18 bad calls are InvalidError and write nothing', async () => {
	const { store, dir } = await fixture()
	await using _ = store
	const texts = store.bucket<string>('texts', { type: 'string' })
	const c = await catalogue(store, dir)
	await c.refused('a page of 0', () => texts.list({ limit: 0 }), InvalidError, '0', 'texts')
	await c.refused('a page of 1001', () => texts.list({ limit: 1001 }), InvalidError, '1001', 'texts')
	await c.refused('a page of 1.5', () => texts.list({ limit: 1.5 }), InvalidError, 'a page (limit) holds 1 to 1000 keys, not 1.5', 'texts')
	for (const limit of [NaN, Infinity, -1, '10' as Loose]) {
		await c.refused(`a page of ${String(limit)}`, () => texts.list({ limit }), InvalidError)
	}
	await c.refused('a made-up ifVersion', () => texts.set('kept', 'w', { ifVersion: 'nope' }), InvalidError)
	await c.refused('an ifVersion of a number', () => texts.set('kept', 'w', { ifVersion: 1 as Loose }), InvalidError)
	await c.refused('the clock set back', () => store.clock.set(new Date(T0.getTime() - 1000)), InvalidError, 'back')
	await c.refused('the clock set to an invalid Date', () => store.clock.set(new Date(NaN)), InvalidError)
	c.done()
	const system = await open(freshDir())
	await using __ = system
	assert.throws(() => system.clock.advance('1s'), (e: Error) => e instanceof InvalidError && /test clock/.test(e.message))
})

test('KV-18 a closed store refuses every call with ClosedError and writes nothing', async () => {
	const dir = freshDir()
	const store = await open(dir, { clock: T0 })
	const b = store.bucket<string>('texts', { type: 'string' })
	await b.set('kept', 'v')
	const counters = store.counters('attempts')
	const limit = store.rateLimit('guesses', { rate: '5/m' })
	await store.close()
	const c = new Catalogue(dir)
	await c.refused('get', () => b.get('kept'), ClosedError, 'closed')
	await c.refused('set', () => b.set('k', 'v'), ClosedError, 'closed')
	await c.refused('take', () => b.take('kept'), ClosedError, 'closed')
	await c.refused('list', () => b.list(), ClosedError, 'closed')
	await c.refused('add', () => counters.add('k'), ClosedError, 'closed')
	await c.refused('allow', () => limit.allow('k'), ClosedError, 'closed')
	await c.refused('a new bucket', () => store.bucket('fresh').get('k'), ClosedError, 'closed')
	await c.refused('maintain', () => store.maintain(), ClosedError, 'closed')
	c.done()
})

test('KV-18 bad store paths are InvalidError naming them', async () => {
	const dir = freshDir()
	const notes = join(dir, 'notes.txt')
	writeFileSync(notes, 'mine')
	const cases: [unknown, string | undefined][] = [
		['', 'empty'],
		['a\0b', 'NUL'],
		[notes, 'notes.txt'],
		[join(notes, 'store'), 'notes.txt'],
		[42, undefined],
		[undefined, undefined],
	]
	for (const [path, needle] of cases) {
		const e = await open(path as Loose).then(
			() => undefined,
			(e: unknown) => e,
		)
		assert.ok(e instanceof InvalidError, `${String(path)}: ${String(e)}`)
		assert.ok(e instanceof TinystoreError && e.code === 'INVALID')
		if (needle !== undefined) assert.ok(e.message.includes(needle), `${String(path)}: ${e.message}`)
	}
	assert.equal(readFileSync(notes, 'utf8'), 'mine')
	assert.ok(!existsSync('kv.db'), 'an empty path opened kv.db in the working directory')
})

test('KV-18 a once run inside its own run is InvalidError and writes nothing', async () => {
	await using store = await testStore()
	const sends = store.once('sends', { type: 'string' })
	const dir = store.dir
	const answer = await sends.run('k', async () => {
		const c = new Catalogue(dir)
		await c.refused('a run inside its own run', () => sends.run('k', () => 'inner'), InvalidError, 'sends')
		c.done()
		return 'outer'
	})
	assert.equal(answer, 'outer')
})

test('KV-18 a once run of something not callable is InvalidError naming it, and claims nothing', async () => {
	const { store, dir } = await fixture()
	await using _ = store
	const sends = store.once('sends', { type: 'string' })
	const c = await catalogue(store, dir)
	for (const [fn, shown] of [
		['sent', 'string sent'],
		[42, 'number 42'],
		[undefined, 'undefined undefined'],
		[null, 'object null'],
	] as const) {
		const text = `a run needs a function to call, not ${shown}`
		await c.refused(`run of ${String(fn)}`, () => sends.run('k', fn as Loose), InvalidError, text, 'sends')
	}
	c.done()
	// Nothing was claimed: the key runs at once.
	assert.equal(await sends.run('k', () => 'first'), 'first')
})
