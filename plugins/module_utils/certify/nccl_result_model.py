# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""What one nccl-tests run said, as data: :class:`NcclResult` with its :class:`NcclRow` rows and :class:`NcclDevice`
ranks, and their JSON form (``to_dict`` / ``from_dict``). Filled in by :mod:`.nccl_results`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional

#: Rows at or above this size (bytes) are "large messages" (1 GiB).
DEFAULT_LARGE_MESSAGE_BYTES = 1 << 30


@dataclass
class NcclDevice:
    """One ``#  Rank ...`` line: which GPU on which host a rank ran on."""

    rank: int
    group: int
    pid: int
    host: str
    device: int
    pci_bus: str
    name: str

    def to_dict(self) -> Dict[str, Any]:
        return {"rank": self.rank, "group": self.group, "pid": self.pid, "host": self.host,
                "device": self.device, "pci_bus": self.pci_bus, "name": self.name}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "NcclDevice":
        return cls(rank=int(data.get("rank", 0)), group=int(data.get("group", 0)), pid=int(data.get("pid", 0)),
                   host=str(data.get("host", "")), device=int(data.get("device", 0)),
                   pci_bus=str(data.get("pci_bus", "")), name=str(data.get("name", "")))


@dataclass
class NcclRow:
    """One message size.  ``None`` stands for ``N/A`` (not measured or not validated)."""

    size: int
    count: int
    dtype: str
    redop: str
    root: int
    oop_time_us: Optional[float] = None
    oop_algbw: Optional[float] = None
    oop_busbw: Optional[float] = None
    oop_wrong: Optional[int] = None
    ip_time_us: Optional[float] = None
    ip_algbw: Optional[float] = None
    ip_busbw: Optional[float] = None
    ip_wrong: Optional[int] = None

    @property
    def best_busbw(self) -> Optional[float]:
        """max(out-of-place, in-place) busbw, ignoring ``N/A``."""
        values = [v for v in (self.oop_busbw, self.ip_busbw) if v is not None and not math.isnan(v)]
        return max(values) if values else None

    @property
    def wrong(self) -> int:
        """Wrong elements over both variants (``N/A`` counts as 0)."""
        return sum(v for v in (self.oop_wrong, self.ip_wrong) if v is not None and v > 0)

    def to_dict(self) -> Dict[str, Any]:
        return {"size": self.size, "count": self.count, "type": self.dtype, "redop": self.redop, "root": self.root,
                "out_of_place": {"time_us": self.oop_time_us, "algbw": self.oop_algbw, "busbw": self.oop_busbw,
                                 "wrong": self.oop_wrong},
                "in_place": {"time_us": self.ip_time_us, "algbw": self.ip_algbw, "busbw": self.ip_busbw,
                             "wrong": self.ip_wrong}}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "NcclRow":
        oop = data.get("out_of_place") or {}
        ip = data.get("in_place") or {}
        return cls(size=int(data.get("size", 0)), count=int(data.get("count", 0)), dtype=str(data.get("type", "")),
                   redop=str(data.get("redop", "")), root=int(data.get("root", -1)),
                   oop_time_us=opt_float(oop.get("time_us")), oop_algbw=opt_float(oop.get("algbw")),
                   oop_busbw=opt_float(oop.get("busbw")), oop_wrong=_opt_int(oop.get("wrong")),
                   ip_time_us=opt_float(ip.get("time_us")), ip_algbw=opt_float(ip.get("algbw")),
                   ip_busbw=opt_float(ip.get("busbw")), ip_wrong=_opt_int(ip.get("wrong")))


@dataclass
class NcclResult:
    """Everything one nccl-tests run said, plus the verdict of the parser.

    ``ranks`` is the size of the communicator whose numbers are printed (the ranks of rank 0's
    group), the ``n`` of the busbw formula.  ``max_busbw`` is the best busbw over all rows and both
    variants; ``large_message_busbw`` the best busbw over rows with ``size >= large_message_cutoff``
    (or, when the sweep never reaches the cutoff, of the largest size present - with a warning).
    ``avg_busbw`` is nccl-tests' own average over all sizes; it depends on the size range swept
    and is reported, never gated on.
    """

    collective: Optional[str] = None
    ranks: int = 0
    hosts: List[str] = field(default_factory=list)
    devices: List[NcclDevice] = field(default_factory=list)
    rows: List[NcclRow] = field(default_factory=list)
    avg_busbw: Optional[float] = None
    max_busbw: Optional[float] = None
    large_message_busbw: Optional[float] = None
    large_message_cutoff: int = DEFAULT_LARGE_MESSAGE_BYTES
    large_message_size: Optional[int] = None
    out_of_bounds: Optional[int] = None
    ok: bool = False
    reasons: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)
    parameters: Dict[str, Any] = field(default_factory=dict)
    nccl_version: Optional[str] = None
    tests_version: Optional[str] = None
    source: str = "<string>"

    @property
    def device_names(self) -> List[str]:
        """Distinct GPU names, in rank order."""
        return unique_in_order(d.name for d in self.devices if d.name)

    def to_dict(self) -> Dict[str, Any]:
        return {"collective": self.collective, "ranks": self.ranks, "hosts": list(self.hosts),
                "devices": [d.to_dict() for d in self.devices], "rows": [r.to_dict() for r in self.rows],
                "avg_busbw": self.avg_busbw, "max_busbw": self.max_busbw,
                "large_message_busbw": self.large_message_busbw, "large_message_cutoff": self.large_message_cutoff,
                "large_message_size": self.large_message_size, "out_of_bounds": self.out_of_bounds, "ok": self.ok,
                "reasons": list(self.reasons), "warnings": list(self.warnings), "parameters": dict(self.parameters),
                "nccl_version": self.nccl_version, "tests_version": self.tests_version, "source": self.source}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "NcclResult":
        return cls(collective=data.get("collective"), ranks=int(data.get("ranks") or 0),
                   hosts=[str(h) for h in data.get("hosts") or []],
                   devices=[NcclDevice.from_dict(d) for d in data.get("devices") or []],
                   rows=[NcclRow.from_dict(r) for r in data.get("rows") or []],
                   avg_busbw=opt_float(data.get("avg_busbw")), max_busbw=opt_float(data.get("max_busbw")),
                   large_message_busbw=opt_float(data.get("large_message_busbw")),
                   large_message_cutoff=int(data.get("large_message_cutoff") or DEFAULT_LARGE_MESSAGE_BYTES),
                   large_message_size=_opt_int(data.get("large_message_size")),
                   out_of_bounds=_opt_int(data.get("out_of_bounds")), ok=bool(data.get("ok")),
                   reasons=[str(r) for r in data.get("reasons") or []],
                   warnings=[str(w) for w in data.get("warnings") or []],
                   parameters=dict(data.get("parameters") or {}), nccl_version=data.get("nccl_version"),
                   tests_version=data.get("tests_version"), source=str(data.get("source") or "<string>"))


def opt_float(value: Any) -> Optional[float]:
    """``value`` as a float, or None (None, a bool or not a number)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _opt_int(value: Any) -> Optional[int]:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError, OverflowError):
            return None


def unique_in_order(items: Iterable[str]) -> List[str]:
    """``items`` without repeats, in the order they first appear."""
    seen: Dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)
