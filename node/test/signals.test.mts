// `{ signal }`: every call that waits for the writer or another run gives
// up when its AbortSignal aborts, as Go's context and Python's task
// cancellation do. Each test holds the writer with a transaction whose
// function waits for an event the test controls, so a write is known to
// be queued (its group not started) without a sleep, and each asserts what
// the store holds afterwards.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { getEventListeners } from 'node:events'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { AbortError, InvalidError, type Store } from 'tinystore'

import { rejection, signal, testStore } from './helpers.mjs'

/** Lets the turn's microtask hand its writes to the writer: they are queued after it. */
const queued = () => new Promise<void>((resolve) => setImmediate(resolve))

/** Holds the store's writer with a transaction until `release()`, which resolves once it committed. */
async function holdWriter(store: Store): Promise<{ release: () => Promise<void> }> {
	const started = signal()
	const held = signal()
	const done = store.tx(async () => {
		started.resolve()
		await held.promise
	})
	await started.promise
	return {
		release: () => {
			held.resolve()
			return done
		},
	}
}

/** A codec of JSON text, for a bucket whose `take` reads, decodes and takes. */
const jsonText = {
	encode: (v: unknown) => new TextEncoder().encode(JSON.stringify(v)),
	decode: (b: Uint8Array): unknown => JSON.parse(new TextDecoder().decode(b)),
}

/** An AbortError whose cause is `reason`, as Node's own APIs reject. */
function assertAborted(e: unknown, reason: unknown): void {
	assert.ok(e instanceof AbortError, String(e))
	assert.equal(e.name, 'AbortError')
	assert.equal(e.code, 'ABORT_ERR')
	assert.equal(e.cause, reason)
}

/** No listener left on the signal. */
function assertNoListener(s: AbortSignal): void {
	assert.equal(getEventListeners(s, 'abort').length, 0)
}

test('signal: writes queued behind a busy writer write nothing when aborted, and reject at once', async () => {
	await using store = await testStore()
	const codes = store.bucket('codes', { type: 'string' })
	const attempts = store.counters('attempts')
	const plan = store.quota('plan', { daily: '5/d' })
	const sends = store.once<number>('sends')
	const points = store.bucket('points', { codec: jsonText })
	await codes.set('kept', 'k')
	await points.set('p', [1, 2])
	await sends.run('s', async () => 1)
	const writer = await holdWriter(store)
	const c = new AbortController()
	const calls = [
		codes.set('a', 'x', { signal: c.signal }),
		codes.create('b', 'x', { signal: c.signal }),
		codes.take('kept', { signal: c.signal }),
		points.take('p', { signal: c.signal }),
		codes.expire('kept', '1s', { signal: c.signal }),
		codes.clear({ signal: c.signal }),
		attempts.add('ip', 1, { signal: c.signal }),
		plan.allow('user', 1, { signal: c.signal }),
		sends.delete('s', { signal: c.signal }),
	]
	await queued()
	const reason = new Error('client went away')
	c.abort(reason)
	// Answered while the transaction still holds the writer.
	for (const call of calls) assertAborted(await rejection(call), reason)
	assertNoListener(c.signal)
	await writer.release()
	assert.equal(await codes.get('a'), undefined)
	assert.equal(await codes.get('b'), undefined)
	assert.equal(await codes.get('kept'), 'k')
	assert.equal((await codes.entry('kept'))?.expiresAt, undefined)
	assert.equal(await attempts.get('ip'), 0)
	assert.equal((await plan.peek('user')).windows.daily.used, 0)
	assert.equal(await sends.get('s'), 1)
	assert.deepEqual(await points.get('p'), [1, 2])
})

test('signal: a write of the same queue without a signal, or with one not aborted, is written', async () => {
	await using store = await testStore()
	const codes = store.bucket('codes', { type: 'string' })
	const writer = await holdWriter(store)
	const c = new AbortController()
	const other = new AbortController()
	const given = codes.set('given', 'x', { signal: c.signal })
	const plain = codes.set('plain', 'p')
	const kept = codes.set('kept', 'k', { signal: other.signal })
	await queued()
	c.abort()
	const e = await rejection(given)
	assert.ok(e instanceof AbortError)
	assert.ok(e.cause instanceof DOMException && e.cause.name === 'AbortError', String(e.cause))
	await writer.release()
	await plain
	await kept
	assertNoListener(other.signal)
	assert.deepEqual([await codes.get('given'), await codes.get('plain'), await codes.get('kept')], [undefined, 'p', 'k'])
})

test('signal: an already aborted signal writes nothing and rejects at once, adding no listener', async () => {
	await using store = await testStore()
	const codes = store.bucket('codes', { type: 'string' })
	const reason = new DOMException('too slow', 'TimeoutError')
	const s = AbortSignal.abort(reason)
	assertAborted(await rejection(codes.set('a', 'x', { signal: s })), reason)
	assertAborted(await rejection(codes.create('a', 'x', { signal: s })), reason)
	assertAborted(await rejection(store.counters('c').add('k', 1, { signal: s })), reason)
	const points = store.bucket('points', { codec: jsonText })
	await points.set('p', [1, 2])
	assertAborted(await rejection(points.take('p', { signal: s })), reason)
	let ran = false
	const run = store.once<number>('sends').run(
		'k',
		async () => {
			ran = true
			return 1
		},
		{ signal: s },
	)
	assertAborted(await rejection(run), reason)
	assertAborted(
		await rejection(
			store.tx(
				async () => {
					ran = true
				},
				{ signal: s },
			),
		),
		reason,
	)
	assertNoListener(s)
	assert.equal(ran, false)
	assert.equal(await codes.get('a'), undefined)
	assert.equal(await store.counters('c').get('k'), 0)
	assert.equal(await store.once<number>('sends').get('k'), undefined)
	assert.deepEqual(await points.get('p'), [1, 2])
})

test('signal: a write whose group started answers as written, whatever the signal', async () => {
	await using store = await testStore()
	const codes = store.bucket('codes', { type: 'string' })
	const writer = await holdWriter(store)
	const c = new AbortController()
	// Both queued behind the transaction: the writer's next group takes both.
	const first = codes.set('first', 'x', { ttl: '1h' })
	const second = codes.set('second', 'y', { signal: c.signal })
	await queued()
	// Aborted once the group has been answered, before `second` settles.
	const aborted = first.then(() => c.abort())
	await writer.release()
	await aborted
	await second
	assert.equal(c.signal.aborted, true)
	assertNoListener(c.signal)
	assert.equal(await codes.get('second'), 'y')
})

test('signal: a tx waiting for its turn stops waiting; its function never runs', async () => {
	await using store = await testStore()
	const stock = store.bucket<number>('stock', { type: 'int' })
	const writer = await holdWriter(store)
	const c = new AbortController()
	let ran = false
	const waiting = store.tx(
		async (tx) => {
			ran = true
			await tx.with(stock).set('apples', 1)
		},
		{ signal: c.signal },
	)
	await queued()
	c.abort()
	assert.ok((await rejection(waiting)) instanceof AbortError)
	assertNoListener(c.signal)
	await writer.release()
	assert.equal(ran, false)
	assert.equal(await stock.get('apples'), undefined)
	// The store goes on: the next transaction commits.
	await store.tx(async (tx) => tx.with(stock).set('apples', 2))
	assert.equal(await stock.get('apples'), 2)
})

test('signal: a tx whose function runs is not cut short, and commits nothing once aborted', async () => {
	await using store = await testStore()
	const stock = store.bucket<number>('stock', { type: 'int' })
	const c = new AbortController()
	const steps: string[] = []
	const e = await rejection(
		store.tx(
			async (tx) => {
				await tx.with(stock).set('apples', 1)
				c.abort()
				steps.push('aborted')
				await tx.with(stock).set('pears', 1)
				steps.push('ran to the end')
			},
			{ signal: c.signal },
		),
	)
	assert.ok(e instanceof AbortError, String(e))
	assert.deepEqual(steps, ['aborted', 'ran to the end'])
	assertNoListener(c.signal)
	assert.equal(await stock.get('apples'), undefined)
	assert.equal(await stock.get('pears'), undefined)
})

test('signal: once.run waiting for another run of the key stops waiting and runs nothing', async () => {
	await using store = await testStore()
	const sends = store.once<number>('sends')
	const started = signal()
	const finish = signal()
	const first = sends.run('order-1', async () => {
		started.resolve()
		await finish.promise
		return 1
	})
	await started.promise
	const c = new AbortController()
	let ran = false
	const waiting = sends.run(
		'order-1',
		async () => {
			ran = true
			return 2
		},
		{ signal: c.signal },
	)
	await queued()
	c.abort()
	// Answered while the first run still holds the key.
	assert.ok((await rejection(waiting)) instanceof AbortError)
	assertNoListener(c.signal)
	finish.resolve()
	assert.equal(await first, 1)
	assert.equal(ran, false)
	assert.equal(await sends.get('order-1'), 1)
	assert.equal(await sends.run('order-1', async () => 3), 1)
})

test('signal: a signal that is not an AbortSignal is InvalidError naming it, and nothing is written', async () => {
	await using store = await testStore()
	const codes = store.bucket('codes', { type: 'string' })
	const bad = { aborted: false } as unknown as AbortSignal
	const e = await rejection(codes.set('a', 'x', { signal: bad }))
	assert.ok(e instanceof InvalidError, String(e))
	assert.match(e.message, /signal must be an AbortSignal; got object/)
	assert.deepEqual(e.what, { bucket: 'codes' })
	assert.ok((await rejection(store.counters('c').add('k', 1, { signal: bad }))) instanceof InvalidError)
	assert.ok((await rejection(store.tx(async () => undefined, { signal: bad }))) instanceof InvalidError)
	assert.equal(await codes.get('a'), undefined)
	assert.equal(await store.counters('c').get('k'), 0)
})

test('README: the signal example runs as written', () => {
	const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8')
	const block = readme.split('<!-- signal example -->')[1].split('```js\n')[1].split('```')[0]
	// Inside the package, so that 'tinystore' names it.
	const file = fileURLToPath(new URL('./readme-signal-example.mjs', import.meta.url))
	writeFileSync(file, block)
	const run = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 60_000 })
	rmSync(file, { force: true })
	assert.equal(run.status, 0, run.stderr)
	assert.match(run.stdout, /gave up: AbortError TimeoutError/)
	assert.match(run.stdout, /written: undefined/)
})
