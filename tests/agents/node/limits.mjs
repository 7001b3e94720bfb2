// The limits commands of the Node/Bun agent: rate limits and flush_every
// counters shared by every process (tests/processes/README.md, "Limits").

import { createInterface } from 'node:readline'

export const commands = new Set(['rate-race', 'rate-spread', 'fcounter-adds', 'fcounter-get', 'fcounter-forever', 'limits-shell'])

const raceFcounter = (store) => store.counters('race-fcounter', { flushEvery: '1s' })

/** Runs a limits command. */
export async function run(store, cmd, arg, say, startLine) {
	const num = (i) => Number(arg(i)) || 0
	switch (cmd) {
		case 'rate-race': {
			const rl = store.rateLimit('race-rate', { rate: '20/s', burst: 10 })
			await startLine()
			const start = performance.now()
			const first = Date.now()
			let passed = 0
			while (performance.now() - start < num(2)) if ((await rl.allow('hot')).ok) passed++
			say(`passed ${passed} from ${first} to ${Date.now()}`)
			break
		}
		case 'rate-spread': {
			const rl = store.rateLimit('race-once-per-key', { rate: '1/h' })
			await startLine()
			let passed = 0
			for (let i = 0; i < num(3); i++) if ((await rl.allow(`${arg(2)}${i}`)).ok) passed++
			say(`passed ${passed}`)
			break
		}
		case 'fcounter-adds': {
			const c = raceFcounter(store)
			await startLine()
			for (let i = 0; i < num(2); i++) await c.add('k', 1)
			say('done')
			break
		}
		case 'fcounter-get':
			say(`value ${await raceFcounter(store).get(arg(2))}`)
			break
		case 'fcounter-forever': {
			const c = raceFcounter(store)
			for (let n = 1; ; n++) {
				await c.add('k', 1)
				say(`added ${n}`)
			}
		}
		case 'limits-shell':
			await shell(store, say)
			break
	}
	return true
}

/**
 * One command a line from standard input, until it ends or says quit. Its
 * limit lets 10 through at once and one more an hour, so that a test's own
 * pace refills nothing.
 */
async function shell(store, say) {
	const rl = store.rateLimit('race-shell', { rate: '1/h', burst: 10 })
	const c = raceFcounter(store)
	say('ready')
	for await (const line of createInterface({ input: process.stdin })) {
		const w = line.split(/\s+/).filter(Boolean)
		if (w.length === 2 && w[0] === 'allow') say((await rl.allow(w[1])).ok ? 'ok' : 'refused')
		else if (w.length === 2 && w[0] === 'peek') say(`left ${(await rl.peek(w[1])).left}`)
		else if (w.length === 2 && w[0] === 'reset') {
			await rl.reset(w[1])
			say('reset')
		} else if (w.length === 3 && w[0] === 'add') say(`value ${await c.add(w[1], Number(w[2]))}`)
		else if (w.length === 2 && w[0] === 'get') say(`value ${await c.get(w[1])}`)
		else if (w.length === 1 && w[0] === 'quit') return
		else say(`unknown ${JSON.stringify(line)}`)
	}
}
