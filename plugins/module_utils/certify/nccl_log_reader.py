# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Reading the lines of one nccl-tests run: :class:`NcclLogReader` records what the log says, line by line.

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

The reader judges nothing: :mod:`.nccl_verdict` turns what it read into an :class:`.nccl_result_model.NcclResult`.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Pattern, Sequence, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_collectives import canonical_collective
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_log_lines import (
    NCCL_DEBUG_LINE_RE, content_start, continuations, nccl_content, strip_controls)
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_result_model import NcclDevice, NcclRow, opt_float

#: nccl-tests line shapes; the public ones also tell :func:`.nccl_results.split_nccl_runs` where a run starts and ends.
PARAMS_RE = re.compile(
    r"nThread\s+(?P<nthread>\d+)\s+nGpus\s+(?P<ngpus>\d+)\s+minBytes\s+(?P<min_bytes>\d+)\s+maxBytes\s+(?P<max_bytes>\d+)"
    r"(?:\s+step:\s+(?P<step>\d+)\((?P<step_kind>factor|bytes)\))?"
    r"(?:\s+warmup iters:\s+(?P<warmup_iters>\d+))?(?:\s+iters:\s+(?P<iters>\d+))?"
    r"(?:\s+agg iters:\s+(?P<agg_iters>\d+))?(?:\s+validation:\s+(?P<validation>\d+))?"
    r"(?:\s+graph:\s+(?P<graph>\d+))?")
_RANK_RE = re.compile(r"^#?\s*Rank\s+(\d+)(?:\s+Group\s+(\d+))?\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*?)\s*$")
TESTS_VERSION_RE = re.compile(r"nccl-tests version\s+(\S+)")
_NCCL_VERSION_RE = re.compile(r"\bNCCL version\s+(\S+)")
STARTING_RE = re.compile(r"Collective test starting:\s*(\S+)")
CONCLUDED_RE = re.compile(r"Collective test concluded:\s*(\S+)")
OOB_RE = re.compile(r"Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?")
AVG_RE = re.compile(r"Avg bus bandwidth\s*:\s*(\S+)\s*(OK|FAILED)?")
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


def _prefix_shape(prefix: str) -> Optional[Pattern[str]]:
    """A pattern for prefixes shaped like ``prefix`` (digits may differ: ranks, pids, time stamps)."""
    if not prefix.strip():
        return None
    parts = re.split(r"(\d+|\s+)", prefix)
    pattern = "".join(r"\d+" if part.isdigit() else (r"\s*" if part.isspace() else re.escape(part)) for part in parts if part)
    return re.compile(r"\s*" + pattern)


@dataclass
class RowTokens:
    """Printed strings of one row kept for the busbw cross-check (not part of the result)."""

    row: NcclRow
    oop: Tuple[Tuple[Optional[float], float], Tuple[Optional[float], float]]
    ip: Tuple[Tuple[Optional[float], float], Tuple[Optional[float], float]]


class NcclLogReader:
    """Single pass over the lines of one run: :meth:`feed` each line, then read the attributes (what the log said)."""

    def __init__(self, source: str, ignore_warn: Sequence[str]) -> None:
        self.source = source
        self.ignore_warn = [re.compile(p) for p in ignore_warn]
        self.params: Dict[str, Any] = {}
        self.devices: List[NcclDevice] = []
        self.rows: List[RowTokens] = []
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
        match = PARAMS_RE.search(body)
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
        match = TESTS_VERSION_RE.search(body)
        if match:
            self.tests_version = match.group(1)
            return True
        match = STARTING_RE.search(body)
        if match:
            self.collective_started = canonical_collective(match.group(1))
            return True
        if CONCLUDED_RE.search(body):
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
        match = OOB_RE.search(body)
        if match:
            self.oob = int(match.group(1))
            self.oob_failed = match.group(2) == "FAILED"
            return True
        match = AVG_RE.search(body)
        if match:
            self.avg_seen = True
            self.avg = opt_float(match.group(1))
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
        self.rows.append(RowTokens(row=row, oop=oop_tokens, ip=ip_tokens))
        return True

    def _wrong_value(self, token: str) -> Optional[int]:
        if self.old_error_column:  # a maximum error, not a count: the Out of bounds line decides
            return None
        return _wrong(token)

    def legacy_format(self) -> bool:
        """The log was written by an nccl-tests old enough to use the pre-mid-2020 bandwidth convention: no version
        line, and the ``error`` column (replaced by ``#wrong`` later) or ``#  Rank`` lines without ``Group``."""
        if self.tests_version:
            return False
        return self.old_error_column or bool(self.devices and self.rank_lines_without_group == len(self.devices)
                                             and not self.seen_columns)
