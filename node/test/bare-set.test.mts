// A bucket's set without options, the hot write: streamed to the writer as it
// is made (a store without a memory budget), and under Bun made through the
// addon's C `set` when it can (bindings/node/src/fast_writes.rs). What a user
// relies on is that it writes what the method writes, in order, as one group,
// and fails as the method fails.
import assert from 'node:assert/strict'
import { test } from 'node:test'

import { ClosedError, open } from 'tinystore'

import { freshDir, rejection, T0, testStore } from './helpers.mjs'

test('KV-15 durability: 64 string sets in one turn commit as one group and read back exactly', async () => {
	await using store = await testStore()
	const b = store.bucket('texts', { type: 'string' })
	await b.set('warm', '')
	const before = store.groupStats()
	// Keys and values of every width UTF-8 has, an empty value, and a value
	// longer than the C call's buffer (it goes through napi, in the same turn).
	const value = (i: number) => (i === 7 ? '' : i === 9 ? 'é'.repeat(900) : `v${i}-ü€😀`)
	await Promise.all(Array.from({ length: 64 }, (_, i) => b.set(`k${i}-ß€😀`, value(i))))
	const after = store.groupStats()
	assert.equal(after.writes - before.writes, 64)
	assert.ok(after.groups - before.groups <= 2, `64 sets took ${after.groups - before.groups} groups`)
	for (let i = 0; i < 64; i++) assert.equal(await b.get(`k${i}-ß€😀`), value(i))
})

test('KV-3 values: JSON sets in one turn read back as written', async () => {
	await using store = await testStore()
	const b = store.bucket<{ n: number; s: string }>('docs', { type: 'json' })
	await Promise.all(Array.from({ length: 64 }, (_, i) => b.set(`d${i}`, { n: i, s: `ß${i}` })))
	for (let i = 0; i < 64; i++) assert.deepEqual(await b.get(`d${i}`), { n: i, s: `ß${i}` })
})

test('KV-4 basics: sets of one key in one turn, with and without options, land in the order made', async () => {
	await using store = await testStore()
	const b = store.bucket('order', { type: 'string' })
	const writes = [b.set('k', 'a'), b.set('k', 'b', { ttl: '1h' }), b.set('k', 'c'), b.set('k', 'd'), b.set('j', 'x', { ttl: '1h' })]
	writes.push(b.set('j', 'y'))
	await Promise.all(writes)
	assert.equal(await b.get('k'), 'd')
	assert.equal(await b.get('j'), 'y')
})

test('KV-19 files: a set on a closed store is ClosedError while another store has sets in flight, which are written', async () => {
	await using live = await testStore()
	const closed = await open(freshDir(), { clock: T0 })
	const gone = closed.bucket('x', { type: 'string' })
	await closed.close()
	const b = live.bucket('x', { type: 'string' })
	const first = b.set('a', '1')
	const refused = gone.set('k', 'v')
	const second = b.set('b', '2')
	const e = await rejection(refused)
	assert.ok(e instanceof ClosedError, String(e))
	await Promise.all([first, second])
	assert.equal(await b.get('a'), '1')
	assert.equal(await b.get('b'), '2')
})

test('memory: under a budget, 64 string sets in one turn still commit together', async () => {
	await using store = await open(freshDir(), { clock: T0, memory: 8 * 1024 * 1024 })
	const b = store.bucket('texts', { type: 'string' })
	await b.set('warm', '')
	const before = store.groupStats()
	await Promise.all(Array.from({ length: 64 }, (_, i) => b.set(`k${i}`, `v${i}`)))
	const after = store.groupStats()
	assert.equal(after.writes - before.writes, 64)
	assert.ok(after.groups - before.groups <= 2, `64 sets took ${after.groups - before.groups} groups`)
	assert.equal(await b.get('k63'), 'v63')
})
