// The package as a user gets it: packed as `make dist` packs it (the
// package and its platform package with the addon, as napi-rs lays them
// out, staged by scripts/stage-npm.mjs), then `npm install` of the tarballs
// into a clean project, used from Node and Bun, through `import` and
// `require`, with its types. (Runs under `node --test` only: it starts Bun
// itself.)
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, readdirSync, writeFileSync } from 'node:fs'
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

test('package: npm pack in the checkout refuses, naming what is missing', { skip: inBun }, () => {
	const out = freshDir()
	const packed = spawnSync('npm', ['pack', '--pack-destination', out], { cwd: pkg, encoding: 'utf8' })
	assert.notEqual(packed.status, 0, 'npm pack of the checkout failed')
	assert.match(packed.stderr, /refusing to pack a package that cannot load/)
	assert.match(packed.stderr, /optionalDependencies must name tinystore-linux-x64-gnu/)
	assert.deepEqual(readdirSync(out), [], 'and packed nothing')
})

test('package: npm install of the packed tarballs works in a clean project, in Node and Bun, by import and require, with types', { skip: inBun }, () => {
	const out = freshDir()
	const stage = join(out, 'stage')
	execFileSync(process.execPath, [join(pkg, 'scripts', 'stage-npm.mjs'), stage], { stdio: 'pipe' })
	const tarballs = readdirSync(stage).map((dir) =>
		join(out, execFileSync('npm', ['pack', '--pack-destination', out, '--silent'], { cwd: join(stage, dir), encoding: 'utf8' }).trim()),
	)
	assert.equal(tarballs.length, 2, 'the package and one platform package')
	const app = join(out, 'app')
	execFileSync('mkdir', ['-p', app])
	writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, version: '1.0.0' }))
	// --offline: the tarballs hold everything (npm would look the optional
	// dependency up in the registry otherwise, and then take the tarball).
	execFileSync('npm', ['install', '--no-audit', '--no-fund', '--offline', ...tarballs], { cwd: app, stdio: 'pipe' })
	assert.ok(
		existsSync(join(app, 'node_modules', 'tinystore-linux-x64-gnu', 'tinystore.linux-x64-gnu.node')),
		'the addon came in its platform package',
	)
	assert.ok(!readdirSync(join(app, 'node_modules', 'tinystore')).some((f) => f.endsWith('.node')), 'and not in the package')
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
