# Config (KV-20) in Python, Node/Bun and Go, on the builds that test-python,
# test-node and test-go already make (build-python, node, go-lib run once per
# make). The Rust tests (core/tests/kv_config.rs) run in test-rust.
#
#   make test-config   the KV-20 tests of each language (about a minute)

.PHONY: test-config test-config-python test-config-node test-config-go
TEST_TARGETS += test-config

test-config: test-config-python test-config-node test-config-go

test-config-python: build-python
	cd $(PY_DIR) && $(PY) -m mypy config_tests
	cd $(PY_DIR) && $(PY) -m pytest -q -p no:cacheprovider config_tests

# The tests compile to dist/config-test (not build/, which test-node runs).
test-config-node: node
	cd $(NODE_DIR) && $(NODE_BIN)/tsc -p tsconfig.config-test.json
	cd $(NODE_DIR) && node --test dist/config-test/config.test.mjs
	cd $(NODE_DIR) && $(NODE_BIN)/bun test dist/config-test/

test-config-go: go-lib
	cd go && $(GO) test -race -count=1 -run '^(TestKV20|ExampleOpenConfig)' ./kv/
