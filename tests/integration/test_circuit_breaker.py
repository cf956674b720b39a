# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""dsxos.cluster.circuit_breaker and node_quarantine's breaker option through real ansible-playbook runs against both
Kubernetes backends (``k8s_cluster``: the emulator and the real control plane)."""
from __future__ import annotations

import json

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  module_defaults:
    group/dsxos.cluster.k8s:
      kubeconfig: "{{ kubeconfig }}"
  vars:
    breaker: {max_nodes: 2, max_fraction: 0.5, window_s: 3600}
  tasks:
    - name: quarantine three nodes through the breaker
      dsxos.cluster.node_quarantine: {nodes: "{{ nodes[:3] }}", action: cordon, reason: "XID storm", circuit_breaker: "{{ breaker }}"}
    - name: breaker check of a new node while open
      dsxos.cluster.circuit_breaker: {action: check, nodes: ["{{ nodes[3] }}"], max_nodes: 2, max_fraction: 0.5}
    - name: release is never blocked
      dsxos.cluster.node_quarantine: {nodes: ["{{ nodes[0] }}"], action: release, circuit_breaker: "{{ breaker }}"}
    - name: reset
      dsxos.cluster.circuit_breaker: {action: reset, reason: "incident reviewed", actor: sre-on-call}
    - name: quarantine two new nodes after the reset
      dsxos.cluster.node_quarantine: {nodes: "{{ nodes[3:5] }}", action: cordon, reason: "new fault", circuit_breaker: "{{ breaker }}",
                                      fail_on_refused: true}
    - name: status
      dsxos.cluster.circuit_breaker: {action: status, max_nodes: 2, max_fraction: 0.5}
"""


def test_breaker_refuses_beyond_the_limit_and_reset_does_not_replay(k8s_cluster, ansible_run):
    emu = k8s_cluster
    names = emu.add_nodes(10, "h100-eks", name_prefix="gpu-")
    emu.add_nodes(2, "cpu", name_prefix="cpu-")
    emu.add_namespace("dsxos-system")
    result = ansible_run(PLAYBOOK, extra_vars={"kubeconfig": emu.kubeconfig_path, "nodes": names})

    first = result.task("quarantine three nodes through the breaker")
    assert not first["failed"] and first["result"]["changed_nodes"] == names[:2]
    assert first["result"]["refused_nodes"] == [names[2]]
    refused = next(r for r in first["result"]["nodes"] if r["node"] == names[2])
    assert refused["status"] == "refused" and "above the limit 2" in refused["message"]
    assert first["result"]["circuit_breaker"]["gpu_nodes"] == 10
    assert not emu.api.get("v1", "Node", names[2])["spec"].get("unschedulable")

    check = result.task("breaker check of a new node while open")["result"]
    assert check["allowed"] is False and "is open" in check["refused"][names[3]] and not check["changed"]

    release = result.task("release is never blocked")
    assert release["changed"] and not emu.api.get("v1", "Node", names[0])["spec"].get("unschedulable")

    reset = result.task("reset")
    assert reset["changed"] and reset["result"]["state"]["status"] == "closed"

    after = result.task("quarantine two new nodes after the reset")
    assert not after["failed"] and after["result"]["changed_nodes"] == names[3:5], "entries before the reset must not be replayed"

    status = result.task("status")["result"]
    assert status["active_nodes"] == sorted(names[3:5]) and status["state"]["status"] == "closed" and status["limit"] == 2
    data = emu.api.get("v1", "ConfigMap", "dsxos-circuit-breaker", "dsxos-system")["data"]
    assert data["status"] == "closed" and data["resetAt"] and "sre-on-call" in data["reason"]
    assert sorted(e["node"] for e in json.loads(data["entries"])) == sorted(names[3:5])
