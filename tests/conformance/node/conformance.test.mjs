// Every conformance case as one test, under `node --test` and under `bun test`.
// At the end the counts per contract id go to target/conformance/node.txt
// (bun.txt under Bun), in the Rust runner's format, for
// tests/conformance/report.py.

import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { after, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { cases, Runner } from './runner.mjs'

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

test('KV-1 to KV-19: every contract id has a case', () => {
	for (let id = 1; id <= 19; id++) assert.ok(counts.has(id), `no case for KV-${id}`)
})

after(() => {
	const report = [...counts.keys()]
		.sort((a, b) => a - b)
		.map((id) => `conformance ${language} KV-${id} ${counts.get(id)}\n`)
		.join('')
	process.stdout.write(report)
	const out = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'target', 'conformance')
	mkdirSync(out, { recursive: true })
	writeFileSync(join(out, `${language}.txt`), report)
})
