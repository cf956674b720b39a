# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""bench/useful_work_bench.py: the accounting of the fleet simulation (conservation, no faults = utilisation,
faster quarantine never lowers the useful fraction) and the command's output."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

BENCH = Path(__file__).resolve().parents[2] / "bench" / "useful_work_bench.py"


def _load():
    spec = importlib.util.spec_from_file_location("useful_work_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


uwb = _load()

#: a small, busy fleet with many faults of every kind
SMALL = dict(nodes=48, days=10.0, fault_per_node_hour=2e-3, straggler_per_node_hour=1e-3,
             job_sizes=((4, 0.5), (8, 0.3), (16, 0.2)), job_work_h=(2.0, 12.0))
#: one job on every node (no spare, never finishes): the fleet where policies differ only in their timing
GANG = dict(nodes=16, days=10.0, fault_per_node_hour=2e-3, straggler_per_node_hour=0.0, job_sizes=((16, 1.0),), job_work_h=(1e6, 1e6))


def _sum(result) -> float:
    return result.completed + result.lost_fault + result.lost_quarantine + result.idle


def test_published_rate_is_llama3s() -> None:
    assert uwb.FAULT_PER_NODE_HOUR == pytest.approx(419 / (54 * 24 * 2048))
    assert uwb.NVSENTINEL == {"ttq_s": 28.15, "drain_s": 480.0}


@pytest.mark.parametrize("name", uwb.POLICIES)
def test_gpu_hours_add_up_to_capacity(name: str) -> None:
    config = uwb.Config(seed=3, **SMALL)
    policy = {p.name: p for p in uwb.policies(uwb.load_measured(""), config)}[name]
    result = uwb.Simulation(config, policy).run()
    assert result.capacity == 48 * 8 * 240
    assert _sum(result) == pytest.approx(result.capacity, rel=1e-9)
    assert result.allocated == pytest.approx(result.completed + result.lost_fault, rel=1e-9)
    assert result.lost_fault > 0 and result.lost_quarantine > 0 and result.idle > 0 and result.restarts > 0
    assert 0 <= result.lost_straggler <= result.lost_fault
    assert set(result.faults) == {"node", "other", "straggler"}


def test_no_faults_gives_the_utilisation() -> None:
    config = uwb.Config(seed=5, **dict(SMALL, fault_per_node_hour=0.0, straggler_per_node_hour=0.0))
    for policy in uwb.policies(uwb.load_measured(""), config):
        result = uwb.simulate(config, policy)
        assert result.lost_fault == pytest.approx(0, abs=1e-6) and result.lost_quarantine == 0 and result.restarts == 0
        assert result.fraction == pytest.approx(result.utilisation, rel=1e-12)
        assert 0.5 < result.fraction < 1.0 and result.jobs_done > 0


def test_same_seed_same_result_and_the_policies_share_the_faults() -> None:
    config = uwb.Config(seed=9, **SMALL)
    first = [uwb.simulate(config, p).to_dict() for p in uwb.policies(uwb.load_measured(""), config)]
    second = [uwb.simulate(config, p).to_dict() for p in uwb.policies(uwb.load_measured(""), config)]
    assert first == second
    assert len({json.dumps(r["faults"], sort_keys=True) for r in first}) == 1


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), fast=st.floats(0.0, 7200.0), slower=st.floats(0.0, 36000.0), drain=st.floats(0.0, 900.0),
       other=st.booleans())
def test_faster_quarantine_never_lowers_the_useful_fraction(seed: int, fast: float, slower: float, drain: float, other: bool) -> None:
    config = uwb.Config(seed=seed, **dict(GANG, gpu_share=0.6 if other else 1.0))
    faults = uwb.make_faults(config)
    quick = uwb.simulate(config, uwb.Policy("fast", ttq_s=fast, drain_s=drain, recertify_s=30.0), faults)
    late = uwb.simulate(config, uwb.Policy("slow", ttq_s=fast + slower, drain_s=drain, recertify_s=30.0), faults)
    assert quick.fraction >= late.fraction - 1e-12, (quick.to_dict(), late.to_dict())
    assert _sum(quick) == pytest.approx(quick.capacity) and _sum(late) == pytest.approx(late.capacity)


def test_a_sentinel_keeps_more_work_than_a_person_on_the_default_fleet_scale() -> None:
    config = uwb.Config(seed=1, nodes=256, days=10.0)
    none, dsxos, nvsentinel = (uwb.simulate(config, p) for p in uwb.policies(uwb.load_measured(""), config))
    assert dsxos.lost_fault < none.lost_fault and nvsentinel.lost_fault < none.lost_fault
    assert dsxos.fraction > none.fraction


def test_measured_figures_from_a_file_or_a_fleet_report(tmp_path: Path) -> None:
    assert uwb.load_measured("") == {"ttq_s": 5.18, "drain_s": 50.8, "recertify_s": 30.0}
    plain = tmp_path / "measured.json"
    plain.write_text(json.dumps({"ttq_s": 2.5, "drain_s": 40}), encoding="utf-8")
    assert uwb.load_measured(str(plain)) == {"ttq_s": 2.5, "drain_s": 40.0, "recertify_s": 30.0}
    report = tmp_path / "fleet-status.json"
    report.write_text(json.dumps({"kind": "FleetStatus", "fleet": {"ttq": {"p90_s": 3.006}}}), encoding="utf-8")
    assert uwb.load_measured(str(report))["ttq_s"] == 3.006


def test_the_command_prints_the_three_policies_and_writes_json(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "result.json"
    assert uwb.main(["--nodes", "64", "--days", "5", "--seeds", "2", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    for name in uwb.POLICIES:
        assert "\n%-11s " % name in text
    assert "useful fraction ratios: dsxos / none" in text and "dsxos / nvsentinel" in text
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [r["policy"] for r in data["mean"]] == list(uwb.POLICIES) and len(data["runs"]) == 2
    for row in data["mean"]:
        total = row["completed_gpu_h"] + row["lost_fault_gpu_h"] + row["lost_quarantine_gpu_h"] + row["idle_gpu_h"]
        assert total == pytest.approx(row["capacity_gpu_h"], abs=0.01)
