# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Merge rules of overlay specs (recipe_merge)."""
from __future__ import annotations

import copy

from recipe_tree import RecipeTree, helm_entry

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_merge import (
    deep_merge, empty_spec, merge_component_ref, merge_spec)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_resolver import resolve
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore


def test_deep_merge_maps_recursive_lists_and_scalars_replace_null_kept():
    base = {"a": {"b": 1, "c": {"d": 2}}, "l": [1, 2], "s": "x", "n": 5}
    over = {"a": {"c": {"e": 3}}, "l": [9], "s": {"now": "map"}, "n": None}
    before = copy.deepcopy((base, over))
    out = deep_merge(base, over)
    assert out == {"a": {"b": 1, "c": {"d": 2, "e": 3}}, "l": [9], "s": {"now": "map"}, "n": None}
    assert (base, over) == before  # inputs untouched
    out["a"]["c"]["d"] = 99
    out["l"].append(1)
    assert base["a"]["c"]["d"] == 2 and over["l"] == [9]  # no shared structure


def test_deep_merge_map_replaced_by_scalar_and_back():
    assert deep_merge({"a": {"b": 1}}, {"a": False}) == {"a": False}
    assert deep_merge({"a": False}, {"a": {"b": 1}}) == {"a": {"b": 1}}


def test_component_scalars_replaced_only_when_non_empty():
    base = {"name": "x", "type": "Helm", "source": "https://a", "version": "1", "namespace": "ns",
            "valuesFile": "components/x/values.yaml"}
    out = merge_component_ref(base, {"name": "x", "version": "2", "source": "", "namespace": None,
                                     "chart": "c", "valuesFile": "components/x/v2.yaml"})
    assert out["version"] == "2" and out["source"] == "https://a" and out["namespace"] == "ns"
    assert out["chart"] == "c" and out["valuesFile"] == "components/x/v2.yaml"


def test_component_lists_replaced_or_appended():
    base = {"name": "x", "dependencyRefs": ["a", "b"], "patches": [{"p": 1}], "expectedResources": [{"kind": "A"}],
            "manifestFiles": ["m1.yaml", "m2.yaml"]}
    out = merge_component_ref(base, {"name": "x", "dependencyRefs": ["c"], "patches": [],
                                     "manifestFiles": ["m2.yaml", "m3.yaml"]})
    assert out["dependencyRefs"] == ["c"]
    assert out["patches"] == []  # present (even empty) -> replaced
    assert out["expectedResources"] == [{"kind": "A"}]  # absent -> inherited
    assert out["manifestFiles"] == ["m1.yaml", "m2.yaml", "m3.yaml"]
    assert merge_component_ref(base, {"name": "x", "dependencyRefs": None})["dependencyRefs"] == ["a", "b"]


def test_component_overrides_merge_deeply():
    base = {"name": "x", "overrides": {"driver": {"enabled": True, "version": "580"}, "list": [1]}}
    out = merge_component_ref(base, {"name": "x", "overrides": {"driver": {"rdma": True}, "list": [2], "gone": None}})
    assert out["overrides"] == {"driver": {"enabled": True, "version": "580", "rdma": True}, "list": [2], "gone": None}
    assert base["overrides"] == {"driver": {"enabled": True, "version": "580"}, "list": [1]}


def test_merge_spec_constraints_keyed_by_name_and_validation_phases_replaced_whole():
    base = merge_spec(empty_spec(), {
        "constraints": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        "validation": {"deployment": {"checks": ["x", "y"], "constraints": [{"name": "c", "value": "1"}]},
                       "performance": {"checks": ["p"]}},
        "componentRefs": [{"name": "one", "version": "1"}]})
    out = merge_spec(base, {
        "constraints": [{"name": "A", "value": "10"}, {"name": "C", "value": "3"}],
        "validation": {"deployment": {"checks": ["z"]}, "performance": None, "conformance": {"checks": ["k"]}},
        "componentRefs": [{"name": "two"}, {"name": "one", "version": "2"}],
        "criteria": {"service": "eks"}, "base": "x", "mixins": ["m"]})
    assert out["constraints"] == [{"name": "A", "value": "10"}, {"name": "B", "value": "2"}, {"name": "C", "value": "3"}]
    assert out["validation"] == {"deployment": {"checks": ["z"]}, "conformance": {"checks": ["k"]}}
    assert [r["name"] for r in out["componentRefs"]] == ["one", "two"]
    assert out["componentRefs"][0]["version"] == "2"
    assert set(out) == {"constraints", "componentRefs", "validation"}
    assert base["constraints"][0]["value"] == "1"  # base spec untouched


def test_nested_override_keys_of_parent_overlays_survive(tmp_path):
    """AICR (shallow top-level merge) would drop driver.version set by base; we keep it."""
    tree = RecipeTree(tmp_path)
    tree.registry([helm_entry("gpu-operator")])
    base_overrides = {"driver": {"enabled": True, "version": "580"}, "toolkit": {"env": [{"name": "A"}]}}
    tree.base(component_refs=[{"name": "gpu-operator", "overrides": base_overrides}])
    tree.overlay("eks", criteria={"service": "eks"},
                 component_refs=[{"name": "gpu-operator", "overrides": {"driver": {"rdma": {"enabled": True}}}}])
    tree.overlay("eks-training", base="eks", criteria={"service": "eks", "intent": "training"},
                 component_refs=[{"name": "gpu-operator", "overrides": {
                     "driver": {"rdma": {"useHostMofed": False}}, "toolkit": {"env": []}, "dcgm": None}}])
    store = RecipeStore.load([str(tmp_path)], include_builtin=False)
    ref = resolve(store, {"service": "eks", "intent": "training"}).component("gpu-operator")
    assert ref.overrides == {
        "driver": {"enabled": True, "version": "580", "rdma": {"enabled": True, "useHostMofed": False}},
        "toolkit": {"env": []},
        "dcgm": None,
    }
