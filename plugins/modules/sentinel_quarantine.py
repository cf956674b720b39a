#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: sentinel_quarantine
short_description: Decide and quarantine every node the sentinel opens an incident for, in one call (alert storms)
version_added: "0.1.0"
description:
  - Opens the sentinel's incidents. For each decision of kind C(open) - or C(needs_attention), a node at its attempt cap
    whose incident opens in C(needs-attention) - (not a dry run) it quarantines the node up to an open incident, for all
    nodes at once on a bounded thread pool (O(workers)) - so the last node of an alert storm is cordoned seconds, not
    minutes, after the first.
  - The decisions come either from O(decisions) (the C(decisions) of M(dsxos.cluster.sentinel_plan)), or - when
    O(decisions) is not given - from the events themselves (O(events), O(rules), O(manual_nodes) and the other policy
    options, exactly as M(dsxos.cluster.sentinel_plan) takes them). Then this one task validates the events, reads what is
    recorded on their nodes, decides and quarantines; the whole plan is returned in RV(plan), and O(quarantine=false)
    stops after the plan. This is the sentinel role's first task - nothing else runs between an alert and its cordon.
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
  - Decisions of other kinds (C(resume), C(join), C(record)) and dry runs are listed in RV(ignored).
  - Without O(decisions) (and with O(quarantine=true)), the new alerts of open incidents (C(join) decisions, and
    C(resume) ones that bring new alerts) are then joined to their incidents, O(workers) nodes at a time, without a
    lock - another run may hold the node; each write carries the node's resourceVersion - and listed in RV(joined).
  - In check mode nothing is written (no lock, no breaker entry); RV(quarantined) lists what would be quarantined.
  - O(lock=false) when the caller holds every node's lock as O(holder) already (the role's per-node steps open an
    incident this way) - no lock is taken or released.
  - Runs on the controller (an action plugin calls the same code in the controller process; no module is shipped), like
    the sentinel role itself.
  - Every decision is validated (node names RFC 1123, incident ids, alerts) before any API call.
author:
  - dsxos.cluster contributors (@dsxos)
extends_documentation_fragment:
  - dsxos.cluster.k8s_auth
  - dsxos.cluster.sentinel_batch
  - dsxos.cluster.circuit_breaker
  - dsxos.cluster.sentinel_policy
options:
  decisions:
    description:
      - The C(decisions) of M(dsxos.cluster.sentinel_plan); only C(kind=open) and C(kind=needs_attention) ones that are not dry runs are acted on.
      - Without it the decisions are made here from O(events) (mutually exclusive with O(events), O(rules), O(manual_nodes)).
    type: list
    elements: dict
  quarantine:
    description: With the events, quarantine the C(open) decisions (false - only plan, like M(dsxos.cluster.sentinel_plan)
      with C(read_state)). Ignored with O(decisions).
    type: bool
    default: true
  taint:
    description: Also taint the nodes C(dsxos.io/quarantine:NoSchedule) (the cordon always happens).
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Decide from the alert events and quarantine, in one task (what the sentinel role does first)
  dsxos.cluster.sentinel_quarantine:
    events: "{{ sentinel_events }}"
    holder: "dsxos-sentinel/{{ run_id }}"
    actor: dsxos-sentinel
  register: intake

- name: The per-node decisions
  ansible.builtin.debug:
    var: intake.plan.decisions

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
    C(seconds) (lock, cordon, open), C(current) (the open incident afterwards, when there is one).
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
plan:
  description: Without O(decisions) - the decisions and everything else M(dsxos.cluster.sentinel_plan) returns
    (C(decisions), C(acting), C(records), C(releases), C(skipped), C(rejected), C(counts), C(nodes), C(rules), C(batches)).
  returned: when O(decisions) is not given
  type: dict
joined:
  description: Without O(decisions) - the nodes whose new alerts were joined to their open incident - C(node),
    C(incident), C(changed), C(msg), C(ended) (the incident ended before the join, which wrote nothing; the second run
    decides again); a join that failed has C(error) (the role's next task joins it again).
  returned: when O(decisions) is not given and O(quarantine=true)
  type: list
  elements: dict
batch_error:
  description: Without O(decisions) - why the batch as a whole could not run (the plan is still returned and nothing
    is lost - the role's per-node steps do every step).
  returned: when the batch failed
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
