# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Unit tests for plugins/module_utils/certify/isolation_planner.py, driven by the fabric simulator."""
from __future__ import annotations

import json
import random

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.isolation_planner import (
    EXCLUDED, FAILED, FAULTY, HEALTHY, INCOMPLETE, INCONCLUSIVE, PASSED, IsolationConfig, IsolationError,
    IsolationPlanner, TestOutcome)
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.topology_grouping import NodeInfo
from ansible_collections.dsxos.cluster.tests.harness.fabric_sim import FabricSimulator, OutcomeJudge

LABEL = "network.topology.nvidia.com/block"


def cluster(count, domain_size=8, flags=None):
    flags = flags or {}
    names = ["gpu%03d" % i for i in range(count)]
    topology = {n: "leaf%02d" % (i // domain_size) for i, n in enumerate(names)}
    nodes = [NodeInfo(n, {LABEL: topology[n]}, **flags.get(n, {})) for n in names]
    return names, topology, nodes


def run(planner, runner, max_rounds=40):
    """Drive ``planner`` with ``runner(test) -> TestOutcome``; check the per-round invariants."""
    rounds = 0
    while not planner.done():
        rnd = planner.plan_round()
        assert rnd.tests, "a pending round must have tests"
        seen = set()
        for test in rnd.tests:
            assert test.purpose in ("screen", "split", "confirm", "cross")
            assert not seen.intersection(test.nodes), "a node is in two tests of round %d" % rnd.number
            seen.update(test.nodes)
        planner.record({t.id: runner(t) for t in rnd.tests})
        rounds += 1
        assert rounds <= max_rounds
    return planner


def sim_runner(sim):
    judge = OutcomeJudge(sim)
    return lambda test: judge.judge_run(sim.simulate(test.nodes))


def statuses(planner):
    out = {}
    for name, verdict in planner.verdicts().items():
        out.setdefault(verdict.status, set()).add(name)
    return out


def test_healthy_cluster_passes_in_two_rounds_with_every_node_screened_once():
    names, topology, nodes = cluster(40)
    planner = IsolationPlanner(nodes)
    first = planner.plan_round()
    screened = [n for t in first.tests for n in t.nodes]
    assert sorted(screened) == names and all(t.purpose == "screen" for t in first.tests)
    run(planner, sim_runner(FabricSimulator(names, topology, seed=1)))
    assert planner.result() == PASSED
    assert planner.rounds == 2 and planner.tests_planned == len(first.tests) + 1  # screen + one transversal
    assert statuses(planner) == {HEALTHY: set(names)}
    assert planner.plan_round().tests == []


def test_cordoned_and_unready_nodes_are_excluded_and_make_the_result_incomplete():
    names, topology, nodes = cluster(24, flags={"gpu003": {"cordoned": True}, "gpu017": {"ready": False}})
    planner = run(IsolationPlanner(nodes), sim_runner(FabricSimulator(names, topology, seed=2)))
    verdicts = planner.verdicts()
    assert verdicts["gpu003"].status == EXCLUDED and "cordoned" in verdicts["gpu003"].reason
    assert verdicts["gpu017"].status == EXCLUDED and "not Ready" in verdicts["gpu017"].reason
    assert planner.result() == INCOMPLETE
    tested = {n for e in planner.trace if e["event"] == "plan" for n in e["nodes"]}
    assert "gpu003" not in tested and "gpu017" not in tested


def test_single_slow_node_is_condemned_after_confirmation_with_different_partners():
    names, topology, nodes = cluster(48)
    sim = FabricSimulator(names, topology, degraded_nodes={"gpu013": 0.4}, seed=3)
    planner = run(IsolationPlanner(nodes), sim_runner(sim))
    assert planner.result() == FAILED
    assert statuses(planner) == {FAULTY: {"gpu013"}, HEALTHY: set(names) - {"gpu013"}}
    evidence = planner.verdicts()["gpu013"].evidence
    assert len(evidence) == 3  # isolating failure + 2 confirmations
    tests = {e["test"]: e["nodes"] for e in planner.trace if e["event"] == "plan"}
    partners = [set(tests[t]) - {"gpu013"} for t in evidence]
    assert all(p and not p & q for i, p in enumerate(partners) for q in partners[i + 1:])
    assert planner.rounds <= 5


def test_two_faults_in_one_domain_dead_and_slow():
    names, topology, nodes = cluster(32)
    sim = FabricSimulator(names, topology, degraded_nodes={"gpu009": 0.3}, dead_nodes=["gpu010"], seed=4)
    planner = run(IsolationPlanner(nodes), sim_runner(sim))
    assert statuses(planner)[FAULTY] == {"gpu009", "gpu010"}
    assert planner.result() == FAILED


def test_inter_domain_link_fault_is_reported_between_the_two_domains():
    names, topology, nodes = cluster(64)
    sim = FabricSimulator(names, topology, link_faults={("leaf02", "leaf06"): 0.4}, seed=5)
    planner = run(IsolationPlanner(nodes), sim_runner(sim))
    assert statuses(planner) == {HEALTHY: set(names)}  # every node is fine on its own
    links = planner.link_faults()
    assert [(l.domains, l.status) for l in links] == [(("leaf02", "leaf06"), FAULTY)]
    assert "faulty link between leaf02 and leaf06" in links[0].describe()
    assert all(topology[n] in ("leaf02", "leaf06") for n in links[0].nodes)
    assert planner.result() == FAILED
    events = [e["event"] for e in planner.trace]
    assert "link-condemned" in events and "condemned" not in events


def test_transient_failures_never_condemn_a_healthy_node():
    names, topology, nodes = cluster(32)
    sim = FabricSimulator(names, topology, degraded_nodes={"gpu020": 0.5}, seed=6)
    judge = OutcomeJudge(sim)
    flaky = {"gpu005": 2}  # fails its first two tests whatever they are (a transient streak)

    def runner(test):
        for node in test.nodes:
            if flaky.get(node):
                flaky[node] -= 1
                return TestOutcome(passed=False, reason="NCCL WARN NET/IB : Got completion with error (injected)")
        return judge.judge_run(sim.simulate(test.nodes))

    planner = run(IsolationPlanner(nodes), runner)
    verdicts = planner.verdicts()
    assert verdicts["gpu020"].status == FAULTY
    assert verdicts["gpu005"].status == HEALTHY
    assert any(e["event"] in ("transient", "cleared") for e in planner.trace)


@pytest.mark.parametrize("transient", [0.0, 0.05])
def test_recall_and_no_false_positive_over_random_seeds(transient):
    names, topology, nodes = cluster(48)
    for seed in range(25):
        rng = random.Random(seed)
        faulty = rng.sample(names, rng.randrange(0, 4))
        dead = faulty[:1] if len(faulty) == 3 else []
        degraded = {n: rng.uniform(0.2, 0.7) for n in faulty if n not in dead}
        sim = FabricSimulator(names, topology, degraded_nodes=degraded, dead_nodes=dead,
                              transient_rate=transient, seed=seed)
        planner = run(IsolationPlanner(nodes), sim_runner(sim))
        found = statuses(planner).get(FAULTY, set())
        assert found == set(faulty), (seed, sorted(found), sorted(faulty))
        assert planner.result() == (FAILED if faulty else PASSED)


def test_text_path_through_nccl_output_gives_the_same_answer():
    names, topology, nodes = cluster(24)
    sim = FabricSimulator(names, topology, degraded_nodes={"gpu005": 0.5}, seed=8)
    judge = OutcomeJudge(sim)
    planner = run(IsolationPlanner(nodes), lambda t: judge.judge(t.nodes, sim.run_group(t.nodes)))
    assert statuses(planner)[FAULTY] == {"gpu005"}


def test_sqrt_grouping_without_topology_and_trace_is_json():
    names = ["n%d" % i for i in range(30)]
    nodes = [NodeInfo(n) for n in names]
    sim = FabricSimulator(names, seed=9, degraded_nodes={"n7": 0.5})
    planner = run(IsolationPlanner(nodes), sim_runner(sim))
    assert planner.grouping.strategy == "sqrt" and len(planner.grouping.groups) == 6
    summary = planner.summary()
    encoded = json.loads(json.dumps(summary))
    assert encoded["result"] == FAILED and encoded["faulty_nodes"] == ["n7"]
    events = {e["event"] for e in planner.trace}
    assert {"grouping", "round", "plan", "passed", "failed", "evidence", "condemned", "done"} <= events


def test_round_limit_and_missing_partners_leave_nodes_inconclusive():
    names, topology, nodes = cluster(16)
    sim = FabricSimulator(names, topology, degraded_nodes={"gpu002": 0.3}, seed=10)
    planner = run(IsolationPlanner(nodes, IsolationConfig(max_rounds=2)), sim_runner(sim))
    assert planner.rounds == 2 and planner.result() == INCOMPLETE
    assert INCONCLUSIVE in statuses(planner)
    assert "round limit" in planner.verdicts()["gpu002"].reason

    pair = [NodeInfo("a"), NodeInfo("b")]
    planner = run(IsolationPlanner(pair), lambda t: TestOutcome(False, "both dead"))
    assert statuses(planner) == {INCONCLUSIVE: {"a", "b"}} and planner.result() == INCOMPLETE


def test_record_validates_results():
    nodes = cluster(16)[2]
    planner = IsolationPlanner(nodes)
    tests = planner.plan_round().tests
    with pytest.raises(IsolationError, match="missing result.*value '%s'" % tests[-1].id):
        planner.record({t.id: True for t in tests[:-1]})
    with pytest.raises(IsolationError, match="not in round 1.*'r9-x'"):
        planner.record(dict({t.id: True for t in tests}, **{"r9-x": True}))
    with pytest.raises(IsolationError, match="boolean 'passed'"):
        planner.record({t.id: "ok" for t in tests})
    planner.record({t.id: {"passed": True, "busbw": 350.0} for t in tests})
    assert planner.plan_round().number == 2
    with pytest.raises(IsolationError, match="confirmations"):
        IsolationConfig(confirmations=0).validate()


def test_transient_next_to_a_real_fault_needs_more_evidence():
    names, topology, nodes = cluster(32)
    sim = FabricSimulator(names, topology, degraded_nodes={"gpu020": 0.5}, seed=12)
    judge = OutcomeJudge(sim)
    flaky = {"gpu021": 3}  # screen, its part (with gpu020) and its own isolation test fail

    def runner(test):
        if flaky["gpu021"] and "gpu021" in test.nodes:
            flaky["gpu021"] -= 1
            return TestOutcome(passed=False, reason="injected transient")
        return judge.judge_run(sim.simulate(test.nodes))

    planner = run(IsolationPlanner(nodes), runner)
    evidence = [e for e in planner.trace if e["event"] == "evidence"]
    assert {e["node"] for e in evidence} == {"gpu020", "gpu021"}  # both were suspects at some point
    assert statuses(planner)[FAULTY] == {"gpu020"}
    assert planner.verdicts()["gpu021"].status == HEALTHY
