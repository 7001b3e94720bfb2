# Raw values and codecs. Each language's own tests run in its
# target (core/tests/kv_raw_codec.rs in test-rust, python/tests/test_raw_codec.py
# in test-python, node/test/raw-codec.test.mts in test-node, go/kv/raw_codec_test.go
# in test-go). test-raw-cross runs tests/raw_cross.py: every language writes
# typed values, every language copies each writer's rows through its raw bucket,
# another language reads the copies back typed, and the tinystore command lists
# raw rows. It reuses the agents of tests/cross.py (CROSS_AGENTS, CROSS_DEPS).

.PHONY: test-raw-cross
TEST_TARGETS += test-raw-cross

test-raw-cross: cross-agent-rust $$(CROSS_DEPS)
	cargo build -q -p tinystore-cli
	python3 tests/raw_cross.py --cli $(TARGET_DIR)/debug/tinystore $(foreach a,$(CROSS_AGENTS),--agent '$(a)')
