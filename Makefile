# dsxos.cluster - build, test and CI entry points. See docs/development.md.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

PYTHON    ?= python3
VENV      ?= $(CURDIR)/.venv
BIN       := $(VENV)/bin
BUILD     := $(CURDIR)/.build
DIST      := $(BUILD)/dist
# The BUILT collection is installed here (tests/conftest.py's symlink for unit tests lives in .build/collections).
INSTALLED := $(BUILD)/installed
INVENTORY := $(BUILD)/inventory/localhost.ini
DEMO_OUT  := $(CURDIR)/out/demo
PYTEST_ARGS ?= -q

# Reinstall the venv only when the requirement files change: the stamp's name carries their hash.
REQ_HASH  := $(shell cat requirements.txt requirements-test.txt 2>/dev/null | sha256sum | cut -c1-16)
STAMP     := $(VENV)/.dsxos-requirements-$(REQ_HASH).stamp

export PATH := $(BIN):$(PATH)
export VENV
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Every ansible-* command run by make sees only the installed build of the collection.
ANSIBLE_BASE_ENV := ANSIBLE_COLLECTIONS_PATH=$(INSTALLED) ANSIBLE_LOCALHOST_WARNING=False \
	ANSIBLE_INVENTORY_UNPARSED_WARNING=False ANSIBLE_NOCOLOR=1
ANSIBLE_ENV := $(ANSIBLE_BASE_ENV) ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=False

# ansible-test sanity tests that cannot run here; every entry needs its reason.
#   pslint: needs PowerShell (pwsh), which is not installed; the collection has no PowerShell content.
SANITY_SKIP ?= pslint
export SANITY_SKIP

.PHONY: help system-deps venv build install unit integration sanity lint docs-check test demo bench clean

help:
	@echo "make venv | build | install | unit | integration | sanity | lint | docs-check | test | demo | bench | clean"
	@echo "  test = unit, integration, sanity, lint, docs-check (stops at the first failure); see docs/development.md"

# System packages of the tests (sshd, OpenMPI, iproute2, shellcheck, ...): installed when missing (needs root).
system-deps:
	scripts/system_deps.sh

venv: $(STAMP)

$(STAMP): requirements.txt requirements-test.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 required, found " + sys.version)'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements-test.txt
	@rm -f $(VENV)/.dsxos-requirements-*.stamp
	@touch $@

build: venv
	mkdir -p $(DIST)
	ANSIBLE_NOCOLOR=1 $(BIN)/ansible-galaxy collection build --force --output-path $(DIST) .

install: venv
	scripts/install_collection.sh $(DIST) $(INSTALLED)

unit: venv
	scripts/pytest_suite.sh tests/unit $(PYTEST_ARGS)

# The integration fixtures build and install the collection themselves, once per pytest session.
integration: venv
	scripts/pytest_suite.sh tests/integration $(PYTEST_ARGS)

sanity: venv
	scripts/sanity.sh

# ansible-lint warns when ANSIBLE_COLLECTIONS_SCAN_SYS_PATH is off, so it gets the base environment.
lint: install
	$(ANSIBLE_BASE_ENV) $(BIN)/ansible-lint --profile production --offline --nocolor

docs-check: install
	$(BIN)/python tests/check_docs.py --collections-path $(INSTALLED)

test: system-deps venv
	scripts/run_stages.sh \
		"unit=$(MAKE) unit" \
		"integration=$(MAKE) integration" \
		"docs-check=$(MAKE) docs-check" \
		"lint=$(MAKE) lint" \
		"sanity=$(MAKE) sanity"

$(INVENTORY):
	@mkdir -p $(dir $@)
	@printf 'localhost ansible_connection=local ansible_python_interpreter=%s\n' "$(BIN)/python" > $@

# The lifecycle demo on the built-in cluster (scripts/demo.sh starts the Kubernetes emulator), run from the
# installed build of the collection.
demo: install $(INVENTORY)
	scripts/demo.sh $(INSTALLED) $(INVENTORY) $(DEMO_OUT)

bench: venv
	@shopt -s nullglob; scripts=(bench/[!_]*.py); \
	if [ $${#scripts[@]} -eq 0 ]; then echo "bench: no scripts in bench/"; exit 0; fi; \
	for script in "$${scripts[@]}"; do echo "== $$script"; $(BIN)/python "$$script"; done

clean:
	rm -rf $(BUILD) out tests/output .pytest_cache
	find . -path ./.venv -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +
