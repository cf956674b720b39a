#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: node_incident
short_description: Open, advance, join, resolve, close and read sentinel incidents recorded on Kubernetes nodes
version_added: "0.1.0"
description:
  - A node has at most one open incident, recorded in the annotation C(dsxos.io/incident) (id, state, remediation
    action, rule, reason, the alerts that are part of it with their C(starts_at), GPUs, attempts, steps with times,
    last error) and the label C(dsxos.io/incident-state). Ended incidents go to C(dsxos.io/incident-history) (bounded),
    remediation attempts to C(dsxos.io/sentinel-attempts), alerts that were only recorded to C(dsxos.io/sentinel-events).
  - States - C(quarantined) -> C(draining) -> C(drained) -> C(remediating) -> C(recertifying) -> C(returned) or
    C(needs-attention). C(returned) ends the incident (O(action=close) with O(outcome=returned), only from
    C(recertifying)); O(outcome=released) ends it from any state.
  - Every write reads the node, plans the change, and sends ONE strategic merge patch carrying the node's
    C(resourceVersion); on HTTP 409 the node is read and the change planned again (O(conflict_retries)). A change emits a
    C(core/v1) Event on the Node (reason C(SentinelQuarantined), C(SentinelDraining), C(SentinelDrained),
    C(SentinelRemediating), C(SentinelRecertifying), C(SentinelReturned), C(SentinelNeedsAttention), C(SentinelReleased),
    C(SentinelJoined), C(SentinelResolved)); Events are best effort (a refused one is reported in C(event_error)).
  - Idempotent - opening the open incident again, advancing to the state it is in, or closing an ended incident
    changes nothing. An operation that names an incident which has ended does nothing and returns C(ended=true), so a run
    started for an incident never acts once it is over. An alert that is stale (started before the open incident's earliest
    alert and not part of it) or a replay (already handled by an ended incident) never opens or joins an incident.
  - O(action=advance) with O(state=remediating) and O(attempt=true) records a remediation attempt; when the node already has
    O(attempt_cap) attempts within O(attempt_window_s) the incident goes to C(needs-attention) instead (C(capped=true)).
  - Names are validated as RFC 1123 subdomains (whole string) before any API call.
author:
  - dsxos.cluster contributors (@dsxos)
extends_documentation_fragment:
  - dsxos.cluster.k8s_auth
options:
  action:
    description:
      - C(get) returns what is recorded on O(nodes); C(list) returns the quarantined nodes and the nodes with an open
        incident (rows and Markdown); C(open), C(advance), C(join), C(resolve), C(close), C(record) write one O(node).
    type: str
    required: true
    choices: [get, list, open, advance, join, resolve, close, record]
  node:
    description: The node written by a write action.
    type: str
  nodes:
    description: Nodes to read with O(action=get).
    type: list
    elements: str
    default: []
  incident:
    description: Incident id (O(action=open), O(action=advance), O(action=close); optional for O(action=join)).
    type: str
  state:
    description: Target state of O(action=advance); initial state of O(action=open) (C(quarantined) or C(needs-attention)).
    type: str
    choices: [quarantined, draining, drained, remediating, recertifying, returned, needs-attention]
  remediation:
    description: The incident's remediation action (O(action=open)); with O(attempt), the action attempted.
    type: str
  rule:
    description: The policy rule that decided (O(action=open)).
    type: str
  reason:
    description: Why the incident is opened (O(action=open); also the node's quarantine reason). Control characters
      (newlines included) become spaces, runs of whitespace one space; at most 1024 characters are kept.
    type: str
  detail:
    description: What this step says (recorded in the incident's steps and the Event). Multi-line text is folded into
      one line like O(reason).
    type: str
  error:
    description: An error to record as the incident's C(last_error) (O(action=advance)). Multi-line text (a command's
      stderr) is folded into one line like O(reason).
    type: str
  events:
    description: Alert events (at least C(fingerprint) and C(starts_at)) for O(action=open), O(action=join),
      O(action=resolve) and O(action=record).
    type: list
    elements: dict
    default: []
  gpus:
    description: GPU indexes of the incident (O(action=open)).
    type: list
    elements: int
    default: []
  outcome:
    description: How the incident ends (O(action=close)).
    type: str
    choices: [returned, released]
  attempt:
    description: With O(action=advance) and O(state=remediating), count a remediation attempt (checked against the cap).
    type: bool
    default: false
  attempt_cap:
    description: Remediation attempts per node within O(attempt_window_s) before the incident needs attention.
    type: int
    default: 3
  attempt_window_s:
    description: Window of O(attempt_cap) in seconds.
    type: float
    default: 86400.0
  label_selector:
    description: With O(action=list), only nodes that also match this selector.
    type: str
    default: ""
  lock_namespace:
    description:
      - With O(action=list), the namespace of the node locks (M(dsxos.cluster.node_lock)); each row then says which run
        holds the node (C(locked_by)) and RV(release_due) leaves out the locked nodes. Empty - locks are not read.
    type: str
    default: ""
  actor:
    description: Who acts (recorded in the incident and the Events); default C($DSXOS_ACTOR) or C(user@host).
    type: str
  emit_events:
    description: Emit a Kubernetes Event for every change.
    type: bool
    default: true
  event_namespace:
    description: Namespace of the Events (Node Events conventionally live in C(default)).
    type: str
    default: default
  history_limit:
    description: Ended incidents kept in C(dsxos.io/incident-history).
    type: int
    default: 20
  conflict_retries:
    description: How often a write is planned again after a 409.
    type: int
    default: 5
  require_all_resolved:
    description:
      - With O(action=close), close the incident only when every one of its alerts has resolved; otherwise nothing is
        written and RV(unresolved) names the alerts that still fire.
      - The check and the write use the same read of the node (the write carries its resourceVersion), so an alert
        joined to the incident after a release decided is never closed with it. Automatic releases set it.
    type: bool
    default: false
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
- name: Open the incident the policy decided (after the quarantine)
  dsxos.cluster.node_incident:
    action: open
    node: gpu-node-17
    incident: sen-3f2a9c1b0d4e
    remediation: reboot
    rule: fallen-off-bus
    reason: "sentinel incident sen-3f2a9c1b0d4e: reboot (rule fallen-off-bus): XidCritical fallen-off-bus GPU 3 code 79"
    events:
      - {fingerprint: 8d1f0c2a9b7e6d5c, starts_at: "2026-03-01T10:00:00Z"}
    gpus: [3]

- name: Start a remediation attempt (needs-attention at the cap)
  dsxos.cluster.node_incident:
    action: advance
    node: gpu-node-17
    incident: sen-3f2a9c1b0d4e
    state: remediating
    attempt: true
    remediation: reboot
  register: step

- name: Return the node after recertification
  dsxos.cluster.node_incident:
    action: close
    node: gpu-node-17
    incident: sen-3f2a9c1b0d4e
    outcome: returned
    message: recertified

- name: What is quarantined, as JSON rows and Markdown
  dsxos.cluster.node_incident:
    action: list
  register: status
"""

RETURN = r"""
node:
  description: The node written.
  returned: write actions
  type: str
incident:
  description: The open incident after the operation (null when none is open or it just ended).
  returned: write actions
  type: dict
state:
  description: The open incident's state after the operation.
  returned: write actions
  type: str
opened:
  description: Whether O(action=open) opened the incident (false when it was open already or refused).
  returned: when action is open
  type: bool
conflict:
  description: The id of another open incident that kept O(action=open) from opening a new one.
  returned: when another incident is open
  type: str
ended:
  description: Whether the named incident has ended (the operation then did nothing).
  returned: advance, close
  type: bool
outcome:
  description: How the incident ended.
  returned: when it has ended
  type: str
closed:
  description: The incident as it was when O(action=close) ended it.
  returned: when action is close and it changed
  type: dict
capped:
  description: Whether the attempt cap sent the incident to needs-attention.
  returned: when action is advance
  type: bool
joined:
  description: Fingerprints added to the open incident.
  returned: open, join
  type: list
  elements: str
stale:
  description: Alerts refused as stale or replayed (C(fingerprint), C(starts_at), C(verdict), C(reason)).
  returned: open, join
  type: list
  elements: dict
resolved:
  description: Fingerprints of the open incident marked resolved.
  returned: when action is resolve
  type: list
  elements: str
ignored:
  description: Resolved alerts that belong to no open incident of ours (C(verdict) C(stale), C(ended) or C(not-ours)).
  returned: when action is resolve
  type: list
  elements: dict
all_resolved:
  description: Whether every alert of the open incident has resolved.
  returned: when action is resolve, or close with O(require_all_resolved) refused
  type: bool
unresolved:
  description: Fingerprints of the alerts that still fire, when O(require_all_resolved) kept O(action=close) from closing.
  returned: when action is close with O(require_all_resolved) and an alert still fires
  type: list
  elements: str
recorded:
  description: Fingerprints recorded for rate rules.
  returned: when action is record
  type: list
  elements: str
event:
  description: The Kubernetes Event emitted (C(reason), C(type), C(message)).
  returned: when a change emitted one
  type: dict
event_error:
  description: Why the Event could not be created (the change itself stands).
  returned: when the Event was refused
  type: dict
nodes:
  description: With O(action=get), per node C(exists), C(labels), C(unschedulable), C(incident), C(history), C(attempts),
    C(recent), C(quarantine) (C(state), C(reason), C(since)), C(opted_out), C(all_resolved) (the open incident has alerts and
    every one resolved), C(unfinished_release) (the id of an incident a release closed without releasing its quarantine,
    the node still quarantined with the reason naming it and no incident open; else null), C(release_due) (see
    RV(release_due), for this node or null), C(orphan_quarantine) (the id a sentinel quarantine names when no such
    incident was ever recorded - the run died between its cordon and the incident; released by hand only); a node whose incident
    annotation cannot be parsed has C(unreadable=true) and C(error) instead (the policy skips only that node). With O(action=list), rows of C(node),
    C(quarantine), C(incident), C(state) (C(release-unfinished) for an unfinished release, its C(incident) the closed one),
    C(release_due), C(orphan_incident) (see C(orphan_quarantine) above), C(action), C(reason), C(since), C(updated), C(attempts),
    C(last_error), C(unschedulable), and with
    O(lock_namespace) C(locked_by) (C(holder), C(purpose), C(reason), C(expires_at) of the run holding the node, or null;
    a locked node's C(release_due) is null) and C(stalled) (draining, remediating or recertifying while no run holds the
    node - its run died).
  returned: get, list
  type: raw
counts:
  description: With O(action=list), rows per state.
  returned: when action is list
  type: dict
release_due:
  description:
    - With O(action=list), the releases no alert will bring any more, as C(node), C(incident), C(unfinished).
    - C(unfinished=true) - a release closed the incident and died before releasing its quarantine.
    - C(unfinished=false) - the open incident's alerts all resolved and it waits for a release (state C(quarantined) or
      C(drained); a release died before its close, or the resolved alerts were marked while another run held the node).
    - Never an incident in the middle of its steps, one that needs attention, or a node opted out of the sentinel.
    - With O(lock_namespace), a node another run holds now is left out (that run releases it when it ends).
    - The sweep of a release run (role variable C(sentinel_release_sweep)) finishes them.
  returned: when action is list
  type: list
  elements: dict
markdown:
  description: With O(action=list), the rows as a Markdown table.
  returned: when action is list
  type: str
msg:
  description: One line saying what happened.
  returned: write actions
  type: str
api_calls:
  description: HTTP requests sent, by C(verb resource).
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import NODE_INCIDENT


def main() -> None:
    module = AnsibleModule(argument_spec=NODE_INCIDENT.spec, supports_check_mode=True, **NODE_INCIDENT.module_options)
    finish(module, call_entry(NODE_INCIDENT, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
