# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""How the certification report's renderers (JUnit, Markdown, HTML) write numbers: sizes, bandwidths, durations.

One formatter per kind of value, shared by :mod:`report_render` and :mod:`report_html` so every format shows the
same value the same way.
"""
from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple


def format_size(size: int) -> str:
    """Bytes in binary units: ``1 MiB``, ``8 GiB``, ``512 B``, ``1.5 KiB``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return ("%d %s" % (value, unit)) if value.is_integer() else ("%.1f %s" % (value, unit))
        value /= 1024
    return "%d B" % size  # pragma: no cover - loop always returns


def format_gbps(value: Optional[float], unit: bool = True) -> str:
    """``333.0 GB/s`` (``-`` for a missing value); ``unit=False`` gives the bare number (``333.0``)."""
    if value is None:
        return "-"
    return ("%.1f GB/s" if unit else "%.1f") % value


def format_seconds(value: Optional[float]) -> str:
    """A duration for people: ``42.0 s``, ``12m 05s``, ``1h 02m 03s`` (``-`` when unknown)."""
    if value is None:
        return "-"
    if value < 120:
        return "%.1f s" % value
    minutes, seconds = divmod(int(round(value)), 60)
    hours, minutes = divmod(minutes, 60)
    return ("%dh %02dm %02ds" % (hours, minutes, seconds)) if hours else ("%dm %02ds" % (minutes, seconds))


#: the report's ``gpu`` software fields and how every renderer labels them
SOFTWARE_LABELS = (("driver_version", "driver"), ("cuda_version", "CUDA"), ("nccl_version", "NCCL"),
                   ("nccl_tests_version", "nccl-tests"))


def software_versions(gpu: Mapping[str, Any]) -> List[Tuple[str, str]]:
    """``[(label, version)]`` of the driver, CUDA, NCCL and nccl-tests versions the report knows, in that order."""
    return [(label, str(gpu[key])) for key, label in SOFTWARE_LABELS if gpu.get(key)]
