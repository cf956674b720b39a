# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Useful-work fleet simulation: the share of a GPU fleet's capacity that ends as kept training work, under three
ways of handling faulty nodes, side by side.

A discrete-event simulation (pure Python, deterministic for a seed, well under 60 s) of ``--nodes`` nodes x
``--gpus-per-node`` GPUs for ``--days`` days, busy with multi-node synchronous training jobs that checkpoint every
``--checkpoint-min`` minutes. Faults arrive on nodes at published fleet rates; the same faults, jobs and repair times
(common random numbers) are replayed under each policy, which differ only in how soon a faulty node is cordoned and
drained:

1. ``none`` - no sentinel: a person finds the faulty node (the job's owner sees it crash-loop, on-call looks for the
   node): ``--human-mttd-h`` (exponential, mean; an ASSUMPTION, no published figure found), then cordons it;
2. ``dsxos`` - this collection's sentinel: Prometheus sees the XID (``--signal-delay-s``, dcgm-exporter's default
   30 s collection interval, charged to this policy only), the measured alert-to-cordon time (``ttq_s``) and drain
   (``drain_s``), then the remediation and the recertification (``recertify_s``, measured) after the repair;
3. ``nvsentinel`` - NVSentinel v0.4.0's published scale-test latencies: cordon P90 28.15 s, drain ~480 s (150 nodes
   failing at once on a 1,503-node EKS cluster); it publishes no time to return, so its recertification is taken to be
   ours.

Measured defaults (``--measured FILE`` replaces them: a JSON object with ``ttq_s``, ``drain_s``, ``recertify_s``, or a
``fleet-status.json`` of the fleet report, whose ``fleet.ttq.p90_s`` is used as ``ttq_s``):

* ``ttq_s`` 5.18 s - one alert's POST to Alertmanager -> cordon, P95 of 6 runs through Alertmanager (group_wait 1 s),
  ansible-rulebook and the shipped rulebook, measured 2026-12-04 by bench/sentinel_alert_latency_bench.py --runs 6
  (P50 4.26 s; load 0.9 -> 3.2 on the shared 2-core machine). Faults come one at a time here (a few a day); with 150
  nodes failing at once, NVSentinel's scenario, bench/sentinel_storm_bench.py measured cordon P90 6.39 s
  (2026-12-02, docs/operate-eda.md);
* ``drain_s`` 50.8 s - all pods of those 150 nodes gone (15 pods per node, their real 30 s grace), measured
  2026-12-02 by bench/sentinel_storm_bench.py --drain --time-scale 1: the figure beside NVSentinel's ~480 s;
* ``recertify_s`` 30.0 s - bench/sentinel_mttr_bench.py's time to return (32.0 s, 2026-12-02) less its reboot
  stand-in's 2 s of shutdown and boot: what the sentinel adds to a reboot (checks, reconnection, NCCL
  recertification, return). The reboot itself is ``--reboot-min`` (an ASSUMPTION: a GPU server's firmware, driver
  and fabric manager start).

Published rates used (sources):

* node faults: Meta, "The Llama 3 Herd of Models" (arXiv:2407.21783, section 3.3.4): 419 unexpected interruptions in
  54 days of pre-training on 16,384 H100 GPUs (2,048 hosts of 8), i.e. 1.58e-4 per node-hour; 58.7 % of them
  GPU-related (faulty GPU 30.1 %, HBM3 17.2 %, SRAM 4.5 %, GPU system processor 4.1 %, silent data corruption 1.5 %,
  thermal 1.4 %). Those are node faults here (the node must be isolated and repaired: the policies differ); the other
  41.3 % (software, network, host) interrupt the job alone, alike under every policy. Meta reports more than 90 %
  effective training time with its own automation;
* stragglers (fail-slows): T. Wu et al., "FALCON: Pinpointing and Mitigating Stragglers for Large-Scale
  Hybrid-Parallel Training" (arXiv:2410.12588; Greyhound, USENIX ATC 2025): on a >10,000-GPU production cluster
  fail-slows last from tens of seconds to nearly ten hours, delay the average job by 1.34x and are found by hand
  today. Their per-node rate is not published: ``--straggler-per-node-hour`` (default 5e-5, a third of the fault rate)
  is an ASSUMPTION; a straggler slows its whole job by ``--straggler-slowdown`` (1.34) until the node is isolated
  (the collection's rules GPUNvlinkCrcErrors / GPUThermalViolation fire after ``for: 10m`` / ``15m``:
  ``--straggler-detect-min`` 15 for both sentinels; a person: ``--human-straggler-mttd-h``);
* a hung collective ends after PyTorch's NCCL process-group timeout, 10 minutes (``--hang-min``), unless the drain
  evicts the faulty node's pod first; a restart costs ``--restart-min`` (an ASSUMPTION: rescheduling, start-up,
  loading the checkpoint); a fault loses the work since the last checkpoint.

The model (every choice is a parameter):

* jobs come from an endless queue (sizes 8-128 nodes, 12-72 hours of work), scheduled first-come first-served
  without backfill; a restarted job goes first and prefers its previous nodes (so a faulty node that is not yet
  cordoned is picked again: the crash loop of an unhandled fault); a job started on a faulty node fails after its
  start-up;
* faults arrive on each node's in-service clock: one due while the node is out of service (faulty, quarantined, in
  repair) comes that long after its return, so every policy sees the same faults per hour of service;
* a node fault on a busy node stalls its job (no progress) until the NCCL timeout or the drain, whichever is first;
  the node is cordoned after the policy's detection, drained, repaired (a reboot fixes ``--reboot-fixes`` of faults,
  else a hardware repair of ``--hw-repair-h`` hours, both ASSUMPTIONS, the same draws under every policy) and
  recertified, then returns;
* a job checkpoints every ``--checkpoint-min`` minutes; a fault loses the expected half interval of work (or the
  whole run, when it is shorter), not a drawn phase: a drawn phase would let a later fault land just after one
  policy's checkpoint and just before the other's, noise larger than the differences measured here; the end of the
  simulated time is a clean stop (running jobs keep their progress).

Accounting (GPU-hours; the identity is checked on every run and in tests/unit/test_useful_work_bench.py):
``completed (kept work) + lost to faults (rolled back, stalled, restarting, slowed by stragglers) + lost to quarantine
(cordoned nodes not held by a job) + idle = capacity``. The useful fraction is completed / capacity; with no faults
it equals the utilisation (allocated / capacity).

Usage: python bench/useful_work_bench.py [--nodes 1024] [--days 30] [--seed 1] [--seeds 5] [--measured FILE] [--json FILE]
"""
from __future__ import annotations

import argparse
import heapq
import json
import math
import random
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

# ------------------------------------------------------------------------------------------------ published figures

LLAMA3_INTERRUPTIONS = 419
LLAMA3_DAYS = 54
LLAMA3_NODES = 16384 // 8
#: unexpected interruptions per node-hour (Llama 3 405B pre-training)
FAULT_PER_NODE_HOUR = LLAMA3_INTERRUPTIONS / (LLAMA3_DAYS * 24 * LLAMA3_NODES)
#: share of them that were GPU-related (node faults)
GPU_SHARE = 0.587
NVSENTINEL = {"ttq_s": 28.15, "drain_s": 480.0}
#: this collection's measured figures (see the module docstring for where each comes from)
MEASURED = {"ttq_s": 5.18, "drain_s": 50.8, "recertify_s": 30.0, "date": "2026-12-04 (ttq_s), 2026-12-02 (drain_s, recertify_s)",
            "source": "bench/sentinel_alert_latency_bench.py --runs 6 (P95 POST -> cordon); bench/sentinel_storm_bench.py --drain "
                      "--time-scale 1 (all drained, 150 of 1,500 nodes); bench/sentinel_mttr_bench.py (time to return less the reboot stand-in)"}
POLICIES = ("none", "dsxos", "nvsentinel")
JOB_SIZES = ((8, 0.30), (16, 0.30), (32, 0.20), (64, 0.15), (128, 0.05))


@dataclass
class Config:  # pylint: disable=too-many-instance-attributes
    """Everything the simulation depends on (hours unless the name says otherwise)."""

    nodes: int = 1024
    gpus_per_node: int = 8
    days: float = 30.0
    seed: int = 1
    fault_per_node_hour: float = FAULT_PER_NODE_HOUR
    gpu_share: float = GPU_SHARE
    straggler_per_node_hour: float = 5e-5
    straggler_slowdown: float = 1.34
    checkpoint_min: float = 30.0
    restart_min: float = 10.0
    hang_min: float = 10.0
    reboot_min: float = 10.0
    reboot_fixes: float = 0.7
    hw_repair_h: float = 48.0
    human_mttd_h: float = 2.0
    human_straggler_mttd_h: float = 6.0
    straggler_detect_min: float = 15.0
    signal_delay_s: float = 30.0
    job_sizes: Tuple[Tuple[int, float], ...] = JOB_SIZES
    job_work_h: Tuple[float, float] = (12.0, 72.0)

    @property
    def horizon(self) -> float:
        return self.days * 24.0


@dataclass(frozen=True)
class Policy:
    """How soon a faulty node is cordoned and drained, and what the return adds to the repair (seconds)."""

    name: str
    ttq_s: float = 0.0
    drain_s: float = 0.0
    recertify_s: float = 0.0
    signal_delay_s: float = 0.0
    human: bool = False


def policies(measured: Dict[str, float], config: Config) -> List[Policy]:
    """The three policies of the comparison."""
    return [Policy("none", human=True),
            Policy("dsxos", ttq_s=measured["ttq_s"], drain_s=measured["drain_s"], recertify_s=measured["recertify_s"],
                   signal_delay_s=config.signal_delay_s),
            Policy("nvsentinel", ttq_s=NVSENTINEL["ttq_s"], drain_s=NVSENTINEL["drain_s"], recertify_s=measured["recertify_s"])]


@dataclass(frozen=True)
class Fault:
    """One fault: when, where, what, and its draws (the same under every policy)."""

    time: float
    node: int
    kind: str  # node | other | straggler
    detect_u: float
    repair_h: float


@dataclass
class Job:  # pylint: disable=too-many-instance-attributes
    id: int
    size: int
    work: float  # hours of progress still to do
    nodes: List[int] = field(default_factory=list)
    prev: List[int] = field(default_factory=list)
    restart: bool = False
    token: int = 0
    start: float = 0.0
    productive: float = 0.0
    rates: List[Tuple[float, float]] = field(default_factory=list)  # (from, rate)
    fault_at: Optional[float] = None
    doomed: bool = False


@dataclass
class Node:
    state: str = "free"  # free | busy | quarantined
    since: float = 0.0
    job: Optional[int] = None
    bad: bool = False
    slow: bool = False
    cordoned: bool = False
    return_at: Optional[float] = None
    out_since: float = 0.0
    #: faults due while the node was out of service: they come on its in-service clock once it returns
    pending: List[Fault] = field(default_factory=list)


@dataclass
class Result:  # pylint: disable=too-many-instance-attributes
    """GPU-hours by category, and counts."""

    policy: str
    capacity: float = 0.0
    completed: float = 0.0
    lost_fault: float = 0.0
    lost_straggler: float = 0.0  # part of lost_fault
    lost_quarantine: float = 0.0
    idle: float = 0.0
    allocated: float = 0.0
    jobs_done: int = 0
    restarts: int = 0
    faults: Dict[str, int] = field(default_factory=dict)

    @property
    def fraction(self) -> float:
        return self.completed / self.capacity if self.capacity else 0.0

    @property
    def utilisation(self) -> float:
        return self.allocated / self.capacity if self.capacity else 0.0

    def imbalance(self) -> float:
        """completed + lost to faults + lost to quarantine + idle - capacity (0 up to rounding)."""
        return self.completed + self.lost_fault + self.lost_quarantine + self.idle - self.capacity

    def to_dict(self) -> Dict[str, Any]:
        return {"policy": self.policy, "capacity_gpu_h": round(self.capacity, 3), "completed_gpu_h": round(self.completed, 3),
                "lost_fault_gpu_h": round(self.lost_fault, 3), "lost_straggler_gpu_h": round(self.lost_straggler, 3),
                "lost_quarantine_gpu_h": round(self.lost_quarantine, 3), "idle_gpu_h": round(self.idle, 3),
                "useful_fraction": round(self.fraction, 6), "utilisation": round(self.utilisation, 6), "jobs_done": self.jobs_done,
                "restarts": self.restarts, "faults": dict(self.faults)}


# ------------------------------------------------------------------------------------------------ the inputs


def make_faults(config: Config) -> List[Fault]:
    """Poisson fault arrivals over the fleet (node faults, other interruptions, stragglers), time-ordered."""
    rng = random.Random(config.seed * 7919 + 1)
    out: List[Fault] = []
    for kind, rate in (("node", config.fault_per_node_hour * config.gpu_share),
                       ("other", config.fault_per_node_hour * (1.0 - config.gpu_share)),
                       ("straggler", config.straggler_per_node_hour)):
        total = rate * config.nodes
        if total <= 0:
            continue
        moment = 0.0
        while True:
            moment += rng.expovariate(total)
            if moment >= config.horizon:
                break
            repair = config.reboot_min / 60.0 if rng.random() < config.reboot_fixes else rng.expovariate(1.0 / config.hw_repair_h)
            out.append(Fault(moment, rng.randrange(config.nodes), kind, rng.random(), repair))
    out.sort(key=lambda f: (f.time, f.node, f.kind))
    return out


class JobStream:
    """The endless queue's jobs, by index (the same sequence under every policy)."""

    def __init__(self, config: Config) -> None:
        self.rng = random.Random(config.seed * 104729 + 2)
        self.config = config
        self.made: List[Job] = []

    def next(self) -> Job:
        sizes, weights = zip(*self.config.job_sizes)
        size = min(self.rng.choices(sizes, weights)[0], self.config.nodes)
        work = self.rng.uniform(*self.config.job_work_h)
        job = Job(len(self.made), size, work)
        self.made.append(job)
        return job


# ------------------------------------------------------------------------------------------------ the simulation


class Simulation:  # pylint: disable=too-many-instance-attributes
    """One policy over the fleet; ``run()`` returns the :class:`Result`."""

    def __init__(self, config: Config, policy: Policy, faults: Optional[List[Fault]] = None) -> None:
        self.config, self.policy = config, policy
        self.faults = make_faults(config) if faults is None else faults
        self.stream = JobStream(config)
        self.nodes = [Node() for _index in range(config.nodes)]
        self.jobs: Dict[int, Job] = {}
        self.queue: List[Job] = []
        self.events: List[Tuple[float, int, str, Tuple[Any, ...]]] = []
        self.seq = 0
        self.now = 0.0
        self.result = Result(policy.name, capacity=config.nodes * config.gpus_per_node * config.horizon)
        self.gpn = config.gpus_per_node

    # -------------------------------------------------------------- plumbing

    def at(self, moment: float, kind: str, *payload: Any) -> None:
        self.seq += 1
        heapq.heappush(self.events, (moment, self.seq, kind, payload))

    def set_state(self, index: int, state: str, job: Optional[int] = None) -> None:
        """Close the node's current state at ``now`` (its GPU-hours to idle / quarantine; busy time is the job's)."""
        node = self.nodes[index]
        spent = (self.now - node.since) * self.gpn
        if node.state == "free":
            self.result.idle += spent
        elif node.state == "quarantined":
            self.result.lost_quarantine += spent
        else:
            self.result.allocated += spent
        node.state, node.since, node.job = state, self.now, job

    def policy_delay_h(self, fault: Fault) -> float:
        """Hours from the fault to the cordon."""
        pol, cfg = self.policy, self.config
        if pol.human:
            mean = cfg.human_straggler_mttd_h if fault.kind == "straggler" else cfg.human_mttd_h
            return -mean * math.log(1.0 - fault.detect_u)
        detect = cfg.straggler_detect_min * 60.0 if fault.kind == "straggler" else pol.signal_delay_s
        return (detect + pol.ttq_s) / 3600.0

    # -------------------------------------------------------------- jobs

    def progress(self, job: Job, until: float) -> float:
        """Hours of progress of the job's current run up to ``until``."""
        done = 0.0
        for index, (start, rate) in enumerate(job.rates):
            end = job.rates[index + 1][0] if index + 1 < len(job.rates) else until
            end = min(end, until)
            if end > start:
                done += (end - start) * rate
        return done

    def rate_now(self, job: Job) -> float:
        return 1.0 / self.config.straggler_slowdown if any(self.nodes[n].slow for n in job.nodes) else 1.0

    def plan_finish(self, job: Job) -> None:
        job.token += 1
        if job.doomed or job.fault_at is not None:
            return
        rate = job.rates[-1][1] if job.rates else 1.0
        start = max(self.now, job.productive)
        left = job.work - self.progress(job, start)
        self.at(start + left / rate, "done", job.id, job.token)

    def start(self, job: Job, chosen: List[int]) -> None:
        job.nodes, job.start, job.fault_at = chosen, self.now, None
        job.productive = self.now + (self.config.restart_min / 60.0 if job.restart else 0.0)
        job.doomed = any(self.nodes[n].bad for n in chosen)
        for index in chosen:
            self.set_state(index, "busy", job.id)
        self.jobs[job.id] = job
        job.token += 1
        if job.doomed:  # a faulty GPU: the job fails in its start-up
            job.rates = [(job.productive, 0.0)]
            self.at(self.now + self.config.restart_min / 60.0, "fail", job.id, job.token)
            return
        job.rates = [(job.productive, self.rate_now(job))]
        self.plan_finish(job)

    def end_run(self, job: Job, clean: bool) -> None:
        """Account the run that ends now: kept progress to completed, the rest of its GPU-hours to lost."""
        gpus = job.size * self.gpn
        allocated = (self.now - job.start) * gpus
        if clean:
            kept_until = self.now
        else:
            limit = job.fault_at if job.fault_at is not None else self.now
            period = self.config.checkpoint_min / 60.0
            kept_until = max(job.productive, limit - period / 2.0)  # the expected loss: half a checkpoint interval
        kept = min(self.progress(job, kept_until), job.work)
        useful = kept * gpus
        self.result.completed += useful
        self.result.lost_fault += allocated - useful
        if kept_until > job.productive:
            self.result.lost_straggler += max(0.0, (kept_until - job.productive) - self.progress(job, kept_until)) * gpus
        job.work -= kept
        for index in job.nodes:
            node = self.nodes[index]
            self.set_state(index, "quarantined" if node.cordoned else "free")
        job.prev, job.nodes = job.nodes, []
        job.token += 1
        del self.jobs[job.id]

    def fail(self, job: Job) -> None:
        self.end_run(job, clean=False)
        self.result.restarts += 1
        job.restart = True
        self.queue.insert(0, job)

    def schedule(self) -> None:
        free = [i for i, n in enumerate(self.nodes) if n.state == "free" and not n.cordoned]
        while True:
            if not self.queue:
                self.queue.append(self.stream.next())
            job = self.queue[0]
            if len(free) < job.size:
                return
            free_set = set(free)
            chosen = [n for n in job.prev if n in free_set][:job.size]
            taken = set(chosen)
            chosen += [n for n in free if n not in taken][:job.size - len(chosen)]
            taken = set(chosen)
            free = [n for n in free if n not in taken]
            self.queue.pop(0)
            self.start(job, chosen)

    # -------------------------------------------------------------- faults

    def on_fault(self, fault: Fault) -> None:
        node = self.nodes[fault.node]
        self.result.faults[fault.kind] = self.result.faults.get(fault.kind, 0) + 1
        job = self.jobs.get(node.job) if node.state == "busy" and node.job is not None else None
        if fault.kind == "other":
            if job is not None and job.fault_at is None and not job.doomed:
                job.fault_at = self.now
                self.fail(job)
            return
        if node.bad or node.slow or node.cordoned:
            node.pending.append(fault)  # a node out of service does not fail again: the fault waits for its return
            return
        node.out_since = self.now
        cordon = self.now + self.policy_delay_h(fault)
        if fault.kind == "straggler":
            node.slow = True
            if job is not None and not job.doomed and job.fault_at is None:
                job.rates.append((max(self.now, job.productive), self.rate_now(job)))
                self.plan_finish(job)
        else:
            node.bad = True
            if job is not None and not job.doomed and job.fault_at is None:
                job.fault_at = self.now  # the collective hangs: no progress, nothing more is checkpointed
                job.token += 1
                drained = cordon + self.policy.drain_s / 3600.0
                self.at(min(self.now + self.config.hang_min / 60.0, drained), "fail", job.id, job.token)
        self.at(cordon, "cordon", fault.node, fault.repair_h)

    def on_cordon(self, index: int, repair_h: float) -> None:
        node = self.nodes[index]
        node.cordoned = True
        drained = self.now + self.policy.drain_s / 3600.0
        node.return_at = drained + repair_h + self.policy.recertify_s / 3600.0
        if node.state == "free":
            self.set_state(index, "quarantined")
        elif node.job is not None:
            self.at(drained, "evict", node.job, index)
        self.at(node.return_at, "return", index)

    def on_evict(self, job_id: int, index: int) -> None:
        job = self.jobs.get(job_id)
        if job is not None and index in job.nodes:
            if job.fault_at is None:
                job.fault_at = self.now
            self.fail(job)

    def on_return(self, index: int) -> None:
        node = self.nodes[index]
        if node.state == "busy":  # still held by a job (cannot happen after the drain; kept for safety)
            return
        node.bad = node.slow = node.cordoned = False
        node.return_at = None
        self.set_state(index, "free")
        pending, node.pending = node.pending, []
        for fault in pending:  # the node's in-service clock stood still from its fault to its return
            self.at(self.now + (fault.time - node.out_since), "fault", replace(fault, time=self.now + (fault.time - node.out_since)))

    # -------------------------------------------------------------- run

    def run(self) -> Result:
        for fault in self.faults:
            self.at(fault.time, "fault", fault)
        self.schedule()
        horizon = self.config.horizon
        while self.events and self.events[0][0] < horizon:
            moment, _seq, kind, payload = heapq.heappop(self.events)
            self.now = moment
            if kind == "fault":
                self.on_fault(payload[0])
            elif kind in ("done", "fail"):
                job = self.jobs.get(payload[0])
                if job is None or job.token != payload[1]:
                    continue
                if kind == "done":
                    self.end_run(job, clean=True)
                    self.result.jobs_done += 1
                else:
                    self.fail(job)
            elif kind == "cordon":
                self.on_cordon(*payload)
            elif kind == "evict":
                self.on_evict(*payload)
            elif kind == "return":
                self.on_return(*payload)
            self.schedule()
        self.now = horizon
        for job in list(self.jobs.values()):  # a clean stop: running jobs keep their progress
            if job.fault_at is not None or job.doomed:
                self.end_run(job, clean=False)
            else:
                self.end_run(job, clean=True)
        for index in range(len(self.nodes)):
            self.set_state(index, self.nodes[index].state)
        return self.result


def simulate(config: Config, policy: Policy, faults: Optional[List[Fault]] = None) -> Result:
    """One policy; the identity completed + lost + idle = capacity is checked."""
    result = Simulation(config, policy, faults).run()
    if abs(result.imbalance()) > 1e-6 * max(1.0, result.capacity):
        raise AssertionError("GPU-hours do not add up for %s: %r" % (policy.name, result.to_dict()))
    return result


# ------------------------------------------------------------------------------------------------ the command


def load_measured(path: str) -> Dict[str, float]:
    """The measured figures: defaults, replaced by a JSON file's (a plain object, or a fleet-status.json)."""
    figures = {k: float(v) for k, v in MEASURED.items() if k.endswith("_s")}
    if not path:
        return figures
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("kind") == "FleetStatus":
        p90 = ((data.get("fleet") or {}).get("ttq") or {}).get("p90_s")
        if p90 is not None:
            figures["ttq_s"] = float(p90)
        return figures
    for key in ("ttq_s", "drain_s", "recertify_s"):
        if key in data:
            figures[key] = float(data[key])
    return figures


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench/useful_work_bench.py", description=__doc__.split("\n", 1)[0])
    defaults = Config()
    for name in ("nodes", "gpus_per_node", "seed"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name))
    for name in ("days", "fault_per_node_hour", "gpu_share", "straggler_per_node_hour", "straggler_slowdown", "checkpoint_min",
                 "restart_min", "hang_min", "reboot_min", "reboot_fixes", "hw_repair_h", "human_mttd_h", "human_straggler_mttd_h",
                 "straggler_detect_min", "signal_delay_s"):
        parser.add_argument("--" + name.replace("_", "-"), type=float, default=getattr(defaults, name))
    parser.add_argument("--measured", default="", help="JSON with ttq_s, drain_s, recertify_s (or a fleet-status.json: its TTQ P90)")
    parser.add_argument("--seeds", type=int, default=5, help="runs with seeds seed .. seed + N - 1, shown as means (default 5)")
    parser.add_argument("--json", default="", help="also write the results here")
    return parser


def run_seeds(config: Config, measured: Dict[str, float], seeds: int) -> List[List[Result]]:
    """For each seed (``config.seed`` .. + seeds - 1): the three policies on the same faults and jobs."""
    out = []
    for offset in range(seeds):
        cfg = Config(**{**vars(config), "seed": config.seed + offset})
        faults = make_faults(cfg)
        out.append([simulate(cfg, policy, faults) for policy in policies(measured, cfg)])
    return out


def mean_result(name: str, results: List[Result]) -> Result:
    """The mean over seeds of each GPU-hour figure (the identity still holds: it is linear)."""
    mean = Result(name)
    for key in ("capacity", "completed", "lost_fault", "lost_straggler", "lost_quarantine", "idle", "allocated"):
        setattr(mean, key, sum(getattr(r, key) for r in results) / len(results))
    mean.jobs_done = round(sum(r.jobs_done for r in results) / len(results))
    mean.restarts = round(sum(r.restarts for r in results) / len(results))
    for r in results:
        for kind, count in r.faults.items():
            mean.faults[kind] = mean.faults.get(kind, 0) + count
    return mean


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    fields = {k: v for k, v in vars(args).items() if k not in ("measured", "json", "seeds")}
    config = Config(**fields)
    measured = load_measured(args.measured)
    began = time.monotonic()
    runs = run_seeds(config, measured, args.seeds)
    took = time.monotonic() - began
    results = [mean_result(policy, [run[i] for run in runs]) for i, policy in enumerate(POLICIES)]
    counts = results[0].faults
    print("Fleet: %d nodes x %d GPUs, %g days (%.0f GPU-hours), seeds %d-%d; faults (all seeds): %d node (XID), %d other interruptions, %d stragglers"
          % (config.nodes, config.gpus_per_node, config.days, results[0].capacity, config.seed, config.seed + args.seeds - 1,
             counts.get("node", 0), counts.get("other", 0), counts.get("straggler", 0)))
    print("dsxos figures: cordon %.2f s + signal %.0f s, drain %.1f s, recertify %.1f s (%s); NVSentinel: cordon %.2f s, drain %.0f s"
          % (measured["ttq_s"], config.signal_delay_s, measured["drain_s"], measured["recertify_s"],
             "from " + args.measured if args.measured else "measured %s" % MEASURED["date"], NVSENTINEL["ttq_s"], NVSENTINEL["drain_s"]))
    print("GPU-hours, mean over the seeds:")
    print("%-11s %10s %10s %10s %10s %10s %9s %9s %8s" % ("policy", "completed", "lost:fault", "(straggl.)", "lost:quar.", "idle",
                                                          "useful", "util.", "restarts"))
    for res in results:
        print("%-11s %10.0f %10.0f %10.0f %10.0f %10.0f %8.2f%% %8.2f%% %8d" % (
            res.policy, res.completed, res.lost_fault, res.lost_straggler, res.lost_quarantine, res.idle, 100 * res.fraction,
            100 * res.utilisation, res.restarts))
    by = {r.policy: r for r in results}

    def ratio(a: str, b: str) -> str:
        each = [run[POLICIES.index(a)].fraction / run[POLICIES.index(b)].fraction for run in runs]
        return "%s / %s %.4f (seeds %.4f-%.4f)" % (a, b, by[a].fraction / by[b].fraction, min(each), max(each))
    print("useful fraction ratios: %s; %s; %s" % (ratio("dsxos", "none"), ratio("dsxos", "nvsentinel"), ratio("nvsentinel", "none")))
    print("GPU-hours lost to faults against no sentinel: dsxos %.2fx fewer, nvsentinel %.2fx fewer; completed + lost + idle = capacity "
          "checked for every run (%.1f s)" % (by["none"].lost_fault / by["dsxos"].lost_fault, by["none"].lost_fault / by["nvsentinel"].lost_fault, took))
    if args.json:
        Path(args.json).write_text(json.dumps({"config": dict(vars(config)), "seeds": args.seeds, "measured": measured, "nvsentinel": NVSENTINEL,
                                               "mean": [r.to_dict() for r in results],
                                               "runs": [[r.to_dict() for r in run] for run in runs]}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
