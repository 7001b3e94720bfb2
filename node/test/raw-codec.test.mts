// Raw buckets (KV-3: a row read as it keeps a value, whatever type wrote it,
// and raw rows read back by the typed bucket) and a bucket's own codec (a
// value it cannot decode is CorruptError and a take keeps it, KV-5).
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { type Bucket, type Codec, ConflictError, CorruptError, InvalidError, type RawValue } from 'tinystore'

import { rejection, testStore } from './helpers.mjs'

const enc = new TextEncoder()
const dec = new TextDecoder()

function f64(x: number): Uint8Array {
	const b = new Uint8Array(8)
	new DataView(b.buffer).setFloat64(0, x)
	return b
}

test('KV-3 raw: a raw bucket reads what every type wrote, an empty string as empty bytes', async () => {
	await using store = await testStore()
	await store.bucket('text', { type: 'string' }).set('a', 'héllo')
	await store.bucket('text', { type: 'string' }).set('empty', '')
	await store.bucket('blobs', { type: 'bytes' }).set('a', new Uint8Array([0, 255]))
	await store.bucket('ints', { type: 'int' }).set('a', -7)
	await store.bucket('flags', { type: 'bool' }).set('a', true)
	await store.bucket('floats', { type: 'float' }).set('a', -0)
	await store.bucket('big', { type: 'bigint' }).set('a', 2n ** 64n - 1n)
	await store.bucket('set', { type: 'set' }).set('a', null)
	await store.bucket<{ userId: number }>('sessions').under(7).set('t', { userId: 7 })

	const raw = (name: string) => store.bucket(name, { type: 'raw' })
	assert.deepEqual(await raw('text').get('a'), enc.encode('héllo'))
	assert.deepEqual(await raw('text').get('empty'), new Uint8Array(0))
	assert.deepEqual(await raw('blobs').get('a'), new Uint8Array([0, 255]))
	assert.equal(await raw('ints').get('a'), -7n)
	assert.equal(await raw('flags').get('a'), 1n)
	assert.deepEqual(await raw('floats').get('a'), f64(-0))
	assert.deepEqual(await raw('big').get('a'), new Uint8Array(8).fill(255))
	assert.equal(await raw('set').get('a'), null)
	assert.equal(await raw('set').get('missing'), undefined)
	assert.equal(dec.decode((await raw('sessions').under(7).get('t')) as Uint8Array), '{"userId":7}')
	const page = await raw('text').list()
	assert.deepEqual(
		page.entries.map((e) => [e.key, e.value]),
		[
			['a', enc.encode('héllo')],
			['empty', new Uint8Array(0)],
		],
	)
})

test('KV-3 raw: rows a raw bucket writes read back by the typed bucket', async () => {
	await using store = await testStore()
	const raw = (name: string) => store.bucket(name, { type: 'raw' })
	await raw('ints').set('a', 42n)
	// From plain JavaScript a raw bucket writes a safe integer number, and a string as its UTF-8 bytes.
	const loose = (name: string) => raw(name) as unknown as Bucket<RawValue | number | string>
	await loose('ints').set('n', 43)
	await raw('text').set('a', enc.encode('hi'))
	await raw('text').set('empty', new Uint8Array(0))
	await loose('text').set('str', 'typed as text')
	await raw('flags').set('a', 0n)
	await raw('floats').set('a', f64(Infinity))
	await raw('set').set('a', null)
	await raw('sessions').set('s', enc.encode('{"userId":1}'))

	assert.equal(await store.bucket('ints', { type: 'int' }).get('a'), 42)
	assert.equal(await store.bucket('ints', { type: 'bigint' }).get('n'), 43n)
	const text = store.bucket('text', { type: 'string' })
	assert.equal(await text.get('a'), 'hi')
	assert.equal(await text.get('empty'), '')
	assert.equal(await text.get('str'), 'typed as text')
	assert.equal(await store.bucket('flags', { type: 'bool' }).get('a'), false)
	assert.equal(await store.bucket('floats', { type: 'float' }).get('a'), Infinity)
	assert.equal(await store.bucket('set', { type: 'set' }).has('a'), true)
	assert.deepEqual(await store.bucket<{ userId: number }>('sessions').get('s'), { userId: 1 })
	const taken: RawValue | undefined = await raw('ints').take('a')
	assert.equal(taken, 42n)
	// A raw row of another kind than the type's is Corrupt, naming the key.
	const e = await rejection(store.bucket('text', { type: 'int' }).get('a'))
	assert.ok(e instanceof CorruptError, String(e))
	assert.deepEqual(e.what, { bucket: 'text', key: 'a' })
})

test('KV-18 raw: a value a row cannot keep is InvalidError and writes nothing', async () => {
	await using store = await testStore()
	const raw = store.bucket('r', { type: 'raw' })
	assert.ok((await rejection(raw.set('a', 1.5 as unknown as bigint))) instanceof InvalidError)
	const past = await rejection(raw.set('a', 2n ** 63n))
	assert.ok(past instanceof InvalidError)
	assert.equal(past.message, `the integer ${2n ** 63n} is outside int64, the integers a row keeps (bucket r, key a)`)
	assert.ok((await rejection(raw.set('a', {} as unknown as bigint))) instanceof InvalidError)
	assert.equal(await raw.has('a'), false)
})

type Point = [number, number]

/** Points kept as the text "x,y". */
const pointText: Codec<Point> = {
	encode([x, y]) {
		if (x < -1000) throw new RangeError('x is out of range')
		return enc.encode(`${x},${y}`)
	},
	decode(bytes) {
		const text = dec.decode(bytes)
		if (text === 'boom') throw new Error('the codec broke')
		const [x, y] = text.split(',').map(Number)
		if (!Number.isInteger(x) || !Number.isInteger(y)) throw new SyntaxError(`not a point: ${text}`)
		return [x, y]
	},
}

test('codec: a bucket of its own codec keeps the bytes it encodes, in and out of transactions', async () => {
	await using store = await testStore()
	const points = store.bucket('points', { codec: pointText })
	await points.under('map').set('home', [3, -4])
	assert.deepEqual(await points.under('map').get('home'), [3, -4])
	const raw = store.bucket('points', { type: 'raw' })
	assert.deepEqual(await raw.under('map').get('home'), enc.encode('3,-4'))
	const e = await rejection(points.set('far', [-5000, 0]))
	assert.ok(e instanceof InvalidError && /out of range/.test(e.message), String(e))
	assert.deepEqual(e.what, { bucket: 'points', key: 'far' })
	assert.equal(await raw.has('far'), false)
	await store.tx(async (tx) => {
		assert.deepEqual(await tx.with(points.under('map')).take('home'), [3, -4])
		await tx.with(points).set('work', [1, 2])
	})
	assert.deepEqual(await raw.get('work'), enc.encode('1,2'))
	assert.deepEqual(await points.take('work'), [1, 2])
	assert.equal(await points.take('work'), undefined)
	assert.ok(
		(() => {
			try {
				store.bucket('bad', { codec: {} as Codec<number> })
				return false
			} catch (err) {
				return err instanceof InvalidError
			}
		})(),
	)
})

test('codec: a bucket given a type and a codec is InvalidError naming it', async () => {
	await using store = await testStore()
	const both = { type: 'string', codec: pointText } as unknown as { codec: Codec<number[]> }
	assert.throws(
		() => store.bucket('points', both),
		(e: unknown) =>
			e instanceof InvalidError &&
			e.message === 'a bucket takes a type or a codec, not both (bucket points)' &&
			e.what?.bucket === 'points',
	)
})

test('KV-5 take: a value the codec cannot decode is CorruptError and stays, in and out of transactions', async () => {
	await using store = await testStore()
	const points = store.bucket('points', { codec: pointText })
	const raw = store.bucket('points', { type: 'raw' })
	await raw.under('u').set('bad', enc.encode('not a point'))
	await raw.set('int', 5n)
	await raw.set('boom', enc.encode('boom'))

	let e = await rejection(points.under('u').get('bad'))
	assert.ok(e instanceof CorruptError, String(e))
	assert.deepEqual(e.what, { bucket: 'points', key: 'u/bad' })
	e = await rejection(points.under('u').take('bad'))
	assert.ok(e instanceof CorruptError, String(e))
	assert.deepEqual(e.what, { bucket: 'points', key: 'u/bad' })
	assert.deepEqual(await raw.under('u').get('bad'), enc.encode('not a point'))
	assert.ok((await rejection(points.take('int'))) instanceof CorruptError)
	assert.equal(await raw.get('int'), 5n)
	e = await rejection(points.take('boom'))
	assert.ok(e instanceof CorruptError && /the codec broke/.test(e.message), String(e))
	assert.deepEqual(await raw.get('boom'), enc.encode('boom'))
	await store.tx(async (tx) => {
		const inTx = await rejection(tx.with(points.under('u')).take('bad'))
		assert.ok(inTx instanceof CorruptError, String(inTx))
		await tx.with(points).set('ok', [0, 0])
	})
	assert.deepEqual(await raw.under('u').get('bad'), enc.encode('not a point'))
	assert.deepEqual(await points.get('ok'), [0, 0])
})

test('KV-5 take: of racing takers through a codec exactly one gets the value', async () => {
	await using store = await testStore()
	const points = store.bucket('points', { codec: pointText })
	await points.set('p', [1, 1])
	const got = await Promise.all(Array.from({ length: 16 }, () => points.take('p')))
	assert.equal(got.filter((v) => v !== undefined).length, 1)
	assert.equal(await points.has('p'), false)
})

test('KV-5 take: through a codec, a key written after it was read and checked is ConflictError and stays', async () => {
	await using store = await testStore()
	const points = store.bucket('points', { codec: pointText })
	await points.set('p', [1, 1])
	// The set is queued before the take's write, after the take read [1, 1].
	const rewrite = points.set('p', [2, 2])
	const e = await rejection(points.take('p'))
	await rewrite
	assert.ok(e instanceof ConflictError, String(e))
	assert.deepEqual(e.what, { bucket: 'points', key: 'p' })
	assert.deepEqual(await points.get('p'), [2, 2])
	assert.deepEqual(await points.take('p'), [2, 2])
})

for (const [marker, expected] of [
	['<!-- raw example -->', ['7n', '8']],
	['<!-- codec example -->', ['[3,-4]', 'true points bad']],
	['<!-- claim example -->', ['true false true\ntrue\ntrue']],
] as const) {
	test(`README: the ${marker.slice(5, -4)} runs as written`, () => {
		const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8')
		const block = readme.split(marker)[1].split('```js\n')[1].split('```')[0]
		// Inside the package, so that 'tinystore' names it.
		const file = fileURLToPath(new URL(`./readme-${marker.slice(5, 8)}-example.mjs`, import.meta.url))
		writeFileSync(file, block)
		const run = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 60_000 })
		rmSync(file, { force: true })
		assert.equal(run.status, 0, run.stderr)
		for (const line of expected) assert.ok(run.stdout.includes(line), `${line} not in ${run.stdout}`)
	})
}
