#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: node_certification
short_description: Aggregate certification results per node and label Kubernetes nodes with the verdict
version_added: "0.1.0"
description:
  - Turns what the certification categories returned into one verdict per node (C(passed), C(failed) or C(excluded))
    with reasons, and into the report document that M(dsxos.cluster.certify_report) renders.
  - A failed (or inconclusive) category fails the node; a node excluded from a category (unreachable, cordoned,
    not Ready, not run) is excluded; otherwise it passed. Skipped categories do not count.
  - With O(label=true) it labels the Kubernetes nodes - C(dsxos.io/certification) (passed, failed or excluded),
    C(dsxos.io/certified-at) and C(dsxos.io/certification-valid-until) (unix seconds) - and sets the annotation
    C(dsxos.io/certification-reason) (JSON, status and reason per category).
  - Labelling only patches labels and annotations; it never cordons, taints or drains a node. It is idempotent - a node
    that already carries the same values is not patched - so give the same O(certified_at) to repeat a run.
author:
  - dsxos.cluster contributors (@dsxos)
extends_documentation_fragment:
  - dsxos.cluster.k8s_auth
options:
  nodes:
    description: Every target node (host) of the certification, including unreachable ones.
    type: list
    elements: str
    required: true
  categories:
    description: The categories requested; a node without a result for one of them is excluded from it.
    type: list
    elements: str
    choices: [gpu-health, dcgm-diag, nccl-loopback, nccl-all-reduce, nccl-all-gather, nccl-alltoall, training-goodput]
    default: []
  results:
    description:
      - "Per-host module results by category, for example C({gpu-health: {host1: <gpu_health result>}})."
      - Registered results are understood as they are (C(unreachable), C(skipped), C(failed), C(verdict), C(passed), C(ok),
        C(result), C(reasons), C(busbw)); a result without a usable verdict fails the node with that reason.
    type: dict
    default: {}
  nccl:
    description: The result of M(dsxos.cluster.certify_nccl) (one category per collective, for example C(nccl-all-reduce)).
    type: dict
  excluded:
    description: Nodes left out of the whole certification, with the reason (for example C(unreachable)).
    type: dict
    default: {}
  platform:
    description: Platform of the report (C(name), C(service), C(kubernetes_version)).
    type: dict
  gpu:
    description: GPU of the report (C(product), C(count_per_node)).
    type: dict
  started:
    description: Start of the certification (unix seconds or ISO 8601).
    type: raw
  finished:
    description: End of the certification (unix seconds or ISO 8601); the default for O(certified_at).
    type: raw
  durations:
    description: Durations for the report (C(total_s), C(per_category), C(ansible_overhead_s)).
    type: dict
  loopback_thresholds:
    description:
      - Thresholds config (as for M(dsxos.cluster.certify_nccl)) whose C(relative) policy judges the C(nccl-loopback) bus
        bandwidth of each host against the other hosts (median/MAD); default the built-in policy.
    type: dict
  label:
    description: Label the Kubernetes nodes with their verdict.
    type: bool
    default: false
  certified_at:
    description: Unix time written to C(dsxos.io/certified-at); default O(finished), else now.
    type: int
  valid_for_s:
    description: Validity of the certification in seconds (C(dsxos.io/certification-valid-until) = certified-at + this).
    type: int
    default: 604800
  renew_fraction:
    description:
      - A node that already carries the same outcome (verdict label and every category's status) keeps its
        certification of record (certified-at, valid-until, reasons) while more than this share of O(valid_for_s)
        is left on it, so a rerun that certifies the same thing relabels nothing. When less is left, the run renews it.
      - V(0) relabels on every run (a new certified-at each time).
    type: float
    default: 0.5
  ignore_missing:
    description: Do not fail when a node to label does not exist in the cluster.
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
- name: Aggregate and label the Kubernetes nodes
  dsxos.cluster.node_certification:
    nodes: "{{ certify_nccl_result.nodes | list }}"
    categories: [gpu-health, nccl-all-reduce]
    results:
      gpu-health: "{{ gpu_health_by_host }}"
    nccl: "{{ certify_nccl_result }}"
    started: "{{ certify_started }}"
    finished: "{{ certify_finished }}"
    label: true
    valid_for_s: 604800
  register: certification
"""

RETURN = r"""
report:
  description: The certification report (the O(dsxos.cluster.certify_report#module:report) input) with C(nodes) (verdict,
    reasons, categories), C(categories) (bandwidth by size, per node, threshold), C(failed_groups), C(link_faults),
    C(isolation), C(durations), C(platform), C(gpu), C(started), C(finished).
  returned: success
  type: dict
summary:
  description: C(result) (PASSED, FAILED or INCOMPLETE), node counts C(passed), C(failed), C(excluded), C(faulty_links),
    C(failed_nodes), C(excluded_nodes) and C(reasons) per node that did not pass.
  returned: success
  type: dict
labels:
  description: Per node C(node), C(verdict), C(labels), C(status) (ok, changed, missing, failed), C(changed) and the C(patch) sent.
  returned: when O(label=true)
  type: list
  elements: dict
changed_nodes:
  description: Nodes whose labels changed (or would change in check mode).
  returned: when O(label=true)
  type: list
  elements: str
missing_nodes:
  description: Nodes that do not exist in the cluster.
  returned: when O(label=true)
  type: list
  elements: str
failed_nodes:
  description: Nodes whose labels could not be written.
  returned: when O(label=true)
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.entry import NODE_CERTIFICATION
from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish


def main() -> None:
    module = AnsibleModule(argument_spec=NODE_CERTIFICATION.spec, supports_check_mode=True, **NODE_CERTIFICATION.module_options)
    finish(module, call_entry(NODE_CERTIFICATION, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
