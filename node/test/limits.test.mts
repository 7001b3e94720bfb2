// Rate limits, quotas, counters and once: KV-11 to KV-14 as the TypeScript API keeps them.
import assert from 'node:assert/strict'
import { test } from 'node:test'

import { InvalidError, LimitError, open } from 'tinystore'

import { freshDir, rejection, signal, T0, testStore } from './helpers.mjs'

test('KV-11 once: 64 runs of one key at once run fn once and all get its answer', async () => {
	await using store = await testStore()
	const sends = store.once<{ id: number }>('sends')
	let runs = 0
	const { promise: running, resolve: started } = signal()
	const { promise: gate, resolve: release } = signal()
	// Each run asks for its key before its first await, so all 64 have asked
	// by the time the first one's fn runs; that fn holds the key until release.
	const all = Promise.all(
		Array.from({ length: 64 }, () =>
			sends.run('k', async () => {
				runs++
				started()
				await gate
				return { id: 41 }
			}),
		),
	)
	await running
	release()
	const answers = await all
	assert.equal(runs, 1)
	assert.ok(answers.every((a) => a.id === 41))
	assert.deepEqual(await sends.get('k'), { id: 41 })
})

test('KV-11 once: a waiter runs its own when the first run fails; get and delete forget an answer', async () => {
	await using store = await testStore()
	const sends = store.once('sends', { type: 'int' })
	let calls = 0
	const { promise: running, resolve: started } = signal()
	const { promise: gate, resolve: release } = signal()
	const first = sends.run('k', async () => {
		calls++
		started()
		await gate
		throw new Error('the database was down')
	})
	const second = sends.run('k', async () => {
		calls++
		return 7
	})
	await running // the first runs; the second asked after it and waits
	assert.equal(calls, 1)
	release()
	await assert.rejects(first, /database was down/)
	assert.equal(await second, 7)
	assert.equal(calls, 2)
	assert.equal(await sends.run('k', () => 8), 7)
	assert.equal(await sends.delete('k'), true)
	assert.equal(await sends.get('k'), undefined)
	assert.equal(await sends.run('k', () => 9), 9)
})

test('KV-11 once: a run of a key inside its own run is InvalidError, not a deadlock', async () => {
	await using store = await testStore()
	const sends = store.once<number>('sends')
	const e = await rejection(sends.run('k', () => sends.run('k', () => 1)))
	assert.ok(e instanceof InvalidError)
	assert.deepEqual((e as InvalidError).what, { bucket: 'sends', key: 'k' })
	assert.equal(await sends.run('other', () => sends.run('inner', () => 2)), 2, 'other keys nest')
	assert.equal(await sends.run('k', () => 3), 3, 'the failed run kept nothing')
})

test('KV-11 once: an answer is kept for keep, then the key runs again', async () => {
	await using store = await testStore()
	const sends = store.once('sends', { keep: '1h', type: 'string' })
	assert.equal(await sends.under('u1').run('k', () => 'first'), 'first')
	assert.equal(await sends.under('u2').run('k', () => 'other branch'), 'other branch')
	store.clock.advance('59m')
	assert.equal(await sends.under('u1').run('k', () => 'second'), 'first')
	store.clock.advance('2m')
	assert.equal(await sends.under('u1').run('k', () => 'third'), 'third')
	// What JSON cannot write is InvalidError, and nothing is kept.
	assert.ok((await rejection(sends.run('bad', () => undefined as unknown as string))) instanceof InvalidError)
	assert.equal(await sends.run('bad', () => 'ok'), 'ok')
})

test('KV-12 rate limit: burst at once, then the rate; peek counts nothing; reset forgets', async () => {
	await using store = await testStore()
	const limit = store.rateLimit('api', { rate: '10/s', burst: 3 })
	assert.deepEqual(await limit.peek('ip'), { ok: true, left: 3, retryAt: undefined, windows: {} }, 'three would pass now')
	for (const left of [2, 1, 0]) assert.deepEqual(await limit.allow('ip'), { ok: true, left, retryAt: undefined, windows: {} })
	const refused = await limit.allow('ip')
	assert.equal(refused.ok, false)
	assert.deepEqual(refused.retryAt, new Date(T0.getTime() + 100))
	assert.ok((await rejection(limit.allow('ip', 4))) instanceof InvalidError, 'more than the burst')
	const negative = await rejection(limit.allow('ip', -1))
	assert.ok(negative instanceof InvalidError)
	assert.equal(negative.message, 'a count of uses is -1: it cannot be negative (bucket api, key ip)')
	store.clock.advance('100ms')
	assert.equal((await limit.allow('ip')).ok, true)
	await limit.reset('ip')
	assert.equal((await limit.allow('ip', 3)).ok, true)
	assert.equal((await limit.under('tenant').allow('ip', 3)).ok, true, 'a branch counts apart')
})

test('KV-12 rate limit: a refusal answers what would still pass and when the request would; keys of every kind count apart', async () => {
	await using store = await testStore()
	const limit = store.rateLimit('api', { rate: '10/s', burst: 3 })
	const retryAt = new Date(T0.getTime() + 100)
	assert.deepEqual(await limit.allow('ip', 2), { ok: true, left: 1, retryAt: undefined, windows: {} })
	assert.deepEqual(await limit.allow('ip', 2), { ok: false, left: 1, retryAt, windows: {} }, 'one would still pass')
	assert.deepEqual(await limit.allow('ip'), { ok: true, left: 0, retryAt: undefined, windows: {} })
	assert.deepEqual(await limit.allow('ip'), { ok: false, left: 0, retryAt, windows: {} })
	for (const key of [7, 8n, new Uint8Array([1, 2]), 'k'.repeat(300)]) {
		assert.deepEqual(await limit.allow(key, 3), { ok: true, left: 0, retryAt: undefined, windows: {} }, String(key))
		assert.equal((await limit.allow(key)).ok, false, String(key))
	}
	assert.equal((await limit.allow('7')).ok, false, 'the number 7 is the key "7"')
	const e = await rejection(limit.allow(null as never))
	assert.ok(e instanceof InvalidError)
	assert.equal((e as InvalidError).what.bucket, 'api')
})

test('KV-12 rate limit: the state survives a reopen; a bad rate is InvalidError naming it', async () => {
	const dir = freshDir()
	{
		await using store = await open(dir, { clock: T0 })
		const limit = store.rateLimit('guesses', { rate: '5/m' })
		for (let i = 0; i < 5; i++) assert.equal((await limit.allow('ip')).ok, true)
	}
	{
		await using store = await open(dir, { clock: T0 })
		assert.equal((await store.rateLimit('guesses', { rate: '5/m' }).allow('ip')).ok, false)
		assert.throws(
			() => store.rateLimit('other', { rate: '5/min' as never }),
			(e: unknown) => e instanceof InvalidError && e.message.includes('5/min'),
		)
		// A rate limit given no rate is refused in the engine's text.
		assert.throws(
			() => store.rateLimit('r0', {} as never),
			(e: unknown) =>
				e instanceof InvalidError &&
				e.message === 'a rate limit needs a rate: how many requests per span (bucket r0)' &&
				e.what.bucket === 'r0',
		)
		// A burst that is no whole number is named as the burst; which whole
		// numbers a rate takes is the engine's to say.
		for (const [burst, text] of [
			[1.5, 'burst must be a whole number from 0 to 2^53-1, not 1.5'],
			[0, 'a burst of 0 lets nothing through'],
		] as const) {
			assert.throws(
				() => store.rateLimit('bursty', { rate: '5/m', burst }),
				(e: unknown) => e instanceof InvalidError && e.message === `${text} (bucket bursty)` && e.what.bucket === 'bursty',
			)
		}
	}
})

test('KV-13 quota: racing allows pass exactly the limit; n over the smallest limit and bad windows are InvalidError', async () => {
	await using store = await testStore()
	const q = store.quota('plan', { hourly: '10/h', daily: '50/d' })
	const answers = await Promise.all(Array.from({ length: 64 }, () => q.allow('user')))
	assert.equal(answers.filter((a) => a.ok).length, 10)
	assert.equal((await q.peek('user')).windows.hourly.used, 10)
	assert.ok((await rejection(q.allow('user', 11))) instanceof InvalidError)
	for (const call of [() => q.allow('user', -1), () => q.refund('user', -1)]) {
		const e = await rejection(call())
		assert.ok(e instanceof InvalidError)
		assert.equal(e.message, 'a count of uses is -1: it cannot be negative (bucket plan, key user)')
	}
	assert.throws(() => store.quota('none', {}), InvalidError)
	assert.throws(() => store.quota('caps', { Weekly: '3/7d' }), InvalidError)
	assert.throws(
		() => store.quota('badrate', { weekly: '3/7x' as never }),
		(e: unknown) => e instanceof InvalidError && e.message.includes('weekly'),
	)
	const nine = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`w${i}`, '1/h' as const]))
	assert.throws(() => store.quota('nine', nine), InvalidError)
	// refund never goes below zero; reset forgets the key.
	await q.refund('user', 10)
	await q.refund('user', 10)
	assert.equal((await q.peek('user')).windows.hourly.used, 0)
	await q.allow('user', 5)
	await q.reset('user')
	assert.equal((await q.peek('user')).windows.daily.used, 0)
})

test('KV-14 counters: add returns the new value, a missing counter is 0, max keeps the larger, racing adds count exactly', async () => {
	await using store = await testStore()
	const c = store.counters('attempts', { ttl: '1h' })
	assert.equal(await c.get('a'), 0)
	assert.equal(await c.add('a'), 1)
	assert.equal(await c.add('a', 5), 6)
	assert.equal(await c.add('a', -2), 4)
	assert.equal(await c.max('a', 3), 4)
	assert.equal(await c.max('a', 9), 9)
	await Promise.all(Array.from({ length: 64 }, () => c.add('race')))
	assert.equal(await c.get('race'), 64)
	assert.equal(await c.delete('race'), true)
	assert.equal(await c.delete('race'), false)
	store.clock.advance('30m')
	await c.add('a')
	store.clock.advance('31m')
	assert.equal(await c.get('a'), 0, 'the ttl started at the first add and did not slide')
	assert.equal(await c.under('u').add('a'), 1)
	await c.clear()
	assert.equal(await c.under('u').get('a'), 0)
	assert.ok((await rejection(c.add('a', 1.5))) instanceof InvalidError)
})

test('KV-14 counters: a number counter past the safe integers is LimitError naming its owners and key, and the change is kept', async () => {
	await using store = await testStore()
	const views = store.counters('views').under('site', 'page')
	await views.add('k', Number.MAX_SAFE_INTEGER)
	const e = await rejection(views.add('k'))
	assert.ok(e instanceof LimitError, String(e))
	assert.deepEqual(e.what, { bucket: 'views', key: 'site/page/k' })
	assert.match(e.message, /the change is kept/)
	const read = await rejection(views.get('k'))
	assert.ok(read instanceof LimitError && read.what.key === 'site/page/k', String(read))
	assert.equal(await store.counters('views', { type: 'bigint' }).under('site', 'page').get('k'), 2n ** 53n)
})

test('KV-14 counters: flushEvery counters live in memory and reach the file by maintain and close', async () => {
	const dir = freshDir()
	{
		await using store = await open(dir, { clock: T0 })
		const views = store.counters('views', { flushEvery: '5s' })
		await Promise.all(Array.from({ length: 10 }, () => views.add('page')))
		assert.equal(await views.get('page'), 10)
		const m = await store.maintain()
		assert.ok(m.flushed >= 1)
		await views.add('page', 5)
	}
	{
		await using store = await open(dir, { clock: T0 })
		assert.equal(await store.counters('views', { flushEvery: '5s' }).get('page'), 15)
	}
})
