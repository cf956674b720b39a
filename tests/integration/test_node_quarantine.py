# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""dsxos.cluster.node_quarantine through real ansible-playbook runs against both Kubernetes backends (the emulator and
the real control plane, ``k8s_cluster``); injected conflicts and 5xx answers only on the emulator."""
from __future__ import annotations

import json

import pytest

PRIOR = "dsxos.io/quarantine-prior"
HISTORY = "dsxos.io/quarantine-history"
STATE = "dsxos.io/quarantine"
FOREIGN = {"key": "team.example.com/maintenance", "effect": "NoSchedule"}


def node_of(emu, name):
    return emu.api.get("v1", "Node", name)


def test_cordon_taint_label_release_keeps_foreign_state(k8s_cluster, ansible_run):
    emu = k8s_cluster
    names = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")
    emu.taint(names[1], FOREIGN["key"], FOREIGN["effect"])
    emu.cordon(names[2])
    playbook = """
- hosts: localhost
  gather_facts: false
  module_defaults:
    group/dsxos.cluster.k8s:
      kubeconfig: "{{ kubeconfig }}"
  tasks:
    - name: preview
      dsxos.cluster.node_quarantine: {nodes: "{{ nodes }}", action: cordon, reason: "XID 79 alert", taints: "{{ taints }}"}
      check_mode: true
      diff: true
    - name: quarantine
      dsxos.cluster.node_quarantine: {nodes: "{{ nodes }}", action: cordon, reason: "XID 79 alert", taints: "{{ taints }}", actor: ops-bot}
    - name: quarantine again
      dsxos.cluster.node_quarantine: {nodes: "{{ nodes }}", action: cordon, reason: "XID 79 alert", taints: "{{ taints }}"}
    - name: label one
      dsxos.cluster.node_quarantine: {nodes: ["{{ nodes[0] }}"], action: label, reason: RMA 1234, labels: {dsxos.io/repair: rma-1234}}
    - name: server-side dry run of the release
      dsxos.cluster.node_quarantine: {nodes: "{{ nodes }}", action: release, dry_run: true}
    - name: release
      dsxos.cluster.node_quarantine: {nodes: "{{ nodes }}", action: release, reason: GPU replaced}
"""
    taints = [{"key": "dsxos.io/gpu-fault", "value": "xid-79", "effect": "NoSchedule"}]
    result = ansible_run(playbook, extra_vars={"kubeconfig": emu.kubeconfig_path, "nodes": names, "taints": taints})
    preview = result.task("preview")
    assert preview["changed"] and preview["result"]["changed_nodes"] == names
    assert set(preview["result"]["diff"]["after"]) == set(names)
    quarantine = result.task("quarantine")["result"]
    assert quarantine["changed_nodes"] == names and quarantine["api_calls"]["patch nodes"] == 3
    assert not result.task("quarantine again")["changed"]
    assert result.task("label one")["changed"]
    assert result.task("server-side dry run of the release")["changed"]
    released = result.task("release")["result"]["nodes"]
    assert [r["status"] for r in released] == ["changed"] * 3
    first, foreign_tainted, foreign_cordoned = (node_of(emu, n) for n in names)
    assert not first["spec"].get("unschedulable") and not first["spec"].get("taints")
    assert "dsxos.io/repair" not in first["metadata"]["labels"]
    assert foreign_tainted["spec"]["taints"] == [FOREIGN], "a taint someone else set must survive the release"
    assert foreign_cordoned["spec"]["unschedulable"] is True, "a cordon someone else set must survive the release"
    for node in (first, foreign_tainted, foreign_cordoned):
        assert node["metadata"]["labels"][STATE] == "released" and PRIOR not in node["metadata"]["annotations"]
    history = json.loads(first["metadata"]["annotations"][HISTORY])
    assert [(h["action"], h["reason"]) for h in history] == [("cordon", "XID 79 alert"), ("label", "RMA 1234"), ("release", "GPU replaced")]
    assert history[0]["actor"] == "ops-bot" and history[0]["time"].endswith("Z")


@pytest.mark.emulator_only("faults")
def test_conflicts_are_reread_and_reapplied(k8s_cluster, ansible_run):
    emu = k8s_cluster
    names = emu.add_nodes(5, "h100-eks", name_prefix="gpu-")
    emu.faults.set("/api/v1/nodes/", methods=["PATCH"], error_rate=0.5, error_code=409)
    emu.faults.set(f"/api/v1/nodes/{names[4]}", methods=["PATCH"], error_rate=1.0, error_code=409)
    playbook = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: cordon under conflicts
      dsxos.cluster.node_quarantine: {kubeconfig: "{{ kubeconfig }}", nodes: "{{ nodes[:4] }}", action: cordon, reason: flaky, conflict_retries: 10}
    - name: cordon a node that always conflicts
      dsxos.cluster.node_quarantine: {kubeconfig: "{{ kubeconfig }}", nodes: ["{{ nodes[4] }}"], action: cordon, reason: flaky, conflict_retries: 2}
      ignore_errors: true
"""
    result = ansible_run(playbook, extra_vars={"kubeconfig": emu.kubeconfig_path, "nodes": names})
    ok = result.task("cordon under conflicts")["result"]
    assert ok["changed_nodes"] == names[:4]
    assert sum(r["attempts"] for r in ok["nodes"]) > 4, "some patches must have met an injected 409"
    assert emu.stats()["faults_injected"]["error"] >= 1
    for name in names[:4]:
        node = node_of(emu, name)
        assert node["spec"]["unschedulable"] is True and json.loads(node["metadata"]["annotations"][PRIOR])["reason"] == "flaky"
    stuck = result.task("cordon a node that always conflicts")
    assert stuck["failed"] and "still conflicting after 3 attempts" in stuck["msg"] and names[4] in stuck["msg"]
    assert not node_of(emu, names[4])["spec"].get("unschedulable")


FAILURE_PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  module_defaults:
    group/dsxos.cluster.k8s: {kubeconfig: "{{ kubeconfig }}", retries: 2, retry_backoff_s: 0.01}
  tasks:
    - name: unknown node
      dsxos.cluster.node_quarantine: {nodes: ["{{ nodes[0] }}", no-such-node], action: cordon, reason: test}
      ignore_errors: true
    - name: unknown node ignored
      dsxos.cluster.node_quarantine: {nodes: [no-such-node], action: cordon, reason: test, ignore_missing: true}
    - name: invalid name
      dsxos.cluster.node_quarantine: {nodes: ["gpu-1; rm -rf /"], action: cordon, reason: test}
      ignore_errors: true
    - name: rbac refusal
      dsxos.cluster.node_quarantine: {nodes: ["{{ nodes[1] }}"], action: cordon, reason: test, host: "{{ url }}", api_key: "{{ token }}"}
      ignore_errors: true
    - name: unreachable
      dsxos.cluster.node_quarantine: {nodes: ["{{ nodes[1] }}"], action: cordon, reason: test, host: "http://127.0.0.1:9", api_key: x, retries: 1}
      ignore_errors: true
"""


def test_failures_are_clear(k8s_cluster, ansible_run):
    emu = k8s_cluster
    names = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")
    bot = emu.identity("quarantine-bot", namespace="ops", deny=[(["patch"], ["nodes"])])
    result = ansible_run(FAILURE_PLAYBOOK, extra_vars={"kubeconfig": emu.kubeconfig_path, "nodes": names, "url": emu.url,
                                                       "token": bot.token})
    unknown = result.task("unknown node")
    assert unknown["failed"] and "no-such-node" in unknown["msg"] and "ignore_missing" in unknown["msg"]
    assert unknown["result"]["missing_nodes"] == ["no-such-node"] and unknown["result"]["changed_nodes"] == [names[0]]
    ignored = result.task("unknown node ignored")
    assert not ignored["failed"] and ignored["result"]["missing_nodes"] == ["no-such-node"]
    invalid = result.task("invalid name")
    assert invalid["failed"] and "RFC 1123" in invalid["msg"] and "gpu-1; rm -rf /" in invalid["msg"]
    assert "nodes[0]" in invalid["msg"]
    rbac = result.task("rbac refusal")
    assert rbac["failed"] and "RBAC refused patch nodes" in rbac["msg"] and "quarantine-bot" in rbac["msg"] and bot.user in rbac["msg"]
    unreachable = result.task("unreachable")
    assert unreachable["failed"] and "http://127.0.0.1:9" in unreachable["msg"]
    assert not node_of(emu, names[1])["spec"].get("unschedulable")


@pytest.mark.emulator_only("faults")
def test_exhausted_retries_are_clear(k8s_cluster, ansible_run):
    emu = k8s_cluster
    names = emu.add_nodes(3, "h100-eks", name_prefix="gpu-")
    emu.faults.set(f"/api/v1/nodes/{names[2]}", methods=["GET"], error_rate=1.0, error_code=503)
    playbook = """
- hosts: localhost
  gather_facts: false
  module_defaults:
    group/dsxos.cluster.k8s: {kubeconfig: "{{ kubeconfig }}", retries: 2, retry_backoff_s: 0.01}
  tasks:
    - name: exhausted retries
      dsxos.cluster.node_quarantine: {nodes: ["{{ nodes[2] }}"], action: cordon, reason: test}
      ignore_errors: true
"""
    result = ansible_run(playbook, extra_vars={"kubeconfig": emu.kubeconfig_path, "nodes": names})
    retries = result.task("exhausted retries")
    assert retries["failed"] and "3 attempt(s)" in retries["msg"] and "503" in retries["msg"] and names[2] in retries["msg"]
    assert not node_of(emu, names[2])["spec"].get("unschedulable")
