// Who may read and write a new store's files: its owner only, or its group
// too with `open(dir, { shareWithGroup: true })` (tinystore::Options::
// share_with_group): anyone who can write kv.db-limits can reset every rate
// limit.
import assert from 'node:assert/strict'
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'

import { InvalidError, open, type OpenOptions } from 'tinystore'

import { freshDir, rejection } from './helpers.mjs'

/** The permission bits of the store's directory, kv.db and its WAL. */
function modes(dir: string): Record<string, number> {
	const bits = (p: string) => statSync(p).mode & 0o777
	return { dir: bits(dir), 'kv.db': bits(join(dir, 'kv.db')), 'kv.db-wal': bits(join(dir, 'kv.db-wal')) }
}

/** Opens a new store under the usual umask (which lets 0644 files through),
 * writes a key (which makes the WAL) and returns the modes while it is open.
 * The umask is the process's, so it is put back. */
async function modesOfANewStore(options: OpenOptions): Promise<Record<string, number>> {
	const dir = join(freshDir(), 'store', 'data')
	const before = process.umask(0o022)
	try {
		await using store = await open(dir, options)
		await store.bucket('texts', { type: 'string' }).set('k', 'v')
		return modes(dir)
	} finally {
		process.umask(before)
	}
}

test("KV-19 shareWithGroup: a new store's files are its owner's only unless shared with its group", async () => {
	assert.deepEqual(await modesOfANewStore({}), { dir: 0o700, 'kv.db': 0o600, 'kv.db-wal': 0o600 })
	assert.deepEqual(await modesOfANewStore({ shareWithGroup: false }), { dir: 0o700, 'kv.db': 0o600, 'kv.db-wal': 0o600 })
	assert.deepEqual(await modesOfANewStore({ shareWithGroup: true }), { dir: 0o770, 'kv.db': 0o660, 'kv.db-wal': 0o660 })
})

test('KV-19 shareWithGroup: a value that is not a boolean is InvalidError naming shareWithGroup, and nothing is created', async () => {
	for (const shareWithGroup of [0, 1, 'yes', null]) {
		const dir = join(freshDir(), 'store')
		const e = await rejection(open(dir, { shareWithGroup: shareWithGroup as unknown as boolean }))
		assert.ok(e instanceof InvalidError, `${String(shareWithGroup)}: ${e}`)
		assert.match(e.message, /shareWithGroup/, String(shareWithGroup))
		assert.equal(existsSync(dir), false, `${String(shareWithGroup)} created ${dir}`)
	}
})
