// Transactions and views (KV-16): `store.tx` writes several buckets all or
// nothing, `store.view` reads one snapshot and has no writes, and a handle
// used after its transaction or view is ClosedError.
import assert from 'node:assert/strict'
import { test } from 'node:test'

import {
	ClosedError,
	ConflictError,
	CorruptError,
	InvalidError,
	OutcomeUnknownError,
	type Tx,
	type TxBucket,
	type View,
	type ViewBucket,
} from 'tinystore'

// The package's own tests reach the addon behind a store (not exported).
import { bucketParts } from '../dist/cjs/bucket.js'
import { nativeOf } from '../dist/cjs/store.js'

import { rejection, testStore } from './helpers.mjs'

/** Lets every other task of the event loop run: what a transaction awaiting I/O does. */
const elsewhere = () => new Promise<void>((resolve) => setImmediate(resolve))

test('KV-16 tx: a thrown error rolls back the writes to both buckets, and tx rejects with that error', async () => {
	await using store = await testStore()
	const stock = store.bucket('stock', { type: 'int' })
	const orders = store.bucket<{ item: string }>('orders')
	await stock.set('apples', 3)
	const failure = new Error('the payment was declined')
	const e = await rejection(
		store.tx(async (tx) => {
			await tx.with(stock).set('apples', 2)
			await tx.with(orders).under('ann').set('o-1', { item: 'apples' })
			await elsewhere()
			throw failure
		}),
	)
	assert.equal(e, failure)
	assert.equal(await stock.get('apples'), 3)
	assert.equal(await orders.under('ann').get('o-1'), undefined)
	// A function that throws before any await rolls back the same way.
	const sync = await rejection(
		store.tx((tx) => {
			void tx.with(stock).set('apples', 0)
			throw new RangeError('no')
		}),
	)
	assert.ok(sync instanceof RangeError)
	assert.equal(await stock.get('apples'), 3)
})

test('KV-16 tx: resolves with the function’s answer once both buckets are written', async () => {
	await using store = await testStore()
	const stock = store.bucket('stock', { type: 'int' })
	const orders = store.bucket<{ item: string }>('orders')
	await stock.set('apples', 3)
	const id: string = await store.tx(async (tx) => {
		const left = (await tx.with(stock).get('apples')) ?? 0
		await tx.with(stock).set('apples', left - 1)
		await tx.with(orders).under('ann').set('o-1', { item: 'apples' })
		return 'o-1'
	})
	assert.equal(id, 'o-1')
	assert.equal(await stock.get('apples'), 2)
	assert.deepEqual(await orders.under('ann').get('o-1'), { item: 'apples' })
})

test('KV-16 tx: a transaction reads its own writes, and others see none of them before the commit', async () => {
	await using store = await testStore()
	const codes = store.bucket('codes', { type: 'int' })
	const sessions = store.bucket<{ userId: number }>('sessions')
	await codes.set('c-1', 7)
	await store.tx(async (tx) => {
		const c = tx.with(codes)
		const s = tx.with(sessions).under(7)
		assert.equal(await c.take('c-1'), 7)
		assert.equal(await c.has('c-1'), false, 'its own take')
		assert.equal(await codes.get('c-1'), 7, 'outside, the code is still there')
		assert.equal(await s.create('t-1', { userId: 7 }), true)
		assert.equal(await s.create('t-1', { userId: 8 }), false, 'its own create')
		assert.deepEqual(await s.get('t-1'), { userId: 7 })
		const entry = await s.entry('t-1')
		assert.deepEqual(entry?.value, { userId: 7 })
		await s.set('t-2', { userId: 7 })
		assert.deepEqual(
			(await s.list()).entries.map((e) => e.key),
			['t-1', 't-2'],
		)
		const all = []
		for await (const e of s.all()) all.push(e.key)
		assert.deepEqual(all, ['t-1', 't-2'])
		assert.equal(await s.delete('t-2'), true)
		assert.equal(await s.expire('t-1', '1h'), true)
		assert.equal(await sessions.under(7).get('t-1'), undefined, 'outside, nothing before the commit')
	})
	assert.equal(await codes.get('c-1'), undefined)
	assert.deepEqual(await sessions.under(7).get('t-1'), { userId: 7 })
	assert.equal(await sessions.under(7).has('t-2'), false)
	const expiresAt = (await sessions.under(7).entry('t-1'))?.expiresAt
	assert.equal(expiresAt?.getTime(), store.clock.now().getTime() + 3_600_000)
})

test('KV-16 tx: of two concurrent transactions taking the last item, exactly one gets it', async () => {
	await using store = await testStore()
	const tickets = store.bucket('tickets', { type: 'string' })
	const seats = store.bucket('seats', { type: 'int' })
	const orders = store.bucket('orders', { type: 'string' })
	await tickets.set('last', 'seat-1A')
	await seats.set('left', 1)
	const buy = (buyer: string) =>
		store.tx(async (tx) => {
			const left = (await tx.with(seats).get('left')) ?? 0
			const seat = await tx.with(tickets).take('last')
			// The other transaction, and the event loop, get every chance to run here.
			await elsewhere()
			if (seat === undefined || left < 1) return undefined
			await tx.with(seats).set('left', left - 1)
			await tx.with(orders).set(buyer, seat)
			return seat
		})
	const got = await Promise.all([buy('ann'), buy('bob')])
	assert.deepEqual(
		got.filter((s) => s !== undefined),
		['seat-1A'],
	)
	assert.equal(await seats.get('left'), 0)
	assert.equal((await orders.list()).entries.length, 1)
	assert.equal(await tickets.get('last'), undefined)
})

test('KV-16 tx: an error of one call changes nothing and leaves the transaction usable', async () => {
	await using store = await testStore()
	const b = store.bucket('b', { type: 'int' })
	await b.set('k', 1)
	const v1 = (await b.entry('k'))?.version
	assert.ok(v1 !== undefined)
	await b.set('k', 2)
	await store.tx(async (tx) => {
		const t = tx.with(b)
		const conflict = await rejection(t.delete('k', { ifVersion: v1 }))
		assert.ok(conflict instanceof ConflictError)
		assert.deepEqual(conflict.what, { bucket: 'b', key: 'k' })
		const bad = await rejection(t.set('k', 'two' as never))
		assert.ok(bad instanceof InvalidError)
		assert.equal((bad as InvalidError).what.bucket, 'b')
		assert.ok((await rejection(t.set('', 1))) instanceof InvalidError)
		assert.ok((await rejection(t.take('absent', { ifVersion: v1 }))) instanceof ConflictError)
		await t.set('j', 5)
	})
	assert.equal(await b.get('k'), 2)
	assert.equal(await b.get('j'), 5)
})

test('KV-16 tx: take of a value that does not read is CorruptError and the value stays', async () => {
	await using store = await testStore()
	await store.bucket('codes', { type: 'string' }).set('c', 'not a number')
	const asInt = store.bucket('codes', { type: 'int' })
	await store.tx(async (tx) => {
		assert.ok((await rejection(tx.with(asInt).take('c'))) instanceof CorruptError)
	})
	assert.equal(await store.bucket('codes', { type: 'string' }).get('c'), 'not a number')
})

test('KV-16 tx: inside the function, a write of the store outside the transaction is InvalidError, not a wait', async () => {
	await using store = await testStore()
	await using other = await testStore()
	const b = store.bucket('b', { type: 'int' })
	const counters = store.counters('hits')
	const elsewhereStore = other.bucket('b', { type: 'int' })
	await store.tx(async (tx) => {
		const e = await rejection(b.set('k', 1))
		assert.ok(e instanceof InvalidError)
		assert.match(e.message, /inside a transaction through a handle outside it.*tx\.with/)
		assert.ok((await rejection(counters.add('k'))) instanceof InvalidError)
		assert.ok((await rejection(store.tx(async () => undefined))) instanceof InvalidError)
		await elsewhere()
		assert.ok((await rejection(b.under('x').delete('k'))) instanceof InvalidError, 'after an await too')
		// Another store's writer is free, and the transaction's own handles write.
		await elsewhereStore.set('k', 1)
		await tx.with(b).set('k', 2)
	})
	// Other work of the event loop writes meanwhile: it waits for the commit.
	let tx1Done = false
	const t = store.tx(async (tx) => {
		await elsewhere()
		await tx.with(b).set('k', 3)
		tx1Done = true
	})
	await b.set('k', 4)
	assert.equal(tx1Done, true)
	await t
	assert.equal(await b.get('k'), 4)
	assert.equal(await counters.add('k'), 1)
})

test('KV-16 tx: a commit that fails rejects with OutcomeUnknownError', async () => {
	await using store = await testStore()
	const b = store.bucket('b', { type: 'int' })
	nativeOf.get(store)?.failNextCommitForTests()
	const e = await rejection(store.tx(async (tx) => tx.with(b).set('k', 1)))
	assert.ok(e instanceof OutcomeUnknownError)
	await store.tx(async (tx) => tx.with(b).set('k', 2))
	assert.equal(await b.get('k'), 2)
})

test('KV-16 tx and view: bad arguments are InvalidError, and a closed store is ClosedError', async () => {
	const store = await testStore()
	await using other = await testStore()
	const b = store.bucket('b')
	const noTxFn = await rejection(store.tx(undefined as never))
	assert.ok(noTxFn instanceof InvalidError)
	assert.match(noTxFn.message, /^a transaction needs a function to call, not undefined undefined/)
	const noViewFn = await rejection(store.view('fn' as never))
	assert.ok(noViewFn instanceof InvalidError)
	assert.match(noViewFn.message, /^a view needs a function to call, not string fn/)
	// A handle of another store: the engine's one refusal, at with, for every kind that joins.
	const otherStore = { message: /^this handle is of another store: a transaction or a view takes the handles of its own store/ }
	await store.tx((tx) => {
		assert.throws(() => tx.with({} as never), InvalidError)
		for (const handle of [other.bucket('b'), other.counters('c'), other.quota('q', { daily: '5/d' }), other.once('o')]) {
			assert.throws(() => tx.with(handle as never), { name: 'InvalidError', ...otherStore })
		}
	})
	await store.view((v) => {
		assert.throws(() => v.with(store.counters('c') as never), InvalidError)
		assert.throws(() => v.with(other.bucket('b')), { name: 'InvalidError', ...otherStore })
	})
	await store.close()
	assert.ok((await rejection(store.tx(async (tx) => tx.with(b).set('k', 1)))) instanceof ClosedError)
	assert.ok((await rejection(store.view(async (v) => v.with(b).get('k')))) instanceof ClosedError)
})

test('KV-16 view: reads one snapshot while a write commits in between', async () => {
	await using store = await testStore()
	const accounts = store.bucket('accounts', { type: 'int' })
	await accounts.set('ann', 100)
	await accounts.set('bob', 0)
	const seen = await store.view(async (v) => {
		const a = v.with(accounts)
		const before = await a.get('ann')
		// A transfer commits while the view reads, and a new account opens.
		await store.tx(async (tx) => {
			await tx.with(accounts).set('ann', 50)
			await tx.with(accounts).set('bob', 50)
		})
		await accounts.set('cat', 10)
		assert.equal(await accounts.get('ann'), 50, 'outside the view, the transfer is there')
		const page = await a.list()
		return {
			before,
			ann: await a.get('ann'),
			bob: (await a.entry('bob'))?.value,
			cat: await a.has('cat'),
			total: page.entries.reduce((sum, e) => sum + e.value, 0),
		}
	})
	assert.deepEqual(seen, { before: 100, ann: 100, bob: 0, cat: false, total: 100 })
	assert.equal(await accounts.get('ann'), 50)
	assert.equal(await store.view((v) => v.with(accounts).get('cat')), 10)
})

test('KV-16 view: the handle has no writes; from plain JavaScript a write is InvalidError', async () => {
	await using store = await testStore()
	const b = store.bucket('b', { type: 'int' })
	await b.set('k', 1)
	await store.view(async (v) => {
		const h = v.with(b)
		// @ts-expect-error a view has no writes
		const typed = h.set('k', 2)
		assert.ok((await rejection(typed)) instanceof InvalidError)
		const plain = h as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>
		for (const write of ['set', 'create', 'take', 'delete', 'expire', 'clear']) {
			const e = await rejection(plain[write]!('k', 2))
			assert.ok(e instanceof InvalidError, write)
			assert.equal((e as InvalidError).what.bucket, 'b')
		}
		assert.equal(await h.get('k'), 1)
	})
	assert.equal(await b.get('k'), 1)
})

test('KV-16 tx and view: a handle used after the end is ClosedError', async () => {
	await using store = await testStore()
	const b = store.bucket('b', { type: 'int' })
	let committed: { tx: Tx; h: TxBucket<number> } | undefined
	await store.tx(async (tx) => {
		committed = { tx, h: tx.with(b) }
		await committed.h.set('k', 1)
	})
	let rolledBack: TxBucket<number> | undefined
	await rejection(
		store.tx(async (tx) => {
			rolledBack = tx.with(b)
			throw new Error('stop')
		}),
	)
	let viewed: { v: View; h: ViewBucket<number> } | undefined
	await store.view((v) => {
		viewed = { v, h: v.with(b) }
	})
	assert.ok(committed && rolledBack && viewed)
	assert.equal(committed.tx.open, false)
	assert.equal(viewed.v.open, false)
	const ended = (kind: string) => `the ${kind} has ended: use its handles inside its function`
	assert.throws(() => committed?.tx.with(b), ClosedError)
	assert.throws(() => viewed?.v.with(b), ClosedError)
	const calls: [string, Promise<unknown>][] = [
		['transaction', committed.h.get('k')],
		['transaction', committed.h.set('k', 2)],
		['transaction', committed.h.take('k')],
		['transaction', committed.h.under('x').list()],
		['transaction', rolledBack.set('k', 3)],
		['transaction', rolledBack.has('k')],
		['view', viewed.h.get('k')],
		['view', viewed.h.list()],
		['view', viewed.h.under('x').entry('k')],
	]
	for (const [kind, call] of calls) {
		const e = await rejection(call)
		assert.ok(e instanceof ClosedError, String(e))
		assert.equal((e as ClosedError).what.bucket, 'b')
		assert.match((e as ClosedError).message, new RegExp(`^${ended(kind)}`))
	}
	assert.equal(await b.get('k'), 1)
})

test('KV-16 tx: the addon’s transaction refuses calls after its end, and a second end', async () => {
	await using store = await testStore()
	const b = store.bucket('b', { type: 'int' })
	const bucket = bucketParts.get(b)?.native
	const tx = await nativeOf.get(store)?.transaction()
	assert.ok(bucket && tx)
	bucket.set('k', 1, undefined, undefined, undefined, tx)
	assert.equal(bucket.get('k', tx), 1)
	await tx.commit()
	assert.throws(() => bucket.get('k', tx), ClosedError)
	assert.throws(() => bucket.set('k', 2, undefined, undefined, undefined, tx), ClosedError)
	assert.ok((await rejection(tx.commit())) instanceof ClosedError)
	assert.equal(await b.get('k'), 1)
	// A snapshot closed is closed for the addon too.
	const snap = nativeOf.get(store)?.snapshot()
	assert.ok(snap)
	assert.equal(bucket.get('k', snap), 1)
	snap.close()
	assert.throws(() => bucket.get('k', snap), ClosedError)
})
