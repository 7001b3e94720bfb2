// A bucket without a type (KV-3): each value is kept by its kind, as the
// typed buckets of every language keep that kind, and each row reads back by
// its kind. So `store.bucket<number>('sign-in-codes')` shares its rows with
// Python's `store.bucket("sign-in-codes", int)`, Go's `OpenBucket[int64]` and
// Rust's `bucket::<i64>`; `store.bucket<Session>('sessions')` with a
// dataclass, a Go struct and a serde struct.
import assert from 'node:assert/strict'
import { test } from 'node:test'

import { CorruptError, InvalidError } from 'tinystore'

import { rejection, testStore } from './helpers.mjs'

const hex = (row: unknown) => (row instanceof Uint8Array ? Buffer.from(row).toString('hex') : row)
const bits = (f: number) => {
	const b = Buffer.alloc(8)
	b.writeDoubleBE(f)
	return b.toString('hex')
}

test('KV-3 by kind: each value keeps the row its typed bucket keeps', async () => {
	await using store = await testStore()
	const any = store.bucket('any')
	const values: [string, unknown][] = [
		['int', 42],
		['negative', -7],
		['max-safe', Number.MAX_SAFE_INTEGER],
		['fraction', 1.5],
		['negzero', -0],
		['past-safe', 2 ** 53],
		['nan', Number.NaN],
		['text', 'héllo'],
		['empty', ''],
		['bytes', new Uint8Array([0, 255])],
		['yes', true],
		['no', false],
		['wide', 2n ** 60n],
		['uint64', 2n ** 64n - 1n],
		['member', null],
		['object', { userId: 7, device: 'web' }],
		['array', [1, 'two', null]],
	]
	for (const [k, v] of values) await any.set(k, v)
	const raw = store.bucket('any', { type: 'raw' })
	const rows = Object.fromEntries(await Promise.all(values.map(async ([k]) => [k, hex(await raw.get(k))])))
	assert.deepEqual(rows, {
		int: 42n,
		negative: -7n,
		'max-safe': BigInt(Number.MAX_SAFE_INTEGER),
		fraction: bits(1.5),
		negzero: bits(-0),
		'past-safe': bits(2 ** 53),
		nan: bits(Number.NaN),
		text: Buffer.from('héllo').toString('hex'),
		empty: '',
		bytes: '00ff',
		yes: 1n,
		no: 0n,
		wide: 2n ** 60n,
		uint64: 'ffffffffffffffff',
		member: null,
		object: Buffer.from('{"userId":7,"device":"web"}').toString('hex'),
		array: Buffer.from('[1,"two",null]').toString('hex'),
	})
	// ... so each reads back through the type of its kind.
	assert.equal(await store.bucket('any', { type: 'int' }).get('int'), 42)
	assert.equal(await store.bucket('any', { type: 'float' }).get('fraction'), 1.5)
	assert.ok(Object.is(await store.bucket('any', { type: 'float' }).get('negzero'), -0))
	assert.equal(await store.bucket('any', { type: 'string' }).get('text'), 'héllo')
	assert.equal(await store.bucket('any', { type: 'string' }).get('empty'), '')
	assert.equal(await store.bucket('any', { type: 'bool' }).get('yes'), true)
	assert.equal(await store.bucket('any', { type: 'bigint' }).get('uint64'), 2n ** 64n - 1n)
	assert.equal(await store.bucket('any', { type: 'set' }).has('member'), true)
	assert.deepEqual(await store.bucket('any', { type: 'json' }).get('object'), { userId: 7, device: 'web' })
})

test('KV-3 by kind: a row reads back by its kind: nothing as null, an integer as a number, bytes as JSON', async () => {
	await using store = await testStore()
	// Rows as another language's typed bucket writes them.
	await store.bucket('codes', { type: 'int' }).set('c', 42)
	await store.bucket('codes', { type: 'set' }).set('m', null)
	await store.bucket('codes', { type: 'json' }).set('o', { id: 41 })
	await store.bucket('codes', { type: 'bool' }).set('b', true)
	const codes = store.bucket<number | { id: number } | null>('codes')
	assert.equal(await codes.get('c'), 42)
	assert.equal(await codes.get('m'), null)
	assert.deepEqual(await codes.get('o'), { id: 41 })
	assert.equal(await codes.get('b'), 1, 'a bool row is an integer row')
	assert.deepEqual(
		(await codes.list()).entries.map((e) => [e.key, e.value]),
		[
			['b', 1],
			['c', 42],
			['m', null],
			['o', { id: 41 }],
		],
	)
	assert.equal((await codes.entry('c'))?.value, 42)
	assert.equal(await codes.take('c'), 42)
	assert.equal(await codes.has('c'), false)
	// Its own writes read back the same way.
	await codes.set('n', 7)
	await codes.set('s', { id: 1 })
	assert.equal(await codes.get('n'), 7)
	assert.deepEqual(await codes.get('s'), { id: 1 })
})

test('KV-3 by kind: bytes that are not JSON, and integers past 2^53, are CorruptError naming the type that reads them', async () => {
	await using store = await testStore()
	await store.bucket('rows', { type: 'string' }).set('text', 'Ada')
	await store.bucket('rows', { type: 'float' }).set('float', 1.5)
	await store.bucket('rows', { type: 'bigint' }).set('wide', 2n ** 60n)
	const rows = store.bucket('rows')
	for (const [key, hint] of [
		['text', "type 'string', 'bytes' or 'float'"],
		['float', "type 'string', 'bytes' or 'float'"],
		['wide', "type 'bigint'"],
	] as const) {
		const e = await rejection(rows.get(key))
		assert.ok(e instanceof CorruptError, key)
		assert.deepEqual(e.what, { bucket: 'rows', key })
		assert.ok(e.message.includes(hint), e.message)
		// A take of it is refused inside its write, and the row stays.
		assert.ok((await rejection(rows.take(key))) instanceof CorruptError)
		assert.equal(await store.bucket('rows', { type: 'raw' }).has(key), true)
	}
	assert.equal(await store.bucket('rows', { type: 'string' }).get('text'), 'Ada')
})

test('KV-3 by kind: a value with no row is InvalidError naming the key, and nothing is written', async () => {
	await using store = await testStore()
	const any = store.bucket('any')
	const cyclic: Record<string, unknown> = {}
	cyclic.self = cyclic
	for (const bad of [undefined, () => 1, Symbol('s'), cyclic, { n: 1n }, 2n ** 64n, -(2n ** 63n) - 1n]) {
		const e = await rejection(any.set('k', bad))
		assert.ok(e instanceof InvalidError, String(typeof bad))
		assert.deepEqual(e.what, { bucket: 'any', key: 'k' })
	}
	assert.equal(await any.has('k'), false)
})

test('KV-3 by kind: once keeps its answers by kind too', async () => {
	await using store = await testStore()
	const sends = store.once<{ id: number }>('sends', { keep: '1d' })
	assert.deepEqual(await sends.run('r', async () => ({ id: 41 })), { id: 41 })
	const counts = store.once<number>('counts')
	assert.equal(await counts.run('c', () => 3), 3)
	assert.equal(await counts.run('c', () => 4), 3)
	assert.equal(await counts.get('c'), 3)
})
