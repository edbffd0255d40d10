# The two commands: `make run` (the stack on this machine) and `make test` (everything CI runs).
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PROJECTS := common devstack pet-service order-service user-service gateway
PACKAGES := protos/python $(PROJECTS)
INSTALLED := $(VENV)/.installed

.PHONY: help install run run-demo test lint typecheck protos protos-check unit ferretdb e2e-compose deploy-check bench bench-smoke clean

help:
	@echo "make run    - the whole stack as local processes, gateway on http://127.0.0.1:8080/v2"
	@echo "make test   - lint, types, unit, storage contract (embedded + FerretDB), e2e, deploy checks"
	@echo "make bench  - the load benchmark (about three minutes)"

# One virtual environment for development: every third-party package pinned in
# requirements/dev.lock, our own packages installed editable on top without touching pins.
$(INSTALLED): requirements/dev.lock $(addsuffix /pyproject.toml,$(PACKAGES))
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements/dev.lock
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps $(addprefix -e ,$(PACKAGES))
	touch $@

install: $(INSTALLED)

run: install
	$(PY) -m petstore_devstack

# The same, with the classic demo pets, users and orders loaded.
run-demo: install
	$(PY) -m petstore_devstack --demo

protos: install
	protos/generate.sh

protos-check: install
	protos/generate.sh --check

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# One mypy run per project: test modules of different projects share names.
typecheck: install
	for project in $(PROJECTS); do \
	  dirs=$$(ls -d $$project/src $$project/tests 2>/dev/null); \
	  $(VENV)/bin/mypy $$dirs; \
	done
	$(VENV)/bin/mypy conftest.py tests
	$(VENV)/bin/mypy deploy

ferretdb: install
	$(PY) -m petstore_devstack.ferretdb install

# The MongoDB-backed tests need MONGODB_URI: given, or FerretDB started for the run.
unit: ferretdb
	$(PY) -m petstore_devstack.ferretdb with -- $(PY) -m pytest

# The same e2e suite against the docker-compose.yml stack (pytest-docker builds, starts and
# removes it); skipped with the reason on a machine without a Docker engine with compose.
e2e-compose: install
	PETSTORE_E2E_MODE=compose $(PY) -m pytest tests/e2e

deploy-check: install
	deploy/check.sh

test: lint typecheck protos-check unit deploy-check

clean:
	rm -rf $(VENV) .cache .mypy_cache .ruff_cache .pytest_cache
