#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: certify_report
short_description: Write the GPU cluster certification report as JSON, JUnit XML, Markdown and HTML, and optionally a ConfigMap
version_added: "0.1.0"
description:
  - Validates the results of a certification run (per-node verdicts with reasons, per-category bandwidth, thresholds, failed
    groups, the isolation trace, link faults, durations), computes the totals and the overall result, and renders the report.
  - The result is C(FAILED) when a node failed or a link fault is confirmed, C(INCOMPLETE) when a node was excluded, a link
    stays suspect or no node was certified, else C(PASSED).
  - Formats are C(json) (the document described in docs/certify-report.md, with a JSON Schema in
    docs/schemas/certify-report.schema.json), C(junit) (one testsuite per category, one testcase per node and category,
    for CI and AWX), C(markdown) (summary tables) and C(html) (one self-contained page with inline SVG charts; no script,
    no external asset).
  - Files are written atomically (temporary file and rename) and only when their content differs, so a second run with
    the same input reports C(changed=false). The report embeds no generation time of its own.
  - With O(configmap), the JSON and Markdown are stored in a ConfigMap (created, or replaced when different). When they
    are larger than O(configmap.compress_above_bytes) they go gzip-compressed into C(binaryData) as
    C(<basename>.json.gz) and C(<basename>.md.gz), with the annotation C(dsxos.io/compression=gzip).
  - Runs on the controller through an action plugin of the same name, because reports are controller-side files.
author:
  - dsxos.cluster contributors (@dsxos)
extends_documentation_fragment:
  - dsxos.cluster.k8s_auth
options:
  report:
    description:
      - The certification results. Keys (all optional) are C(platform) (C(name), C(service), C(kubernetes_version)),
        C(gpu) (C(product), C(count_per_node)), C(started) and C(finished) (ISO 8601), C(durations) (C(total_s),
        C(per_category), C(ansible_overhead_s)), C(nodes) (per node C(verdict) passed, failed or excluded, C(reasons),
        C(categories) with C(status), C(reason), C(value), C(unit)), C(categories) (per category C(bandwidth_by_size),
        C(per_node), C(threshold)), C(failed_groups), C(isolation) (C(rounds), C(tests), C(trace); the summary of the
        isolation planner fits as is) and C(link_faults).
      - Wrong types, unknown statuses, negative or non-finite numbers and unparsable dates fail the task with a message
        naming the field and the value. Unknown keys are ignored with a warning.
    type: dict
    required: true
  dest_dir:
    description:
      - Directory on the controller for the report files (created when missing).
      - At least one of O(dest_dir) and O(configmap) is required.
    type: path
  formats:
    description: Files to write into O(dest_dir).
    type: list
    elements: str
    choices: [json, junit, markdown, html]
    default: [json, junit, markdown, html]
  basename:
    description:
      - Stem of the file names (C(.json), C(.xml), C(.md), C(.html)) and of the ConfigMap keys.
      - Letters, digits, C(.), C(_) and C(-) only.
    type: str
    default: certify-report
  rewrite:
    description:
      - V(outcome) keeps the report already in O(dest_dir) (the report of record, with its timings and measurements)
        when this run reached the same outcome (the same platform and GPU, the result, every category status, every
        node's verdict and category statuses) and every requested file is there, so a rerun that certifies the same thing changes nothing;
        the summary returned is then the kept report's. The JSON file is the record it compares with, so without
        V(json) in O(formats) every run rewrites.
      - V(always) writes this run's report every time (new timings and measurements make it C(changed)).
    type: str
    choices: [outcome, always]
    default: outcome
  configmap:
    description: Also store the JSON and Markdown report in this ConfigMap (the namespace must exist).
    type: dict
    suboptions:
      namespace:
        description: Namespace of the ConfigMap.
        type: str
        required: true
      name:
        description: Name of the ConfigMap.
        type: str
        required: true
      compress_above_bytes:
        description: When the JSON and Markdown together are larger than this, store them gzip-compressed in C(binaryData).
        type: int
        default: 524288
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
seealso:
  - module: dsxos.cluster.gpu_health
"""

EXAMPLES = r"""
- name: Write the certification report next to the playbook
  dsxos.cluster.certify_report:
    report: "{{ certify_results }}"
    dest_dir: "{{ playbook_dir }}/reports/{{ certify_run_id }}"
  register: certify_report

- name: Publish the summary to AWX
  ansible.builtin.set_stats:
    data:
      certify: "{{ certify_report.summary }}"

- name: Keep only the JUnit file for CI, and the report in a ConfigMap
  dsxos.cluster.certify_report:
    report: "{{ certify_results }}"
    dest_dir: /var/lib/dsxos/reports
    formats: [junit]
    configmap:
      namespace: dsxos-system
      name: certify-report-latest
    kubeconfig: ~/.kube/gpu-prod
"""

RETURN = r"""
result:
  description: The overall result.
  returned: success
  type: str
  sample: FAILED
summary:
  description:
    - Compact summary for C(set_stats) and notifications. C(result), C(result_reason), C(totals) (nodes, passed, failed,
      excluded, gpus, link_faults, suspect_links), C(platform), C(gpu), C(failed_nodes) and C(excluded_nodes) (node to
      reasons), C(link_faults) (messages), C(categories) (category to status) and C(duration_s).
  returned: success
  type: dict
  sample:
    result: FAILED
    result_reason: "1 of 8 node(s) failed: gpu-3"
    totals: {nodes: 8, passed: 7, failed: 1, excluded: 0, gpus: 64, link_faults: 0, suspect_links: 0}
    failed_nodes: {gpu-3: ["all_reduce: busbw 148.2 GB/s below 324.9 GB/s"]}
files:
  description: Path of each file, by format (also in check mode).
  returned: when O(dest_dir) is set
  type: dict
  sample: {json: /srv/reports/certify-report.json, junit: /srv/reports/certify-report.xml}
kept_report_of_record:
  description: True when O(rewrite=outcome) kept the existing report because this run reached the same outcome.
  returned: always
  type: bool
changed_files:
  description: Files that were written (or would be, in check mode) because their content differed.
  returned: when O(dest_dir) is set
  type: list
  elements: str
configmap:
  description:
    - What happened to the ConfigMap. C(namespace), C(name), C(action) (created, replaced or unchanged), C(changed),
      C(compressed), C(keys), C(bytes) (size of JSON and Markdown) and C(stored_bytes) (after compression).
  returned: when O(configmap) is set
  type: dict
warnings_in_report:
  description: Warnings recorded in the report (unknown input keys, verdicts overridden by failed categories).
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.entry import CERTIFY_REPORT
from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish

# Normally the controller-side action plugin of the same name runs this; the module is its documentation and also
# works when executed directly (the files are then written on the executing host).


def main() -> None:
    module = AnsibleModule(argument_spec=CERTIFY_REPORT.spec, supports_check_mode=True, **CERTIFY_REPORT.module_options)
    finish(module, call_entry(CERTIFY_REPORT, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
