# Every target bootstraps what it needs: a fresh clone runs `make demo` or `make test` directly.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CLAUDE_VERSION := 2.1.197
CLAUDE := .tools/claude/node_modules/.bin/claude

.PHONY: install agent-sandbox claude-cli mcp-everything test test-fast demo lint bench clean

install: $(STAMP) claude-cli mcp-everything agent-sandbox

# The agents' sandbox: bubblewrap, and socat for the claude CLI's network proxy. Installed with
# apt-get when this runs as root on a Debian-like machine (CI, a fresh VM); otherwise it says
# what to install. Without them a real install refuses dev-agent runs (fail closed) and the demo
# opts out loudly.
agent-sandbox:
	@if command -v bwrap >/dev/null 2>&1 && command -v socat >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  (apt-get install -y -qq bubblewrap socat >/dev/null 2>&1 || \
	   (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq bubblewrap socat >/dev/null 2>&1)) \
	  || echo "could not install bubblewrap/socat: the agent-sandbox tests say why they fail"; \
	else echo "bubblewrap and socat are missing: install them (apt-get install bubblewrap socat)"; fi

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

# The real claude CLI, pinned, project-local. Without npm the claude_cli tests say why they skip.
claude-cli: $(CLAUDE)

$(CLAUDE):
	@if command -v npm >/dev/null 2>&1; then \
	  npm install --prefix .tools/claude --no-audit --no-fund --loglevel=error \
	    @anthropic-ai/claude-code@$(CLAUDE_VERSION); \
	else echo "npm not found: skipping the claude CLI (HARNESS_RUNTIME=anthropic still works)"; fi

# pytest exits 5 when it collected nothing: that is a broken suite, never a pass.
# The reference MCP server, for mcp-watch's test against a server the harness did not write.
MCP_EVERYTHING := .tools/mcp-everything/node_modules/.bin/mcp-server-everything
mcp-everything: $(MCP_EVERYTHING)

$(MCP_EVERYTHING):
	@if command -v npm >/dev/null 2>&1; then \
	  npm install --prefix .tools/mcp-everything --no-audit --no-fund --loglevel=error \
	    @modelcontextprotocol/server-everything@2026.8.31 \
	  || echo "could not install server-everything: its mcp-watch test says why it skips"; \
	else echo "npm not found: the server-everything test skips"; fi

# Most tests wait on emulators, git and the claude CLI rather than on the CPU, so the suite runs
# in TEST_WORKERS processes (4 on 2 cores; work stealing evens out the long end-to-end tests).
TEST_WORKERS ?= 4
test: install
	@$(BIN)/pytest -q -n $(TEST_WORKERS) --dist worksteal; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; exit $$rc

test-fast: $(STAMP)
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist worksteal -m "not slow"

demo: install
	$(BIN)/harness demo

lint: $(STAMP)
	$(BIN)/ruff check harness_cli tests bench
	$(BIN)/ruff format --check harness_cli tests bench
	$(BIN)/mypy

bench: $(STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .tools .pytest_cache .mypy_cache .ruff_cache
