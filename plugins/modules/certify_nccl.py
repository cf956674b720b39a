#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: certify_nccl
short_description: Certify GPU nodes with multi-node NCCL tests and adaptive fault isolation
version_added: "0.1.0"
description:
  - Groups the nodes by topology (NVLink clique, Topograph block, rack labels, the host variable
    C(dsxos_topology_domain), C(clique_*)/C(rack_*)/C(switch_*)/C(leaf_*) inventory groups, else sqrt(N) groups),
    runs nccl-tests on every group at once, and narrows failing groups down round after round until every node
    has a verdict (healthy, faulty, excluded or inconclusive) and faulty links between domains are named.
  - Each log is parsed (nccl-tests text format) and judged against the absolute floor of the accelerator when one is
    known and against the other group results of the same run (median/MAD; with fewer than
    C(relative.min_fleet_size) results, a fraction of the best result). A test that times out, aborts or prints
    garbage fails with that reason.
  - O(runner=hosts) launches C(mpirun) over SSH on inventory hosts; O(runner=kubernetes) creates one C(batch/v1) Job per
    group test pinned to the chosen nodes (see docs/certify.md for the Job layout).
  - Runs on the controller (an action plugin of the same name) and prints one progress line per round.
  - Never changes the nodes; C(changed) is always false. In check mode nothing is launched and only the grouping is
    returned.
author:
  - dsxos.cluster contributors (@dsxos)
extends_documentation_fragment:
  - dsxos.cluster.k8s_auth
options:
  runner:
    description: How group tests are launched.
    type: str
    choices: [hosts, kubernetes]
    default: hosts
  nodes:
    description:
      - The nodes to certify. Each item is a node name or a mapping with C(name) (required), C(address) (what the hosts
        runner connects to; default the name), C(labels), C(groups) (inventory groups), C(host_vars), C(cordoned),
        C(ready), C(reachable) and C(exclude_reason).
      - Cordoned, not Ready and unreachable nodes (C(reachable=false)) are excluded with their reason.
      - Required with O(runner=hosts); with O(runner=kubernetes) the nodes come from O(node_selector) when O(nodes) is left out.
    type: list
    elements: raw
  node_selector:
    description: Label selector of the Kubernetes nodes to certify (O(runner=kubernetes), when O(nodes) is left out).
    type: str
  collectives:
    description: Collectives to run on every group test (C(all_reduce), C(all_gather), C(alltoall), C(reduce_scatter), ...).
    type: list
    elements: str
    default: [all_reduce]
  scale:
    description:
      - C(diagnose) - adaptive isolation until every node has a verdict.
      - C(per-group) - the screening round only; nodes of a failing group stay inconclusive.
      - C(full) - one test over all eligible nodes; when it fails, adaptive isolation follows unless
        O(diagnose_on_failure=false).
    type: str
    choices: [diagnose, per-group, full]
    default: diagnose
  diagnose_on_failure:
    description: With O(scale=full), isolate the fault when the full test fails.
    type: bool
    default: true
  thresholds:
    description:
      - Floors and relative policy (C(use_builtin_floors), C(floors.<accelerator>.<intra-node|multi-node>.<collective>),
        C(relative.fraction), C(relative.mad_z), C(relative.min_fleet_size), C(relative.min_spread_fraction));
        see docs/certify-nccl.md. Malformed values fail the task naming the key and the value.
    type: dict
  thresholds_file:
    description: A YAML file holding O(thresholds) (exclusive with O(thresholds)).
    type: path
  accelerator:
    description: Accelerator id for the floors (C(h100-sxm), C(h200-sxm), ...); default is read from the device names in the logs.
    type: str
  isolation:
    description:
      - Planner settings C(confirmations), C(min_test_size), C(singles_max), C(max_rounds), C(cross_domain),
        C(cross_step_tests), C(cross_per_round) and C(grouping) (C(label_keys), C(host_var_key),
        C(inventory_group_prefixes), C(min_group_size), C(max_group_size)).
    type: dict
    default: {}
  timeout_s:
    description: Time limit of one group test in seconds; a test still running then is killed and reported as timed out.
    type: float
    default: 1800.0
  max_parallel:
    description: Most group tests running at once (0 = all tests of a round).
    type: int
    default: 0
  mpirun:
    description:
      - Launch options of the hosts runner (fields of C(nccl_runner.MpiLaunch)) - C(binary_dir) (required, where
        C(<collective>_perf) lives on the hosts), C(slots_per_host), C(args) (C(min_bytes), C(max_bytes), C(step_factor),
        C(gpus), C(iters), C(warmup), C(check), C(extra)), C(env), C(launcher_env), C(mpirun), C(mpirun_args),
        C(allow_run_as_root), C(oversubscribe), C(tag_output).
      - With O(validate_only=true) they are checked only when given.
    type: dict
  kubernetes:
    description:
      - Options of the Kubernetes runner - C(image) (required), C(namespace) (default C(dsxos-certify)), C(command),
        C(args), C(gpus_per_node) (GPUs requested by each pod, default 8; 0 requests none), C(gpu_resource),
        C(host_network) (default true), C(env), C(tolerations), C(service_account), C(image_pull_secrets), C(labels),
        C(resources), C(poll_s), C(keep_jobs), C(ttl_s), C(run_id), C(binary_template) (default C({collective}_perf)),
        C(node_hostnames), C(recertify_nodes) (cordoned nodes tested anyway; the role passes the nodes quarantined for a
        certification failure, with tolerations for their cordon and quarantine taint; other cordoned nodes stay excluded).
      - With O(validate_only=true) they are checked only when given.
    type: dict
  create_namespace:
    description: Create the Kubernetes runner's namespace when it is missing.
    type: bool
    default: true
  large_message_bytes:
    description: Smallest message size whose bus bandwidth is judged (default 1 GiB).
    type: int
  ignore_warn_patterns:
    description: Regular expressions of C(NCCL WARN) messages that do not fail a test.
    type: list
    elements: str
    default: []
  validate_only:
    description:
      - Only validate the options (thresholds, isolation, and O(mpirun) or O(kubernetes) when given) and return the
        normalised configuration. With O(runner=kubernetes) the nodes are listed too, so an empty O(node_selector) fails here.
    type: bool
    default: false
  return_tests:
    description: Return every test with its per-collective judgement in RV(tests).
    type: bool
    default: true
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
- name: Certify the GPU hosts of the inventory over SSH (CPU stand-in or real nccl-tests)
  dsxos.cluster.certify_nccl:
    runner: hosts
    nodes: "{{ groups['gpu'] | map('extract', hostvars) | map(attribute='inventory_hostname') | list }}"
    collectives: [all_reduce]
    mpirun:
      binary_dir: /opt/nccl-tests/build
      slots_per_host: 8
      args: {min_bytes: 1M, max_bytes: 8G, gpus: 1}
      env: {NCCL_IB_HCA: "mlx5"}
    timeout_s: 900
  delegate_to: localhost
  run_once: true
  register: nccl

- name: Certify Kubernetes GPU nodes with one Job per group test
  dsxos.cluster.certify_nccl:
    runner: kubernetes
    node_selector: nvidia.com/gpu.present=true
    collectives: [all_reduce, all_gather]
    kubernetes:
      image: registry.example.com/nccl-tests-mpi:2.13
      namespace: dsxos-certify
      gpus_per_node: 8
    thresholds:
      floors: {h100-sxm: {multi-node: {all_reduce: 330}}}
"""

RETURN = r"""
result:
  description: C(PASSED), C(FAILED) (a faulty node or link) or C(INCOMPLETE) (excluded or unresolved nodes).
  returned: success
  type: str
summary:
  description: One line with the result and the counts.
  returned: success
  type: str
nodes:
  description: Per node C(status) (healthy, faulty, excluded, inconclusive), C(reason), C(reasons), C(evidence) (test ids),
    C(busbw) per collective and C(failed_collectives).
  returned: success
  type: dict
faulty_nodes:
  description: Nodes found faulty.
  returned: success
  type: list
  elements: str
healthy_nodes:
  description: Nodes that passed.
  returned: success
  type: list
  elements: str
excluded_nodes:
  description: Nodes left out (cordoned, not Ready, unreachable).
  returned: success
  type: list
  elements: str
inconclusive_nodes:
  description: Nodes without a verdict.
  returned: success
  type: list
  elements: str
link_faults:
  description: Faulty or suspect links between topology domains (C(domains), C(nodes), C(evidence), C(status), C(message), C(reasons)).
  returned: success
  type: list
  elements: dict
rounds:
  description: Rounds run.
  returned: success
  type: int
test_count:
  description: Group tests run.
  returned: success
  type: int
tests:
  description: Every test with C(id), C(nodes), C(purpose), C(why), C(round), C(passed), C(reasons), C(busbw), C(duration_s),
    C(timed_out) and C(collectives) (per collective judgement with floor, median, bandwidth by size).
  returned: success
  type: list
  elements: dict
bandwidth:
  description: Per collective C(bandwidth_by_size) (median busbw of passing tests per message size), C(per_node), C(fleet)
    statistics and the C(threshold) used.
  returned: success
  type: dict
failed_groups:
  description: Every failing test with its nodes, failed collectives and reasons.
  returned: success
  type: list
  elements: dict
grouping:
  description: The topology grouping (strategy, groups, domains, excluded nodes).
  returned: always
  type: dict
trace:
  description: The isolation planner's decision log.
  returned: success
  type: list
  elements: dict
durations:
  description: C(total_s), per round durations and the summed test time.
  returned: success
  type: dict
config:
  description: The normalised configuration.
  returned: always
  type: dict
jobs:
  description: Kubernetes runner bookkeeping (C(namespace), C(run_id), Jobs C(created) and C(deleted)).
  returned: with O(runner=kubernetes)
  type: dict
software:
  description: The NCCL and nccl-tests versions the test logs state (keys C(nccl) and C(nccl_tests)), taken from the
    first usable test output; empty when no log states them.
  returned: success
  type: dict
  sample: {"nccl": "2.23.4", "nccl_tests": "2.14.1"}
refused_hosts:
  description: Hosts refused before any contact because their inventory name or address is unsafe (not letters, digits,
    C(.), C(-), C(_) or an IP address; with multi-node tests, not usable in an C(mpirun) host list), mapped to the reason
    (which starts with C(refused)). The other hosts are certified normally; a refused host is C(excluded) in a real run.
  returned: with O(validate_only=true) (empty unless O(runner=hosts))
  type: dict
  sample: {"bad;host": "refused: invalid host name 'bad;host': only letters, digits, '.', '-' and '_' are allowed; the host was never contacted"}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.entry import CERTIFY_NCCL
from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish

# Normally the controller-side action plugin of the same name runs this (with per-round progress); the module is
# its documentation and also works when executed directly.


def main() -> None:
    module = AnsibleModule(argument_spec=CERTIFY_NCCL.spec, supports_check_mode=True, **CERTIFY_NCCL.module_options)
    finish(module, call_entry(CERTIFY_NCCL, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
