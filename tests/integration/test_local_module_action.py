# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The Kubernetes modules give the same results in the Ansible worker as in a module process
(plugins/plugin_utils/local_module_action.py), on both backends: the same play runs with ``DSXOS_MODULES_IN_PROCESS``
on and off, against the same starting cluster, and every task's result is compared (minus what is different by
nature: times, lease identities). ``-vvv`` shows which path ran: a module process starts with "Using module file";
the in-process path starts none. A task with an ``environment`` runs the module, and
the environment reaches it."""
from __future__ import annotations

import json
import re
from typing import Any, Dict, List

from ansible_collections.dsxos.cluster.plugins.plugin_utils.local_module_action import SWITCH

PLAY = """
- name: In-process parity
  hosts: localhost
  gather_facts: false
  module_defaults:
    group/dsxos.cluster.k8s:
      kubeconfig: "{{ kubeconfig }}"
      retry_backoff_s: 0
  tasks:
    - name: lock
      dsxos.cluster.node_lock: {node: "{{ nodes[0] }}", holder: play-a, state: acquire, purpose: drain, reason: XID 79,
                                duration_s: 600, wait_timeout_s: 0, poll_interval_s: 0.05}
    - name: lock taken
      dsxos.cluster.node_lock: {node: "{{ nodes[0] }}", holder: play-b, state: acquire, purpose: drain, reason: XID 79,
                                duration_s: 600, wait_timeout_s: 0, poll_interval_s: 0.05}
      ignore_errors: true
    - name: preview
      dsxos.cluster.node_quarantine: {nodes: "{{ nodes }}", action: cordon, reason: XID 79 alert, taints: "{{ taints }}"}
      check_mode: true
      diff: true
    - name: quarantine
      dsxos.cluster.node_quarantine: {nodes: "{{ nodes }}", action: cordon, reason: XID 79 alert, taints: "{{ taints }}",
                                      actor: ops-bot}
    - name: quarantine again
      dsxos.cluster.node_quarantine: {nodes: "{{ nodes }}", action: cordon, reason: XID 79 alert, taints: "{{ taints }}",
                                      actor: ops-bot}
    - name: bad input
      dsxos.cluster.node_quarantine: {nodes: ["Not_A_Node"], action: cordon, reason: x}
      ignore_errors: true
    - name: missing option
      dsxos.cluster.node_quarantine: {action: cordon, reason: x}
      ignore_errors: true
    - name: unknown option
      dsxos.cluster.node_quarantine: {nodes: "{{ nodes }}", action: cordon, reason: x, colour: red}
      ignore_errors: true
    - name: no_log value
      dsxos.cluster.node_quarantine: {nodes: ["{{ nodes[0] }}"], action: label, reason: "{{ secret }}",
                                      labels: {dsxos.io/secret: "{{ secret }}"}, api_key: "{{ secret }}"}
      ignore_errors: true
    - name: release
      dsxos.cluster.node_quarantine: {nodes: "{{ nodes }}", action: release, reason: GPU replaced, actor: ops-bot}
    - name: unlock
      dsxos.cluster.node_lock: {node: "{{ nodes[0] }}", holder: play-a, state: release, purpose: drain, reason: XID 79,
                                duration_s: 600, wait_timeout_s: 0, poll_interval_s: 0.05}
    - name: kubeconfig from the task environment
      dsxos.cluster.node_quarantine: {kubeconfig: null, nodes: ["{{ nodes[0] }}"], action: label, reason: env,
                                      labels: {dsxos.io/env: seen}}
      environment:
        KUBECONFIG: "{{ kubeconfig }}"
"""
SECRET = "s3cr3t-t0ken-value"
TASKS = ["lock", "lock taken", "preview", "quarantine", "quarantine again", "bad input", "missing option",
         "unknown option", "no_log value", "release",
         "unlock", "kubeconfig from the task environment"]
#: keys whose values differ between any two runs (times, generated identities)
VOLATILE = re.compile(r"(time|_at$|elapsed|_ms$|_s$|expires|renew|acquired|resource_?version|uid|holder_identity|"
                      r"^lease$|^id$|history)", re.I)
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?")


def normalized(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items() if not VOLATILE.search(str(k)) and not str(k).startswith("_ansible")}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    if isinstance(value, str):
        return TIMESTAMP.sub("<time>", value)
    return value


def differences(left: Any, right: Any, path: str = "") -> List[str]:
    """Where two results differ: ``path: left != right`` for each differing leaf."""
    if isinstance(left, dict) and isinstance(right, dict):
        out: List[str] = []
        for key in sorted(set(left) | set(right), key=str):
            out += differences(left.get(key, "<missing>"), right.get(key, "<missing>"), "%s.%s" % (path, key))
        return out
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        return [d for i, (a, b) in enumerate(zip(left, right)) for d in differences(a, b, "%s[%d]" % (path, i))]
    return [] if left == right else ["%s: %r != %r" % (path, left, right)]


def _run(cluster, ansible_run, monkeypatch, switch: str, prefix: str) -> Dict[str, Any]:
    monkeypatch.setenv(SWITCH, switch)
    names = cluster.add_nodes(2, "h100-eks", name_prefix=prefix)
    taints = [{"key": "dsxos.io/gpu-fault", "value": "xid-79", "effect": "NoSchedule"}]
    extra_vars = {"kubeconfig": cluster.kubeconfig_path, "nodes": names, "taints": taints, "secret": SECRET}
    result = ansible_run(PLAY, extra_vars=extra_vars, extra_args=["-vvv"])
    out = normalized(json.loads(json.dumps({name: result.task(name) for name in TASKS}).replace(prefix, "<node>-")))
    text = result.stdout + result.stderr
    execs = len(re.findall(r"Using module file \S*/plugins/modules/node_(lock|quarantine)\.py", text))
    return {"tasks": out, "execs": execs, "nodes": [cluster.api.find("v1", "Node", n) for n in names]}


WARM = """
- name: Create what the first lock of a cluster creates (its namespace), so both runs start from the same state
  hosts: localhost
  gather_facts: false
  tasks:
    - name: lock
      dsxos.cluster.node_lock: {kubeconfig: "{{ kubeconfig }}", node: "{{ node }}", holder: warm, state: acquire,
                                purpose: drain, reason: warm-up, duration_s: 60, wait_timeout_s: 0}
"""


def test_in_process_and_module_results_are_the_same(k8s_cluster, ansible_run, monkeypatch):
    (warm,) = k8s_cluster.add_nodes(1, "h100-eks", name_prefix="warm-")
    ansible_run(WARM, extra_vars={"kubeconfig": k8s_cluster.kubeconfig_path, "node": warm})
    inside = _run(k8s_cluster, ansible_run, monkeypatch, "1", "inproc-")
    module = _run(k8s_cluster, ansible_run, monkeypatch, "0", "module-")
    # which path ran: only the task with an environment starts a module process when the switch is on
    assert inside["execs"] == 1, inside["execs"]
    assert module["execs"] == len(TASKS), module["execs"]
    for name in TASKS:
        assert not differences(inside["tasks"][name], module["tasks"][name]), (name, differences(inside["tasks"][name], module["tasks"][name]))
    assert inside["tasks"]["lock taken"]["failed"] and inside["tasks"]["bad input"]["failed"]
    assert inside["tasks"]["missing option"]["failed"] and inside["tasks"]["unknown option"]["failed"]
    assert "Unsupported parameters for (dsxos.cluster.node_quarantine) module: colour" in inside["tasks"]["unknown option"]["result"]["msg"]
    assert SECRET not in json.dumps(inside["tasks"]["no_log value"]), inside["tasks"]["no_log value"]
    assert not inside["tasks"]["quarantine again"]["changed"] and inside["tasks"]["quarantine"]["changed"]
    for nodes in (inside["nodes"], module["nodes"]):
        labels: List[Dict[str, str]] = [n["metadata"]["labels"] for n in nodes]
        assert labels[0]["dsxos.io/env"] == "seen"
        assert not any(n["spec"].get("unschedulable") for n in nodes)
