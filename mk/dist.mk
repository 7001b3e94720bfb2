# Packages as a release publishes them, all of one version, in dist/ (not in
# make test: the wheel builds the Python module again with zig).
#
#   make dist        everything below (about 12 minutes on 2 cores after make test)
#   make test-dist   make dist, then tests/dist/check_dist.py installs each
#                    package into a clean place with cargo and rustc off the
#                    PATH and runs the handbook's chat from each on one store
#                    (the wheel in a venv of each CPython of PY_DIST_VERSIONS)
#
#   dist/python/  tinystore-V-cp310-abi3-manylinux_2_28_x86_64.whl, one wheel
#                 for every CPython from 3.10, and the sdist
#   dist/npm/     tinystore-V.tgz and tinystore-linux-x64-gnu-V.tgz, laid out
#                 as napi-rs publishes them (node/scripts/stage-npm.mjs)
#   dist/go/      a module proxy (GOPROXY=file://.../dist/go) serving
#                 tinyshed.org/tinystore vV with the prebuilt static library
#   dist/rust/    the crates tinystore and tinystore-cli (cargo package) and
#                 the tinystore command, tinystore-cli-V-TRIPLE.tar.gz
#
# The wheel is abi3: the module is built against CPython 3.10's limited
# API (pyo3's abi3-py310), so one wheel loads in every CPython from 3.10.
# test-dist installs it in each of PY_DIST_VERSIONS found here. The tag is
# manylinux_2_28 (glibc 2.28, what RHEL 8, Debian 10 and Ubuntu 18.10 and
# later have): zig links the module against that glibc's symbols (maturin
# --zig, zig from the ziglang wheel on PyPI), where the system's linker on
# Debian 12 would need glibc 2.34. maturin checks the tag against the
# symbols (--compatibility). Zig's C objects live in a target directory of
# their own, so they never replace the ones `make test` builds.

DIST := $(ROOT)/dist
DIST_STAGE := $(CARGO_TARGET_DIR)/dist-stage
DIST_VERSION = $(shell python3 packaging/versions.py)
PY_DIST_VERSIONS ?= 3.10 3.11 3.12 3.13
PY_MANYLINUX := manylinux_2_28
PY_ZIG := ziglang==0.17.1

.PHONY: dist dist-versions dist-python dist-npm dist-go dist-rust test-dist
dist: dist-versions dist-python dist-npm dist-go dist-rust
	@echo; echo "make dist: tinystore $(DIST_VERSION) in dist/:"; cd $(DIST) && find . -type f | sort

dist-versions:
	@python3 packaging/versions.py >/dev/null

dist-python: dist-versions $$(PY_VENV)/.ready
	rm -rf $(DIST)/python
	$(abspath $(PY_VENV))/bin/python -m pip install -q --disable-pip-version-check "$(PY_ZIG)"
	cd $(PY_DIST) && PATH="$(abspath $(PY_VENV))/bin:$$PATH" CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/zig \
		$(abspath $(PY_VENV))/bin/maturin build --release --strip --quiet --zig \
		--compatibility $(PY_MANYLINUX) --interpreter $(PY) --out $(DIST)/python
	cd $(PY_DIST) && $(abspath $(PY_VENV))/bin/maturin sdist --out $(DIST)/python

# Recursive: PY_DIR comes from python.mk, which may be read after this file.
PY_DIST = $(ROOT)/$(PY_DIR)

# The package and its platform package, staged (the checkout's package.json
# names no platform package, so that npm ci here never looks for one), then
# packed; the prepack of each refuses a package that could not load.
dist-npm: dist-versions node
	rm -rf $(DIST)/npm && mkdir -p $(DIST)/npm
	node $(NODE_DIR)/scripts/stage-npm.mjs $(DIST_STAGE)/npm
	strip --strip-debug $(DIST_STAGE)/npm/*/*.node
	for d in $(DIST_STAGE)/npm/*/; do (cd "$$d" && npm pack --silent --pack-destination $(DIST)/npm >/dev/null); done

# The module is go/ as git has it, the LICENSE, and what go-lib makes: the
# ABI's header and the static library, without its debug sections (84 MB
# with them, 24 without), in a module proxy's layout written by
# packaging/gomodzip (golang.org/x/mod/zip, which checks the go command's
# rules, such as the 500 MB limit). linux/amd64 only, for now.
GO_DIST_STAGE := $(DIST_STAGE)/go
dist-go: dist-versions go-lib
	test "$(GO_PLATFORM)" = linux_amd64 || { echo "dist: the Go module carries linux_amd64's library; this is $(GO_PLATFORM)"; exit 1; }
	rm -rf $(DIST)/go $(GO_DIST_STAGE) && mkdir -p $(GO_DIST_STAGE)
	git ls-files -z go | sed -z 's|^go/||' | (cd go && xargs -0 cp --parents -t $(GO_DIST_STAGE))
	cp LICENSE $(GO_DIST_STAGE)/
	cp $(GO_HEADER) $(GO_DIST_STAGE)/internal/native/
	mkdir -p $(GO_DIST_STAGE)/internal/native/lib/linux_amd64
	strip --strip-debug -o $(GO_DIST_STAGE)/internal/native/lib/linux_amd64/libtinystore.a $(GO_LIB)
	cd packaging/gomodzip && $(GO) run . -dir $(GO_DIST_STAGE) -out $(DIST)/go \
		-version v$(DIST_VERSION) -time "$$(git log -1 --format=%cI)"

# --allow-dirty: make dist runs in a working checkout too; a release is
# made from a clean one. Both crates in one cargo package, so that the
# check build of tinystore-cli finds the tinystore it was packaged with.
RUST_DIST_CLI = tinystore-cli-$(DIST_VERSION)-$(CARGO_BUILD_TARGET)
# cargo verifies the CLI against the tinystore it just packaged, through a
# local registry. It keeps what it unpacked from one by path and version
# (under CARGO_HOME) and what it built from one as never changing, so a
# tinystore packaged earlier at the same version would be verified in place
# of this one: the unpacked copies go first, and the check builds in a
# target directory of its own.
CARGO_HOME_DIR = $(or $(CARGO_HOME),$(HOME)/.cargo)
RUST_PACKAGE_DIR = $(DIST_STAGE)/cargo-package
dist-rust: dist-versions
	rm -rf $(DIST)/rust $(DIST_STAGE)/$(RUST_DIST_CLI) $(RUST_PACKAGE_DIR) && mkdir -p $(DIST)/rust $(DIST_STAGE)/$(RUST_DIST_CLI)
	rm -rf $(CARGO_HOME_DIR)/registry/src/-*/tinystore-$(DIST_VERSION) $(CARGO_HOME_DIR)/registry/src/-*/tinystore-cli-$(DIST_VERSION)
	CARGO_TARGET_DIR=$(RUST_PACKAGE_DIR) cargo package --quiet --allow-dirty -p tinystore -p tinystore-cli
	cp $(RUST_PACKAGE_DIR)/package/tinystore-$(DIST_VERSION).crate $(RUST_PACKAGE_DIR)/package/tinystore-cli-$(DIST_VERSION).crate $(DIST)/rust/
	cargo build --quiet --release -p tinystore-cli
	strip -o $(DIST_STAGE)/$(RUST_DIST_CLI)/tinystore $(TARGET_DIR)/release/tinystore
	cp LICENSE CHANGELOG.md cli/README.md $(DIST_STAGE)/$(RUST_DIST_CLI)/
	tar -C $(DIST_STAGE) -czf $(DIST)/rust/$(RUST_DIST_CLI).tar.gz $(RUST_DIST_CLI)

# The test of what make dist wrote; .ci/run runs it after make test.
test-dist: dist node-deps
	python3 tests/dist/check_dist.py --dist $(DIST) --version $(DIST_VERSION) --pythons "$(PY_DIST_VERSIONS)" \
		--bun $(NODE_BIN)/bun --tsc $(NODE_BIN)/tsc --types $(NODE_DIR)/node_modules/@types
