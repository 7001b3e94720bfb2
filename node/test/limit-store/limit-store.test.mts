// The limit store under Node and Bun: the framework's limit-store
// contract run against two handles on one kv.db (two stores on one
// directory, as two instances hold it) and against two processes, and the
// promises of its database store (docs/limit-store.md). The titles carry
// the promises' words: "contract: ..." and "store: ...".
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createHash } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

import { InvalidError, LimitError, open, type Store } from 'tinystore'
import { limitStore, type LimitEntry, type LimitStore, type LimitStoreLogLine } from 'tinystore/limit-store'

const T0 = new Date('2026-10-20T08:00:00Z')
const dirs: string[] = []
process.on('exit', () => {
	for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

function freshDir(): string {
	const d = mkdtempSync(join(tmpdir(), 'tinystore-limit-'))
	dirs.push(d)
	return d
}

/** Captures what the store logs. */
function logger(): { lines: Array<LimitStoreLogLine & { level: string }>; warn(l: LimitStoreLogLine): void; error(l: LimitStoreLogLine): void } {
	const lines: Array<LimitStoreLogLine & { level: string }> = []
	return {
		lines,
		warn: (l) => lines.push({ ...l, level: 'warn' }),
		error: (l) => lines.push({ ...l, level: 'error' }),
	}
}

/** Two stores on one directory with test clocks moved together, and a limit store on each. */
async function twoHandles(maxEntries?: number) {
	const dir = freshDir()
	const a = await open(dir, { clock: T0 })
	const b = await open(dir, { clock: T0 })
	const logA = logger()
	const logB = logger()
	const first = limitStore(a, { maxEntries, logger: logA })
	const second = limitStore(b, { maxEntries, logger: logB })
	return {
		dir,
		first,
		second,
		logA,
		logB,
		advance(ms: number) {
			a.clock.advance(ms)
			b.clock.advance(ms)
		},
		now: () => a.clock.now().getTime(),
		async [Symbol.asyncDispose]() {
			await a.close()
			await b.close()
		},
	}
}

/** Adds one to the count of `key`, in a window of a minute from its first count. */
function countOnce(ls: LimitStore, key: string): Promise<number> {
	return ls
		.update([key], (entries, now) => {
			const e = entries.get(key)
			return { [key]: { value: ((e?.value as number | undefined) ?? 0) + 1, expiresAt: e?.expiresAt ?? now + 60_000 } }
		})
		.then((m) => m.get(key)?.value as number)
}

async function rejection(p: Promise<unknown>): Promise<Error & { code?: string; what?: { key?: string } }> {
	try {
		await p
	} catch (e) {
		return e as Error
	}
	assert.fail('expected a rejection')
}

function fileBytes(dir: string): Buffer {
	return Buffer.concat(readdirSync(dir).map((f) => readFileSync(join(dir, f))))
}

test('contract: shared, update(keys, apply), read(keys), sweep(), and the default bound', async () => {
	await using t = await twoHandles()
	for (const ls of [t.first, t.second]) {
		assert.equal(ls.shared, true)
		assert.equal(typeof ls.update, 'function')
		assert.equal(typeof ls.read, 'function')
		assert.equal(typeof ls.sweep, 'function')
		assert.equal(ls.maxEntries, 1_000_000)
	}
})

test('contract: every instance sees the same entries (two handles on one kv.db)', async () => {
	await using t = await twoHandles()
	assert.equal(await countOnce(t.first, 'sign-in:ada'), 1)
	assert.equal(await countOnce(t.second, 'sign-in:ada'), 2)
	const seen = await t.first.read(['sign-in:ada', 'sign-in:bob'])
	assert.deepEqual([...seen.keys()], ['sign-in:ada'])
	assert.equal(seen.get('sign-in:ada')?.value, 2)
})

test("contract: update calls apply with the live entries and the store's clock in ms, and writes what it returns", async () => {
	await using t = await twoHandles()
	const calls: Array<[Map<string, LimitEntry>, number]> = []
	const out = await t.first.update(['a', 'b'], (entries, now) => {
		calls.push([new Map(entries), now])
		return new Map([['a', { value: { n: 1, tags: ['x'] }, expiresAt: now + 1000 }]])
	})
	assert.deepEqual(calls, [[new Map(), T0.getTime()]])
	assert.deepEqual(out, new Map([['a', { value: { n: 1, tags: ['x'] }, expiresAt: T0.getTime() + 1000 }]]))
	t.advance(10)
	let seen: [Map<string, LimitEntry>, number] | undefined
	await t.second.update(['b', 'a'], (entries, now) => {
		seen = [new Map(entries), now]
	})
	assert.deepEqual(seen, [new Map([['a', { value: { n: 1, tags: ['x'] }, expiresAt: T0.getTime() + 1000 }]]), T0.getTime() + 10])
})

test('contract: null deletes', async () => {
	await using t = await twoHandles()
	await t.first.update(['k', 'other'], (_, now) => ({
		k: { value: 1, expiresAt: now + 60_000 },
		other: { value: 2, expiresAt: now + 60_000 },
	}))
	const out = await t.second.update(['k'], () => ({ k: null }))
	assert.equal(out.size, 0)
	assert.equal((await t.first.read(['k'])).size, 0)
	assert.equal((await t.first.read(['other'])).get('other')?.value, 2)
	await t.first.update(['never'], () => ({ never: null })) // deleting an absent key is no error
})

test("contract: expiry is judged on the store's clock", async () => {
	await using t = await twoHandles()
	await t.first.update(['k'], (_, now) => ({ k: { value: 5, expiresAt: now + 60_000 } }))
	t.advance(59_999)
	assert.equal((await t.second.read(['k'])).get('k')?.value, 5)
	t.advance(1)
	assert.equal((await t.second.read(['k'])).size, 0, 'gone at expiresAt')
	let sawSize = -1
	await t.first.update(['k'], (entries) => {
		sawSize = entries.size
	})
	assert.equal(sawSize, 0, 'apply sees no expired entry')
	const out = await t.first.update(['old'], (_, now) => ({ old: { value: 1, expiresAt: now } }))
	assert.equal(out.size, 0, 'an entry written already expired is absent at once')
})

test('contract: sweep removes expired entries and answers how many went', async () => {
	await using t = await twoHandles()
	await t.first.update(['a', 'b', 'c'], (_, now) => ({
		a: { value: 1, expiresAt: now + 1000 },
		b: { value: 1, expiresAt: now + 2000 },
		c: { value: 1, expiresAt: now + 600_000 },
	}))
	t.advance(5000)
	assert.equal(await t.second.sweep(), 2)
	assert.equal(await t.first.sweep(), 0)
	assert.equal((await t.first.read(['c'])).get('c')?.value, 1)
})

test('contract: concurrent updates on two handles never lose a count', async () => {
	await using t = await twoHandles()
	let runs = 0
	const bump = (ls: LimitStore) =>
		ls.update(['hot'], (entries, now) => {
			runs++
			return { hot: { value: ((entries.get('hot')?.value as number | undefined) ?? 0) + 1, expiresAt: now + 60_000 } }
		})
	await Promise.all(Array.from({ length: 60 }, (_, i) => bump(i % 2 ? t.first : t.second)))
	assert.equal((await t.first.read(['hot'])).get('hot')?.value, 60)
	assert.ok(runs > 60, 'apply ran again for updates that raced')
})

test('contract: concurrent updates in two processes never lose a count', async () => {
	const dir = freshDir()
	const child = fileURLToPath(new URL('./count-child.mjs', import.meta.url))
	const run = promisify(execFile)
	const runtime = process.execPath
	await Promise.all([run(runtime, [child, dir, '100']), run(runtime, [child, dir, '100'])])
	const store = await open(dir)
	const ls = limitStore(store)
	assert.equal((await ls.read(['one-key'])).get('one-key')?.value, 200)
	await store.close()
})

test('store: keys are stored as their SHA-256, never the key itself', async () => {
	const dir = freshDir()
	const store = await open(dir, { clock: T0 })
	const key = 'password-reset:ada.lovelace@example.com'
	await limitStore(store).update([key], (_, now) => ({ [key]: { value: 1, expiresAt: now + 60_000 } }))
	await store.close()
	const bytes = fileBytes(dir)
	assert.equal(bytes.includes(key), false, 'the key is in the file')
	assert.equal(bytes.includes('ada.lovelace'), false, 'part of the key is in the file')
	assert.equal(bytes.includes(createHash('sha256').update(key).digest()), true, "the key's digest is not in the file")
})

test('store: a value over 4 KB is refused with an error naming the key, and the file is unchanged', async () => {
	const dir = freshDir()
	let store: Store = await open(dir, { clock: T0 })
	await limitStore(store).update(['fits'], (_, now) => ({ fits: { value: 'x'.repeat(4094), expiresAt: now + 1000 } }))
	await store.close()
	const before = fileBytes(dir)
	store = await open(dir, { clock: T0 })
	const ls = limitStore(store)
	const e = await rejection(ls.update(['k'], (_, now) => ({ k: { value: 'x'.repeat(4095), expiresAt: now + 1000 } })))
	assert.ok(e instanceof LimitError, String(e))
	assert.equal(e.what?.key, 'k')
	assert.match(e.message, /4097 bytes/)
	const bad = await rejection(ls.update(['k'], () => ({ k: { value: 1n, expiresAt: 1 } })))
	assert.ok(bad instanceof InvalidError, String(bad))
	const noExpiry = await rejection(ls.update(['k'], () => ({ k: { value: 1, expiresAt: Number.NaN } })))
	assert.ok(noExpiry instanceof InvalidError, String(noExpiry))
	const stranger = await rejection(ls.update(['k'], () => ({ z: null })))
	assert.ok(stranger instanceof InvalidError && stranger.what?.key === 'z', String(stranger))
	await store.close()
	assert.ok(before.equals(fileBytes(dir)), 'a refused update changed the file')
})

const badAnswers: Array<[string, (now: number) => Record<string, LimitEntry | null>, string, string]> = [
	['a stranger key', (now) => ({ z: { value: 1, expiresAt: now } }), 'z', 'apply returned a key that is not one of the keys of the update'],
	['an expiry of NaN', () => ({ k: { value: 1, expiresAt: Number.NaN } }), 'k', "an entry's expiry must be a finite number of ms, not NaN"],
	['an expiry of Infinity', () => ({ k: { value: 1, expiresAt: Infinity } }), 'k', "an entry's expiry must be a finite number of ms, not infinity"],
	['a value that is not JSON', (now) => ({ k: { value: 1n, expiresAt: now } }), 'k', 'the value cannot be written as JSON: '],
]

for (const [what, answer, key, message] of badAnswers) {
	test(`store: ${what} from apply is the core's InvalidError naming the key, and the next update writes`, async () => {
		const store = await open(freshDir(), { clock: T0 })
		const ls = limitStore(store)
		const e = await rejection(ls.update(['k'], (_, now) => answer(now)))
		assert.ok(e instanceof InvalidError, String(e))
		assert.ok(e.message.includes(message), e.message)
		assert.equal(e.what?.key, key)
		await ls.update(['k'], (_, now) => ({ k: { value: 1, expiresAt: now + 1000 } }))
		assert.deepEqual([...(await ls.read(['k']))], [['k', { value: 1, expiresAt: T0.getTime() + 1000 }]])
		await store.close()
	})
}

test('store: the bound warns at 80% (limit-store-filling)', async () => {
	await using t = await twoHandles(10)
	for (let i = 0; i < 7; i++) await countOnce(t.first, `k${i}`)
	assert.equal(t.logA.lines.length, 0)
	await countOnce(t.first, 'k7')
	assert.equal(t.logA.lines.length, 1)
	assert.equal(t.logA.lines[0]?.kind, 'limit-store-filling')
	assert.equal(t.logA.lines[0]?.level, 'warn')
	assert.match(t.logA.lines[0]?.msg ?? '', /8 of its 10/)
})

test('store: when full, a new key is unavailable, logged once a minute (limit-store-full); held keys keep counting', async () => {
	await using t = await twoHandles(5)
	for (let i = 0; i < 5; i++) await countOnce(t.first, `held${i}`)
	const e = await rejection(countOnce(t.second, 'new'))
	assert.ok(e instanceof LimitError, String(e))
	assert.equal(e.what?.key, 'new')
	assert.match(e.message, /unavailable/)
	assert.deepEqual(
		t.logB.lines.filter((l) => l.level === 'error').map((l) => l.kind),
		['limit-store-full'],
	)
	assert.equal(await countOnce(t.second, 'held0'), 2, 'a held key keeps counting')
	await rejection(countOnce(t.second, 'new2'))
	assert.equal(t.logB.lines.filter((l) => l.level === 'error').length, 1, 'at most once a minute')
	t.advance(61_000) // every window ended: the full store removes them and takes the key
	assert.equal(await countOnce(t.second, 'new'), 1)
})

test('store: apply that throws rejects with its error and writes nothing', async () => {
	await using t = await twoHandles()
	for (let i = 0; i < 70; i++) {
		const e = await rejection(t.first.update(['k'], () => {
			throw new RangeError('no')
		}))
		assert.ok(e instanceof RangeError)
	}
	assert.equal((await t.first.read(['k'])).size, 0)
	assert.equal(await countOnce(t.first, 'k'), 1, 'a thrown apply gives its call back')
})

test('store: the 65th call in flight is answered unavailable at once', async () => {
	await using t = await twoHandles()
	const calls = Array.from({ length: 65 }, (_, i) => countOnce(t.first, `k${i}`).then(() => 'ok', (e: Error) => e))
	const answers = await Promise.all(calls)
	const refused = answers.filter((a) => a !== 'ok')
	assert.equal(refused.length, 1)
	assert.ok(refused[0] instanceof LimitError)
	assert.match(String(refused[0]), /64 calls are in flight/)
	assert.equal(await countOnce(t.first, 'k64'), 1, 'room again once they finish')
})

test('store: the README example runs as written', async () => {
	const readme = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8')
	const block = /<!-- limit-store example -->\n```ts\n([\s\S]*?)```/.exec(readme)?.[1]
	assert.ok(block, 'the README has the limit-store example')
	const ts = createRequire(import.meta.url)('typescript') as typeof import('typescript')
	const dir = freshDir()
	const js = ts.transpileModule(block.replace("open('data')", `open(${JSON.stringify(dir)})`), {
		compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
	}).outputText
	// Inside the package, so that 'tinystore' resolves to it.
	const file = fileURLToPath(new URL(`./readme-example-${process.pid}.mjs`, import.meta.url))
	writeFileSync(file, js)
	try {
		const { stdout } = await promisify(execFile)(process.execPath, [file])
		const lines = stdout.trim().split('\n')
		assert.deepEqual(lines.slice(0, 6), ['true', 'true', 'true', 'true', 'true', 'false'])
		assert.match(stdout, /value: 5/)
		assert.equal(lines.at(-1), '0')
	} finally {
		rmSync(file, { force: true })
	}
})

const refusedCalls: Array<[string, (ls: LimitStore) => Promise<unknown>, string, string | undefined]> = [
	['keys as text', (ls) => ls.read('abc' as unknown as string[]), "a limit store's keys are a list of strings, not string abc", undefined],
	['a key of a number', (ls) => ls.read([5 as unknown as string]), 'a limit store key is a string, not number 5', undefined],
	['no apply', (ls) => ls.update(['k'], null as unknown as LimitApplyOf), 'an update needs a function to call, not object null', undefined],
	['apply returning a number', (ls) => ls.update(['k'], () => 5 as unknown as undefined), 'apply returns a map of key to entry (none to delete it), or nothing, not number 5', undefined],
	['an entry of a number', (ls) => ls.update(['k'], () => ({ k: 5 as unknown as LimitEntry })), 'an entry is a value and its expiry, or none to delete the key, not number 5', 'k'],
	['an expiry of text', (ls) => ls.update(['k'], () => ({ k: { value: 1, expiresAt: 'soon' as unknown as number } })), "an entry's expiry is a number of ms, not string soon", 'k'],
]
type LimitApplyOf = Parameters<LimitStore['update']>[1]

for (const [what, call, message, key] of refusedCalls) {
	test(`store: ${what} is the core's text naming the store`, async () => {
		const store = await open(freshDir(), { clock: T0 })
		const e = await rejection(call(limitStore(store, { name: 'sends' })))
		assert.ok(e instanceof InvalidError, String(e))
		assert.ok(e.message.startsWith(`${message} (bucket sends`), e.message)
		assert.deepEqual(e.what, key === undefined ? { bucket: 'sends' } : { bucket: 'sends', key })
		await store.close()
	})
}

test("store: a bound out of range is the core's one text naming the store", async () => {
	const store = await open(freshDir(), { clock: T0 })
	for (const n of [0, -1, 1.5, Number.NaN]) {
		const e = (() => {
			try {
				limitStore(store, { maxEntries: n, name: 'sends' })
			} catch (err) {
				return err as InvalidError
			}
			return assert.fail('accepted')
		})()
		assert.ok(e instanceof InvalidError, String(e))
		assert.equal(
			e.message,
			`max_entries (maxEntries) is ${n}: a limit store holds a whole number of entries from 1 to 2^63-1 (bucket sends)`,
		)
		assert.equal(e.what.bucket, 'sends')
	}
	assert.throws(
		() => limitStore({} as Store, { name: 'sends' }),
		(e: unknown) => e instanceof InvalidError && e.what.bucket === 'sends' && e.message.startsWith('a limit store opens over an open store, not object'),
	)
	assert.equal(limitStore(store, { maxEntries: Number.MAX_SAFE_INTEGER }).maxEntries, Number.MAX_SAFE_INTEGER)
	const ls = limitStore(store, { name: 'sends' })
	const stranger = await rejection(ls.update(['k'], () => ({ z: null })))
	assert.deepEqual(stranger.what, { bucket: 'sends', key: 'z' })
	await store.close()
})
