# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Deployment order (Kahn + alphabetical tie-break), cycles, unknown refs, disabled components."""
from __future__ import annotations

import time

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.deployment_order import deployment_order
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import DependencyError


def test_dependencies_first_then_alphabetical():
    graph = {"z": [], "a": ["z"], "m": [], "b": ["m", "z"], "c": []}
    assert deployment_order(graph) == ["c", "m", "z", "a", "b"]


def test_every_component_after_its_dependencies():
    graph = {"gpu-operator": ["nfd", "kube-prometheus-stack"], "nfd": [], "kube-prometheus-stack": ["crds"],
             "crds": [], "nvsentinel": ["gpu-operator", "crds"], "cert-manager": []}
    order = deployment_order(graph)
    assert sorted(order) == sorted(graph)
    for name, deps in graph.items():
        for dep in deps:
            assert order.index(dep) < order.index(name)
    assert order == ["cert-manager", "crds", "kube-prometheus-stack", "nfd", "gpu-operator", "nvsentinel"]


def test_duplicate_refs_counted_once():
    assert deployment_order({"a": ["b", "b"], "b": []}) == ["b", "a"]


def test_unknown_dependency_ref_names_component_and_ref():
    with pytest.raises(DependencyError) as err:
        deployment_order({"gpu-operator": ["nfd", "nope"], "nfd": []})
    msg = str(err.value)
    assert "'gpu-operator'" in msg and "'nope'" in msg
    assert err.value.value == "nope"


def test_cycle_path_printed():
    with pytest.raises(DependencyError) as err:
        deployment_order({"c": ["a"], "a": ["b"], "b": ["c"], "d": ["a"], "e": []})
    assert "a -> b -> c -> a" in str(err.value)


def test_self_cycle_printed():
    with pytest.raises(DependencyError) as err:
        deployment_order({"a": ["a"], "b": []})
    assert "a -> a" in str(err.value)


def test_disabled_removed_and_refs_to_them_dropped_with_warning():
    warnings = []
    order = deployment_order({"a": ["b"], "b": [], "c": ["a", "b"]}, disabled=["b"], warnings=warnings)
    assert order == ["a", "c"]
    assert len(warnings) == 2
    assert all("'b'" in w and "disabled" in w for w in warnings)


def test_large_graph_is_fast():
    graph = {"n%04d" % i: (["n%04d" % (i - 1)] if i else []) for i in range(2000)}
    start = time.perf_counter()
    order = deployment_order(graph)
    assert order == sorted(graph)
    assert time.perf_counter() - start < 0.5
