# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Label and field selectors, pagination, through the real client; selector parsing units."""
from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.errors import ApiError
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_client, k8s_emulator, k8s_emulator_factory)
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.selectors import labels_match, parse_label_selector


@pytest.fixture
def labelled(k8s_client):  # pylint: disable=redefined-outer-name
    core = client.CoreV1Api(k8s_client)
    specs = {"a": {"env": "prod", "tier": "web"}, "b": {"env": "dev", "tier": "web"}, "c": {"env": "prod"}, "d": {}}
    for name, labels in specs.items():
        core.create_namespaced_config_map("default", {"metadata": {"name": name, "labels": labels}})
    return core


@pytest.mark.parametrize("selector,expected", [
    ("env=prod", ["a", "c"]),
    ("env==prod", ["a", "c"]),
    ("env!=prod", ["b", "d"]),
    ("env in (prod,dev)", ["a", "b", "c"]),
    ("env notin (prod)", ["b", "d"]),
    ("tier", ["a", "b"]),
    ("!tier", ["c", "d"]),
    ("env=prod,tier=web", ["a"]),
    ("env in (prod),!tier", ["c"]),
])
def test_label_selector_operators(labelled, selector, expected):  # pylint: disable=redefined-outer-name
    got = [c.metadata.name for c in labelled.list_namespaced_config_map("default", label_selector=selector).items]
    assert got == expected


def test_bad_label_selector_is_400(labelled):  # pylint: disable=redefined-outer-name
    with pytest.raises(ApiException) as exc:
        labelled.list_namespaced_config_map("default", label_selector="env in prod")
    assert exc.value.status == 400 and "unable to parse requirement" in json.loads(exc.value.body)["message"]


def test_field_selectors_on_pods(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    nodes = k8s_emulator.add_nodes(3, "h200-eks")
    k8s_emulator.seed_pods(2, namespace="work")
    core = client.CoreV1Api(k8s_client)
    on_first = core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={nodes[0]}").items
    assert sorted(p.metadata.name for p in on_first) == ["w-0-0", "w-0-1"]
    not_first = core.list_namespaced_pod("work", field_selector=f"spec.nodeName!={nodes[0]}").items
    assert len(not_first) == 4 and all(p.spec.node_name != nodes[0] for p in not_first)
    assert [p.metadata.name for p in core.list_namespaced_pod("work", field_selector="metadata.name=w-2-1").items] == ["w-2-1"]
    assert len(core.list_pod_for_all_namespaces(field_selector="metadata.namespace=work,status.phase=Running").items) == 6
    assert core.list_pod_for_all_namespaces(field_selector="status.phase=Pending").items == []
    combined = core.list_namespaced_pod("work", field_selector=f"spec.nodeName={nodes[1]}", label_selector="app=workload").items
    assert len(combined) == 2
    with pytest.raises(ApiException) as exc:
        core.list_namespaced_pod("work", field_selector="spec.bogus=1")
    assert exc.value.status == 400 and json.loads(exc.value.body)["message"] == "field label not supported: spec.bogus"
    assert k8s_emulator.api_calls("list", "pods") == 7


def test_node_field_selector_unschedulable(k8s_emulator, k8s_client):  # pylint: disable=redefined-outer-name
    names = k8s_emulator.add_nodes(3, "cpu")
    k8s_emulator.cordon(names[1])
    core = client.CoreV1Api(k8s_client)
    assert [n.metadata.name for n in core.list_node(field_selector="spec.unschedulable=true").items] == [names[1]]
    assert len(core.list_node(field_selector="spec.unschedulable!=true").items) == 2
    assert len(core.list_node(label_selector="node.kubernetes.io/instance-type=m6i.4xlarge").items) == 3


def test_limit_and_continue(labelled):  # pylint: disable=redefined-outer-name
    seen = []
    token = None
    while True:
        page = labelled.list_namespaced_config_map("default", limit=3, _continue=token)
        seen += [c.metadata.name for c in page.items]
        token = page.metadata.var_continue
        if not token:
            break
        assert page.metadata.remaining_item_count == 1
    assert seen == ["a", "b", "c", "d"]


def test_selector_parser_units():
    sel = parse_label_selector("a=1,b!=2,c in (x, y),d notin (z),e,!f")
    expected = [("a", "=", ("1",)), ("b", "!=", ("2",)), ("c", "in", ("x", "y")), ("d", "notin", ("z",)), ("e", "exists", ()), ("f", "!", ())]
    assert [(r.key, r.op, r.values) for r in sel] == expected
    assert labels_match(sel, {"a": "1", "c": "y", "e": ""})
    assert not labels_match(sel, {"a": "1", "c": "y", "e": "", "f": "1"})
    assert labels_match((), {}) and not labels_match(None, {"a": "1"})
    with pytest.raises(ApiError):
        parse_label_selector("bad key=1")
