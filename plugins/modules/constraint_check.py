#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: constraint_check
short_description: Evaluate recipe constraints against a measurement snapshot
version_added: "0.1.0"
description:
  - Evaluates constraints such as C(K8s.server.version >= 1.30) or C(OS.release.ID == ubuntu) against a snapshot
    of measurements built from a given snapshot, Ansible facts of inventory hosts and user-given values.
  - Reports C(pass), C(fail), C(missing) or C(error) for every constraint with the measured value.
  - Version comparison strips a leading C(v), ignores C(-)/C(+) suffixes and compares to the shorter precision,
    so C(6.8.0-1015-aws) satisfies C(>= 6.8).
  - Never changes anything. The task fails only when O(fail_on_violation=true) and an error-severity constraint fails.
author:
  - dsxos.cluster contributors (@dsxos)
options:
  constraints:
    description: Constraints to check, each with C(name) (C(Type.Subtype.Key)) and C(value) (C(">= 1.30") or a bare value).
    type: list
    elements: dict
    default: []
  recipe:
    description: A RecipeResult; its top-level constraints are checked too.
    type: dict
  phases:
    description: Validation phases of O(recipe) whose constraints are checked as well (for example C(deployment)).
    type: list
    elements: str
    default: []
  snapshot:
    description: A serialized snapshot (C(measurements), C(sources), C(hosts)), for example from an earlier run.
    type: dict
  host_facts:
    description:
      - Ansible facts per host (typically C(hostvars) restricted to a group). Used keys are C(ansible_facts.distribution),
        C(distribution_version), C(kernel), C(architecture) and the optional C(dsxos_sysctl) map.
    type: dict
  measurements:
    description: Extra measurements keyed by full name (for example C(K8s.server.version)); they win over facts.
    type: dict
    default: {}
  missing_is_failure:
    description: Count a constraint whose measurement is missing as a violation.
    type: bool
    default: false
  fail_on_violation:
    description: Fail the task when a constraint of severity C(error) is violated.
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
- name: Check a recipe's constraints against the inventory's facts
  dsxos.cluster.constraint_check:
    recipe: "{{ resolved.recipe }}"
    host_facts: "{{ dict(groups['gpu_nodes'] | zip(groups['gpu_nodes'] | map('extract', hostvars))) }}"
    measurements:
      K8s.server.version: "1.31.4"
  register: checked

- name: Fail on a violated constraint
  dsxos.cluster.constraint_check:
    constraints:
      - {name: OS.kernel.version, value: ">= 6.8"}
    measurements:
      OS.kernel.version: 6.8.0-1015-aws
    fail_on_violation: true
"""

RETURN = r"""
results:
  description: One entry per constraint with C(name), C(expected), C(operator), C(measured), C(status), C(severity), C(message).
  returned: always
  type: list
  elements: dict
summary:
  description: Counts (C(passed), C(failed), C(missing), C(errors)) and C(ok).
  returned: always
  type: dict
violations:
  description: The results that count as violations.
  returned: always
  type: list
  elements: dict
snapshot:
  description: The snapshot the constraints were evaluated against (reusable as O(snapshot)).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import CONSTRAINT_CHECK


def main() -> None:
    module = AnsibleModule(argument_spec=CONSTRAINT_CHECK.spec, supports_check_mode=True, **CONSTRAINT_CHECK.module_options)
    finish(module, call_entry(CONSTRAINT_CHECK, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
