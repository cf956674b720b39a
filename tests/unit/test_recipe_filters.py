# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The dsxos.cluster filter plugin, called through FilterModule().filters() as Ansible does."""
from __future__ import annotations

import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dsxos.cluster.plugins.filter.recipe_filters import FilterModule
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import load_yaml_file
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.snapshot import snapshot_from_host_facts

FILTERS = FilterModule().filters()
FILTER_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "plugins", "filter")


def test_filter_names():
    assert sorted(FILTERS) == ["constraint_check", "constraints_ok", "deployment_order", "infer_criteria", "version_compare"]


@pytest.mark.parametrize("name", sorted(FilterModule().filters()))
def test_every_filter_has_a_documentation_sidecar(name):
    doc = load_yaml_file(os.path.join(FILTER_DIR, name + ".yml"))
    assert set(doc) == {"DOCUMENTATION", "EXAMPLES", "RETURN"}
    assert doc["DOCUMENTATION"]["name"] == name
    assert doc["DOCUMENTATION"]["short_description"]
    assert "_input" in doc["DOCUMENTATION"]["options"]
    for option in doc["DOCUMENTATION"]["options"].values():
        description = option["description"]
        items = description if isinstance(description, list) else [description]
        assert all(isinstance(item, str) for item in items), option
    assert "dsxos.cluster.%s" % name in doc["EXAMPLES"]
    assert "_value" in doc["RETURN"]


# ----------------------------------------------------------------------------- version_compare

@pytest.mark.parametrize("a,op,b,expected", [
    ("6.8.0-1015-aws", ">=", "6.8", True), ("6.8.0-1015-aws", "==", "6.8", True), ("v1.29.3", ">=", "1.30", False),
    ("1.32.4", "==", "1.32", True), ("1.30", ">", "1.29", True), ("1.30", "<", "1.29", False),
    ("1.30", "<=", "1.30.9", True), ("1.30", "!=", "1.31", True), ("1.31", "ge", "1.30", True), ("1.31", "lt", "1.30", False),
])
def test_version_compare(a, op, b, expected):
    assert FILTERS["version_compare"](a, op, b) is expected


def test_version_compare_errors():
    with pytest.raises(AnsibleFilterError, match="unknown operator '=>'"):
        FILTERS["version_compare"]("1.30", "=>", "1.29")
    with pytest.raises(AnsibleFilterError, match="not a version"):
        FILTERS["version_compare"]("1.x", ">=", "1.29")


# ----------------------------------------------------------------------------- constraint_check / constraints_ok

def test_constraint_check_and_ok():
    results = FILTERS["constraint_check"](
        [{"name": "K8s.server.version", "value": ">= 1.30"}, {"name": "OS.release.ID", "value": "ubuntu"}],
        {"K8s.server.version": "1.29.3", "OS.release.ID": "ubuntu"})
    assert [r["status"] for r in results] == ["fail", "pass"]
    assert results[0]["message"] == "K8s.server.version is 1.29.3, needs >= 1.30 [from user]"
    assert FILTERS["constraints_ok"](results) is False
    assert FILTERS["constraints_ok"](results[1:]) is True


def test_constraint_check_mapping_form_and_missing():
    results = FILTERS["constraint_check"]({"GPU.smi.driver": ">= 570"}, {})
    assert results[0]["status"] == "missing"
    assert FILTERS["constraints_ok"](results) is True
    assert FILTERS["constraints_ok"](results, missing_is_failure=True) is False
    assert FILTERS["constraints_ok"](results, True) is False


def test_constraint_check_serialized_snapshot_with_variants():
    snap = snapshot_from_host_facts({
        "a": {"ansible_facts": {"kernel": "6.8.0-1015-aws"}},
        "b": {"ansible_facts": {"kernel": "6.5.0-1020-aws"}},
    }).to_dict()
    result = FILTERS["constraint_check"]([{"name": "OS.sysctl./proc/sys/kernel/osrelease", "value": ">= 6.8"}], snap)[0]
    assert result["status"] == "fail"
    assert result["variants"] == {"a": "6.8.0-1015-aws", "b": "6.5.0-1020-aws"}


def test_constraint_check_errors_are_filter_errors():
    with pytest.raises(AnsibleFilterError) as info:
        FILTERS["constraint_check"]([{"name": "K8s.server.version", "value": "=> 1.30"}], {})
    assert "unknown operator '=>'" in str(info.value) and "K8s.server.version" in str(info.value)
    with pytest.raises(AnsibleFilterError, match="list"):
        FILTERS["constraint_check"]("K8s.server.version", {})
    with pytest.raises(AnsibleFilterError, match="snapshot"):
        FILTERS["constraint_check"]([], "not a snapshot")
    with pytest.raises(AnsibleFilterError, match="list returned by constraint_check"):
        FILTERS["constraints_ok"]({"status": "pass"})
    with pytest.raises(AnsibleFilterError, match="status"):
        FILTERS["constraints_ok"]([{"name": "a.b.c", "status": "unknown"}])


# ----------------------------------------------------------------------------- deployment_order

def test_deployment_order():
    graph = {"gpu-operator": ["cert-manager"], "network-operator": ["cert-manager"], "cert-manager": [],
             "nvidia-dra-driver": ["gpu-operator"], "kube-prometheus-stack": None}
    assert FILTERS["deployment_order"](graph) == [
        "cert-manager", "gpu-operator", "kube-prometheus-stack", "network-operator", "nvidia-dra-driver"]


def test_deployment_order_errors():
    with pytest.raises(AnsibleFilterError, match="a -> b -> a"):
        FILTERS["deployment_order"]({"a": ["b"], "b": ["a"]})
    with pytest.raises(AnsibleFilterError, match="missing"):
        FILTERS["deployment_order"]({"a": ["missing"]})
    with pytest.raises(AnsibleFilterError, match="must be a list"):
        FILTERS["deployment_order"]({"a": "b"})
    with pytest.raises(AnsibleFilterError, match="mapping"):
        FILTERS["deployment_order"](["a"])


# ----------------------------------------------------------------------------- infer_criteria

def test_infer_criteria_filter():
    snap = {"GPU.smi.gpu.model": "NVIDIA GB200", "OS.release.ID": "ubuntu",
            "K8s.node.provider-id": "oci://ocid1.instance.oc1.iad.abc"}
    assert FILTERS["infer_criteria"](snap) == {"service": "oke", "accelerator": "gb200", "os": "ubuntu",
                                               "intent": "any", "platform": "any", "nodes": 0}
    detailed = FILTERS["infer_criteria"](snap, evidence=True)
    assert detailed["criteria"]["accelerator"] == "gb200"
    assert detailed["evidence"]["service"]["source"] == "K8s.node.provider-id"


def test_infer_criteria_filter_errors():
    with pytest.raises(AnsibleFilterError, match="K8s.version"):
        FILTERS["infer_criteria"]({"K8s.version": "1.30"})
