# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Training goodput: training logs -> events (configurable regex profiles) -> goodput and completed work.

A *profile* says how to find events in a log: a ``prefix`` regex searched on every line (it may
capture the timestamp ``ts``, ``rank`` and ``attempt``) and one regex per event kind (see
:data:`EVENTS`); the first event regex that matches a line wins.  Built-in profiles
(:data:`BUILTIN_PROFILES`): ``dsxos`` (the collection's own workload, roles/certify/files/goodput_train.py),
``megatron`` (Megatron-LM ``training_log`` and checkpointing lines) and ``nemo`` (NeMo 2 / Lightning).
A user profile is a dict of the same shape, optionally ``base: <built-in>`` to change only a few patterns;
:func:`validate_profile` compiles it and rejects unknown keys, unknown events, unknown capture groups and
bad regexes with the field and pattern named.

Goodput of a job (all ranks) follows the certification formula::

    goodput = (t_total - t_checkpoint - t_resume - t_save) / (t_total - t_resume)

* ``t_total``: wall time from the first event of any rank (first start) to the last event of any rank
  (end of the final save), across all attempts.
* ``t_checkpoint``: time spent in periodic checkpoints during training (``checkpoint_begin`` ->
  ``checkpoint_end``, or a ``checkpoint`` line with its ``duration``); the slowest rank counts.
* ``t_save``: the final save (``save_begin`` -> ``save_end``, or ``save`` with ``duration``).
* ``t_resume``: time lost to restarts: from the last event of an interrupted attempt (its ``interrupt``
  line, or whatever it logged last when it crashed) to the end of the resume (``resume_end``: the
  checkpoint is loaded and every rank is back), or to the start of the first step of the new attempt
  when the log has no resume lines; a ``resume`` line with a ``duration`` adds that duration.

Completed work counts only steps that survive into the final model (a step redone after a resume counts
once; the steps computed after the last checkpoint of an interrupted attempt are *recomputed*, reported
as ``steps_recomputed`` and ``t_lost``): ``steps_completed``, ``samples`` and
``gpu_seconds = world_size x sum over completed steps of the slowest rank's step time``.
"""
from __future__ import annotations

import datetime
import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.errors import CertifyError

#: Event kinds a profile may define, and what each means.
EVENTS: Dict[str, str] = {
    "start": "a process (attempt) starts",
    "step": "a training step completed (groups: step, samples, step_time)",
    "checkpoint_begin": "a periodic checkpoint starts",
    "checkpoint_end": "a periodic checkpoint is written",
    "checkpoint": "a periodic checkpoint with its duration (group duration)",
    "save_begin": "the final save starts",
    "save_end": "the final save is written",
    "save": "the final save with its duration (group duration)",
    "interrupt": "training stops on purpose (fault injection, preemption)",
    "resume_begin": "loading a checkpoint starts",
    "resume_end": "the checkpoint is loaded and training can go on (group step: the step it resumes from)",
    "resume": "a resume with its duration (group duration)",
    "end": "training finished",
    "error": "the workload reports an error (group message)",
}
#: Event kinds in the order their patterns are tried.
EVENT_ORDER = ("step", "checkpoint_begin", "checkpoint_end", "checkpoint", "save_begin", "save_end", "save",
               "resume_begin", "resume_end", "resume", "interrupt", "start", "end", "error")
#: Capture groups a pattern may have.
GROUPS = ("ts", "rank", "attempt", "step", "samples", "step_time", "duration", "message")
PROFILE_KEYS = ("description", "base", "prefix", "marker", "timestamp_format", "events", "step_time_unit",
                "duration_unit", "samples_scope")
UNITS = {"s": 1.0, "ms": 0.001, "us": 0.000001}
SAMPLES_SCOPES = ("rank", "global")
MAX_LOG_CHARS = 64 * 1024 * 1024
MAX_LINE_CHARS = 16384
MAX_PATTERN_CHARS = 2000
MAX_EXAMPLES = 3
#: Timestamps may go backwards by this much (clock steps, log buffering) before it is reported.
BACKWARDS_TOLERANCE_S = 1.0

_ISO_TS = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_ERROR_LINE = r"^\s*(?P<message>(?:[A-Za-z_.]*(?:Error|Exception)|Traceback \(most recent call last\)):?.*)$"

#: Built-in profiles (see docs/certify-goodput.md for example lines).
BUILTIN_PROFILES: Dict[str, Dict[str, Any]] = {
    "dsxos": {
        "description": "dsxos.cluster goodput workload (roles/certify/files/goodput_train.py)",
        "prefix": r"^(?P<ts>" + _ISO_TS + r") dsxos-goodput rank=(?P<rank>\d+) attempt=(?P<attempt>\d+) ",
        "marker": r"\bdsxos-goodput\b",
        "timestamp_format": "iso",
        "step_time_unit": "s",
        "samples_scope": "rank",
        "events": {
            "start": r" event=start\b",
            "step": r" event=step step=(?P<step>\d+) samples=(?P<samples>\d+) step_time=(?P<step_time>\S+)",
            "checkpoint_begin": r" event=checkpoint_begin step=(?P<step>\d+)",
            "checkpoint_end": r" event=checkpoint_end step=(?P<step>\d+)",
            "save_begin": r" event=save_begin step=(?P<step>\d+)",
            "save_end": r" event=save_end step=(?P<step>\d+)",
            "interrupt": r" event=interrupt step=(?P<step>\d+)",
            "resume_begin": r" event=resume_begin\b",
            "resume_end": r" event=resume_end step=(?P<step>\d+)",
            "end": r" event=end\b",
            "error": r" event=error message=(?P<message>.*)$",
        },
    },
    "megatron": {
        "description": "Megatron-LM: training_log iteration lines, checkpoint save/load lines; "
                       "needs a timestamp at the start of each line for checkpoint durations",
        "prefix": r"(?:^\s*\[?|datetime: )(?P<ts>" + _ISO_TS + r")",
        "timestamp_format": "iso",
        "step_time_unit": "ms",
        "samples_scope": "global",
        "events": {
            "step": r"\biteration\s+(?P<step>\d+)\s*/\s*\d+\s*\|.*?elapsed time per iteration \(ms\):\s*(?P<step_time>[0-9.]+)"
                    r"(?:.*?global batch size:\s*(?P<samples>\d+))?",
            "checkpoint_begin": r"\bsaving checkpoint at iteration\s+(?P<step>\d+)",
            "checkpoint_end": r"\bsuccessfully saved checkpoint (?:from|at) iteration\s+(?P<step>\d+)",
            "resume_begin": r"\bloading (?:distributed )?checkpoint from .* at iteration\s+(?P<step>\d+)",
            "resume_end": r"\bsuccessfully loaded checkpoint from .*at iteration\s+(?P<step>\d+)",
            "start": r"\busing world size:\s*\d+",
            "end": r"\[after training is done\]",
            "error": _ERROR_LINE,
        },
    },
    "nemo": {
        "description": "NeMo 2 / PyTorch Lightning: 'Training epoch ..., iteration ... | global_step: ... | "
                       "train_step_timing in s: ...' lines, 'Global Checkpoint Save' lines, Lightning restore lines",
        "prefix": r"^\[NeMo [A-Z] (?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)",
        "timestamp_format": "iso",
        "step_time_unit": "s",
        "samples_scope": "global",
        "events": {
            "step": r"(?:global_batch_size[:=] ?(?P<samples>\d+)(?:\.0+)?\W+)?global_step[:=] ?(?P<step>\d+)(?:\.0+)?\b"
                    r".*?train_step_timing in s[:=] ?(?P<step_time>[0-9.]+)",
            "checkpoint": r"Global Checkpoint Save : Rank: ?\d+ : Iteration: ?(?P<step>\d+) : .*Save duration: ?(?P<duration>[0-9.]+) ?s",
            "resume_begin": r"Restoring states from the checkpoint path at ",
            "resume_end": r"Restored all states from the checkpoint (?:file )?at ",
            "start": r"Initializing distributed: GLOBAL_RANK: ?(?P<rank>\d+)",
            "end": r"`Trainer\.fit` stopped: `max_steps=\d+` reached",
            "error": _ERROR_LINE,
        },
    },
}


class GoodputError(CertifyError):
    """Bad goodput input (profile, log, option); ``field``/``value`` name what was wrong."""


class GoodputProfileError(GoodputError):
    """A regex profile is malformed: unknown key or event, bad regex, unknown capture group."""


@dataclass(frozen=True)
class GoodputProfile:
    """A validated, compiled regex profile."""

    name: str
    description: str
    prefix: Optional["re.Pattern[str]"]
    marker: Optional["re.Pattern[str]"]
    timestamp_format: str
    events: Tuple[Tuple[str, "re.Pattern[str]"], ...]
    step_time_scale: float
    duration_scale: float
    samples_scope: str
    source: Dict[str, Any] = field(default_factory=dict, compare=False)

    def kinds(self) -> Tuple[str, ...]:
        """Event kinds this profile can recognize."""
        return tuple(kind for kind, _pattern in self.events)

    def to_dict(self) -> Dict[str, Any]:
        return dict(self.source, name=self.name)


def _compile(pattern: Any, where: str, allowed: Iterable[str]) -> "re.Pattern[str]":
    if not isinstance(pattern, str) or not pattern:
        raise GoodputProfileError("must be a non-empty regular expression string", field=where, value=pattern)
    if len(pattern) > MAX_PATTERN_CHARS:
        raise GoodputProfileError("regular expression longer than %d characters" % MAX_PATTERN_CHARS, field=where, value=pattern[:80] + "...")
    try:
        compiled = re.compile(pattern)
    except re.error as err:
        raise GoodputProfileError("invalid regular expression: %s" % err, field=where, value=pattern) from None
    allowed = tuple(allowed)
    unknown = sorted(set(compiled.groupindex) - set(allowed))
    if unknown:
        raise GoodputProfileError("unknown capture group(s) %s (allowed here: %s)" % (", ".join(unknown), ", ".join(allowed)),
                                  field=where, value=pattern)
    return compiled


def _merged_spec(spec: Mapping[str, Any], source: str) -> Dict[str, Any]:
    base_name = spec.get("base")
    if base_name is None:
        return dict(spec)
    if base_name not in BUILTIN_PROFILES:
        raise GoodputProfileError("unknown base profile (known: %s)" % ", ".join(sorted(BUILTIN_PROFILES)),
                                  field=source + ".base", value=base_name)
    merged = dict(BUILTIN_PROFILES[base_name])
    events = dict(merged.get("events", {}))
    extra_events = spec.get("events") or {}
    if not isinstance(extra_events, Mapping):
        raise GoodputProfileError("must be a mapping of event kind to regex", field=source + ".events", value=extra_events)
    for kind, pattern in extra_events.items():
        if pattern is None:
            events.pop(kind, None)  # null removes an inherited pattern
        else:
            events[kind] = pattern
    merged.update({key: value for key, value in spec.items() if key not in ("events", "base")})
    merged["events"] = events
    return merged


def validate_profile(profile: Union[str, Mapping[str, Any], GoodputProfile, None], source: str = "profile") -> GoodputProfile:
    """A built-in profile by name, or a user profile (dict) validated and compiled."""
    if isinstance(profile, GoodputProfile):
        return profile
    if profile is None:
        profile = "dsxos"
    if isinstance(profile, str):
        if profile not in BUILTIN_PROFILES:
            raise GoodputProfileError("unknown goodput log profile (built-in: %s; or give a dict of regexes)"
                                      % ", ".join(sorted(BUILTIN_PROFILES)), field=source, value=profile)
        name, spec = profile, BUILTIN_PROFILES[profile]
    elif isinstance(profile, Mapping):
        unknown = sorted(str(key) for key in profile if key not in PROFILE_KEYS)
        if unknown:
            raise GoodputProfileError("unknown profile key(s) %s (known: %s)" % (", ".join(unknown), ", ".join(PROFILE_KEYS)),
                                      field=source, value=unknown[0])
        name, spec = "custom", _merged_spec(profile, source)
        if profile.get("base"):
            name = "custom(%s)" % profile["base"]
    else:
        raise GoodputProfileError("must be a built-in profile name or a dict of regexes", field=source, value=profile)
    events_spec = spec.get("events")
    if not isinstance(events_spec, Mapping) or not events_spec:
        raise GoodputProfileError("must be a non-empty mapping of event kind to regex", field=source + ".events", value=events_spec)
    unknown_events = sorted(str(kind) for kind in events_spec if kind not in EVENTS)
    if unknown_events:
        raise GoodputProfileError("unknown event kind(s) %s (known: %s)" % (", ".join(unknown_events), ", ".join(EVENT_ORDER)),
                                  field=source + ".events", value=unknown_events[0])
    if "step" not in events_spec:
        raise GoodputProfileError("a profile needs a 'step' pattern", field=source + ".events.step", value=None)
    compiled = []
    for kind in EVENT_ORDER:
        if kind in events_spec:
            compiled.append((kind, _compile(events_spec[kind], "%s.events.%s" % (source, kind), GROUPS)))
    step_groups = dict(compiled)["step"].groupindex
    if "step" not in step_groups:
        raise GoodputProfileError("the 'step' pattern needs a (?P<step>...) group", field=source + ".events.step",
                                  value=events_spec["step"])
    for kind in ("checkpoint", "save", "resume"):
        if kind in events_spec and "duration" not in dict(compiled)[kind].groupindex:
            raise GoodputProfileError("the %r pattern needs a (?P<duration>...) group" % kind, field="%s.events.%s" % (source, kind),
                                      value=events_spec[kind])
    prefix = spec.get("prefix")
    marker = spec.get("marker")
    ts_format = spec.get("timestamp_format", "auto")
    if not isinstance(ts_format, str) or not (ts_format in ("auto", "iso", "epoch") or "%" in ts_format):
        raise GoodputProfileError("must be auto, iso, epoch or a strptime format with % directives",
                                  field=source + ".timestamp_format", value=ts_format)
    scales = {}
    for key in ("step_time_unit", "duration_unit"):
        unit = spec.get(key, "s")
        if unit not in UNITS:
            raise GoodputProfileError("must be one of %s" % ", ".join(UNITS), field="%s.%s" % (source, key), value=unit)
        scales[key] = UNITS[unit]
    scope = spec.get("samples_scope", "rank")
    if scope not in SAMPLES_SCOPES:
        raise GoodputProfileError("must be rank (samples per rank) or global (samples of the whole job)",
                                  field=source + ".samples_scope", value=scope)
    description = spec.get("description", "")
    if not isinstance(description, str):
        raise GoodputProfileError("must be a string", field=source + ".description", value=description)
    return GoodputProfile(
        name=name, description=description,
        prefix=_compile(prefix, source + ".prefix", ("ts", "rank", "attempt")) if prefix is not None else None,
        marker=_compile(marker, source + ".marker", ()) if marker is not None else None,
        timestamp_format=ts_format, events=tuple(compiled),
        step_time_scale=scales["step_time_unit"], duration_scale=scales["duration_unit"], samples_scope=scope,
        source={key: value for key, value in spec.items() if key in PROFILE_KEYS},
    )


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


def _iso(value: Optional[float]) -> Optional[str]:
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


@dataclass
class _Interval:
    open_ts: Optional[float] = None
    total: float = 0.0
    count: int = 0

    def begin(self, ts: Optional[float]) -> None:
        self.open_ts = ts
        self.count += 1

    def end(self, ts: Optional[float], began: bool = True) -> None:
        if not began:
            self.count += 1
        if self.open_ts is not None and ts is not None:
            self.total += max(0.0, ts - self.open_ts)
        self.open_ts = None

    def close_at(self, ts: Optional[float]) -> None:
        """An interval left open (the attempt stopped inside it) ends at the attempt's last event."""
        if self.open_ts is not None:
            self.end(ts)


@dataclass
class RankStats:  # pylint: disable=too-many-instance-attributes
    """What one rank did: kept (final) steps, lost steps and time spent per category."""

    log: RankLog
    kept: Dict[int, Tuple[Optional[float], Optional[int]]] = field(default_factory=dict)  # step -> (step_time, samples)
    steps_recomputed: int = 0
    t_lost: float = 0.0
    checkpoints: _Interval = field(default_factory=_Interval)
    saves: _Interval = field(default_factory=_Interval)
    t_resume: float = 0.0
    resumes: int = 0
    attempts: int = 0
    interruptions: int = 0
    errors: List[str] = field(default_factory=list)
    complete: bool = False
    first_ts: Optional[float] = None
    last_ts: Optional[float] = None
    untimed_steps: int = 0
    first_step_start: Optional[float] = None

    def t_step(self) -> float:
        return sum(step_time or 0.0 for step_time, _samples in self.kept.values())

    def t_startup(self) -> Optional[float]:
        """From the first event to the start of the first step (imports, rendezvous, model setup)."""
        if self.first_ts is None or self.first_step_start is None:
            return None
        return max(0.0, self.first_step_start - self.first_ts)

    def samples(self) -> Optional[int]:
        values = [samples for _time, samples in self.kept.values() if samples is not None]
        return sum(values) if values else None

    def to_dict(self) -> Dict[str, Any]:
        times = [step_time for step_time, _samples in self.kept.values() if step_time is not None]
        return {
            "rank": self.log.rank, "host": self.log.host, "source": self.log.source, "lines": self.log.lines,
            "events": len(self.log.events), "malformed_lines": self.log.malformed, "complete": self.complete,
            "attempts": self.attempts, "interruptions": self.interruptions, "resumes": self.resumes,
            "steps_completed": len(self.kept), "last_step": max(self.kept) if self.kept else None,
            "steps_recomputed": self.steps_recomputed, "samples": self.samples(),
            "t_step": _round(self.t_step()), "t_lost": _round(self.t_lost),
            "step_time_mean": _round(sum(times) / len(times)) if times else None, "step_time_max": _round(max(times)) if times else None,
            "checkpoints": self.checkpoints.count, "t_checkpoint": _round(self.checkpoints.total),
            "t_save": _round(self.saves.total), "t_resume": _round(self.t_resume), "t_startup": _round(self.t_startup()),
            "first_event": _iso(self.first_ts), "last_event": _iso(self.last_ts),
            "t_span": _round(self.last_ts - self.first_ts) if self.first_ts is not None and self.last_ts is not None else None,
            "errors": list(self.errors), "warnings": list(self.log.warnings),
        }


def _round(value: Optional[float], digits: int = 6) -> Optional[float]:
    return None if value is None else round(value, digits)


def _drop_after(stats: RankStats, last_kept: int) -> None:
    """Steps after ``last_kept`` were lost (the job went back to an earlier checkpoint)."""
    for step in [step for step in stats.kept if step > last_kept]:
        step_time, _samples = stats.kept.pop(step)
        stats.steps_recomputed += 1
        stats.t_lost += step_time or 0.0


def rank_stats(log: RankLog) -> RankStats:  # pylint: disable=too-many-branches,too-many-statements
    """Walk one rank's events in order: kept and lost steps, checkpoint/save/resume time, attempts."""
    stats = RankStats(log=log)
    down_since: Optional[float] = None  # last event of an interrupted attempt, until training is back
    prev: Optional[GoodputEvent] = None
    started = False
    for event in log.events:
        if event.ts is not None:
            stats.first_ts = event.ts if stats.first_ts is None else min(stats.first_ts, event.ts)
            stats.last_ts = event.ts if stats.last_ts is None else max(stats.last_ts, event.ts)
        kind = event.kind
        restart = (kind == "start" and started) or (kind == "resume_begin" and down_since is None and prev is not None
                                                    and prev.kind not in ("start",))
        if restart:
            stats.checkpoints.close_at(prev.ts if prev else None)
            stats.saves.close_at(prev.ts if prev else None)
            if down_since is None:
                down_since = prev.ts if prev else event.ts
        if kind == "start":
            stats.attempts += 1
            started = True
        elif kind == "step":
            if not started:
                stats.attempts, started = 1, True
            step_time = event.step_time
            if step_time is None and prev is not None and event.ts is not None and prev.ts is not None and not event.ts_inherited:
                step_time = max(0.0, event.ts - prev.ts)
            if step_time is None:
                stats.untimed_steps += 1
            if stats.kept and event.step <= max(stats.kept):
                _drop_after(stats, event.step - 1)  # the step counter went back: a restart without resume lines
                if down_since is None and prev is not None:
                    down_since = prev.ts
            if down_since is not None and event.ts is not None:
                stats.t_resume += max(0.0, event.ts - (step_time or 0.0) - down_since)
                stats.resumes += 1
                down_since = None
            stats.kept[event.step] = (step_time, event.samples)
            if stats.first_step_start is None and event.ts is not None:
                stats.first_step_start = event.ts - (step_time or 0.0)
        elif kind == "checkpoint_begin":
            stats.checkpoints.begin(event.ts)
        elif kind == "checkpoint_end":
            stats.checkpoints.end(event.ts, began=stats.checkpoints.open_ts is not None)
        elif kind == "checkpoint":
            stats.checkpoints.count += 1
            stats.checkpoints.total += event.duration or 0.0
        elif kind == "save_begin":
            stats.saves.begin(event.ts)
        elif kind == "save_end":
            stats.saves.end(event.ts, began=stats.saves.open_ts is not None)
        elif kind == "save":
            stats.saves.count += 1
            stats.saves.total += event.duration or 0.0
        elif kind == "resume_begin":
            if down_since is None:
                down_since = event.ts
        elif kind == "resume_end":
            if event.step is not None:
                _drop_after(stats, event.step)
            if down_since is not None and event.ts is not None:
                stats.t_resume += max(0.0, event.ts - down_since)
                stats.resumes += 1
            down_since = None
        elif kind == "resume":
            stats.t_resume += event.duration or 0.0
            stats.resumes += 1
            down_since = None
        elif kind == "interrupt":
            stats.interruptions += 1
        elif kind == "end":
            stats.complete = True
        elif kind == "error":
            stats.errors.append(event.message or "error")
        if kind in ("start", "step") and stats.complete:
            stats.complete = False  # it went on after an 'end' line
        prev = event
    last = log.events[-1].ts if log.events else None
    stats.checkpoints.close_at(last)
    stats.saves.close_at(last)
    return stats


def _kept_step_wall(all_stats: List[RankStats]) -> Tuple[List[int], float]:
    """Steps every rank kept, and the sum over them of the slowest rank's step time."""
    common = set(all_stats[0].kept)
    for stats in all_stats[1:]:
        common &= set(stats.kept)
    total = 0.0
    for step in common:
        total += max((stats.kept[step][0] or 0.0) for stats in all_stats)
    return sorted(common), total


def compute_goodput(logs: List[RankLog], world_size: Optional[int] = None, expected_steps: Optional[int] = None,
                    min_goodput: Optional[float] = None, missing: Optional[Mapping[str, str]] = None,
                    extra_reasons: Optional[Iterable[str]] = None) -> Dict[str, Any]:
    """Combine the logs of all ranks of one job into goodput, completed work and a verdict.

    ``missing`` maps a rank/host label to why it has no log (unreachable, failed to start); each becomes
    a reason, and so is each of ``extra_reasons`` (what the launcher saw: a rank killed at its timeout).
    ``passed`` is true when there is no reason: every rank present and complete, no errors,
    at least one step, ``expected_steps`` reached, goodput at least ``min_goodput``.
    """
    if world_size is not None and (not isinstance(world_size, int) or isinstance(world_size, bool) or world_size < 1):
        raise GoodputError("must be a positive integer", field="world_size", value=world_size)
    if expected_steps is not None and (not isinstance(expected_steps, int) or isinstance(expected_steps, bool) or expected_steps < 1):
        raise GoodputError("must be a positive integer", field="expected_steps", value=expected_steps)
    if min_goodput is not None and (isinstance(min_goodput, bool) or not isinstance(min_goodput, (int, float)) or not 0 <= min_goodput <= 1):
        raise GoodputError("must be a number between 0 and 1", field="min_goodput", value=min_goodput)
    reasons: List[str] = []
    warnings: List[str] = []
    for label, why in sorted((missing or {}).items()):
        reasons.append("%s excluded: %s" % (label, why))
    reasons.extend(extra_reasons or ())
    all_stats = [rank_stats(log) for log in logs]
    ranks_seen = sorted({stats.log.rank for stats in all_stats if stats.log.rank is not None})
    size = world_size if world_size is not None else max(len(logs), (ranks_seen[-1] + 1) if ranks_seen else 0)
    profile = logs[0].profile.name if logs else None
    for stats in all_stats:
        log = stats.log
        warnings.extend(log.warnings)
        if not stats.kept:
            if stats.errors:
                reasons.append("%s: no training step completed; the workload reported: %s" % (log.label(), stats.errors[-1]))
            else:
                reasons.append("%s: no training step found in %d line(s) (%d matched profile %s, %d unreadable%s)" % (
                    log.label(), log.lines, len(log.events), log.profile.name, log.malformed,
                    ", first " + log.malformed_examples[0] if log.malformed_examples else ""))
            continue
        for message in stats.errors:
            reasons.append("%s: the workload reported an error: %s" % (log.label(), message))
        if "end" in log.profile.kinds() and not stats.complete and not stats.errors:
            reasons.append("%s: the log stops at step %d without an 'end' line (killed or still running?)" % (log.label(), max(stats.kept)))
        if stats.untimed_steps:
            warnings.append("%s: %d step(s) without a step time (counted as 0 s)" % (log.label(), stats.untimed_steps))
    if world_size is not None:
        duplicates = sorted({rank for rank in ranks_seen if sum(1 for s in all_stats if s.log.rank == rank) > 1})
        for rank in duplicates:
            reasons.append("rank %d appears in more than one log" % rank)
        for rank in ranks_seen:
            if rank >= world_size:
                reasons.append("rank %d is outside world size %d" % (rank, world_size))
        known_missing = len(missing or {})
        absent = [rank for rank in range(world_size) if rank not in ranks_seen]
        if len(absent) > known_missing:
            reasons.append("no log for rank(s) %s of world size %d" % (", ".join(str(r) for r in absent), world_size))
    timed = [stats for stats in all_stats if stats.kept]
    result: Dict[str, Any] = {
        "profile": profile, "world_size": size, "ranks": [stats.to_dict() for stats in all_stats],
        "goodput": None, "steps_completed": 0, "steps_expected": expected_steps, "steps_recomputed": 0, "samples": None,
        "gpu_seconds": 0.0, "t_total": None, "t_checkpoint": 0.0, "t_resume": 0.0, "t_save": 0.0, "t_step": 0.0, "t_lost": 0.0,
        "t_startup": None, "productive_fraction": None,
        "checkpoints": 0, "interruptions": 0, "attempts": 0, "first_event": None, "last_event": None,
    }
    if timed:
        steps, t_step = _kept_step_wall(timed)
        firsts = [s.first_ts for s in timed if s.first_ts is not None]
        lasts = [s.last_ts for s in timed if s.last_ts is not None]
        t_ckpt = max(s.checkpoints.total for s in timed)
        t_resume = max(s.t_resume for s in timed)
        t_save = max(s.saves.total for s in timed)
        if firsts and lasts:
            t_total = max(lasts) - min(firsts)
        else:
            t_total = t_step + max(s.t_lost for s in timed) + t_ckpt + t_resume + t_save
            warnings.append("no timestamps in the logs: t_total is the sum of step, checkpoint, save and resume times")
        counts = sorted({len(s.kept) for s in timed})
        if len(counts) > 1:
            reasons.append("ranks disagree on completed steps (%s): counted the %d steps every rank completed" % (
                ", ".join("%s: %d" % (s.log.label(), len(s.kept)) for s in timed), len(steps)))
        if timed[0].log.profile.samples_scope == "global":
            per_step = {}
            for stats in timed:
                for step in steps:
                    if stats.kept[step][1] is not None:
                        per_step[step] = stats.kept[step][1]
            samples = sum(per_step.values()) if per_step else None
        else:
            values = [stats.kept[step][1] for stats in timed for step in steps if stats.kept[step][1] is not None]
            samples = sum(values) if values else None
        result.update(
            steps_completed=len(steps), samples=samples, gpu_seconds=_round(size * t_step), t_total=_round(t_total),
            t_checkpoint=_round(t_ckpt), t_resume=_round(t_resume), t_save=_round(t_save), t_step=_round(t_step),
            t_lost=_round(max(s.t_lost for s in timed)), steps_recomputed=max(s.steps_recomputed for s in timed),
            checkpoints=max(s.checkpoints.count for s in timed), interruptions=max(s.interruptions for s in timed),
            attempts=max(s.attempts for s in timed), first_event=_iso(min(firsts)) if firsts else None,
            last_event=_iso(max(lasts)) if lasts else None,
            t_startup=_round(max((s.t_startup() for s in timed if s.t_startup() is not None), default=None)),
            productive_fraction=_round(t_step / t_total) if t_total > 0 else None,
        )
        denominator = t_total - t_resume
        if denominator <= 0:
            reasons.append("cannot compute goodput: t_total %.3f s minus t_resume %.3f s is not positive" % (t_total, t_resume))
        else:
            goodput = (t_total - t_ckpt - t_resume - t_save) / denominator
            result["goodput"] = _round(goodput)
            if not 0 <= goodput <= 1:
                reasons.append("inconsistent timing: goodput %.3f outside [0, 1] (t_total %.3f, t_checkpoint %.3f, t_resume %.3f, t_save %.3f)"
                               % (goodput, t_total, t_ckpt, t_resume, t_save))
            elif min_goodput is not None and goodput < min_goodput:
                reasons.append("goodput %.3f below the minimum %.3f (t_total %.1f s, t_checkpoint %.1f s, t_resume %.1f s, t_save %.1f s)"
                               % (goodput, min_goodput, t_total, t_ckpt, t_resume, t_save))
        if expected_steps is not None and len(steps) < expected_steps:
            reasons.append("completed %d of %d expected steps" % (len(steps), expected_steps))
    elif not logs and not missing:
        reasons.append("no rank logs to evaluate")
    result["passed"] = not reasons
    result["verdict"] = "pass" if not reasons else "fail"
    result["reasons"] = reasons
    result["warnings"] = warnings
    return result


def evaluate_logs(logs: Iterable[Mapping[str, Any]], profile: Union[str, Mapping[str, Any], None] = "dsxos",
                  world_size: Optional[int] = None, expected_steps: Optional[int] = None,
                  min_goodput: Optional[float] = None) -> Dict[str, Any]:
    """Convenience entry point: ``logs`` are dicts ``{text, rank?, host?, source?, missing?, timed_out?, timeout_s?}``;
    an entry with ``missing`` (why there is no log: unreachable, failed) becomes an exclusion reason, one with
    ``timed_out`` a reason that names its timeout."""
    prof = validate_profile(profile)
    parsed: List[RankLog] = []
    missing: Dict[str, str] = {}
    launcher: List[str] = []
    for index, entry in enumerate(logs):
        if not isinstance(entry, Mapping):
            raise GoodputError("each log must be a mapping with 'text' (and optional rank, host, source)", field="logs[%d]" % index,
                               value=entry)
        rank = entry.get("rank")
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 0):
            raise GoodputError("must be a non-negative integer", field="logs[%d].rank" % index, value=rank)
        host = entry.get("host")
        if rank is not None:
            label = "rank %d (host %s)" % (rank, host) if host else "rank %d" % rank
        else:
            label = "host %s" % host if host else "log %d" % index
        if entry.get("timed_out"):
            launcher.append("%s: killed at its timeout of %s s" % (label, entry.get("timeout_s", "?")))
        if entry.get("missing"):
            missing[label] = str(entry["missing"])
            continue
        text = entry.get("text")
        if text is None:
            missing[label] = "no log text"
            continue
        parsed.append(parse_goodput_log(text, prof, rank=rank, host=host, source=str(entry.get("source") or label)))
    return compute_goodput(parsed, world_size=world_size, expected_steps=expected_steps, min_goodput=min_goodput, missing=missing,
                           extra_reasons=launcher)
