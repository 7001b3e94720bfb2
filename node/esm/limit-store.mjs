// The ES module face of `tinystore/limit-store`: re-exports the CommonJS
// build, so `import` and `require` share one addon and one class of each error.
import cjs from '../dist/cjs/limit-store.js'

export const { limitStore } = cjs
