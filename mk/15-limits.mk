# Limits (issue #3): counters, rate limits, quotas and once live in the core
# crate, so their tests run in test-rust. This adds the rate limit benchmark.

.PHONY: bench-limits
BENCH_TARGETS += bench-limits

bench-limits:
	cargo run --release -p tinystore-bench --bin limits
