# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

# The breaker's settings, documented once (they are operate/entry.py BREAKER_SETTINGS_SPEC): top level in the
# circuit_breaker module, and as suboptions of the node actions' ``circuit_breaker`` option (BREAKER_OPTION_SPEC).
_SETTINGS_OPTIONS = r"""
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


def _indent(text: str, spaces: int) -> str:
    return "".join((" " * spaces + line if line.strip() else line) for line in text.strip("\n").splitlines(True)) + "\n"


class ModuleDocFragment:
    """The circuit breaker's settings: as one ``circuit_breaker`` option (node actions) or top level (the breaker module)."""

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
""" + _indent(_SETTINGS_OPTIONS, 6)

    # circuit_breaker: `extends_documentation_fragment: dsxos.cluster.circuit_breaker.settings`
    SETTINGS = "\noptions:\n" + _indent(_SETTINGS_OPTIONS, 2)
