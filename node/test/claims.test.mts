// KV-10 claims: `createEntry` answers the entry it wrote or found, and `set`
// the version it wrote, on the store and in a transaction; the version
// answered is the one `ifVersion` takes.
import assert from 'node:assert/strict'
import { test } from 'node:test'

import { ConflictError, type Created, type Entry, InvalidError } from 'tinystore'

import { rejection, T0, testStore } from './helpers.mjs'

interface Claim {
	worker: string
}

const minutes = (n: number) => new Date(T0.getTime() + n * 60_000)

test('KV-10 createEntry answers the entry written, then the live one found', async () => {
	await using store = await testStore()
	const seen = store.bucket<Claim>('events')
	const first: Created<Claim> = await seen.createEntry('evt', { worker: 'a' }, { ttl: '10m' })
	assert.equal(first.written, true)
	assert.deepEqual(first.entry, { key: 'evt', value: { worker: 'a' }, version: first.entry.version, expiresAt: minutes(10) })
	assert.deepEqual(await seen.entry('evt'), first.entry)

	const again = await seen.createEntry('evt', { worker: 'b' }, { ttl: '1h' })
	assert.equal(again.written, false)
	assert.deepEqual(again.entry, first.entry, 'the live entry, its value decoded')

	const kept: string = await seen.set('evt', { worker: 'a' }, { ifVersion: first.entry.version, ttl: '7d' })
	assert.notEqual(kept, first.entry.version)
	const stale = await rejection(seen.set('evt', { worker: 'b' }, { ifVersion: first.entry.version }))
	assert.ok(stale instanceof ConflictError, String(stale))
	assert.deepEqual(stale.what, { bucket: 'events', key: 'evt' })
	const read: Entry<Claim> | undefined = await seen.entry('evt')
	assert.equal(read?.version, kept)
	assert.deepEqual(read?.value, { worker: 'a' })
})

test('KV-10 every set answers the version entry reads, with options or without', async () => {
	await using store = await testStore()
	// Many sets without options in one turn go through the bare path together
	// (string keys and values, under Bun, through its C set as well).
	const b = store.bucket('names', { type: 'string' })
	const versions = await Promise.all(Array.from({ length: 50 }, (_, i) => b.set(`k${i}`, `v${i}`)))
	assert.equal(new Set(versions).size, 50, 'a version never repeats')
	for (let i = 0; i < 50; i++) assert.equal((await b.entry(`k${i}`))?.version, versions[i])
	const withTtl = await b.set('k0', 'ttl', { ttl: '1h' })
	assert.equal((await b.entry('k0'))?.version, withTtl)
	await b.set('k0', 'bound', { ifVersion: withTtl })
	assert.ok((await rejection(b.set('k0', 'stale', { ifVersion: withTtl }))) instanceof ConflictError)
})

test('KV-10 createEntry claims an expired key and writes nothing for a bad value', async () => {
	await using store = await testStore()
	const seen = store.bucket('events', { type: 'int' })
	const old = await seen.createEntry('evt', 1, { ttl: '1m' })
	store.clock.advance('2m')
	const fresh = await seen.createEntry('evt', 2)
	assert.deepEqual([fresh.written, fresh.entry.value, fresh.entry.expiresAt], [true, 2, undefined])
	assert.notEqual(fresh.entry.version, old.entry.version)
	const bad = await rejection(seen.createEntry('other', 'x' as unknown as number))
	assert.ok(bad instanceof InvalidError, String(bad))
	assert.equal(await seen.entry('other'), undefined)
})

test('KV-10 createEntry and set inside a transaction answer as on the store', async () => {
	await using store = await testStore()
	const seen = store.bucket<Claim>('events')
	await seen.set('evt', { worker: 'a' })
	const answers = await store.tx(async (tx) => {
		const found = await tx.with(seen).createEntry('evt', { worker: 'b' })
		const written = await tx.with(seen).createEntry('new', { worker: 'c' }, { ttl: '1h' })
		const version = await tx.with(seen).set('new', { worker: 'd' }, { ifVersion: written.entry.version })
		return { found, written, version }
	})
	assert.equal(answers.found.written, false)
	assert.deepEqual(answers.found.entry.value, { worker: 'a' })
	assert.deepEqual([answers.written.written, answers.written.entry.expiresAt], [true, minutes(60)])
	const read = await seen.entry('new')
	assert.deepEqual([read?.value, read?.version], [{ worker: 'd' }, answers.version])
})
