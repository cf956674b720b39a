#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: node_drain
short_description: Drain Kubernetes nodes in parallel without violating PodDisruptionBudgets
version_added: "0.1.0"
description:
  - Cordons every node of O(nodes) first (in parallel, recording O(reason) exactly like M(dsxos.cluster.node_quarantine);
    a node already quarantined keeps its recorded reason), then drains all of them concurrently.
  - Per node it lists the pods bound to it, decides what to do with each, and watches the node's pods with ONE watch
    (no per-pod polling) until every evicted pod is gone.
  - Skipped - DaemonSet pods, mirror (static) pods, finished pods (C(Succeeded)/C(Failed)), pods in protected namespaces
    (every namespace the built-in recipe catalog installs, C(kube-system), C(kai-resource-reservation), plus
    O(protected_namespaces_extra)), and with O(gpu_pods_only=true) pods that request no C(nvidia.com/gpu).
  - Like C(kubectl drain), pods without a controller block the drain unless O(force=true) and pods with C(emptyDir)
    volumes block it unless O(delete_emptydir_data=true); then nothing is evicted from that node and the task names the pods.
  - O(mode=immediate) evicts through the Eviction API. A refusal by a PodDisruptionBudget (HTTP 429) is not an error -
    the pod is retried with exponential backoff until O(timeout_s) and the result names the budget that blocks.
    O(mode=allow_completion) evicts nothing and waits for the pods to finish. O(mode=delete_after_timeout) evicts and
    DELETES the pods still refused after O(eviction_timeout_s) (explicit opt-in; this can break a budget).
  - Evictions of all nodes share one worker pool and the client's O(qps) limit.
  - A node that is not drained stays cordoned with its reason recorded and a C(drain-failed) entry in
    C(dsxos.io/quarantine-history). Rerunning after an interruption converges (the cordon is idempotent, pods already gone are
    fine, terminating pods are only waited for).
  - Node names are validated (RFC 1123 subdomain) before any API call.
author:
  - dsxos.cluster contributors (@dsxos)
extends_documentation_fragment:
  - dsxos.cluster.k8s_auth
  - dsxos.cluster.circuit_breaker
options:
  nodes:
    description: Names of the nodes to drain.
    type: list
    elements: str
    required: true
  reason:
    description: Why the nodes are drained; recorded with the cordon, prefixed with C(drain:).
    type: str
    required: true
  actor:
    description: Who acts. Default is C($DSXOS_ACTOR), else C(<user>@<host>).
    type: str
  mode:
    description: How pods leave the node.
    type: str
    choices: [immediate, allow_completion, delete_after_timeout]
    default: immediate
  timeout_s:
    description: Time budget per node in seconds; pods still present then are reported (C(pdb_blocked), C(timed_out)) and the task fails.
    type: float
    default: 600
  eviction_timeout_s:
    description:
      - How long to keep evicting (O(mode=delete_after_timeout)) or waiting for completion (O(mode=allow_completion)).
      - Default is O(timeout_s), and half of it for O(mode=delete_after_timeout).
    type: float
  grace_period_s:
    description: Termination grace period for evicted/deleted pods; default is each pod's own.
    type: int
  gpu_pods_only:
    description: Only remove pods that request C(nvidia.com/gpu) (or a MIG slice C(nvidia.com/mig-*)).
    type: bool
    default: false
  only_pods:
    description:
      - Only remove these pods of the given nodes (the pods the DCGM exporter maps to a faulty GPU, from the alerts'
        C(pods)); the nodes' other pods stay. The sentinel's partial drain before a GPU reset.
      - Empty (the default) removes every pod the other options allow. Protected namespaces, DaemonSet and mirror pods are
        skipped even when listed; O(gpu_pods_only) does not apply to a listed pod (the exporter mapped it to a GPU).
    type: list
    elements: dict
    default: []
    suboptions:
      namespace:
        description: The pod's namespace.
        type: str
        required: true
      name:
        description: The pod's name.
        type: str
        required: true
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
    description: Evict pods that no controller manages (they do not come back).
    type: bool
    default: false
  dry_run:
    description: Cordon and evict with C(dryRun=All) - the API server checks every eviction (budgets included), nothing changes.
    type: bool
    default: false
  ignore_missing:
    description: Report unknown nodes without failing the task.
    type: bool
    default: false
  pdb_retry_s:
    description: First wait before retrying an eviction a budget refused; it doubles up to O(pdb_retry_max_s).
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
- name: Drain GPU workloads off two failing nodes, waiting up to 10 minutes for budgets
  dsxos.cluster.node_drain:
    nodes: [gpu-node-17, gpu-node-18]
    reason: "XID 79 alert #4711"
    gpu_pods_only: true
    timeout_s: 600
  register: drained

- name: Let training jobs finish (up to 2 hours) before maintenance
  dsxos.cluster.node_drain:
    nodes: "{{ maintenance_nodes }}"
    reason: "kernel upgrade"
    mode: allow_completion
    timeout_s: 7200

- name: Evict, and after 5 minutes delete whatever a budget still protects
  dsxos.cluster.node_drain:
    nodes: [gpu-node-17]
    reason: "PSU failure"
    mode: delete_after_timeout
    eviction_timeout_s: 300
    timeout_s: 420
    force: true
    delete_emptydir_data: true
"""

RETURN = r"""
nodes:
  description:
    - Per node C(node), C(status) (C(drained), C(blocked), C(timed_out), C(failed), C(missing), C(refused)), C(message),
      C(changed), C(cordon) (the cordon's result), C(counts) (pods per outcome), C(blocking_pdbs), C(duration_s) and C(pods).
    - Each pod has C(namespace), C(name), C(outcome) (C(evicted), C(deleted), C(completed), C(gone), C(skipped), C(blocked),
      C(pdb_blocked), C(timed_out), C(failed), C(would_evict), C(would_wait), C(dry_run_ok)), C(reason), C(pdb) (the budget
      that blocked it), C(attempts) and C(gpu).
  returned: always
  type: list
  elements: dict
drained_nodes:
  description: Nodes fully drained.
  returned: always
  type: list
  elements: str
failed_nodes:
  description: Nodes not drained (they stay cordoned).
  returned: always
  type: list
  elements: str
missing_nodes:
  description: Nodes that do not exist.
  returned: always
  type: list
  elements: str
totals:
  description: Pods per outcome over all nodes.
  returned: always
  type: dict
  sample: {"evicted": 110, "skipped": 4}
api_calls:
  description: API requests sent, by verb and resource.
  returned: always
  type: dict
elapsed_s:
  description: Wall time in seconds.
  returned: always
  type: float
circuit_breaker:
  description: The breaker's decision for the cordons, when consulted.
  returned: when the breaker was consulted
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.operate.entry import NODE_DRAIN


def main() -> None:
    module = AnsibleModule(argument_spec=NODE_DRAIN.spec, supports_check_mode=True, **NODE_DRAIN.module_options)
    finish(module, call_entry(NODE_DRAIN, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
