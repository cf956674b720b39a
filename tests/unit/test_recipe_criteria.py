# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Criteria validation, overlay criteria parsing, matching, duplicate detection."""
from __future__ import annotations

import pytest

from recipe_tree import RecipeTree, helm_entry

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_criteria import (
    criteria_matches, duplicate_criteria, overlay_matches, parse_overlay_criteria, validate_criteria)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeResolveError, RecipeSchemaError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import Criteria
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_resolver import resolve
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore


def test_validate_normalizes():
    crit = validate_criteria({"service": " EKS ", "accelerator": "H100", "os": None, "intent": "", "nodes": "8"})
    assert crit == Criteria(service="eks", accelerator="h100", nodes=8)
    assert validate_criteria(None) == Criteria()
    assert validate_criteria(Criteria(service="gke")) == Criteria(service="gke")


def test_unknown_value_lists_allowed_values():
    with pytest.raises(RecipeResolveError) as err:
        validate_criteria({"accelerator": "h300"})
    msg = str(err.value)
    assert "'h300'" in msg and "criteria.accelerator" in msg
    assert "h100" in msg and "gb200" in msg and "any" in msg


def test_unknown_field_lists_allowed_fields():
    with pytest.raises(RecipeResolveError) as err:
        validate_criteria({"gpu": "h100"})
    assert "'gpu'" in str(err.value) and "service, accelerator, os, intent, platform, nodes" in str(err.value)


@pytest.mark.parametrize("nodes", [-1, True, "abc", 1.5, [1]])
def test_nodes_must_be_non_negative_int(nodes):
    with pytest.raises(RecipeResolveError) as err:
        validate_criteria({"nodes": nodes})
    assert "criteria.nodes" in str(err.value) and ">= 0" in str(err.value)


def test_extra_values_allowed():
    assert validate_criteria({"accelerator": "h300"}, {"accelerator": {"h300"}}).accelerator == "h300"


def test_matching_rules():
    query = Criteria(service="eks", accelerator="h100", intent="training", nodes=8)
    assert criteria_matches(Criteria(), query)
    assert criteria_matches(Criteria(service="eks"), query)
    assert criteria_matches(Criteria(service="eks", accelerator="h100", intent="training", nodes=8), query)
    assert not criteria_matches(Criteria(service="gke"), query)
    assert not criteria_matches(Criteria(os="ubuntu"), query)  # specific value does not match query 'any'
    assert not criteria_matches(Criteria(nodes=4), query)
    assert criteria_matches(Criteria(nodes=0), query)
    assert not criteria_matches(Criteria(nodes=8), Criteria(service="eks"))  # query nodes 0 = any
    assert not overlay_matches(None, query) and overlay_matches(Criteria(service="eks"), query)


def test_overlay_criteria_unknown_field_names_file():
    with pytest.raises(RecipeSchemaError) as err:
        parse_overlay_criteria({"service": "eks", "cloud": "aws"}, "/x/overlays/eks.yaml")
    assert "/x/overlays/eks.yaml" in str(err.value) and "'cloud'" in str(err.value)
    assert parse_overlay_criteria({"service": "EKS", "nodes": 4}, "f") == Criteria(service="eks", nodes=4)


def _tree_with_new_value(root):
    tree = RecipeTree(root)
    tree.registry([helm_entry("gpu-operator")])
    tree.base(component_refs=[{"name": "gpu-operator", "version": "1"}])
    tree.overlay("h300", criteria={"accelerator": "h300"}, component_refs=[{"name": "gpu-operator", "version": "3"}])
    return tree


def test_user_dir_overlay_values_are_allowed(tmp_path):
    _tree_with_new_value(tmp_path / "user")
    store = RecipeStore.load([str(tmp_path / "user")], include_builtin=False)
    assert validate_criteria({"accelerator": "h300"}, store=store).accelerator == "h300"
    result = resolve(store, {"accelerator": "h300"})
    assert result.applied_overlays == ["base", "h300"]
    assert result.component("gpu-operator").version == "3"


def test_builtin_overlay_values_are_not_extra(tmp_path):
    _tree_with_new_value(tmp_path / "builtin")
    (tmp_path / "user").mkdir()
    store = RecipeStore.load([str(tmp_path / "user")], builtin_dir=str(tmp_path / "builtin"))
    with pytest.raises(RecipeResolveError) as err:
        resolve(store, {"accelerator": "h300"})
    assert "'h300'" in str(err.value)


def test_duplicate_criteria_and_name_tie_break(tmp_path):
    tree = RecipeTree(tmp_path)
    tree.registry([helm_entry("x")])
    tree.base(component_refs=[{"name": "x", "version": "0"}])
    tree.overlay("eks-b", criteria={"service": "eks"}, component_refs=[{"name": "x", "version": "b"}])
    tree.overlay("eks-a", criteria={"service": "EKS"}, component_refs=[{"name": "x", "version": "a"}])
    tree.overlay("gke", criteria={"service": "gke"})
    store = RecipeStore.load([str(tmp_path)], include_builtin=False)
    dups = duplicate_criteria(store)
    assert len(dups) == 1
    assert dups[0][1] == ["eks-a", "eks-b"] and dups[0][0]["service"] == "eks"
    result = resolve(store, {"service": "eks"})
    assert result.applied_overlays == ["base", "eks-a", "eks-b"]
    assert result.component("x").version == "b"  # alphabetically later overlay wins
