// The handbook's handles ("Sessions and limits", and the quota guide),
// declared exactly as the chapter declares them in TypeScript, for the
// commands of tests/interchange/handbook.md: hb-write writes what the chat
// writes, hb-read reads what another language's chat wrote, hb-take signs
// in with another language's code and signs its user out. tsc checks it
// against the package's types (mk/node-cross.mk); Node runs the
// compiled handbook.js, Bun this source.

import { createHash } from 'node:crypto'
import { writeSync } from 'node:fs'

import type { Allowance, Store } from '../../../node/dist/esm/index.mjs'

interface Session {
	userId: number
	device: string
}

const digest = (secret: string) => createHash('sha256').update(secret).digest('hex')

/** The chapter's five handles. */
function openChat(store: Store) {
	const codes = store.bucket<number>('sign-in-codes', { ttl: '15m' })
	const sessions = store.bucket<Session>('sessions', { idle: '30d' })
	const guesses = store.rateLimit('sign-in-guesses', { rate: '5/m', burst: 5 })
	const messages = store.quota('messages', { session: '100/5h', weekly: '300/7d' })
	const sends = store.once<{ id: number }>('sends', { keep: '1d' })
	return { codes, sessions, guesses, messages, sends }
}

function say(line: string) {
	writeSync(1, `${line}\n`)
}

/** Counts what does not match, printing a line for each. */
class Checks {
	bad = 0
	constructor(readonly owner: string) {}

	check(what: string, ok: boolean, got: unknown) {
		if (ok) return
		this.bad++
		say(`MISMATCH ${this.owner} ${what}: got ${show(got)}`)
	}
}

function show(v: unknown): string {
	if (v instanceof Error) return `${v.constructor.name}: ${v.message}`
	return JSON.stringify(v, (_, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x)) ?? String(v)
}

/** The answer of a call, or the error it threw (to show, not to throw). */
async function attempt<T>(call: () => Promise<T>): Promise<T | Error> {
	try {
		return await call()
	} catch (e) {
		return e as Error
	}
}

export async function write(store: Store, owner: string, userId: number): Promise<boolean> {
	const { codes, sessions, guesses, messages, sends } = openChat(store)
	await codes.set(digest(`${owner}-code`), userId)
	await codes.set(digest(`${owner}-code-to-take`), userId)
	await sessions.under(userId).set(digest(`${owner}-token`), { userId, device: 'web' })
	for (let i = 0; i < 5; i++) await guesses.allow(`${owner}-ip`)
	await messages.allow(userId)
	await sends.run(`${owner}-request`, async () => ({ id: userId * 10 + 1 }))
	say('ok')
	return true
}

export async function read(store: Store, owner: string, userId: number): Promise<boolean> {
	const { codes, sessions, guesses, messages, sends } = openChat(store)
	const c = new Checks(owner)
	const code = await attempt(() => codes.get(digest(`${owner}-code`)))
	c.check('sign-in-codes get', code === userId, code)
	const session = await attempt(() => sessions.under(userId).get(digest(`${owner}-token`)))
	c.check(
		'sessions get',
		!(session instanceof Error) && session?.userId === userId && session.device === 'web',
		session,
	)
	const guess = await attempt(() => guesses.peek(`${owner}-ip`))
	c.check('sign-in-guesses peek', !(guess instanceof Error) && guess.left <= 3, guess)
	const used = await attempt(() => messages.peek(userId))
	c.check('messages peek', !(used instanceof Error) && countedOnce(used), used)
	let ran = false
	const sent = await attempt(() =>
		sends.run(`${owner}-request`, async () => {
			ran = true
			return { id: 0 }
		}),
	)
	c.check('sends run', !ran && !(sent instanceof Error) && sent.id === userId * 10 + 1, { ran, sent })
	if (c.bad === 0) say('ok 5')
	return c.bad === 0
}

/** One use in each window of the quota, and the guide's limits. */
function countedOnce(used: Allowance<'session' | 'weekly'>): boolean {
	const { session, weekly } = used.windows
	return used.ok && session.used === 1 && session.limit === 100 && weekly.used === 1 && weekly.limit === 300
}

export async function take(store: Store, owner: string, userId: number): Promise<boolean> {
	const { codes, sessions } = openChat(store)
	const c = new Checks(owner)
	const key = digest(`${owner}-code-to-take`)
	const first = await attempt(() => codes.take(key))
	c.check('sign-in-codes take', first === userId, first)
	const second = await attempt(() => codes.take(key))
	c.check('sign-in-codes take again', second === undefined, second)
	await sessions.under(userId).clear()
	const gone = await attempt(() => sessions.under(userId).has(digest(`${owner}-token`)))
	c.check('sessions clear', gone === false, gone)
	if (c.bad === 0) say('ok 3')
	return c.bad === 0
}
