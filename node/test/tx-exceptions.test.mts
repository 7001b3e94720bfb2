// KV-16: an exception in the user's code inside a transaction, a run of
// once, a codec or a completion rolls back what it was part of, goes on to
// the caller, and leaves the store writing, for this process and another.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { test } from 'node:test'

import { type Codec, InvalidError, open, type Store } from 'tinystore'

import { freshDir, rejection, T0 } from './helpers.mjs'

class Boom extends Error {}

/** The package as a CommonJS path, for a child process to load. */
const packagePath = createRequire(import.meta.url).resolve('tinystore')

/**
 * A second process opens the store, writes and exits: it would fail with
 * `database is locked` if this process still held the write lock.
 */
function anotherProcessWrites(dir: string): void {
	const script = `
		const ts = require(${JSON.stringify(packagePath)})
		;(async () => {
			const s = await ts.open(${JSON.stringify(dir)})
			await s.bucket('from-child', { type: 'int' }).set('k', 7)
			await s.close()
			console.log('ok')
		})().catch((e) => { console.error(String(e)); process.exit(1) })`
	const out = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000 })
	assert.equal(out.status, 0, out.stderr)
	assert.equal(out.stdout.trim(), 'ok')
}

async function stillWrites(store: Store, dir: string): Promise<void> {
	const after = store.bucket('after', { type: 'int' })
	await after.set('plain', 3)
	await store.tx(async (tx) => {
		await tx.with(after).set('in-tx', 4)
	})
	assert.deepEqual([await after.get('plain'), await after.get('in-tx')], [3, 4])
	anotherProcessWrites(dir)
	assert.equal(await store.bucket('from-child', { type: 'int' }).get('k'), 7)
}

test('KV-16 an exception in tx rolls back, reaches the caller, and the store keeps writing', async () => {
	const dir = freshDir()
	await using store = await open(dir, { clock: T0 })
	const b = store.bucket('b', { type: 'int' })
	await b.set('kept', 1)
	const boom = new Boom('boom')
	const e = await rejection(
		store.tx(async (tx) => {
			await tx.with(b).set('inside', 2)
			await tx.with(b).delete('kept')
			throw boom
		}),
	)
	assert.equal(e, boom)
	assert.equal(await b.get('inside'), undefined)
	assert.equal(await b.get('kept'), 1)
	await stillWrites(store, dir)
})

test('KV-16 an exception in once.run keeps nothing, and the store keeps writing', async () => {
	const dir = freshDir()
	await using store = await open(dir, { clock: T0 })
	const sends = store.once('sends', { type: 'string' })
	const boom = new Boom('boom')
	const e = await rejection(
		sends.run('m-1', () => {
			throw boom
		}),
	)
	assert.equal(e, boom)
	assert.equal(await sends.get('m-1'), undefined)
	assert.equal(await sends.run('m-1', () => 'sent'), 'sent')
	await stillWrites(store, dir)
})

test('KV-16 a throwing codec inside tx rolls back, and the store keeps writing', async () => {
	const dir = freshDir()
	await using store = await open(dir, { clock: T0 })
	const plain = store.bucket('plain', { type: 'int' })
	const boomCodec: Codec<string> = {
		encode() {
			throw new Boom('encode')
		},
		decode() {
			throw new Boom('decode')
		},
	}
	const coded = store.bucket('coded', { codec: boomCodec })
	const e = await rejection(
		store.tx(async (tx) => {
			await tx.with(plain).set('inside', 1)
			await tx.with(coded).set('k', 'v')
		}),
	)
	assert.ok(e instanceof InvalidError || e instanceof Boom, String(e))
	assert.equal(await plain.get('inside'), undefined)
	await stillWrites(store, dir)
})

test('KV-16 a throwing completion leaves the store writing', async () => {
	const dir = freshDir()
	await using store = await open(dir, { clock: T0 })
	const b = store.bucket('b', { type: 'int' })
	let ran = false
	const failed = b
		.set('k', 1)
		.then(() => {
			ran = true
			throw new Boom('completion')
		})
		.catch((e: unknown) => e)
	assert.ok((await failed) instanceof Boom)
	assert.ok(ran)
	assert.equal(await b.get('k'), 1)
	await stillWrites(store, dir)
})
