# Quick start:
#   make plan    - create .venv, install gpufleet, plan the bundled `dev` stack offline
#   make test    - create .venv, install gpufleet and the test tools, run the whole test suite
#   make setup-browser - headless Chromium + chromedriver for the report tests (apt, as root; `make test` runs it)
#   make charts  - regenerate charts/$(STACK) (Helm chart + Argo CD / Flux files) from Pulumi.$(STACK).yaml
#   make upstream-charts - refresh the vendored NVIDIA charts (third_party/charts) and verify their digests
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STACK  ?= dev

.PHONY: setup setup-dev setup-browser plan test bench clean charts upstream-charts

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

# The `gpufleet report` tests open the page in Debian's headless Chromium (driven by selenium).
setup-browser:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then \
	  :; \
	elif command -v google-chrome >/dev/null 2>&1 && [ -x "$${CHROMEWEBDRIVER:-/nonexistent}/chromedriver" ]; then \
	  :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; \
	else \
	  echo "The report tests need headless Chromium: as root, run apt-get install -y chromium chromium-driver"; \
	fi

plan: setup
	$(BIN)/gpufleet plan --stack $(STACK) --out build/plan-$(STACK)

charts: setup
	$(BIN)/gpufleet charts --stack $(STACK) --out charts/$(STACK)

# The upstream charts the tests render with `helm template` (tests/upstream), vendored in third_party/charts
# with their digests (SHA256SUMS). This refreshes them: pull the pinned versions (gpufleet/nvidia/versions.py)
# into a temporary directory, verify every digest, then replace the vendored files. HELM defaults to helm on
# PATH, else the helm the tests extract from PyPI.
UPSTREAM_CHARTS := third_party/charts
HELM ?= $(shell command -v helm 2>/dev/null)
PY_HELM := $(BIN)/python -c 'import sys; sys.path.insert(0, "tests"); from helm_binary import helm_binary; print(helm_binary())'

upstream-charts: setup-dev
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	helm="$(HELM)"; [ -n "$$helm" ] || helm="$$($(PY_HELM))"; \
	$$helm pull gpu-operator --repo https://helm.ngc.nvidia.com/nvidia --version v26.7.0 --destination "$$tmp" && \
	$$helm pull nvidia-device-plugin --repo https://nvidia.github.io/k8s-device-plugin --version 0.20.0 --destination "$$tmp" && \
	$$helm pull oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu --version 0.4.1 --destination "$$tmp" && \
	(cd "$$tmp" && sha256sum --check --strict "$(CURDIR)/$(UPSTREAM_CHARTS)/SHA256SUMS") && \
	cp "$$tmp"/*.tgz $(UPSTREAM_CHARTS)/

test: setup-dev setup-browser
	$(BIN)/python -m pytest -q

bench: setup
	$(BIN)/python bench/plan_bench.py

clean:
	rm -rf $(VENV) build
