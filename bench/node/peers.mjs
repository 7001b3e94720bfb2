// TinyStore KV's rate limit from Node and Bun against rate-limiter-flexible's
// RateLimiterMemory: `allow` on one hot key and on 100,000 keys,
// both in process memory (TinyStore flushes its limits to kv.db once a
// second; rate-limiter-flexible keeps them in memory only). Contenders
// alternate round by round; each figure is the median of its rounds, and the
// report gives the machine, the command and the load average. Run with
// `make bench-node-peers` (node, then bun); SHORT=1 for a quick check.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { cpus, loadavg, release, tmpdir } from 'node:os'
import { basename, dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

import { open } from 'tinystore'

const require = createRequire(import.meta.url)
const { RateLimiterMemory } = require('rate-limiter-flexible')

const SHORT = process.env.SHORT === '1'
// Rounds of 300,000 calls (about 0.15 s each): rounds of 50,000 left the
// hot key's ratio swinging from 0.82 to 1.10 between runs, a garbage
// collection or a recompile being a large part of a 30 ms round.
const ROUNDS = Number(process.env.ROUNDS ?? (SHORT ? 3 : 9))
const CALLS = Number(process.env.CALLS ?? (SHORT ? 5_000 : 300_000))
const KEYS = Number(process.env.KEYS ?? 100_000)
const runtime = typeof globalThis.Bun !== 'undefined' ? `bun ${globalThis.Bun.version}` : `node ${process.version}`
const rlfVersion = JSON.parse(readFileSync(require.resolve('rate-limiter-flexible/package.json'), 'utf8')).version

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
	peer: `rate-limiter-flexible ${rlfVersion}`,
}
console.log(`== ${runtime}: rate limits against rate-limiter-flexible ${rlfVersion}`)
console.log(`# machine: ${meta.cpu}, ${meta.cores} cores, Linux ${meta.kernel}`)
console.log(`# command: ${meta.command}`)
console.log(`# load average at start: ${meta.load.join(' ')}; ${ROUNDS} alternating rounds of ${CALLS} calls, medians`)
if (Number(meta.load[0]) > meta.cores) console.log('# WARNING: the load average is above the core count: figures are noisy')

const root = mkdtempSync(join(tmpdir(), 'tinystore-peers-'))
process.on('exit', () => rmSync(root, { recursive: true, force: true }))
const store = await open(join(root, 'ts'))
// A rate high enough that every call passes in both: the cost of counting,
// not of refusing. A million a second was not: Bun ran more than a million
// consumes of the hot key inside one of rate-limiter-flexible's one-second
// windows, and a refused consume rejects its promise.
const ours = store.rateLimit('api', { rate: '1000000000/s' })
const theirs = new RateLimiterMemory({ points: 1_000_000_000, duration: 1 })

let seed = 7
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)
const many = Array.from({ length: CALLS }, () => `ip:${Math.floor(rand() * KEYS)}`)
const hot = Array.from({ length: CALLS }, () => 'ip:hot')

async function rate(fn, keys) {
	const start = performance.now()
	for (const k of keys) await fn(k)
	return (keys.length * 1000) / (performance.now() - start)
}

const cases = {
	'tinystore allow, one hot key': () => rate((k) => ours.allow(k), hot),
	[`tinystore allow, ${KEYS} keys`]: () => rate((k) => ours.allow(k), many),
	'rate-limiter-flexible consume, one hot key': () => rate((k) => theirs.consume(k), hot),
	[`rate-limiter-flexible consume, ${KEYS} keys`]: () => rate((k) => theirs.consume(k), many),
}
const seen = Object.fromEntries(Object.keys(cases).map((k) => [k, []]))
for (let r = 0; r < ROUNDS; r++) {
	const order = Object.keys(cases)
	if (r % 2) order.reverse()
	for (const name of order) seen[name].push(await cases[name]())
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const rows = Object.fromEntries(Object.entries(seen).map(([k, xs]) => [k, median(xs)]))
await store.close()

console.log('\n| measure | ops/s | µs/op |\n|---|---:|---:|')
for (const [name, v] of Object.entries(rows)) console.log(`| ${name} | ${Math.round(v).toLocaleString('en')} | ${(1e6 / v).toFixed(2)} |`)
// The paired ratio: the median over the rounds of the two rates in one
// round, which cancels what slows a whole round (as bench.mjs says).
const paired = (a, b) => median(seen[a].map((x, r) => x / seen[b][r]))
const ratios = [
	['allow, hot key / rate-limiter-flexible (paired)', paired('tinystore allow, one hot key', 'rate-limiter-flexible consume, one hot key'), '> 1 (ahead)'],
	[`allow, ${KEYS} keys / rate-limiter-flexible (paired)`, paired(`tinystore allow, ${KEYS} keys`, `rate-limiter-flexible consume, ${KEYS} keys`), '> 1 (ahead)'],
]
console.log('\n| ratio | value | target |\n|---|---:|---|')
for (const [name, v, target] of ratios) console.log(`| ${name} | ${v.toFixed(2)} | ${target} |`)

const results = join(dirname(dirname(fileURLToPath(import.meta.url))), 'results')
mkdirSync(results, { recursive: true })
const file = join(results, `${runtime.split(' ')[0]}-peers${SHORT ? '-short' : ''}.json`)
const section = { title: `${runtime}: rate limits against rate-limiter-flexible ${rlfVersion}`, rows, ratios }
writeFileSync(file, JSON.stringify({ meta: { ...meta, load_end: load() }, limits: section }, null, 1))
console.log(`# load average at the end: ${load().join(' ')}; results in ${file}`)
