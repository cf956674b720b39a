# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""pytest fixtures for the Kubernetes emulator.

* ``k8s_emulator``: a started :class:`Emulator` (time scale 0.01, kubeconfig under ``tmp_path``), stopped after the test;
* ``k8s_emulator_factory``: ``factory(**Emulator kwargs)`` for tests that need non-default settings (all stopped after the test);
* ``k8s_client``: a ``kubernetes.client.ApiClient`` loaded from the ``k8s_emulator`` kubeconfig.

Use with ``pytest_plugins = ["tests.harness.k8s_emulator.pytest_fixture"]`` in a conftest, or import the fixtures into a test module.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

from .emulator import Emulator

DEFAULTS: dict[str, Any] = {"time_scale": 0.01, "seed": 1234}


@pytest.fixture
def k8s_emulator_factory(tmp_path: Any) -> Iterator[Callable[..., Emulator]]:
    """``factory(**kwargs)`` -> a started Emulator (defaults: time_scale 0.01, seed 1234, workdir under tmp_path)."""
    started: list[Emulator] = []

    def factory(**kwargs: Any) -> Emulator:
        options = dict(DEFAULTS)
        options["workdir"] = str(tmp_path / f"emulator-{len(started)}")
        options.update(kwargs)
        emu = Emulator(**options)
        emu.start()
        started.append(emu)
        return emu
    try:
        yield factory
    finally:
        for emu in started:
            emu.stop()


@pytest.fixture
def k8s_emulator(k8s_emulator_factory: Callable[..., Emulator]) -> Emulator:  # pylint: disable=redefined-outer-name
    """A started emulator with default settings."""
    return k8s_emulator_factory()


@pytest.fixture
def k8s_client(k8s_emulator: Emulator) -> Iterator[Any]:  # pylint: disable=redefined-outer-name
    """A ``kubernetes.client.ApiClient`` loaded from the emulator's kubeconfig."""
    from kubernetes import config  # pylint: disable=import-outside-toplevel

    api_client = config.new_client_from_config(config_file=k8s_emulator.kubeconfig_path)
    try:
        yield api_client
    finally:
        api_client.close()
