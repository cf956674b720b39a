# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Unit tests for plugins/module_utils/certify/nccl_thresholds.py (absolute floors and fleet-relative checks)."""
from __future__ import annotations

import os
import random

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_results import parse_nccl_file
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_thresholds import (
    BUILTIN_FLOORS, FloorProfile, RelativePolicy, ThresholdConfig, ThresholdConfigError,
    accelerator_from_device_name, evaluate, evaluate_fleet, fleet_stats, load_thresholds_file, scope_of_result,
    validate_thresholds)
from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import YamlLoadError

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "nccl")
H100_INTRA = BUILTIN_FLOORS[("h100-sxm", "intra-node", "all_reduce")]


# --- built-in floors and profile lookup ---------------------------------------------------------------

def test_builtin_floors_are_documented_and_below_expected():
    expected_keys = {("h100-sxm", "intra-node", "all_reduce"), ("h200-sxm", "intra-node", "all_reduce"),
                     ("gb200-nvl72", "intra-node", "all_reduce"), ("a100-sxm", "intra-node", "all_reduce"),
                     ("l40s-pcie", "intra-node", "all_reduce"), ("h100-sxm", "multi-node", "all_reduce"),
                     ("h200-sxm", "multi-node", "all_reduce")}
    assert expected_keys <= set(BUILTIN_FLOORS)
    for key, profile in BUILTIN_FLOORS.items():
        assert profile.key == key
        assert 0 < profile.floor < profile.expected
        assert profile.source and profile.confidence in ("low", "medium", "high")
    assert BUILTIN_FLOORS[("gb200-nvl72", "intra-node", "all_reduce")].floor > H100_INTRA.floor
    assert H100_INTRA.floor > BUILTIN_FLOORS[("a100-sxm", "intra-node", "all_reduce")].floor


@pytest.mark.parametrize("name, accelerator", [
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"), ("NVIDIA H200", "h200-sxm"),
    ("NVIDIA A100-SXM4-40GB", "a100-sxm"), ("NVIDIA A100-PCIE-40GB", "a100-pcie"), ("NVIDIA L40S", "l40s-pcie"),
    ("NVIDIA GB200", "gb200-nvl72"), ("Tesla T4", None), ("", None), (None, None),
])
def test_accelerator_from_device_name(name, accelerator):
    assert accelerator_from_device_name(name) == accelerator


def test_profile_for_parsed_runs():
    config = ThresholdConfig()
    single = parse_nccl_file(os.path.join(FIXTURES, "all_reduce_8gpu_h100.log"))
    assert scope_of_result(single) == "intra-node"
    assert config.profile_for_result(single) == H100_INTRA
    multi = parse_nccl_file(os.path.join(FIXTURES, "all_reduce_mpi_abort.log"))
    assert scope_of_result(multi) == "multi-node"
    assert config.profile_for_result(multi) == BUILTIN_FLOORS[("h100-sxm", "multi-node", "all_reduce")]
    gather = parse_nccl_file(os.path.join(FIXTURES, "all_gather_16rank_2host.log"))
    assert config.profile_for_result(gather) is None  # no built-in all_gather floor
    assert config.floor_for("h100-sxm", "intra-node", "allreduce") == H100_INTRA
    assert config.floor_for(None, "intra-node", "all_reduce") is None


# --- absolute floors --------------------------------------------------------------------------------------

def test_absolute_floor():
    low = evaluate(390.0, profile=H100_INTRA, entity="node-a")
    assert not low.passed
    assert low.reasons == ["busbw 390.00 GB/s is below the floor 400.00 GB/s for h100-sxm intra-node all_reduce "
                           "(%s, expected about 470 GB/s)" % H100_INTRA.source]
    assert low.floor == 400.0 and low.floor_profile == "h100-sxm intra-node all_reduce"
    good = evaluate(470, profile=H100_INTRA)
    assert good.passed and good.reasons == []
    assert "no fleet statistics: relative checks not applied" in good.notes
    unchecked = evaluate(1.0)
    assert unchecked.passed
    assert "no absolute floor configured for this profile: floor check not applied" in unchecked.notes


def test_evaluate_parsed_results():
    good = parse_nccl_file(os.path.join(FIXTURES, "all_reduce_8gpu_h100.log"))
    verdict = evaluate(good, profile=ThresholdConfig().profile_for_result(good))
    assert verdict.passed and verdict.value == good.large_message_busbw and verdict.entity == good.source
    failed = parse_nccl_file(os.path.join(FIXTURES, "all_reduce_wrong.log"))
    verdict = evaluate(failed, profile=H100_INTRA, entity="dgx-h100-07")
    assert not verdict.passed
    assert any(r.startswith("run not usable: data corruption") for r in verdict.reasons)
    empty = parse_nccl_file(os.path.join(FIXTURES, "empty.log"))
    verdict = evaluate(empty, profile=H100_INTRA)
    assert not verdict.passed and verdict.value is None


@pytest.mark.parametrize("value", [float("nan"), -1.0, "470", True, float("inf")])
def test_invalid_measurement_fails(value):
    verdict = evaluate(value, profile=H100_INTRA)
    assert not verdict.passed and verdict.value is None
    assert "is not a finite, non-negative number" in verdict.reasons[0]
    assert evaluate(None).reasons == ["no busbw measurement"]


# --- fleet-relative checks --------------------------------------------------------------------------------

def fleet_of_32():
    rnd = random.Random(7)
    fleet = {"node-%02d" % i: round(470.0 * (1.0 + rnd.uniform(-0.01, 0.01)), 2) for i in range(32)}
    fleet["node-07"] = 400.0  # a degraded NVLink: 15 % down
    fleet["node-19"] = 448.0  # ~4.5 % down: within the fraction, but far outside a tight fleet
    return fleet


def test_fleet_stats_simple():
    stats = fleet_stats({"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0, "e": 100.0})
    assert (stats.count, stats.median, stats.mad) == (5, 3.0, 1.0)
    assert stats.scale == pytest.approx(1.4826)
    assert stats.relative_applied and stats.note == ""
    even = fleet_stats({"a": 1.0, "b": 2.0, "c": 4.0, "d": 10.0})
    assert even.median == 3.0 and even.mad == 1.5


def test_relative_with_outliers_among_32_nodes():
    fleet = fleet_of_32()
    verdicts = evaluate_fleet(fleet, profile=H100_INTRA)
    failed = sorted(name for name, v in verdicts.items() if not v.passed)
    assert failed == ["node-07", "node-19"]
    stats = fleet_stats(fleet)
    assert 465.0 < stats.median < 475.0
    degraded = verdicts["node-07"]
    assert degraded.median == stats.median
    assert degraded.fraction_limit == pytest.approx(0.9 * stats.median)
    assert any("below 0.90 x fleet median %.2f GB/s" % stats.median in r for r in degraded.reasons)
    assert any("below the floor 400.00" in r for r in degraded.reasons) is False  # 400.0 is not below 400
    slow = verdicts["node-19"]
    assert not any("x fleet median" in r for r in slow.reasons)
    assert len(slow.reasons) == 1 and "low outlier: modified z-score" in slow.reasons[0]
    assert slow.z_score < -3.5
    healthy = verdicts["node-00"]
    assert healthy.passed and -3.5 < healthy.z_score < 3.5 and healthy.floor == 400.0


def test_fraction_and_z_limits_are_configurable():
    fleet = fleet_of_32()
    lenient = RelativePolicy(fraction=0.8, mad_z=20.0)
    verdicts = evaluate_fleet(fleet, policy=lenient)
    assert all(v.passed for v in verdicts.values())
    strict = evaluate_fleet(fleet, policy=RelativePolicy(fraction=0.97))
    assert not strict["node-19"].passed
    assert any("below 0.97 x fleet median" in r for r in strict["node-19"].reasons)


def test_tiny_fleet_gets_no_relative_check():
    fleet = {"a": 470.0, "b": 468.0, "c": 200.0}
    verdicts = evaluate_fleet(fleet)
    assert all(v.passed for v in verdicts.values())
    assert any("fleet of 3 < 4: relative checks not applied" in n for n in verdicts["c"].notes)
    assert verdicts["c"].z_score is None and verdicts["c"].fraction_limit is None
    with_floor = evaluate_fleet(fleet, profile=H100_INTRA)
    assert [n for n, v in with_floor.items() if not v.passed] == ["c"]
    assert fleet_stats({}).relative_applied is False


def test_zero_mad():
    fleet = {"n%d" % i: 470.0 for i in range(9)}
    fleet["slow"] = 440.0
    stats = fleet_stats(fleet)
    assert stats.mad == 0.0 and stats.median == 470.0
    assert "MAD is 0; mean absolute deviation used instead" in stats.note
    # mean AD is 3.0 -> 3.76; the 1 % floor (4.7) is larger and wins
    assert stats.scale == pytest.approx(4.7)
    verdicts = evaluate_fleet(fleet)
    assert [n for n, v in verdicts.items() if not v.passed] == ["slow"]
    assert verdicts["slow"].z_score == pytest.approx(-30.0 / 4.7)
    identical = evaluate_fleet({"n%d" % i: 470.0 for i in range(6)})
    assert all(v.passed and v.z_score == 0.0 for v in identical.values())
    zeros = evaluate_fleet({"n%d" % i: 0.0 for i in range(6)})
    assert all(v.passed for v in zeros.values())
    assert any("fleet spread is 0" in n for n in zeros["n0"].notes)


def test_tight_fleet_spread_floor():
    fleet = {"n%d" % i: 470.0 + 0.01 * i for i in range(20)}
    fleet["n0"] = 467.0  # 0.6 % down: a true MAD z-score would be huge, the 1 % floor keeps it a pass
    verdicts = evaluate_fleet(fleet)
    assert verdicts["n0"].passed
    assert "spread raised" in fleet_stats(fleet).note


def test_invalid_fleet_entries_fail_and_are_excluded():
    fleet = {"n%d" % i: 470.0 for i in range(5)}
    fleet.update({"none": None, "nan": float("nan"), "neg": -3.0})
    failed_run = parse_nccl_file(os.path.join(FIXTURES, "all_reduce_truncated.log"))
    fleet["truncated"] = failed_run
    verdicts = evaluate_fleet(fleet)
    assert sorted(n for n, v in verdicts.items() if not v.passed) == ["nan", "neg", "none", "truncated"]
    assert verdicts["n0"].median == 470.0
    assert any("truncated log" in r for r in verdicts["truncated"].reasons)


# --- user configuration -------------------------------------------------------------------------------------

def test_valid_config_merges_over_builtins():
    config = validate_thresholds({
        "floors": {
            "h100-sxm": {"intra-node": {
                "all_reduce": 430,
                "allgather": {"floor": 320, "expected": 360, "source": "site acceptance 2026-01"}}},
            "mi300x-oam": {"intra-node": {"all_reduce_perf": 280.5}},
        },
        "relative": {"fraction": 0.85, "mad_z": 4, "min_fleet_size": 6, "min_spread_fraction": 0.02},
    })
    assert config.floor_for("h100-sxm", "intra-node", "all_reduce").floor == 430.0
    gather = config.floor_for("h100-sxm", "intra-node", "all_gather")
    assert (gather.floor, gather.expected, gather.source) == (320.0, 360.0, "site acceptance 2026-01")
    assert config.floor_for("mi300x-oam", "intra-node", "all_reduce").floor == 280.5
    assert config.floor_for("a100-sxm", "intra-node", "all_reduce") == BUILTIN_FLOORS[("a100-sxm", "intra-node", "all_reduce")]
    assert config.relative == RelativePolicy(fraction=0.85, mad_z=4.0, min_fleet_size=6, min_spread_fraction=0.02)
    again = validate_thresholds(config.to_dict())
    assert again.floors == config.floors and again.relative == config.relative


def test_config_without_builtins_and_defaults():
    config = validate_thresholds({"use_builtin_floors": False, "floors": {"l40s-pcie": {"intra-node": {"all_reduce": 18}}}})
    assert list(config.floors) == [("l40s-pcie", "intra-node", "all_reduce")]
    assert validate_thresholds(None).floors == BUILTIN_FLOORS
    assert validate_thresholds({}).relative == RelativePolicy()
    assert validate_thresholds({"floors": None, "relative": None}).relative.fraction == 0.9


@pytest.mark.parametrize("data, field, value, message", [
    ({"floors": {"h100-sxm": {"intra-node": {"all_reduce": -5}}}}, "floors.h100-sxm.intra-node.all_reduce", "-5",
     "floor must be >= 0"),
    ({"floors": {"h100-sxm": {"intra-node": {"all_reduce": {"floor": -1}}}}},
     "floors.h100-sxm.intra-node.all_reduce.floor", "-1", "floor must be >= 0"),
    ({"floors": {"h100-sxm": {"intra-node": {"all_reduce": "fast"}}}}, "floors.h100-sxm.intra-node.all_reduce",
     "'fast'", "must be a finite number"),
    ({"floors": {"h100-sxm": {"intra-node": {"all_reduce": True}}}}, "floors.h100-sxm.intra-node.all_reduce", "True",
     "must be a finite number"),
    ({"floors": {"h100-sxm": {"intra-node": {"allsum": 400}}}}, "floors.h100-sxm.intra-node.allsum", "'allsum'",
     "unknown collective"),
    ({"floors": {"h100-sxm": {"intra-rack": {"all_reduce": 400}}}}, "floors.h100-sxm.intra-rack", "'intra-rack'",
     "unknown scope"),
    ({"floors": {"H100 SXM": {"intra-node": {"all_reduce": 400}}}}, "floors.H100 SXM", "'H100 SXM'",
     "accelerator id must be lower case"),
    ({"floors": {"h100-sxm": {"intra-node": {"all_reduce": {"floor": 400, "expected": 300}}}}},
     "floors.h100-sxm.intra-node.all_reduce.expected", "300", "expected must not be below floor"),
    ({"floors": {"h100-sxm": {"intra-node": {"all_reduce": {"expected": 300}}}}},
     "floors.h100-sxm.intra-node.all_reduce", "'expected': 300", "missing required key 'floor'"),
    ({"floors": {"h100-sxm": {"intra-node": {"all_reduce": {"floor": 400, "flor": 1}}}}},
     "floors.h100-sxm.intra-node.all_reduce.flor", "1", "unknown key"),
    ({"floors": ["h100-sxm"]}, "floors", "['h100-sxm']", "must be a mapping"),
    ({"relative": {"fraction": 0}}, "relative.fraction", "0", "fraction must be in (0, 1]"),
    ({"relative": {"fraction": 1.5}}, "relative.fraction", "1.5", "fraction must be in (0, 1]"),
    ({"relative": {"fraction": "0.9"}}, "relative.fraction", "'0.9'", "must be a finite number"),
    ({"relative": {"mad_z": 0}}, "relative.mad_z", "0", "mad_z must be > 0"),
    ({"relative": {"min_fleet_size": 2}}, "relative.min_fleet_size", "2", "min_fleet_size must be an integer >= 3"),
    ({"relative": {"min_fleet_size": 4.0}}, "relative.min_fleet_size", "4.0", "min_fleet_size must be an integer"),
    ({"relative": {"min_spread_fraction": 1}}, "relative.min_spread_fraction", "1", "min_spread_fraction must be in"),
    ({"relative": {"median": 3}}, "relative.median", "3", "unknown key"),
    ({"threshold": 3}, "threshold", "3", "unknown key"),
    ({"use_builtin_floors": "yes"}, "use_builtin_floors", "'yes'", "must be true or false"),
])
def test_malformed_config_names_key_and_value(data, field, value, message):
    with pytest.raises(ThresholdConfigError) as info:
        validate_thresholds(data, source="thresholds.yml")
    text = str(info.value)
    assert message in text
    assert "field %s" % field in text
    assert value in text
    assert text.startswith(message) and "thresholds.yml" in text
    assert info.value.field == field


def test_config_root_must_be_mapping():
    with pytest.raises(ThresholdConfigError, match="must be a mapping"):
        validate_thresholds(["floors"])


def test_load_thresholds_file(tmp_path):
    path = tmp_path / "thresholds.yml"
    path.write_text("floors:\n  h100-sxm:\n    multi-node:\n      all_reduce: 330\nrelative:\n  fraction: 0.92\n")
    config = load_thresholds_file(str(path))
    assert config.floor_for("h100-sxm", "multi-node", "all_reduce").floor == 330.0
    assert config.relative.fraction == 0.92
    path.write_text("relative:\n  fraction: 2\n")
    with pytest.raises(ThresholdConfigError, match=r"fraction must be in \(0, 1\].*thresholds.yml.*field relative.fraction"):
        load_thresholds_file(str(path))
    path.write_text("floors: [unclosed\n")
    with pytest.raises(YamlLoadError, match="malformed YAML"):
        load_thresholds_file(str(path))


def test_verdict_serialises():
    verdict = evaluate(390.0, profile=H100_INTRA, fleet=fleet_stats(fleet_of_32()), entity="node-x")
    data = verdict.to_dict()
    assert data["entity"] == "node-x" and data["passed"] is False and data["floor"] == 400.0
    assert len(data["reasons"]) == 3  # floor, fraction and z-score all name their numbers
    assert FloorProfile(accelerator="x", scope="intra-node", collective="all_reduce", floor=1.0).to_dict()["source"] == "user"
