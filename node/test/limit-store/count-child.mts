// A child process of the two-process test: counts one key `n` times in the
// limit store of the store at `dir`, with the system clock.
import { open } from 'tinystore'
import { limitStore } from 'tinystore/limit-store'

const [dir, n] = process.argv.slice(2)
const store = await open(dir!)
const limits = limitStore(store)
for (let i = 0; i < Number(n); i++) {
	await limits.update(['one-key'], (entries, now) => {
		const e = entries.get('one-key')
		return { 'one-key': { value: ((e?.value as number | undefined) ?? 0) + 1, expiresAt: e?.expiresAt ?? now + 600_000 } }
	})
}
await store.close()
