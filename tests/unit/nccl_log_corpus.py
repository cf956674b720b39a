# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A generator of nccl-tests logs for every output era since 2019, wrapped by every launcher we meet.

The formats follow nccl-tests' printing code of each era (``common.cu`` and each test's ``print_header``/``GetBw``);
the numbers come from a simple bandwidth model, so each log's expected parse result is known exactly.

Eras (what changes between them):

* ``2019``: ``error`` column (a maximum error, ``%5.0le``), one header per test (all_gather has no ``redop`` column,
  broadcast ``root`` but no ``redop``), ``#   Rank  0 Pid ... [0x1a] Tesla V100`` lines without ``Group``, no
  ``agg iters``/``graph`` parameters, and the pre-mid-2020 bandwidth convention (:func:`legacy_busbw_factor`).
* ``2021``: after the mid-2020 change: one common header ``size count type redop time algbw busbw error`` (blank
  redop for collectives without one), ``agg iters`` parameter, today's factors.
* ``2022``: ``#wrong`` instead of ``error``, ``redop root`` columns (blank redop), ``Group`` in the rank lines,
  ``graph`` parameter, ``N/A`` where nothing is validated.
* ``2024``: ``# nccl-tests version ...``, ``# Collective test starting/concluded``, redop ``none``,
  ``[0000:18:00]`` bus ids, ``NCCL version`` line.

``python tests/unit/nccl_log_corpus.py`` rewrites the committed samples under ``fixtures/nccl_logs/``.
"""
from __future__ import annotations

import json
import os
import random
import sys
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

if __name__ == "__main__":  # pragma: no cover - regenerating the samples
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".build", "collections"))

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_collectives import busbw_factor, legacy_busbw_factor  # noqa: E402

SAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "nccl_logs")
ERAS = ("2019", "2021", "2022", "2024")
ERA_COLLECTIVES = {
    "2019": ("all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter", "alltoall"),
    "2021": ("all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter", "alltoall", "sendrecv"),
    "2022": ("all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter", "alltoall", "sendrecv", "gather",
             "scatter", "hypercube"),
    "2024": ("all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter", "alltoall", "sendrecv", "gather",
             "scatter", "hypercube"),
}
OUTCOMES = ("success", "failure", "abort", "truncated")
TOPOLOGIES = (("single", 1), ("multi", 2))
GPUS_PER_HOST = 8
REDUCTIONS = ("all_reduce", "reduce", "reduce_scatter")
ROOTED = ("broadcast", "reduce", "gather", "scatter")

#: One output line: (stream, rank, text); rank -1 is the launcher itself.
Line = Tuple[str, int, str]


def _time_str(usec: float) -> str:
    if usec >= 10000.0:
        return "%7.0f" % usec
    if usec >= 100.0:
        return "%7.1f" % usec
    return "%7.2f" % usec


def _bandwidth_model(collective: str, size: int, ranks: int, hosts: int) -> float:
    """Bus bandwidth in GB/s a healthy system reaches at ``size`` bytes (latency-bound small sizes)."""
    peak = 460.0 if hosts == 1 else 360.0
    if collective == "alltoall" and hosts > 1:
        peak = 45.0
    return peak * size / (size + 12.0 * (1 << 20))


def _factors(era: str, collective: str, ranks: int) -> float:
    """busbw / algbw as that era prints it."""
    if era == "2019":
        legacy = legacy_busbw_factor(collective, ranks)
        if legacy is not None:
            return legacy
    return busbw_factor(collective, ranks)


def _header(era: str, collective: str) -> List[str]:
    wrong = "error" if era in ("2019", "2021") else "#wrong"
    if era == "2019":
        cols = {"all_reduce": ["redop"], "reduce_scatter": ["redop"], "reduce": ["redop", "root"],
                "broadcast": ["root"]}.get(collective, [])
    elif era == "2021":
        cols = ["redop"]
    else:
        cols = ["redop", "root"]
    names = "#       size         count      type " + "".join("%7s " % c for c in cols)
    units = "#        (B)    (elements)           " + " " * (8 * len(cols))
    pad = " " * max(0, len(names) - 14)
    return ["#", "#" + pad + "out-of-place                       in-place          ",
            names + "    time   algbw   busbw %6s     time   algbw   busbw %6s" % (wrong, wrong),
            units + "    (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       "]


def _row(era: str, collective: str, size: int, ranks: int, hosts: int, rng: random.Random,
         wrong: int = 0) -> Tuple[str, List[float]]:
    count = size // 4
    if collective in ("all_gather", "reduce_scatter", "gather", "scatter"):
        count = size // 4 // ranks
    if collective == "alltoall" and era != "2019":
        count = size // 4 // ranks
    redop = "sum" if collective in REDUCTIONS else ("none" if era == "2024" else "")
    root = 0 if collective in ROOTED else -1
    if era == "2019":
        cols = {"all_reduce": [redop], "reduce_scatter": [redop], "reduce": [redop, str(root)],
                "broadcast": [str(root)]}.get(collective, [])
    elif era == "2021":
        cols = [redop]
    else:
        cols = [redop, str(root)]
    text = "%12d  %12d  %8s " % (size, count, "float") + "".join("%7s " % c for c in cols)
    factor = _factors(era, collective, ranks)
    busbws = []
    for variant in (0, 1):
        busbw = _bandwidth_model(collective, size, ranks, hosts) * rng.uniform(0.97, 1.0)
        algbw = busbw / factor
        seconds = _algbw_bytes(era, collective, size, ranks) / 1e9 / algbw if algbw > 0 else 1.0
        busbw = algbw * factor
        busbws.append(float("%.2f" % busbw))
        if era in ("2019", "2021"):
            check = "%5.0e" % (0.0 if not wrong else 1e-1)
        elif (collective == "sendrecv" and variant == 1) or (collective == "alltoall" and variant == 1):
            check = "N/A"
        else:
            check = str(wrong if variant == 0 else 0)
        text += "   %s  %6.2f  %6.2f  %6s" % (_time_str(seconds * 1e6), algbw, busbw, check)
    return text, busbws


def _algbw_bytes(era: str, collective: str, size: int, ranks: int) -> float:
    """The bytes whose transfer rate the era's GetBw calls algbw (``size`` is the printed size column)."""
    if collective == "hypercube" or (era == "2019" and collective in ("all_gather", "reduce_scatter", "gather", "scatter")):
        return size * (ranks - 1) / float(ranks) if collective != "hypercube" else float(size * (ranks - 1))
    return float(size)


def _hosts(hosts: int) -> List[str]:
    return ["gpu-node-%02d" % (i + 1) for i in range(hosts)]


def generate(era: str, collective: str, hosts: int, outcome: str, seed: int = 0) -> Tuple[List[Line], Dict[str, Any]]:
    """One nccl-tests run as it leaves the processes, and what a parser must make of it."""
    rng = random.Random("%s-%s-%d-%s-%d" % (era, collective, hosts, outcome, seed))
    ranks = hosts * GPUS_PER_HOST
    names = _hosts(hosts)
    out: List[Line] = []

    def say(text: str, rank: int = 0, stream: str = "stdout") -> None:
        out.append((stream, rank, text))

    min_bytes, max_bytes = 1 << 20, 1 << 31
    if era == "2024":
        say("# nccl-tests version 2.17.6 nccl-headers=22703 nccl-library=22703")
        say("# Collective test starting: %s_perf" % collective)
    params = "# nThread 1 nGpus 1 minBytes %d maxBytes %d step: 2(factor) warmup iters: 5 iters: 20" % (min_bytes, max_bytes)
    params += {"2019": " validation: 1 ", "2021": " agg iters: 1 validation: 1 "}.get(era, " agg iters: 1 validation: 1 graph: 0")
    say(params)
    say("#")
    say("# Using devices")
    for rank in range(ranks):
        host, device = names[rank // GPUS_PER_HOST], rank % GPUS_PER_HOST
        if era == "2019":
            say("#   Rank %2d Pid %6d on %10s device %2d [0x%02x] Tesla V100-SXM2-32GB"
                % (rank, 4000 + rank, host, device, 0x1a + device))
        elif era == "2021":
            say("#  Rank %2d Pid %6d on %10s device %2d [0x%02x] A100-SXM4-40GB" % (rank, 4000 + rank, host, device, 0x07 + device))
        elif era == "2022":
            say("#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x%02x] NVIDIA A100-SXM4-80GB"
                % (rank, 4000 + rank, host, device, 0x07 + device))
        else:
            say("#  Rank %2d Group  0 Pid %6d on %10s device %2d [0000:%02x:00] NVIDIA H100 80GB HBM3"
                % (rank, 4000 + rank, host, device, 0x18 + 0x10 * device))
    if era == "2024":
        say("NCCL version 2.21.5+cuda12.4")
    for text in _header(era, collective):
        say(text)
    sizes = []
    size = min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= 2
    stop = {"success": len(sizes), "failure": 6, "abort": 7, "truncated": 9}[outcome]
    busbws: List[float] = []
    rows = 0
    for size in sizes[:stop]:
        text, values = _row(era, collective, size, ranks, hosts, rng)
        say(text)
        busbws.extend(values)
        rows += 1
    reasons: List[str] = []
    bad = names[-1]
    if outcome == "success":
        say("# Out of bounds values : 0 OK")
        say("# Avg bus bandwidth    : %g " % (sum(busbws) / len(busbws)))
        say("#")
        if era == "2024":
            say("# Collective test concluded: %s_perf" % collective)
            say("#")
    elif outcome == "failure":
        bad_rank = ranks - 1
        say("%s:%d:%d [%d] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<4311> with status=12 opcode=0 len=0 "
            "vendor err 129 (Recv)" % (bad, 4000 + bad_rank, 4100 + bad_rank, bad_rank % GPUS_PER_HOST), bad_rank)
        say("%s: Test NCCL failure common.cu:1075 'remote process exited or there was a network error / '"
            % bad, bad_rank)
        say(" .. %s pid %d: Test failure common.cu:401" % (bad, 4000 + bad_rank), bad_rank)
        reasons += ["NCCL WARN on %s" % bad, "nccl-tests failed: %s: Test NCCL failure common.cu:1075" % bad]
    elif outcome == "abort":
        reasons.append("@abort")
    else:
        reasons.append("truncated log")
    expected = {"era": era, "collective": collective, "ranks": ranks, "hosts": names, "rows": rows,
                "ok": outcome == "success", "max_busbw": max(busbws) if busbws else None,
                "avg_busbw": float("%g" % (sum(busbws) / len(busbws))) if outcome == "success" else None,
                "reasons": reasons, "legacy": era == "2019" and legacy_busbw_factor(collective, ranks) is not None}
    return out, expected


# --- launchers ------------------------------------------------------------------------------------------------------

def _stamp(index: int) -> str:
    return "2024-05-01T12:%02d:%02d.%06dZ " % (index // 3600 % 60, index // 60 % 60, (index * 7919) % 1000000)


def _abort_lines(launcher: str, expected: Dict[str, Any]) -> Tuple[List[str], str]:
    """What the launcher prints when rank N dies, and the reason that must come out of it."""
    bad = expected["hosts"][-1]
    rank = expected["ranks"] - 1
    if launcher in ("srun", "pdsh_srun"):
        return (["srun: error: %s: task %d: Aborted" % (bad, rank)], "Slurm step failed on %s (task %d): Aborted" % (bad, rank))
    box = "-" * 74
    return ([box, "Primary job  terminated normally, but 1 process returned",
             "a non-zero exit code. Per user-direction, the job has been aborted.", box, box,
             "mpirun noticed that process rank %d with PID 0 on node %s exited on signal 6 (Aborted)." % (rank, bad), box],
            "MPI run aborted: rank %d on %s exited on signal 6 (Aborted)" % (rank, bad))


def _tag_mpirun(stream: str, rank: int, text: str) -> str:
    return ("[1,%d]<%s>:%s" % (rank, stream, text)) if rank >= 0 else text


LAUNCHERS: Dict[str, Callable[[str, int, str, int], str]] = {
    "plain": lambda stream, rank, text, i: text,
    "mpirun_tag_output": lambda stream, rank, text, i: _tag_mpirun(stream, rank, text),
    "srun": lambda stream, rank, text, i: ("%2d: %s" % (rank, text)) if rank >= 0 else text,
    "kubectl_timestamps": lambda stream, rank, text, i: _stamp(i) + text,
    "kubectl_prefix": lambda stream, rank, text, i: "[pod/nccl-test-launcher-7xk2p/mpi-launcher] " + text,
    "pdsh_srun": lambda stream, rank, text, i: "login-01: " + (("%2d: %s" % (rank, text)) if rank >= 0 else text),
    "cluster_tool_mpirun": lambda stream, rank, text, i: "(head, rank=0, pid=3808) " + _tag_mpirun(stream, rank, text),
    "kubectl_prefix_timestamps_mpirun": lambda stream, rank, text, i: "[pod/nccl-mpi-0/launcher] " + _stamp(i) + _tag_mpirun(stream, rank, text),
}


def wrap(lines: List[Line], expected: Dict[str, Any], launcher: str, outcome: str,
         split_at: Optional[int] = None) -> Tuple[str, Dict[str, Any]]:
    """The log as ``launcher`` writes it; an abort adds the launcher's own message (optionally wrapped at word
    ``split_at`` of its longest line)."""
    lines = list(lines)
    expected = dict(expected, reasons=list(expected["reasons"]), launcher=launcher)
    if outcome == "abort":
        messages, reason = _abort_lines(launcher, expected)
        longest = max(range(len(messages)), key=lambda k: len(messages[k]))
        if split_at is not None:
            words = messages[longest].split(" ")
            cut = 1 + split_at % (len(words) - 1)
            messages[longest:longest + 1] = [" ".join(words[:cut]), " ".join(words[cut:])]
        lines += [("stderr", -1, m) for m in messages]
        expected["reasons"] = [reason if r == "@abort" else r for r in expected["reasons"]]
    fmt = LAUNCHERS[launcher]
    text = "\n".join(fmt(stream, rank, body, i) for i, (stream, rank, body) in enumerate(lines)) + "\n"
    if outcome == "truncated":
        text = text.rstrip("\n")  # cut in the middle of the sweep: no trailer, no final line break
        expected["rows"] -= 1  # the last row may be cut anywhere: it is not read
    return text, expected


def corpus() -> Iterator[Tuple[str, str, Dict[str, Any]]]:
    """Every era x collective x topology x outcome x launcher: (name, text, expected)."""
    for era in ERAS:
        for collective in ERA_COLLECTIVES[era]:
            for topo, hosts in TOPOLOGIES:
                for outcome in OUTCOMES:
                    lines, expected = generate(era, collective, hosts, outcome)
                    for number, launcher in enumerate(LAUNCHERS):
                        text, exp = wrap(lines, expected, launcher, outcome, split_at=number if outcome == "abort" else None)
                        yield "%s_%s_%s_%s_%s" % (collective, era, topo, outcome, launcher), text, exp


#: The samples committed under fixtures/nccl_logs/ (a spread over every axis of the corpus).
SAMPLE_NAMES = tuple(
    ["%s_%s_single_success_plain" % (coll, era) for era in ERAS for coll in ERA_COLLECTIVES[era]]
    + ["all_gather_2019_multi_success_mpirun_tag_output", "reduce_scatter_2019_multi_success_srun",
       "alltoall_2021_multi_success_kubectl_timestamps", "all_reduce_2022_multi_failure_mpirun_tag_output",
       "all_gather_2022_multi_abort_cluster_tool_mpirun", "all_reduce_2024_multi_abort_srun",
       "all_reduce_2024_multi_success_kubectl_prefix_timestamps_mpirun", "reduce_scatter_2024_single_truncated_pdsh_srun",
       "all_gather_2024_multi_success_cluster_tool_mpirun", "all_reduce_2019_single_abort_kubectl_prefix"])


def write_samples(directory: str = SAMPLES) -> List[str]:
    """Write the sample logs and ``expected.json`` (their expected parse results)."""
    os.makedirs(directory, exist_ok=True)
    wanted = set(SAMPLE_NAMES)
    expected: Dict[str, Any] = {}
    for name, text, exp in corpus():
        if name in wanted:
            with open(os.path.join(directory, name + ".log"), "w", encoding="utf-8") as handle:
                handle.write(text)
            expected[name + ".log"] = exp
    with open(os.path.join(directory, "expected.json"), "w", encoding="utf-8") as handle:
        json.dump(expected, handle, indent=1, sort_keys=True)
        handle.write("\n")
    return sorted(expected)


if __name__ == "__main__":  # pragma: no cover
    print("\n".join(write_samples()))
