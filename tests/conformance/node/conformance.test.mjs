// Every conformance case as one test, under `node --test` and under `bun test`.
// At the end the counts per contract id go to target/conformance/node.txt
// (bun.txt under Bun), in the Rust runner's format, for
// tests/conformance/report.py.

import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { after, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { cases, emptySchema, fileCases, notOnPostgres, postgresServer, Runner } from './runner.mjs'

const language = typeof globalThis.Bun === 'undefined' ? 'node' : 'bun'
const counts = new Map()

for (const c of cases()) {
	test(`${c.id} ${c.title}`, async () => {
		const id = Number(c.id.replace(/^KV-/, ''))
		counts.set(id, (counts.get(id) ?? 0) + 1)
		const runner = new Runner()
		await runner.start()
		try {
			await runner.run(c)
		} finally {
			await runner.dispose()
		}
	})
}

// Every case again on a store in a PostgreSQL schema of its own. A case of a
// file that not_on_postgres.json lists may fail only with the refusal it
// names; any other failure fails the test.
const notCarried = notOnPostgres()
const onPostgres = { passed: 0, refused: new Map() }
for (const [index, { file, case: c }] of fileCases().entries()) {
	test(`${c.id} ${c.title} (PostgreSQL)`, async () => {
		const location = emptySchema(postgresServer(), `conformance_${language}_${index}`)
		const runner = new Runner(location)
		await runner.start()
		try {
			await runner.run(c)
			onPostgres.passed++
		} catch (e) {
			const why = notCarried.files[file]
			if (why === undefined || !String(e?.message).includes(notCarried.refusal)) throw e
			onPostgres.refused.set(file, (onPostgres.refused.get(file) ?? 0) + 1)
		} finally {
			await runner.dispose()
		}
	})
}

test('KV-1 to KV-19: not_on_postgres.json names case files only', () => {
	const files = new Set(fileCases().map((c) => c.file))
	for (const file of Object.keys(notCarried.files)) assert.ok(files.has(file), `${file} is no case file`)
})

test('KV-1 to KV-19: every contract id has a case', () => {
	for (let id = 1; id <= 19; id++) assert.ok(counts.has(id), `no case for KV-${id}`)
})

after(() => {
	const report = [...counts.keys()]
		.sort((a, b) => a - b)
		.map((id) => `conformance ${language} KV-${id} ${counts.get(id)}\n`)
		.join('')
	process.stdout.write(report)
	const refused = [...onPostgres.refused.values()].reduce((a, b) => a + b, 0)
	process.stdout.write(
		`conformance ${language} on PostgreSQL: ${onPostgres.passed} cases passed, ${refused} refused as ${notCarried.refusal}\n`,
	)
	for (const [file, why] of Object.entries(notCarried.files)) {
		process.stdout.write(`  ${file}: ${why} (${onPostgres.refused.get(file) ?? 0} cases refused)\n`)
	}
	const out = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'target', 'conformance')
	mkdirSync(out, { recursive: true })
	writeFileSync(join(out, `${language}.txt`), report)
})
