# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Fixtures that run REAL ansible-playbook against the collection built and installed from the working tree.

* ``installed_collection`` (session): builds the tarball and installs it once per test session into a
  temporary collections root, so every session tests the current sources. Set
  ``DSXOS_INSTALLED_COLLECTIONS=<dir holding ansible_collections/>`` to reuse an existing install instead.
* ``newcomer_demo`` (session): the one ``make demo`` run that test_readme.py and test_demo.py read
  (tests/integration/newcomer_demo.py).
* ``ansible_run`` (function): ``ansible_run(playbook, extra_vars=None, check=False, diff=False,
  inventory=None, expect_rc=0) -> PlaybookResult``; asserts the exit status unless ``expect_rc=None``.

Parallel runs (pytest-xdist, ``make integration`` passes ``-n N --dist loadgroup``): every worker builds its own
install under its own temporary directory. The network-namespace fabric tests build namespaces, a bridge and sshds
in the root namespace and slow its links with tc, so :func:`pytest_collection_modifyitems` puts every test that
uses the fabric (or lives in a fabric test file) into ONE xdist group: they run one after another on one worker,
sharing one fabric, never beside another fabric.

Kubernetes-facing tests use ``k8s_cluster`` / ``k8s_cluster_factory`` (tests/harness/cluster_backend_fixture.py, imported
here with its hooks): each such test is generated once per backend, ``[emulator]`` and ``[real]`` (the real control
plane, one per session), except tests marked ``@pytest.mark.emulator_only("<capability>")``, whose capabilities are
declared in tests/harness/cluster_backend.py ``EMULATOR_ONLY``.
"""
from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from playbook_runner import PlaybookResult, build_and_install, run_playbook  # noqa: E402  pylint: disable=wrong-import-position
from newcomer_demo import NewcomerDemo, run_make_demo  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.dsxos.cluster.tests.harness import cluster_backend_fixture  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.dsxos.cluster.tests.harness.cluster_backend_fixture import (  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import
    k8s_backend, k8s_cluster, k8s_cluster_factory, real_cluster)


#: Fixtures that build or use the network-namespace fabric (tests/harness/netns_fabric_fixture.py), and the
#: nccl-tests stand-in: its tests assert that no stand-in process is left on the machine
#: (test_nccl_test_module.py), which another worker's stand-in run would break, so they share the group too.
FABRIC_FIXTURES = frozenset({"netns_fabric", "netns_fabric_factory", "nccl_standin_dir"})
#: Test files that drive the fabric (also directly, not only through the fixtures above).
FABRIC_FILES = frozenset({"test_netns_fabric.py", "test_certify_fabric_e2e.py"})
FABRIC_GROUP = "netns_fabric"
#: Tests on the real control plane (the ``real`` parameter of the backend tests, and the tests that take
#: ``real_cluster`` themselves) share one xdist worker, so one session-scoped control plane serves them all: each
#: further worker that started one would keep another kube-apiserver, etcd, controller-manager and scheduler
#: running (about 5 % of a core each set, idle) for the whole session on a 2-core machine.
REAL_GROUP = "real_control_plane"
#: The tests that read the session's one ``make demo`` run (fixture ``newcomer_demo``, tests/integration/newcomer_demo.py)
#: share one worker, so that run is made once.
DEMO_FIXTURE = "newcomer_demo"
DEMO_GROUP = "make_demo"


def uses_fabric(item: pytest.Item) -> bool:
    """Whether a test builds or uses the network-namespace fabric."""
    return bool(FABRIC_FIXTURES.intersection(getattr(item, "fixturenames", ()))) or item.path.name in FABRIC_FILES


def uses_real_control_plane(item: pytest.Item) -> bool:
    """Whether a test starts or uses the session's real control plane."""
    callspec = getattr(item, "callspec", None)
    backend = callspec.params.get("k8s_backend") if callspec is not None else None
    return backend == "real" or "real_cluster" in getattr(item, "fixturenames", ())


def pytest_configure(config: pytest.Config) -> None:
    """Register the mark also when xdist is off (``-p no:xdist``), so serial runs do not warn about it."""
    config.addinivalue_line("markers", "xdist_group(name): tests that must run one after another on one xdist worker")
    cluster_backend_fixture.configure(config)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Generate Kubernetes-facing tests once per backend (emulator, real), emulator-only ones once."""
    cluster_backend_fixture.generate_tests(metafunc)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:  # pylint: disable=unused-argument
    """Put every fabric test into one xdist group, every other real-control-plane test into another, and the tests of
    the session's ``make demo`` run into a third (runs before xdist turns the marks into node id suffixes)."""
    for item in items:
        if uses_fabric(item):
            item.add_marker(pytest.mark.xdist_group(FABRIC_GROUP))
        elif uses_real_control_plane(item):
            item.add_marker(pytest.mark.xdist_group(REAL_GROUP))
        elif DEMO_FIXTURE in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group(DEMO_GROUP))


@pytest.fixture(scope="session")
def installed_collection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Collections root (for ANSIBLE_COLLECTIONS_PATH) holding the freshly built dsxos.cluster."""
    reuse = os.environ.get("DSXOS_INSTALLED_COLLECTIONS")
    if reuse:
        root = Path(reuse).resolve()
        manifest = root / "ansible_collections" / "dsxos" / "cluster" / "MANIFEST.json"
        if not manifest.is_file():
            raise pytest.UsageError(f"DSXOS_INSTALLED_COLLECTIONS={reuse}: no installed collection ({manifest} missing)")
        return root
    base = tmp_path_factory.mktemp("collection")
    return build_and_install(base / "collections", base / "dist")


@pytest.fixture(scope="session")
def newcomer_demo(tmp_path_factory: pytest.TempPathFactory) -> NewcomerDemo:
    """The session's one ``make demo`` run in a newcomer's checkout (tests/integration/newcomer_demo.py)."""
    return run_make_demo(tmp_path_factory.mktemp("newcomer"))


@pytest.fixture
def ansible_run(installed_collection: Path, tmp_path: Path):
    """Return a function that runs one playbook (YAML text, a path, or a collection playbook FQCN)."""
    counter = itertools.count(1)

    def run(playbook, extra_vars=None, check=False, diff=False, inventory=None, expect_rc=0, extra_args=None) -> PlaybookResult:
        workdir = tmp_path / f"run-{next(counter)}"
        result = run_playbook(
            playbook, installed_collection, workdir,
            extra_vars=extra_vars, check=check, diff=diff, inventory=inventory, extra_args=extra_args,
        )
        if expect_rc is not None:
            assert result.rc == expect_rc, f"ansible-playbook exit {result.rc}, expected {expect_rc}\n{result.describe()}"
        return result

    return run
