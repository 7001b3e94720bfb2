// `make dist` runs this after `make node`: it lays out the npm packages as
// napi-rs publishes them, in OUT (the first argument), ready for `npm pack`:
//
//   OUT/tinystore/                    the package: dist/, esm/, README, LICENSE,
//                                     its package.json naming each platform
//                                     package as an optional dependency
//   OUT/tinystore-linux-x64-gnu/      one per directory of npm/: its package.json
//                                     and the addon `make node` built
//
// npm and Bun install only the platform package whose os, cpu and libc fit;
// src/native.ts finds its addon there. Every package gets the main one's version.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const out = process.argv[2]
if (!out) throw new Error('usage: node scripts/stage-npm.mjs OUT')
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'))
const pkg = readJson(join(root, 'package.json'))
const fail = (message) => {
	console.error(`stage-npm: ${message}`)
	process.exit(1)
}

rmSync(out, { recursive: true, force: true })
const optional = {}
for (const dir of readdirSync(join(root, 'npm')).sort()) {
	const platform = readJson(join(root, 'npm', dir, 'package.json'))
	if (platform.version !== pkg.version) {
		fail(`npm/${dir}/package.json has version ${platform.version}, package.json ${pkg.version}`)
	}
	const addon = `${pkg.napi.binaryName}.${dir}.node`
	if (platform.main !== addon) fail(`npm/${dir}/package.json: main is ${platform.main}, not ${addon}`)
	if (!existsSync(join(root, addon))) fail(`${addon} is missing: run \`make node\` first`)
	const to = join(out, platform.name)
	mkdirSync(to, { recursive: true })
	cpSync(join(root, 'npm', dir, 'package.json'), join(to, 'package.json'))
	cpSync(join(root, 'npm', dir, 'README.md'), join(to, 'README.md'))
	cpSync(join(root, '..', 'LICENSE'), join(to, 'LICENSE'))
	cpSync(join(root, addon), join(to, addon))
	optional[platform.name] = pkg.version
}

const main = join(out, pkg.name)
mkdirSync(main, { recursive: true })
for (const entry of ['dist/cjs', 'dist/esm', 'esm', 'scripts/check-pack.mjs', 'README.md']) {
	if (!existsSync(join(root, entry))) fail(`${entry} is missing: run \`make node\` first`)
	cpSync(join(root, entry), join(main, entry), { recursive: true })
}
cpSync(join(root, '..', 'LICENSE'), join(main, 'LICENSE'))
delete pkg.devDependencies
// Only the check that it can load: the build scripts need the repository.
pkg.scripts = { prepack: pkg.scripts.prepack }
pkg.optionalDependencies = optional
writeFileSync(join(main, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`)
console.log(`stage-npm: ${Object.keys(optional).concat(pkg.name).join(', ')} ${pkg.version} in ${out}`)
