# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""pytest fixtures for the real control plane (docs/real-control-plane.md).

* ``real_cluster`` (session): a started :class:`~.cluster.RealCluster` (admin kubeconfig ``.kubeconfig_path``, the
  restricted user ``dsxos-restricted``), stopped at the end of the session. The binaries come from the cache
  (``scripts/build_kube_control_plane.sh``); a missing build is built first (minutes, once), and a build that cannot
  be made FAILS the test with the reason, it never skips.
* ``node_simulator_factory``: ``factory(**NodeSimulator kwargs)`` -> a started simulator against ``real_cluster``
  (admin credentials), stopped after the test.

Use with ``pytest_plugins = ["tests.harness.kube_control_plane.pytest_fixture"]`` or import the fixtures.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator, List

import pytest

from . import build as kube_build
from .cluster import ClusterError, RealCluster
from .node_simulator import NodeSimulator


@pytest.fixture(scope="session")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    """A real control plane for the whole session (built into the cache first when missing)."""
    try:
        bin_dir = kube_build.build() / "bin"
    except (kube_build.BuildError, OSError) as exc:
        pytest.fail("the real control plane is not built and could not be built: %s\n"
                    "Fix the cause and run scripts/build_kube_control_plane.sh (cache: %s)" % (exc, kube_build.result_dir()),
                    pytrace=False)
    cluster = RealCluster(state_dir=Path(tmp_path_factory.mktemp("real-cluster")), bin_dir=bin_dir)
    try:
        cluster.start()
    except ClusterError as exc:
        pytest.fail("the real control plane did not start: %s" % exc, pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def node_simulator_factory(real_cluster: RealCluster) -> Iterator[Callable[..., NodeSimulator]]:  # pylint: disable=redefined-outer-name
    """``factory(**kwargs)`` -> a started NodeSimulator against ``real_cluster``; all stopped after the test."""
    started: List[NodeSimulator] = []

    def factory(**kwargs: Any) -> NodeSimulator:
        sim = NodeSimulator(str(real_cluster.kubeconfig_path), **kwargs)
        sim.start()
        started.append(sim)
        return sim
    try:
        yield factory
    finally:
        for sim in started:
            sim.stop()
