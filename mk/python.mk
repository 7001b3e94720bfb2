# Python: the package in python/ (tinystore) over the native module built
# from bindings/python by maturin. A venv in python/.venv holds the build and
# test tools; `make test-python` builds the module into it and runs pytest,
# then checks that `pip install ./python` works in a clean venv.

PY_DIR := python
PY_VENV := $(PY_DIR)/.venv
PY := $(abspath $(PY_VENV))/bin/python
# pyo3-introspection writes the native module's stubs (mk/generate.mk): its
# version is the pyo3 crate's, whose introspection data it reads.
PY_TOOLS := "maturin>=1.16,<2" "pytest>=8" "pytest-asyncio>=0.24" "pydantic>=2" "mypy>=1.10" "pyo3-introspection==0.30.1"
PY_BENCH_TOOLS := diskcache

.PHONY: venv-python build-python test-python test-python-install lint-python bench-python
TEST_TARGETS += test-python
BENCH_TARGETS += bench-python

$(PY_VENV)/.ready: mk/python.mk
	python3 -m venv $(PY_VENV)
	$(PY) -m pip install -q --disable-pip-version-check $(PY_TOOLS)
	touch $@

venv-python: $(PY_VENV)/.ready

# `maturin develop` writes the module next to the sources (python/tinystore)
# and links the package into the venv. It shares the workspace's target dir
# and CARGO_BUILD_TARGET, in release (unlike `cargo test`), so neither
# rebuilds the other's pyo3. The module is abi3 (`_native.abi3.so`): a
# per-CPython one left by an older build would be imported before it.
build-python: $(PY_VENV)/.ready
	rm -f $(PY_DIR)/tinystore/_native.cpython-*.so
	cd $(PY_DIR) && VIRTUAL_ENV=$(abspath $(PY_VENV)) PATH=$(abspath $(PY_VENV))/bin:$$PATH \
		maturin develop --release --quiet

lint-python:
	cargo fmt -p tinystore-python -- --check
	cargo clippy -p tinystore-python --no-deps --all-targets -- -D warnings

test-python: build-python lint-python
	cd $(PY_DIR) && $(PY) -m mypy
	cd $(PY_DIR) && $(PY) -m pytest -q
	$(MAKE) --no-print-directory test-python-install

# The first promise of the package: `pip install ./python`, and the wheel of
# `maturin build`, each in a clean venv with nothing else set up, import and work.
PY_CLEAN := $(CARGO_TARGET_DIR)/py-clean-venv
PY_WHEELS := $(CARGO_TARGET_DIR)/py-wheels
test-python-install: $(PY_VENV)/.ready
	rm -rf $(PY_WHEELS) && cd $(PY_DIR) && $(abspath $(PY_VENV))/bin/maturin build --release --quiet --interpreter $(PY) --out $(PY_WHEELS)
	rm -rf $(PY_CLEAN) && python3 -m venv $(PY_CLEAN)
	$(PY_CLEAN)/bin/python -m pip install -q --disable-pip-version-check $(PY_WHEELS)/tinystore-*.whl
	cd /tmp && $(PY_CLEAN)/bin/python $(abspath $(PY_DIR))/tests/install_check.py
	rm -rf $(PY_CLEAN) && python3 -m venv $(PY_CLEAN)
	$(PY_CLEAN)/bin/python -m pip install -q --disable-pip-version-check ./$(PY_DIR)
	cd /tmp && $(PY_CLEAN)/bin/python $(abspath $(PY_DIR))/tests/install_check.py

bench-python: build-python
	$(PY) -m pip install -q --disable-pip-version-check $(PY_BENCH_TOOLS)
	cd bench/python && $(PY) bench.py
