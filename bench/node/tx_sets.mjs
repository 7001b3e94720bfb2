// Sets inside one transaction from Node and Bun: 6,400 sets of fresh keys
// in one `store.tx`, against the same inserts inside one transaction of
// better-sqlite3 (Node) or bun:sqlite (Bun), WAL and synchronous=FULL,
// 100-byte values. The two alternate round by round; each figure is the
// median µs a set (the commit included), and the ratio is TinyStore's time
// over the peer's: paired (the median of each round's ratio), then of the
// medians. Run with `make bench-tx-sets` (not in CI).

import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { cpus, loadavg, release, tmpdir } from 'node:os'
import { join } from 'node:path'

import { open } from 'tinystore'

const require = createRequire(import.meta.url)
const runtime = typeof globalThis.Bun !== 'undefined' ? `bun ${globalThis.Bun.version}` : `node ${process.version}`
const ROUNDS = Number(process.env.ROUNDS ?? 9)
const SETS = 6_400
const VALUE = 'v'.repeat(100)
let round = 0
/** New keys for every round and contender, so each set inserts. */
const freshKeys = () => {
	const base = round++
	return Array.from({ length: SETS }, (_, i) => `k:${base}:${i}`)
}

console.log(`== ${runtime}: ${SETS.toLocaleString('en')} sets in one transaction against plain SQLite`)
console.log(`# machine: ${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, Linux ${release()}`)
console.log(`# load average at start: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`)

const root = mkdtempSync(join(tmpdir(), 'tinystore-txsets-'))
process.on('exit', () => rmSync(root, { recursive: true, force: true }))

const store = await open(join(root, 'tinystore'))
const bucket = store.bucket('bench', { type: 'string' })

let plain
let plainName
try {
	const Database = require('better-sqlite3')
	plain = new Database(join(root, 'better.db'))
	plain.pragma('journal_mode = WAL')
	plain.pragma('synchronous = FULL')
	plainName = `better-sqlite3 ${require('better-sqlite3/package.json').version}`
} catch (e) {
	if (typeof globalThis.Bun === 'undefined') throw e
	const { Database } = await import('bun:sqlite')
	plain = new Database(join(root, 'bun.db'))
	plain.exec('PRAGMA journal_mode = WAL')
	plain.exec('PRAGMA synchronous = FULL')
	plainName = 'bun:sqlite'
}
plain.exec('CREATE TABLE kv (k TEXT PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID')
const put = plain.prepare('INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v')
const putAll = plain.transaction((keys) => {
	for (const k of keys) put.run(k, VALUE)
})

/** µs a set of `run`, which writes SETS keys. */
async function perSet(run) {
	const keys = freshKeys()
	const start = performance.now()
	await run(keys)
	return ((performance.now() - start) * 1000) / SETS
}

const contenders = {
	[`${plainName}, one transaction`]: async (keys) => putAll(keys),
	'tinystore tx': (keys) =>
		store.tx(async (tx) => {
			const b = tx.with(bucket)
			for (const k of keys) await b.set(k, VALUE)
		}),
}
const names = Object.keys(contenders)
const seen = Object.fromEntries(names.map((n) => [n, []]))
for (let r = 0; r < ROUNDS; r++) {
	const order = r % 2 ? [...names].reverse() : names
	for (const name of order) seen[name].push(await perSet(contenders[name]))
}
const median = (xs) => {
	const s = [...xs].sort((a, b) => a - b)
	return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
console.log('| measure | µs a set |')
console.log('|---|---:|')
for (const name of names) console.log(`| ${name} | ${median(seen[name]).toFixed(2)} |`)
const [peer, ours] = names
const paired = median(seen[ours].map((t, i) => t / seen[peer][i]))
console.log(
	`# tx set / plain set (time): ${paired.toFixed(2)} (${(median(seen[ours]) / median(seen[peer])).toFixed(2)})`,
)
console.log(`# load average at the end: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`)
await store.close()
