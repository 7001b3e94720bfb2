// `open(dir, { mmapSize })`: how much of kv.db each reader maps
// (tinystore::Options::mmap_size). 0 turns mapped reads off, for a network
// filesystem or wherever an error beats a SIGBUS.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'

import { InvalidError, open } from 'tinystore'

import { freshDir, rejection, T0 } from './helpers.mjs'

test('mmapSize: a store opened with 0 (no mapped reads) writes, reads, lists and reopens', async () => {
	const dir = freshDir()
	{
		await using store = await open(dir, { clock: T0, mmapSize: 0 })
		const b = store.bucket('texts', { type: 'string' })
		await Promise.all(Array.from({ length: 2000 }, (_, i) => b.set(`k${i}`, `v${i}`.padEnd(200, '.'))))
		assert.equal(await b.get('k1999'), 'v1999'.padEnd(200, '.'))
		assert.equal((await b.list({ limit: 1000 })).entries.length, 1000)
	}
	await using again = await open(dir, { clock: T0, mmapSize: 4096 })
	assert.equal(await again.bucket('texts', { type: 'string' }).get('k0'), 'v0'.padEnd(200, '.'))
})

test('KV-18 mmapSize: a negative, fractional or non-number size is InvalidError naming mmapSize, and nothing is created', async () => {
	for (const mmapSize of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '1GiB', 1n << 30n, null]) {
		const dir = freshDir()
		const e = await rejection(open(dir, { clock: T0, mmapSize: mmapSize as number }))
		assert.ok(e instanceof InvalidError, `${String(mmapSize)}: ${e}`)
		assert.match(e.message, /mmapSize/, String(mmapSize))
		assert.equal(existsSync(join(dir, 'kv.db')), false, `${String(mmapSize)} created kv.db`)
	}
})

test('KV-18 mmapSize and memory: a whole number below 0 or past 2^64-1 is the core\'s one text', async () => {
	for (const [option, n, shown] of [['mmapSize', -1, '-1'], ['memory', -1, '-1'], ['mmapSize', 2 ** 64, '18446744073709551616']] as const) {
		const dir = freshDir()
		const e = await rejection(open(dir, { clock: T0, [option]: n }))
		assert.ok(e instanceof InvalidError, `${option} ${n}: ${e}`)
		assert.equal(e.message, `the store option ${option} is ${shown}: a size in bytes is a whole number from 0 to 2^64-1; nothing was opened`)
		assert.equal(existsSync(join(dir, 'kv.db')), false, `${option} ${n} created kv.db`)
	}
})
