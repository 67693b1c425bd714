# Quick start:
#   make plan    - create .venv, install gpufleet, plan the bundled `dev` stack offline
#   make test    - create .venv, install gpufleet and the test tools, run `make lint`, then the whole test suite
#   make lint    - ruff (rules and line length in pyproject.toml [tool.ruff]) over the repository, mypy over the
#                  packages ([tool.mypy])
#   make setup-browser - headless Chromium + chromedriver for the report tests (apt, as root; `make test` runs it)
#   make charts  - regenerate charts/$(STACK) (Helm chart + Argo CD / Flux files) from Pulumi.$(STACK).yaml
#   make upstream-charts - fetch NVIDIA's pinned charts into third_party/upstream/ (never committed)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STACK  ?= dev

.PHONY: setup setup-dev setup-browser plan test lint bench clean charts upstream-charts e2e cluster-tools pulumi-tools cluster-up cluster-down

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: requirements.txt pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements-dev.txt $(VENV)/.installed
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $@

setup: $(VENV)/.installed
setup-dev: $(VENV)/.installed-dev

# The `gpufleet report` tests open the page in Debian's headless Chromium (driven by selenium). apt waits up to
# ten minutes for another apt (a second checkout's setup, unattended upgrades) to let go of its lock.
setup-browser:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then \
	  :; \
	elif command -v google-chrome >/dev/null 2>&1 && [ -x "$${CHROMEWEBDRIVER:-/nonexistent}/chromedriver" ]; then \
	  :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get -o DPkg::Lock::Timeout=600 update -q && DEBIAN_FRONTEND=noninteractive \
	    apt-get -o DPkg::Lock::Timeout=600 install -y -q chromium chromium-driver; \
	else \
	  echo "The report tests need headless Chromium: as root, run apt-get install -y chromium chromium-driver"; \
	fi

plan: setup
	$(BIN)/gpufleet plan --stack $(STACK) --out build/plan-$(STACK)

charts: setup
	$(BIN)/gpufleet charts --stack $(STACK) --out charts/$(STACK)

# NVIDIA's upstream charts the tests render with `helm template` (tests/upstream and the render tests) are never
# in the repository. This fills third_party/upstream/ (ignored by git): a `helm pull` of each pinned version
# (gpufleet/nvidia/versions.py), checked by its Chart.yaml name and version, and the values files taken from
# those archives. HELM defaults to helm on PATH, else the helm the tests extract from PyPI. The tests also
# find the files through $GPUFLEET_UPSTREAM (tests/upstream_files.py).
upstream-charts: setup-dev
	$(BIN)/python scripts/upstream-charts $(if $(HELM),--helm $(HELM))

test: setup-dev setup-browser lint
	$(BIN)/python -m pytest -q

# ruff over every Python file of the repository (rules and exclusions in pyproject.toml [tool.ruff]), then mypy
# over the packages pyproject.toml [tool.mypy] lists. `make test` runs it first, so CI (.ci/run) does too.
lint: setup-dev
	$(BIN)/ruff check .
	$(BIN)/mypy

# The end-to-end tests against a real control plane (README: "End-to-end tests against a real control plane").
cluster-tools:
	scripts/build-cluster-tools

# The Pulumi CLI, its Python host and pulumi-kubernetes' provider the e2e tests deploy with (README: "Deploying
# for real, tested").
pulumi-tools:
	scripts/build-pulumi-tools

# Each test module starts its own control plane; two modules run at once (E2E_JOBS), whole, on separate ones.
E2E_JOBS ?= 2
e2e: setup-dev cluster-tools pulumi-tools
	$(BIN)/python -m pytest -q -n $(E2E_JOBS) --dist loadfile tests/e2e

cluster-up: setup-dev cluster-tools
	$(BIN)/python -m tests.e2e.cluster up

cluster-down: setup-dev
	$(BIN)/python -m tests.e2e.cluster down

bench: setup
	$(BIN)/python bench/plan_bench.py

clean:
	rm -rf $(VENV) build
