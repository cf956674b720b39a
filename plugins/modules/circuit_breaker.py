#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: circuit_breaker
short_description: Limit how many GPU nodes automation may quarantine within a sliding window
version_added: "0.1.0"
description:
  - Keeps its state in a ConfigMap (O(namespace)/O(name), default C(dsxos-system/dsxos-circuit-breaker)) - C(status)
    (C(closed) or C(open)), C(reason), C(openedAt), C(entries) (admitted quarantines with node, time, reason, actor) and
    C(resetAt) - so every controller and every rerun sees the same count. Writes carry the ConfigMap's C(resourceVersion);
    a concurrent writer causes a re-read, never a lost entry.
  - "The limit per window is C(min(max_nodes, max(1, floor(max_fraction * GPU nodes)))), GPU nodes being the nodes that
    match O(gpu_node_selector)."
  - O(action=check) says whether O(nodes) would be admitted now (writes nothing). O(action=record) admits them atomically -
    a node already counted in the window passes again for free, a new node passes while the count stays within the limit,
    and the first node beyond it OPENS the breaker; an open breaker refuses every new node until O(action=reset).
  - O(action=reset) closes the breaker and drops every entry up to now; those entries are never counted again.
  - O(action=status) returns the state, the current count and the limit.
  - Releases and uncordons never need the breaker; M(dsxos.cluster.node_quarantine) and M(dsxos.cluster.node_drain) consult
    it for new quarantines when given their C(circuit_breaker) option.
author:
  - dsxos.cluster contributors (@dsxos)
extends_documentation_fragment:
  - dsxos.cluster.k8s_auth
  - dsxos.cluster.circuit_breaker.settings
options:
  action:
    description: What to do.
    type: str
    choices: [check, record, reset, status]
    default: status
  nodes:
    description: Nodes to check or record (O(action=check) and O(action=record)).
    type: list
    elements: str
    default: []
  reason:
    description: Recorded with each admitted node, or with the reset.
    type: str
  actor:
    description: Who acts. Default is C($DSXOS_ACTOR), else C(<user>@<host>).
    type: str
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
- name: Would quarantining these nodes stay within the limits?
  dsxos.cluster.circuit_breaker:
    action: check
    nodes: "{{ failing_nodes }}"
  register: breaker

- name: Admit them (atomic with other controllers)
  dsxos.cluster.circuit_breaker:
    action: record
    nodes: "{{ failing_nodes }}"
    reason: "XID 79 storm"
    max_fraction: 0.05
    max_nodes: 20

- name: Close the breaker after the incident review (old entries are never counted again)
  dsxos.cluster.circuit_breaker:
    action: reset
    reason: "incident 42 reviewed: faulty PDU, nodes repaired"
"""

RETURN = r"""
allowed:
  description: Whether every node of O(nodes) was (or would be) admitted.
  returned: action is check or record
  type: bool
admitted:
  description: Nodes admitted (including nodes already counted in the window).
  returned: action is check or record
  type: list
  elements: str
refused:
  description: Refused nodes and why (the breaker's reason, the limit and the count).
  returned: action is check or record
  type: dict
limit:
  description: Current limit per window.
  returned: action is check, record or status
  type: int
gpu_nodes:
  description: Number of GPU nodes (nodes matching O(gpu_node_selector)).
  returned: action is check, record or status
  type: int
active_count:
  description: Distinct nodes counted in the current window.
  returned: action is check, record or status
  type: int
state:
  description: C(status), C(reason), C(entries), C(reset_at), C(opened_at), C(configmap).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import CIRCUIT_BREAKER


def main() -> None:
    module = AnsibleModule(argument_spec=CIRCUIT_BREAKER.spec, supports_check_mode=True, **CIRCUIT_BREAKER.module_options)
    finish(module, call_entry(CIRCUIT_BREAKER, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
