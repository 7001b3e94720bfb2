// KV-20: typed settings from layers (defaults, environment, kept updates), in TypeScript.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { field, fromEnv, InvalidError, LimitError, open, openConfig, type Store } from 'tinystore'

import { schema } from './settings.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const dirs: string[] = []
process.on('exit', () => {
	for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

async function fresh(): Promise<{ dir: string; store: Store }> {
	const dir = mkdtempSync(join(tmpdir(), 'tinystore-config-'))
	dirs.push(dir)
	return { dir, store: await open(dir) }
}

function throwsInvalid(fn: () => unknown, pattern: RegExp): void {
	assert.throws(fn, (e: unknown) => e instanceof InvalidError && pattern.test(e.message))
}

test('KV-20 layers in order: defaults, defaults objects, .env files, variables, kept updates', async () => {
	const { dir, store } = await fresh()
	const envFile = join(dir, '.env')
	writeFileSync(envFile, 'APP_LIMITS_RPS=150\nAPP_LIMITS_BURST=30\nAPP_HOST=from-file\n')
	const cfg = openConfig(store, 'app', schema, {
		defaults: [{ port: 9000, limits: { rps: 120 }, host: 'from-map' }],
		env: { prefix: 'APP', files: [envFile], vars: { APP_LIMITS_BURST: '40' } },
	})
	const s = cfg.get()
	assert.equal(s.ratio, 0.5)
	assert.equal(s.port, 9000)
	assert.equal(s.host, 'from-file')
	assert.deepEqual(s.limits, { rps: 150, burst: 40 })
	await cfg.update((s) => {
		s.limits.burst = 50
	})
	assert.equal(cfg.get().limits.burst, 50)
	const from = Object.fromEntries(cfg.sources().map((x) => [x.path, x]))
	assert.equal(from.ratio?.from, 'default')
	assert.equal(from.port?.from, 'defaults')
	assert.equal(from.host?.from, 'env_file')
	assert.equal(from.host?.var, 'APP_HOST')
	assert.equal(from['limits.burst']?.from, 'kept')
	assert.equal(from.token, undefined, 'sources hide a secret field')
	await store.close()
})

test('KV-20 env: each type is parsed, and a bad variable names itself', async () => {
	const { store } = await fresh()
	const vars = {
		APP_PORT: '9090',
		APP_HOST: 'example.org',
		APP_RATIO: '0.25',
		APP_DEBUG: 'on',
		APP_TIMEOUT: '1h30m',
		APP_HOSTS: 'a.com, b.com',
		APP_EXTRA: '{"k": [1, 2]}',
	}
	const s = openConfig(store, 'app', schema, { env: { prefix: 'APP', vars } }).get()
	assert.deepEqual(
		[s.port, s.host, s.ratio, s.debug, s.timeout, s.hosts, s.extra],
		[9090, 'example.org', 0.25, true, 5_400_000, ['a.com', 'b.com'], { k: [1, 2] }],
	)
	for (const [name, text] of [
		['APP_PORT', '80x'],
		['APP_DEBUG', 'maybe'],
		['APP_TIMEOUT', '90mins'],
		['APP_EXTRA', '{no'],
		['APP_HOSTS', '[1, 2]'],
	] as const) {
		throwsInvalid(() => openConfig(store, 'app', schema, { env: { prefix: 'APP', vars: { [name]: text } } }), new RegExp(name))
	}
	await store.close()
})

test('KV-20 secret and required fields', async () => {
	const { store } = await fresh()
	const db = {
		url: field.str('', { required: true, env: 'DATABASE_URL' }),
		password: field.str('', { secret: true }),
		pool: field.int(5),
	}
	throwsInvalid(() => openConfig(store, 'db', db, { env: { prefix: 'APP', vars: {} } }), /DATABASE_URL/)
	const cfg = openConfig(store, 'db', db, {
		env: { prefix: 'APP', vars: { DATABASE_URL: 'postgres://x', APP_PASSWORD: 's3cret' } },
	})
	assert.equal(cfg.get().password, 's3cret')
	await assert.rejects(
		cfg.update((d) => {
			d.url = ''
		}),
		(e: unknown) => e instanceof InvalidError && /required/.test(e.message),
	)
	await assert.rejects(
		cfg.update((d) => {
			d.password = 'other'
		}),
		(e: unknown) => e instanceof InvalidError && /secret/.test(e.message),
	)
	assert.equal(cfg.get().password, 's3cret')
	await store.close()
})

test('KV-20 update is checked before anything is written, and reset gives fields back', async () => {
	const { store } = await fresh()
	const cfg = openConfig(store, 'app', schema, {
		validate: (s) => (s.limits.burst > s.limits.rps ? `burst ${s.limits.burst} is over rps ${s.limits.rps}` : undefined),
	})
	const other = openConfig(store, 'app', schema)
	await cfg.update((s) => {
		s.limits.rps = 200
		s.timeout = 5000
	})
	assert.equal(other.get().limits.rps, 200, 'another handle sees it at once')
	await assert.rejects(
		cfg.update((s) => {
			s.port = 1
			s.limits.burst = 500
		}),
		(e: unknown) =>
			e instanceof InvalidError &&
			e.what.bucket === 'app' &&
			/^the config refused the update: burst 500 is over rps 200\b/.test(e.message),
	)
	await assert.rejects(
		cfg.update((s) => ({ ...s, port: 'eighty' as unknown as number })),
		(e: unknown) => e instanceof InvalidError && /port/.test(e.message),
	)
	assert.equal(cfg.get().port, 8080, 'refused whole: nothing written')
	await assert.rejects(
		cfg.update((s) => {
			s.host = 'x'.repeat(20_000)
		}),
		LimitError,
	)
	await cfg.reset('limits')
	assert.deepEqual(cfg.get().limits, { rps: 100, burst: 20 })
	assert.equal(cfg.get().timeout, 5000)
	await cfg.reset('timeout')
	assert.equal(other.get().timeout, 30_000)
	await assert.rejects(cfg.reset('nope'), InvalidError)
	await store.close()
})

test('KV-20 a kept value that no longer fits is left out and reported', async () => {
	const { store } = await fresh()
	const cfg = openConfig(store, 'app', schema)
	await cfg.update((s) => {
		s.host = 'kept.example'
		s.port = 7000
	})
	const changed = openConfig(store, 'app', { port: field.str('p'), host: field.int(1) })
	assert.deepEqual(changed.get(), { port: 'p', host: 1 })
	const host = changed.sources().find((x) => x.path === 'host')
	assert.match(host?.leftOut ?? '', /no longer fits/)
	assert.equal(openConfig(store, 'app', schema).get().port, 7000, 'the program changed back: kept values used again')
	const strict = openConfig(store, 'app', schema, {
		validate: (s) => (s.port < 8000 ? `port ${s.port} is under 8000` : undefined),
	})
	assert.equal(strict.get().host, 'localhost', 'kept values validate refuses together are all left out')
	assert.match(strict.sources().find((x) => x.path === 'host')?.leftOut ?? '', /port 7000 is under 8000/)
	await store.close()
})

test('KV-20 watch sees a change by another process within a second', async () => {
	const { dir, store } = await fresh()
	const cfg = openConfig(store, 'app', schema)
	const changes = cfg.watch()
	const child = spawn(process.execPath, [join(here, 'child.mjs'), dir], { stdio: 'inherit' })
	const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
	assert.equal(code, 0)
	const committed = performance.now()
	const timeout = (ms: number) => new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no change within ${ms} ms`)), ms))
	const seen = await Promise.race([changes.next(), timeout(1000)])
	assert.equal(seen.done, false)
	assert.equal(seen.value?.limits.rps, 777)
	assert.ok(performance.now() - committed < 1000)
	await cfg.update((s) => {
		s.port = 1234
	})
	const own = await Promise.race([changes.next(), timeout(500)])
	assert.equal(own.value?.port, 1234, "this process's own change, at once")
	await changes.return?.()
	await store.close()
})

test('KV-20 a watch ends when its signal aborts or the store closes', async () => {
	const { store } = await fresh()
	const cfg = openConfig(store, 'app', schema)
	const aborted = new AbortController()
	const stopped = cfg.watch({ signal: aborted.signal })
	const first = stopped.next()
	aborted.abort()
	assert.equal((await first).done, true, 'an abort is heard within a step')
	const changes = cfg.watch()
	const last = changes.next()
	await store.close()
	assert.equal((await last).done, true, 'the store closed')
})

test('KV-20 fromEnv stands where it is given among the defaults', async () => {
	const { store } = await fresh()
	const fromFile = { port: 7070 }
	const env = fromEnv('APP', { vars: { APP_PORT: '9090' } })
	assert.equal(openConfig(store, 'over', schema, { defaults: [env, fromFile] }).get().port, 7070, 'a later object is over the environment')
	assert.equal(openConfig(store, 'under', schema, { defaults: [fromFile, env] }).get().port, 9090)
	throwsInvalid(() => openConfig(store, 'twice', schema, { defaults: [env], env: { prefix: 'APP' } }), /the environment is one layer: give FromEnv once/)
	await store.close()
})

test('KV-20 a variable is the prefix and the path in upper snake case', async () => {
	const { store } = await fresh()
	const server = { HTTPServer: field.str(''), userID: field.int(0) }
	const cfg = openConfig(store, 'server', server, {
		env: { prefix: 'APP', vars: { APP_HTTP_SERVER: '0.0.0.0:80', APP_USER_ID: '7' } },
	})
	assert.deepEqual(cfg.get(), { HTTPServer: '0.0.0.0:80', userID: 7 })
	await store.close()
})

test('KV-20 every bad variable and every missing required field in one error', async () => {
	const { store } = await fresh()
	const db = { url: field.str('', { required: true, env: 'DATABASE_URL' }), pool: field.int(5) }
	throwsInvalid(
		() => openConfig(store, 'db', db, { env: { prefix: 'APP', vars: { APP_POOL: 'many' } } }),
		/2 problems.*(APP_POOL.*DATABASE_URL|DATABASE_URL.*APP_POOL)/,
	)
	await store.close()
})

test('KV-20 layers that validate refuses are refused at open', async () => {
	const { store } = await fresh()
	const validate = (s: { port: number }) => (s.port < 8000 ? `port ${s.port} is under 8000` : undefined)
	throwsInvalid(() => openConfig(store, 'app', schema, { defaults: [{ port: 80 }], validate }), /layers are refused.*port 80 is under 8000/)
	assert.equal(openConfig(store, 'app', schema, { defaults: [{ port: 8081 }], validate }).get().port, 8081)
	await store.close()
})

test('KV-20 .env files as people write them', async () => {
	const { dir, store } = await fresh()
	const envFile = join(dir, '.env')
	const pem = '-----BEGIN KEY-----\nMIIB\n-----END KEY-----'
	writeFileSync(envFile, `APP_HOST="${pem}"\nAPP_PORT=9090\n`)
	const cfg = openConfig(store, 'app', schema, { env: { prefix: 'APP', files: [envFile], vars: {} } })
	assert.equal(cfg.get().host, pem)
	assert.equal(cfg.get().port, 9090)
	writeFileSync(envFile, '1APP_PORT=1\n')
	throwsInvalid(() => openConfig(store, 'other', schema, { env: { prefix: 'APP', files: [envFile], vars: {} } }), /must not start with a digit/)
	await store.close()
})
