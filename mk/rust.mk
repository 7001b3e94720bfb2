# Rust: the core crate and every crate of the workspace.

.PHONY: test-rust lint-rust
TEST_TARGETS += lint-rust test-rust

lint-rust:
	python3 core/check_layers.py
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

test-rust:
	cargo test --workspace

.PHONY: demo-rust
DEMO_TARGETS += demo-rust
demo-rust:
	@echo; echo "== Rust: examples/rust"
	@cargo run -q --release -p tinystore-example-chat -- "$(DEMO_DIR)"

.PHONY: bench-writer
BENCH_TARGETS += bench-writer
# Twice: with the system's malloc, what a Rust program gets by default, and
# with mimalloc for ours and the peers alike (the Python and Node modules
# allocate with mimalloc; a Rust program picks its own allocator).
bench-writer:
	cargo run --release -p tinystore-bench --bin writer -- --rounds 9 --secs 2
	cargo run --release -p tinystore-bench --features mimalloc --bin writer -- --rounds 9 --secs 2 --depths 64

.PHONY: bench-memory
BENCH_TARGETS += bench-memory
bench-memory:
	cargo run --release -p tinystore-bench --bin memory -- --secs 3

# Rate limits in memory against a bare GCRA loop. Counters, rate limits,
# quotas and once live in the core crate, so their tests run in test-rust.
.PHONY: bench-limits
BENCH_TARGETS += bench-limits
bench-limits:
	cargo run --release -p tinystore-bench --bin limits
