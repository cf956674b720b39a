# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The nccl-tests collectives: their canonical names and the bus-bandwidth convention of each.

:func:`canonical_collective` maps a binary, file or API name (``all_reduce_perf_mpi``, ``AllReduce``, ``allreduce``)
to one of :data:`COLLECTIVES`. :func:`busbw_factor` is nccl-tests' bus-bandwidth factor (busbw = algbw x factor);
:func:`legacy_busbw_factor` the one nccl-tests printed before mid-2020 where it differs (NVIDIA/nccl-tests issue #45).
"""
from __future__ import annotations

import os
import re
from typing import Optional

#: Canonical collective names (the nccl-tests binary name without ``_perf``).
COLLECTIVES = ("all_reduce", "all_gather", "alltoall", "reduce_scatter", "broadcast", "reduce",
               "sendrecv", "hypercube", "gather", "scatter")

_ALIASES = {
    "allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
    "all_to_all": "alltoall", "alltoall": "alltoall", "send_recv": "sendrecv", "sendrecv": "sendrecv",
}


def canonical_collective(name: Optional[str]) -> Optional[str]:
    """``"all_reduce_perf_mpi"``, ``"AllReduce"``, ``"allreduce"`` -> ``"all_reduce"``; ``None`` if unknown."""
    if not name or not isinstance(name, str):
        return None
    text = os.path.basename(name.strip()).lower()
    text = re.sub(r"\.(log|txt|out)$", "", text)
    text = re.sub(r"(_perf)?(_mpi)?$", "", text).replace("-", "_")
    if text in COLLECTIVES:
        return text
    squashed = text.replace("_", "")
    if squashed in _ALIASES:
        return _ALIASES[squashed]
    if text in _ALIASES:
        return _ALIASES[text]
    return None


def collective_from_file_name(name: str) -> Optional[str]:
    """``all_gather_16rank.log`` -> ``all_gather`` (the longest collective name the file name starts with)."""
    base = os.path.basename(name).lower().replace("-", "_")
    for coll in sorted(COLLECTIVES, key=len, reverse=True):
        if re.match(r"%s(?:_perf)?(?:_mpi)?(?:[_.]|$)" % coll, base):
            return coll
    return canonical_collective(base)


def busbw_factor(collective: str, ranks: int) -> float:
    """nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md and each test's ``GetBw``).

    all_reduce ``2(n-1)/n``; all_gather, reduce_scatter, alltoall, gather, scatter ``(n-1)/n``;
    broadcast, reduce, sendrecv and hypercube ``1`` (hypercube's algbw already counts ``n-1`` peers).
    Raises ``ValueError`` for an unknown collective or ``ranks < 1``.
    """
    canon = canonical_collective(collective)
    if canon is None:
        raise ValueError("unknown collective %r (known: %s)" % (collective, ", ".join(COLLECTIVES)))
    if not isinstance(ranks, int) or isinstance(ranks, bool) or ranks < 1:
        raise ValueError("ranks must be an integer >= 1, got %r" % (ranks,))
    n = float(ranks)
    if canon == "all_reduce":
        return 2.0 * (n - 1.0) / n
    if canon in ("all_gather", "reduce_scatter", "alltoall", "gather", "scatter"):
        return (n - 1.0) / n
    return 1.0


def legacy_busbw_factor(collective: str, ranks: int) -> Optional[float]:
    """busbw / algbw as printed by nccl-tests before mid-2020, where it differs from :func:`busbw_factor`.

    Until NVIDIA/nccl-tests issue #45 was fixed (June 2020), all_gather and reduce_scatter computed
    ``algbw = per-rank bytes x (n-1) / time`` and ``busbw = algbw`` (factor 1; the busbw value itself is the same as
    today's), gather and scatter followed them, and the first alltoall printed ``algbw = total bytes / time`` with
    ``busbw = algbw x n/(n-1)``.  ``None`` for collectives whose convention never changed.
    """
    canon = canonical_collective(collective)
    if canon in ("all_gather", "reduce_scatter", "gather", "scatter"):
        return 1.0
    if canon == "alltoall" and isinstance(ranks, int) and ranks > 1:
        return float(ranks) / float(ranks - 1)
    return None


def expected_busbw(collective: str, algbw: float, ranks: int) -> float:
    """Bus bandwidth nccl-tests derives from ``algbw`` for ``collective`` on ``ranks`` ranks."""
    return float(algbw) * busbw_factor(collective, ranks)
