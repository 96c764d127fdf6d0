# `make run`: set up what is missing, then run a real multi-node MPI job (examples/pi.yaml) on the
# local cluster. `make test`: the same setup, then the whole test suite. Both are cheap to re-run:
# apt only runs when a Debian package is missing, pip only when pyproject.toml changed.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := run

PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
# prometheus: the real Prometheus that tests/e2e/test_prometheus.py runs against a server (docs/metrics.md);
# curl: the plain-HTTPS progress report of docs/progress.md, which tests/e2e/test_progress_e2e.py sends from a rank
APT_PACKAGES := openmpi-bin libopenmpi-dev openssh-server openssh-client prometheus curl
# chromium + chromium-driver: the dashboard's browser tests (tests/dashboard) and bench/dashboard.py
TEST_APT_PACKAGES := chromium chromium-driver
PYTEST_ARGS ?= -q
# The dashboard (web/): built from package-lock.json with Node and npm (Debian's when none is installed)
DASHBOARD := web/dist/index.html
DASHBOARD_SOURCES := web/package-lock.json web/build.mjs $(shell find web/src -type f 2>/dev/null)

ifneq ($(filter test,$(MAKECMDGOALS)),)
APT_PACKAGES += $(TEST_APT_PACKAGES)
endif

.PHONY: run test setup dashboard system-packages clean-venv

run: setup
	$(VENV)/bin/mpijob run --replace -f examples/pi.yaml

test: setup
	$(VENV)/bin/pytest $(PYTEST_ARGS)

setup: system-packages $(STAMP) dashboard

dashboard: $(DASHBOARD)

# `npm ci`: exactly the lock file's packages; the build's output depends on nothing else (web/build.mjs)
$(DASHBOARD): $(DASHBOARD_SOURCES) | system-packages
	cd web && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build

# Debian packages: install only the missing ones (apt-get update once, only then); sudo only if not root.
# Node.js and npm only when the machine has no npm at all (a NodeSource or nvm Node is used as it is).
system-packages:
	@if ! command -v dpkg >/dev/null 2>&1; then \
	  echo "not a Debian system: install these yourself: $(APT_PACKAGES) nodejs npm" >&2; exit 0; \
	fi; \
	missing=""; \
	for p in $(APT_PACKAGES); do \
	  [ "$$(dpkg-query -W -f='$${db:Status-Status}' "$$p" 2>/dev/null)" = installed ] || missing="$$missing $$p"; \
	done; \
	if ! $(PYTHON) -c 'import ensurepip, venv' >/dev/null 2>&1; then missing="$$missing python3-venv"; fi; \
	command -v npm >/dev/null 2>&1 || missing="$$missing nodejs npm"; \
	if [ -n "$$missing" ]; then \
	  sudo=""; [ "$$(id -u)" -eq 0 ] || sudo="sudo"; \
	  echo "installing Debian packages:$$missing"; \
	  $$sudo apt-get update; \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	fi

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# editable_mode=compat: a plain path entry instead of an import hook, which every `mpijob` call would pay for
$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(VENV)/bin/python -m pip install --quiet --config-settings editable_mode=compat -e '.[test]'
	touch $(STAMP)

clean-venv:
	rm -rf $(VENV)
