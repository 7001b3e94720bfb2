// A store in PostgreSQL, opened by its location: the same calls and answers
// as a store in a directory. Needs the server CI starts (make pg-start;
// make exports TINYSTORE_TEST_PG).
import assert from 'node:assert/strict'
import { test } from 'node:test'

import { open } from 'tinystore'

import { T0 } from './helpers.mjs'

function location(): string {
	const server = process.env.TINYSTORE_TEST_PG
	if (!server) {
		throw new Error(
			'the PostgreSQL tests need a server: run `make pg-start` (a cluster on 127.0.0.1:55432), then ' +
				'`export TINYSTORE_TEST_PG=postgres://postgres@127.0.0.1:55432/postgres`, or run them through make',
		)
	}
	return `${server}${server.includes('?') ? '&' : '?'}schema=node_tests`
}

test('KV-5 take on PostgreSQL: one of 16 racing calls gets the value, expiry on the store clock', async () => {
	await using store = await open(location(), { clock: T0 })
	const codes = store.bucket('codes', { type: 'int', ttl: '15m' })
	await codes.clear()
	await codes.set('c', 7)
	const got = await Promise.all(Array.from({ length: 16 }, () => codes.take('c')))
	assert.deepEqual(got.filter((v) => v !== undefined), [7])
	await codes.set('d', 1)
	store.clock.advance('15m')
	assert.equal(await codes.get('d'), undefined)
	const hits = store.counters('hits')
	await hits.delete('k')
	assert.equal(await hits.add('k'), 1, 'counters count on the shared rows')
})
