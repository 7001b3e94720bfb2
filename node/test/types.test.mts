// What the compiler refuses: misspelled durations and rates, values of the
// wrong type. Each `@ts-expect-error` fails the build (`tsc`) if the line
// below it compiles, so these are checked by `make test-node` before any
// test runs; the run-time half checks that plain JavaScript gets the same
// refusals as InvalidError.
import assert from 'node:assert/strict'
import { test } from 'node:test'

import { type Duration, InvalidError, type Rate } from 'tinystore'

import { rejection, testStore } from './helpers.mjs'

const good: Duration[] = ['15m', '30d', '1h30m', '2w3d4h5m6s7ms', '250ms', '1s', 90_000]
const goodRates: Rate[] = ['5/m', '100/5h', '300/7d', '100/s', '10/1h30m']

// @ts-expect-error a misspelled unit
const minutes: Duration = '15min'
// @ts-expect-error units must go from largest to smallest
const backwards: Duration = '30m1h'
// @ts-expect-error a unit given twice
const twice: Duration = '1h1h'
// @ts-expect-error no number
const bare: Duration = 'm'
// @ts-expect-error a fraction is not a count
const half: Duration = '1.5h'
// @ts-expect-error a rate needs a span
const noSpan: Rate = '5'
// @ts-expect-error a misspelled span
const perMinute: Rate = '5/min'

test('KV-18 durations and rates: what the types let through, the engine takes', async () => {
	await using store = await testStore()
	for (const ttl of good) store.bucket(`ttl-${good.indexOf(ttl)}`, { ttl })
	for (const d of good.filter((d) => typeof d === 'string')) store.clock.advance(d)
	assert.equal(goodRates.length, 5)
})

test('KV-18 durations: what the types refuse is InvalidError at run time, naming the input', async () => {
	await using store = await testStore()
	for (const bad of [minutes, backwards, twice, bare, half]) {
		assert.throws(
			() => store.bucket('sessions', { idle: bad }),
			(e: unknown) => e instanceof InvalidError && e.message.includes(JSON.stringify(bad)),
		)
	}
	assert.throws(() => store.clock.advance('16 minutes' as Duration), InvalidError)
	void noSpan
	void perMinute
})

test('KV-3 types: a bucket typed by its `type` option takes only values of that type', async () => {
	await using store = await testStore()
	const codes = store.bucket('codes', { ttl: '15m', type: 'int' })
	// @ts-expect-error an int bucket holds numbers
	const wrong = codes.set('k', 'forty-two')
	assert.ok((await rejection(wrong)) instanceof InvalidError)
	const n: number | undefined = await codes.get('k')
	assert.equal(n, undefined)
	const flags = store.bucket<boolean>('flags', { type: 'bool' })
	await flags.set('dark', true)
	// @ts-expect-error a boolean bucket cannot be typed 'int'
	store.bucket<boolean>('flags2', { type: 'int' })
	const sessions = store.bucket<{ userId: number }>('sessions', { idle: '30d' })
	// @ts-expect-error the value's shape is checked
	await sessions.set('t', { user: 1 })
})

test('KV-13 types: a quota answer names its windows, from the quota options', async () => {
	await using store = await testStore()
	const messages = store.quota('messages', { session: '100/5h', weekly: '300/7d' })
	const used = await messages.allow(7)
	const weekly: number = used.windows.weekly.left
	assert.equal(weekly, 299)
	// @ts-expect-error no such window
	assert.equal(used.windows.wekly, undefined)
	// @ts-expect-error a misspelled rate
	assert.throws(() => store.quota('plan', { daily: '100/dy' }), InvalidError)
	const retryAt: Date | undefined = used.retryAt
	assert.equal(retryAt, undefined)
})

test('KV-3 types: a bucket without a type is typed only for values that read back by their kind', async () => {
	await using store = await testStore()
	// Integers, objects, arrays and null read back by their row's kind: no type needed.
	const codes = store.bucket<number>('sign-in-codes', { ttl: '15m' })
	const sessions = store.bucket<{ userId: number; device: string }>('sessions', { idle: '30d' })
	const sends = store.once<{ id: number }>('sends', { keep: '1d' })
	const lists = store.bucket<number[] | null>('lists')
	await codes.set('k', 42)
	await sessions.under(7).set('t', { userId: 7, device: 'web' })
	await lists.set('l', [1, 2])
	const n: number | undefined = await codes.get('k')
	assert.equal(n, 42)
	assert.deepEqual(await sends.run('r', async () => ({ id: 41 })), { id: 41 })
	// A string, bytes, a boolean or a bigint is a bytes or integer row that reads back as something else: say its type.
	// @ts-expect-error strings need type 'string'
	store.bucket<string>('names')
	// @ts-expect-error booleans need type 'bool'
	store.bucket<boolean>('flags', { ttl: '1h' })
	// @ts-expect-error bigints need type 'bigint'
	store.bucket<bigint>('wide')
	// @ts-expect-error bytes need type 'bytes'
	store.bucket<Uint8Array>('blobs')
	// @ts-expect-error a union with a string needs its type too
	store.once<string | number>('answers')
	// @ts-expect-error 'auto' is not a type that reads strings back
	store.bucket<string>('names', { type: 'auto' })
	const names = store.bucket<string>('names', { type: 'string' })
	const jsonNames = store.bucket<string>('json-names', { type: 'json' })
	await names.set('a', 'Ada')
	await jsonNames.set('a', 'Ada')
	assert.equal(`${await names.get('a')} ${await jsonNames.get('a')}`, 'Ada Ada')
	assert.equal(store.bucket('anything').type, 'auto')
})
