# Two builds side by side: a git revision against the current tree, in the
# workloads of `make bench` a change to the bindings can slow (Python, Node,
# Bun, Go), alternated round by round (bench/builds/compare.py). Not in `make
# bench`, which has no revision to compare with.
#
#   make bench-builds BEFORE=<git rev>                  six rounds, a few minutes
#   make bench-builds BEFORE=<git rev> BENCH_SHORT=1    two tiny rounds: it works

.PHONY: bench-builds
bench-builds: $$(PY_VENV)/.ready node-deps
	@test -n "$(BEFORE)" || { echo "usage: make bench-builds BEFORE=<git rev>"; exit 2; }
	$(PY) bench/builds/compare.py --before $(BEFORE) $(if $(BENCH_SHORT),--short) $(BENCH_BUILDS_ARGS)
