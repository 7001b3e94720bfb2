// Buckets: the contract's promises KV-1 to KV-10 as the TypeScript API keeps them.
import assert from 'node:assert/strict'
import { test } from 'node:test'

import {
	ClosedError,
	ConflictError,
	CorruptError,
	InvalidError,
	LimitError,
	open,
	OutcomeUnknownError,
	TinystoreError,
} from 'tinystore'

// The package's own tests reach the addon behind a store (not exported).
import { makeError } from '../dist/cjs/errors.js'
import { native } from '../dist/cjs/native.js'
import { nativeOf } from '../dist/cjs/store.js'

import { freshDir, rejection, T0, testStore } from './helpers.mjs'

test('KV-1 keys: an integer is its decimal spelling, for keys and owners', async () => {
	await using store = await testStore()
	const b = store.bucket('things', { type: 'string' })
	await b.set(42, 'forty-two')
	assert.equal(await b.get('42'), 'forty-two')
	assert.equal(await b.get(42n), 'forty-two')
	// Any bigint, as any Python int, is a key by its decimal spelling.
	const wide = -(2n ** 200n)
	await b.set(wide, 'wide')
	assert.equal(await b.get(String(wide)), 'wide')
	await b.under(7).set('k', 'owned')
	assert.equal(await b.under('7').get('k'), 'owned')
})

test('KV-1 keys: bytes keys, a NUL inside a key, and splits that never collide', async () => {
	await using store = await testStore()
	const b = store.bucket('things', { type: 'string' })
	await b.set(new Uint8Array([0x61, 0x00, 0x62]), 'nul')
	assert.equal(await b.get('a\u0000b'), 'nul')
	await b.under('a', 'b').set('c', 'nested')
	await b.under('a/b').set('c', 'slashed')
	assert.equal(await b.under('a').under('b').get('c'), 'nested')
	assert.equal(await b.under('a/b').get('c'), 'slashed')
})

test('KV-1 keys: an empty key, a fractional number or an object is InvalidError naming the bucket', async () => {
	await using store = await testStore()
	const b = store.bucket('things', { type: 'string' })
	for (const bad of ['', 1.5, {}, null, true]) {
		const e = await rejection(b.set(bad as never, 'x'))
		assert.ok(e instanceof InvalidError, String(bad))
		assert.equal((e as InvalidError).what.bucket, 'things')
	}
	const long = await rejection(b.set('k'.repeat(1100), 'x'))
	assert.ok(long instanceof InvalidError)
	assert.equal((long as InvalidError).what.bucket, 'things')
	assert.deepEqual((await b.list()).entries, [])
})

test('KV-2 names: a bad name is InvalidError, and a name keeps its kind', async () => {
	await using store = await testStore()
	assert.throws(() => store.bucket('Has Spaces'), InvalidError)
	assert.throws(() => store.bucket('x'.repeat(65)), InvalidError)
	store.bucket('sessions')
	assert.deepEqual(await store.names(), [{ name: 'sessions', kind: 'values' }])
})

test('KV-3 values: each type reads back what it wrote', async () => {
	await using store = await testStore()
	const strings = store.bucket('strings', { type: 'string' })
	await strings.set('empty', '')
	await strings.set('text', 'héllo ✓')
	assert.equal(await strings.get('empty'), '')
	assert.equal(await strings.get('text'), 'héllo ✓')

	const bytes = store.bucket('bytes', { type: 'bytes' })
	await bytes.set('b', new Uint8Array([0, 1, 255]))
	const got = await bytes.get('b')
	assert.ok(got instanceof Uint8Array)
	assert.deepEqual([...got], [0, 1, 255])
	await bytes.set('buffer', Buffer.from('hi'))
	assert.deepEqual([...((await bytes.get('buffer')) ?? [])], [104, 105])

	const ints = store.bucket('ints', { type: 'int' })
	await ints.set('max', Number.MAX_SAFE_INTEGER)
	await ints.set('min', Number.MIN_SAFE_INTEGER)
	assert.equal(await ints.get('max'), Number.MAX_SAFE_INTEGER)
	assert.equal(await ints.get('min'), Number.MIN_SAFE_INTEGER)

	const big = store.bucket('big', { type: 'bigint' })
	for (const v of [0n, -(2n ** 63n), 2n ** 63n - 1n, 2n ** 64n - 1n]) {
		await big.set('v', v)
		assert.equal(await big.get('v'), v)
	}

	const floats = store.bucket('floats', { type: 'float' })
	for (const v of [1.5, -0, Infinity, -Infinity, NaN, 5e-324]) {
		await floats.set('v', v)
		assert.ok(Object.is(await floats.get('v'), v), String(v))
	}

	const bools = store.bucket('bools', { type: 'bool' })
	await bools.set('t', true)
	await bools.set('f', false)
	assert.equal(await bools.get('t'), true)
	assert.equal(await bools.get('f'), false)

	const json = store.bucket<{ a: number[]; s: string | null }>('json')
	await json.set('o', { a: [1, 2], s: null })
	assert.deepEqual(await json.get('o'), { a: [1, 2], s: null })
})

test('KV-3 values: a value of the wrong JS type, an unsafe integer or what JSON cannot write is InvalidError, nothing written', async () => {
	await using store = await testStore()
	const ints = store.bucket('ints', { type: 'int' })
	for (const bad of [2 ** 53, 1.5, NaN, '1', 1n]) {
		const e = await rejection(ints.set('k', bad as never))
		assert.ok(e instanceof InvalidError, String(bad))
		assert.deepEqual((e as InvalidError).what, { bucket: 'ints', key: 'k' })
	}
	const big = store.bucket('big', { type: 'bigint' })
	assert.ok((await rejection(big.set('k', 2n ** 64n))) instanceof InvalidError)
	const json = store.bucket('json', { type: 'json' })
	const cyclic: Record<string, unknown> = {}
	cyclic.self = cyclic
	for (const bad of [undefined, () => 1, 1n, cyclic]) {
		const e = await rejection(json.set('k', bad))
		assert.ok(e instanceof InvalidError)
		assert.deepEqual((e as InvalidError).what, { bucket: 'json', key: 'k' })
	}
	assert.equal(await ints.has('k'), false)
	assert.equal(await json.has('k'), false)
})

test('KV-3 values: a value over 1 MiB is LimitError', async () => {
	await using store = await testStore()
	const bytes = store.bucket('bytes', { type: 'bytes' })
	await bytes.set('just', new Uint8Array(1 << 20))
	const e = await rejection(bytes.set('over', new Uint8Array((1 << 20) + 1)))
	assert.ok(e instanceof LimitError)
	assert.equal(e.code, 'LIMIT')
	assert.equal(await bytes.has('over'), false)
})

test('KV-3 values: a row read as a type it was not written as is CorruptError', async () => {
	await using store = await testStore()
	await store.bucket('mixed', { type: 'int' }).set('n', 7)
	await store.bucket('mixed', { type: 'string' }).set('s', 'text')
	await store.bucket('mixed', { type: 'int' }).set('big', Number.MAX_SAFE_INTEGER)
	const asString = store.bucket('mixed', { type: 'string' })
	const e = await rejection(asString.get('n'))
	assert.ok(e instanceof CorruptError)
	assert.deepEqual((e as CorruptError).what, { bucket: 'mixed', key: 'n' })
	assert.ok(await rejection(store.bucket('mixed').get('s')) instanceof CorruptError)
	assert.ok(await rejection(store.bucket('mixed', { type: 'bool' }).get('n')) instanceof CorruptError)
	// An int64 beyond the safe integers reads as a bigint, and is Corrupt as a number.
	await store.bucket('wide', { type: 'bigint' }).set('w', 2n ** 60n)
	assert.ok(await rejection(store.bucket('wide', { type: 'int' }).get('w')) instanceof CorruptError)
	assert.equal(await store.bucket('wide', { type: 'bigint' }).get('w'), 2n ** 60n)
})

test('KV-4 basics: set, get, has, delete; a missing key is undefined and delete of it succeeds', async () => {
	await using store = await testStore()
	const b = store.bucket<{ n: number }>('basics')
	assert.equal(await b.get('missing'), undefined)
	assert.equal(await b.has('missing'), false)
	assert.equal(await b.delete('missing'), false)
	await b.set('k', { n: 1 })
	assert.equal(await b.has('k'), true)
	await b.set('k', { n: 2 })
	assert.deepEqual(await b.get('k'), { n: 2 })
	assert.equal(await b.delete('k'), true)
	assert.equal(await b.get('k'), undefined)
})

test('KV-4 basics: a read answers an already-resolved Promise, and a write resolves once durable', async () => {
	await using store = await testStore()
	const b = store.bucket('basics', { type: 'int' })
	await b.set('k', 1)
	let settled = false
	const read = b.get('k').then(() => {
		settled = true
	})
	await Promise.resolve()
	assert.equal(settled, true, 'the read settled within one microtask turn')
	await read
})

test('KV-5 take: one of 64 racing takers gets the value', async () => {
	await using store = await testStore()
	const codes = store.bucket('codes', { ttl: '15m', type: 'int' })
	await codes.set('code', 42)
	const got = await Promise.all(Array.from({ length: 64 }, () => codes.take('code')))
	assert.deepEqual(
		got.filter((v) => v !== undefined),
		[42],
	)
	assert.equal(await codes.has('code'), false)
})

test('KV-5 take: a value that no longer decodes is CorruptError and stays in place', async () => {
	await using store = await testStore()
	await store.bucket('codes', { type: 'string' }).set('c', 'not a number')
	const e = await rejection(store.bucket('codes', { type: 'int' }).take('c'))
	assert.ok(e instanceof CorruptError)
	assert.equal(await store.bucket('codes', { type: 'string' }).get('c'), 'not a number')
	await store.bucket('codes', { type: 'string' }).set('j', '{not json')
	assert.ok((await rejection(store.bucket('codes').take('j'))) instanceof CorruptError)
	assert.equal(await store.bucket('codes', { type: 'string' }).get('j'), '{not json')
})

test('KV-6 ttl: a key expires on the store clock; a later set keeps its expiry; a call ttl replaces it', async () => {
	await using store = await testStore()
	const codes = store.bucket('codes', { ttl: '15m', type: 'int' })
	await codes.set('a', 1)
	store.clock.advance('10m')
	await codes.set('a', 2) // keeps the expiry of its creation
	await codes.set('b', 3, { ttl: '1h' })
	store.clock.advance('6m')
	assert.equal(await codes.get('a'), undefined)
	assert.equal(await codes.has('a'), false)
	assert.equal(await codes.get('b'), 3)
	assert.equal(await codes.expire('a', '1h'), false)
	assert.ok((await rejection(codes.set('a', 4, { ifVersion: '1' }))) instanceof ConflictError)
	assert.equal(await codes.create('a', 5), true, 'create claims an expired key')
	await codes.set('gone', 1, { expiresAt: new Date(store.clock.now().getTime() - 1) })
	assert.equal(await codes.has('gone'), false)
	assert.deepEqual(
		(await codes.list()).entries.map((e) => e.key),
		['a', 'b'],
	)
})

test('KV-6 ttl: ttl and idle together, or a bad duration, are InvalidError', async () => {
	await using store = await testStore()
	assert.throws(() => store.bucket('both', { ttl: '1h', idle: '1h' }), InvalidError)
	assert.throws(() => store.bucket('bad', { ttl: '15min' as never }), (e: unknown) => {
		assert.ok(e instanceof InvalidError)
		assert.match(e.message, /15min/)
		return true
	})
	const b = store.bucket('ok', { type: 'int' })
	assert.ok((await rejection(b.set('k', 1, { ttl: '30m1h' as never }))) instanceof InvalidError)
	assert.ok((await rejection(b.set('k', 1, { ttl: -5 }))) instanceof InvalidError)
	assert.equal(await b.has('k'), false)
})

test('KV-7 idle: a read renews the key to the full span; list renews nothing', async () => {
	await using store = await testStore()
	const sessions = store.bucket<{ userId: number }>('sessions', { idle: '30d' })
	await sessions.set('read', { userId: 1 })
	await sessions.set('listed', { userId: 2 })
	store.clock.advance('20d')
	assert.deepEqual(await sessions.get('read'), { userId: 1 })
	await sessions.list()
	await store.maintain() // writes the renewal the read asked for
	store.clock.advance('20d')
	assert.deepEqual(await sessions.get('read'), { userId: 1 })
	assert.equal(await sessions.get('listed'), undefined)
})

test('KV-8 branches: clear removes the branch and every branch under it, and nothing beside', async () => {
	await using store = await testStore()
	const s = store.bucket('sessions', { type: 'string' })
	await s.under(7).set('a', 'x')
	await s.under(7, 'phone').set('b', 'y')
	await s.under(77).set('c', 'z')
	await s.set('7', 'root key')
	await s.under(7).clear()
	assert.equal(await s.under(7).get('a'), undefined)
	assert.equal(await s.under(7, 'phone').get('b'), undefined)
	assert.equal(await s.under(77).get('c'), 'z')
	assert.equal(await s.get('7'), 'root key')
	await s.under(7).set('a', 'new')
	assert.equal(await s.under(7).get('a'), 'new')
})

test('KV-9 list: pages in key order with a cursor; a limit over 1000 is InvalidError; all walks every page', async () => {
	await using store = await testStore()
	const b = store.bucket('items', { type: 'int' })
	await Promise.all(Array.from({ length: 25 }, (_, i) => b.set(`k${String(i).padStart(2, '0')}`, i)))
	await b.under('owner').set('hidden', 99)
	const seen: string[] = []
	let after: string | Uint8Array | undefined
	for (;;) {
		const page = await b.list({ after, limit: 10 })
		assert.ok(page.entries.length <= 10)
		seen.push(...page.entries.map((e) => e.key as string))
		if (page.next === undefined) break
		after = page.next
	}
	assert.equal(seen.length, 25)
	assert.deepEqual(seen, [...seen].sort())
	assert.ok((await rejection(b.list({ limit: 1001 }))) instanceof InvalidError)
	const all: number[] = []
	for await (const e of b.all()) all.push(e.value)
	assert.deepEqual(all, Array.from({ length: 25 }, (_, i) => i))
})

test('KV-10 versions: entry gives version and expiry; ifVersion writes only at that version; create says whether it wrote', async () => {
	await using store = await testStore()
	const b = store.bucket('v', { ttl: '1h', type: 'string' })
	await b.set('k', 'one')
	const e1 = await b.entry('k')
	assert.ok(e1)
	assert.equal(e1.value, 'one')
	assert.equal(typeof e1.version, 'string')
	assert.deepEqual(e1.expiresAt, new Date(store.clock.now().getTime() + 3600_000))
	await b.set('k', 'two', { ifVersion: e1.version })
	const stale = await rejection(b.set('k', 'three', { ifVersion: e1.version }))
	assert.ok(stale instanceof ConflictError)
	assert.deepEqual((stale as ConflictError).what, { bucket: 'v', key: 'k' })
	const e2 = await b.entry('k')
	assert.notEqual(e2?.version, e1.version)
	// Of two writers holding the same version exactly one wins.
	const results = await Promise.allSettled([
		b.delete('k', { ifVersion: e2?.version }),
		b.take('k', { ifVersion: e2?.version }),
	])
	assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1)
	assert.equal(await b.create('c', 'first'), true)
	assert.equal(await b.create('c', 'second'), false)
	assert.equal(await b.get('c'), 'first')
	await b.delete('c')
	await b.set('c', 'again')
	assert.notEqual((await b.entry('c'))?.version, e2?.version)
})

test('KV-15 durability: 64 writes in flight commit together, in a few groups, without a thread per write', async () => {
	await using store = await testStore()
	const b = store.bucket('group', { type: 'int' })
	await b.set('warm', 0)
	const before = store.groupStats()
	await Promise.all(Array.from({ length: 64 }, (_, i) => b.set(`k${i}`, i)))
	const after = store.groupStats()
	assert.equal(after.writes - before.writes, 64)
	assert.ok(after.groups - before.groups <= 4, `64 writes took ${after.groups - before.groups} groups`)
})

test('KV-15 durability: a write that fails rolls back alone; the rest of its group commits', async () => {
	await using store = await testStore()
	const b = store.bucket('group', { type: 'int' })
	const results = await Promise.allSettled(
		Array.from({ length: 64 }, (_, i) => (i === 17 ? b.set('k17', 1, { ifVersion: '12345' }) : b.set(`k${i}`, i))),
	)
	const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [[i, r.reason]] : []))
	assert.equal(failed.length, 1)
	assert.equal(failed[0]?.[0], 17)
	assert.ok(failed[0]?.[1] instanceof ConflictError)
	assert.equal((await b.list({ limit: 1000 })).entries.length, 63)
})

test('KV-15 durability: when a group commit fails, each of its callers gets OutcomeUnknownError', async () => {
	await using store = await testStore()
	const b = store.bucket('group', { type: 'int' })
	nativeOf.get(store)?.failNextCommitForTests()
	const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => b.set(`k${i}`, i)))
	// The first group fails; how many of the 8 it held depends on when the writer woke.
	const rejected = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []))
	assert.ok(rejected.length >= 1)
	for (const reason of rejected) {
		assert.ok(reason instanceof OutcomeUnknownError)
		assert.equal(reason.code, 'OUTCOME_UNKNOWN')
	}
	assert.equal(rejected.length, results.filter((r, i) => r.status === 'rejected' && i < rejected.length).length)
	await b.set('after', 1)
	assert.equal(await b.get('after'), 1)
})

test('KV-19 files: a call after close is ClosedError, reads and writes alike; close twice is fine', async () => {
	const store = await testStore()
	const b = store.bucket('x', { type: 'int' })
	await store.close()
	await store.close()
	assert.equal(store.closed, true)
	assert.ok((await rejection(b.get('k'))) instanceof ClosedError)
	assert.ok((await rejection(b.set('k', 1))) instanceof ClosedError)
	assert.throws(() => store.bucket('y'), ClosedError)
})

test('KV-19 files: writes issued before close, in the same turn, are written', async () => {
	const dir = freshDir()
	const store = await open(dir, { clock: T0 })
	const b = store.bucket('x', { type: 'int' })
	const writes = Array.from({ length: 10 }, (_, i) => b.set(`k${i}`, i))
	await store.close()
	await Promise.all(writes)
	await using again = await open(dir, { clock: T0 })
	assert.equal((await again.bucket('x', { type: 'int' }).list()).entries.length, 10)
})

test('KV-18 bad input from plain JavaScript: wrong argument types are InvalidError naming the handle, nothing written', async () => {
	await using store = await testStore()
	const b = store.bucket('x', { type: 'int' })
	const loose = b as unknown as {
		set(k: unknown, v: unknown, o?: unknown): Promise<void>
		list(o?: unknown): Promise<unknown>
		delete(k: unknown, o?: unknown): Promise<boolean>
	}
	for (const call of [
		() => loose.set('k', 1, { ifVersion: 5 }),
		() => loose.set('k', 1, { expiresAt: 'tomorrow' }),
		() => loose.set('k', 1, { ttl: { minutes: 5 } }),
		() => loose.list({ limit: 'ten' }),
		() => loose.delete('k', { ifVersion: 7 }),
	]) {
		const e = await rejection(call())
		assert.ok(e instanceof InvalidError, String(e))
		assert.equal((e as InvalidError).what.bucket, 'x')
	}
	assert.throws(() => store.bucket(42 as never), InvalidError)
	assert.throws(() => store.bucket('y', { type: 'integer' as never }), (e: unknown) => e instanceof InvalidError && /integer/.test(e.message))
	assert.throws(() => store.counters('c', { ttl: true as never }), InvalidError)
	const q = store.quota('q', { daily: '5/d' })
	assert.ok((await rejection(q.allow('k', 'two' as never))) instanceof InvalidError)
	assert.equal(await b.has('k'), false)
})

test('KV-18 errors: one TinystoreError subclass per kind of the engine, with its stable code', () => {
	const codes = native.errorCodes()
	assert.ok(codes.includes('INVALID') && codes.includes('OUTCOME_UNKNOWN'))
	for (const code of codes) {
		const e = makeError(code, 'message', 'bucket', 'owner/key')
		assert.ok(e instanceof TinystoreError)
		assert.notEqual(e.constructor, TinystoreError, `a class of its own for ${code}`)
		assert.equal(e.code, code)
		assert.deepEqual(e.what, { bucket: 'bucket', key: 'owner/key' })
		assert.match(e.message, /message \(bucket bucket, key owner\/key\)/)
	}
})
