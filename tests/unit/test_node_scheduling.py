# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""configure/node_scheduling.py: option parsing (AICR's CLI forms), validation errors, writing at registry paths."""
from __future__ import annotations

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeSchemaError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.node_scheduling import (
    DEFAULT_TOLERATIONS, NodeSchedulingError, apply_scheduling, parse_node_selector, parse_taint, parse_tolerations,
    scheduling_options)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import SchedulingPaths

GPU_OPERATOR = SchedulingPaths.from_registry({
    "name": "gpu-operator",
    "nodeScheduling": {"system": {"nodeSelectorPaths": ["operator.nodeSelector"], "tolerationPaths": ["operator.tolerations"]},
                       "accelerated": {"nodeSelectorPaths": ["daemonsets.nodeSelector"],
                                       "tolerationPaths": ["daemonsets.tolerations"]}}})
NODEWRIGHT = SchedulingPaths.from_registry({
    "name": "nodewright", "valueOverrideKeys": ["skyhook"],
    "nodeScheduling": {"nodeCountPaths": ["estimatedNodeCount"],
                       "accelerated": {"taintStrPaths": ["controllerManager.manager.env.runtimeRequiredTaint"]}},
    "podScheduling": {"workload": {"workloadSelectorPaths": ["workloadSelector"]}}})


def test_selectors_from_strings_and_mappings():
    assert parse_node_selector(["nodeGroup=gpu", "nvidia.com/gpu.present=true"], "o") == {
        "nodeGroup": "gpu", "nvidia.com/gpu.present": "true"}
    assert parse_node_selector("a=b=c", "o") == {"a": "b=c"}  # split on the first '=', as AICR
    assert parse_node_selector({"pool": "system", "spot": False}, "o") == {"pool": "system", "spot": "false"}
    assert parse_node_selector(None, "o") == {}


@pytest.mark.parametrize("bad", [["nodeGroup"], ["=gpu"], ["bad key=x"], [3], {"k": ["x"]}, 7])
def test_bad_selector_names_option_and_value(bad):
    with pytest.raises(NodeSchedulingError) as err:
        parse_node_selector(bad, "system_node_selector")
    assert err.value.field == "system_node_selector"
    assert "system_node_selector" in str(err.value)


def test_tolerations_in_every_cli_form():
    assert parse_tolerations(["nvidia.com/gpu=present:NoSchedule", "dedicated:NoExecute", ":NoSchedule"], "o") == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
        {"operator": "Exists", "effect": "NoSchedule"},
    ]
    assert parse_tolerations([{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}], "o") == [
        {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}]
    assert parse_tolerations(None, "o") is None and parse_tolerations([], "o") == []


@pytest.mark.parametrize("bad", ["key=value", "a:b:NoSchedule", "k=v:Sometimes", "=v:NoSchedule",
                                 {"key": "k", "operator": "Maybe"}, {"key": "k", "operator": "Exists", "value": "v"},
                                 {"key": "k", "colour": "red"}, {"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}, 4])
def test_bad_toleration_names_option_and_value(bad):
    with pytest.raises(NodeSchedulingError) as err:
        parse_tolerations([bad], "accelerated_node_tolerations")
    assert err.value.field == "accelerated_node_tolerations"
    assert repr(bad) in str(err.value) or str(bad) in str(err.value)


def test_taint_forms_and_errors():
    assert parse_taint("skyhook.nvidia.com=runtime-required:NoSchedule") == "skyhook.nvidia.com=runtime-required:NoSchedule"
    assert parse_taint("gate:NoExecute") == "gate:NoExecute"
    assert parse_taint({"key": "gate", "effect": "NoSchedule"}) == "gate:NoSchedule"
    assert parse_taint(None) == ""
    for bad in ("gate", ":NoSchedule", "gate:Never", "a:b:NoSchedule"):
        with pytest.raises(NodeSchedulingError, match="workload_gate_taint") as err:
            parse_taint(bad)
        assert err.value.value == bad


def test_defaults_follow_aicr():
    opts = scheduling_options()
    assert opts.system_tolerations == DEFAULT_TOLERATIONS == [{"operator": "Exists"}]
    assert opts.accelerated_tolerations == [{"operator": "Exists"}]
    assert opts.system_node_selector == {} and opts.accelerated_node_selector == {} and opts.nodes == 0
    assert scheduling_options(system_node_tolerations=[]).system_tolerations == []
    with pytest.raises(NodeSchedulingError, match="nodes"):
        scheduling_options(nodes=-1)


def test_defaults_write_tolerations_only():
    values = {"operator": {"tolerations": [{"key": "old", "operator": "Exists"}]}}
    written = apply_scheduling(values, GPU_OPERATOR, scheduling_options())
    assert values == {"operator": {"tolerations": [{"operator": "Exists"}]}, "daemonsets": {"tolerations": [{"operator": "Exists"}]}}
    assert written == ["operator.tolerations", "daemonsets.tolerations"]


def test_explicit_options_at_registry_paths():
    opts = scheduling_options(system_node_selector={"pool": "system"}, system_node_tolerations=["dedicated=system:NoSchedule"],
                              accelerated_node_selector=["nodeGroup=gpu"], accelerated_node_tolerations=["nvidia.com/gpu:NoSchedule"])
    values = {"operator": {"nodeSelector": {"old": "x"}, "image": "op"}}
    apply_scheduling(values, GPU_OPERATOR, opts)
    assert values["operator"] == {"nodeSelector": {"pool": "system"}, "image": "op",
                                  "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "system", "effect": "NoSchedule"}]}
    assert values["daemonsets"] == {"nodeSelector": {"nodeGroup": "gpu"},
                                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}


def test_recipe_opt_out_and_append():
    opts = scheduling_options(accelerated_node_selector={"g": "1"}, accelerated_node_tolerations=["a:NoSchedule"])
    authored = {"daemonsets": {"tolerations": [{"key": "bcm", "operator": "Exists"}], "nodeSelector": {}}}
    values = {"daemonsets": {"tolerations": [{"key": "bcm", "operator": "Exists"}], "nodeSelector": {}}}
    apply_scheduling(values, GPU_OPERATOR, opts, authored)
    assert values["daemonsets"]["nodeSelector"] == {}  # the recipe's empty selector opts out
    assert values["daemonsets"]["tolerations"] == [{"key": "bcm", "operator": "Exists"},
                                                   {"key": "a", "operator": "Exists", "effect": "NoSchedule"}]
    again = dict(values)
    apply_scheduling(again, GPU_OPERATOR, opts, authored)
    assert len(again["daemonsets"]["tolerations"]) == 2  # no duplicates


def test_taint_node_count_and_workload_selector():
    values = {}
    apply_scheduling(values, NODEWRIGHT, scheduling_options(workload_gate_taint="gate=on:NoSchedule", nodes=12,
                                                            workload_selector=["app=training"]))
    assert values == {"estimatedNodeCount": 12, "workloadSelector": {"app": "training"},
                      "controllerManager": {"manager": {"env": {"runtimeRequiredTaint": "gate=on:NoSchedule"}}}}
    untouched = {}
    apply_scheduling(untouched, NODEWRIGHT, scheduling_options())
    assert untouched == {}
    assert NODEWRIGHT.override_keys == ["skyhook"]


@pytest.mark.parametrize("entry, where", [
    ({"name": "x", "nodeScheduling": []}, "components[x].nodeScheduling"),
    ({"name": "x", "nodeScheduling": {"system": {"tolerationPaths": "tolerations"}}}, "components[x].nodeScheduling.system.tolerationPaths"),
    ({"name": "x", "nodeScheduling": {"nodeCountPaths": ["a..b"]}}, "components[x].nodeScheduling.nodeCountPaths"),
    ({"name": "x", "valueOverrideKeys": "xx"}, "components[x].valueOverrideKeys"),
])
def test_bad_registry_scheduling_names_file_and_field(entry, where):
    with pytest.raises(RecipeSchemaError) as err:
        SchedulingPaths.from_registry(entry, "/r/registry.yaml")
    assert err.value.field == where and err.value.path == "/r/registry.yaml"
