#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: node_quarantine
short_description: Cordon, taint, label and release Kubernetes nodes, recording who, why and when
version_added: "0.1.0"
description:
  - Acts on every node of O(nodes) in parallel (a thread pool bounded by O(qps)).
  - O(action=cordon) marks nodes unschedulable (optionally adding O(taints) and O(labels) in the same patch);
    O(action=taint) adds O(taints); O(action=label) sets O(labels) (a null value removes a label);
    O(action=uncordon) and O(action=untaint) undo one thing explicitly;
    O(action=release) undoes everything this module applied and nothing else.
  - Every change records the actor, the reason and the time in the node annotation C(dsxos.io/quarantine-history)
    (a bounded JSON list) and sets the label C(dsxos.io/quarantine) to C(quarantined) or C(released).
  - Before its first change the module records the node's prior state (was it already unschedulable, which taints it had,
    the previous values of the labels it sets) in the annotation C(dsxos.io/quarantine-prior). A release only removes the
    cordon, taints and labels the module applied, so a cordon or taint someone else set survives it.
  - C(spec.unschedulable) and the annotations travel in ONE strategic merge patch carrying the node's C(resourceVersion),
    so a node is never cordoned without its reason recorded. On HTTP 409 (someone else changed the node) the node is read
    again and the change planned again, up to O(conflict_retries) times.
  - Idempotent - a second cordon with the same reason reports C(changed=false). A different reason is recorded (changed).
  - Node names are validated (RFC 1123 subdomain) before any API call. An unknown node is reported per node and fails the
    task unless O(ignore_missing=true).
  - With O(circuit_breaker), cordon and taint of nodes that are not yet quarantined are first admitted by the circuit breaker
    (see M(dsxos.cluster.circuit_breaker)) in one atomic batch; refused nodes are reported in RV(refused_nodes) and left
    untouched. Release, uncordon and untaint never consult the breaker.
author:
  - dsxos.cluster contributors (@dsxos)
extends_documentation_fragment:
  - dsxos.cluster.k8s_auth
  - dsxos.cluster.circuit_breaker
options:
  nodes:
    description: Names of the nodes to act on.
    type: list
    elements: str
    required: true
  action:
    description: What to do.
    type: str
    choices: [cordon, uncordon, taint, untaint, label, release]
    required: true
  reason:
    description:
      - Why (recorded on the node). Required for O(action=cordon), O(action=taint) and O(action=label); optional otherwise.
      - At most 1024 characters.
    type: str
  actor:
    description: Who acts (recorded on the node). Default is C($DSXOS_ACTOR), else C(<user>@<host>) of the host running the module.
    type: str
  taints:
    description:
      - Taints for O(action=taint) or O(action=cordon), and the taints to remove for O(action=untaint)
        (there an entry without C(effect) removes every effect of its key).
    type: list
    elements: dict
    default: []
    suboptions:
      key:
        description: Taint key (a qualified name, for example C(dsxos.io/gpu-fault)).
        type: str
        required: true
      value:
        description: Taint value.
        type: str
      effect:
        description: Taint effect.
        type: str
        choices: [NoSchedule, PreferNoSchedule, NoExecute]
  labels:
    description: Labels for O(action=label) or O(action=cordon); a null value removes the label. C(dsxos.io/quarantine) is reserved.
    type: dict
  dry_run:
    description: Send the patches with C(dryRun=All) (the API server validates them, nothing is stored).
    type: bool
    default: false
  ignore_missing:
    description: Report unknown nodes without failing the task.
    type: bool
    default: false
  fail_on_refused:
    description: Fail the task when the circuit breaker refuses a node (by default refused nodes are only reported).
    type: bool
    default: false
  conflict_retries:
    description: How often a node is read again and patched again after HTTP 409.
    type: int
    default: 5
  history_limit:
    description: Number of entries kept in C(dsxos.io/quarantine-history).
    type: int
    default: 20
  release_scope:
    description:
      - For O(action=release). V(all) undoes everything the record holds (an operator's release).
      - V(actor) undoes only what O(actor) asked for and no other actor still asks for through this module (the record keeps
        every actor that asked for each cordon, taint and label); what stays keeps its record, with the reason of an actor
        still holding it. The sentinel releases its own incidents this way, so another actor's cordon survives.
    type: str
    choices: [all, actor]
    default: all
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
  action_group:
    description: Use C(group/dsxos.cluster.k8s) in C(module_defaults) to set defaults for this module.
    support: full
    membership: [dsxos.cluster.k8s]
"""

EXAMPLES = r"""
- name: Quarantine two nodes after an XID 79 alert (cordon + taint in one patch), at most 10% of GPU nodes per hour
  dsxos.cluster.node_quarantine:
    nodes: [gpu-node-17, gpu-node-18]
    action: cordon
    reason: "XID 79 (GPU fell off the bus) alert #4711"
    taints:
      - key: dsxos.io/gpu-fault
        value: xid-79
        effect: NoSchedule
    circuit_breaker:
      max_fraction: 0.1
      max_nodes: 10
  register: quarantined

- name: Label a node for the repair team
  dsxos.cluster.node_quarantine:
    nodes: [gpu-node-17]
    action: label
    reason: RMA ticket 1234
    labels:
      dsxos.io/repair: rma-1234

- name: Give the nodes back, keeping any cordon or taint someone else set
  dsxos.cluster.node_quarantine:
    nodes: [gpu-node-17, gpu-node-18]
    action: release
    reason: GPU replaced, DCGM level 3 passed
"""

RETURN = r"""
nodes:
  description:
    - One entry per node with C(node), C(action), C(status) (C(changed), C(ok), C(missing), C(refused), C(failed)), C(changed),
      C(message), C(unschedulable), C(taints), C(state) (value of C(dsxos.io/quarantine)), C(reason) (the recorded reason),
      C(attempts) (reads, more than 1 after conflicts), C(error), C(history_entry) (the entry written) and C(response_lost)
      (true when the API server applied this task's patch but its answer was lost; found by the task's operation id).
  returned: always
  type: list
  elements: dict
changed_nodes:
  description: Nodes that changed (or would change in check mode).
  returned: always
  type: list
  elements: str
missing_nodes:
  description: Nodes that do not exist.
  returned: always
  type: list
  elements: str
refused_nodes:
  description: Nodes the circuit breaker refused (left untouched).
  returned: always
  type: list
  elements: str
failed_nodes:
  description: Nodes whose update failed (RBAC refusal, conflicts beyond O(conflict_retries), exhausted retries, ...).
  returned: always
  type: list
  elements: str
circuit_breaker:
  description: The breaker's decision (C(allowed), C(admitted), C(refused), C(limit), C(gpu_nodes), C(active_count), C(state)), when consulted.
  returned: when the breaker was consulted
  type: dict
api_calls:
  description: API requests sent, by verb and resource.
  returned: always
  type: dict
  sample: {"get nodes": 2, "patch nodes": 2}
elapsed_s:
  description: Wall time of the module's work in seconds.
  returned: always
  type: float
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import NODE_QUARANTINE


def main() -> None:
    module = AnsibleModule(argument_spec=NODE_QUARANTINE.spec, supports_check_mode=True, **NODE_QUARANTINE.module_options)
    finish(module, call_entry(NODE_QUARANTINE, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
