# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""dsxos.cluster.cluster_snapshot through real ansible-playbook runs against the Kubernetes emulator."""
from __future__ import annotations

import socket

from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

# pylint: disable=redefined-outer-name

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
          - {name: K8s.server.version, value: ">= 1.30"}
          - {name: GPU.smi.driver, value: ">= 570"}
        snapshot: "{{ cluster.snapshot }}"
        fail_on_violation: true
"""


def test_snapshot_feeds_constraint_check(ansible_run, k8s_emulator):
    k8s_emulator.add_nodes(2, "h100-eks")
    k8s_emulator.add_nodes(1, "cpu")
    result = ansible_run(PLAY, extra_vars={"kubeconfig": k8s_emulator.kubeconfig_path})
    record = result.task("Measure")
    assert record["status"] == "ok" and record["changed"] is False
    ret = record["result"]
    assert ret["criteria"]["accelerator"] == "h100" and ret["criteria"]["service"] == "eks"
    assert ret["summary"]["gpus"] == 16 and ret["snapshot"]["measurements"]["GPU.smi.driver"] == "570.124.06"
    assert result.task("Check constraints with it")["status"] == "ok"
    # check mode gives the same read-only answer
    checked = ansible_run(PLAY, extra_vars={"kubeconfig": k8s_emulator.kubeconfig_path}, check=True)
    assert checked.task("Measure")["result"]["summary"] == ret["summary"]


def test_rbac_refusal_is_a_clear_failure(ansible_run, k8s_emulator):
    k8s_emulator.access.deny(verbs=["list"], resources=["nodes"])
    result = ansible_run(PLAY, extra_vars={"kubeconfig": k8s_emulator.kubeconfig_path}, expect_rc=2)
    record = result.task("Measure")
    assert record["status"] == "failed"
    assert "RBAC refused list nodes" in record["msg"] and "kubernetes-admin" in record["msg"]
    assert record["result"]["error"]["error"] == "K8sForbidden"


def test_exhausted_retries_and_unreachable(ansible_run, k8s_emulator, tmp_path):
    k8s_emulator.faults.set("/api/v1/nodes", error_rate=1.0, error_code=503)
    result = ansible_run(PLAY, extra_vars={"kubeconfig": k8s_emulator.kubeconfig_path, "retries": 2}, expect_rc=2)
    msg = result.task("Measure")["msg"]
    assert "list nodes" in msg and "3 attempt(s)" in msg and "503" in msg
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dead = k8s_emulator.kubeconfig()
    dead["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{port}"
    path = tmp_path / "dead-kubeconfig"
    import yaml  # pylint: disable=import-outside-toplevel
    path.write_text(yaml.safe_dump(dead), encoding="utf-8")
    result = ansible_run(PLAY, extra_vars={"kubeconfig": str(path), "retries": 1}, expect_rc=2)
    msg = result.task("Measure")["msg"]
    assert f"http://127.0.0.1:{port}" in msg and "cannot reach" in msg


def test_bad_selector_fails_before_any_call(ansible_run, k8s_emulator):
    result = ansible_run(PLAY, extra_vars={"kubeconfig": k8s_emulator.kubeconfig_path, "selector": "a=$(id)"}, expect_rc=2)
    assert "label_selector" in result.task("Measure")["msg"]
    assert k8s_emulator.api_calls("list", "nodes") == 0
