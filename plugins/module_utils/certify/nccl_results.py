# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Parse the text output of NVIDIA nccl-tests (``all_reduce_perf``, ``all_gather_perf``, ...)
into an :class:`NcclResult`.

The parser never raises on log content: an empty, binary, truncated or failed log gives a
result with ``ok = False`` and one plain-language entry per problem in ``reasons``.  Problems
that do not invalidate the measurement (validation switched off, a sweep that stops short of
the large-message cutoff, ...) go to ``warnings``.

What is read (the format printed by nccl-tests' ``common.cu``/``util.cu``):

* the parameter line ``# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) ...``;
* ``# nccl-tests version ...``, ``# Collective test starting: all_reduce_perf``, ``NCCL version ...``;
* one ``#  Rank  N Group  G Pid  P on HOST device  D [BUS] NAME`` line per rank;
* the column header (``size count type redop root time algbw busbw #wrong ...``) and units line;
* one row per message size: size, count, type, redop (may be blank or ``none``), root, then
  out-of-place and in-place ``time algbw busbw #wrong`` (``N/A`` where not measured/validated);
* ``# Out of bounds values : N OK|FAILED`` and ``# Avg bus bandwidth : X [OK|FAILED]``;
* failure markers: ``NCCL WARN``/``NCCL ERROR`` lines, ``Test NCCL failure``/``Test CUDA failure``/
  ``Test timeout`` lines, and MPI/Slurm launcher abort messages.

Whatever a launcher puts in front of a line (``mpirun --tag-output``, ``srun --label``, ``kubectl logs
--prefix/--timestamps``, ``pdsh``, nested prefixes of cluster tools) is skipped by recognising the nccl-tests line
shapes wherever they start (``nccl_log_lines``); launcher messages wrapped over two lines are rejoined.

Bus bandwidth is re-derived from the algorithm bandwidth with nccl-tests' factors (see
:func:`busbw_factor`, and :func:`legacy_busbw_factor` for nccl-tests before mid-2020); a reported busbw that
differs by more than 2 % plus the printing precision is reported as an inconsistent (edited or mis-labelled) log.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Pattern, Sequence, Tuple, Union

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_log_lines import (
    NCCL_DEBUG_LINE_RE, content_start, continuations, nccl_content, strip_controls)

#: Canonical collective names (the nccl-tests binary name without ``_perf``).
COLLECTIVES = ("all_reduce", "all_gather", "alltoall", "reduce_scatter", "broadcast", "reduce",
               "sendrecv", "hypercube", "gather", "scatter")

#: Rows at or above this size (bytes) are "large messages" (1 GiB).
DEFAULT_LARGE_MESSAGE_BYTES = 1 << 30

#: Relative tolerance between reported busbw and algbw x factor (plus printing precision).
BUSBW_REL_TOLERANCE = 0.02

#: Largest log file :func:`parse_nccl_file` reads (NCCL_DEBUG=INFO logs of big jobs are large).
MAX_LOG_BYTES = 256 * 1024 * 1024

#: At most this many distinct failure messages of one kind are listed; the rest are counted.
MAX_LISTED = 10

_ALIASES = {
    "allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
    "all_to_all": "alltoall", "alltoall": "alltoall", "send_recv": "sendrecv", "sendrecv": "sendrecv",
}

_PARAMS_RE = re.compile(
    r"nThread\s+(?P<nthread>\d+)\s+nGpus\s+(?P<ngpus>\d+)\s+minBytes\s+(?P<min_bytes>\d+)\s+maxBytes\s+(?P<max_bytes>\d+)"
    r"(?:\s+step:\s+(?P<step>\d+)\((?P<step_kind>factor|bytes)\))?"
    r"(?:\s+warmup iters:\s+(?P<warmup_iters>\d+))?(?:\s+iters:\s+(?P<iters>\d+))?"
    r"(?:\s+agg iters:\s+(?P<agg_iters>\d+))?(?:\s+validation:\s+(?P<validation>\d+))?"
    r"(?:\s+graph:\s+(?P<graph>\d+))?")
_RANK_RE = re.compile(r"^#?\s*Rank\s+(\d+)(?:\s+Group\s+(\d+))?\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*?)\s*$")
_TESTS_VERSION_RE = re.compile(r"nccl-tests version\s+(\S+)")
_NCCL_VERSION_RE = re.compile(r"\bNCCL version\s+(\S+)")
_STARTING_RE = re.compile(r"Collective test starting:\s*(\S+)")
_CONCLUDED_RE = re.compile(r"Collective test concluded:\s*(\S+)")
_OOB_RE = re.compile(r"Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?")
_AVG_RE = re.compile(r"Avg bus bandwidth\s*:\s*(\S+)\s*(OK|FAILED)?")
_REDUCING_RE = re.compile(r"Reducing maxBytes to\s+(\d+)")
_BINARY_RE = re.compile(r"\b(all_reduce|all_gather|alltoall|reduce_scatter|broadcast|reduce|sendrecv|hypercube|gather|scatter)_perf(?:_mpi)?\b")
_NCCL_MSG_RE = re.compile(r"\bNCCL (WARN|ERROR)\b:?\s*(.*)$")
_NCCL_INFO_RE = re.compile(r"\bNCCL INFO\b")
_NCCL_HOST_RE = re.compile(r"^\s*\[?([A-Za-z0-9_.-]+?)(?:\]|:|\s)")
_TEST_FAIL_RE = re.compile(r"(?:([A-Za-z0-9_.-]+):\s+)?"
                           r"(Test (?:NCCL |CUDA )?failure|Test timeout|Cuda failure|NCCL failure|Failed, NCCL error|Failed: Cuda error)"
                           r"\b\s*(.*)$")
_TEST_TRACE_RE = re.compile(r"(?:^|\s)\.\.\s+\S+\s+pid\s+\d+:\s+Test failure")
_HYPERCUBE_SKIP_RE = re.compile(r"nRanks\s+(\d+)\s+is not a power of 2, skipping")
_NON_TEXT_RE = re.compile("[\x00-\x08\x0e-\x1f\x7f\ufffd]")
_INT_RE = re.compile(r"^-?\d+$")
_TYPE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_ABORT_RES = (
    (re.compile(r"(?:mpirun|prterun) noticed that process rank\s+(\d+).*?(?:on node\s+(\S+))?\s+exited\s+on\s+signal\s+(\d+)"
                r"(?:\s*\(([^)]*)\))?"),
     "MPI run aborted: rank %s%s exited on signal %s%s", 1),
    (re.compile(r"Primary\s+job\s+terminated\s+normally,\s+but\s+(\d+)\s+process(?:es)?\s+returned"),
     "MPI run aborted: %s process(es) returned a non-zero exit code", 0),
    (re.compile(r"MPI_ABORT\s+was\s+invoked\s+on\s+rank\s+(\d+)"), "MPI_ABORT was invoked on rank %s", 1),
    (re.compile(r"mpirun\s+detected\s+that\s+one\s+or\s+more\s+processes\s+exited\s+with\s+non-zero\s+status"),
     "MPI run aborted: one or more processes exited with non-zero status", 0),
    (re.compile(r"mpirun\s+has\s+exited\s+due\s+to\s+process\s+rank\s+(\d+)"), "MPI run aborted: process rank %s exited improperly", 1),
    (re.compile(r"ORTE\s+has\s+lost\s+communication\s+with\s+a\s+remote\s+daemon"),
     "MPI run aborted: lost communication with a remote daemon", 0),
    (re.compile(r"(?:ORTE|PRTE)\s+was\s+unable\s+to\s+reliably\s+start\s+one\s+or\s+more\s+daemons"),
     "MPI launcher could not start its daemons on every host", 0),
    (re.compile(r"(?:mpirun|prterun)\s+noticed\s+that\s+the\s+job\s+aborted"), "MPI run aborted (the launcher does not know which process)", 0),
    (re.compile(r"(?:^|\s|:)ssh: connect to host (\S+) port \d+: (.*?)\s*$"), "cannot reach host %s over ssh: %s", 1),
    (re.compile(r"srun: error: (\S+?):?\s+tasks?\s+([\d,\[\]-]+):\s+(\S.*?)\.?\s*$"), "Slurm step failed on %s (task %s): %s", 2),
    (re.compile(r"\*\*\* (?:STEP|JOB) \S+ ON \S+ CANCELLED"), "Slurm job or step was cancelled", 0),
)
#: Words that start a launcher message: a line holding one may be continued on the next line.
_LAUNCHER_START_RE = re.compile(r"mpirun|prterun|Primary\s+job|MPI_ABORT|ORTE|PRTE|srun:|ssh:|\*\*\* (?:STEP|JOB)")
#: Lines a launcher message may be wrapped over (the message's first line is kept this many lines).
_PENDING_LINES = 3
_BOX_RE = re.compile(r"^-{10,}$")


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


def _collective_from_file_name(name: str) -> Optional[str]:
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
                   oop_time_us=_opt_float(oop.get("time_us")), oop_algbw=_opt_float(oop.get("algbw")),
                   oop_busbw=_opt_float(oop.get("busbw")), oop_wrong=_opt_int(oop.get("wrong")),
                   ip_time_us=_opt_float(ip.get("time_us")), ip_algbw=_opt_float(ip.get("algbw")),
                   ip_busbw=_opt_float(ip.get("busbw")), ip_wrong=_opt_int(ip.get("wrong")))


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
        return _unique(d.name for d in self.devices if d.name)

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
                   avg_busbw=_opt_float(data.get("avg_busbw")), max_busbw=_opt_float(data.get("max_busbw")),
                   large_message_busbw=_opt_float(data.get("large_message_busbw")),
                   large_message_cutoff=int(data.get("large_message_cutoff") or DEFAULT_LARGE_MESSAGE_BYTES),
                   large_message_size=_opt_int(data.get("large_message_size")),
                   out_of_bounds=_opt_int(data.get("out_of_bounds")), ok=bool(data.get("ok")),
                   reasons=[str(r) for r in data.get("reasons") or []],
                   warnings=[str(w) for w in data.get("warnings") or []],
                   parameters=dict(data.get("parameters") or {}), nccl_version=data.get("nccl_version"),
                   tests_version=data.get("tests_version"), source=str(data.get("source") or "<string>"))


def _opt_float(value: Any) -> Optional[float]:
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


def _unique(items: Iterable[str]) -> List[str]:
    seen: Dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)


def _fmt_size(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return "%d %s" % (size // scale, unit)
    return "%d B" % size


def _value(token: str) -> Tuple[Optional[float], float]:
    """A printed float and half of its last printed digit (the rounding error)."""
    if token.upper() in ("N/A", "NA", "-"):
        return None, 0.0
    number = float(token)  # ValueError handled by the caller
    if "e" in token.lower():
        mantissa = token.lower().split("e")[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        return number, 0.5 * (10.0 ** -decimals) * 10.0 ** math.floor(math.log10(abs(number))) if number else 0.5
    decimals = len(token.split(".")[1]) if "." in token else 0
    return number, 0.5 * 10.0 ** -decimals


def _wrong(token: str) -> Optional[int]:
    if token.upper() in ("N/A", "NA", "-"):
        return None
    number = float(token)
    if math.isnan(number):
        return None
    return int(number)


def _clean(line: str) -> str:
    return nccl_content(line)


def _prefix_shape(prefix: str) -> Optional[Pattern[str]]:
    """A pattern for prefixes shaped like ``prefix`` (digits may differ: ranks, pids, time stamps)."""
    if not prefix.strip():
        return None
    parts = re.split(r"(\d+|\s+)", prefix)
    pattern = "".join(r"\d+" if part.isdigit() else (r"\s*" if part.isspace() else re.escape(part)) for part in parts if part)
    return re.compile(r"\s*" + pattern)


def _listed(items: Sequence[str], limit: int, noun: str = "more") -> str:
    """``a, b, c and 7 more``: at most ``limit`` items, and how many were left out."""
    shown = ", ".join(items[:limit])
    if len(items) > limit:
        shown += " and %d %s" % (len(items) - limit, noun)
    return shown


def _decode(data: Union[str, bytes]) -> Tuple[str, int]:
    """Text and the number of characters that are not printable text (binary noise)."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, (bytes, bytearray)) else str(data)
    return text, len(_NON_TEXT_RE.findall(text))


@dataclass
class _RowTokens:
    """Printed strings of one row kept for the busbw cross-check (not part of the result)."""

    row: NcclRow
    oop: Tuple[Tuple[Optional[float], float], Tuple[Optional[float], float]]
    ip: Tuple[Tuple[Optional[float], float], Tuple[Optional[float], float]]


class _Parser:
    """Single pass over the lines of one run."""

    def __init__(self, source: str, ignore_warn: Sequence[str]) -> None:
        self.source = source
        self.ignore_warn = [re.compile(p) for p in ignore_warn]
        self.params: Dict[str, Any] = {}
        self.devices: List[NcclDevice] = []
        self.rows: List[_RowTokens] = []
        self.collective_started: Optional[str] = None
        self.collective_binary: Optional[str] = None
        self.tests_version: Optional[str] = None
        self.nccl_version: Optional[str] = None
        self.has_root_column = True
        self.seen_columns = False
        self.avg: Optional[float] = None
        self.avg_seen = False
        self.avg_failed = False
        self.oob: Optional[int] = None
        self.oob_failed = False
        self.reduced_max: Optional[int] = None
        self.partial_rows: List[str] = []
        self.headers = 0
        self.recognised = 0
        self.unrecognised = 0
        self.info_lines = 0
        self.nccl_msgs: Dict[Tuple[str, str], List[str]] = {}
        self.ignored_warns: Dict[str, int] = {}
        self.test_failures: Dict[str, List[str]] = {}
        self.trace_lines = 0
        self.aborts: Dict[Tuple[Any, ...], str] = {}
        self.pending: List[str] = []
        self.pending_prefix: Optional[Pattern[str]] = None
        self.rank_lines_without_group = 0
        self.first_unrecognised: Optional[str] = None
        self.last_line_incomplete = False
        self.other_reasons: List[str] = []
        self.old_error_column = False
        self.single_variant_rows = 0

    # -- line handlers ---------------------------------------------------------------------------
    def feed(self, raw: str, last: bool = False) -> None:
        full = strip_controls(raw).strip()
        if not full:
            return
        stripped = nccl_content(full).strip()
        body = stripped.lstrip("#").strip()
        if _NCCL_INFO_RE.search(full):  # the bulk of NCCL_DEBUG=INFO logs: cheapest test first
            self.info_lines += 1
            self.recognised += 1
            match = _NCCL_VERSION_RE.search(full)
            if match and not self.nccl_version:
                self.nccl_version = match.group(1)
            return
        if self._feed_failure(full):
            self.recognised += 1
            return
        if self._feed_metadata(stripped, body):
            self.recognised += 1
            return
        if last and self.last_line_incomplete and self._looks_like_row(stripped):
            # the text ends inside this line: a row cut anywhere would still parse, with wrong numbers
            self.partial_rows.append(stripped)
            self.recognised += 1
            return
        if self._feed_row(stripped):
            self.recognised += 1
            return
        if stripped.startswith("#") or _BOX_RE.match(stripped):
            self.recognised += 1
            return
        self.unrecognised += 1
        if self.first_unrecognised is None:
            self.first_unrecognised = full[:120]

    @staticmethod
    def _looks_like_row(line: str) -> bool:
        tokens = line.split()
        return len(tokens) >= 3 and bool(_INT_RE.match(tokens[0]) and _INT_RE.match(tokens[1]) and _TYPE_RE.match(tokens[2]))

    def _add_abort(self, key: Tuple[Any, ...], message: str) -> None:
        old = self.aborts.get(key)
        if old is None or len(message) > len(old):  # a wrapped message read whole replaces its first line
            self.aborts[key] = message

    def _match_aborts(self, text: str, after: int = -1) -> List[Tuple[Tuple[Any, ...], str]]:
        found = []
        for index, (regex, template, key_groups) in enumerate(_ABORT_RES):
            match = regex.search(text)
            if not match or match.end() <= after:
                continue
            groups = match.groups()
            if index == 0:
                rank, node, signal, name = groups
                message = template % (rank, (" on " + node) if node else "", signal, (" (%s)" % name) if name else "")
            else:
                message = template % groups if groups else template
            found.append(((index,) + groups[:key_groups], message))
        return found

    def _feed_launcher(self, line: str) -> bool:
        """Launcher messages (MPI, Slurm, ssh), also when wrapped over two lines."""
        starts = _LAUNCHER_START_RE.search(line)
        if not starts and not self.pending:
            return False
        found = self._match_aborts(line) if starts else []
        joined = False
        # a continuation is neither nccl-tests output nor the start of another launcher message
        if self.pending and not _BOX_RE.match(line) and content_start(line) < 0 and not starts:
            for start in range(len(self.pending)):
                head = " ".join(self.pending[start:])
                # the tail that starts where this line's prefix ends reads as the longest message
                best: List[Tuple[Tuple[Any, ...], str]] = []
                same = self.pending_prefix.match(line) if self.pending_prefix else None
                if same:  # this line carries a prefix of the same shape as the message's first line: skip it
                    best = self._match_aborts(head + " " + line[same.end():].strip(), after=len(head) + 1)
                for tail in [] if best else continuations(line):
                    hits = self._match_aborts(head + " " + tail, after=len(head) + 1)
                    if hits and sum(len(m) for _k, m in hits) > sum(len(m) for _k, m in best):
                        best = hits
                if best:
                    found.extend(best)
                    joined = True
                    break
        for key, message in found:
            self._add_abort(key, message)
        if joined:
            self.pending = []
        elif starts:
            self.pending = [line[starts.start():]]
            self.pending_prefix = _prefix_shape(line[:starts.start()])
        elif self.pending and not _BOX_RE.match(line):
            same = self.pending_prefix.match(line) if self.pending_prefix else None
            self.pending.append(line[same.end():] if same else line)
            if len(self.pending) > _PENDING_LINES:
                self.pending = []
        return bool(found)

    def _feed_failure(self, line: str) -> bool:
        match = _NCCL_MSG_RE.search(line) if "NCCL" in line else None
        if match:
            level, message = match.group(1), match.group(2).strip()
            debug = NCCL_DEBUG_LINE_RE.search(line)
            if debug:
                host = debug.group(1)
            else:
                host_match = _NCCL_HOST_RE.match(nccl_content(line[:match.start()]) or line[:match.start()])
                host = host_match.group(1) if host_match else ""
            if any(p.search(message) for p in self.ignore_warn):
                self.ignored_warns[message] = self.ignored_warns.get(message, 0) + 1
            else:
                self.nccl_msgs.setdefault((level, message), []).append(host)
            return True
        if "ail" not in line and "imeout" not in line:  # every failure line below says fail/Failed/timeout
            return self._feed_launcher(line) or self._feed_hypercube(line)
        if _TEST_TRACE_RE.search(line):
            self.trace_lines += 1
            return True
        match = _TEST_FAIL_RE.search(line)
        if match:
            host = match.group(1) or ""
            text = ("%s %s" % (match.group(2), match.group(3).strip())).strip()
            self.test_failures.setdefault(text, []).append(host)
            return True
        if self._feed_launcher(line):
            return True
        return self._feed_hypercube(line)

    def _feed_hypercube(self, line: str) -> bool:
        match = _HYPERCUBE_SKIP_RE.search(line) if "power of 2" in line else None
        if match:
            self.other_reasons.append("hypercube_perf skipped the test: %s ranks is not a power of 2" % match.group(1))
            return True
        return False

    def _feed_metadata(self, line: str, body: str) -> bool:
        match = _PARAMS_RE.search(body)
        if match and body.startswith("nThread"):
            self.headers += 1
            if self.headers == 1:
                for key, value in match.groupdict().items():
                    if value is None:
                        continue
                    self.params[key] = value if key == "step_kind" else int(value)
            return True
        match = _RANK_RE.match(line)
        if match:
            rank, group, pid, host, device, bus, name = match.groups()
            if group is None:
                self.rank_lines_without_group += 1
            self.devices.append(NcclDevice(rank=int(rank), group=int(group or 0), pid=int(pid), host=host,
                                           device=int(device), pci_bus=bus, name=name))
            return True
        match = _TESTS_VERSION_RE.search(body)
        if match:
            self.tests_version = match.group(1)
            return True
        match = _STARTING_RE.search(body)
        if match:
            self.collective_started = canonical_collective(match.group(1))
            return True
        if _CONCLUDED_RE.search(body):
            return True
        match = _NCCL_VERSION_RE.search(body)
        if match:
            self.nccl_version = match.group(1)
            return True
        words = body.split()
        if "size" in words and "busbw" in words and "count" in words:
            self.seen_columns = True
            self.has_root_column = "root" in words
            self.old_error_column = "#wrong" not in words and "error" in words
            return True
        if "(B)" in words and "(elements)" in words:
            return True
        match = _OOB_RE.search(body)
        if match:
            self.oob = int(match.group(1))
            self.oob_failed = match.group(2) == "FAILED"
            return True
        match = _AVG_RE.search(body)
        if match:
            self.avg_seen = True
            self.avg = _opt_float(match.group(1))
            self.avg_failed = match.group(2) == "FAILED"
            return True
        match = _REDUCING_RE.search(body)
        if match:
            self.reduced_max = int(match.group(1))
            return True
        match = _BINARY_RE.search(line)
        if match and self.collective_binary is None:
            self.collective_binary = match.group(1)
            return False  # a command line is context, not nccl-tests output
        return False

    def _feed_row(self, line: str) -> bool:
        tokens = line.split()
        if len(tokens) < 4 or not (_INT_RE.match(tokens[0]) and _INT_RE.match(tokens[1]) and _TYPE_RE.match(tokens[2])):
            return False
        if tokens[0].startswith("-") or tokens[1].startswith("-"):
            return False
        size, count, dtype = int(tokens[0]), int(tokens[1]), tokens[2]
        rest = tokens[3:]
        redop = ""
        root = -1
        if self.has_root_column:
            if _INT_RE.match(rest[0]):  # blank redop (older broadcast/gather/scatter/hypercube)
                root = int(rest[0])
                rest = rest[1:]
            elif len(rest) >= 2 and _INT_RE.match(rest[1]):
                redop, root = rest[0], int(rest[1])
                rest = rest[2:]
            else:
                return False
        else:
            if not _INT_RE.match(rest[0]) and _TYPE_RE.match(rest[0]):
                redop, rest = rest[0], rest[1:]
        if len(rest) < 4:
            self.partial_rows.append(line.strip())
            return True
        try:
            groups = [rest[0:4], rest[4:8]] if len(rest) >= 8 else [rest[0:4]]
            parsed = [(_value(g[0]), _value(g[1]), _value(g[2]), self._wrong_value(g[3])) for g in groups]
        except (ValueError, OverflowError):
            self.partial_rows.append(line.strip())
            return True
        row = NcclRow(size=size, count=count, dtype=dtype, redop=redop or "none", root=root)
        empty = ((None, 0.0), (None, 0.0))
        oop_tokens, ip_tokens = empty, empty
        if len(parsed) == 1:
            self.single_variant_rows += 1
            gap = re.search(r"\s%s\s+" % re.escape(str(root)), line)
            in_place_only = bool(gap and len(gap.group(0)) > 24)
            target = "ip" if in_place_only else "oop"
            parsed.append(((None, 0.0), (None, 0.0), (None, 0.0), None))
            if target == "ip":
                parsed.reverse()
        (t1, a1, b1, w1), (t2, a2, b2, w2) = parsed
        row.oop_time_us, row.oop_algbw, row.oop_busbw, row.oop_wrong = t1[0], a1[0], b1[0], w1
        row.ip_time_us, row.ip_algbw, row.ip_busbw, row.ip_wrong = t2[0], a2[0], b2[0], w2
        oop_tokens, ip_tokens = (a1, b1), (a2, b2)
        self.rows.append(_RowTokens(row=row, oop=oop_tokens, ip=ip_tokens))
        return True

    def _wrong_value(self, token: str) -> Optional[int]:
        if self.old_error_column:  # a maximum error, not a count: the Out of bounds line decides
            return None
        return _wrong(token)

    # -- verdict ---------------------------------------------------------------------------------
    def result(self, collective: Optional[str], ranks: Optional[int], cutoff: int,
               bad_chars: int, total_chars: int, file_hint: Optional[str]) -> NcclResult:
        reasons: List[str] = []
        warnings: List[str] = []
        rows = [t.row for t in self.rows]
        res = NcclResult(rows=rows, devices=list(self.devices), parameters=dict(self.params),
                         nccl_version=self.nccl_version, tests_version=self.tests_version, source=self.source,
                         large_message_cutoff=cutoff, avg_busbw=self.avg, out_of_bounds=self.oob)
        res.hosts = _unique(d.host for d in self.devices)

        if total_chars == 0 or (not rows and self.recognised == 0 and self.unrecognised == 0 and bad_chars == 0):
            reasons.append("empty log: no nccl-tests output at all")
            res.reasons, res.warnings = reasons, warnings
            return res
        recognised_output = bool(self.params or rows or self.devices or self.avg_seen or self.seen_columns)
        if bad_chars and total_chars and bad_chars * 10 >= total_chars:
            reasons.append("log is binary or garbage: %d of %d characters are not text" % (bad_chars, total_chars))
        elif bad_chars:
            warnings.append("%d non-text characters in the log were ignored" % bad_chars)

        # which collective, how many ranks
        res.collective = self._collective(collective, file_hint, warnings)
        res.ranks = self._ranks(ranks, res.collective, warnings)

        self._failure_reasons(reasons, warnings)
        if not recognised_output:
            if not reasons:
                reasons.append("no nccl-tests output recognised (%d lines, no parameter line, no result rows)"
                               % (self.unrecognised,))
            else:
                reasons.append("no nccl-tests result in the log")
        else:
            self._completeness(reasons, warnings)
        self._data_checks(reasons, warnings)
        self._busbw_checks(res, reasons, warnings)
        self._bandwidth_summary(res, warnings)
        res.reasons, res.warnings = reasons, warnings
        res.ok = not reasons
        return res

    def _collective(self, given: Optional[str], file_hint: Optional[str], warnings: List[str]) -> Optional[str]:
        found = self.collective_started or canonical_collective(self.collective_binary)
        if given:
            canon = canonical_collective(given)
            if canon is None:
                warnings.append("unknown collective %r given; busbw is not cross-checked" % given)
                return None
            if found and found != canon:
                warnings.append("collective %s was given but the log says %s; using %s" % (canon, found, canon))
            return canon
        if found:
            return found
        hint = _collective_from_file_name(file_hint) if file_hint else None
        if hint:
            warnings.append("collective %s taken from the file name %s" % (hint, file_hint))
            return hint
        if not self.rows:
            return None
        warnings.append("collective not named in the log (no 'Collective test starting' line or *_perf command); "
                        "busbw is not cross-checked")
        return None

    def _ranks(self, given: Optional[int], collective: Optional[str], warnings: List[str]) -> int:
        if self.devices:
            group0 = self.devices[0].group
            in_group = [d for d in self.devices if d.group == group0]
            if len(in_group) != len(self.devices):
                warnings.append("ranks are split into %d NCCL communicators (NCCL_TESTS_SPLIT_MASK); busbw is that of "
                                "group %d with %d ranks" % (len(_unique(str(d.group) for d in self.devices)), group0,
                                                            len(in_group)))
            listed = len(in_group)
            if given and given != listed:
                warnings.append("ranks=%d was given but the log lists %d ranks; using %d" % (given, listed, given))
                return given
            return listed
        if given:
            return given
        inferred = self._infer_ranks(collective)
        if inferred:
            warnings.append("no '#  Rank' lines in the log; %d ranks inferred from busbw/algbw" % inferred)
            return inferred
        if self.rows:
            warnings.append("number of ranks unknown (no '#  Rank' lines); busbw is not cross-checked")
        return 0

    def _infer_ranks(self, collective: Optional[str]) -> int:
        if collective not in ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "gather", "scatter"):
            return 0
        best = None
        for tokens in self.rows:
            for (alg, _a), (bus, _b) in (tokens.oop, tokens.ip):
                if alg and bus and alg >= 1.0 and (best is None or alg > best[0]):
                    best = (alg, bus)
        if best is None:
            return 0
        ratio = best[1] / best[0]
        if collective == "all_reduce":
            if ratio >= 1.999:
                return 0
            n = 2.0 / (2.0 - ratio)
        else:
            if ratio >= 0.999:
                return 0
            n = 1.0 / (1.0 - ratio)
        return int(round(n)) if n >= 1.5 else 0

    def _failure_reasons(self, reasons: List[str], warnings: List[str]) -> None:
        listed = 0
        for (level, message), hosts in self.nccl_msgs.items():
            if listed >= MAX_LISTED:
                break
            named = [h for h in _unique(hosts) if h]
            where = (" on " + _listed(named, 4, "more hosts")) if named else ""
            plural = "" if len(hosts) == 1 else "s"
            reasons.append("NCCL %s%s (%d line%s): %s" % (level, where, len(hosts), plural, message or "(no message)"))
            listed += 1
        if len(self.nccl_msgs) > MAX_LISTED:
            reasons.append("... and %d more distinct NCCL WARN/ERROR messages" % (len(self.nccl_msgs) - MAX_LISTED))
        for message, count in self.ignored_warns.items():
            warnings.append("ignored NCCL WARN (%d line%s): %s" % (count, "" if count == 1 else "s", message))
        for text, hosts in list(self.test_failures.items())[:MAX_LISTED]:
            named = [h for h in _unique(hosts) if h]
            if len(hosts) == 1:
                reasons.append("nccl-tests failed: %s" % (("%s: %s" % (named[0], text)) if named else text))
            else:
                where = (" on %d host%s (%s)" % (len(named), "" if len(named) == 1 else "s", _listed(named, 4, "more"))
                         if named else "")
                reasons.append("nccl-tests failed%s, %d lines: %s" % (where, len(hosts), text))
        if len(self.test_failures) > MAX_LISTED:
            reasons.append("... and %d more distinct nccl-tests failure messages" % (len(self.test_failures) - MAX_LISTED))
        if self.trace_lines and not self.test_failures:
            reasons.append("nccl-tests failed (%d 'Test failure' trace lines)" % self.trace_lines)
        reasons.extend(self.aborts.values())
        reasons.extend(_unique(self.other_reasons))

    def _completeness(self, reasons: List[str], warnings: List[str]) -> None:
        rows = [t.row for t in self.rows]
        if not rows and self.avg_seen:
            reasons.append("no result rows could be read although the log reports 'Avg bus bandwidth : %s': the rows are "
                           "in a format this parser does not know%s"
                           % (self.avg, (" (first unrecognised line: %r)" % self.first_unrecognised) if self.first_unrecognised else ""))
        elif not rows and self.partial_rows:
            reasons.append("no complete result row: the log ends inside the first one")
        elif not rows:
            reasons.append("no result rows: the run stopped before the first message size was measured")
        elif not self.avg_seen:
            reasons.append("truncated log: no 'Avg bus bandwidth' line after %d row%s (last size %s)"
                           % (len(rows), "" if len(rows) == 1 else "s", _fmt_size(rows[-1].size)))
        if self.partial_rows:
            reasons.append("truncated or malformed result row: %r" % self.partial_rows[-1][:120])
        if self.single_variant_rows:
            warnings.append("%d row(s) carry only one of out-of-place/in-place" % self.single_variant_rows)
        if self.reduced_max:
            warnings.append("nccl-tests reduced maxBytes to %d because of GPU memory" % self.reduced_max)
        max_bytes = self.reduced_max or self.params.get("max_bytes")
        if rows and self.avg_seen and max_bytes and self.params.get("step_kind") == "factor":
            factor = max(int(self.params.get("step") or 2), 2)
            last = max(r.size for r in rows)
            if last * factor <= max_bytes:
                warnings.append("sweep ended at %s although maxBytes is %s" % (_fmt_size(last), _fmt_size(max_bytes)))
        if self.params and not self.params.get("validation", 1):
            warnings.append("data validation was off (-c 0): corruption would go unnoticed (#wrong is N/A)")

    def _data_checks(self, reasons: List[str], warnings: List[str]) -> None:
        rows = [t.row for t in self.rows]
        bad = [r for r in rows if r.wrong > 0]
        if bad:
            sizes = _listed(["%s (%d)" % (_fmt_size(r.size), r.wrong) for r in bad], MAX_LISTED)
            reasons.append("data corruption: #wrong > 0 at %d size%s: %s" % (len(bad), "" if len(bad) == 1 else "s", sizes))
        if self.oob_failed or (self.oob or 0) > 0:
            reasons.append("nccl-tests reported %d out-of-bounds (wrong) values (FAILED)" % (self.oob or 0))
        if self.avg_failed:
            reasons.append("nccl-tests' own NCCL_TESTS_MIN_BW check FAILED (avg bus bandwidth %s)" % self.avg)
        if self.old_error_column:
            warnings.append("old nccl-tests format: the 'error' column is a maximum error, not a count")

    def legacy_format(self) -> bool:
        """The log was written by an nccl-tests old enough to use the pre-mid-2020 bandwidth convention: no version
        line, and the ``error`` column (replaced by ``#wrong`` later) or ``#  Rank`` lines without ``Group``."""
        if self.tests_version:
            return False
        return self.old_error_column or bool(self.devices and self.rank_lines_without_group == len(self.devices)
                                             and not self.seen_columns)

    def _busbw_mismatches(self, factor: float) -> List[str]:
        off: List[str] = []
        for tokens in self.rows:
            for label, ((alg, alg_q), (bus, bus_q)) in (("out-of-place", tokens.oop), ("in-place", tokens.ip)):
                if alg is None or bus is None:
                    continue
                expected = alg * factor
                tolerance = BUSBW_REL_TOLERANCE * expected + factor * alg_q + bus_q
                if abs(bus - expected) > tolerance:
                    off.append("%s %s: busbw %.2f, algbw %.2f x %.4f = %.2f"
                               % (_fmt_size(tokens.row.size), label, bus, alg, factor, expected))
        return off

    def _busbw_checks(self, res: NcclResult, reasons: List[str], warnings: List[str]) -> None:
        if not res.collective or res.ranks < 1 or not self.rows:
            return
        factor = busbw_factor(res.collective, res.ranks)
        off = self._busbw_mismatches(factor)
        legacy = legacy_busbw_factor(res.collective, res.ranks) if self.legacy_format() else None
        if off and legacy is not None:
            legacy_off = self._busbw_mismatches(legacy)
            if not legacy_off:
                warnings.append("old nccl-tests bandwidth convention (before mid-2020, NVIDIA/nccl-tests issue #45): "
                                "busbw = algbw x %.4f for %s on %d ranks; busbw is comparable with newer logs, algbw is not"
                                % (float(legacy), res.collective, res.ranks))
                return
            if len(legacy_off) < len(off):
                factor, off = legacy, legacy_off
        if off:
            reasons.append("inconsistent log: reported busbw does not match algbw x %.4f (%s, %d ranks) in %d place%s, "
                           "e.g. %s" % (factor, res.collective, res.ranks, len(off), "" if len(off) == 1 else "s",
                                        "; ".join(off[:3]) + (" and %d more" % (len(off) - 3) if len(off) > 3 else "")))

    def _bandwidth_summary(self, res: NcclResult, warnings: List[str]) -> None:
        best = [(r.size, r.best_busbw) for r in res.rows if r.best_busbw is not None]
        if not best:
            return
        res.max_busbw = max(b for _s, b in best)
        large = [(s, b) for s, b in best if s >= res.large_message_cutoff]
        if large:
            res.large_message_busbw = max(b for _s, b in large)
            res.large_message_size = min(s for s, _b in large)
        else:
            largest = max(s for s, _b in best)
            res.large_message_busbw = max(b for s, b in best if s == largest)
            res.large_message_size = largest
            warnings.append("no row reaches the large-message cutoff %s; large_message_busbw is taken at the largest "
                            "size %s" % (_fmt_size(res.large_message_cutoff), _fmt_size(largest)))


def _is_run_start(line: str) -> bool:
    if "nThread" not in line:
        return False
    body = _clean(line).strip().lstrip("#").strip()
    return body.startswith("nThread") and bool(_PARAMS_RE.search(body))


def _is_run_preamble(line: str) -> bool:
    body = _clean(line).strip().lstrip("#").strip()
    return bool(_TESTS_VERSION_RE.search(body) or _STARTING_RE.search(body))


def _is_run_trailer(line: str) -> bool:
    body = _clean(line).strip().lstrip("#").strip()
    return body == "" or bool(_CONCLUDED_RE.search(body) or _AVG_RE.search(body) or _OOB_RE.search(body))


def split_nccl_runs(data: Union[str, bytes]) -> List[str]:
    """Split a log holding several nccl-tests runs (one parameter line each) into one text per run.

    Lines before a run's parameter line (launcher noise, the command line, version lines) belong to
    that run; a run's trailer (``Avg bus bandwidth``, ``Collective test concluded``) stays with it.
    """
    text, _bad = _decode(data)
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if _is_run_start(line)]
    if len(starts) <= 1:
        return [text]
    cuts = [0]
    for start in starts[1:]:
        cut = start
        while cut > cuts[-1] and _is_run_preamble(lines[cut - 1]):
            cut -= 1
        # the previous run's end: the last Avg line before this start, plus its trailer
        avg_at = None
        for i in range(cut - 1, cuts[-1] - 1, -1):
            if _AVG_RE.search(_clean(lines[i])):
                avg_at = i
                break
        if avg_at is not None:
            end = avg_at + 1
            while end < cut and _is_run_trailer(lines[end]):
                end += 1
            cut = end
        cuts.append(cut)
    cuts.append(len(lines))
    return ["\n".join(lines[a:b]) + "\n" for a, b in zip(cuts, cuts[1:])]


def parse_nccl_output(data: Union[str, bytes], collective: Optional[str] = None, ranks: Optional[int] = None,
                      source: str = "<string>", large_message_bytes: int = DEFAULT_LARGE_MESSAGE_BYTES,
                      ignore_warn_patterns: Sequence[str] = (), file_hint: Optional[str] = None) -> NcclResult:
    """Parse one nccl-tests run (text or bytes) into an :class:`NcclResult`; never raises on content.

    ``collective`` and ``ranks`` override what the log says (useful for logs without ``#  Rank``
    lines).  ``ignore_warn_patterns`` are regular expressions: a matching ``NCCL WARN`` message is
    a warning instead of a failure reason.  ``file_hint`` (a file name) is the last resort to name
    the collective.
    """
    text, bad = _decode(data if data is not None else "")
    if not isinstance(large_message_bytes, int) or isinstance(large_message_bytes, bool) or large_message_bytes < 0:
        large_message_bytes = DEFAULT_LARGE_MESSAGE_BYTES
    if ranks is not None and (not isinstance(ranks, int) or isinstance(ranks, bool) or ranks < 1):
        ranks = None
    patterns: List[str] = []
    bad_patterns: List[str] = []
    for pattern in ignore_warn_patterns or ():
        try:
            re.compile(pattern)
            patterns.append(pattern)
        except (re.error, TypeError):
            bad_patterns.append(repr(pattern))
    runs = split_nccl_runs(text)
    parser = _Parser(source, patterns)
    lines = runs[0].splitlines()
    # a text that does not end with a line break may end inside its last line (a cut log)
    parser.last_line_incomplete = len(runs) == 1 and bool(text) and not text.endswith(("\n", "\r"))
    for number, line in enumerate(lines, 1):
        parser.feed(line, last=number == len(lines))
    result = parser.result(collective, ranks, large_message_bytes, bad, len(text.strip()), file_hint)
    if len(runs) > 1:
        result.reasons.insert(0, "log holds %d nccl-tests runs; only the first is reported here, parse the log with "
                                 "parse_nccl_runs()" % len(runs))
        result.ok = False
    for pattern in bad_patterns:
        result.warnings.append("ignore_warn_patterns entry %s is not a valid regular expression; ignored" % pattern)
    return result


def parse_nccl_runs(data: Union[str, bytes], **kwargs: Any) -> List[NcclResult]:
    """Parse every run of a log (see :func:`split_nccl_runs`); ``kwargs`` as :func:`parse_nccl_output`."""
    return [parse_nccl_output(chunk, **kwargs) for chunk in split_nccl_runs(data)]


def parse_nccl_file(path: str, collective: Optional[str] = None, ranks: Optional[int] = None,
                    large_message_bytes: int = DEFAULT_LARGE_MESSAGE_BYTES, ignore_warn_patterns: Sequence[str] = (),
                    max_bytes: int = MAX_LOG_BYTES) -> NcclResult:
    """Read and parse one log file.  An unreadable or oversized file gives a result with a reason."""
    try:
        size = os.path.getsize(path)
        if size > max_bytes:
            return NcclResult(source=path, reasons=["log file %s is %d bytes, over the %d byte limit; not parsed"
                                                    % (path, size, max_bytes)])
        with open(path, "rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        return NcclResult(source=path, reasons=["cannot read log file %s: %s" % (path, exc.strerror or exc)])
    return parse_nccl_output(raw, collective=collective, ranks=ranks, source=path,
                             large_message_bytes=large_message_bytes, ignore_warn_patterns=ignore_warn_patterns,
                             file_hint=os.path.basename(path))
