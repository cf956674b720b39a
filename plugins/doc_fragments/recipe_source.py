# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations


class ModuleDocFragment:
    """Options that select where recipes are read from."""

    DOCUMENTATION = r"""
options:
  recipe_dirs:
    description:
      - Recipe directories in AICR layout (C(registry.yaml), C(overlays/), C(mixins/), C(components/)).
      - Read after the collection's built-in catalog, in the order given. A later directory replaces files
        with the same relative path and merges C(registry.yaml) by component name, like AICR's C(--data).
      - An upstream AICR C(recipes/) tree can be used unchanged.
    type: list
    elements: path
    default: []
  include_builtin:
    description:
      - Whether the collection's own C(recipes/) catalog is loaded first.
      - Set to C(false) to use only O(recipe_dirs).
    type: bool
    default: true
"""
