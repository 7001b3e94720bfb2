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
