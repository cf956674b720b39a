# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""pytest side of :mod:`.cluster_backend`: every Kubernetes-facing test runs on the emulator AND the real control plane.

* ``k8s_cluster``: a started backend, ``emulator`` or ``real`` (the test is generated once per backend, ids
  ``[emulator]`` / ``[real]``), closed after the test; ``k8s_cluster_factory(**kwargs)`` for non-default settings
  (``time_scale``, ``kubelet_start_delay_s``, ``seed``; on the emulator every :class:`Emulator` keyword).
* ``@pytest.mark.emulator_only("faults", ...)``: the test needs capabilities only the emulator has; each name must be a
  key of :data:`.cluster_backend.EMULATOR_ONLY` (the one place they are listed, with the reason). Such a test is
  generated ONLY with the emulator parameter; it is never skipped on the real one, it does not exist there.
* ``pytest -k emulator`` / ``pytest -k real`` runs one backend.

The real backend uses the session's ``real_cluster`` (one control plane per pytest session, i.e. per xdist worker,
started on the first real test and stopped at the end of the session); only one real backend exists at a time.

Import the hooks and fixtures into a conftest (tests/integration/conftest.py does).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator, List

import pytest

from .cluster_backend import EMULATOR_ONLY, ClusterBackend, EmulatorBackend, RealBackend
from .k8s_emulator.emulator import Emulator
from .k8s_emulator.pytest_fixture import DEFAULTS as EMULATOR_DEFAULTS
from .kube_control_plane.pytest_fixture import real_cluster  # noqa: F401  pylint: disable=unused-import

BACKENDS = ("emulator", "real")
#: fixtures whose tests are generated once per backend
BACKEND_FIXTURES = frozenset({"k8s_cluster", "k8s_cluster_factory"})
MARKER = "emulator_only"
#: keywords of the real backend's factory (the emulator takes every Emulator keyword)
REAL_KEYWORDS = frozenset({"time_scale", "kubelet_start_delay_s", "seed"})


def configure(config: pytest.Config) -> None:
    """Register the marker (call from a conftest's ``pytest_configure``)."""
    config.addinivalue_line("markers", "%s(capability, ...): the test needs emulator-only capabilities (keys of "
                                       "tests/harness/cluster_backend.py EMULATOR_ONLY); only its emulator parameter is generated"
                            % MARKER)


def emulator_only_capabilities(node: Any) -> List[str]:
    """The capabilities named by the ``emulator_only`` marks of a test (validated against EMULATOR_ONLY)."""
    names: List[str] = []
    for mark in node.iter_markers(MARKER):
        if not mark.args:
            raise pytest.UsageError("%s: @pytest.mark.%s needs the capability names (one of %s)" % (node.nodeid, MARKER, ", ".join(EMULATOR_ONLY)))
        for name in mark.args:
            if name not in EMULATOR_ONLY:
                raise pytest.UsageError("%s: @pytest.mark.%s(%r): not an emulator-only capability; known: %s (declared in "
                                        "tests/harness/cluster_backend.py EMULATOR_ONLY)" % (node.nodeid, MARKER, name, ", ".join(EMULATOR_ONLY)))
            names.append(name)
    return names


def generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize the backend of every test using ``k8s_cluster``/``k8s_cluster_factory`` (call from
    ``pytest_generate_tests``)."""
    if not BACKEND_FIXTURES.intersection(metafunc.fixturenames):
        return
    backends = ["emulator"] if emulator_only_capabilities(metafunc.definition) else list(BACKENDS)
    metafunc.parametrize("k8s_backend", backends, indirect=True, ids=backends)


@pytest.fixture
def k8s_backend(request: pytest.FixtureRequest) -> str:
    """The backend of this test's parameter (``emulator`` or ``real``)."""
    backend = getattr(request, "param", None)
    if backend not in BACKENDS:
        raise pytest.UsageError("k8s_backend is parametrized by cluster_backend_fixture.generate_tests (is the hook in the conftest?)")
    return backend


@pytest.fixture
def k8s_cluster_factory(k8s_backend: str, request: pytest.FixtureRequest,  # pylint: disable=redefined-outer-name
                        tmp_path: Path) -> Iterator[Callable[..., ClusterBackend]]:
    """``factory(**kwargs)`` -> a started backend of this test's parameter; every one is closed after the test."""
    started: List[ClusterBackend] = []

    def factory(**kwargs: Any) -> ClusterBackend:
        workdir = tmp_path / ("%s-%d" % (k8s_backend, len(started)))
        if k8s_backend == "emulator":
            options = dict(EMULATOR_DEFAULTS)
            options["workdir"] = str(workdir)
            options.update(kwargs)
            emu = Emulator(**options)
            emu.start()
            backend: ClusterBackend = EmulatorBackend(emu)
        else:
            unknown = sorted(set(kwargs) - REAL_KEYWORDS)
            if unknown:
                raise pytest.UsageError("k8s_cluster_factory: %s only for the emulator (the real backend takes %s); mark the test "
                                        "emulator_only" % (", ".join(unknown), ", ".join(sorted(REAL_KEYWORDS))))
            if started:
                raise pytest.UsageError("k8s_cluster_factory: the real control plane is shared, one real backend per test")
            cluster = request.getfixturevalue("real_cluster")
            options = {"time_scale": EMULATOR_DEFAULTS["time_scale"]}
            options.update(kwargs)
            workdir.mkdir(parents=True, exist_ok=True)
            backend = RealBackend(cluster, str(workdir), **options).start()
        started.append(backend)
        return backend
    try:
        yield factory
    finally:
        errors = []
        for backend in reversed(started):
            try:
                backend.close()
            except Exception as exc:  # pylint: disable=broad-except
                errors.append("%r: %s" % (backend, exc))
        if errors:
            raise RuntimeError("closing the Kubernetes backend failed: %s" % "; ".join(errors))


@pytest.fixture
def k8s_cluster(k8s_cluster_factory: Callable[..., ClusterBackend]) -> ClusterBackend:  # pylint: disable=redefined-outer-name
    """A started backend with default settings (time scale 0.01)."""
    return k8s_cluster_factory()
