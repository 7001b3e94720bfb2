// The example chat's steps (examples/node/chat.ts) as short TypeScript
// snippets, the way a page of documentation shows them, run against a fake
// mailer and a fake database. The snippets that are statements are wrapped
// in a function whose parameters are the names they use; the comment above
// each says which step it is.
import assert from 'node:assert/strict'
import { createHash, randomBytes, randomInt } from 'node:crypto'
import { test } from 'node:test'

import type { Store } from 'tinystore'

import { testStore } from './helpers.mjs'

interface Session {
	userId: number
	device: string
}

/** The mail the chat sends, kept for the test to read. */
class FakeMailer {
	sent: { to: string; text: string }[] = []
	async send(to: string, text: string): Promise<void> {
		this.sent.push({ to, text })
	}
	lastCode(): string {
		const text = this.sent.at(-1)?.text ?? ''
		return text.replace('Your code is ', '')
	}
}

/** The chat's database: a tagged-template `exec` that inserts a row. */
class FakeDb {
	rows: unknown[][] = []
	/** While set, an insert waits for it: lets a test hold a run open. */
	gate: Promise<void> | undefined
	/** When set, the next insert fails (the database was briefly down). */
	failNext = false
	#began!: () => void
	/** Resolves when an insert has begun. */
	readonly entered = new Promise<void>((resolve) => {
		this.#began = resolve
	})
	async exec(strings: TemplateStringsArray, ...values: unknown[]): Promise<{ lastInsertRowid: bigint }> {
		assert.match(strings.join('?'), /^insert into messages/)
		this.#began()
		await this.gate
		if (this.failNext) {
			this.failNext = false
			throw new Error('database is locked')
		}
		this.rows.push(values)
		return { lastInsertRowid: BigInt(40 + this.rows.length) }
	}
}

function chat(store: Store, mailer: FakeMailer, db: FakeDb) {
	const users = new Map<string, { id: number }>()
	async function findOrCreateUser(email: string) {
		let user = users.get(email)
		if (!user) users.set(email, (user = { id: users.size + 1 }))
		return user
	}

	// ---- "Open everything"
	const codes = store.bucket<number>('sign-in-codes', { ttl: '15m' })
	const sessions = store.bucket<Session>('sessions', { idle: '30d' })
	const guesses = store.rateLimit('sign-in-guesses', { rate: '5/m', burst: 5 })
	const messages = store.quota('messages', { session: '100/5h', weekly: '300/7d' })
	const sends = store.once<{ id: number }>('sends', { keep: '1d' })

	const digest = (secret: string) => createHash('sha256').update(secret).digest('hex')

	// ---- "Sign in with a code"
	async function sendCode(email: string) {
		const user = await findOrCreateUser(email)
		const code = String(randomInt(100000, 1000000))
		await codes.set(digest(code), user.id)
		await mailer.send(email, `Your code is ${code}`)
	}

	async function checkCode(ip: string, code: string) {
		const guess = await guesses.allow(ip)
		if (!guess.ok) return { status: 429, retryAt: guess.retryAt }

		const userId = await codes.take(digest(code)) // undefined if wrong, used or expired
		if (userId === undefined) return { status: 401 }
		return startSession(userId)
	}

	// ---- "Sessions"
	async function startSession(userId: number, device = 'web') {
		const token = randomBytes(32).toString('base64url')
		await sessions.under(userId).set(digest(token), { userId, device })
		return { status: 200, cookie: `${userId}.${token}` }
	}

	async function currentUser(cookie: string) {
		const [userId, token] = cookie.split('.')
		const session = await sessions.under(userId).get(digest(token)) // renews the 30 days
		return session?.userId
	}

	async function signOutHere(userId: number, token: string) {
		await sessions.under(userId).delete(digest(token)) // sign out here
	}

	async function signOutEverywhere(userId: number) {
		await sessions.under(userId).clear() // sign out everywhere
	}

	// ---- "Limits per plan"
	async function sendMessage(userId: number) {
		const used = await messages.allow(userId)
		if (!used.ok) {
			return { status: 429, retryAt: used.retryAt, left: used.windows.weekly.left }
		}
		return { status: 200 }
	}

	// ---- "Requests sent twice"
	async function postMessage(request: { headers: { 'idempotency-key': string } }, chatId: number, text: string) {
		const sent = await sends.run(request.headers['idempotency-key'], async () => {
			const { lastInsertRowid } = await db.exec`insert into messages (chat_id, role, text, created_at)
		values (${chatId}, 'user', ${text}, ${Date.now()})`
			return { id: Number(lastInsertRowid) }
		})
		return sent
	}

	return { sendCode, checkCode, currentUser, signOutHere, signOutEverywhere, sendMessage, postMessage, digest }
}

// ---- a quota: allow, and refund when the work failed
async function quotaRefund(store: Store, userId: number) {
	const messages = store.quota('messages', { session: '100/5h', weekly: '300/7d' })

	const used = await messages.allow(userId)
	if (!used.ok) return { status: 429, retryAt: used.retryAt, weekly: used.windows.weekly }
	await messages.refund(userId) // the model failed: give the use back
	return { status: 200, used }
}

test('chat KV-5 sign in with a code: the code works once, a wrong one is 401, it expires after 15 minutes', async () => {
	await using store = await testStore()
	const mailer = new FakeMailer()
	const app = chat(store, mailer, new FakeDb())
	await app.sendCode('ada@example.com')
	const code = mailer.lastCode()
	assert.match(code, /^\d{6}$/)
	const wrong = code === '999999' ? '999998' : '999999'
	assert.deepEqual(await app.checkCode('10.0.0.1', wrong), { status: 401 })
	const signedIn = await app.checkCode('10.0.0.1', code)
	assert.equal(signedIn.status, 200)
	assert.match((signedIn as { cookie: string }).cookie, /^1\./)
	assert.deepEqual(await app.checkCode('10.0.0.2', code), { status: 401 }, 'a code works once')
	await app.sendCode('ada@example.com')
	store.clock.advance('16m')
	assert.deepEqual(await app.checkCode('10.0.0.3', mailer.lastCode()), { status: 401 }, 'expired')
	assert.deepEqual(await store.maintain().then((m) => m.expired), 1)
})

test('chat KV-12 sign-in guesses: 5 a minute per IP, then 429 with retryAt', async () => {
	await using store = await testStore()
	const app = chat(store, new FakeMailer(), new FakeDb())
	for (let i = 0; i < 5; i++) assert.equal((await app.checkCode('10.0.0.9', '000000')).status, 401)
	const refused = await app.checkCode('10.0.0.9', '000000')
	assert.equal(refused.status, 429)
	const retryAt = (refused as { retryAt: Date }).retryAt
	assert.ok(retryAt instanceof Date)
	assert.equal(retryAt.getTime(), store.clock.now().getTime() + 12_000)
	assert.equal((await app.checkCode('10.0.0.10', '000000')).status, 401, 'another IP is not limited')
	store.clock.advance('12s')
	assert.equal((await app.checkCode('10.0.0.9', '000000')).status, 401)
})

test('chat KV-7 sessions: an active user stays signed in, one gone for 30 days is signed out', async () => {
	await using store = await testStore()
	const mailer = new FakeMailer()
	const app = chat(store, mailer, new FakeDb())
	await app.sendCode('ada@example.com')
	const { cookie } = (await app.checkCode('10.0.0.1', mailer.lastCode())) as { cookie: string }
	assert.equal(await app.currentUser(cookie), 1)
	store.clock.advance('20d')
	assert.equal(await app.currentUser(cookie), 1) // renews the 30 days
	await store.maintain()
	store.clock.advance('20d')
	assert.equal(await app.currentUser(cookie), 1)
	store.clock.advance('31d')
	assert.equal(await app.currentUser(cookie), undefined)
})

test('chat KV-8 sign out here and everywhere', async () => {
	await using store = await testStore()
	const mailer = new FakeMailer()
	const app = chat(store, mailer, new FakeDb())
	const cookies: string[] = []
	for (let i = 0; i < 3; i++) {
		await app.sendCode('ada@example.com')
		cookies.push(((await app.checkCode(`10.0.0.${i}`, mailer.lastCode())) as { cookie: string }).cookie)
	}
	const [userId, token] = (cookies[0] as string).split('.') as [string, string]
	await app.signOutHere(Number(userId), token)
	assert.equal(await app.currentUser(cookies[0] as string), undefined)
	assert.equal(await app.currentUser(cookies[1] as string), 1)
	await app.signOutEverywhere(1)
	assert.equal(await app.currentUser(cookies[1] as string), undefined)
	assert.equal(await app.currentUser(cookies[2] as string), undefined)
})

test('chat KV-13 limits per plan: 100 per 5 hours and 300 a week, in both windows or neither', async () => {
	await using store = await testStore()
	const app = chat(store, new FakeMailer(), new FakeDb())
	for (let i = 0; i < 100; i++) assert.equal((await app.sendMessage(7)).status, 200)
	const refused = await app.sendMessage(7)
	assert.equal(refused.status, 429)
	assert.deepEqual(refused.retryAt, new Date(store.clock.now().getTime() + 5 * 3600_000))
	assert.equal(refused.left, 200, 'the refused message did not use up the weekly window')
	store.clock.advance('5h')
	for (let i = 0; i < 100; i++) assert.equal((await app.sendMessage(7)).status, 200)
	store.clock.advance('5h')
	for (let i = 0; i < 100; i++) assert.equal((await app.sendMessage(7)).status, 200)
	store.clock.advance('5h')
	const weekly = await app.sendMessage(7)
	assert.equal(weekly.status, 429)
	assert.equal(weekly.left, 0)
	assert.equal(weekly.retryAt?.getTime(), store.clock.now().getTime() + 7 * 86400_000 - 15 * 3600_000)
	assert.equal((await app.sendMessage(8)).status, 200, 'another user has their own windows')
})

test('chat KV-11 requests sent twice: a retry while the first runs waits and gets the same answer', async () => {
	await using store = await testStore()
	const db = new FakeDb()
	const app = chat(store, new FakeMailer(), db)
	let open!: () => void
	db.gate = new Promise((resolve) => {
		open = resolve
	})
	const request = { headers: { 'idempotency-key': 'k7q2' } }
	const first = app.postMessage(request, 3, 'hello')
	const retry = app.postMessage(request, 3, 'hello')
	await db.entered // the first runs, held at the database; the retry waits for it
	open()
	assert.deepEqual(await Promise.all([first, retry]), [{ id: 41 }, { id: 41 }])
	assert.equal(db.rows.length, 1, 'the message was saved once')
	assert.deepEqual(await app.postMessage(request, 3, 'hello'), { id: 41 })
	assert.equal(db.rows.length, 1)
})

test('chat KV-11 requests sent twice: an error keeps nothing, and the next run runs again', async () => {
	await using store = await testStore()
	const db = new FakeDb()
	const app = chat(store, new FakeMailer(), db)
	const request = { headers: { 'idempotency-key': 'k8' } }
	db.failNext = true
	await assert.rejects(app.postMessage(request, 3, 'hi'), /database is locked/)
	assert.equal(db.rows.length, 0)
	assert.deepEqual(await app.postMessage(request, 3, 'hi'), { id: 41 })
	assert.equal(db.rows.length, 1)
})

test('chat KV-13 a quota refund: allow counts, refund gives the use back, windows report usage', async () => {
	await using store = await testStore()
	const answer = await quotaRefund(store, 7)
	assert.equal(answer.status, 200)
	const used = (answer as { used: { windows: { weekly: { used: number; limit: number; left: number; resetsAt: Date | undefined } } } }).used
	assert.deepEqual(used.windows.weekly, {
		used: 1,
		limit: 300,
		left: 299,
		resetsAt: new Date(store.clock.now().getTime() + 7 * 86400_000),
	})
	const after = await store.quota('messages', { session: '100/5h', weekly: '300/7d' }).peek(7)
	assert.equal(after.windows.weekly.used, 0, 'refunded')
	assert.equal(after.windows.session.left, 100)
})
