# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""dsxos.cluster.cluster_snapshot through real ansible-playbook runs against both Kubernetes backends (``k8s_cluster``);
injected 5xx answers and request counts only on the emulator."""
from __future__ import annotations

import socket

import pytest

PLAY = """
- name: Snapshot
  hosts: localhost
  gather_facts: false
  module_defaults:
    group/dsxos.cluster.k8s:
      kubeconfig: "{{ kubeconfig }}"
      retry_backoff_s: 0
      retries: "{{ retries | default(8) }}"
  tasks:
    - name: Measure
      dsxos.cluster.cluster_snapshot:
        label_selector: "{{ selector | default(omit) }}"
      register: cluster

    - name: Check constraints with it
      dsxos.cluster.constraint_check:
        constraints:
          - {name: K8s.server.version, value: ">= {{ min_server | default('1.30') }}"}
          - {name: GPU.smi.driver, value: ">= 570"}
        snapshot: "{{ cluster.snapshot }}"
        fail_on_violation: true
"""


def _min_server(cluster):
    """One minor below the server's version: ``1.30`` on the emulator (v1.31.4-eks), ``1.19`` on the real 1.20."""
    major, minor = cluster.server_version.lstrip("v").split(".")[:2]
    return "%s.%d" % (major, int(minor) - 1)


def test_snapshot_feeds_constraint_check(ansible_run, k8s_cluster):
    k8s_cluster.add_nodes(2, "h100-eks")
    k8s_cluster.add_nodes(1, "cpu")
    extra = {"kubeconfig": k8s_cluster.kubeconfig_path, "min_server": _min_server(k8s_cluster)}
    result = ansible_run(PLAY, extra_vars=extra)
    record = result.task("Measure")
    assert record["status"] == "ok" and record["changed"] is False
    ret = record["result"]
    assert ret["criteria"]["accelerator"] == "h100" and ret["criteria"]["service"] == "eks"
    assert ret["summary"]["gpus"] == 16 and ret["snapshot"]["measurements"]["GPU.smi.driver"] == "570.124.06"
    assert ret["server_version"] == k8s_cluster.server_version
    assert result.task("Check constraints with it")["status"] == "ok"
    # check mode gives the same read-only answer
    checked = ansible_run(PLAY, extra_vars=extra, check=True)
    assert checked.task("Measure")["result"]["summary"] == ret["summary"]


def test_rbac_refusal_is_a_clear_failure(ansible_run, k8s_cluster):
    # the emulator's admin user is "kubernetes-admin"; here an identity of that name is refused listing nodes
    admin = k8s_cluster.identity("kubernetes-admin", deny=[(["list"], ["nodes"])])
    result = ansible_run(PLAY, extra_vars={"kubeconfig": admin.kubeconfig_path}, expect_rc=2)
    record = result.task("Measure")
    assert record["status"] == "failed"
    assert "RBAC refused list nodes" in record["msg"] and "kubernetes-admin" in record["msg"] and admin.user in record["msg"]
    assert record["result"]["error"]["error"] == "K8sForbidden"


@pytest.mark.emulator_only("faults")
def test_exhausted_retries(ansible_run, k8s_cluster):
    k8s_cluster.faults.set("/api/v1/nodes", error_rate=1.0, error_code=503)
    result = ansible_run(PLAY, extra_vars={"kubeconfig": k8s_cluster.kubeconfig_path, "retries": 2}, expect_rc=2)
    msg = result.task("Measure")["msg"]
    assert "list nodes" in msg and "3 attempt(s)" in msg and "503" in msg


def test_unreachable(ansible_run, k8s_cluster, tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dead = k8s_cluster.kubeconfig()
    dead["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{port}"
    path = tmp_path / "dead-kubeconfig"
    import yaml  # pylint: disable=import-outside-toplevel
    path.write_text(yaml.safe_dump(dead), encoding="utf-8")
    result = ansible_run(PLAY, extra_vars={"kubeconfig": str(path), "retries": 1}, expect_rc=2)
    msg = result.task("Measure")["msg"]
    assert f"http://127.0.0.1:{port}" in msg and "cannot reach" in msg


def test_bad_selector_fails_before_any_call(ansible_run, k8s_cluster):
    result = ansible_run(PLAY, extra_vars={"kubeconfig": k8s_cluster.kubeconfig_path, "selector": "a=$(id)"}, expect_rc=2)
    assert "label_selector" in result.task("Measure")["msg"]


@pytest.mark.emulator_only("api_calls")
def test_bad_selector_lists_no_node(ansible_run, k8s_cluster):
    result = ansible_run(PLAY, extra_vars={"kubeconfig": k8s_cluster.kubeconfig_path, "selector": "a=$(id)"}, expect_rc=2)
    assert "label_selector" in result.task("Measure")["msg"]
    assert k8s_cluster.api_calls("list", "nodes") == 0
