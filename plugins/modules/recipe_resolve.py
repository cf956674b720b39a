#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: recipe_resolve
short_description: Resolve AICR-format recipe criteria into a version-locked RecipeResult
version_added: "0.1.0"
description:
  - Loads the built-in recipe catalog and/or user recipe directories (AICR C(aicr.nvidia.com/v1alpha1) format),
    applies every overlay whose criteria match (ascending specificity, each with its C(spec.base) chain) and
    returns the merged RecipeResult with constraints, components, deployment order and validation phases.
  - Never changes anything; safe in check mode.
  - Unlike AICR, component C(overrides) of parent overlays are merged deeply, so nested keys are not lost.
author:
  - dsxos.cluster contributors (@dsxos)
extends_documentation_fragment:
  - dsxos.cluster.recipe_source
options:
  criteria:
    description:
      - The query. Keys are C(service), C(accelerator), C(os), C(intent), C(platform) (strings, C(any) when
        left out) and C(nodes) (integer, C(0) for any).
      - Unknown keys or values are refused with the list of allowed values.
    type: dict
    default: {}
  disabled_components:
    description: Components to leave out of the result (dependency references to them are dropped with a warning).
    type: list
    elements: str
    default: []
  snapshot:
    description:
      - A measurement snapshot (for example the C(snapshot) returned by M(dsxos.cluster.constraint_check)).
      - With O(infer=true), criteria fields not given in O(criteria) are inferred from it.
    type: dict
  infer:
    description: Fill criteria fields left out of O(criteria) from O(snapshot) (GPU product, OS release, provider).
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
- name: Resolve the H100 / EKS / Ubuntu training recipe
  dsxos.cluster.recipe_resolve:
    criteria:
      service: eks
      accelerator: h100
      os: ubuntu
      intent: training
  register: resolved

- name: Resolve against an upstream AICR recipes/ tree only
  dsxos.cluster.recipe_resolve:
    criteria: {service: gke, accelerator: gb200, intent: inference}
    recipe_dirs: [/srv/aicr/recipes]
    include_builtin: false
"""

RETURN = r"""
recipe:
  description: The RecipeResult (C(apiVersion), C(kind), C(criteria), C(appliedOverlays), C(constraints),
    C(componentRefs), C(deploymentOrder), C(validation), C(metadata)). Feed it to M(dsxos.cluster.bundle_render).
  returned: success
  type: dict
criteria:
  description: The criteria actually used (normalized, inferred fields filled in).
  returned: success
  type: dict
  sample: {service: eks, accelerator: h100, os: ubuntu, intent: training, platform: any, nodes: 0}
applied_overlays:
  description: Overlays in the order they were merged.
  returned: success
  type: list
  elements: str
  sample: [base, eks, eks-training, h100-eks-training, h100-eks-ubuntu-training]
deployment_order:
  description: Component names in install order (dependencies first, alphabetical tie-break).
  returned: success
  type: list
  elements: str
inferred:
  description: For each inferred criteria field, the value and the evidence it came from.
  returned: success
  type: dict
elapsed_ms:
  description: Time spent resolving, in milliseconds.
  returned: success
  type: float
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import RECIPE_RESOLVE


def main() -> None:
    module = AnsibleModule(argument_spec=RECIPE_RESOLVE.spec, supports_check_mode=True, **RECIPE_RESOLVE.module_options)
    finish(module, call_entry(RECIPE_RESOLVE, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
