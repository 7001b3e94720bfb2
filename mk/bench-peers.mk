# Benchmarks against the peers, never in make test. What the other
# mk files' benches leave out: Redis (a local redis-server from Debian, AOF
# with appendfsync always and everysec, and redis-benchmark as a reference
# point), the `limits` package, rate-limiter-flexible, the get curve from 10k
# to 1M keys, bytes per stored session; then the charts of every result.
#
#   make bench              everything (mk/*.mk's BENCH_TARGETS, these last)
#   make bench-peers        Python: Redis, limits, the get curve, bytes per session
#   make bench-node-peers   Node and Bun: rate-limiter-flexible
#   make bench-reads        Rust: get against a prepared rusqlite read, 10k and 1M keys
#   make bench-aio          Python: asyncio against the sync API one call at a
#                           time (take, set, allow), and allow against limits
#   make bench-charts       SVGs in bench/charts/ from bench/results/*.json
#   make bench-peers BENCH_SHORT=1   a quick run that checks it all works
#
# Everything installs itself: redis-server by apt-get (as root), the Python
# peers and matplotlib into bench/.venv, the npm packages under bench/node.
# The Python package itself is the one build-python builds (python/tinystore),
# found through PYTHONPATH, so nothing is built twice.

BENCH_VENV := $(ROOT)/bench/.venv
BENCH_PY := $(BENCH_VENV)/bin/python
BENCH_PY_PEERS := "redis>=5" "limits>=4" "matplotlib>=3.8" diskcache
BENCH_SHORT ?=
BENCH_PEERS_ARGS ?= $(if $(BENCH_SHORT),--short)

.PHONY: bench-tools bench-redis bench-peers bench-node-peers bench-reads bench-charts bench-aio
BENCH_TARGETS += bench-reads bench-peers bench-aio bench-node-peers bench-charts

$(BENCH_VENV)/.ready: mk/bench-peers.mk
	python3 -m venv $(BENCH_VENV)
	$(BENCH_PY) -m pip install -q --disable-pip-version-check $(BENCH_PY_PEERS)
	touch $@

bench-redis:
	@command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null || { \
	  echo "bench: installing redis-server (Debian) for the Redis peer"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }

bench-tools: $(BENCH_VENV)/.ready bench-redis

bench-peers: build-python bench-tools
	cd bench/python && PYTHONPATH=$(ROOT)/python $(BENCH_PY) peers.py $(BENCH_PEERS_ARGS)

bench-aio: build-python $(BENCH_VENV)/.ready
	cd bench/python && PYTHONPATH=$(ROOT)/$(PY_DIR) $(BENCH_PY) aio_single.py

bench-node-peers: node $$(BENCH_NODE_DIR)/node_modules/.package-lock.json
	cd $(BENCH_NODE_DIR) && SHORT=$(if $(BENCH_SHORT),1,0) node peers.mjs
	cd $(BENCH_NODE_DIR) && SHORT=$(if $(BENCH_SHORT),1,0) $(NODE_BIN)/bun peers.mjs

bench-reads:
	cargo run --release -p tinystore-bench --bin reads -- $(if $(BENCH_SHORT),--short)

bench-charts: $(BENCH_VENV)/.ready
	cd bench/python && $(BENCH_PY) chart.py $(if $(BENCH_SHORT),--short)

# Overwrites of keys that exist, in a bucket with a ttl, 64 in flight, in
# every language beside SQLite upserting 64 a transaction by hand (and, from
# Python, Redis with appendfsync always):
#
#   make bench-overwrites
.PHONY: bench-overwrites
BENCH_TARGETS += bench-overwrites
bench-overwrites: build-python node go-lib bench-redis $$(BENCH_NODE_DIR)/node_modules/.package-lock.json
	cargo run --release -q -p tinystore-bench --bin overwrites
	cd bench/python && PYTHONPATH=$(ROOT)/$(PY_DIR) $(PY) overwrites.py
	cd $(BENCH_NODE_DIR) && node overwrites.mjs
	cd $(BENCH_NODE_DIR) && $(NODE_BIN)/bun overwrites.mjs
	cd bench/go && $(GO) test -run '^$$' -bench Overwrites .
