# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Training goodput, step 3: the goodput and the completed work of a job from its ranks' events.

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

:func:`evaluate_logs` is the whole pipeline (profile, parse every log, compute) used by ``training_goodput``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.goodput_parse import (
    GoodputEvent, RankLog, iso_time, parse_goodput_log,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.goodput_profiles import (
    GoodputError, validate_profile,
)


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
            "first_event": iso_time(self.first_ts), "last_event": iso_time(self.last_ts),
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
            attempts=max(s.attempts for s in timed), first_event=iso_time(min(firsts)) if firsts else None,
            last_event=iso_time(max(lasts)) if lasts else None,
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
