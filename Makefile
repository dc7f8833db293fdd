# Kerncast: the two commands of the README.
#   make demo   creates .venv, installs Kerncast with its cuda extra and analyses an example
#   make test   creates/updates .venv with the test dependencies and runs the whole test suite

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
DEMO   ?= examples/matmul.cu

.PHONY: demo test lint vscode-client clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# An editable install leaves Kerncast's own modules as sources; they are byte-compiled once here, as pip does
# for an installed wheel, so that a command does not compile every module again at each start where the
# environment sets PYTHONDONTWRITEBYTECODE (about 0.15 s of `kerncast analyze`). A module edited since is
# compiled again when it is imported.
$(VENV)/.demo-installed: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e '.[cuda]'
	$(PY) -m compileall -q analysis server
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e '.[cuda,test]'
	$(PY) -m compileall -q analysis server
	touch $@ $(VENV)/.demo-installed

demo: $(VENV)/.demo-installed
	$(VENV)/bin/kerncast analyze $(DEMO)

# The extension's lint, tests and package use Node alone, so they run beside pytest (which keeps one core busy)
# with their output held back and printed after pytest's; either one failing fails `make test`.
test: $(VENV)/.test-installed
	$(VENV)/bin/ruff check analysis server tests benchmarks build_backend
	@log=$$(mktemp); \
	$(MAKE) --no-print-directory vscode-client >"$$log" 2>&1 & client=$$!; \
	$(PY) -m pytest -q -rs; tests=$$?; \
	wait $$client; built=$$?; \
	echo "--- vscode-client (built while the tests ran) ---"; cat "$$log"; rm -f "$$log"; \
	if [ $$built -ne 0 ]; then echo "vscode-client: failed (exit $$built)"; fi; \
	[ $$tests -eq 0 ] && [ $$built -eq 0 ]

vscode-client:
	@if command -v npm >/dev/null 2>&1 && [ -f vscode-client/package.json ]; then \
		cd vscode-client && npm ci --no-audit --no-fund && npm run lint && npm test && npm run package; \
	else \
		echo "vscode-client: skipped (npm not found or no vscode-client/package.json)"; \
	fi

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
