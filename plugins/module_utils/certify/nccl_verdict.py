# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The verdict on one nccl-tests run: what an :class:`.nccl_log_reader.NcclLogReader` read, judged into an
:class:`.nccl_result_model.NcclResult`.

Problems that invalidate the measurement (an empty, binary, truncated or failed log, corrupt data, an inconsistent
busbw) go to ``reasons`` and make the result not ``ok``; problems that do not (validation switched off, a sweep that
stops short of the large-message cutoff, ...) go to ``warnings``. Capped lists say how many were left out.

Bus bandwidth is re-derived from the algorithm bandwidth with nccl-tests' factors (see
:func:`.nccl_collectives.busbw_factor`, and :func:`.nccl_collectives.legacy_busbw_factor` for nccl-tests before
mid-2020); a reported busbw that differs by more than 2 % plus the printing precision is reported as an inconsistent
(edited or mis-labelled) log.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_collectives import (
    busbw_factor, canonical_collective, collective_from_file_name, legacy_busbw_factor)
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_log_reader import NcclLogReader
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_result_model import NcclResult, unique_in_order

#: Relative tolerance between reported busbw and algbw x factor (plus printing precision).
BUSBW_REL_TOLERANCE = 0.02

#: At most this many distinct failure messages of one kind are listed; the rest are counted.
MAX_LISTED = 10


def _fmt_size(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return "%d %s" % (size // scale, unit)
    return "%d B" % size


def _listed(items: Sequence[str], limit: int, noun: str = "more") -> str:
    """``a, b, c and 7 more``: at most ``limit`` items, and how many were left out."""
    shown = ", ".join(items[:limit])
    if len(items) > limit:
        shown += " and %d %s" % (len(items) - limit, noun)
    return shown


def judge_run(read: NcclLogReader, collective: Optional[str], ranks: Optional[int], cutoff: int,
              bad_chars: int, total_chars: int, file_hint: Optional[str]) -> NcclResult:
    """The :class:`.nccl_result_model.NcclResult` of what ``read`` read: ``collective`` and ``ranks`` override what the
    log says, ``cutoff`` is the large-message size, ``bad_chars`` of ``total_chars`` characters were not text, and
    ``file_hint`` (a file name) is the last resort to name the collective."""
    reasons: List[str] = []
    warnings: List[str] = []
    rows = [t.row for t in read.rows]
    res = NcclResult(rows=rows, devices=list(read.devices), parameters=dict(read.params),
                     nccl_version=read.nccl_version, tests_version=read.tests_version, source=read.source,
                     large_message_cutoff=cutoff, avg_busbw=read.avg, out_of_bounds=read.oob)
    res.hosts = unique_in_order(d.host for d in read.devices)

    if total_chars == 0 or (not rows and read.recognised == 0 and read.unrecognised == 0 and bad_chars == 0):
        reasons.append("empty log: no nccl-tests output at all")
        res.reasons, res.warnings = reasons, warnings
        return res
    recognised_output = bool(read.params or rows or read.devices or read.avg_seen or read.seen_columns)
    if bad_chars and total_chars and bad_chars * 10 >= total_chars:
        reasons.append("log is binary or garbage: %d of %d characters are not text" % (bad_chars, total_chars))
    elif bad_chars:
        warnings.append("%d non-text characters in the log were ignored" % bad_chars)

    # which collective, how many ranks
    res.collective = _collective(read, collective, file_hint, warnings)
    res.ranks = _ranks(read, ranks, res.collective, warnings)

    _failure_reasons(read, reasons, warnings)
    if not recognised_output:
        if not reasons:
            reasons.append("no nccl-tests output recognised (%d lines, no parameter line, no result rows)"
                           % (read.unrecognised,))
        else:
            reasons.append("no nccl-tests result in the log")
    else:
        _completeness(read, reasons, warnings)
    _data_checks(read, reasons, warnings)
    _busbw_checks(read, res, reasons, warnings)
    _bandwidth_summary(res, warnings)
    res.reasons, res.warnings = reasons, warnings
    res.ok = not reasons
    return res


def _collective(read: NcclLogReader, given: Optional[str], file_hint: Optional[str], warnings: List[str]) -> Optional[str]:
    found = read.collective_started or canonical_collective(read.collective_binary)
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
    hint = collective_from_file_name(file_hint) if file_hint else None
    if hint:
        warnings.append("collective %s taken from the file name %s" % (hint, file_hint))
        return hint
    if not read.rows:
        return None
    warnings.append("collective not named in the log (no 'Collective test starting' line or *_perf command); "
                    "busbw is not cross-checked")
    return None


def _ranks(read: NcclLogReader, given: Optional[int], collective: Optional[str], warnings: List[str]) -> int:
    if read.devices:
        group0 = read.devices[0].group
        in_group = [d for d in read.devices if d.group == group0]
        if len(in_group) != len(read.devices):
            warnings.append("ranks are split into %d NCCL communicators (NCCL_TESTS_SPLIT_MASK); busbw is that of "
                            "group %d with %d ranks" % (len(unique_in_order(str(d.group) for d in read.devices)), group0,
                                                        len(in_group)))
        listed = len(in_group)
        if given and given != listed:
            warnings.append("ranks=%d was given but the log lists %d ranks; using %d" % (given, listed, given))
            return given
        return listed
    if given:
        return given
    inferred = _infer_ranks(read, collective)
    if inferred:
        warnings.append("no '#  Rank' lines in the log; %d ranks inferred from busbw/algbw" % inferred)
        return inferred
    if read.rows:
        warnings.append("number of ranks unknown (no '#  Rank' lines); busbw is not cross-checked")
    return 0


def _infer_ranks(read: NcclLogReader, collective: Optional[str]) -> int:
    if collective not in ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "gather", "scatter"):
        return 0
    best = None
    for tokens in read.rows:
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


def _failure_reasons(read: NcclLogReader, reasons: List[str], warnings: List[str]) -> None:
    listed = 0
    for (level, message), hosts in read.nccl_msgs.items():
        if listed >= MAX_LISTED:
            break
        named = [h for h in unique_in_order(hosts) if h]
        where = (" on " + _listed(named, 4, "more hosts")) if named else ""
        plural = "" if len(hosts) == 1 else "s"
        reasons.append("NCCL %s%s (%d line%s): %s" % (level, where, len(hosts), plural, message or "(no message)"))
        listed += 1
    if len(read.nccl_msgs) > MAX_LISTED:
        reasons.append("... and %d more distinct NCCL WARN/ERROR messages" % (len(read.nccl_msgs) - MAX_LISTED))
    for message, count in read.ignored_warns.items():
        warnings.append("ignored NCCL WARN (%d line%s): %s" % (count, "" if count == 1 else "s", message))
    for text, hosts in list(read.test_failures.items())[:MAX_LISTED]:
        named = [h for h in unique_in_order(hosts) if h]
        if len(hosts) == 1:
            reasons.append("nccl-tests failed: %s" % (("%s: %s" % (named[0], text)) if named else text))
        else:
            where = (" on %d host%s (%s)" % (len(named), "" if len(named) == 1 else "s", _listed(named, 4, "more"))
                     if named else "")
            reasons.append("nccl-tests failed%s, %d lines: %s" % (where, len(hosts), text))
    if len(read.test_failures) > MAX_LISTED:
        reasons.append("... and %d more distinct nccl-tests failure messages" % (len(read.test_failures) - MAX_LISTED))
    if read.trace_lines and not read.test_failures:
        reasons.append("nccl-tests failed (%d 'Test failure' trace lines)" % read.trace_lines)
    reasons.extend(read.aborts.values())
    reasons.extend(unique_in_order(read.other_reasons))


def _completeness(read: NcclLogReader, reasons: List[str], warnings: List[str]) -> None:
    rows = [t.row for t in read.rows]
    if not rows and read.avg_seen:
        reasons.append("no result rows could be read although the log reports 'Avg bus bandwidth : %s': the rows are "
                       "in a format this parser does not know%s"
                       % (read.avg, (" (first unrecognised line: %r)" % read.first_unrecognised) if read.first_unrecognised else ""))
    elif not rows and read.partial_rows:
        reasons.append("no complete result row: the log ends inside the first one")
    elif not rows:
        reasons.append("no result rows: the run stopped before the first message size was measured")
    elif not read.avg_seen:
        reasons.append("truncated log: no 'Avg bus bandwidth' line after %d row%s (last size %s)"
                       % (len(rows), "" if len(rows) == 1 else "s", _fmt_size(rows[-1].size)))
    if read.partial_rows:
        reasons.append("truncated or malformed result row: %r" % read.partial_rows[-1][:120])
    if read.single_variant_rows:
        warnings.append("%d row(s) carry only one of out-of-place/in-place" % read.single_variant_rows)
    if read.reduced_max:
        warnings.append("nccl-tests reduced maxBytes to %d because of GPU memory" % read.reduced_max)
    max_bytes = read.reduced_max or read.params.get("max_bytes")
    if rows and read.avg_seen and max_bytes and read.params.get("step_kind") == "factor":
        factor = max(int(read.params.get("step") or 2), 2)
        last = max(r.size for r in rows)
        if last * factor <= max_bytes:
            warnings.append("sweep ended at %s although maxBytes is %s" % (_fmt_size(last), _fmt_size(max_bytes)))
    if read.params and not read.params.get("validation", 1):
        warnings.append("data validation was off (-c 0): corruption would go unnoticed (#wrong is N/A)")


def _data_checks(read: NcclLogReader, reasons: List[str], warnings: List[str]) -> None:
    rows = [t.row for t in read.rows]
    bad = [r for r in rows if r.wrong > 0]
    if bad:
        sizes = _listed(["%s (%d)" % (_fmt_size(r.size), r.wrong) for r in bad], MAX_LISTED)
        reasons.append("data corruption: #wrong > 0 at %d size%s: %s" % (len(bad), "" if len(bad) == 1 else "s", sizes))
    if read.oob_failed or (read.oob or 0) > 0:
        reasons.append("nccl-tests reported %d out-of-bounds (wrong) values (FAILED)" % (read.oob or 0))
    if read.avg_failed:
        reasons.append("nccl-tests' own NCCL_TESTS_MIN_BW check FAILED (avg bus bandwidth %s)" % read.avg)
    if read.old_error_column:
        warnings.append("old nccl-tests format: the 'error' column is a maximum error, not a count")


def _busbw_mismatches(read: NcclLogReader, factor: float) -> List[str]:
    off: List[str] = []
    for tokens in read.rows:
        for label, ((alg, alg_q), (bus, bus_q)) in (("out-of-place", tokens.oop), ("in-place", tokens.ip)):
            if alg is None or bus is None:
                continue
            expected = alg * factor
            tolerance = BUSBW_REL_TOLERANCE * expected + factor * alg_q + bus_q
            if abs(bus - expected) > tolerance:
                off.append("%s %s: busbw %.2f, algbw %.2f x %.4f = %.2f"
                           % (_fmt_size(tokens.row.size), label, bus, alg, factor, expected))
    return off


def _busbw_checks(read: NcclLogReader, res: NcclResult, reasons: List[str], warnings: List[str]) -> None:
    if not res.collective or res.ranks < 1 or not read.rows:
        return
    factor = busbw_factor(res.collective, res.ranks)
    off = _busbw_mismatches(read, factor)
    legacy = legacy_busbw_factor(res.collective, res.ranks) if read.legacy_format() else None
    if off and legacy is not None:
        legacy_off = _busbw_mismatches(read, legacy)
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


def _bandwidth_summary(res: NcclResult, warnings: List[str]) -> None:
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
