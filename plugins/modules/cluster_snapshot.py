#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: cluster_snapshot
short_description: Measure a Kubernetes GPU cluster into a snapshot, node facts, a summary and inferred criteria
version_added: "0.1.0"
description:
  - Reads the API server version and every Node (optionally only those matching O(label_selector)) through the official
    Kubernetes Python client. Never changes anything.
  - Per node it reports the GPU product and count (GPU Feature Discovery labels C(nvidia.com/gpu.product), C(nvidia.com/gpu.count)),
    the driver version (C(nvidia.com/cuda.driver.major/minor/rev)), the CUDA version (C(nvidia.com/cuda.runtime.major/minor)),
    kernel, OS image, container runtime, kubelet version, providerID and the managed service it implies
    (C(aws) - C(eks), C(gce) - C(gke), C(azure) - C(aks), C(oci) - C(oke)).
  - The summary counts nodes and GPUs per GPU product and gives the minimum and the distinct values of every version.
  - The snapshot uses the measurement names of C(dsxos.cluster.constraint_check) (C(K8s.server.version), C(K8s.node.*),
    C(GPU.smi.driver), C(GPU.smi.cuda-version), C(GPU.smi.gpu-count), C(GPU.smi.gpu.model), C(OS.release.ID),
    C(OS.release.VERSION_ID), C(OS.sysctl./proc/sys/kernel/osrelease)). Node values come from the GPU nodes when there are any;
    when nodes disagree the lowest version is kept and C(variants) lists every node's value.
  - C(criteria) is inferred from the snapshot the same way C(dsxos.cluster.recipe_resolve) does.
author:
  - dsxos.cluster contributors (@dsxos)
extends_documentation_fragment:
  - dsxos.cluster.k8s_auth
options:
  label_selector:
    description: Only nodes matching this label selector, for example C(nvidia.com/gpu.present=true).
    type: str
  host_facts:
    description:
      - Ansible C(hostvars) of GPU hosts (C({host - {ansible_facts - ...}})). Their OS measurements are merged over the
        cluster's (they win on the names they have).
    type: dict
  snapshot:
    description: A snapshot (C(Snapshot) dict or flat C({name - value})) merged last, for example NVML measurements.
    type: dict
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Measure the GPU nodes of the cluster
  dsxos.cluster.cluster_snapshot:
    kubeconfig: ~/.kube/config
    label_selector: nvidia.com/gpu.present=true
  register: cluster

- name: Check the recipe's constraints against it
  dsxos.cluster.constraint_check:
    constraints:
      - {name: K8s.server.version, value: ">= 1.30"}
      - {name: GPU.smi.driver, value: ">= 570"}
    snapshot: "{{ cluster.snapshot }}"

- name: Resolve a recipe for what was found
  dsxos.cluster.recipe_resolve:
    criteria: "{{ cluster.criteria | combine({'intent': 'training'}) }}"
"""

RETURN = r"""
snapshot:
  description: The measurements (C(apiVersion) C(dsxos.cluster/v1), C(kind) C(Snapshot), C(measurements), C(sources), C(hosts), C(variants)).
  returned: success
  type: dict
nodes:
  description: Per node C(name), C(ready), C(unschedulable), C(taints), C(gpu_product), C(gpu_count), C(gpu_memory_mib), C(gpu_family),
    C(driver_version), C(cuda_version), C(kernel_version), C(os_image), C(os_id), C(os_version), C(architecture),
    C(container_runtime_version), C(kubelet_version), C(provider_id), C(provider), C(service), C(instance_type), C(zone), C(gpu_labels).
  returned: success
  type: list
  elements: dict
summary:
  description: C(nodes), C(gpu_nodes), C(gpus), C(ready), C(not_ready), C(unschedulable), C(gpu_products) (per product C(nodes) and
    C(gpus)), C(services), and C(versions) (per C(driver), C(cuda), C(kernel), C(kubelet), C(container_runtime), C(os_image) -
    C(min), C(variants), C(uniform)).
  returned: success
  type: dict
criteria:
  description: Criteria inferred from the snapshot (C(service), C(accelerator), C(os); C(intent) and C(platform) stay C(any)).
  returned: success
  type: dict
  sample: {service: eks, accelerator: h100, os: amazonlinux, intent: any, platform: any, nodes: 0}
evidence:
  description: Per criteria field the C(value), the measurement it came from (C(source)), the C(raw) value and a C(note).
  returned: success
  type: dict
server_version:
  description: The API server's gitVersion.
  returned: success
  type: str
  sample: v1.31.4-eks-2a8d8e5
api_calls:
  description: HTTP requests sent, by C(verb resource).
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import CLUSTER_SNAPSHOT


def main() -> None:
    module = AnsibleModule(argument_spec=CLUSTER_SNAPSHOT.spec, supports_check_mode=True, **CLUSTER_SNAPSHOT.module_options)
    finish(module, call_entry(CLUSTER_SNAPSHOT, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
