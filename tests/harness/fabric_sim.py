# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Fabric simulator for the Certify phase: answers "run nccl-tests on these nodes" with text
in the nccl-tests output format, fast enough to drive fault isolation over thousands of nodes.

Model (deliberately simple, deterministic for a given seed):

* every node has a network bandwidth (``node_bw``, GB/s of all-reduce bus bandwidth it can
  sustain); a degraded node multiplies it by a factor (``degraded_nodes``);
* every node sits in a topology *domain*; traffic between two domains crosses the
  inter-domain link of that pair (``link_bw``, default ``inter_domain_bw``); a degraded
  link multiplies it by a factor (``link_faults``).  A group spanning domains X and Y is
  limited by the X-Y link;
* a group's bus bandwidth at large messages is the minimum over its nodes and the links
  between its domains, times ``1 - 0.005 * log2(ranks)``; smaller messages follow a
  latency curve ``bw * s / (s + s_half)``; each row gets a little Gaussian noise;
* a dead node makes any test containing it abort (launcher error or time-limit cancel);
* a corrupt node makes rows report ``#wrong`` and the summary ``Out of bounds values : N FAILED``;
* each test fails transiently (NCCL error, IB completion error, watchdog) with probability
  ``transient_rate``, independent of everything else.

A single node (one rank per GPU on NVLink) runs at ``intra_node_bw`` and touches no network.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

SIZES: Tuple[int, ...] = tuple(1 << p for p in range(20, 34))  # 1 MiB .. 8 GiB, doubling
GPU_MODEL = "NVIDIA H100 80GB HBM3"
COLLECTIVES: Dict[str, Tuple[str, str]] = {
    # name: (redop column, root column)
    "all_reduce": ("sum", "-1"),
    "all_gather": ("none", "-1"),
    "reduce_scatter": ("sum", "-1"),
    "alltoall": ("none", "-1"),
    "broadcast": ("none", "0"),
}
HALF_SIZE_BYTES = 16 << 20  # message size at which half of the peak bandwidth is reached (2 ranks)
BUS_FACTOR_DECAY = 0.005


def _pair(a: str, b: str) -> Tuple[str, str]:
    return (a, b) if a <= b else (b, a)


class FabricSimulator:
    """Simulated GPU fabric.  ``run_group(nodes)`` returns nccl-tests text for that group."""

    def __init__(self, nodes: Sequence[str], topology: Optional[Mapping[str, str]] = None,
                 node_bw: Union[float, Mapping[str, float]] = 370.0,
                 degraded_nodes: Optional[Mapping[str, float]] = None,
                 link_faults: Optional[Mapping[Tuple[str, str], float]] = None,
                 link_bw: Optional[Mapping[Tuple[str, str], float]] = None,
                 dead_nodes: Iterable[str] = (), corrupt_nodes: Iterable[str] = (),
                 transient_rate: float = 0.0, seed: int = 0, gpus_per_node: int = 8,
                 inter_domain_bw: Optional[float] = None, intra_node_bw: float = 480.0,
                 noise: float = 0.01) -> None:
        self.nodes = list(nodes)
        known = set(self.nodes)
        if len(known) != len(self.nodes):
            raise ValueError("duplicate node names in simulator")
        self.topology: Dict[str, str] = dict(topology or {})
        for node in self.nodes:
            self.topology.setdefault(node, "default")
        if isinstance(node_bw, Mapping):
            self.node_bw = {n: float(node_bw.get(n, 370.0)) for n in self.nodes}
        else:
            self.node_bw = {n: float(node_bw) for n in self.nodes}
        self.degraded_nodes = dict(degraded_nodes or {})
        self.dead_nodes = frozenset(dead_nodes)
        self.corrupt_nodes = frozenset(corrupt_nodes)
        for label, group in (("degraded", self.degraded_nodes), ("dead", self.dead_nodes),
                             ("corrupt", self.corrupt_nodes)):
            unknown = sorted(set(group) - known)
            if unknown:
                raise ValueError("%s nodes not in the simulator: %s" % (label, ", ".join(unknown[:5])))
        self.link_faults = {_pair(*k): float(v) for k, v in (link_faults or {}).items()}
        self.inter_domain_bw = float(inter_domain_bw) if inter_domain_bw is not None else max(self.node_bw.values() or [370.0])
        self.link_bw = {_pair(*k): float(v) for k, v in (link_bw or {}).items()}
        if not 0.0 <= transient_rate < 1.0:
            raise ValueError("transient_rate must be in [0, 1): %r" % transient_rate)
        self.transient_rate = transient_rate
        self.gpus_per_node = gpus_per_node
        self.intra_node_bw = intra_node_bw
        self.noise = noise
        self.seed = seed
        self._rng = random.Random(seed)
        self._runs = 0
        self._curves: Dict[int, List[float]] = {}
        self._pids = {n: 10000 + (i * 7919) % 50000 for i, n in enumerate(self.nodes)}

    # ---------------------------------------------------------------- model
    @property
    def faulty_nodes(self) -> frozenset:
        """Nodes that a correct isolation must condemn (degraded below 85 %, dead or corrupt)."""
        slow = {n for n, f in self.degraded_nodes.items() if f < 0.85}
        return frozenset(slow) | self.dead_nodes | self.corrupt_nodes

    @property
    def faulty_links(self) -> frozenset:
        """Domain pairs whose link is degraded below 85 %."""
        return frozenset(p for p, f in self.link_faults.items() if f < 0.85)

    def bottleneck_bw(self, nodes: Sequence[str]) -> float:
        """Large-message bus bandwidth ceiling of ``nodes`` (before the rank-count decay)."""
        if len(nodes) == 1:
            node = nodes[0]
            return self.intra_node_bw * self.degraded_nodes.get(node, 1.0)
        bw = min(self.node_bw[n] * self.degraded_nodes.get(n, 1.0) for n in nodes)
        domains = {self.topology[n] for n in nodes}
        if len(domains) > 1:
            base = self.inter_domain_bw
            bw = min(bw, base)
            for a, b in set(self.link_bw) | set(self.link_faults):
                if a in domains and b in domains:
                    bw = min(bw, self.link_bw.get((a, b), base) * self.link_faults.get((a, b), 1.0))
        return bw

    def expected_busbw(self, ranks: int, size: int, peak: float) -> float:
        """Noise-free bus bandwidth for ``size`` bytes on ``ranks`` ranks with large-message ``peak``."""
        peak = peak * (1.0 - BUS_FACTOR_DECAY * math.log2(max(ranks, 1)))
        half = HALF_SIZE_BYTES * (1.0 + 0.25 * math.log2(max(ranks // max(self.gpus_per_node, 1), 1)))
        return peak * size / (size + half)

    def _curve(self, ranks: int) -> List[float]:
        curve = self._curves.get(ranks)
        if curve is None:
            curve = [self.expected_busbw(ranks, size, 1.0) for size in SIZES]
            self._curves[ranks] = curve
        return curve

    # ---------------------------------------------------------------- text
    def _header(self, collective: str, lines: List[str], ranks_of: Sequence[str]) -> None:
        lines.append("# nccl-tests version 2.13.10 nccl-headers=22304 nccl-library=22304")
        lines.append("# Collective test starting: %s_perf" % collective)
        lines.append("# nThread 1 nGpus 1 minBytes %d maxBytes %d step: 2(factor) warmup iters: 5 iters: 20 "
                     "agg iters: 1 validation: 1 graph: 0" % (SIZES[0], SIZES[-1]))
        lines.append("#")
        lines.append("# Using devices")
        gpus = self.gpus_per_node
        rank = 0
        for node in ranks_of:
            pid = self._pids.get(node, 4242)
            for dev in range(gpus):
                lines.append("#  Rank %3d Group  0 Pid %6d on %12s device %2d [0x%02x] %s"
                             % (rank, pid + dev, node, dev, 0x18 + 0x11 * dev, GPU_MODEL))
                rank += 1

    def _table_header(self, lines: List[str]) -> None:
        lines.append("#")
        lines.append("#                                                              out-of-place"
                     "                       in-place          ")
        lines.append("#       size         count      type   redop    root     time   algbw   busbw #wrong"
                     "     time   algbw   busbw #wrong")
        lines.append("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)         "
                     "   (us)  (GB/s)  (GB/s)       ")

    def _row(self, size: int, ranks: int, busbw: float, collective: str, wrong: int) -> str:
        redop, root = COLLECTIVES[collective]
        if collective == "all_reduce":
            factor = 2.0 * (ranks - 1) / ranks if ranks > 1 else 1.0
            count = size // 4
        elif collective == "broadcast":
            factor = 1.0
            count = size // 4
        else:
            factor = (ranks - 1) / ranks if ranks > 1 else 1.0
            count = size // 4 // max(ranks, 1)
        algbw = busbw / factor
        time_us = size / (algbw * 1e3)
        return ("%12d  %12d     float  %6s  %6s  %7.1f  %6.2f  %6.2f  %5d  %7.1f  %6.2f  %6.2f  %5d"
                % (size, count, redop, root, time_us, algbw, busbw, wrong, time_us * 1.01, algbw / 1.01,
                   busbw / 1.01, wrong))

    def simulate(self, nodes: Sequence[str], collective: str = "all_reduce") -> "GroupRun":
        """Draw the outcome of one test over ``nodes`` (all random draws happen here)."""
        if collective not in COLLECTIVES:
            raise ValueError("unknown collective %r (known: %s)" % (collective, ", ".join(sorted(COLLECTIVES))))
        if not nodes:
            raise ValueError("a group test needs at least one node")
        unknown = [n for n in nodes if n not in self.node_bw]
        if unknown:
            raise ValueError("nodes not in the simulator: %s" % ", ".join(unknown[:5]))
        self._runs += 1
        rng = self._rng
        ranks = len(nodes) * self.gpus_per_node
        dead = [n for n in nodes if n in self.dead_nodes]
        if dead:
            return GroupRun(tuple(nodes), collective, ranks, "dead", (), host=dead[0], variant=int(rng.random() < 0.5))
        transient = self.transient_rate > 0 and rng.random() < self.transient_rate
        fail_at = rng.randrange(len(SIZES)) if transient else len(SIZES)
        peak = self.bottleneck_bw(nodes)
        corrupt = any(n in self.corrupt_nodes for n in nodes)
        noise = self.noise
        curve = self._curve(ranks)
        rows = []
        gauss = rng.gauss
        for index in range(fail_at):
            busbw = peak * curve[index]
            if noise:
                busbw *= max(0.5, gauss(1.0, noise))
            size = SIZES[index]
            wrong = rng.randrange(1, 4096) if corrupt and size >= (64 << 20) else 0
            rows.append((size, busbw, wrong))
        if transient:
            host = nodes[rng.randrange(len(nodes))]
            return GroupRun(tuple(nodes), collective, ranks, "transient", tuple(rows), host=host,
                            variant=rng.randrange(3), port=(rng.randrange(256), rng.randrange(256)))
        return GroupRun(tuple(nodes), collective, ranks, "corrupt" if corrupt else "ok", tuple(rows))

    def run_group(self, nodes: Sequence[str], collective: str = "all_reduce") -> str:
        """Run one simulated nccl-tests job over ``nodes`` and return its output text."""
        return self.render(self.simulate(nodes, collective))

    def render(self, run: "GroupRun") -> str:
        """nccl-tests text of a simulated run."""
        if run.status == "dead":
            return self._dead_log(run)
        lines: List[str] = []
        self._header(run.collective, lines, run.nodes)
        self._table_header(lines)
        for size, busbw, wrong in run.rows:
            lines.append(self._row(size, run.ranks, busbw, run.collective, wrong))
        if run.status == "transient":
            lines.extend(self._transient_lines(run))
            return "\n".join(lines) + "\n"
        wrong_total = sum(r[2] for r in run.rows)
        lines.append("# Out of bounds values : %d %s" % (wrong_total, "FAILED" if wrong_total else "OK"))
        lines.append("# Avg bus bandwidth    : %.3f " % run.avg_busbw)
        lines.append("#")
        lines.append("# Collective test concluded: %s_perf" % run.collective)
        lines.append("")
        return "\n".join(lines)

    def healthy_reference(self, node_count: int, collective: str = "all_reduce") -> str:
        """Noise-free output of a healthy group of ``node_count`` nodes (for calibrating thresholds)."""
        names = ["ref%04d" % i for i in range(node_count)]
        ref = FabricSimulator(names, node_bw=min(self.node_bw.values() or [370.0]), seed=0,
                              gpus_per_node=self.gpus_per_node, intra_node_bw=self.intra_node_bw, noise=0.0)
        return ref.run_group(names, collective)

    def _transient_lines(self, run: "GroupRun") -> List[str]:
        host = run.host
        pid = self._pids.get(host, 4242)
        if run.variant == 0:
            return ["%s: Test NCCL failure common.cu:1279 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '"
                    % host,
                    " .. %s pid %d: Test failure common.cu:1100" % (host, pid)]
        if run.variant == 1:
            return ["%s:%d:%d [3] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.10.%d.%d<43210> "
                    "with status=IBV_WC_RETRY_EXC_ERR(12) opcode=0 len=0 vendor err 129 (Send)"
                    % (host, pid, pid + 12, run.port[0], run.port[1]),
                    "%s: Test NCCL failure common.cu:1279 'remote process exited or there was a network error / '" % host,
                    " .. %s pid %d: Test failure common.cu:1100" % (host, pid)]
        return ["[%s:%d] NCCL watchdog: collective operation timed out after 600000 ms" % (host, pid),
                "%s: Test NCCL failure common.cu:1279 'internal error - please report this issue to the NCCL developers'"
                % host]

    def _dead_log(self, run: "GroupRun") -> str:
        dead = run.host
        if run.variant:
            lines = ["ssh: connect to host %s port 22: No route to host" % dead,
                     "--------------------------------------------------------------------------",
                     "ORTE was unable to reliably start one or more daemons.",
                     "This usually is caused by a remote host being unreachable (%s)." % dead,
                     "--------------------------------------------------------------------------",
                     "mpirun noticed that the job aborted, but has no info as to the process that caused that situation."]
            return "\n".join(lines) + "\n"
        lines: List[str] = []
        alive = [n for n in run.nodes if n not in self.dead_nodes]
        self._header(run.collective, lines, alive)
        lines.append("slurmstepd: error: *** STEP 4242.0 ON %s CANCELLED AT 2026-01-01T00:10:00 DUE TO TIME LIMIT ***"
                     % (alive[0] if alive else dead))
        lines.append("srun: error: %s: tasks 0-%d: Killed" % (dead, self.gpus_per_node - 1))
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class GroupRun:
    """Outcome of one simulated test before rendering (``status``: ok, transient, dead, corrupt)."""

    nodes: Tuple[str, ...]
    collective: str
    ranks: int
    status: str
    rows: Tuple[Tuple[int, float, int], ...]
    host: str = ""
    variant: int = 0
    port: Tuple[int, int] = (0, 0)

    @property
    def avg_busbw(self) -> float:
        """Mean bus bandwidth over the rows (what ``# Avg bus bandwidth`` prints)."""
        return sum(r[1] for r in self.rows) / len(self.rows) if self.rows else 0.0

    @property
    def failed(self) -> bool:
        """True when the log would show a failure (abort, error or wrong values)."""
        return self.status != "ok"


# ---------------------------------------------------------------------------- judging outputs
_FAILURE_MARKERS = ("NCCL failure", "Test failure", "NCCL WARN", "CANCELLED", "Killed", "ORTE was unable",
                    "No route to host", "timed out")


def read_avg_busbw(text: str) -> Optional[float]:
    """The value of the ``# Avg bus bandwidth`` line, or None when the line is missing."""
    for line in reversed(text.splitlines()):
        if line.startswith("# Avg bus bandwidth"):
            try:
                return float(line.split(":", 1)[1].split()[0])
            except (IndexError, ValueError):
                return None
    return None


def failure_reason(text: str) -> Optional[str]:
    """First line of ``text`` that shows the run failed, or None."""
    for line in text.splitlines():
        if any(marker in line for marker in _FAILURE_MARKERS):
            return line.strip()
        if line.startswith("# Out of bounds values") and "FAILED" in line:
            return line.strip()
    if read_avg_busbw(text) is None:
        return "no '# Avg bus bandwidth' line: the test did not complete"
    return None


def _load_nccl_parser():
    try:
        from ansible_collections.dsxos.cluster.plugins.module_utils.certify import nccl_results  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    return getattr(nccl_results, "parse_nccl_output", None)


class OutcomeJudge:
    """Turn simulator text into a planner ``TestOutcome``: failed when the log shows a failure or the
    bus bandwidth is below ``threshold`` x the healthy value for that group size.

    Uses ``plugins/module_utils/certify/nccl_results.parse_nccl_output`` when it exists (``source``
    ``nccl_results``), else reads the ``# Avg bus bandwidth`` line (``source`` ``avg-line``).
    """

    def __init__(self, sim: FabricSimulator, threshold: float = 0.85, collective: str = "all_reduce",
                 use_nccl_results: Optional[bool] = None) -> None:
        self.sim = sim
        self.threshold = threshold
        self.collective = collective
        parser = _load_nccl_parser() if use_nccl_results in (None, True) else None
        if use_nccl_results and parser is None:
            raise ImportError("plugins/module_utils/certify/nccl_results.py (parse_nccl_output) is not available")
        self._parser = parser
        self.source = "nccl_results" if parser else "avg-line"
        self._expected: Dict[int, float] = {}
        self._expected_avg: Dict[int, float] = {}

    def _metric(self, text: str) -> Tuple[Optional[float], Optional[str]]:
        if self._parser is None:
            return read_avg_busbw(text), failure_reason(text)
        result = self._parser(text)
        ok = bool(getattr(result, "ok", False))
        reasons = list(getattr(result, "reasons", []) or [])
        value = getattr(result, "large_message_busbw", None)
        if value is None:
            value = getattr(result, "max_busbw", None)
        reason = None if ok else ("; ".join(str(r) for r in reasons) or "nccl_results: not ok")
        return (float(value) if value is not None else None), reason

    def expected(self, node_count: int) -> float:
        if node_count not in self._expected:
            value, reason = self._metric(self.sim.healthy_reference(node_count, self.collective))
            if value is None or reason:
                raise RuntimeError("healthy reference for %d node(s) did not parse: %s" % (node_count, reason))
            self._expected[node_count] = value
        return self._expected[node_count]

    def judge(self, nodes: Sequence[str], text: str):
        """Return a ``TestOutcome`` for ``text`` produced by a run over ``nodes``."""
        from ansible_collections.dsxos.cluster.plugins.module_utils.certify.isolation_model import TestOutcome  # pylint: disable=import-outside-toplevel
        value, reason = self._metric(text)
        if reason:
            return TestOutcome(passed=False, reason=reason, busbw=value)
        expected = self.expected(len(nodes))
        if value is None or value < self.threshold * expected:
            return TestOutcome(passed=False, busbw=value,
                               reason="bus bandwidth %.1f GB/s below %.0f%% of the expected %.1f GB/s"
                               % (value or 0.0, self.threshold * 100, expected))
        return TestOutcome(passed=True, reason="", busbw=value)

    def expected_avg(self, node_count: int) -> float:
        """``# Avg bus bandwidth`` of a healthy, noise-free group of ``node_count`` nodes."""
        if node_count not in self._expected_avg:
            value = read_avg_busbw(self.sim.healthy_reference(node_count, self.collective))
            if value is None:
                raise RuntimeError("healthy reference for %d node(s) has no average line" % node_count)
            self._expected_avg[node_count] = value
        return self._expected_avg[node_count]

    def judge_run(self, run: GroupRun):
        """Fast path without text: the same decision as the ``avg-line`` reading of ``render(run)``."""
        from ansible_collections.dsxos.cluster.plugins.module_utils.certify.isolation_model import TestOutcome  # pylint: disable=import-outside-toplevel
        if run.failed:
            return TestOutcome(passed=False, reason="simulated %s failure" % run.status)
        value = run.avg_busbw
        expected = self.expected_avg(len(run.nodes))
        if value < self.threshold * expected:
            return TestOutcome(passed=False, busbw=value,
                               reason="bus bandwidth %.1f GB/s below %.0f%% of the expected %.1f GB/s"
                               % (value, self.threshold * 100, expected))
        return TestOutcome(passed=True, busbw=value)
