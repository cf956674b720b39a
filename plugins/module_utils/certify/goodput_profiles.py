# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Training goodput, step 1: the regex profiles that find events in a training log.

A *profile* says how to find events in a log: a ``prefix`` regex searched on every line (it may
capture the timestamp ``ts``, ``rank`` and ``attempt``) and one regex per event kind (see
:data:`EVENTS`); the first event regex that matches a line wins.  Built-in profiles
(:data:`BUILTIN_PROFILES`): ``dsxos`` (the collection's own workload, roles/certify/files/goodput_train.py),
``megatron`` (Megatron-LM ``training_log`` and checkpointing lines) and ``nemo`` (NeMo 2 / Lightning).
A user profile is a dict of the same shape, optionally ``base: <built-in>`` to change only a few patterns;
:func:`validate_profile` compiles it and rejects unknown keys, unknown events, unknown capture groups and
bad regexes with the field and pattern named.

The log is parsed by :mod:`goodput_parse`; the goodput is computed by :mod:`goodput_stats`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple, Union

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
MAX_PATTERN_CHARS = 2000
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
