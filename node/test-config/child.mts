// The second process of "KV-20 watch": updates the config in the store it is given.
import { open, openConfig } from 'tinystore'

import { schema } from './settings.mjs'

const dir = process.argv[2]
if (!dir) throw new Error('usage: child.mjs <store dir>')
const store = await open(dir)
const cfg = openConfig(store, 'app', schema)
await cfg.update((s) => {
	s.limits.rps = 777
})
await store.close()
