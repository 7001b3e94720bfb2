// Types of `tinystore/limit-store` for `import`.
export * from '../dist/cjs/limit-store.js'
