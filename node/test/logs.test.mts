// The engine's warnings reach the program: process warnings by default, or the onLog hook.
import assert from 'node:assert/strict'
import { test } from 'node:test'

import { field, onLog, openConfig, type LogRecord, type Store } from 'tinystore'

import { testStore } from './helpers.mjs'

const LEFT_OUT = '"rps" is no longer in the program'

/**
 * Waits for `seen`, at most 10 s. The engine's records reach JavaScript
 * without holding the event loop open, so the wait holds it.
 */
async function within<T>(seen: Promise<T>): Promise<T> {
	let timer: NodeJS.Timeout | undefined
	const late = new Promise<never>((_, reject) => {
		timer = setTimeout(() => reject(new Error('no record within 10 s')), 10_000)
	})
	try {
		return await Promise.race([seen, late])
	} finally {
		clearTimeout(timer)
	}
}

/** Keeps `rps` for config `name`, then opens it without the field: the engine warns. */
async function leaveAFieldOut(store: Store, name: string): Promise<void> {
	const before = openConfig(store, name, { port: field.int(8080), rps: field.int(100) })
	await before.update((s) => {
		s.rps = 200
	})
	assert.equal(openConfig(store, name, { port: field.int(8080) }).get().port, 8080)
}

test('an engine warning reaches the onLog hook', async () => {
	const store = await testStore()
	const seen = new Promise<LogRecord>((resolve) => {
		onLog((r) => {
			if (r.message.includes(LEFT_OUT)) resolve(r)
		})
	})
	try {
		await leaveAFieldOut(store, 'hooked')
		const record = await within(seen)
		assert.equal(record.level, 'warn')
		assert.equal(record.target, 'tinystore::config')
		assert.ok(!record.message.startsWith('tinystore:'), record.message)
	} finally {
		onLog(undefined)
		await store.close()
	}
})

test('without a hook, an engine warning is a process warning', async () => {
	const store = await testStore()
	const seen = new Promise<Error & { code?: string }>((resolve) => {
		const listener = (w: Error & { code?: string }) => {
			if (w.name === 'TinyStoreWarning' && w.message.includes(LEFT_OUT)) {
				process.off('warning', listener)
				resolve(w)
			}
		}
		process.on('warning', listener)
	})
	try {
		await leaveAFieldOut(store, 'default')
		assert.equal((await within(seen)).code, 'tinystore::config')
	} finally {
		await store.close()
	}
})
