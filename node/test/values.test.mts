// Values JS numbers and types make hard: set members, NaN payloads, and
// counters past 2^53 (KV-3, KV-14), as tests/conformance/README.md states
// the promise for TypeScript.
import assert from 'node:assert/strict'
import { test } from 'node:test'

import { type Bucket, type Counters, InvalidError, LimitError } from 'tinystore'

import { rejection, testStore } from './helpers.mjs'

/** The eight big-endian bytes of a float's bits, as the file keeps a float (docs/format.md). */
function bitsOf(row: Uint8Array | undefined): string {
	assert.ok(row instanceof Uint8Array, 'a float row is bytes')
	return Buffer.from(row).toString('hex')
}

test('KV-3 set members: a set bucket keeps keys without values; a member reads as null, no member as undefined', async () => {
	await using store = await testStore()
	const seen: Bucket<null> = store.bucket('stripe-events', { type: 'set' })
	assert.equal(seen.type, 'set')
	await seen.set('evt_1', null)
	assert.equal(await seen.create('evt_1', null), false, 'a member is there')
	assert.equal(await seen.create('evt_2', null, { ttl: '10m' }), true)
	assert.equal(await seen.has('evt_1'), true)
	assert.equal(await seen.get('evt_1'), null)
	assert.equal(await seen.get('evt_3'), undefined)
	assert.equal((await seen.entry('evt_1'))?.value, null)
	assert.deepEqual(
		(await seen.list()).entries.map((e) => [e.key, e.value]),
		[
			['evt_1', null],
			['evt_2', null],
		],
	)
	assert.equal(await seen.take('evt_1'), null)
	assert.equal(await seen.take('evt_1'), undefined)
	store.clock.advance('11m')
	assert.equal(await seen.has('evt_2'), false, 'a member expires as any key does')
})

test('KV-3 set members: a member is a row of nothing, which other types refuse to read and a set refuses to write', async () => {
	await using store = await testStore()
	const seen = store.bucket('seen', { type: 'set' })
	for (const bad of [undefined, 0, '', false, {}]) {
		const e = await rejection(seen.set('k', bad as never))
		assert.ok(e instanceof InvalidError, String(bad))
		assert.deepEqual(e.what, { bucket: 'seen', key: 'k' })
	}
	assert.equal(await seen.has('k'), false, 'nothing written')
	await seen.set('member', null)
	assert.equal((await rejection(store.bucket('seen', { type: 'string' }).get('member'))).code, 'CORRUPT')
	assert.equal((await rejection(store.bucket('seen', { type: 'json' }).get('member'))).code, 'CORRUPT')
	assert.equal(await store.bucket('seen').get('member'), null, 'a bucket without a type reads a member by its kind')
	await store.bucket('seen', { type: 'string' }).set('text', '')
	assert.equal((await rejection(seen.get('text'))).code, 'CORRUPT', 'an empty string is a value, not a member')
	assert.equal(await store.once('seen-once', { type: 'set' }).run('k', async () => null), null)
})

test('KV-3 NaN: a NaN reads and writes as NaN; JS writes the canonical NaN', async () => {
	await using store = await testStore()
	const floats = store.bucket('floats', { type: 'float' })
	const rows = store.bucket('floats', { type: 'bytes' })
	await floats.set('nan', Number.NaN)
	assert.ok(Number.isNaN(await floats.get('nan')))
	assert.equal(bitsOf(await rows.get('nan')), '7ff8000000000000')
	await floats.set('zero-over-zero', 0 / 0)
	assert.ok(Number.isNaN(await floats.get('zero-over-zero')))
	// Every other float is its bits, -0 and the smallest subnormal included.
	for (const [v, bits] of [
		[-0, '8000000000000000'],
		[Number.NEGATIVE_INFINITY, 'fff0000000000000'],
		[5e-324, '0000000000000001'],
		[Math.PI, '400921fb54442d18'],
	] as const) {
		await floats.set('v', v)
		assert.equal(bitsOf(await rows.get('v')), bits, String(v))
		assert.ok(Object.is(await floats.get('v'), v), String(v))
	}
})

test('KV-3 NaN: a payload another language wrote reads as NaN in JS and stays in the file bit for bit', async () => {
	await using store = await testStore()
	const floats = store.bucket('floats', { type: 'float' })
	// The rows Go or Python write for a NaN with a payload, and for a signalling NaN.
	const rows = store.bucket('floats', { type: 'bytes' })
	for (const bits of ['7ff8000000000001', '7ff0000000000001', 'fff8000000000000']) {
		await rows.set(bits, Buffer.from(bits, 'hex'))
		assert.ok(Number.isNaN(await floats.get(bits)), bits)
		assert.ok(Number.isNaN((await floats.entry(bits))?.value), bits)
		assert.equal(bitsOf(await rows.get(bits)), bits, 'a read rewrites nothing')
	}
})

test('KV-14 counters past 2^53: bigint counters count the whole int64 range; number counters refuse to round', async () => {
	await using store = await testStore()
	const big: Counters<bigint> = store.counters('bytes-sent', { type: 'bigint' })
	assert.equal(await big.get('k'), 0n)
	assert.equal(await big.add('k', 2n ** 62n), 2n ** 62n)
	assert.equal(await big.add('k', 2n ** 62n - 1n), 2n ** 63n - 1n)
	const over = await rejection(big.add('k', 1))
	assert.ok(over instanceof LimitError)
	assert.deepEqual(over.what, { bucket: 'bytes-sent', key: 'k' })
	assert.equal(await big.get('k'), 2n ** 63n - 1n, 'a sum past int64 changes nothing')
	assert.equal(await big.under('u').max('m', -(2n ** 63n)), 0n)
	assert.ok((await rejection(big.add('k', 2n ** 63n))) instanceof InvalidError, 'a step past int64')
	assert.ok((await rejection(big.add('k', 2 ** 53))) instanceof InvalidError, 'an unsafe number step')

	// The same counters as numbers: exact up to 2^53-1, and never a rounded answer past it.
	const counts: Counters<number> = store.counters('bytes-sent')
	assert.equal(await counts.add('small', 2n ** 53n - 2n), 2 ** 53 - 2)
	assert.equal(await counts.add('small'), Number.MAX_SAFE_INTEGER)
	const past = await rejection(counts.add('small'))
	assert.ok(past instanceof LimitError)
	assert.match(past.message, /2\^53|safe integers/)
	assert.match(past.message, /the change is kept/)
	assert.deepEqual(past.what, { bucket: 'bytes-sent', key: 'small' })
	assert.equal(await big.get('small'), 2n ** 53n, 'the add was written, as the error says')
	const read = await rejection(counts.under('x').get('y').then(() => counts.get('k')))
	assert.ok(read instanceof LimitError)
	assert.deepEqual(read.what, { bucket: 'bytes-sent', key: 'k' })
	assert.throws(() => store.counters('c', { type: 'float' as never }), InvalidError)
})

test('KV-1 keys: a read finds a key of any length and spelling, and names a bad one', async () => {
	await using store = await testStore()
	const b = store.bucket('keys', { type: 'string' })
	// Around the 256 bytes a read first tries (a four-byte character across the edge), and far past them.
	const keys = ['k', 'é'.repeat(126), `${'x'.repeat(250)}😀😀`, `${'y'.repeat(251)}😀`, 'z'.repeat(1000), 'a\u0000b']
	for (const k of keys) await b.set(k, `value of ${k.length}`)
	for (const k of keys) {
		assert.equal(await b.get(k), `value of ${k.length}`, `a key of ${k.length} characters`)
		assert.equal(await b.get(`${k}!`), undefined)
	}
	await b.set(7, 'seven')
	assert.equal(await b.get(7), 'seven')
	assert.equal(await b.get(7n), 'seven')
	assert.equal(await b.get(new TextEncoder().encode('7')), 'seven')
	const empty = await rejection(b.get(''))
	assert.ok(empty instanceof InvalidError)
	assert.equal((empty as InvalidError).what.bucket, 'keys')
	assert.ok((await rejection(b.get({} as never))) instanceof InvalidError)
	assert.ok((await rejection(b.get('k'.repeat(1025)))) instanceof InvalidError, 'a path over 1 KiB')
	await store.close()
	assert.equal((await rejection(b.get('k'))).code, 'CLOSED')
})

test('KV-3 what JSON cannot keep, and a row that is not JSON, are the engine\'s one text', async () => {
	await using store = await testStore()
	const docs = store.bucket<unknown>('docs', { type: 'json' })
	const noJson = 'the value cannot be written as JSON: '
	const at = ' (bucket docs, key k)'
	const undef = await rejection(docs.set('k', undefined))
	assert.ok(undef instanceof InvalidError)
	assert.equal(undef.message, `${noJson}it holds a value of type undefined, which JSON has no way to write${at}`)
	const big = await rejection(docs.set('k', { n: 1n }))
	assert.ok(big instanceof InvalidError)
	assert.ok(big.message.startsWith(noJson) && big.message.endsWith(at), big.message)
	await store.bucket('docs', { type: 'bytes' }).set('k', new TextEncoder().encode('{no'))
	for (const read of [docs.get('k'), docs.take('k')]) {
		const bad = await rejection(read)
		assert.equal(bad.code, 'CORRUPT')
		assert.ok(bad.message.startsWith('the row is not JSON: ') && bad.message.endsWith(at), bad.message)
	}
	assert.equal((await store.bucket('docs', { type: 'bytes' }).get('k'))?.length, 3, 'a take leaves the row')
})
