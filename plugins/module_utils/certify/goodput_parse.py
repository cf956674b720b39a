# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Training goodput, step 2: one rank's log -> its events (:class:`RankLog`), with a :mod:`goodput_profiles` profile.

Every line is matched against the profile's event patterns (the first that matches wins); timestamps are read with
:func:`parse_timestamp`; lines that look like events but cannot be read are counted as ``malformed`` with a few
examples. Oversized logs and lines are cut (:data:`MAX_LOG_CHARS`, :data:`MAX_LINE_CHARS`) and reported.
"""
from __future__ import annotations

import datetime
import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.goodput_profiles import (
    GoodputError, GoodputProfile, validate_profile,
)

MAX_LOG_CHARS = 64 * 1024 * 1024
MAX_LINE_CHARS = 16384
MAX_EXAMPLES = 3
#: Timestamps may go backwards by this much (clock steps, log buffering) before it is reported.
BACKWARDS_TOLERANCE_S = 1.0


def parse_timestamp(text: str, fmt: str = "auto") -> float:
    """Seconds since the epoch; naive times are taken as UTC (only differences matter).  Raises ValueError."""
    text = text.strip()
    if fmt == "epoch" or (fmt == "auto" and re.match(r"^\d+(?:\.\d+)?$", text)):
        value = float(text)
    elif "%" in fmt:
        value = _as_utc(datetime.datetime.strptime(text, fmt))
    else:
        cleaned = text.replace(",", ".")
        if cleaned.endswith("Z"):
            cleaned = cleaned[:-1] + "+00:00"
        value = _as_utc(datetime.datetime.fromisoformat(cleaned))
    if not math.isfinite(value):
        raise ValueError("not a finite time: %r" % text)
    return value


def _as_utc(moment: datetime.datetime) -> float:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()


def iso_time(value: Optional[float]) -> Optional[str]:
    if value is None:
        return None
    return datetime.datetime.fromtimestamp(value, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class GoodputEvent:
    """One recognized log line."""

    kind: str
    line: int
    ts: Optional[float] = None
    ts_inherited: bool = False
    rank: Optional[int] = None
    attempt: Optional[int] = None
    step: Optional[int] = None
    samples: Optional[int] = None
    step_time: Optional[float] = None
    duration: Optional[float] = None
    message: Optional[str] = None


@dataclass
class RankLog:
    """Events of one rank's log, with what could not be read."""

    source: str
    profile: GoodputProfile
    rank: Optional[int] = None
    host: Optional[str] = None
    lines: int = 0
    events: List[GoodputEvent] = field(default_factory=list)
    malformed: int = 0
    malformed_examples: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)

    def label(self) -> str:
        """``rank N (host H)``, or the source name when the rank is unknown."""
        parts = ["rank %s" % self.rank if self.rank is not None else self.source]
        if self.host:
            parts.append("(host %s)" % self.host)
        return " ".join(parts)

    def _bad(self, line_no: int, text: str, why: str) -> None:
        self.malformed += 1
        if len(self.malformed_examples) < MAX_EXAMPLES:
            snippet = text if len(text) <= 160 else text[:157] + "..."
            self.malformed_examples.append("line %d: %s: %r" % (line_no, why, snippet))


_NUMBER_FIELDS = {"step": int, "samples": int, "rank": int, "attempt": int, "step_time": float, "duration": float}


def _number(kind: str, raw: str) -> Union[int, float]:
    converter = _NUMBER_FIELDS[kind]
    value = converter(float(raw)) if converter is int and re.match(r"^\d+\.0*$", raw) else converter(raw)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("%s is not finite" % kind)
    if value < 0:
        raise ValueError("%s is negative" % kind)
    return value


def _match_line(profile: GoodputProfile, text: str) -> Tuple[Optional[str], Dict[str, str]]:
    for kind, pattern in profile.events:
        found = pattern.search(text)
        if found:
            groups = {key: value for key, value in found.groupdict().items() if value is not None}
            return kind, groups
    return None, {}


def parse_goodput_log(text: Union[str, bytes], profile: Union[str, Mapping[str, Any], GoodputProfile, None] = "dsxos",
                      rank: Optional[int] = None, host: Optional[str] = None, source: str = "<log>") -> RankLog:
    """Recognize the events of one rank's log.  Never raises on log content: what it cannot read is counted
    in ``malformed`` (lines that carry the profile's marker but match no event, or whose fields are bad)."""
    prof = validate_profile(profile)
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise GoodputError("log must be text", field=source, value=type(text).__name__)
    log = RankLog(source=source, profile=prof, rank=rank, host=host)
    if len(text) > MAX_LOG_CHARS:
        log.warnings.append("%s: log longer than %d characters; only the first part was read" % (log.label(), MAX_LOG_CHARS))
        text = text[:MAX_LOG_CHARS]
    if "\x00" in text:
        text = text.replace("\x00", "")
        log.warnings.append("%s: log contains NUL bytes (removed)" % log.label())
    last_ts: Optional[float] = None
    seen_ranks: Dict[int, int] = {}
    backwards = 0
    for line_no, raw_line in enumerate(text.splitlines(), start=1):
        log.lines = line_no
        line = raw_line if len(raw_line) <= MAX_LINE_CHARS else raw_line[:MAX_LINE_CHARS]
        kind, groups = _match_line(prof, line)
        prefix = prof.prefix.search(line) if prof.prefix else None
        if kind is None:
            if prof.marker and prof.marker.search(line):
                log._bad(line_no, raw_line, "no %s event matches" % prof.name)  # pylint: disable=protected-access
            elif prefix is not None and prefix.groupdict().get("ts"):
                # a timestamped line that is no event still tells the time for the untimestamped events after it
                try:
                    last_ts = max(last_ts or 0.0, parse_timestamp(prefix.group("ts"), prof.timestamp_format))
                except (ValueError, OverflowError, OSError):
                    pass
            continue
        if prefix:
            groups = dict({key: value for key, value in prefix.groupdict().items() if value is not None}, **groups)
        event = GoodputEvent(kind=kind, line=line_no, message=groups.get("message"))
        try:
            for name in ("rank", "attempt", "step", "samples", "step_time", "duration"):
                if name in groups:
                    setattr(event, name, _number(name, groups[name]))
            if "ts" in groups:
                event.ts = parse_timestamp(groups["ts"], prof.timestamp_format)
        except (ValueError, OverflowError, OSError) as err:
            log._bad(line_no, raw_line, "bad %s field: %s" % (kind, err))  # pylint: disable=protected-access
            continue
        if kind == "step" and event.step_time is not None:
            event.step_time *= prof.step_time_scale
        if event.duration is not None:
            event.duration *= prof.duration_scale
        if event.ts is None:
            event.ts, event.ts_inherited = last_ts, last_ts is not None
        else:
            if last_ts is not None and event.ts < last_ts - BACKWARDS_TOLERANCE_S:
                backwards += 1
            last_ts = event.ts if last_ts is None else max(last_ts, event.ts)
        if event.rank is not None:
            seen_ranks[event.rank] = seen_ranks.get(event.rank, 0) + 1
        log.events.append(event)
    if backwards:
        log.warnings.append("%s: timestamps go backwards %d time(s) by more than %.0f s" % (log.label(), backwards, BACKWARDS_TOLERANCE_S))
    if seen_ranks:
        logged = max(seen_ranks, key=lambda key: seen_ranks[key])
        if log.rank is None:
            log.rank = logged
        elif log.rank not in seen_ranks:
            log.warnings.append("%s: its lines say rank %d" % (log.label(), logged))
        if len(seen_ranks) > 1:
            log.warnings.append("%s: lines of several ranks in one log (%s)" % (log.label(), ", ".join(str(r) for r in sorted(seen_ranks))))
    if log.malformed:
        log.warnings.append("%s: %d unreadable %s line(s), %s" % (log.label(), log.malformed, prof.name, "; ".join(log.malformed_examples)))
    return log
