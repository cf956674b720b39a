# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Errors of the Certify phase: one base, :class:`CertifyError`, a :class:`DsxosError` like every domain error."""
from __future__ import annotations

from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import InputError


class CertifyError(InputError):
    """Bad certification input (nodes, collectives, scale, isolation, thresholds, reports, workloads)."""
