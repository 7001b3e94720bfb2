// Durable overwrites of keys that exist, in a bucket with a ttl: what a store
// of sessions writes, from Node or Bun with 64 writes in flight.
//
// 100,000 keys are present; each run overwrites 6,400 random ones of them
// with new 100-byte values, against better-sqlite3 (bun:sqlite in Bun)
// upserting the same writes 64 a transaction by hand into a table with the
// same expiry column and the index a sweep of expired rows needs, keeping a
// live row's expiry as TinyStore does. Both files are opened again before
// each run; the runs alternate, and the report gives the ratio of the
// medians (bench/src/bin/overwrites.rs is the same measure in Rust).
//
//   node overwrites.mjs        (or: bun overwrites.mjs; ROUNDS=11 for more)

import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { cpus, loadavg, release, tmpdir } from 'node:os'
import { join } from 'node:path'

import { open } from 'tinystore'

const require = createRequire(import.meta.url)
const KEYS = 100_000
const WRITES = 6_400
const DEPTH = 64
const TTL_MS = 30 * 86_400_000
const ROUNDS = Number(process.env.ROUNDS ?? 7)
const isBun = typeof globalThis.Bun !== 'undefined'

const key = (n) => `session:${String(n).padStart(8, '0')}`
/** New bytes every write: SQLite skips a page whose row is rewritten byte for byte. */
const value = (run, n) => Buffer.from(`${run.toString(16).padStart(16, '0')}${n.toString(16).padStart(16, '0')}`.padEnd(100, '.'))

/** The random keys of run `run`, the same for every contender. */
function picks(run) {
	const out = []
	let x = (BigInt(run) * 0x9e3779b97f4a7c15n) | 1n
	const m = (1n << 64n) - 1n
	for (let i = 0; i < WRITES; i++) {
		x ^= (x << 13n) & m
		x ^= x >> 7n
		x ^= (x << 17n) & m
		out.push(Number(x % BigInt(KEYS)))
	}
	return out
}

const UPSERT =
	'INSERT INTO kv (k, v, expires) VALUES (?, ?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v, ' +
	'expires = CASE WHEN kv.expires > ? THEN kv.expires ELSE excluded.expires END'

async function rawOpen(path) {
	let db
	if (isBun) {
		const { Database } = await import('bun:sqlite')
		db = new Database(path)
	} else {
		const Database = require('better-sqlite3')
		db = new Database(path)
	}
	db.exec('PRAGMA journal_mode = WAL')
	db.exec('PRAGMA synchronous = FULL')
	db.exec('CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v BLOB NOT NULL, expires INTEGER) WITHOUT ROWID')
	db.exec('CREATE INDEX IF NOT EXISTS kv_expiry ON kv (expires) WHERE expires IS NOT NULL')
	const put = db.prepare(UPSERT)
	const many = db.transaction((rows) => {
		for (const r of rows) put.run(...r)
	})
	return { db, many }
}

async function rawRun(path, run) {
	const { db, many } = await rawOpen(path)
	const ks = picks(run)
	const t = performance.now()
	for (let i = 0; i < WRITES; i += DEPTH) {
		const now = Date.now()
		many(ks.slice(i, i + DEPTH).map((k, j) => [key(k), value(run, i + j), now + TTL_MS, now]))
	}
	const took = performance.now() - t
	db.close()
	return (WRITES / took) * 1000
}

async function oursRun(dir, run) {
	const store = await open(dir)
	const b = store.bucket('sessions', { type: 'bytes', ttl: '30d' })
	const ks = picks(run)
	const t = performance.now()
	await Promise.all(
		Array.from({ length: DEPTH }, async (_, w) => {
			for (let i = w; i < WRITES; i += DEPTH) await b.set(key(ks[i]), value(run, i))
		}),
	)
	const took = performance.now() - t
	await store.close()
	return (WRITES / took) * 1000
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

const root = mkdtempSync(join(tmpdir(), 'tinystore-overwrites-'))
try {
	console.log(`== ${isBun ? `bun ${Bun.version}` : `node ${process.version}`}: overwrites with a ttl, 64 in flight`)
	console.log(`# machine: ${cpus()[0]?.model}, ${cpus().length} cores, Linux ${release()}`)
	console.log(`# load average at start: ${loadavg().map((x) => x.toFixed(2)).join(' ')}; ${new Date().toISOString()}`)
	const dir = join(root, 'ts')
	const rawPath = join(root, 'raw.db')
	{
		const store = await open(dir)
		const b = store.bucket('sessions', { type: 'bytes', ttl: '30d' })
		for (let i = 0; i < KEYS; i += 1000) await Promise.all(Array.from({ length: 1000 }, (_, j) => b.set(key(i + j), value(0, i + j))))
		await store.close()
		const { db, many } = await rawOpen(rawPath)
		const now = Date.now()
		for (let i = 0; i < KEYS; i += 1000) many(Array.from({ length: 1000 }, (_, j) => [key(i + j), value(0, i + j), now + TTL_MS, now]))
		db.close()
	}
	const ours = []
	const raw = []
	let run = 0
	for (let r = 0; r < ROUNDS; r++) {
		// Alternate which goes first, so a noisy neighbour slows both alike.
		if (r % 2 === 0) {
			ours.push(await oursRun(dir, ++run))
			raw.push(await rawRun(rawPath, ++run))
		} else {
			raw.push(await rawRun(rawPath, ++run))
			ours.push(await oursRun(dir, ++run))
		}
	}
	const peer = isBun ? 'bun:sqlite' : 'better-sqlite3'
	console.log(`tinystore        median ${median(ours).toFixed(0).padStart(9)} overwrites/s`)
	console.log(`${peer.padEnd(16)} median ${median(raw).toFixed(0).padStart(9)} overwrites/s (64 upserts a transaction by hand)`)
	console.log(`ratio tinystore / ${peer}: ${(median(ours) / median(raw)).toFixed(2)}`)
} finally {
	rmSync(root, { recursive: true, force: true })
}
