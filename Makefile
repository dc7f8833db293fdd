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

test: $(VENV)/.test-installed
	$(VENV)/bin/ruff check analysis server tests benchmarks build_backend
	$(PY) -m pytest -q -rs
	@$(MAKE) --no-print-directory vscode-client

vscode-client:
	@if command -v npm >/dev/null 2>&1 && [ -f vscode-client/package.json ]; then \
		cd vscode-client && npm ci --no-audit --no-fund && npm run lint && npm test && npm run package; \
	else \
		echo "vscode-client: skipped (npm not found or no vscode-client/package.json)"; \
	fi

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
