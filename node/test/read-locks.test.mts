// `open(dir, { keepReadLocks })`: whether a reader keeps its read-mark lock
// in kv.db-shm between reads of a quiet file (tinystore::Options::
// keep_read_locks). Seen from outside through /proc/locks (Linux).
import assert from 'node:assert/strict'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { platform } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'

import { InvalidError, open } from 'tinystore'

import { freshDir, rejection, T0 } from './helpers.mjs'

const linux = platform() === 'linux'

// SQLite's WAL read marks are bytes 123 to 127 of kv.db-shm (its locks
// start at byte 120; the read marks are locks 3 to 7).
const READ_MARKS = [123, 127]

/** Whether this process holds a lock on one of `shm`'s read marks. */
function readMarkLocked(shm: string): boolean {
	const inode = statSync(shm).ino
	for (const line of readFileSync('/proc/locks', 'utf8').split('\n')) {
		// "1: POSIX  ADVISORY  READ 4242 fd:01:1234 123 123"
		const f = line.trim().split(/\s+/)
		if (f.length < 8 || f[1] !== 'POSIX' || Number(f[4]) !== process.pid) continue
		if (Number(f[5].split(':').at(-1)) !== inode) continue
		const start = Number(f[6])
		const end = f[7] === 'EOF' ? Number.MAX_SAFE_INTEGER : Number(f[7])
		if (start <= READ_MARKS[1] && end >= READ_MARKS[0]) return true
	}
	return false
}

/** Reads one key of a quiet store for up to `ms`, looking after each read for a kept read-mark lock. */
async function lockedAfterReads(ms: number, keepReadLocks?: boolean): Promise<boolean> {
	const dir = freshDir()
	await using store = await open(dir, keepReadLocks === undefined ? {} : { keepReadLocks })
	const b = store.bucket('texts', { type: 'string' })
	await b.set('k', 'v')
	const deadline = Date.now() + ms
	while (Date.now() < deadline) {
		assert.equal(await b.get('k'), 'v')
		if (readMarkLocked(join(dir, 'kv.db-shm'))) return true
	}
	return false
}

test('keepReadLocks: a quiet store keeps its read lock between reads, and false keeps none', { skip: !linux }, async () => {
	// A lock is kept once the file has been quiet for 20 ms: well inside 5 s.
	assert.equal(await lockedAfterReads(5000), true)
	assert.equal(await lockedAfterReads(300, false), false)
})

test('KV-18 keepReadLocks: a value that is not a boolean is InvalidError naming keepReadLocks, and nothing is created', async () => {
	for (const keepReadLocks of [0, 1, 'no', null]) {
		const dir = freshDir()
		const e = await rejection(open(dir, { clock: T0, keepReadLocks: keepReadLocks as unknown as boolean }))
		assert.ok(e instanceof InvalidError, `${String(keepReadLocks)}: ${e}`)
		assert.match(e.message, /keepReadLocks/, String(keepReadLocks))
		assert.equal(existsSync(join(dir, 'kv.db')), false, `${String(keepReadLocks)} created kv.db`)
	}
})
