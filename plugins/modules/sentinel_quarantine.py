#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: sentinel_quarantine
short_description: Quarantine every node the sentinel decided to open an incident for, concurrently (alert storms)
version_added: "0.1.0"
description:
  - Takes the decisions of M(dsxos.cluster.sentinel_plan) and, for each decision of kind C(open) (not a dry run), does what
    the remediate role's per-node steps do up to a quarantined incident, for all nodes at once on a bounded thread pool
    (O(workers)) - so the last node of an alert storm is cordoned seconds, not minutes, after the first.
  - Per node - take the node's Lease lock (M(dsxos.cluster.node_lock), holder O(holder)) and read its incident record;
    ask the circuit breaker (ONE atomic decision for all nodes, in decision order - the same admissions as asking node by
    node); cordon and taint the node with the decision's reason recorded (M(dsxos.cluster.node_quarantine)); open the
    incident in state C(quarantined) with its Kubernetes Event (M(dsxos.cluster.node_incident)); release the lock.
  - A node the breaker refuses is left untouched, its alerts are recorded on it (C(dsxos.io/sentinel-events)) and it is
    reported in RV(held_back). The breaker is consulted with its default settings unless O(circuit_breaker.enabled=false).
  - A node locked by another run, missing, with another open incident, or whose step failed is reported in RV(deferred)
    with the reason and left for the per-node steps, which resume from whatever is recorded on the node.
  - A node whose incident is already open (a rerun) is reported in RV(already_open); nothing is written. C(changed) is true
    only when a node was quarantined or a held-back node's alerts were recorded.
  - Decisions of other kinds (C(resume), C(join), C(needs_attention), C(record)) and dry runs are listed in RV(ignored).
  - In check mode nothing is written (no lock, no breaker entry); RV(quarantined) lists what would be quarantined.
  - Every decision is validated (node names RFC 1123, incident ids, alerts) before any API call.
author:
  - dsxos.cluster contributors (@dsxos)
extends_documentation_fragment:
  - dsxos.cluster.k8s_auth
  - dsxos.cluster.circuit_breaker
options:
  decisions:
    description: The C(decisions) of M(dsxos.cluster.sentinel_plan); only C(kind=open) ones that are not dry runs are acted on.
    type: list
    elements: dict
    required: true
  holder:
    description: Holder identity of the node locks (the role uses C(<sentinel_actor>/<run id>), the same as its per-node steps).
    type: str
    required: true
  actor:
    description: Who acts (quarantine record, incident, breaker entry, Events).
    type: str
    required: true
  lock_namespace:
    description: Namespace of the node lock Leases.
    type: str
    default: dsxos-system
  lock_duration_s:
    description: Duration of each node lock (a killed run's lock expires after it).
    type: int
    default: 1800
  lock_wait_s:
    description: Seconds to wait for a lock another run holds before leaving the node to the per-node steps.
    type: float
    default: 0.0
  taint:
    description: Also taint the nodes C(dsxos.io/quarantine:NoSchedule) (the cordon always happens).
    type: bool
    default: true
  event_namespace:
    description: Namespace of the Kubernetes Events about the nodes.
    type: str
    default: default
  workers:
    description: Nodes handled at the same time (1-64); every request also goes through the client's O(qps) limit.
    type: int
    default: 16
"""

EXAMPLES = r"""
- name: Quarantine every node the plan opens an incident for, at once
  dsxos.cluster.sentinel_quarantine:
    decisions: "{{ plan.decisions }}"
    holder: "dsxos-sentinel/{{ run_id }}"
    actor: dsxos-sentinel
    circuit_breaker:
      max_fraction: 0.1
      max_nodes: 10
    workers: 16
  register: batch

- name: Show what the breaker held back
  ansible.builtin.debug:
    var: batch.held_back
"""

RETURN = r"""
quarantined:
  description: Nodes quarantined with their incident opened by this task (in check mode - that would be).
  returned: success
  type: list
  elements: str
already_open:
  description: Nodes whose incident was already open (nothing written).
  returned: success
  type: list
  elements: str
held_back:
  description: Nodes the circuit breaker refused - C(node), C(incident), C(reason); untouched, their alerts recorded.
  returned: success
  type: list
  elements: dict
deferred:
  description: Nodes left for the per-node steps - C(node), C(incident), C(reason) (locked, missing, another incident, a failed step).
  returned: success
  type: list
  elements: dict
ignored:
  description: Decisions that are not this task's (C(node), C(kind), C(dry_run)).
  returned: success
  type: list
  elements: dict
nodes:
  description: Per node - C(node), C(incident), C(status) (quarantined, already_open, held_back, deferred), C(detail), C(changed),
    C(quarantine_time) (the time in the quarantine record), C(cordoned_at) (when the cordon was written), C(lock), C(error),
    C(seconds) (lock, cordon, open).
  returned: success
  type: list
  elements: dict
circuit_breaker:
  description: The breaker's decision (C(allowed), C(admitted), C(refused), C(limit), C(gpu_nodes), C(active_count), C(state)); null
    when it was not asked.
  returned: success
  type: dict
elapsed_s:
  description: Seconds the batch took.
  returned: success
  type: float
api_calls:
  description: HTTP requests sent, by C(verb resource).
  returned: success
  type: dict
msg:
  description: One line - how many were quarantined, held back, already open, left to the per-node steps.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import SENTINEL_QUARANTINE


def main() -> None:
    module = AnsibleModule(argument_spec=SENTINEL_QUARANTINE.spec, supports_check_mode=True, **SENTINEL_QUARANTINE.module_options)
    finish(module, call_entry(SENTINEL_QUARANTINE, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
