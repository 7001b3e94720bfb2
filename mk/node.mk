# Node and Bun: the napi-rs addon (bindings/node), the npm package (node/),
# its tests under `node --test` and `bun test`, and the Node benchmark.

NODE_DIR := $(ROOT)/node
NODE_BIN := $(NODE_DIR)/node_modules/.bin

.PHONY: node node-deps test-node bench-node
TEST_TARGETS += test-node

# npm ci again only when the lock file changed.
$(NODE_DIR)/node_modules/.package-lock.json: $(NODE_DIR)/package-lock.json $(NODE_DIR)/package.json
	cd $(NODE_DIR) && npm ci --no-audit --no-fund
	touch $@

node-deps: $(NODE_DIR)/node_modules/.package-lock.json

# The addon (release, the shared CARGO_BUILD_TARGET), with the declarations
# napi-rs writes from its #[napi] items into $(GEN_NODE_OUT), which
# check-generated compares with the committed node/src/addon.ts (so the
# build never rewrites a file of the tree; `make generate` does).
.PHONY: node-addon
node-addon: node-deps
	mkdir -p $(dir $(GEN_NODE_OUT))
	cd $(NODE_DIR) && $(NODE_BIN)/napi build --release --platform --no-js \
		--target $(CARGO_BUILD_TARGET) \
		--manifest-path $(ROOT)/bindings/node/Cargo.toml --output-dir . \
		--dts $$(realpath -m --relative-to=. $(GEN_NODE_OUT))

# Then the TypeScript: dist/cjs (CommonJS + .d.ts) and dist/esm (an ES
# module over it).
node: node-addon
	cd $(NODE_DIR) && rm -rf dist build && $(NODE_BIN)/tsc -p tsconfig.json && node scripts/esm-wrapper.mjs
	cd $(NODE_DIR) && $(NODE_BIN)/tsc -p tsconfig.test.json

test-node: node
	cd $(NODE_DIR) && node --test build/*.test.mjs
	cd $(NODE_DIR) && $(NODE_BIN)/bun test build/

# The benchmark (not in make test): better-sqlite3 builds from source here,
# against the headers of the installed Node, since its prebuilt binaries are
# not on the npm registry.
BENCH_TARGETS += bench-node
BENCH_NODE_DIR := $(ROOT)/bench/node

$(BENCH_NODE_DIR)/node_modules/.package-lock.json: $(BENCH_NODE_DIR)/package-lock.json $(BENCH_NODE_DIR)/package.json
	cd $(BENCH_NODE_DIR) && npm_config_nodedir=$$(dirname $$(dirname $$(command -v node))) npm ci --no-audit --no-fund
	touch $@

bench-node: node $(BENCH_NODE_DIR)/node_modules/.package-lock.json
	cd $(BENCH_NODE_DIR) && node bench.mjs
	cd $(BENCH_NODE_DIR) && $(NODE_BIN)/bun bench.mjs

