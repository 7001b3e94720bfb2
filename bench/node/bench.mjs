// TinyStore KV from Node and Bun against hand-written better-sqlite3 and
// @deno/kv: `await bucket.get` and `await bucket.set` with 1 and 64 in
// flight. Contenders run alternately, round after round, and each figure
// is the median of its rounds. Each ratio is printed twice: paired (the
// median, over the rounds, of the two contenders' ratio within a round,
// which cancels the drift of this machine's fsync from one round to the
// next), then of the medians. Run with `make bench-node` (not in CI).
//
// What the targets compare:
// - a get against a plain better-sqlite3 point read (a prepared statement,
//   synchronous): within 2x;
// - durable sets, 64 in flight, against the same upserts batched by hand,
//   64 per transaction, in better-sqlite3 with synchronous=FULL: at least
//   80%; and against @deno/kv sets, 64 in flight: at least 10x.
//
// In Bun, better-sqlite3 does not load (it is a V8 addon, not N-API); the
// plain-SQLite baseline there is bun:sqlite with the same statements.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { cpus, loadavg, release, tmpdir } from 'node:os'
import { basename, dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

import { open } from 'tinystore'

import { KEYS, keyOf, nextKey, nextSetKey, nextValue, SET_KEYS, setKeyOf, VALUE } from './keys.mjs'

const require = createRequire(import.meta.url)
const runtime = typeof globalThis.Bun !== 'undefined' ? `bun ${globalThis.Bun.version}` : `node ${process.version}`
const ROUNDS = Number(process.env.ROUNDS ?? 9)
// A slice of 1 s holds about 700 groups of 64 sets: slices of 400 ms left
// Bun's paired set ratio swinging from 0.73 to 0.89 between runs.
const SLICE_MS = Number(process.env.SLICE_MS ?? 1000)

const load = () => loadavg().map((x) => x.toFixed(2))
const meta = {
	cpu: cpus()[0]?.model ?? 'unknown CPU',
	cores: cpus().length,
	kernel: release(),
	runtime,
	// Relative to where it ran, so that a result names no path of one machine.
	command: [basename(process.argv0), ...process.argv.slice(1).map((a) => relative(process.cwd(), a))].join(' '),
	load: load(),
	time: new Date().toISOString(),
}
console.log(`== ${runtime}: tinystore against plain SQLite and @deno/kv`)
console.log(`# machine: ${meta.cpu}, ${meta.cores} cores, Linux ${meta.kernel}; command: ${meta.command}`)
console.log(`# load average at start: ${meta.load.join(' ')}`)

const root = mkdtempSync(join(tmpdir(), 'tinystore-bench-'))
process.on('exit', () => rmSync(root, { recursive: true, force: true }))

/** Runs `op` (an async batch of `per` operations) until the slice is used; ops per second. */
async function measure(op, per) {
	const start = performance.now()
	let n = 0
	do {
		await op()
		n += per
	} while (performance.now() - start < SLICE_MS)
	return (n * 1000) / (performance.now() - start)
}

/** Runs a synchronous `op` the same way. */
async function measureSync(op, per) {
	const start = performance.now()
	let n = 0
	do {
		op()
		n += per
	} while (performance.now() - start < SLICE_MS)
	return (n * 1000) / (performance.now() - start)
}

const times = (k, f) => Array.from({ length: k }, f)

// ---- TinyStore
const store = await open(join(root, 'tinystore'))
const bucket = store.bucket('bench', { type: 'string' })
for (let i = 0; i < KEYS; i += 500) await Promise.all(times(500, (_, j) => bucket.set(keyOf(i + j), VALUE)))
for (let i = 0; i < SET_KEYS; i += 500) await Promise.all(times(500, (_, j) => bucket.set(setKeyOf(i + j), VALUE)))

// ---- plain SQLite: better-sqlite3 (Node) or bun:sqlite (Bun)
let plain
let plainName
try {
	const Database = require('better-sqlite3')
	const db = new Database(join(root, 'better.db'))
	db.pragma('journal_mode = WAL')
	db.pragma('synchronous = FULL')
	plainName = `better-sqlite3 ${require('better-sqlite3/package.json').version}`
	plain = db
} catch (e) {
	if (typeof globalThis.Bun === 'undefined') throw e
	const { Database } = await import('bun:sqlite')
	const db = new Database(join(root, 'bun.db'))
	db.exec('PRAGMA journal_mode = WAL')
	db.exec('PRAGMA synchronous = FULL')
	plainName = 'bun:sqlite (better-sqlite3 does not load in Bun)'
	plain = { exec: (s) => db.exec(s), prepare: (s) => db.prepare(s), transaction: (f) => db.transaction(f) }
}
plain.exec('CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID')
const get = plain.prepare('SELECT v FROM kv WHERE k = ?')
const put = plain.prepare('INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v')
const putMany = plain.transaction((keys) => {
	for (const k of keys) put.run(k, nextValue())
})
for (let i = 0; i < KEYS; i += 500) putMany(times(500, (_, j) => keyOf(i + j)))
for (let i = 0; i < SET_KEYS; i += 500) putMany(times(500, (_, j) => setKeyOf(i + j)))

// ---- @deno/kv
let deno
let denoName
try {
	const { openKv } = await import('@deno/kv')
	// Bun's v8.serialize is not V8's format: there @deno/kv takes a codec of
	// our own (JSON; the values are 64-byte strings either way).
	const codec =
		typeof globalThis.Bun === 'undefined'
			? {}
			: {
					encodeV8: (v) => new TextEncoder().encode(JSON.stringify(v)),
					decodeV8: (b) => JSON.parse(new TextDecoder().decode(b)),
				}
	deno = await openKv(join(root, 'deno.kv'), codec)
	denoName = `@deno/kv ${JSON.parse(readFileSync(join(require.resolve('@deno/kv'), '..', '..', 'package.json'), 'utf8')).version}`
	for (let i = 0; i < KEYS; i += 500) await Promise.all(times(500, (_, j) => deno.set([keyOf(i + j)], VALUE)))
	for (let i = 0; i < SET_KEYS; i += 500) await Promise.all(times(500, (_, j) => deno.set([setKeyOf(i + j)], VALUE)))
} catch (e) {
	denoName = `@deno/kv (does not load here: ${e.message.split('\n')[0]})`
}

const cases = {
	'tinystore get, 1 in flight': () => measure(async () => void (await bucket.get(nextKey())), 1),
	'tinystore get, 64 in flight': () => measure(() => Promise.all(times(64, () => bucket.get(nextKey()))), 64),
	'plain point read (sync)': () => measureSync(() => get.get(nextKey()), 1),
	'tinystore set, 1 in flight': () => measure(() => bucket.set(nextSetKey(), nextValue()), 1),
	'tinystore set, 64 in flight': () => measure(() => Promise.all(times(64, () => bucket.set(nextSetKey(), nextValue()))), 64),
	'plain set, 1 per transaction': () => measureSync(() => put.run(nextSetKey(), nextValue()), 1),
	'plain set, 64 per transaction': () => measureSync(() => putMany(times(64, nextSetKey)), 64),
}
if (deno) {
	Object.assign(cases, {
		'@deno/kv get, 1 in flight': () => measure(async () => void (await deno.get([nextKey()])), 1),
		'@deno/kv get, 64 in flight': () => measure(() => Promise.all(times(64, () => deno.get([nextKey()]))), 64),
		'@deno/kv set, 1 in flight': () => measure(() => deno.set([nextSetKey()], nextValue()), 1),
		'@deno/kv set, 64 in flight': () => measure(() => Promise.all(times(64, () => deno.set([nextSetKey()], nextValue()))), 64),
	})
}

// ONLY=get (or set, ...) keeps the cases whose name holds one of the words, and
// their peers': the quick look at one figure on a busy machine.
const only = process.env.ONLY?.split(',')
if (only) {
	for (const name of Object.keys(cases)) {
		const peer = name.startsWith('plain') || name.startsWith('@deno')
		const word = (w) => name.includes(w) || (w === 'get' && name.includes('point read'))
		if (!only.some(word) || (peer && name.startsWith('@deno') && !only.includes('deno'))) delete cases[name]
	}
}
const results = Object.fromEntries(Object.keys(cases).map((k) => [k, []]))
// Each round starts one case later, so that no case always runs first or
// right after the same other case (whose WAL and dirty pages it inherits).
const order = Object.entries(cases)
for (let r = 0; r < ROUNDS; r++) {
	for (let k = 0; k < order.length; k++) {
		const [name, run] = order[(k + r) % order.length]
		results[name].push(await run())
	}
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const m = Object.fromEntries(Object.entries(results).map(([k, xs]) => [k, median(xs)]))

console.log(`\n${runtime}: ${ROUNDS} rounds of ${SLICE_MS} ms, medians; plain = ${plainName}; ${denoName}`)
for (const [name, ops] of Object.entries(m)) {
	console.log(`  ${name.padEnd(32)} ${Math.round(ops).toString().padStart(9)} ops/s  ${(1e6 / ops).toFixed(2).padStart(9)} µs/op`)
}
// The median of the rounds' ratios a / b, and the ratio of the medians.
// A case that did not run (ONLY) gives NaN, printed as such and left out
// of the results file.
const paired = (a, b) =>
	a in results && b in results ? median(results[a].map((x, r) => x / results[b][r])) : NaN
const ratio = (a, b) => `${paired(a, b).toFixed(2)} (${(m[a] / m[b]).toFixed(2)})`
console.log('  ratios, paired (of the medians):')
console.log(`    get 1 in flight / plain point read:          ${ratio('tinystore get, 1 in flight', 'plain point read (sync)')} (target >= 0.50)`)
console.log(`    sets 64 in flight / plain 64 per transaction: ${ratio('tinystore set, 64 in flight', 'plain set, 64 per transaction')} (target >= 0.80)`)
console.log(`    set 1 in flight / plain 1 per transaction:    ${ratio('tinystore set, 1 in flight', 'plain set, 1 per transaction')}`)
if (deno && '@deno/kv set, 64 in flight' in m) {
	console.log(`    sets 64 in flight / @deno/kv 64 in flight:    ${ratio('tinystore set, 64 in flight', '@deno/kv set, 64 in flight')} (target >= 10)`)
	console.log(`    get 1 in flight / @deno/kv get:               ${ratio('tinystore get, 1 in flight', '@deno/kv get, 1 in flight')}`)
}
const ratioRows = [
	['get 1 in flight / plain point read', paired('tinystore get, 1 in flight', 'plain point read (sync)'), '>= 0.5'],
	['sets 64 in flight / plain 64 per transaction', paired('tinystore set, 64 in flight', 'plain set, 64 per transaction'), '>= 0.8'],
	['set 1 in flight / plain 1 per transaction', paired('tinystore set, 1 in flight', 'plain set, 1 per transaction'), ''],
]
if (deno) ratioRows.push(['sets 64 in flight / @deno/kv 64 in flight', paired('tinystore set, 64 in flight', '@deno/kv set, 64 in flight'), '>= 10'])
const resultsDir = join(dirname(dirname(fileURLToPath(import.meta.url))), 'results')
mkdirSync(resultsDir, { recursive: true })
const resultsFile = join(resultsDir, `${runtime.split(' ')[0]}-bench.json`)
// With ONLY, some cases did not run: their ratios are left out.
const section = { title: `${runtime}: gets and durable sets against ${plainName.split(' (')[0]} and @deno/kv`, rows: m, ratios: ratioRows.filter((r) => Number.isFinite(r[1])) }
writeFileSync(resultsFile, JSON.stringify({ meta: { ...meta, load_end: load() }, gets_sets: section }, null, 1))
console.log(`# load average at the end: ${load().join(' ')}; results in ${resultsFile}`)
await store.close()
deno?.close()
