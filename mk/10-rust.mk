# Rust: the core crate and every crate of the workspace.

.PHONY: test-rust lint-rust
TEST_TARGETS += lint-rust test-rust

lint-rust:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

test-rust:
	cargo test --workspace
