# Sets inside one transaction, in every language, beside plain SQLite in
# one transaction: 6,400 sets of fresh keys, the contenders alternating
# round by round (never in make test; docs/measurements.md has the table).
#
#   make bench-tx-sets                 Rust, Python, Node, Bun and Go in turn
#   make bench-tx-sets BENCH_SHORT=1   three rounds each, to check it works

BENCH_TX_ROUNDS := $(if $(BENCH_SHORT),3,9)

.PHONY: bench-tx-sets
BENCH_TARGETS += bench-tx-sets

bench-tx-sets: build-python node $$(BENCH_NODE_DIR)/node_modules/.package-lock.json go-lib
	@echo "== load average: $$(cut -d' ' -f1-3 /proc/loadavg)"
	cargo run --release -q -p tinystore-bench --bin tx_sets -- --rounds $(BENCH_TX_ROUNDS)
	cd bench/python && $(PY) tx_sets.py --rounds $(BENCH_TX_ROUNDS)
	cd $(BENCH_NODE_DIR) && ROUNDS=$(BENCH_TX_ROUNDS) node tx_sets.mjs
	cd $(BENCH_NODE_DIR) && ROUNDS=$(BENCH_TX_ROUNDS) $(NODE_BIN)/bun tx_sets.mjs
	cd bench/go && $(GO) test -run '^$$' -bench BenchmarkTxSets -benchtime 1x ./... -args -rounds $(BENCH_TX_ROUNDS)
	@echo "== load average: $$(cut -d' ' -f1-3 /proc/loadavg)"
