#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: sentinel_drain
short_description: Drain every node the sentinel's decisions drain, in one call, each under its lock (alert storms)
version_added: "0.1.0"
description:
  - Does the drain step of the sentinel's incidents for many nodes at once. A decision is this task's when its C(kind) is
    C(open) or C(resume), it is not a dry run, and its C(steps.drain) is C(full) or C(partial) (the C(decisions) of
    M(dsxos.cluster.sentinel_plan), or the C(plan.decisions) of M(dsxos.cluster.sentinel_quarantine)).
  - Per node, O(workers) at a time - take the node's Lease lock (holder O(holder), the same as the role's per-node steps)
    and read its incident record. Only a node whose open incident is the decision's, in state C(quarantined) or
    C(draining), is drained; any other node is reported in RV(left) for the per-node steps, which act on it from whatever is
    recorded.
  - Each incident goes to C(draining) with its Kubernetes Event, then ONE M(dsxos.cluster.node_drain) call per kind of
    drain drains all the nodes together (C(full) - every pod the drain policy removes, C(partial) - on each node only the
    pods its alerts map to the faulty GPU(s) (the decision's C(drain_pods)), or every pod that requests GPUs when they map
    none), with the options in O(drain); PodDisruptionBudgets are respected as in M(dsxos.cluster.node_drain).
  - A drained node's incident goes to C(drained) (the per-node steps then continue with the remediation and never drain it
    again). A node that was not drained stays cordoned, its incident stays in C(draining) with the drain's message
    recorded as its error, and it is reported in RV(failed_nodes) - the next run resumes the drain.
  - Every lock taken is released before the task returns, also after an error.
  - C(changed) is true when an incident advanced or a pod was removed. In check mode nothing is written (no lock); the
    nodes that would be drained are listed in RV(drained).
  - Runs on the controller (an action plugin calls the same code in the controller process; no module is shipped), like
    the sentinel role itself.
  - Every decision (node names RFC 1123, incident ids, C(steps.drain)) and every drain option is validated before any
    API call.
author:
  - dsxos.cluster contributors (@dsxos)
extends_documentation_fragment:
  - dsxos.cluster.k8s_auth
  - dsxos.cluster.sentinel_batch
options:
  decisions:
    description: The sentinel's decisions; only C(open)/C(resume) ones that drain and are not dry runs are acted on (the others are in RV(ignored)).
    type: list
    elements: dict
    required: true
  drain:
    description: Options of the drain, as M(dsxos.cluster.node_drain) takes them.
    type: dict
    default: {}
    suboptions:
      mode:
        description: How pods leave the node (see M(dsxos.cluster.node_drain)).
        type: str
        choices: [immediate, allow_completion, delete_after_timeout]
        default: immediate
      timeout_s:
        description: Time budget per node in seconds.
        type: float
        default: 600
      eviction_timeout_s:
        description: How long to keep evicting or waiting for completion (default O(drain.timeout_s), half of it for C(delete_after_timeout)).
        type: float
      grace_period_s:
        description: Termination grace period for evicted or deleted pods; default is each pod's own.
        type: int
      protected_namespaces_extra:
        description: More namespaces whose pods are never removed.
        type: list
        elements: str
        default: []
      protect_default_namespaces:
        description: Protect the default namespaces (catalog namespaces, C(kube-system), C(kai-resource-reservation)).
        type: bool
        default: true
      delete_emptydir_data:
        description: Evict pods with C(emptyDir) volumes (their local data is lost).
        type: bool
        default: false
      force:
        description: Evict pods that no controller manages.
        type: bool
        default: false
      pdb_retry_s:
        description: First wait before retrying an eviction a budget refused; it doubles up to O(drain.pdb_retry_max_s).
        type: float
        default: 1.0
      pdb_retry_max_s:
        description: Longest wait between eviction retries.
        type: float
        default: 5.0
      eviction_workers:
        description: Threads sending evictions (shared by all nodes); V(0) derives it from O(qps).
        type: int
        default: 0
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  action_group:
    description: Use C(group/dsxos.cluster.k8s) in C(module_defaults) to set defaults for this module.
    support: full
    membership: [dsxos.cluster.k8s]
"""

EXAMPLES = r"""
- name: Decide from the alert events and quarantine, in one task
  dsxos.cluster.sentinel_quarantine:
    events: "{{ sentinel_events }}"
    destructive: true
    holder: "dsxos-sentinel/{{ run_id }}"
    actor: dsxos-sentinel
  register: intake

- name: Drain every quarantined node whose decision drains it, at once
  dsxos.cluster.sentinel_drain:
    decisions: "{{ intake.plan.decisions }}"
    holder: "dsxos-sentinel/{{ run_id }}"
    actor: dsxos-sentinel
    drain:
      mode: immediate
      timeout_s: 900
  register: drained

- name: Show the nodes that were not drained
  ansible.builtin.debug:
    var: drained.failed_nodes
"""

RETURN = r"""
drained:
  description: Nodes drained with their incident now in C(drained) (in check mode - that would be drained).
  returned: success
  type: list
  elements: str
failed_nodes:
  description: Nodes not drained - C(node), C(incident), C(reason), C(locked_by) (null); they stay cordoned, the incident in
    C(draining) with the error.
  returned: success
  type: list
  elements: dict
left:
  description: Nodes left to the per-node steps - C(node), C(incident), C(reason) (locked, another or no open incident, another
    state) and C(locked_by) (C(holder) and lease C(purpose) of the run that holds the node's lock; null when not locked).
  returned: success
  type: list
  elements: dict
ignored:
  description: Decisions that are not this task's (C(node), C(kind), C(drain), C(dry_run)).
  returned: success
  type: list
  elements: dict
nodes:
  description: Per node - C(node), C(incident), C(drain) (full or partial), C(status) (drained, would_drain, failed, left),
    C(detail), C(changed), C(lock), C(error), C(state) and C(current) (the incident afterwards), C(result) (the drain's
    C(status), C(counts) of pods per outcome, C(blocking_pdbs), C(duration_s), C(message)), C(seconds).
  returned: success
  type: list
  elements: dict
elapsed_s:
  description: Seconds the batch took.
  returned: success
  type: float
api_calls:
  description: HTTP requests sent, by C(verb resource).
  returned: success
  type: dict
msg:
  description: One line - how many were drained, not drained, left to the per-node steps.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import SENTINEL_DRAIN


def main() -> None:
    module = AnsibleModule(argument_spec=SENTINEL_DRAIN.spec, supports_check_mode=True, **SENTINEL_DRAIN.module_options)
    finish(module, call_entry(SENTINEL_DRAIN, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
