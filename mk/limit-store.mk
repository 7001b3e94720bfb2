# The limit store for app frameworks. Its Rust tests
# (core/tests/limit_store.rs) run in test-rust; this runs the contract's
# cases in Node and Bun over the addon `make node` built, and in Python over
# the module `make build-python` built, without building either again.

.PHONY: test-limit-store test-limit-store-node test-limit-store-python
TEST_TARGETS += test-limit-store

test-limit-store: test-limit-store-node test-limit-store-python

# The tests import the package by name ('tinystore/limit-store'), so they
# compile into node/build/limit-store, inside the package.
test-limit-store-node: node
	cd $(NODE_DIR) && $(NODE_BIN)/tsc -p tsconfig.limit-store.json
	cd $(NODE_DIR) && node --test build/limit-store/*.test.mjs
	cd $(NODE_DIR) && $(NODE_BIN)/bun test build/limit-store/

test-limit-store-python: build-python
	cd $(PY_DIR) && $(PY) -m mypy tinystore/limit_store.py limit_store_tests
	cd $(PY_DIR) && $(PY) -m pytest -q -p no:cacheprovider limit_store_tests
