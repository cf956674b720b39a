#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: node_lock
short_description: Take, renew or release a per-node lock held as a Kubernetes Lease
version_added: "0.1.0"
description:
  - Serializes automation on one node (drain, quarantine, repair) across playbook runs, controllers and operators with a
    C(coordination.k8s.io/v1) Lease named C(dsxos-node-lock-<node>) in O(namespace) (created when missing); for a node name
    over 236 characters the name is truncated and ends with a SHA-256 hash (annotation C(dsxos.io/node) keeps the full name).
  - The Lease records C(holderIdentity), C(leaseDurationSeconds), C(acquireTime), C(renewTime), C(leaseTransitions) and the
    annotations C(dsxos.io/lock-purpose), C(dsxos.io/lock-reason), C(dsxos.io/previous-holder), C(dsxos.io/released-by),
    C(dsxos.io/released-at).
  - Writes use the Lease's C(resourceVersion); when another writer got there first (HTTP 409) the Lease is read again and
    the decision made again, so two runs racing for a free lock never both get it.
  - O(state=acquire) takes a free lock (absent, released or expired; an expired holder is recorded as the previous holder).
    When O(holder) already holds it, the lease is renewed - a write that moves C(renewTime), so the task reports C(changed).
    When someone else holds an unexpired lease, the task waits up to O(wait_timeout_s) and then fails naming the holder,
    the expiry, the purpose and the reason.
  - O(state=renew) moves C(renewTime) forward; it fails when O(holder) does not hold the lock.
  - O(state=release) clears C(holderIdentity) when O(holder) holds the lock. A lock that is absent, not held or held by
    someone else is left alone (C(changed=false), with a message), unless O(force=true), which breaks another holder's lock
    and records who did it.
  - The node name must be a valid RFC 1123 subdomain; the Node object itself is not required to exist.
author:
  - dsxos.cluster contributors (@dsxos)
extends_documentation_fragment:
  - dsxos.cluster.k8s_auth
options:
  node:
    description: Name of the node to lock.
    type: str
    required: true
  holder:
    description: Identity of whoever takes the lock, for example C(playbook-drain@bastion-1) or a controller pod name.
    type: str
    required: true
  state:
    description: What to do with the lock.
    type: str
    choices: [acquire, renew, release]
    default: acquire
  namespace:
    description: Namespace of the Lease objects.
    type: str
    default: dsxos-system
  duration_s:
    description: Lease duration in seconds; the lock expires this long after the last acquire or renew.
    type: int
    default: 900
  purpose:
    description: What the lock is for (stored as an annotation), for example C(drain).
    type: str
    default: ""
  reason:
    description: Why (stored as an annotation), for example the alert that triggered the action.
    type: str
    default: ""
  wait_timeout_s:
    description: With O(state=acquire), how long to wait for another holder's lease to end before failing. V(0) fails at once.
    type: float
    default: 0
  wait_for_purposes:
    description:
      - With O(state=acquire), seconds to wait (instead of O(wait_timeout_s), when longer) for a holder whose lease names
        one of these purposes, a mapping of lease purpose to seconds, for example C(sentinel-release) to V(60).
      - For short operations worth waiting for; the sentinel's runs wait for a C(sentinel-release) holder but not for
        another remediation run. The wait follows the CURRENT holder, so a lock that passes to a long holder meanwhile
        is not waited for. Such a holder is looked at every 0.5 s (or O(poll_interval_s) when shorter).
    type: dict
    default: {}
  poll_interval_s:
    description: How often to look at the Lease again while waiting (for a holder named by O(wait_for_purposes), at most 0.5 s).
    type: float
    default: 2.0
  force:
    description: With O(state=release), break the lock even when someone else holds it.
    type: bool
    default: false
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Lock the node before draining it (wait up to 5 minutes for another run to finish)
  dsxos.cluster.node_lock:
    node: "{{ node_name }}"
    holder: "drain-playbook@{{ inventory_hostname }}"
    purpose: drain
    reason: "XID 79 on GPU 3"
    duration_s: 1800
    wait_timeout_s: 300

- name: Keep the lock while the drain runs
  dsxos.cluster.node_lock:
    node: "{{ node_name }}"
    holder: "drain-playbook@{{ inventory_hostname }}"
    state: renew
    duration_s: 1800

- name: Release it
  dsxos.cluster.node_lock:
    node: "{{ node_name }}"
    holder: "drain-playbook@{{ inventory_hostname }}"
    state: release
"""

RETURN = r"""
action:
  description: What happened - C(created), C(acquired), C(taken_over), C(renewed), C(released), C(force_released), or for no-ops
    C(absent), C(not_held), C(held_by_other).
  returned: success
  type: str
  sample: taken_over
held:
  description: Whether O(holder) holds an unexpired lock after the task.
  returned: success
  type: bool
holder:
  description: Holder of the lock after the task (null when released).
  returned: success
  type: str
previous_holder:
  description: Holder before the task (the expired holder on a take-over).
  returned: when the lease existed
  type: str
expires_at:
  description: When the lock expires unless renewed (RFC 3339, UTC); null when not held.
  returned: success
  type: str
lease:
  description: The Lease as seen after the task - C(exists), C(name), C(namespace), C(holder), C(acquire_time), C(renew_time),
    C(lease_duration_s), C(lease_transitions), C(expires_at), C(expired), C(annotations), C(resource_version).
  returned: success
  type: dict
lease_name:
  description: Name of the Lease.
  returned: success
  type: str
  sample: dsxos-node-lock-gpu-node-17
waited_s:
  description: Seconds spent waiting for another holder (O(state=acquire)).
  returned: when state is acquire
  type: float
message:
  description: One line saying what happened.
  returned: always
  type: str
api_calls:
  description: HTTP requests sent, by C(verb resource).
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import NODE_LOCK


def main() -> None:
    module = AnsibleModule(argument_spec=NODE_LOCK.spec, supports_check_mode=True, **NODE_LOCK.module_options)
    finish(module, call_entry(NODE_LOCK, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
