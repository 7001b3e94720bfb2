// One build's side of a before/after comparison (bench/builds/compare.py),
// under Node or Bun: the workloads of `make bench` that a binding change can
// slow, against the npm package in the directory TINYSTORE_NODE_DIR names
// (its dist/esm), printed as one JSON line of ops per second.
//
// The workloads are bench.mjs's (`await bucket.get` of an existing key among
// 100,000, 1 in flight; `bucket.set` of 10,000 keys of their own, 64 in
// flight) and peers.mjs's (`allow` on one hot key), with their keys and
// values. Each runs REPS slices of SLICE_MS, interleaved; the median is kept.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

import { KEYS, keyOf, nextKey, nextSetKey, nextValue, SET_KEYS, setKeyOf, VALUE } from '../node/keys.mjs'

const pkgDir = process.env.TINYSTORE_NODE_DIR
if (!pkgDir) throw new Error('TINYSTORE_NODE_DIR: the node/ directory of the build to measure is not set')
const entry = join(pkgDir, 'dist', 'esm', 'index.mjs')
const { open } = await import(pathToFileURL(entry).href)

const REPS = Number(process.env.REPS ?? 3)
const SLICE_MS = Number(process.env.SLICE_MS ?? 400)
const ALLOWS = Number(process.env.ALLOWS ?? 20_000)
const times = (k, f) => Array.from({ length: k }, f)

async function measure(op, per) {
	const start = performance.now()
	let n = 0
	do {
		await op()
		n += per
	} while (performance.now() - start < SLICE_MS)
	return (n * 1000) / (performance.now() - start)
}

async function allows(rl) {
	const start = performance.now()
	for (let i = 0; i < ALLOWS; i++) await rl.allow('ip:hot')
	return (ALLOWS * 1000) / (performance.now() - start)
}

const root = mkdtempSync(join(tmpdir(), 'tinystore-builds-'))
process.on('exit', () => rmSync(root, { recursive: true, force: true }))
const store = await open(join(root, 'tinystore'))
const bucket = store.bucket('bench', { type: 'string' })
for (let i = 0; i < KEYS; i += 500) await Promise.all(times(500, (_, j) => bucket.set(keyOf(i + j), VALUE)))
for (let i = 0; i < SET_KEYS; i += 500) await Promise.all(times(500, (_, j) => bucket.set(setKeyOf(i + j), VALUE)))
const rl = store.rateLimit('api', { rate: '1000000000/s' })

const cases = {
	'get, 1 in flight': () => measure(async () => void (await bucket.get(nextKey())), 1),
	'set, 64 in flight': () => measure(() => Promise.all(times(64, () => bucket.set(nextSetKey(), nextValue()))), 64),
	'allow, one hot key': () => allows(rl),
}
const seen = Object.fromEntries(Object.keys(cases).map((k) => [k, []]))
for (let r = 0; r < REPS; r++) for (const [name, run] of Object.entries(cases)) seen[name].push(await run())
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
await store.close()
console.log(JSON.stringify({ package: pkgDir, rates: Object.fromEntries(Object.entries(seen).map(([k, xs]) => [k, median(xs)])) }))
