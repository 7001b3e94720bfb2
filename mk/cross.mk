# Cross-language tests: the conformance report and tests/cross.py (interchange
# and processes). Each language's mk file adds its agent to CROSS_AGENTS
# (LANGUAGE=COMMAND), what builds it to CROSS_DEPS, and its name to
# CONFORMANCE_LANGUAGES once its conformance runner runs in make test, and
# the target that runs it to conformance-report's prerequisites.

CROSS_AGENTS += rust=$(TARGET_DIR)/debug/tinystore-agent
CONFORMANCE_LANGUAGES += rust
conformance-report: test-rust

.PHONY: test-cross test-cross-postgres cross-agent-rust conformance-report
TEST_TARGETS += test-cross test-cross-postgres conformance-report

cross-agent-rust:
	cargo build -q -p tinystore-agent

test-cross: cross-agent-rust $$(CROSS_DEPS)
	python3 tests/cross.py $(foreach a,$(CROSS_AGENTS),--agent '$(a)')

# The same processes on one PostgreSQL database, as app servers share one:
# two of every agent in each race (tests/processes/README.md).
test-cross-postgres: pg-start cross-agent-rust $$(CROSS_DEPS)
	python3 tests/cross.py --postgres '$(TINYSTORE_TEST_PG)' $(foreach a,$(CROSS_AGENTS),--agent '$(a)')

conformance-report:
	python3 tests/conformance/report.py $(CONFORMANCE_LANGUAGES)
