# Reliability: the tools the fault tests need, and the long forms.
# The tests themselves are Rust tests of the core, run by test-rust; they
# need strace (I/O fault injection) and libfaketime (a system clock that
# steps back), from Debian. Without them those tests skip locally and fail
# in CI (CI=true). See docs/reliability.md.

.PHONY: reliability-tools reliability-long fuzz-smoke

RELIABILITY_DEBS := strace libfaketime

reliability-tools:
	@missing=""; for p in $(RELIABILITY_DEBS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "reliability: installing$$missing"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; } \
	    || echo "reliability: could not install$$missing; the tests that need it will say so"; \
	fi

# The Rust tests run with the tools in place.
test-rust: reliability-tools

# The long forms, for a release gate (not part of make test): 3,000 kills,
# 5,000 model cases, and a minute of fuzzing per target (nightly + cargo-fuzz).
reliability-long: reliability-tools
	TINYSTORE_CRASH_KILLS=3000 cargo test --release -p tinystore-process-tests --test crash_kill -- --nocapture
	TINYSTORE_MODEL_CASES=5000 cargo test --release -p tinystore --test reliability_model -- --nocapture
	$(MAKE) fuzz-smoke FUZZ_SECONDS=60

FUZZ_SECONDS ?= 60
FUZZ_TARGETS := key_paths value_decoding durations_and_rates c_abi

fuzz-smoke:
	@command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
	cd fuzz && for t in $(FUZZ_TARGETS); do \
	  env -u CARGO_BUILD_TARGET CARGO_TARGET_DIR=$(ROOT)/fuzz/target cargo +nightly fuzz run $$t -- -max_total_time=$(FUZZ_SECONDS) || exit 1; \
	done
