// The memory budget: `open(dir, { memory })` bounds the memory
// the store's values take at once. Calls wait their turn while it is spent;
// inside a transaction a call takes what is free or is LimitError at once.
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'

import { InvalidError, LimitError, open } from 'tinystore'

import { freshDir, rejection, T0 } from './helpers.mjs'

const MiB = 2 ** 20

test('memory: a bad budget is InvalidError naming memory, and the store is not opened', async () => {
	const dir = freshDir()
	{
		await using store = await open(dir, { clock: T0 })
		await store.bucket('texts', { type: 'string' }).set('k', 'v')
	}
	const before = readFileSync(join(dir, 'kv.db'))
	const never = join(freshDir(), 'never')
	for (const memory of [MiB + 0.5, MiB - 1, 1000, 0, -MiB, Number.NaN, Number.POSITIVE_INFINITY, '32MiB', 32n * BigInt(MiB)]) {
		for (const at of [dir, never]) {
			const e = await rejection(open(at, { memory: memory as number }))
			assert.ok(e instanceof InvalidError, `${String(memory)}: ${e}`)
			assert.match(e.message, /memory/, String(memory))
		}
	}
	assert.deepEqual(readFileSync(join(dir, 'kv.db')), before, 'a refused open leaves the file as it was')
	assert.equal(existsSync(never), false, 'a refused open creates nothing')
	await using store = await open(dir, { clock: T0, memory: MiB })
	assert.equal(await store.bucket('texts', { type: 'string' }).get('k'), 'v')
})

test('memory: inside a transaction a call the budget cannot cover now is LimitError at once', async () => {
	await using store = await open(freshDir(), { clock: T0, memory: MiB })
	const blobs = store.bucket('blobs', { type: 'bytes' })
	await blobs.set('k', new Uint8Array([1]))
	let entered!: () => void
	const inside = new Promise<void>((r) => {
		entered = r
	})
	let release!: () => void
	const gate = new Promise<void>((r) => {
		release = r
	})
	const done = store.tx(async (tx) => {
		entered()
		await gate
		const e = await rejection(tx.with(blobs).get('k'))
		assert.ok(e instanceof LimitError, `${e}`)
		assert.match(e.message, /memory budget .* run the transaction again/)
		const w = await rejection(tx.with(blobs).set('small', new Uint8Array(700_000)))
		assert.ok(w instanceof LimitError, `a write whose value the budget cannot hold now: ${w}`)
	})
	await inside
	// A write from outside holds its 600 KB until it commits, which is after
	// the transaction: a call in there that waited would wait for itself.
	const outside = blobs.set('big', new Uint8Array(600_000).fill(2))
	release()
	await done
	await outside
	assert.equal((await blobs.get('big'))?.length, 600_000)
	assert.equal(await blobs.get('small'), undefined, 'the refused write wrote nothing')
	// With the outside write committed, the same read has its memory.
	assert.deepEqual(await store.tx((tx) => tx.with(blobs).get('k')), new Uint8Array([1]))
})

test('memory: under a small budget many concurrent writes and reads of large values all finish', async () => {
	await using store = await open(freshDir(), { clock: T0, memory: 2 * MiB })
	const blobs = store.bucket('blobs', { type: 'bytes' })
	const value = (i: number) => new Uint8Array(600_000).fill(i)
	// 32 writes of 600 KB are 19 MB against a budget of 2 MiB: they wait
	// their turn rather than fail.
	await Promise.all(Array.from({ length: 32 }, (_, i) => blobs.set(`k${i}`, value(i))))
	const got = await Promise.all(Array.from({ length: 32 }, (_, i) => blobs.get(`k${i}`)))
	got.forEach((v, i) => assert.deepEqual(v, value(i), `k${i}`))
	const page = await blobs.list({ limit: 4 })
	assert.equal(page.entries.length, 4)
})
