// The Node/Bun agent of the cross-language tests, over the npm package's
// public API; the same file runs under `node` and under `bun`. Commands and
// what they print are in tests/interchange/README.md and
// tests/processes/README.md; tests/agents/rust/src/main.rs is the reference.

import { readFileSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'

import { open } from '../../../node/dist/esm/index.mjs'
import { isBig, lossy, packageType, parseJson, sameValue, show, text, toJs } from '../../conformance/node/values.mjs'
import * as limits from './limits.mjs'

/** Waits for the start time cross.py gives every racer (CROSS_START_AT_MS), so that slow starters race too. */
async function startLine() {
	const at = Number(process.env.CROSS_START_AT_MS ?? 0)
	if (at > Date.now()) await sleep(at - Date.now())
}

const language = typeof globalThis.Bun === 'undefined' ? 'node' : 'bun'

/** Prints one line at once: the driver reads lines while the agent runs. */
function say(line) {
	writeSync(1, `${line}\n`)
}

function fixture() {
	const path = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'interchange', 'values.json')
	return parseJson(readFileSync(path, 'utf8'))
}

/** The bucket `ix-<type>` of an item, in the package type that holds its value. */
function ixBucket(store, ty, big) {
	return store.bucket(`ix-${ty}`, { type: packageType(ty, big) })
}

async function ixWrite(store, owner) {
	let bad = 0
	for (const item of fixture()) {
		try {
			const b = ixBucket(store, item.type, isBig(item.type, item.value)).under(owner)
			await b.set(text(item.key), toJs(item.type, item.value))
		} catch (e) {
			bad++
			say(`MISMATCH ${owner} ${item.type} ${JSON.stringify(text(item.key))}: cannot write: ${e.message}`)
		}
	}
	if (bad === 0) say('ok')
	return bad === 0
}

async function ixRead(store, owner) {
	const items = fixture()
	let bad = 0
	for (const item of items) {
		const key = text(item.key)
		let got
		try {
			const e = await ixBucket(store, item.type, isBig(item.type, item.value)).under(owner).entry(key)
			if (e !== undefined && sameValue(item.type, item.value, e.value)) continue
			got = e === undefined ? 'nothing' : show(e.value)
		} catch (e) {
			got = `${e.constructor.name}: ${e.message}`
		}
		bad++
		say(`MISMATCH ${owner} ${item.type} ${JSON.stringify(key)}: got ${got}`)
	}
	// Keys come back in the byte order of their text; an int bucket lists through `bigint`, which reads every int64.
	for (const ty of [...new Set(items.map((i) => i.type))]) {
		const want = items
			.filter((i) => i.type === ty)
			.map((i) => Buffer.from(text(i.key)))
			.sort(Buffer.compare)
			.map((k) => k.toString())
		let got
		try {
			const page = await ixBucket(store, ty, true).under(owner).list({ limit: 1000 })
			got = page.entries.map((e) => lossy(e.key))
			if (JSON.stringify(got) === JSON.stringify(want)) continue
		} catch (e) {
			got = `${e.constructor.name}: ${e.message}`
		}
		bad++
		say(`MISMATCH ${owner} ${ty} list order: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`)
	}
	if (bad === 0) say(`ok ${items.length}`)
	return bad === 0
}

/**
 * Copies OWNER's interchange rows from `src` to the store in `dstDir` through
 * raw buckets, as they are (see the Rust agent's raw_copy.rs).
 */
async function ixRawCopy(src, dstDir, owner) {
	const dst = await open(dstDir)
	let [n, nulls, ints, bytes, empty, size] = [0, 0, 0, 0, 0, 0]
	for (const ty of [...new Set(fixture().map((item) => item.type))].sort()) {
		const to = dst.bucket(`ix-${ty}`, { type: 'raw' }).under(owner)
		for await (const e of src.bucket(`ix-${ty}`, { type: 'raw' }).under(owner).all()) {
			if (e.value === null) nulls++
			else if (typeof e.value === 'bigint') ints++
			else {
				bytes++
				if (e.value.length === 0) empty++
				size += e.value.length
			}
			await to.set(e.key, e.value)
			n++
		}
	}
	await dst.close()
	say(`copied ${n} null=${nulls} int=${ints} bytes=${bytes} empty=${empty} size=${size}`)
	return true
}

/** Runs one command on the store in `args[1]`; resolves with whether it passed. */
async function run(args) {
	const [cmd = '', dir = 'data'] = args
	const arg = (i) => args[i] ?? ''
	const num = (i) => Number.parseInt(arg(i), 10) || 0
	const store = await open(dir)
	if (limits.commands.has(cmd)) {
		const ok = await limits.run(store, cmd, arg, say, startLine)
		await store.close()
		return ok
	}
	let ok = true
	switch (cmd) {
		case 'ix-write':
			ok = await ixWrite(store, arg(2))
			break
		case 'ix-read':
			ok = await ixRead(store, arg(2))
			break
		case 'ix-raw-copy':
			ok = await ixRawCopy(store, arg(2), arg(3))
			break
		case 'hb-write':
		case 'hb-read':
		case 'hb-take': {
			// The handbook's declarations are TypeScript: Bun runs the source, Node what tsc made of it.
			const handbook = await import(language === 'bun' ? './handbook.ts' : './handbook.js')
			const user = Number.parseInt(arg(3), 10)
			if (!Number.isSafeInteger(user)) throw new Error(`a user id, not ${JSON.stringify(arg(3))}`)
			ok = await handbook[cmd.slice(3)](store, arg(2), user)
			break
		}
		case 'clear-writes': {
			const b = store.bucket('race-clear', { type: 'string' }).under('b')
			await startLine()
			const end = Date.now() + num(3)
			for (let i = 0; Date.now() < end; i++) {
				const key = `${arg(2)}${i}`
				const t0 = Date.now()
				await b.set(key, 'new')
				say(`wrote ${key} ${t0} ${Date.now()}`)
			}
			say('done')
			break
		}
		case 'take-setup': {
			const b = store.bucket('race-take', { type: 'string' })
			await Promise.all(Array.from({ length: num(2) }, (_, r) => b.set(`r${r}`, 'prize')))
			say('ready')
			break
		}
		case 'take-rounds': {
			const b = store.bucket('race-take', { type: 'string' })
			await startLine()
			for (let r = 0; r < num(2); r++) {
				if ((await b.take(`r${r}`)) !== undefined) say(`won ${r}`)
			}
			break
		}
		case 'once-run':
		case 'once-hang': {
			const once = store.once('race-once', { type: 'string', keep: '1d' })
			const got = await once.run(arg(2), async () => {
				if (cmd === 'once-hang') {
					say('running')
					// Never returns: the driver kills this process mid-run.
					setInterval(() => {}, 3_600_000)
					return new Promise(() => {})
				}
				say('ran')
				await sleep(num(3))
				return arg(4)
			})
			say(`answer ${got}`)
			break
		}
		case 'quota-allows': {
			const q = store.quota('race-quota', { daily: '10/1d' })
			await startLine()
			let passed = 0
			for (let i = 0; i < num(2); i++) if ((await q.allow('u')).ok) passed++
			say(`passed ${passed}`)
			break
		}
		case 'counter-adds': {
			const c = store.counters('race-counter')
			await startLine()
			for (let i = 0; i < num(2); i++) await c.add('k', 1)
			say('done')
			break
		}
		case 'counter-get':
			say(`value ${await store.counters('race-counter').get('k')}`)
			break
		default:
			process.stderr.write(`tinystore-agent (${language}): unknown command ${JSON.stringify(cmd)}\n`)
			ok = false
	}
	await store.close()
	return ok
}

try {
	process.exitCode = (await run(process.argv.slice(2))) ? 0 : 1
} catch (e) {
	process.stderr.write(`tinystore-agent (${language}): ${e?.stack ?? e}\n`)
	process.exitCode = 1
}
