# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Unit tests for plugins/module_utils/certify/topology_grouping.py."""
from __future__ import annotations

import math

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.topology_grouping import (
    GroupingConfig, GroupingError, NodeInfo, group_nodes, natural_key, node_info_from_k8s)

CLIQUE = "nvidia.com/gpu.clique"
RACK = "topology.kubernetes.io/rack"


def _members(grouping):
    return [n for g in grouping.groups for n in g.nodes]


def test_groups_by_clique_label_and_prefers_it_over_rack():
    nodes = [NodeInfo("n%d" % i, {CLIQUE: "uuid.%d" % (i // 4), RACK: "r%d" % (i // 8)}) for i in range(12)]
    grouping = group_nodes(nodes)
    assert grouping.strategy == "label:" + CLIQUE
    assert [g.nodes for g in grouping.groups] == [("n0", "n1", "n2", "n3"), ("n4", "n5", "n6", "n7"),
                                                  ("n8", "n9", "n10", "n11")]
    assert [g.domains for g in grouping.groups] == [("uuid.0",), ("uuid.1",), ("uuid.2",)]
    assert grouping.domain_of["n9"] == "uuid.2"
    assert not grouping.excluded


def test_rack_label_used_when_no_clique():
    nodes = [NodeInfo("n%d" % i, {RACK: "r%d" % (i % 2)}) for i in range(6)]
    grouping = group_nodes(nodes)
    assert grouping.strategy == "label:" + RACK
    assert {g.domains[0]: g.nodes for g in grouping.groups} == {"r0": ("n0", "n2", "n4"), "r1": ("n1", "n3", "n5")}


def test_groups_by_host_var_then_inventory_group():
    by_var = [NodeInfo("h%d" % i, host_vars={"dsxos_topology_domain": "sw%d" % (i // 3)}) for i in range(6)]
    grouping = group_nodes(by_var)
    assert grouping.strategy == "host_var:dsxos_topology_domain"
    assert len(grouping.groups) == 2

    by_group = [NodeInfo("h%d" % i, inventory_groups=("gpu", "rack_%s" % "ab"[i % 2])) for i in range(6)]
    grouping = group_nodes(by_group)
    assert grouping.strategy.startswith("inventory:")
    assert sorted(g.domains[0] for g in grouping.groups) == ["rack_a", "rack_b"]
    assert sorted(_members(grouping), key=natural_key) == ["h%d" % i for i in range(6)]


@pytest.mark.parametrize("count", [2, 10, 17, 100, 232])
def test_sqrt_fallback_gives_disjoint_near_equal_groups(count):
    nodes = [NodeInfo("node%d" % i) for i in range(count)]
    grouping = group_nodes(nodes, GroupingConfig(max_group_size=None))
    assert grouping.strategy == "sqrt"
    members = _members(grouping)
    assert sorted(members) == sorted(n.name for n in nodes) and len(members) == len(set(members))
    expected_groups = min(math.ceil(math.sqrt(count)), count // 2)
    assert len(grouping.groups) == expected_groups
    sizes = [len(g.nodes) for g in grouping.groups]
    assert max(sizes) - min(sizes) <= 1
    # consecutive names in natural order: node2 before node10
    first = grouping.groups[0].nodes
    assert first == tuple("node%d" % i for i in range(len(first)))


def test_large_domains_are_split_and_small_ones_merged():
    nodes = [NodeInfo("a%d" % i, {RACK: "big"}) for i in range(10)]
    nodes += [NodeInfo("b0", {RACK: "tiny1"}), NodeInfo("c0", {RACK: "tiny2"}), NodeInfo("d0", {RACK: "tiny3"})]
    grouping = group_nodes(nodes, GroupingConfig(min_group_size=2, max_group_size=4))
    sizes = sorted(len(g.nodes) for g in grouping.groups)
    assert sum(sizes) == 13 and max(sizes) <= 4
    merged = [g for g in grouping.groups if len(g.domains) > 1]
    assert merged and all(len(g.nodes) >= 2 for g in grouping.groups)
    assert grouping.domain_of["b0"] == "tiny1"  # merging a group keeps each node's own domain


def test_cordoned_and_unready_nodes_are_excluded_with_reasons():
    nodes = [NodeInfo("n1"), NodeInfo("n2", cordoned=True), NodeInfo("n3", ready=False),
             NodeInfo("n4", ready=False, cordoned=True), NodeInfo("n5")]
    grouping = group_nodes(nodes)
    assert grouping.excluded == {"n2": "cordoned (spec.unschedulable)", "n3": "not Ready",
                                 "n4": "cordoned (spec.unschedulable) and not Ready"}
    assert sorted(_members(grouping)) == ["n1", "n5"]


def test_partial_labels_put_unlabelled_nodes_in_their_own_domain():
    nodes = [NodeInfo("n1", {CLIQUE: "c1"}), NodeInfo("n2", {CLIQUE: "c1"}), NodeInfo("n3"), NodeInfo("n4")]
    grouping = group_nodes(nodes)
    assert grouping.unassigned == ("n3", "n4")
    assert grouping.domain_of["n3"] == "(unassigned)"


def test_bad_input_names_the_field_and_value():
    with pytest.raises(GroupingError, match="duplicate node name.*nodes\\[1\\].name.*'x'"):
        group_nodes([NodeInfo("x"), NodeInfo("x")])
    with pytest.raises(GroupingError, match="max_group_size.*value 1"):
        group_nodes([NodeInfo("x")], GroupingConfig(min_group_size=2, max_group_size=1))
    with pytest.raises(GroupingError, match="labels must be a mapping"):
        NodeInfo.from_dict({"name": "n1", "labels": ["a"]})


def test_node_info_from_kubernetes_object_and_dict_round_trip():
    node = {"metadata": {"name": "gpu-1", "labels": {CLIQUE: "c.1"}}, "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                      {"type": "Ready", "status": "True"}]}}
    info = node_info_from_k8s(node)
    assert info.name == "gpu-1" and info.ready and info.cordoned and info.labels[CLIQUE] == "c.1"
    assert NodeInfo.from_dict(info.to_dict()) == info
    not_ready = node_info_from_k8s({"metadata": {"name": "gpu-2"}, "status": {"conditions": []}})
    assert not not_ready.ready and not not_ready.cordoned
