# Python in the cross-language tests and the demo: the conformance runner
# (tests/conformance/python), the agent of tests/cross.py
# (tests/agents/python) and the example chat (examples/python), all on
# the package in python/ as `make build-python` installs it into its venv.

PY_CONFORMANCE_DIR := $(ROOT)/tests/conformance/python

.PHONY: test-conformance-python

# Every case through the asyncio API; conformance-report reads its counts.
TEST_TARGETS += test-conformance-python
CONFORMANCE_LANGUAGES += python
conformance-report: test-conformance-python
test-conformance-python: build-python
	cd $(PY_CONFORMANCE_DIR) && $(PY) -m pytest -q

# The agent of tests/cross.py. Its command is the launcher beside agent.py:
# test-cross splits each CROSS_AGENTS entry on spaces ($(foreach)), so
# "python=$(PY) .../agent.py" would arrive as two agents.
CROSS_AGENTS += python=$(ROOT)/tests/agents/python/agent
CROSS_DEPS += build-python

# The example chat in Python, on the demo's shared store.
.PHONY: demo-python
DEMO_TARGETS += demo-python
demo-python: build-python
	@echo; echo "== Python: examples/python"
	@$(PY) $(ROOT)/examples/python/chat.py "$(DEMO_DIR)"
