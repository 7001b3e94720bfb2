# TinyStore KV: `make demo` and `make test` do all set-up on a fresh machine
# with Rust, Python 3, Node and Go. Each part of the project adds its own
# targets in mk/*.mk, named for what it builds and tests, and appends them
# to TEST_TARGETS (and DEMO_TARGETS, BENCH_TARGETS).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# One target triple for every cargo, maturin and napi build, so they share
# one set of artifacts instead of compiling SQLite once per tool.
export CARGO_BUILD_TARGET ?= $(shell rustc -vV | sed -n 's/^host: //p')
ROOT := $(abspath .)
export CARGO_TARGET_DIR ?= $(ROOT)/target
TARGET_DIR := $(CARGO_TARGET_DIR)/$(CARGO_BUILD_TARGET)

TEST_TARGETS :=
DEMO_TARGETS :=
BENCH_TARGETS :=

# Prerequisites that name variables several mk files append to (CROSS_DEPS,
# BENCH_NODE_DIR) are written $$(...) and expanded once every file is read,
# so no mk file depends on the order they are included in.
.SECONDEXPANSION:
include $(sort $(wildcard mk/*.mk))

.PHONY: help test demo bench
help:
	@echo "make test    build everything and run every test"
	@echo "make demo    build everything and run the example chat in each language"
	@echo "make bench   run the benchmarks against the peers (slow; not in CI)"
	@echo "make generate  rewrite the interfaces generated from the bindings' Rust (tinystore.h, node/src/addon.ts, _native.pyi)"
	@echo "make dist    write the packages of a release into dist/ (wheels, npm, Go module proxy, crates, CLI)"
	@echo "make test-dist  make dist, then install each package with no Rust on the PATH and run the chat (CI runs it)"

test: $(TEST_TARGETS)
	@echo "make test: all passed ($(TEST_TARGETS))"

# The demo runs every language's chat against one store, then lists it.
DEMO_DIR ?= $(ROOT)/data
export DEMO_DIR
demo: demo-start $(DEMO_TARGETS) demo-list

.PHONY: demo-start demo-list
demo-start:
	@rm -rf "$(DEMO_DIR)" && mkdir -p "$(DEMO_DIR)"
	@echo "== make demo: the example chat in each language, on one store at $(DEMO_DIR)"

demo-list:
	@cargo build -q --release -p tinystore-cli
	@echo; echo "== what the chats left in $(DEMO_DIR)/kv.db: tinystore kv buckets"
	@$(TARGET_DIR)/release/tinystore kv buckets --dir "$(DEMO_DIR)"
	@echo; echo "== tinystore kv list sessions"
	@$(TARGET_DIR)/release/tinystore kv list sessions --dir "$(DEMO_DIR)"
	@echo; echo "== tinystore kv list sends"
	@$(TARGET_DIR)/release/tinystore kv list sends --dir "$(DEMO_DIR)"
	@echo; echo "make demo: done. Look again any time with: $(TARGET_DIR)/release/tinystore kv list <bucket> --dir $(DEMO_DIR)"

bench: $(BENCH_TARGETS)
