#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: sentinel_plan
short_description: Decide what the sentinel does about GPU alert events (pure policy; optionally reads the nodes first)
version_added: "0.1.0"
description:
  - Turns normalized alert events (C(node), C(gpu), C(uuid), C(code), C(fault_class), C(action), C(status),
    C(fingerprint), C(starts_at), C(ends_at), C(pods), C(alertname), C(severity), C(labels)) into one decision per node,
    grouped into batches by action, using a ruleset and what is recorded on each node (O(node_state), the C(nodes) return
    value of M(dsxos.cluster.node_incident) with O(dsxos.cluster.node_incident#module:action=get)).
  - Rules are tried in ascending C(priority) (ties in list order); the first rule whose C(match) fits an alert decides
    its action. Per node the decisive alert is the one whose rule has the lowest priority (ties go to the stronger action).
  - Safety rules no ruleset overrides. A node labelled C(dsxos.io/sentinel=disabled) is only recorded. An alert of an
    unknown fault class is only recorded. An C(application) alert never condemns a node on its own; only a rate rule
    (C(rate) with C(count) alerts within C(window_s) seconds, counting the alerts recorded on the node) may act on it.
    A stale alert (started before the earliest alert of the node's open incident, and not part of it) or a replayed one
    (already handled by an ended incident) is skipped. A node with O(attempt_cap) remediation attempts within
    O(attempt_window_s) gets a C(needs_attention) decision instead of another remediation.
  - With O(destructive=false) (the default) a decision keeps only the quarantine; the drain, remediation and
    recertification it would have done are listed in C(held_back).
  - Malformed events (a node name that is not an RFC 1123 subdomain as a whole string, a bad time, fingerprint, GPU
    index, pod name, ...) are rejected one by one and reported in C(rejected); they never fail the task. A malformed rule
    fails the task naming the rule and field.
  - The module writes nothing and returns the same result in check mode. It reads nothing unless O(read_state=true).
  - Runs on the controller (an action plugin calls the same code in the controller process; no module is shipped).
author:
  - dsxos.cluster contributors (@dsxos)
extends_documentation_fragment:
  - dsxos.cluster.sentinel_policy
  - dsxos.cluster.k8s_auth
options:
  node_state:
    description: Per node, what is recorded on it (the C(nodes) return value of M(dsxos.cluster.node_incident) C(get)).
      A node missing here is taken as existing with nothing recorded.
    type: dict
    default: {}
  read_state:
    description:
      - Read what is recorded on the nodes the events name in this same call (the C(nodes) of
        M(dsxos.cluster.node_incident) C(get)), with the O(kubeconfig) and the other connection options; instead of
        O(node_state). Bad input fails before anything is read.
      - Without it the module reads nothing and ignores the connection options.
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
- name: Read what is recorded on the alerting nodes and decide, in one task
  dsxos.cluster.sentinel_plan:
    events: "{{ sentinel_events }}"
    read_state: true
    kubeconfig: /etc/dsxos/kubeconfig
  register: plan

- name: Or read first (any other way) ...
  dsxos.cluster.node_incident:
    action: get
    nodes: "{{ sentinel_events | map(attribute='node') | unique | list }}"
  register: state

- name: ... and decide from node_state (a plain function of its inputs)
  dsxos.cluster.sentinel_plan:
    events: "{{ sentinel_events }}"
    node_state: "{{ state.nodes }}"
    destructive: true
    rules:
      - name: fallen-off-bus
        match: {fault_class: [fallen-off-bus]}
        action: reboot
        priority: 10
      - name: app-storm
        match: {fault_class: [application]}
        rate: {count: 5, window_s: 600}
        action: quarantine
        priority: 90
  register: plan
"""

RETURN = r"""
decisions:
  description:
    - One per node with valid firing alerts - C(node), C(kind) (C(open), C(resume), C(join), C(needs_attention),
      C(record)), C(action), C(rule), C(incident) (id; deterministic for a new incident), C(reason), C(state),
      C(events) (the alerts of the incident), C(join_events), C(record_events), C(gpus), C(pods), C(drain_pods) (what a partial
      drain removes - C(pods) when every faulty GPU has its pods named, else empty for every GPU pod), C(dry_run),
      C(steps) (C(quarantine), C(drain) none/partial/full, C(remediate), C(recertify)), C(held_back), C(acts).
  returned: success
  type: list
  elements: dict
acting:
  description: The decisions that change a node (C(acts) true).
  returned: success
  type: list
  elements: dict
batches:
  description: Nodes of the acting decisions by action.
  returned: success
  type: dict
  sample: {reboot: [gpu-3], quarantine: [gpu-7, gpu-9]}
records:
  description: Per node, the alerts that are only recorded (C(node), C(reason), C(events)).
  returned: success
  type: list
  elements: dict
releases:
  description:
    - Per node, the resolved alerts that belong to its open incident (C(node), C(incident), C(state), C(events)).
    - Also, with C(unfinished=true), those of an incident a release closed without releasing its quarantine (the node
      still cordoned with the reason naming that incident); the release finishes it.
  returned: success
  type: list
  elements: dict
skipped:
  description: Alerts not acted on, each with C(node), C(fingerprint), C(starts_at), C(verdict) (C(stale), C(replay),
    C(missing), C(ended), C(not-ours), ...) and C(reason).
  returned: success
  type: list
  elements: dict
rejected:
  description: Malformed events with their C(index), C(reason) and a bounded C(event) summary.
  returned: success
  type: list
  elements: dict
counts:
  description: C(events), C(rejected), C(skipped), C(releases), C(acting), C(recorded), C(joined), C(dry_run).
  returned: success
  type: dict
nodes:
  description: The nodes named by valid events (what M(dsxos.cluster.node_incident) C(get) should read).
  returned: success
  type: list
  elements: str
rules:
  description: The validated ruleset in the order it is tried.
  returned: success
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import SENTINEL_PLAN


def main() -> None:
    module = AnsibleModule(argument_spec=SENTINEL_PLAN.spec, supports_check_mode=True, **SENTINEL_PLAN.module_options)
    finish(module, call_entry(SENTINEL_PLAN, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
