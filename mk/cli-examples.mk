# The `tinystore` command on a store the Python and TypeScript examples wrote.

.PHONY: test-cli-examples
TEST_TARGETS += test-cli-examples

test-cli-examples: build-python node
	cargo build -q -p tinystore-cli
	$(NODE_BIN)/tsc -p examples/node
	python3 tests/cli_examples.py $(TARGET_DIR)/debug/tinystore $(PY)
