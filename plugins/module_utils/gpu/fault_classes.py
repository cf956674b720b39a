# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Fault classes: the coarse kinds of GPU fault that alerts carry and the Operate policy matches on.

The alert rules (``extensions/prometheus/``, the catalog's ``gpu-health-rules`` component) label every alert with one
``fault_class``; the EDA event source passes it on; the sentinel policy decides on it. One list, here:

=====================  =========================================================================================
``fatal-hardware``     a critical, non-application XID or DCGM error of the GPU itself (e.g. XID 48, 63, 64, 94, 95)
``fallen-off-bus``     the GPU is gone from the PCIe bus (XID 79, DCGM_FR_FALLEN_OFF_BUS-like)
``nvlink``             NVLink errors or a link down (XID 74, 144-150; NVLink error counters)
``memory``             uncorrectable ECC (DBE), row-remap failure or pending, page retirement
``pcie``               PCIe replay bursts, link degraded
``thermal``            thermal violations / slowdown
``power``              power violations / power brake
``gpu-missing``        a GPU's metrics are absent while its node is up
``application``        workload-caused XIDs (13, 31, 43, 45, ...): never condemn a node on their own
``certification``      the node's certification label says it failed
``unknown``            anything else (recorded, never acted on by the default policy)
=====================  =========================================================================================
"""
from __future__ import annotations

from typing import Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.fault_catalog import FaultEntry

FAULT_CLASSES = ("fatal-hardware", "fallen-off-bus", "nvlink", "memory", "pcie", "thermal", "power", "gpu-missing",
                 "application", "certification", "unknown")

#: Classes that are hardware faults: an alert of one of them on a GPU inhibits application-class alerts on that GPU.
HARDWARE_CLASSES = ("fatal-hardware", "fallen-off-bus", "nvlink", "memory", "pcie")

_COMPONENT_CLASS = {
    "nvlink": "nvlink", "fabric": "nvlink", "c2c": "nvlink",
    "memory": "memory",
    "pcie": "pcie",
    "thermal": "thermal",
    "power": "power",
    "application": "application",
}

#: XIDs that mean the GPU fell off the bus.
FALLEN_OFF_BUS_XIDS = frozenset({79})


def fault_class_of(entry: Optional[FaultEntry]) -> str:
    """The fault class of a catalogued XID/DCGM entry (``unknown`` for None or an uncatalogued code)."""
    if entry is None or not entry.known:
        return "unknown"
    if entry.application_class:
        return "application"
    if entry.kind == "xid" and entry.code in FALLEN_OFF_BUS_XIDS:
        return "fallen-off-bus"
    cls = _COMPONENT_CLASS.get(entry.component)
    if cls is not None:
        return cls
    if entry.severity == "critical":
        return "fatal-hardware"
    return "unknown"
