# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""pytest fixtures for the network-namespace fabric (``netns_fabric.py``) and the nccl-tests CPU stand-in.

* ``netns_fabric_factory`` (session): ``factory(hosts=8)`` -> a started :class:`NetnsFabric`; one fabric per host count,
  shared by the whole session, all removed at the end of the session;
* ``netns_fabric`` (function): the shared fabric (8 hosts; ``@pytest.mark.parametrize("netns_fabric", [4],
  indirect=True)`` picks another count), with every slowed link restored after the test;
* ``nccl_standin_dir`` (session): directory of the built stand-in binaries (``all_reduce_perf`` ...).

The fixtures FAIL (they never skip) when the machine lacks root, iproute2, openssh-server/-client, util-linux,
openmpi-bin, libopenmpi-dev or gcc, naming what is missing; they install nothing.

Use: ``from ansible_collections.dsxos.cluster.tests.harness.netns_fabric_fixture import (netns_fabric,
netns_fabric_factory, nccl_standin_dir)`` in a test module (``# noqa: F401``), or list the module in ``pytest_plugins``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, Iterator

import pytest

from .nccl_standin.build import StandinBuildError, build_standin
from .netns_fabric import FabricError, NetnsFabric, missing_requirements, requirements_message

DEFAULT_HOSTS = 8


def require_fabric_tools() -> None:
    """``pytest.fail`` (never skip) with the list of what is missing."""
    problems = missing_requirements(mpi=True)
    if problems:
        pytest.fail(requirements_message(problems), pytrace=False)


@pytest.fixture(scope="session")
def netns_fabric_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., NetnsFabric]]:
    """``factory(hosts=8)``: the session's fabric with that many hosts (created on first use)."""
    require_fabric_tools()
    fabrics: Dict[int, NetnsFabric] = {}

    def factory(hosts: int = DEFAULT_HOSTS) -> NetnsFabric:
        if hosts not in fabrics:
            fabric = NetnsFabric(hosts=hosts, workdir=tmp_path_factory.mktemp("fabric-%d" % hosts))
            try:
                fabric.start()
            except FabricError as exc:
                pytest.fail("cannot build the %d-host network-namespace fabric: %s" % (hosts, exc), pytrace=False)
            fabrics[hosts] = fabric
        return fabrics[hosts]

    try:
        yield factory
    finally:
        for fabric in fabrics.values():
            fabric.stop()


@pytest.fixture
def netns_fabric(request: pytest.FixtureRequest,
                 netns_fabric_factory: Callable[..., NetnsFabric]) -> Iterator[NetnsFabric]:  # pylint: disable=redefined-outer-name
    """The shared fabric (``request.param`` hosts, default 8); slowed links are cleared after the test."""
    fabric = netns_fabric_factory(getattr(request, "param", DEFAULT_HOSTS))
    fabric.clear_all_links()
    try:
        yield fabric
    finally:
        fabric.clear_all_links()


@pytest.fixture(scope="session")
def nccl_standin_dir() -> Path:
    """Directory of the nccl-tests CPU stand-in binaries, built once (cached under .build/nccl_standin)."""
    require_fabric_tools()
    try:
        return build_standin()
    except StandinBuildError as exc:
        pytest.fail(str(exc), pytrace=False)
        raise  # unreachable: pytest.fail raises
