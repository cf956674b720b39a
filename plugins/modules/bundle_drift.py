#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: bundle_drift
short_description: Compare a rendered bundle with what the Kubernetes cluster runs
version_added: "0.1.0"
description:
  - Reads a bundle written by M(dsxos.cluster.bundle_render) (its C(recipe.yaml) and the deployer's files) and compares every
    component with the cluster. Never changes anything.
  - The deployer is detected from the layout (C(applications/) - argocd, C(kustomization.yaml) or C(*/helmrelease.yaml) - flux,
    C(deploy.sh) - helm) unless O(deployer) is given.
  - helm bundles - the latest revision of each chart component's Helm release (Secret C(sh.helm.release.v1.<name>.v<N>) in the
    component's namespace) - chart version, user-supplied values against C(<component>/values.yaml), release status.
    Manifest-only and Kustomize components are reported as C(not_checked).
  - argocd bundles - each C(Application) - the chart source's C(targetRevision), its C(helm) section against the bundle's,
    C(status.sync.status), C(status.health.status) and the last operation.
  - flux bundles - each C(HelmRelease) - C(spec.chart.spec.version) or the tag of the C(OCIRepository) it references, values
    (inline or from the values ConfigMap) against the bundle's, the C(Ready) and C(Stalled) conditions and the deployed chart
    version in C(status.history); each Flux C(Kustomization) - present and C(Ready).
  - Each component gets a status - C(in_sync), C(missing), C(version_drift), C(values_drift), C(out_of_sync) (matches the bundle
    but is not reconciled or healthy yet), C(failed) (Helm status failed, C(Ready=False), C(Degraded), failed sync), or
    C(not_checked). Values differences come as a unified YAML diff with secret-looking values masked.
  - C(summary.ok) is true when nothing drifted, is missing or failed; use it in C(failed_when).
author:
  - dsxos.cluster contributors (@dsxos)
extends_documentation_fragment:
  - dsxos.cluster.k8s_auth
options:
  bundle:
    description: Directory of the rendered bundle (on the host running the module).
    type: path
    required: true
  deployer:
    description: Layout of the bundle; V(auto) detects it.
    type: str
    choices: [auto, helm, argocd, flux]
    default: auto
  components:
    description: Only these components (names from the bundle's C(recipe.yaml)); default all.
    type: list
    elements: str
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Is the cluster still what the bundle says?
  dsxos.cluster.bundle_drift:
    bundle: /srv/bundles/gpu-a
  register: drift
  failed_when: not drift.summary.ok

- name: Show the values that drifted
  ansible.builtin.debug:
    msg: "{{ item.name }}: {{ item.values_diff }}"
  loop: "{{ drift.components | selectattr('values_diff') | list }}"
"""

RETURN = r"""
deployer:
  description: Layout of the bundle (detected or given).
  returned: success
  type: str
  sample: helm
components:
  description:
    - Per component, in deployment order - C(name), C(kind) (C(helm_release), C(argocd_application), C(flux_helmrelease),
      C(flux_kustomization) or C(none)), C(namespace) and C(object) of the cluster object, C(status), C(drift) (a list of
      C(version), C(values)), C(expected_version), C(actual_version), C(values_diff) (unified diff or null), C(message).
    - Helm releases add C(revision), C(release_status), C(secret), C(chart); Argo CD C(sync_status), C(health_status),
      C(deployed_version), C(target_revision); Flux C(ready), C(ready_reason), C(deployed_version), C(spec_version).
  returned: success
  type: list
  elements: dict
summary:
  description: Counts C(in_sync), C(drifted) (C(version_drift) + C(values_drift)), C(version_drift), C(values_drift), C(missing),
    C(failed), C(out_of_sync), C(not_checked), C(total), and C(ok).
  returned: success
  type: dict
  sample: {in_sync: 3, drifted: 1, version_drift: 1, values_drift: 0, missing: 0, failed: 0, out_of_sync: 0, not_checked: 1, total: 5, ok: false}
recipe_criteria:
  description: Criteria of the recipe the bundle was rendered from.
  returned: success
  type: dict
bundle:
  description: The bundle directory.
  returned: success
  type: str
api_calls:
  description: HTTP requests sent, by C(verb resource).
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import BUNDLE_DRIFT


def main() -> None:
    module = AnsibleModule(argument_spec=BUNDLE_DRIFT.spec, supports_check_mode=True, **BUNDLE_DRIFT.module_options)
    finish(module, call_entry(BUNDLE_DRIFT, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
