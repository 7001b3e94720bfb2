# Node and Bun in the cross-language tests and the demo, over the npm package
# that `make node` builds (mk/node.mk): the conformance runner
# (tests/conformance/node), the agent (tests/agents/node) and the example
# chat (examples/node), each run under Node and under Bun.

CONFORMANCE_NODE_TEST := tests/conformance/node/conformance.test.mjs

.PHONY: test-conformance-node

# Every case under `node --test`, then under `bun test`; each writes its
# counts to target/conformance/{node,bun}.txt for conformance-report. A NaN
# payload is the one value JS numbers cannot carry: the cases mark it, and
# the JS promise is written in tests/conformance/README.md ("NaN in
# JavaScript"). On the addon and package `make node` built for test-node.
TEST_TARGETS += test-conformance-node
CONFORMANCE_LANGUAGES += node bun
conformance-report: test-conformance-node
test-conformance-node: node
	node --test $(CONFORMANCE_NODE_TEST)
	$(NODE_BIN)/bun test ./$(CONFORMANCE_NODE_TEST)

# The agent of tests/cross.py, under Node and under Bun. Its commands are the
# launchers beside agent.mjs: test-cross splits each CROSS_AGENTS entry on
# spaces ($(foreach)), so "node=node .../agent.mjs" would arrive as two agents.
# The handbook's declarations (tests/agents/node/handbook.ts) are TypeScript:
# tsc checks them against the package's types and compiles them for Node;
# Bun runs the source.
NODE_CROSS_AGENTS := node=$(ROOT)/tests/agents/node/node-agent bun=$(ROOT)/tests/agents/node/bun-agent
CROSS_AGENTS += $(NODE_CROSS_AGENTS)
CROSS_DEPS += cross-agent-node

.PHONY: test-cross-node cross-agent-node

cross-agent-node: node
	$(NODE_BIN)/tsc -p tests/agents/node

# cross.py with Rust and the two JS agents only: the quick check while
# working on the package (make test runs them with every language).
test-cross-node: cross-agent-rust cross-agent-node
	python3 tests/cross.py --agent 'rust=$(TARGET_DIR)/debug/tinystore-agent' $(foreach a,$(NODE_CROSS_AGENTS),--agent '$(a)')

# The example chat in TypeScript (examples/node/chat.ts) on the demo's
# store: type-checked and compiled by the package's own tsc, run by Node, then
# run from its source by Bun.
.PHONY: demo-node demo-bun
DEMO_TARGETS += demo-node demo-bun

demo-node: node
	@echo; echo "== Node: examples/node"
	@$(NODE_BIN)/tsc -p examples/node
	@node examples/node/chat.js "$(DEMO_DIR)"

demo-bun: node
	@echo; echo "== Bun: examples/node"
	@$(NODE_BIN)/bun examples/node/chat.ts "$(DEMO_DIR)"

# make test runs the chat too, under both runtimes on a fresh store, so that
# the demo cannot rot: it fails if the chat throws, or tells of a code, limit
# or request that did not behave ("unexpected").
.PHONY: test-example-node
TEST_TARGETS += test-example-node

test-example-node: node
	$(NODE_BIN)/tsc -p examples/node
	d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
		node examples/node/chat.js "$$d" > "$$d/node.out" && \
		$(NODE_BIN)/bun examples/node/chat.ts "$$d" > "$$d/bun.out" && \
		grep -q '^Node chat: done' "$$d/node.out" && grep -q '^Bun chat: done' "$$d/bun.out" && \
		! grep -H unexpected "$$d/node.out" "$$d/bun.out"
