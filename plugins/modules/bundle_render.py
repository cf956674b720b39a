#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: bundle_render
short_description: Render a resolved recipe into a Helm, Argo CD or Flux deployment bundle
version_added: "0.1.0"
description:
  - Computes each component's Helm values (component C(values.yaml), then C(valuesFile), then recipe
    C(overrides), then O(values_overrides)), renders manifest templates with Jinja2 and writes a bundle
    for the chosen O(deployer).
  - The bundle is written atomically (rendered into a temporary directory, then swapped in); a failed render
    leaves the previous bundle untouched. C(changed) is reported only when a file's content or mode differs.
  - Every bundle holds C(recipe.yaml) and C(checksums.txt) (sha256 of every file, C(recipe.yaml) included).
  - Durable before it is visible - the new tree is flushed to disk in one pass (one C(syncfs) of its file system on
    Linux 5.8 and later, else an C(fsync) of every file and directory) before the swap, and the parent directory is
    fsync'ed after it. There is no option to skip this.
  - O(bundles) renders many bundles in one task (one recipe store load, one result per bundle); without it the
    task renders one bundle from O(recipe) to O(dest).
  - The loaded recipe store is kept per controller process and reused while no file of the recipe directories
    changed (so loop items share it); see the collection's C(docs/bundles.md), "Performance".
author:
  - dsxos.cluster contributors (@dsxos)
extends_documentation_fragment:
  - dsxos.cluster.recipe_source
options:
  recipe:
    description:
      - The RecipeResult returned by M(dsxos.cluster.recipe_resolve) (its C(recipe) key).
      - Required, with O(dest), unless O(bundles) is given; mutually exclusive with O(bundles).
    type: dict
  dest:
    description:
      - Directory that receives the bundle. Created when missing; replaced atomically when it holds a bundle.
      - A non-empty directory that is not a bundle (no C(recipe.yaml) or C(checksums.txt)) is refused unless O(force=true).
      - Required with O(recipe); mutually exclusive with O(bundles).
    type: path
  bundles:
    description:
      - Many bundles in one task, each rendered and written exactly as the single-bundle form would (its own atomic swap).
      - The recipe store is loaded once for all of them; items giving the same O(bundles[].criteria) (and
        O(bundles[].disabled_components)) are resolved once.
      - Keys an item leaves unset take the task's option of the same name; O(recipe_dirs), O(include_builtin) and the
        node scheduling options (O(system_node_selector) ... O(nodes)) are the task's for every item.
      - Two items with the same O(bundles[].dest), or one inside another's, are refused before anything is written.
      - Every item is attempted; the task is changed when any bundle changed and fails when any failed, its message naming
        each failed item as C(bundles[i]) followed by its destination. The per-item results are in RV(bundles).
    type: list
    elements: dict
    suboptions:
      recipe:
        description: A resolved recipe (the C(recipe) key of M(dsxos.cluster.recipe_resolve)); exactly one of this and O(bundles[].criteria).
        type: dict
      criteria:
        description:
          - Criteria to resolve (as M(dsxos.cluster.recipe_resolve)'s O(dsxos.cluster.recipe_resolve#module:criteria)) against
            the task's recipe directories; exactly one of this and O(bundles[].recipe).
        type: dict
      dest:
        description: Directory that receives this bundle (as O(dest)).
        type: path
        required: true
      deployer:
        description: As O(deployer); default the task's.
        type: str
        choices: [helm, argocd, flux]
      deployer_options:
        description: As O(deployer_options); default the task's.
        type: dict
      values_overrides:
        description: As O(values_overrides); replaces (is not merged with) the task's.
        type: dict
      disabled_components:
        description: As O(disabled_components) (also used to resolve O(bundles[].criteria)); replaces the task's.
        type: list
        elements: str
      set:
        description: As O(set); replaces the task's.
        type: list
        elements: str
      force:
        description: As O(force); default the task's.
        type: bool
  deployer:
    description:
      - C(helm) writes AICR's layout with C(deploy.sh)/C(undeploy.sh) (retries, C(--dry-run)).
      - C(argocd) writes an app-of-apps and one multi-source Application per component (needs C(repo_url) and
        C(revision) in O(deployer_options)).
      - C(flux) writes HelmRepository/OCIRepository and HelmRelease objects with C(dependsOn) and a C(kustomization.yaml).
    type: str
    choices: [helm, argocd, flux]
    default: helm
  deployer_options:
    description:
      - Options of the deployer, see the collection's C(docs/bundles.md). Unknown keys are refused.
      - "helm: C(timeout), C(wait), C(retries). argocd: C(repo_url), C(revision), C(path), C(automated), C(prune),
        C(self_heal), C(project), C(namespace), C(destination_server), C(app_of_apps_name).
        flux: C(interval), C(values_from) (C(inline) or C(configmap)), C(flux_namespace), C(oci_url), C(oci_ref), C(oci_name),
        C(oci_insecure) (C(oci_url) adds C(flux-oci-source.yaml) pointing Flux at the bundle published by M(dsxos.cluster.bundle_publish))."
    type: dict
    default: {}
  values_overrides:
    description:
      - Per-component Helm values merged last (maps merge, lists and scalars replace), like AICR's C(--set-json).
      - They win over O(set) and over the node scheduling options.
    type: dict
    default: {}
  disabled_components:
    description: Components to leave out of the bundle.
    type: list
    elements: str
    default: []
  force:
    description: Allow replacing a non-empty O(dest) that does not look like a bundle.
    type: bool
    default: false
  set:
    description:
      - Bundle-time value overrides C(component:path.to.field=value), like AICR's C(aicr bundle --set).
      - The component may be named by a registry C(valueOverrideKeys) alias. The path is dot-separated map keys (no list indexes).
      - The value is typed as a YAML scalar (V(true), V(false), V(null), integers, floats); quote it (V('570')) to keep a string.
      - V(component:enabled=false) leaves the component out of the bundle, its deployment order and the other components' dependencies.
      - Applied after the recipe's values and before the node scheduling options and O(values_overrides).
    type: list
    elements: str
    default: []
  system_node_selector:
    description: Node selector for system components, written at the registry's C(nodeScheduling.system.nodeSelectorPaths).
    type: dict
    default: {}
  system_node_tolerations:
    description:
      - Tolerations for system components (C(key=value:Effect), C(key:Effect) or toleration mappings), written at C(nodeScheduling.system.tolerationPaths).
      - "When not given, AICR's default C({operator: Exists}) (tolerate every taint) is written; V([]) writes none."
    type: list
    elements: raw
  accelerated_node_selector:
    description: Node selector for GPU nodes, written at the registry's C(nodeScheduling.accelerated.nodeSelectorPaths).
    type: dict
    default: {}
  accelerated_node_tolerations:
    description:
      - Tolerations for GPU nodes, in the forms of O(system_node_tolerations), written at C(nodeScheduling.accelerated.tolerationPaths).
      - "When not given, AICR's default C({operator: Exists}) is written; V([]) writes none."
    type: list
    elements: raw
  workload_gate_taint:
    description: Workload gate taint (C(key=value:Effect) or C(key:Effect)), written as that string at C(nodeScheduling.accelerated.taintStrPaths).
    type: str
  workload_selector:
    description: Label selector of running workloads, written at the registry's C(podScheduling.workload.workloadSelectorPaths).
    type: dict
    default: {}
  nodes:
    description: Estimated number of GPU nodes, written at the registry's C(nodeScheduling.nodeCountPaths); V(0) means unset.
    type: int
    default: 0
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
"""

EXAMPLES = r"""
- name: Resolve
  dsxos.cluster.recipe_resolve:
    criteria: {service: eks, accelerator: h100, os: ubuntu, intent: training}
  register: resolved

- name: Render a Helm bundle
  dsxos.cluster.bundle_render:
    recipe: "{{ resolved.recipe }}"
    dest: /srv/bundles/h100-eks
    deployer: helm

- name: Render Argo CD Applications that read values from the GitOps repo
  dsxos.cluster.bundle_render:
    recipe: "{{ resolved.recipe }}"
    dest: /srv/gitops/clusters/prod
    deployer: argocd
    deployer_options:
      repo_url: https://git.example.com/platform/gitops.git
      revision: main
      path: clusters/prod

- name: Render with node scheduling and bundle-time overrides (aicr bundle --set / --*-node-*)
  dsxos.cluster.bundle_render:
    recipe: "{{ resolved.recipe }}"
    dest: /srv/bundles/h100-eks
    system_node_selector: {nodeGroup: system}
    accelerated_node_selector: {nodeGroup: gpu}
    accelerated_node_tolerations: ["nvidia.com/gpu=present:NoSchedule"]
    set:
      - gpuoperator:driver.version='580.95.05'
      - aws-efa:enabled=false

- name: Render many bundles in one task (one store load; criteria resolved here)
  dsxos.cluster.bundle_render:
    bundles:
      - criteria: {service: eks, accelerator: h100, intent: training}
        dest: /srv/bundles/h100-eks/helm
      - criteria: {service: eks, accelerator: h100, intent: training}
        dest: /srv/bundles/h100-eks/argocd
        deployer: argocd
        deployer_options: {repo_url: "https://git.example.com/platform/gitops.git", revision: main}
      - recipe: "{{ resolved.recipe }}"
        dest: /srv/bundles/resolved/helm
  register: rendered
"""

RETURN = r"""
bundles:
  description:
    - With O(bundles), one result per item, in order, each with the keys below (C(dest) to C(elapsed_ms)) and
      C(changed); a failed item has C(failed), C(msg) and C(error) instead. Items given O(bundles[].criteria) also
      have C(criteria) and C(applied_overlays).
    - The other return values below are those of the single-bundle form (without O(bundles)).
  returned: when O(bundles) is given
  type: list
  elements: dict
dest:
  description: Where the bundle is.
  returned: success
  type: str
deployer:
  description: The deployer used.
  returned: success
  type: str
files:
  description: Every file of the bundle (relative paths).
  returned: success
  type: list
  elements: str
added:
  description: Files that did not exist before.
  returned: success
  type: list
  elements: str
removed:
  description: Files of the previous bundle that are gone.
  returned: success
  type: list
  elements: str
modified:
  description: Files whose content or mode changed.
  returned: success
  type: list
  elements: str
components:
  description: Components in deployment order with C(name), C(type), C(version), C(namespace), C(order), C(repository), C(chart), C(manifests).
  returned: success
  type: list
  elements: dict
disabled_components:
  description: Components left out of the bundle (by the recipe, O(disabled_components) or an C(enabled=false) override).
  returned: success
  type: list
  elements: str
warnings:
  description: The recipe's warnings plus one per dependency on a component left out of the bundle.
  returned: success
  type: list
  elements: str
scheduling:
  description: The node scheduling options used, defaults filled in and tolerations normalized to mappings.
  returned: success
  type: dict
elapsed_ms:
  description: Time spent rendering and writing, in milliseconds (with O(bundles), for all of them).
  returned: success
  type: float
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import BUNDLE_RENDER


def main() -> None:
    module = AnsibleModule(argument_spec=BUNDLE_RENDER.spec, supports_check_mode=True, **BUNDLE_RENDER.module_options)
    finish(module, call_entry(BUNDLE_RENDER, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
