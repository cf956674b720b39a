# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""dsxos.cluster.node_lock through real ansible-playbook runs against both Kubernetes backends (``k8s_cluster``)."""
from __future__ import annotations

import pytest

#: Short explicit timings: no task waits for another holder (wait_timeout_s 0, a short poll), no client retry sleeps.
TIMINGS = {"duration_s": 600, "wait_timeout_s": 0, "poll_interval_s": 0.05}

PLAY = """
- name: Lock
  hosts: localhost
  gather_facts: false
  module_defaults:
    group/dsxos.cluster.k8s:
      kubeconfig: "{{ kubeconfig }}"
      retry_backoff_s: 0
  tasks:
    - name: Lock
      dsxos.cluster.node_lock:
        node: "{{ node }}"
        holder: "{{ holder }}"
        state: "{{ state }}"
        purpose: drain
        reason: "{{ reason | default('XID 79 on GPU 3') }}"
        duration_s: 600
        wait_timeout_s: 0
        poll_interval_s: 0.05
"""

#: The whole cycle in ONE ansible-playbook run (each run costs seconds of interpreter start-up on a loaded machine).
CYCLE = """
- name: Lock cycle
  hosts: localhost
  gather_facts: false
  module_defaults:
    group/dsxos.cluster.k8s:
      kubeconfig: "{{ kubeconfig }}"
      retry_backoff_s: 0
      retries: 0
    dsxos.cluster.node_lock:
      node: "{{ node }}"
      purpose: drain
      reason: XID 79 on GPU 3
      duration_s: "{{ timings.duration_s }}"
      wait_timeout_s: "{{ timings.wait_timeout_s }}"
      poll_interval_s: "{{ timings.poll_interval_s }}"
  tasks:
    - name: first
      dsxos.cluster.node_lock: {holder: play-a, state: acquire}
    - name: other
      dsxos.cluster.node_lock: {holder: play-b, state: acquire}
      ignore_errors: true
    - name: foreign
      dsxos.cluster.node_lock: {holder: play-b, state: release}
    - name: released
      dsxos.cluster.node_lock: {holder: play-a, state: release}
    - name: again
      dsxos.cluster.node_lock: {holder: play-a, state: release}
    - name: taken
      dsxos.cluster.node_lock: {holder: play-b, state: acquire}
"""


def _vars(emu, kubeconfig=None, **kw):
    if emu.api.find("v1", "Node", "gpu-node-1") is None:
        emu.add_nodes(1, "h100-eks", name_prefix="gpu-node-", start_index=1)
    out = {"kubeconfig": kubeconfig or emu.kubeconfig_path, "node": "gpu-node-1", "holder": "play-a", "state": "acquire", "timings": TIMINGS}
    out.update(kw)
    return out


def test_acquire_release_cycle(ansible_run, k8s_cluster):
    checked = ansible_run(PLAY, extra_vars=_vars(k8s_cluster), check=True)
    assert checked.task("Lock")["changed"] is True and checked.task("Lock")["result"]["action"] == "created"
    assert k8s_cluster.api.find("coordination.k8s.io/v1", "Lease", "dsxos-node-lock-gpu-node-1", "dsxos-system") is None

    cycle = ansible_run(CYCLE, extra_vars=_vars(k8s_cluster))
    first = cycle.task("first")
    assert first["changed"] and first["result"]["held"] and first["result"]["holder"] == "play-a"
    assert first["result"]["action"] == "created", "the check-mode run must have written nothing"

    other = cycle.task("other")
    assert other["status"] == "failed" and "locked by 'play-a' until" in other["msg"] and "XID 79" in other["msg"]

    foreign = cycle.task("foreign")
    assert foreign["changed"] is False and foreign["result"]["action"] == "held_by_other"

    released = cycle.task("released")
    assert released["changed"] is True and released["result"]["holder"] is None
    again = cycle.task("again")
    assert again["changed"] is False

    taken = cycle.task("taken")
    assert taken["changed"] and taken["result"]["holder"] == "play-b"


def test_invalid_node_name_never_reaches_the_api(ansible_run, k8s_cluster):
    result = ansible_run(PLAY, extra_vars=_vars(k8s_cluster, node="gpu-1; reboot"), expect_rc=2)
    msg = result.task("Lock")["msg"]
    assert "RFC 1123" in msg and "gpu-1; reboot" in msg
    assert k8s_cluster.api.list("coordination.k8s.io/v1", "Lease", namespace="dsxos-system") == []


@pytest.mark.emulator_only("api_calls")
def test_invalid_node_name_makes_no_request(ansible_run, k8s_cluster):
    """The emulator served no request at all (the test adds its node in-process, past the request counter)."""
    result = ansible_run(PLAY, extra_vars=_vars(k8s_cluster, node="gpu-1; reboot"), expect_rc=2)
    assert "RFC 1123" in result.task("Lock")["msg"]
    assert k8s_cluster.api_calls() == 0


def test_rbac_refusal_names_verb_and_resource(ansible_run, k8s_cluster):
    locker = k8s_cluster.identity("node-locker", namespace="ops", deny=[(["create"], ["leases"])])
    result = ansible_run(PLAY, extra_vars=_vars(k8s_cluster, kubeconfig=locker.kubeconfig_path), expect_rc=2)
    msg = result.task("Lock")["msg"]
    assert "RBAC refused create leases" in msg and locker.user in msg
