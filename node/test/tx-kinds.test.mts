// KV-16 across kinds: durable counters, quotas and once answers join
// `store.tx` with buckets, all or nothing; flushEvery counters, rate limits
// and once.run are InvalidError inside one, saying why; the store writes
// normally after each. And a view's bound of five seconds.
import assert from 'node:assert/strict'
import { test } from 'node:test'

import { InvalidError, LimitError, type Store } from 'tinystore'

import { rejection, testStore } from './helpers.mjs'

function kinds(store: Store) {
	return {
		codes: store.bucket('codes', { type: 'string' }),
		attempts: store.counters('attempts'),
		plan: store.quota('messages', { daily: '2/1d' }),
		sends: store.once('sends', { type: 'string' }),
	}
}

async function stillWrites(store: Store): Promise<void> {
	const k = kinds(store)
	await k.codes.set('after', 'x')
	await k.attempts.add('after')
	await k.plan.allow('after')
	assert.equal(await k.sends.run('after', () => 'y'), 'y')
}

test('KV-16 tx commits a take, a count, a quota use and a once answer together', async () => {
	await using store = await testStore()
	const k = kinds(store)
	await k.codes.set('c-1', 'ada')
	await k.sends.run('old', () => 'kept')
	await store.tx(async (tx) => {
		assert.equal(await tx.with(k.codes).take('c-1'), 'ada')
		assert.equal(await tx.with(k.attempts).add('ada'), 1)
		assert.equal(await tx.with(k.attempts).max('ada', 4), 4)
		assert.equal(await tx.with(k.attempts).get('ada'), 4)
		const used = await tx.with(k.plan).allow('ada')
		assert.ok(used.ok && used.left === 1)
		assert.equal((await tx.with(k.plan).peek('ada')).left, 1)
		assert.equal(await tx.with(k.sends).get('old'), 'kept')
		assert.equal(await tx.with(k.sends).delete('old'), true)
		// Others see nothing before the commit.
		assert.equal(await k.attempts.get('ada'), 0)
		assert.equal((await k.plan.peek('ada')).left, 2)
	})
	assert.equal(await k.codes.get('c-1'), undefined)
	assert.equal(await k.attempts.get('ada'), 4)
	assert.equal((await k.plan.peek('ada')).left, 1)
	assert.equal(await k.sends.get('old'), undefined)
	await stillWrites(store)
})

test('KV-16 a thrown error in tx rolls back every kind', async () => {
	await using store = await testStore()
	const k = kinds(store)
	await k.codes.set('c-1', 'ada')
	await k.attempts.add('ada', 5)
	await k.sends.run('old', () => 'kept')
	const declined = new Error('declined')
	const e = await rejection(
		store.tx(async (tx) => {
			await tx.with(k.codes).take('c-1')
			await tx.with(k.attempts).add('ada')
			await tx.with(k.attempts).delete('ada')
			await tx.with(k.plan).allow('ada', 2)
			await tx.with(k.plan).refund('ada')
			await tx.with(k.plan).reset('ada')
			await tx.with(k.sends).delete('old')
			throw declined
		}),
	)
	assert.equal(e, declined)
	assert.equal(await k.codes.get('c-1'), 'ada')
	assert.equal(await k.attempts.get('ada'), 5)
	assert.equal((await k.plan.peek('ada')).left, 2)
	assert.equal(await k.sends.get('old'), 'kept')
	await stillWrites(store)
})

test('KV-16 what keeps its state in memory is InvalidError inside tx, saying why', async () => {
	await using store = await testStore()
	const k = kinds(store)
	const hits = store.counters('hits', { flushEvery: '1s' })
	const logins = store.rateLimit('logins', { rate: '5/m' })
	const e = await rejection(
		store.tx(async (tx) => {
			await tx.with(k.codes).set('inside', 'x')
			assert.throws(
				() => tx.with(hits),
				(err: Error & { what?: unknown }) =>
					err instanceof InvalidError && /flush_every/.test(err.message) && (err.what as { bucket?: string }).bucket === 'hits',
			)
			assert.throws(
				() => tx.with(logins),
				(err: Error) => err instanceof InvalidError && /rate limit keeps its state in memory/.test(err.message),
			)
			await k.sends.run('k', () => 'x')
		}),
	)
	assert.ok(e instanceof InvalidError && /once\.run cannot run inside a transaction/.test(e.message), String(e))
	assert.equal(await k.codes.get('inside'), undefined)
	assert.equal(await k.sends.get('k'), undefined)
	await hits.add('k')
	assert.ok((await logins.allow('k')).ok)
	await stillWrites(store)
})

test('KV-16 view: a view holds its snapshot at most five seconds, then reads are LimitError', async () => {
	await using store = await testStore()
	const b = store.bucket('b', { type: 'int' })
	await b.set('k', 1)
	const e = await rejection(
		store.view(async (v) => {
			assert.equal(await v.with(b).get('k'), 1)
			store.clock.advance('5001ms')
			await v.with(b).get('k')
		}),
	)
	assert.ok(e instanceof LimitError && /open longer than 5s/.test(e.message), String(e))
	assert.equal(await store.view(async (v) => v.with(b).get('k')), 1)
	await b.set('k', 2)
})
