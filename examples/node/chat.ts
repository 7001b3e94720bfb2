// The example chat (sign-in codes, sessions and limits) in TypeScript, on a local store,
// under Node or Bun.
//
//   node examples/node/chat.js data   (after `tsc -p examples/node`)
//   bun examples/node/chat.ts data
//
// It signs a user in with a one-time code, keeps them signed in, limits their
// guesses and messages, and answers a request sent twice only once, printing
// what happens. Its handles are the Rust example's (examples/rust), with the
// same names and row types, so both chats can share one kv.db.

import { createHash, randomBytes, randomInt } from 'node:crypto'
import { appendFile, readFile } from 'node:fs/promises'
import { join } from 'node:path'

import { open, type Store } from '../../node/dist/esm/index.mjs'

/** A signed-in device of a user, kept under the digest of its token. */
interface Session {
	userId: number
	device: string
}

/** What `once` keeps for a request: the id of the message it saved. */
interface Sent {
	id: number
}

/** What the chat answers a sign-in. */
type Response = { status: 200; cookie: string } | { status: 401 } | { status: 429; retryAt: Date }

const runtime = 'Bun' in globalThis ? 'Bun' : 'Node'

/** The digest a key is kept under: a copy of kv.db signs nobody in. */
const digest = (secret: string) => createHash('sha256').update(secret).digest('hex')

/** A mailer that prints instead of sending. */
function mail(to: string, body: string) {
	console.log(`  [mail to ${to}] ${body}`)
}

/**
 * The chat's own messages table, as lines of JSON in a file beside kv.db,
 * so that the example needs no database package: `insert` gives the next id.
 */
class Messages {
	constructor(readonly file: string) {}

	async rows(): Promise<{ id: number; chatId: number; role: string; text: string; createdAt: number }[]> {
		const text = await readFile(this.file, 'utf8').catch(() => '')
		return text
			.split('\n')
			.filter((line) => line !== '')
			.map((line) => JSON.parse(line))
	}

	async insert(chatId: number, text: string): Promise<number> {
		const id = (await this.rows()).length + 1
		await appendFile(this.file, `${JSON.stringify({ id, chatId, role: 'user', text, createdAt: Date.now() })}\n`)
		return id
	}
}

/** Every handle the chat uses, and the chat's table. */
function openChat(store: Store, dir: string) {
	return {
		// A user id is kept by its kind, an integer row, as Rust's Bucket<i64> reads it.
		codes: store.bucket<number>('sign-in-codes', { ttl: '15m' }),
		sessions: store.bucket<Session>('sessions', { idle: '30d' }),
		guesses: store.rateLimit('sign-in-guesses', { rate: '5/m', burst: 5 }),
		messages: store.quota('messages', { session: '100/5h', weekly: '300/7d' }),
		sends: store.once<Sent>('sends', { keep: '1d' }),
		db: new Messages(join(dir, `chat-${runtime.toLowerCase()}.jsonl`)),
	}
}

const dir = process.argv[2] ?? 'data'
const store = await open(dir)
const chat = openChat(store, dir)
const { codes, sessions, guesses, messages, sends } = chat

async function sendCode(email: string, userId: number): Promise<string> {
	const code = String(randomInt(100000, 1000000))
	await codes.set(digest(code), userId)
	mail(email, `Your code is ${code}`)
	return code
}

async function checkCode(ip: string, code: string): Promise<Response> {
	const guess = await guesses.allow(ip)
	if (!guess.ok) return { status: 429, retryAt: guess.retryAt! }

	const userId = await codes.take(digest(code)) // undefined if wrong, used or expired
	if (userId === undefined) return { status: 401 }
	return startSession(userId)
}

async function startSession(userId: number, device = 'web'): Promise<Response> {
	const token = randomBytes(32).toString('base64url')
	await sessions.under(userId).set(digest(token), { userId, device })
	return { status: 200, cookie: `${userId}.${token}` }
}

async function currentUser(cookie: string): Promise<number | undefined> {
	const [userId = '', token = ''] = cookie.split('.')
	const session = await sessions.under(userId).get(digest(token)) // renews the 30 days
	return session?.userId
}

async function saveMessage(idempotencyKey: string, chatId: number, text: string): Promise<Sent> {
	return sends.run(idempotencyKey, async () => ({ id: await chat.db.insert(chatId, text) }))
}

const secondsUntil = (t: Date) => Math.max(0, Math.ceil((t.getTime() - Date.now()) / 1000))

// Other languages' chats run on the same kv.db: a user id and an address
// range of this runtime's own keep their limits apart.
const userId = randomInt(10000, 100000)
const ip = `${runtime === 'Node' ? '198.51.100' : '192.0.2'}.${randomInt(1, 251)}`
console.log(`${runtime} chat on ${dir}/kv.db, user ${userId} from ${ip}`)

console.log('\n1. Sign in with a code')
const code = await sendCode('ada@example.com', userId)
const wrong = await checkCode(ip, '000000')
console.log(wrong.status === 401 ? '  a wrong code is refused (401)' : '  unexpected: a wrong code passed')
const signedIn = await checkCode(ip, code)
if (signedIn.status !== 200) throw new Error('the right code was refused')
const cookie = signedIn.cookie
console.log(`  the right code signs in; cookie ${cookie.slice(0, 12)}…`)
const again = await checkCode(ip, code)
console.log(
	again.status === 401 ? '  the same code again is refused: take lets a code work once' : '  unexpected: a used code passed',
)
for (let n = 4; n <= 6; n++) {
	const r = await checkCode(ip, '123456')
	console.log(
		r.status === 429
			? `  guess ${n} in a minute from ${ip} is refused: retry in ${secondsUntil(r.retryAt)}s`
			: `  guess ${n} in a minute: wrong code`,
	)
}

console.log('\n2. Sessions')
console.log(`  current user from the cookie: ${await currentUser(cookie)} (the read renews the 30 days)`)
const phoneSession = await startSession(userId, 'phone')
if (phoneSession.status !== 200) throw new Error('no phone session')
const phone = phoneSession.cookie
const [, token = ''] = cookie.split('.')
await sessions.under(userId).delete(digest(token)) // sign out here
console.log(`  signed out here: web session -> ${await currentUser(cookie)}, phone session -> ${await currentUser(phone)}`)
await sessions.under(userId).clear() // sign out everywhere
console.log(`  signed out everywhere: phone session -> ${await currentUser(phone)}`)

console.log('\n3. Limits per plan (100 messages per 5 hours, 300 per week)')
let used = await messages.allow(userId)
for (let i = 1; i < 100; i++) used = await messages.allow(userId)
console.log(`  100 messages pass; weekly left: ${used.windows.weekly.left}`)
const refused = await messages.allow(userId)
const resetsIn = (refused.windows.session.resetsAt!.getTime() - Date.now()) / 60_000
console.log(
	`  message 101 is refused (ok=${refused.ok}): the 5-hour window resets in ${resetsIn.toFixed(0)}m; ` +
		`the weekly window still has ${refused.windows.weekly.left} left`,
)
await messages.refund(userId) // the model failed: give the use back
console.log(`  the model failed once: refund gives a use back (left now ${(await messages.peek(userId)).left})`)

console.log('\n4. Requests sent twice')
const key = `k7q2-${runtime.toLowerCase()}-${userId}`
// The retry arrives while the first request is still saving: it waits for it and gets its answer.
const [first, retry] = await Promise.all([saveMessage(key, 1, 'hello'), saveMessage(key, 1, 'hello')])
const rows = (await chat.db.rows()).filter((m) => m.text === 'hello' && m.id === first.id).length
console.log(
	`  first request saved message ${first.id}; the retry got message ${retry.id} (${rows} row in ${chat.db.file.split('/').pop()})`,
)
await store.close()
console.log(`\n${runtime} chat: done.`)
