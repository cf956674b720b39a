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

# Reinstall only when a requirement file changes: each stamp's name carries the hash of its file(s).
# The runtime stamp (requirements.txt: ansible-core, kubernetes, ...) is all `make demo`/`make install` need;
# the test stamp (requirements-test.txt on top: pytest, xdist, ansible-lint, torch, ...) is what `make test` needs.
RT_HASH   := $(shell cat requirements.txt 2>/dev/null | sha256sum | cut -c1-16)
REQ_HASH  := $(shell cat requirements.txt requirements-test.txt 2>/dev/null | sha256sum | cut -c1-16)
RT_STAMP  := $(VENV)/.dsxos-runtime-$(RT_HASH).stamp
STAMP     := $(VENV)/.dsxos-requirements-$(REQ_HASH).stamp
# Where `make install` puts the collection: the first entry of ansible's default COLLECTIONS_PATHS, so a plain
# `ansible-playbook dsxos.cluster.configure` finds it. The test stages never use it (they use $(INSTALLED)).
USER_COLLECTIONS ?= $(HOME)/.ansible/collections
# Parallel pytest workers (pytest-xdist); 0 runs a stage serially. Unit tests are CPU-bound: one worker per core
# of the 2-core CI machine. Integration tests mostly wait on ansible-playbook subprocesses: one more worker.
# The network-namespace fabric tests share one worker (xdist_group, tests/integration/conftest.py).
UNIT_WORKERS ?= 2
PYTEST_WORKERS ?= 3
xdist_args = $(if $(filter 0,$(1)),-p no:xdist,-n $(1) --dist loadgroup)

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

.PHONY: help system-deps demo-system-deps venv venv-runtime build install install-private unit integration sanity lint docs-check molecule molecule-lanes test demo bench clean

help:
	@echo "make demo | install | test | venv-runtime | venv | build | unit | integration | sanity | lint | docs-check | molecule | bench | clean"
	@echo "  demo    = runtime venv, install into $(USER_COLLECTIONS), run the lifecycle on the built-in cluster"
	@echo "  test    = test venv, then unit, integration (parallel), then docs-check, lint, sanity; see docs/development.md"

# System packages of the tests (sshd, OpenMPI, iproute2, shellcheck, ...): installed when missing (needs root).
system-deps:
	scripts/system_deps.sh

# System packages of the demo (Alertmanager, Java 17, python3-venv): installed when missing as root; otherwise named
# with the apt-get line to run, and nothing starts.
demo-system-deps:
	scripts/system_deps.sh --demo

venv-runtime: $(RT_STAMP)

venv: $(STAMP)

$(RT_STAMP): requirements.txt requirements-bootstrap.txt
	@scripts/bootstrap_venv.sh $(VENV) $(PYTHON) requirements.txt runtime
	@rm -f $(VENV)/.dsxos-runtime-*.stamp
	@touch $@

$(STAMP): requirements.txt requirements-test.txt | $(RT_STAMP)
	@scripts/bootstrap_venv.sh $(VENV) $(PYTHON) requirements-test.txt test
	@rm -f $(VENV)/.dsxos-requirements-*.stamp
	@touch $@

build: venv-runtime
	mkdir -p $(DIST)
	ANSIBLE_NOCOLOR=1 $(BIN)/ansible-galaxy collection build --force --output-path $(DIST) .

# Build and install into the user's collections path, where ansible-playbook looks by default.
install: venv-runtime
	@scripts/install_collection.sh $(DIST) $(USER_COLLECTIONS) >/dev/null
	@scripts/install_collection.sh --explain $(USER_COLLECTIONS)

# The private install that lint and docs-check use (never ~/.ansible). `make test` runs it once up front and
# passes INSTALL_PRIVATE= to the concurrent checks, so they never rebuild it under each other's feet.
install-private: venv-runtime
	scripts/install_collection.sh $(DIST) $(INSTALLED)
INSTALL_PRIVATE ?= install-private

unit: venv
	scripts/pytest_suite.sh tests/unit $(call xdist_args,$(UNIT_WORKERS)) $(PYTEST_ARGS)

# The integration fixtures build and install the collection themselves, once per pytest session.
integration: venv
	scripts/pytest_suite.sh tests/integration $(call xdist_args,$(PYTEST_WORKERS)) $(PYTEST_ARGS)

sanity: venv
	scripts/sanity.sh

# Every Molecule scenario (extensions/molecule/*: configure, certify, certify_unreachable, certify_kubernetes, sentinel) with its
# idempotence step, against the private build of the collection (plus the venv's kubernetes.core for verify steps).
# The scenarios start their environments with tests/harness/service_keeper.py; see docs/development.md.
MOLECULE_ENV = $(ANSIBLE_BASE_ENV) ANSIBLE_COLLECTIONS_PATH=$(INSTALLED):$(shell $(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') \
	ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=False NO_COLOR=1 MOLECULE_NO_LOG=false
MOLECULE_ARGS ?= --all
molecule: venv $(INSTALL_PRIVATE)
	$(MOLECULE_ENV) $(BIN)/molecule test $(MOLECULE_ARGS)

# The same scenarios in two lanes side by side (what `make test` runs): the fabric scenarios one after another (each
# builds its own network-namespace fabric) beside the built-in-cluster scenarios one after another. Most of a scenario's
# time is spent waiting on ansible-playbook, sshd and mpirun, so two lanes keep both cores busy.
MOLECULE_LANES = \
	'molecule-fabric=$(MOLECULE_ENV) $(BIN)/molecule test -s certify && $(MOLECULE_ENV) $(BIN)/molecule test -s certify_unreachable' \
	'molecule-cluster=$(MOLECULE_ENV) $(BIN)/molecule test -s configure && $(MOLECULE_ENV) $(BIN)/molecule test -s certify_kubernetes && $(MOLECULE_ENV) $(BIN)/molecule test -s sentinel'
molecule-lanes: venv $(INSTALL_PRIVATE)
	scripts/run_parallel.sh $(MOLECULE_LANES)

# ansible-lint warns when ANSIBLE_COLLECTIONS_SCAN_SYS_PATH is off, so it gets the base environment.
lint: venv $(INSTALL_PRIVATE)
	$(ANSIBLE_BASE_ENV) $(BIN)/ansible-lint --profile production --offline --nocolor

docs-check: venv $(INSTALL_PRIVATE)
	$(BIN)/python tests/check_docs.py --collections-path $(INSTALLED)

# One stage of lanes side by side. The unit tests, then (only when they passed) the integration tests, in one lane.
# docs-check, lint and sanity read the sources and write only their own directories (.build/installed,
# .build/sanity), so they run beside them, at nice 19: they take only the CPU the tests leave (the unit suite's
# sleeping tests and tail, the integration tests' waits) and never slow a timing-sensitive test down. The molecule
# lanes run beside them too, at the tests' priority (their certify scenarios measure stand-in bandwidth over a slowed
# link, which a starved process would skew): they mostly wait (the stand-ins' timeouts), and their fabric and
# stand-in build are their own (tests/harness/service_keeper.py), so the integration tests' "no stand-in process is
# left" checks never see them.
CHECKS_NICE ?= 19
test: system-deps venv install-private
	scripts/build_kube_control_plane.sh
	scripts/run_stages.sh \
		"tests+checks=scripts/run_parallel.sh 'unit+integration=$(MAKE) unit && $(MAKE) integration' 'molecule=$(MAKE) molecule-lanes INSTALL_PRIVATE=' 'sanity=nice -n $(CHECKS_NICE) $(MAKE) sanity' 'docs-check=nice -n $(CHECKS_NICE) $(MAKE) docs-check INSTALL_PRIVATE=' 'lint=nice -n $(CHECKS_NICE) $(MAKE) lint INSTALL_PRIVATE='"

$(INVENTORY):
	@mkdir -p $(dir $@)
	@printf 'localhost ansible_connection=local ansible_python_interpreter=%s\n' "$(BIN)/python" > $@

# The whole lifecycle on the built-in cluster (scripts/demo.sh: the Kubernetes emulator, a real Alertmanager, a real
# ansible-rulebook), run from the collection `make install` put into $(USER_COLLECTIONS). Needs the runtime venv plus
# ansible-rulebook (installed here when missing, at requirements-test.txt's pins), and prometheus-alertmanager and
# Java 17 from the system: scripts/demo.sh names a missing one with what to install, before it starts anything.
demo: demo-system-deps install $(INVENTORY)
	@[ -x $(BIN)/ansible-rulebook ] || $(BIN)/pip install -q -c <(grep -E '^[A-Za-z0-9_.-]+==' requirements-test.txt) \
		"$$(grep -E '^ansible-rulebook==' requirements-test.txt)"
	scripts/demo.sh $(USER_COLLECTIONS) $(INVENTORY) $(DEMO_OUT)

bench: venv
	@shopt -s nullglob; scripts=(bench/[!_]*.py); \
	if [ $${#scripts[@]} -eq 0 ]; then echo "bench: no scripts in bench/"; exit 0; fi; \
	for script in "$${scripts[@]}"; do echo "== $$script"; $(BIN)/python "$$script"; done

clean:
	rm -rf $(BUILD) out tests/output .pytest_cache
	find . -path ./.venv -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +
