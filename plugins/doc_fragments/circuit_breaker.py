# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations


class ModuleDocFragment:
    """The circuit breaker's settings: as one ``circuit_breaker`` option (node actions) or top level (the breaker module).

    ansible-test's yamllint requires every fragment attribute to be a plain string literal, so the six settings appear
    twice below; tests/unit/test_operate_entry.py checks both copies against operate/entry.py BREAKER_SETTINGS_SPEC
    (the one definition of the settings) and against each other.
    """

    # node_quarantine, node_drain: `extends_documentation_fragment: dsxos.cluster.circuit_breaker`
    DOCUMENTATION = r"""
options:
  circuit_breaker:
    description:
      - Consult a circuit breaker before cordoning or tainting nodes that are not quarantined yet.
      - Releases (uncordon, untaint, release) are never blocked.
    type: dict
    suboptions:
      enabled:
        description: Whether to consult it.
        type: bool
        default: true
      namespace:
        description: Namespace of the breaker ConfigMap (created when missing).
        type: str
        default: dsxos-system
      name:
        description: Name of the breaker ConfigMap.
        type: str
        default: dsxos-circuit-breaker
      max_fraction:
        description: Most quarantines within the window as a fraction of the GPU nodes.
        type: float
        default: 0.1
      max_nodes:
        description: Most quarantines within the window, absolute.
        type: int
        default: 10
      window_s:
        description: Sliding window in seconds.
        type: float
        default: 3600
      gpu_node_selector:
        description: Label selector that counts the GPU nodes.
        type: str
        default: nvidia.com/gpu.present=true
"""

    # circuit_breaker: `extends_documentation_fragment: dsxos.cluster.circuit_breaker.settings`
    SETTINGS = r"""
options:
  namespace:
    description: Namespace of the breaker ConfigMap (created when missing).
    type: str
    default: dsxos-system
  name:
    description: Name of the breaker ConfigMap.
    type: str
    default: dsxos-circuit-breaker
  max_fraction:
    description: Most quarantines within the window as a fraction of the GPU nodes.
    type: float
    default: 0.1
  max_nodes:
    description: Most quarantines within the window, absolute.
    type: int
    default: 10
  window_s:
    description: Sliding window in seconds.
    type: float
    default: 3600
  gpu_node_selector:
    description: Label selector that counts the GPU nodes.
    type: str
    default: nvidia.com/gpu.present=true
"""
