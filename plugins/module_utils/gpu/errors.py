# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Errors of the GPU fault knowledge (NVML readings, DCGM diagnostics, health policies)."""
from __future__ import annotations

from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import InputError


class GpuError(InputError):
    """Bad GPU health input: a recording, a DCGM output or a policy that cannot be used (names file, field, value)."""
