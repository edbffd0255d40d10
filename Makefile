# The two commands: `make run` (the stack as local processes) and `make test` (everything CI
# runs). `make help` lists every target.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PROJECTS := common devstack pet-service order-service user-service webhook-service gateway bench
# Each project's tests are a package named after it (pet-service/pet_service_tests), so one
# pytest run, and one mypy run, covers them all; tests/ is the repository's own suite.
TEST_PACKAGES := $(foreach project,$(PROJECTS) deploy,$(project)/$(subst -,_,$(project))_tests)
PACKAGES := protos/python $(PROJECTS)
# What running needs: the stack and its runner (tests/test_requirements.py keeps the list and
# requirements/run.lock in step).
RUN_PACKAGES := protos/python common devstack pet-service order-service user-service webhook-service gateway
RUN_SOURCES := protos/python $(addsuffix /src,$(filter-out protos/python,$(RUN_PACKAGES)))
INSTALLED := $(VENV)/.installed
RUN_INSTALLED := $(VENV)/.run-installed
PIP := $(PY) -m pip install --disable-pip-version-check --progress-bar off

.PHONY: help install install-run run run-demo test lint typecheck protos protos-check protos-contract docs unit integration e2e ferretdb e2e-skew e2e-compose e2e-k8s images deploy-check bench bench-smoke bench-growth aiohttp-next clean

help:
	@echo "make run          - the whole stack as local processes, gateway on http://127.0.0.1:8080/v2"
	@echo "                    (installs only what running needs; Ctrl-C stops it; its processes end"
	@echo "                    with it however it ends, kill -9 included)"
	@echo "make run-demo     - the same, with demo pets, customers and orders loaded"
	@echo "make test         - everything CI runs (about 17 minutes fresh on 2 cores; docs/testing.md):"
	@echo "                    lint typecheck protos-check protos-contract unit integration e2e deploy-check"
	@echo "                    bench-smoke"
	@echo "make install      - the development environment (.venv from requirements/dev.lock)"
	@echo "make install-run  - only what running needs (.venv from requirements/run.lock)"
	@echo "make lint         - ruff check and ruff format --check"
	@echo "make typecheck    - mypy over every project, in one run"
	@echo "make protos       - regenerate the gRPC code from protos/"
	@echo "make protos-check - fail when the generated gRPC code is stale"
	@echo "make protos-contract - buf lint, and buf breaking against every previous release's protos"
	@echo "make docs         - regenerate the tables in docs/ from the code (a test fails while one is stale)"
	@echo "make unit         - each project's tests (a pytest run each, timed) and the line coverage, on FerretDB"
	@echo "make integration  - tests/*.py: the stack in one process, query plans, the repository's own checks"
	@echo "make e2e          - tests/*/: end to end over real processes, faults, generated clients, on FerretDB"
	@echo "make ferretdb     - build FerretDB (the MongoDB-wire server for tests) into .cache/"
	@echo "make deploy-check - offline checks of the Kubernetes manifests, compose file and Dockerfiles"
	@echo "make bench        - the load benchmark (about six minutes)"
	@echo "make bench-smoke  - every benchmark scenario for one second (about thirty seconds)"
	@echo "make bench-growth - each operation's cost at 1k, 10k and 100k pets, both stores (at most ~30 min)"
	@echo "make aiohttp-next - the connection guards' tests against the newest aiohttp on PyPI (AIOHTTP=x.y.z:"
	@echo "                    that release; ~20 s of tests after the download; not in make test: needs PyPI)"
	@echo "make e2e-skew     - the e2e suite five times, each with one deployable at its previous release (two at once)"
	@echo "make e2e-compose  - the e2e suite against docker-compose.yml (Docker engine; root to install one)"
	@echo "make e2e-k8s      - the e2e suite through a single-node k3s (root)"
	@echo "make images       - the five images, tagged <version> and <version>-<commit> (SERVICE=pet-service:"
	@echo "                    one team's; PREVIOUS=1: the previous releases; REGISTRY=host/path: named"
	@echo "                    <REGISTRY>/<image> instead of petstore/<image>, ready to docker push; pushes nothing)"
	@echo "make clean        - remove .venv and the caches (.cache holds FerretDB and other builds)"

# Running needs a few dozen packages (requirements/run.lock, a subset of dev.lock pinned alike);
# developing needs them all. Both go into the one .venv, our own packages on top without
# touching pins. pip prints a line per package, so a first run shows its progress; no .pyc is
# compiled ahead (Python writes each on first import); run.lock is complete (a test keeps it
# so), so pip resolves nothing (--no-deps).
$(RUN_INSTALLED): requirements/run.lock $(addsuffix /pyproject.toml,$(RUN_PACKAGES))
	@echo "== installing what running needs into $(VENV) (first time only; requirements/run.lock)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) --no-compile --no-deps -r requirements/run.lock
	@# Our own packages by path, as an editable install would put them, without building eight
	@# wheels in eight isolated build environments (a minute); `make install` installs them properly.
	printf '%s\n' $(abspath $(RUN_SOURCES)) \
	  > "$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/petstore-run.pth"
	touch $@

$(INSTALLED): requirements/dev.lock $(addsuffix /pyproject.toml,$(PACKAGES))
	@echo "== installing the development environment into $(VENV) (requirements/dev.lock)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements/dev.lock
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps $(addprefix -e ,$(PACKAGES))
	touch $(RUN_INSTALLED) $@

install: $(INSTALLED)

install-run: $(RUN_INSTALLED)

run: install-run
	$(PY) -m petstore_devstack

# The same, with the classic demo pets, customers and their orders loaded.
run-demo: install-run
	$(PY) -m petstore_devstack --demo

protos: install
	protos/generate.sh

protos-check: install
	protos/generate.sh --check

# The settings and operations tables in docs/, from the code (petstore_devstack.doc_tables);
# tests/test_readme.py fails while one is stale, as protos-check does for the protos.
docs: install
	$(PY) -m petstore_devstack.doc_tables

# buf lint, and buf breaking against the protos of every deployable's previous release
# (protos/buf.yaml holds the rules, deploy/releases.toml the releases).
protos-contract: install
	protos/contract.sh

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# One mypy run over every project, its tests included (deploy: its tests and scripts).
typecheck: install
	$(VENV)/bin/mypy $(addsuffix /src,$(PROJECTS)) $(TEST_DIRS) deploy conftest.py

ferretdb: install
	$(PY) -m petstore_devstack.ferretdb install

# The MongoDB-backed tests need MONGODB_URI: given, or FerretDB started for the run.
# One pytest run per test folder, each one's time printed as it ends and in a table at the end
# (petstore_devstack.test_runs). `unit`: each project's own tests, in process, with the line
# coverage of the product code over them all and its floor (pyproject.toml). `integration`:
# tests/ own files (the whole stack in one process, the query plans on FerretDB, the repository's
# own checks). `e2e`: tests/ packages (e2e, faults, clients, skew: real processes over real
# gRPC), on FerretDB; the parts whose storage differs most between the stores (order lists,
# images) run end to end on the embedded store too (MONGODB_URI empty). Every run goes, then the
# failed ones are named. deploy/deploy_tests runs in deploy/check.sh (`make deploy-check`) with
# the kustomize and compose it provides.
UNIT_DIRS := $(filter-out deploy/deploy_tests,$(TEST_PACKAGES))
TEST_DIRS := $(UNIT_DIRS) tests
EMBEDDED_E2E := tests/e2e/test_order_lists.py tests/e2e/test_pet_images.py
unit: ferretdb
	$(PY) -m petstore_devstack.ferretdb with -- $(PY) -m petstore_devstack.test_runs --coverage $(UNIT_DIRS)

integration: ferretdb
	$(PY) -m petstore_devstack.ferretdb with -- $(PY) -m petstore_devstack.test_runs --parts own tests

e2e: ferretdb
	$(PY) -m petstore_devstack.ferretdb with -- bash -c 'failed=""; \
	  $(PY) -m petstore_devstack.test_runs --parts packages tests || failed="$$failed e2e"; \
	  echo "== on the embedded store"; \
	  $(PY) -m petstore_devstack.test_runs --env MONGODB_URI= $(EMBEDDED_E2E) || failed="$$failed embedded-e2e"; \
	  if [ -n "$$failed" ]; then echo "pytest failed in:$$failed"; exit 1; fi'

# Version skew: the e2e suite once per released deployable (a new one, `unreleased` in
# deploy/releases.toml, has no previous release), that one at its previous release
# (deploy/releases.toml, petstore_devstack.releases) and the others from the working tree,
# processes on FerretDB, two runs at a time (a run keeps one of the two cores ~86% busy: the
# suite mostly waits on the stack it drives); every run goes, then the failed ones are named.
# FerretDB on SQLite here: the 1.0.0 user service reads a unique-index violation on update only
# in SQLite's words (FerretDB reports it as an InternalError with its backend's text), so on
# PostgreSQL its rename onto a taken name is a 503 (it is a 409 on MongoDB and on SQLite). Back
# to PostgreSQL once every previous release is 1.1.0 or later.
SKEW_JOBS ?= 2
e2e-skew: ferretdb
	$(PY) -m petstore_devstack.releases check
	$(PY) -m petstore_devstack.ferretdb with --sqlite -- $(PY) -m petstore_devstack.test_runs \
	  --jobs $(SKEW_JOBS) --each PETSTORE_E2E_PREVIOUS=$$($(PY) -m petstore_devstack.releases names --released | paste -sd,) tests/e2e

# The same e2e suite and the container fault tests against the docker-compose.yml stack, on
# the host's Docker engine, or on one it installs (root, apt) and starts for the run and
# stops at the end; base images built offline where no registry gives them
# (deploy/compose/e2e.sh says what it does and how long each step took).
e2e-compose: ferretdb
	deploy/compose/e2e.sh

# The same e2e suite, and the Kubernetes tests (tests/k8s), through a single-node k3s built
# from the Go module proxy (cached in .cache/k3s/<version>) and started for the run (root);
# each team's folder applied alone, then the e2e overlay; stopped by PID at the end and the
# machine's network state restored (deploy/k8s/e2e.sh says what it does and how long it took).
e2e-k8s: ferretdb
	deploy/k8s/e2e.sh

# Each deployable's image, tagged with its version (its pyproject.toml) and version-commit;
# SERVICE=<pet-service|order-service|user-service|webhook-service|gateway> builds one team's (deploy/images.sh).
images: install-run
	deploy/images.sh

deploy-check: install
	deploy/check.sh

# The load benchmark (bench/README.md): the stack on FerretDB (or MONGODB_URI) and a bare
# baseline driven by wrk on loopback, about six minutes, stops by itself; bench/results/.
bench: ferretdb
	$(PY) -m petstore_bench

# The same in about thirty seconds (every scenario for 1 s): fails when a scenario errs, or a
# read is stale or answered with the wrong status, so the benchmark cannot rot.
bench-smoke: ferretdb
	$(PY) -m petstore_bench --smoke

# The connection guards against the newest aiohttp (or AIOHTTP=x.y.z): that release and what it
# needs installed into a throwaway folder put ahead of .venv on the path, then the adapter's test
# (gateway_tests/test_aiohttp_adapter.py: each aiohttp internal the gateway relies on) and the
# guards' tests. Not in `make test`: it depends on what PyPI holds today, not on the commit.
AIOHTTP_NEXT := /tmp/petstore-aiohttp-next
AIOHTTP_NEXT_TESTS := $(addprefix gateway/gateway_tests/,test_aiohttp_adapter.py test_slow_clients.py \
  test_oversized_heads.py test_raw_requests.py test_aborted.py test_on_call_logs.py test_serving.py)
aiohttp-next: install
	rm -rf $(AIOHTTP_NEXT)
	$(PIP) --quiet --target $(AIOHTTP_NEXT) "aiohttp$(if $(AIOHTTP),==$(AIOHTTP))"
	@echo "== aiohttp $$($(PY) -c 'import aiohttp; print(aiohttp.__version__)') in .venv, \
	  $$(PYTHONPATH=$(AIOHTTP_NEXT) $(PY) -c 'import aiohttp; print(aiohttp.__version__, "from", aiohttp.__file__)') here"
	PYTHONPATH=$(AIOHTTP_NEXT) $(PY) -m pytest -p no:cacheprovider -q $(AIOHTTP_NEXT_TESTS) \
	  && status=0 || status=$$?; rm -rf $(AIOHTTP_NEXT); exit $$status

# How each operation's cost moves as the shop grows (1k, 10k, 100k pets) on the embedded store
# and on FerretDB (PostgreSQL), seeded through the API; at most about 30 minutes, stops by itself.
bench-growth: ferretdb
	$(PY) -m petstore_bench --growth

test: lint typecheck protos-check protos-contract unit integration e2e deploy-check bench-smoke

clean:
	rm -rf $(VENV) .cache .mypy_cache .ruff_cache .pytest_cache
