// The package's prepack: refuses to pack a package that could not load.
// An unbuilt checkout has no dist/ (tsc's output) and the checkout's
// package.json names no platform package, so a tarball packed from it would
// hold neither the ES module nor a way to the addon. `make dist` packs a
// staged copy (scripts/stage-npm.mjs) whose package.json names them.
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const problems = []

const built = ['dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/esm/index.mjs', 'dist/esm/index.d.mts', 'esm/limit-store.mjs']
const missing = built.filter((f) => !existsSync(join(root, f)))
if (missing.length > 0) problems.push(`not built: ${missing.join(', ')} missing (\`make node\` builds them)`)

const wanted = pkg.napi.targets.map((t) => platformPackage(pkg.napi.binaryName, t))
const named = pkg.optionalDependencies ?? {}
const unnamed = wanted.filter((name) => named[name] !== pkg.version)
if (unnamed.length > 0) {
	problems.push(
		`no addon: optionalDependencies must name ${unnamed.map((n) => `${n}@${pkg.version}`).join(', ')}, ` +
			'the platform packages that carry the prebuilt addon',
	)
}

if (problems.length > 0) {
	console.error(`${pkg.name}: refusing to pack a package that cannot load:\n  - ${problems.join('\n  - ')}`)
	console.error('Run `make dist` at the root of the TinyStore repository: it builds and packs the package')
	console.error('and its platform packages, all of one version, into dist/npm/.')
	process.exit(1)
}

/** napi-rs' name for the package of one target: x86_64-unknown-linux-gnu is NAME-linux-x64-gnu. */
function platformPackage(name, target) {
	const [cpu, , os, abi] = target.split('-')
	const arch = { x86_64: 'x64', aarch64: 'arm64' }[cpu] ?? cpu
	const platform = { darwin: 'darwin', linux: 'linux', windows: 'win32' }[os] ?? os
	return [name, platform, arch, abi].filter(Boolean).join('-')
}
