// Every public name of the package carries TSDoc: each export of the
// declarations users get, and each public member of its classes and
// interfaces. (Runs under `node --test` only; it reads the declarations.)
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

import type * as TS from 'typescript'

const inBun = typeof (globalThis as { Bun?: unknown }).Bun !== 'undefined'

test('package: TSDoc on every exported name and every public member', { skip: inBun }, () => {
	const ts = createRequire(import.meta.url)('typescript') as typeof TS
	const entry = fileURLToPath(new URL('../dist/cjs/index.d.ts', import.meta.url))
	const program = ts.createProgram([entry], { strict: true, types: [] })
	const checker = program.getTypeChecker()
	const source = program.getSourceFile(entry)
	assert.ok(source)
	const moduleSymbol = checker.getSymbolAtLocation(source)
	assert.ok(moduleSymbol)
	const missing: string[] = []
	const documented = (s: TS.Symbol) => ts.displayPartsToString(s.getDocumentationComment(checker)).trim() !== ''
	for (let exported of checker.getExportsOfModule(moduleSymbol)) {
		if (exported.flags & ts.SymbolFlags.Alias) exported = checker.getAliasedSymbol(exported)
		if (!documented(exported)) missing.push(exported.name)
		if (!(exported.flags & (ts.SymbolFlags.Class | ts.SymbolFlags.Interface))) continue
		for (const [name, member] of exported.members ?? new Map<TS.__String, TS.Symbol>()) {
			const n = String(name)
			if (n === '__constructor' || n.startsWith('#') || n.startsWith('__')) continue
			if (member.flags & ts.SymbolFlags.TypeParameter) continue
			const decl = member.declarations?.[0]
			if (decl && ts.getCombinedModifierFlags(decl) & ts.ModifierFlags.Private) continue
			if (!documented(member)) missing.push(`${exported.name}.${n}`)
		}
	}
	assert.deepEqual(missing, [], `names without TSDoc: ${missing.join(', ')}`)
})
