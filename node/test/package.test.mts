// The package as a user gets it: `npm pack`, then `npm install` of the
// tarball into a clean project, used from Node and Bun, through `import`
// and `require`, with its types. (Runs under `node --test` only: it starts
// Bun itself.)
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readdirSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join, resolve } from 'node:path'
import { test } from 'node:test'

import * as esm from 'tinystore'

import { freshDir } from './helpers.mjs'

const pkg = resolve(new URL('.', import.meta.url).pathname, '..')
const bun = join(pkg, 'node_modules', '.bin', 'bun')
const inBun = typeof (globalThis as { Bun?: unknown }).Bun !== 'undefined'

test('package: import and require give the same classes and one addon', () => {
	const cjs = createRequire(import.meta.url)('tinystore') as typeof esm
	assert.equal(cjs.Store, esm.Store)
	assert.equal(cjs.TinystoreError, esm.TinystoreError)
	assert.deepEqual(Object.keys(cjs).sort(), Object.keys(esm).sort())
})

const use = `
	const dir = process.argv[2]
	const store = await open(dir, { clock: new Date('2026-10-20T08:00:00Z') })
	const codes = store.bucket('sign-in-codes', { ttl: '15m', type: 'int' })
	await codes.set('digest', 42)
	const got = await codes.take('digest')
	let code
	try { await codes.set('', 1) } catch (e) { code = e instanceof InvalidError && e.code }
	await store.close()
	console.log(JSON.stringify({ got, code }))
`

test('package: npm install of the packed tarball works in a clean project, in Node and Bun, by import and require, with types', { skip: inBun }, () => {
	const out = freshDir()
	execFileSync('npm', ['pack', '--pack-destination', out, '--silent'], { cwd: pkg, stdio: 'pipe' })
	const tarball = readdirSync(out).find((f) => f.endsWith('.tgz'))
	assert.ok(tarball, 'npm pack made a tarball')
	const app = join(out, 'app')
	execFileSync('mkdir', ['-p', app])
	writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, version: '1.0.0' }))
	execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(out, tarball)], {
		cwd: app,
		stdio: 'pipe',
	})
	writeFileSync(join(app, 'esm.mjs'), `import { open, InvalidError } from 'tinystore'\n${use}`)
	writeFileSync(
		join(app, 'cjs.cjs'),
		`const { open, InvalidError } = require('tinystore')\n;(async () => {${use}})()`,
	)
	const want = { got: 42, code: 'INVALID' }
	for (const [runtime, script] of [
		[process.execPath, 'esm.mjs'],
		[process.execPath, 'cjs.cjs'],
		[bun, 'esm.mjs'],
		[bun, 'cjs.cjs'],
	] as const) {
		const printed = execFileSync(runtime, [script, freshDir()], { cwd: app, encoding: 'utf8' })
		assert.deepEqual(JSON.parse(printed), want, `${runtime} ${script}`)
	}
	// The types ship with it: a strict nodenext project type-checks against them,
	// from an ES module and from CommonJS.
	writeFileSync(
		join(app, 'typed.mts'),
		`import { open, type Duration } from 'tinystore'\n` +
			`const store = await open('data')\n` +
			`const n: number | undefined = await store.bucket('c', { type: 'int' }).get('k')\n` +
			`const d: Duration = '1h30m'\nvoid n; void d\n`,
	)
	writeFileSync(
		join(app, 'typed.cts'),
		`import tinystore = require('tinystore')\n` +
			`export async function f(): Promise<string | undefined> {\n` +
			`  const store = await tinystore.open('data')\n` +
			`  return store.bucket('s', { type: 'string' }).get('k')\n}\n`,
	)
	writeFileSync(
		join(app, 'tsconfig.json'),
		JSON.stringify({
			compilerOptions: {
				strict: true,
				noEmit: true,
				module: 'nodenext',
				target: 'es2022',
				lib: ['es2022', 'esnext.disposable'],
				types: [],
				skipLibCheck: false,
			},
			files: ['typed.mts', 'typed.cts'],
		}),
	)
	execFileSync(process.execPath, [join(pkg, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', app], {
		cwd: app,
		stdio: 'pipe',
	})
})
