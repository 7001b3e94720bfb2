// The keys and values of the Node benches (bench.mjs, and one build's side
// of bench/builds): gets over 100,000 keys, as in every language's bench;
// sets overwrite 10,000 keys of their own (`set-…`), one range of the
// tree as they were before the gets' store grew: spread over all 100,000,
// every set of a group lands on a leaf page of its own that the page cache
// no longer holds, and the plain peer's rate fell to a quarter too (see
// docs/measurements.md): that is a workload of its own.
export const KEYS = 100_000
export const SET_KEYS = 10_000
export const VALUE = 'v'.repeat(64)
// Every write writes a value the key did not hold: SQLite skips a row
// rewritten with the bytes it already has, and would commit nothing.
let seq = 0
export const nextValue = () => `${++seq}`.padEnd(64, 'v')
export const keyOf = (i) => `key-${i}`
let cursor = 0
export const nextKey = () => keyOf((cursor = (cursor * 7919 + 1) % KEYS))
export const setKeyOf = (i) => `set-${i}`
let setCursor = 0
export const nextSetKey = () => setKeyOf((setCursor = (setCursor * 7919 + 1) % SET_KEYS))
