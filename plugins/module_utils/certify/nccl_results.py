# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Parse the text output of NVIDIA nccl-tests (``all_reduce_perf``, ``all_gather_perf``, ...)
into an :class:`.nccl_result_model.NcclResult`.

The parser never raises on log content: an empty, binary, truncated or failed log gives a
result with ``ok = False`` and one plain-language entry per problem in ``reasons``.  Problems
that do not invalidate the measurement (validation switched off, a sweep that stops short of
the large-message cutoff, ...) go to ``warnings``.

A log may hold several runs (one parameter line each): :func:`split_nccl_runs` cuts it into one text per run,
:func:`parse_nccl_runs` parses each. One run is read line by line by :mod:`.nccl_log_reader` (the nccl-tests line
shapes, behind any launcher prefix) and judged by :mod:`.nccl_verdict` (reasons, warnings, the busbw cross-check
with the factors of :mod:`.nccl_collectives`, the bandwidth summary).
"""
from __future__ import annotations

import os
import re
from typing import Any, List, Optional, Sequence, Tuple, Union

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_log_lines import nccl_content
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_log_reader import (
    AVG_RE, CONCLUDED_RE, OOB_RE, PARAMS_RE, STARTING_RE, TESTS_VERSION_RE, NcclLogReader)
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_result_model import DEFAULT_LARGE_MESSAGE_BYTES, NcclResult
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_verdict import judge_run

#: Largest log file :func:`parse_nccl_file` reads (NCCL_DEBUG=INFO logs of big jobs are large).
MAX_LOG_BYTES = 256 * 1024 * 1024

_NON_TEXT_RE = re.compile("[\x00-\x08\x0e-\x1f\x7f\ufffd]")


def _clean(line: str) -> str:
    return nccl_content(line)


def _decode(data: Union[str, bytes]) -> Tuple[str, int]:
    """Text and the number of characters that are not printable text (binary noise)."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, (bytes, bytearray)) else str(data)
    return text, len(_NON_TEXT_RE.findall(text))


def _is_run_start(line: str) -> bool:
    if "nThread" not in line:
        return False
    body = _clean(line).strip().lstrip("#").strip()
    return body.startswith("nThread") and bool(PARAMS_RE.search(body))


def _is_run_preamble(line: str) -> bool:
    body = _clean(line).strip().lstrip("#").strip()
    return bool(TESTS_VERSION_RE.search(body) or STARTING_RE.search(body))


def _is_run_trailer(line: str) -> bool:
    body = _clean(line).strip().lstrip("#").strip()
    return body == "" or bool(CONCLUDED_RE.search(body) or AVG_RE.search(body) or OOB_RE.search(body))


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
            if AVG_RE.search(_clean(lines[i])):
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
    reader = NcclLogReader(source, patterns)
    lines = runs[0].splitlines()
    # a text that does not end with a line break may end inside its last line (a cut log)
    reader.last_line_incomplete = len(runs) == 1 and bool(text) and not text.endswith(("\n", "\r"))
    for number, line in enumerate(lines, 1):
        reader.feed(line, last=number == len(lines))
    result = judge_run(reader, collective, ranks, large_message_bytes, bad, len(text.strip()), file_hint)
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
