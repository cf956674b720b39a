# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The logs a goodput evaluation reads: per-host ``training_goodput`` run results, log files and texts.

:func:`log_entries` turns the ``runs`` (registered results of ``mode: run``), ``logs`` (``text`` or ``path``) and
``expected_hosts`` options into the entries :func:`goodput_stats.evaluate_logs` takes; a host that returned no log
(unreachable, crashed, never ran) becomes a ``missing`` entry so the evaluation names it.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.goodput_profiles import GoodputError


def log_entries(runs: Sequence[Optional[Mapping[str, Any]]], logs: Sequence[Mapping[str, Any]],
                expected_hosts: Sequence[str]) -> Tuple[List[Dict[str, Any]], Optional[int]]:
    """``(entries, expected_steps)``: the log entries and the step count the runs were asked for (first one given)."""
    entries: List[Dict[str, Any]] = []
    seen_hosts = set()
    expected_steps = None
    for index, outcome in enumerate(runs):
        if not outcome:
            continue
        if not outcome.get("host") and not outcome.get("log") and expected_hosts:
            continue  # a result that names no host (unreachable before the module ran): expected_hosts reports it
        host = outcome.get("host") or outcome.get("item") or "run %d" % index
        seen_hosts.add(host)
        entry = {"rank": outcome.get("rank"), "host": host, "timed_out": bool(outcome.get("timed_out")), "timeout_s": outcome.get("timeout_s")}
        if outcome.get("steps") and expected_steps is None:
            expected_steps = outcome["steps"]
        if outcome.get("unreachable"):
            entry["missing"] = "unreachable: %s" % (outcome.get("msg") or "host could not be reached")
        elif outcome.get("log"):
            entry["text"] = outcome["log"]
        else:
            entry["missing"] = outcome.get("reason") or outcome.get("msg") or "no log returned"
        entries.append(entry)
    for index, item in enumerate(logs):
        entry = {"rank": item.get("rank"), "host": item.get("host")}
        if item.get("host"):
            seen_hosts.add(item["host"])
        if item.get("text") is not None:
            entry["text"] = item["text"]
        elif item.get("path"):
            try:
                with open(item["path"], "rb") as handle:
                    entry["text"] = handle.read()
                entry["source"] = item["path"]
            except OSError as err:
                entry["missing"] = "cannot read %s: %s" % (item["path"], err.strerror or err)
        else:
            raise GoodputError("logs[%d] needs text or path (got keys %s)" % (index, ", ".join(sorted(item)) or "none"))
        entries.append(entry)
    for host in expected_hosts:
        if host not in seen_hosts:
            entries.append({"host": host, "missing": "unreachable or did not run the workload"})
    return entries, expected_steps
