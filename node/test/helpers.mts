// Shared by the tests: a fresh directory per store, and the test clock's start.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { open, type Store } from 'tinystore'

/** The test clock's start: every test store begins here. */
export const T0 = new Date('2026-10-20T08:00:00Z')

const dirs: string[] = []

/** A new empty directory, removed when the process exits. */
export function freshDir(): string {
	const dir = mkdtempSync(join(tmpdir(), 'tinystore-node-'))
	dirs.push(dir)
	return dir
}

process.on('exit', () => {
	for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** A store with a test clock in a fresh directory. */
export function testStore(): Promise<Store> {
	return open(freshDir(), { clock: T0 })
}

/** The error a promise rejects with (fails when it resolves). */
export async function rejection(p: Promise<unknown>): Promise<Error & { code?: string; what?: unknown }> {
	try {
		await p
	} catch (e) {
		return e as Error & { code?: string }
	}
	throw new Error('expected the call to fail, and it succeeded')
}

/** A promise and the function that resolves it: an event a test waits on. */
export function signal(): { promise: Promise<void>; resolve: () => void } {
	let resolve!: () => void
	const promise = new Promise<void>((r) => {
		resolve = r
	})
	return { promise, resolve }
}
