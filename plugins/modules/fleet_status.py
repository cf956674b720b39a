#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: fleet_status
short_description: Report the GPU fleet's quarantines, incidents, availability and useful-work volume
version_added: "0.1.0"
description:
  - Reads the Nodes (their quarantine record C(dsxos.io/quarantine-prior), quarantine history, open incident
    C(dsxos.io/incident), incident history and remediation attempts), the Pods and the Jobs, and builds one report over
    the window O(window_s) ending at O(now).
  - Who is quarantined, why, since when and in which incident state; per node and for the fleet the time to quarantine
    (first alert C(starts_at) to quarantined), the time to return (MTTR, quarantined to returned), the availability (share
    of node-time not quarantined) and the remediation attempts.
  - The useful-work measure - GPU-hours of work that completed successfully (Succeeded pods, GPU request times run time)
    against GPU-hours lost to faults (Failed pods on a node while an incident of it was active) and to quarantine
    (quarantined node-time times the node's GPUs). Every formula is in docs/operate-status.md of the collection.
  - With O(dest_dir), writes C(<basename>.json), C(<basename>.md) and C(<basename>.html) (inline SVG charts, no script,
    no external asset), each atomically and only when its content changed. The report holds no generation time, so
    a rerun with the same O(now) and the same cluster changes nothing.
  - Read-only for the cluster; supports check mode (files are compared, not written).
author:
  - dsxos.cluster contributors (@dsxos)
extends_documentation_fragment:
  - dsxos.cluster.k8s_auth
options:
  window_s:
    description: Length of the window in seconds (60 to 31622400).
    type: float
    default: 604800.0
  now:
    description:
      - End of the window, an RFC 3339 time such as C(2026-03-08T00:00:00Z).
      - Default the current time rounded up to the minute, so the window holds everything recorded so far and reruns
        within the same minute write nothing new (a quarantine still open is counted to the end of the window).
    type: str
  dest_dir:
    description: Directory to write the report files into (created when missing); unset returns the report only.
    type: path
  formats:
    description: Which files to write.
    type: list
    elements: str
    choices: [json, markdown, html]
    default: [json, markdown, html]
  basename:
    description: File name stem of the report files (letters, digits, C(.), C(_), C(-)).
    type: str
    default: fleet-status
  label_selector:
    description: Only nodes matching this label selector are reported ("" = every node).
    type: str
    default: ""
  namespaces:
    description: Namespaces whose Pods and Jobs are counted ([] = every namespace).
    type: list
    elements: str
    default: []
  gpu_resource:
    description: The extended resource counted as GPUs (pod requests, node allocatable).
    type: str
    default: nvidia.com/gpu
  buckets:
    description: Number of equal time buckets the window is cut into for the charts and the C(timeline) (1 to 500).
    type: int
    default: 24
attributes:
  check_mode:
    description: Can run in check mode; the report is built and the files that would change are named, nothing is written.
    support: full
  diff_mode:
    description: No diff is shown.
    support: none
  action_group:
    description: Use C(group/dsxos.cluster.k8s) in C(module_defaults) to set defaults for this module.
    support: full
    membership: [dsxos.cluster.k8s]
"""

EXAMPLES = r"""
- name: Fleet status of the last 7 days, written as JSON, Markdown and HTML
  dsxos.cluster.fleet_status:
    kubeconfig: ~/.kube/config
    dest_dir: /var/lib/dsxos/status
  register: fleet

- name: Show the useful-work measure
  ansible.builtin.debug:
    msg: "{{ fleet.summary.gpu_hours.succeeded }} GPU-hours completed, useful fraction {{ fleet.summary.useful_fraction }}"

- name: One day of one namespace, at a fixed time (reproducible)
  dsxos.cluster.fleet_status:
    window_s: 86400
    now: "2026-03-08T00:00:00Z"
    namespaces: [training]
    formats: [json]
    dest_dir: /tmp/fleet
"""

RETURN = r"""
report:
  description: The whole report - C(window), C(fleet), C(work), C(quarantined), C(nodes), C(incidents), C(timeline), C(problems).
  returned: always
  type: dict
summary:
  description: The fleet numbers without per-node rows (what C(set_stats) publishes for AWX).
  returned: always
  type: dict
markdown:
  description: The report as Markdown.
  returned: always
  type: str
files:
  description: Path of each written format (empty without O(dest_dir)).
  returned: always
  type: dict
changed_files:
  description: The files whose content changed (in check mode, would change).
  returned: always
  type: list
  elements: str
api_calls:
  description: HTTP attempts per C(<verb> <resource>).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import FLEET_STATUS


def main() -> None:
    module = AnsibleModule(argument_spec=FLEET_STATUS.spec, supports_check_mode=True, **FLEET_STATUS.module_options)
    finish(module, call_entry(FLEET_STATUS, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
