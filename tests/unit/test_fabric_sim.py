# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Unit tests for tests/harness/fabric_sim.py (the fabric simulator used by isolation tests and bench)."""
from __future__ import annotations

import re

import pytest

from ansible_collections.dsxos.cluster.tests.harness.fabric_sim import (
    SIZES, FabricSimulator, OutcomeJudge, failure_reason, read_avg_busbw)

NODES = ["n%02d" % i for i in range(8)]
TOPO = {n: ("rackA" if i < 4 else "rackB") for i, n in enumerate(NODES)}
ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+float\s+(\S+)\s+(-?\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)")


def _rows(text):
    return [m.groups() for m in (ROW.match(line) for line in text.splitlines()) if m]


def _large_busbw(text):
    return float(_rows(text)[-1][6])


def test_healthy_output_has_header_ranks_rows_and_average():
    sim = FabricSimulator(NODES, TOPO, seed=1)
    text = sim.run_group(NODES[:3])
    assert "# Collective test starting: all_reduce_perf" in text
    assert "nThread 1 nGpus 1 minBytes %d maxBytes %d" % (SIZES[0], SIZES[-1]) in text
    ranks = re.findall(r"^#\s+Rank\s+(\d+) Group\s+0 Pid\s+\d+ on\s+(\S+) device\s+(\d+)", text, re.M)
    assert len(ranks) == 3 * 8 and {host for _rank, host, _dev in ranks} == set(NODES[:3])
    rows = _rows(text)
    assert [int(r[0]) for r in rows] == list(SIZES) and SIZES[0] == 1 << 20 and SIZES[-1] == 8 << 30
    busbw = [float(r[6]) for r in rows]
    assert busbw[-1] > 5 * busbw[0]  # latency-bound small messages, bandwidth-bound large ones
    assert 300 < busbw[-1] < 380
    # all_reduce: busbw = algbw * 2(n-1)/n with n = 24 ranks
    algbw, bus = float(rows[-1][5]), float(rows[-1][6])
    assert bus == pytest.approx(algbw * 2 * 23 / 24, rel=0.01)
    assert "# Out of bounds values : 0 OK" in text
    avg = read_avg_busbw(text)
    assert avg == pytest.approx(sum(busbw) / len(busbw), rel=0.01)
    assert failure_reason(text) is None


def test_slowest_node_limits_the_group_and_links_only_cross_domain_groups():
    sim = FabricSimulator(NODES, TOPO, degraded_nodes={"n01": 0.5}, link_faults={("rackB", "rackA"): 0.3},
                          noise=0.0, seed=2)
    healthy = _large_busbw(sim.run_group(["n02", "n03"]))
    assert _large_busbw(sim.run_group(["n00", "n01", "n02"])) == pytest.approx(healthy * 0.5, rel=0.02)
    assert _large_busbw(sim.run_group(["n04", "n05"])) == pytest.approx(healthy, rel=0.01)
    assert _large_busbw(sim.run_group(["n02", "n05"])) == pytest.approx(healthy * 0.3, rel=0.02)
    assert sim.faulty_nodes == frozenset({"n01"}) and sim.faulty_links == frozenset({("rackA", "rackB")})


def test_dead_node_aborts_and_corrupt_node_reports_wrong_values():
    sim = FabricSimulator(NODES, TOPO, dead_nodes=["n03"], corrupt_nodes=["n06"], seed=3)
    for _attempt in range(4):  # both launcher-failure variants
        text = sim.run_group(["n02", "n03"])
        assert read_avg_busbw(text) is None and "n03" in text
        assert failure_reason(text)
    corrupt = sim.run_group(["n06", "n07"])
    assert re.search(r"# Out of bounds values : [1-9]\d* FAILED", corrupt)
    assert "FAILED" in failure_reason(corrupt)


def test_transient_rate_is_seeded_and_about_right():
    def failures(seed):
        sim = FabricSimulator(NODES, TOPO, transient_rate=0.3, seed=seed)
        return [failure_reason(sim.run_group(NODES[:2])) is not None for _run in range(300)]

    first = failures(7)
    assert first == failures(7)
    assert 0.2 < sum(first) / len(first) < 0.4
    assert first != failures(8)


def test_render_of_simulate_equals_run_group_and_bad_input_is_refused():
    a = FabricSimulator(NODES, TOPO, transient_rate=0.2, seed=11)
    b = FabricSimulator(NODES, TOPO, transient_rate=0.2, seed=11)
    for _attempt in range(20):
        assert a.render(a.simulate(NODES[:4])) == b.run_group(NODES[:4])
    with pytest.raises(ValueError, match="unknown collective"):
        a.run_group(NODES[:2], collective="all_to_some")
    with pytest.raises(ValueError, match="not in the simulator"):
        a.run_group(["ghost"])
    with pytest.raises(ValueError, match="transient_rate"):
        FabricSimulator(NODES, transient_rate=1.5)


def test_other_collectives_use_their_bus_factor():
    sim = FabricSimulator(NODES, TOPO, seed=4)
    rows = _rows(sim.run_group(NODES[:2], collective="all_gather"))
    algbw, bus = float(rows[-1][5]), float(rows[-1][6])
    assert bus == pytest.approx(algbw * 15 / 16, rel=0.01)
    assert "broadcast_perf" in sim.run_group(NODES[:2], collective="broadcast")


@pytest.mark.parametrize("use_parser", [False, None])
def test_judge_agrees_with_the_fast_path(use_parser):
    sim_text = FabricSimulator(NODES, TOPO, degraded_nodes={"n01": 0.4}, dead_nodes=["n07"],
                               link_faults={("rackA", "rackB"): 0.5}, transient_rate=0.1, seed=5)
    sim_fast = FabricSimulator(NODES, TOPO, degraded_nodes={"n01": 0.4}, dead_nodes=["n07"],
                               link_faults={("rackA", "rackB"): 0.5}, transient_rate=0.1, seed=5)
    judge_text = OutcomeJudge(sim_text, use_nccl_results=use_parser)
    judge_fast = OutcomeJudge(sim_fast, use_nccl_results=False)
    groups = [["n00", "n02"], ["n00", "n01"], ["n04", "n05"], ["n02", "n04"], ["n06", "n07"], NODES[:4]] * 5
    verdicts = []
    for group in groups:
        slow = judge_text.judge(group, sim_text.run_group(group))
        fast = judge_fast.judge_run(sim_fast.simulate(group))
        assert slow.passed == fast.passed, (group, slow, fast)
        verdicts.append(slow.passed)
    assert True in verdicts and False in verdicts
    assert judge_text.source in ("avg-line", "nccl_results")
