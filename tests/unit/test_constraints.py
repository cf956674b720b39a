# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Constraint language: parsing, version comparison, evaluation, summary."""
from __future__ import annotations

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.constraints import (
    ConstraintResult, ParsedConstraint, VersionFormatError, check_value, compare_versions,
    evaluate_constraint, evaluate_constraints, looks_like_version, parse_constraint, summarize,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import ConstraintError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import Constraint
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.snapshot import Snapshot


# ----------------------------------------------------------------------------- names

def test_name_split_on_first_two_dots_only():
    parsed = parse_constraint("OS.sysctl./proc/sys/kernel/osrelease", ">= 6.8")
    assert parsed == ParsedConstraint("OS", "sysctl", "/proc/sys/kernel/osrelease", ">=", "6.8")
    assert parsed.name == "OS.sysctl./proc/sys/kernel/osrelease"


def test_name_with_dotted_key():
    parsed = parse_constraint("K8s.node.nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3")
    assert (parsed.type, parsed.subtype, parsed.key) == ("K8s", "node", "nvidia.com/gpu.product")


@pytest.mark.parametrize("name", ["K8s.version", "K8s", "", "K8s..version", ".server.version", "K8s.server."])
def test_name_without_two_dots_is_error_naming_it(name):
    with pytest.raises(ConstraintError) as info:
        parse_constraint(name, ">= 1.30")
    assert repr(name) in str(info.value)
    assert "{Type}.{Subtype}.{Key}" in str(info.value)


def test_non_string_name_is_error():
    with pytest.raises(ConstraintError, match="must be a string"):
        parse_constraint(42, "1")


def test_unknown_types_are_allowed_and_known_flag():
    assert parse_constraint("Storage.nvme.count", ">= 4").type == "Storage"
    assert not parse_constraint("Storage.nvme.count", ">= 4").known_type
    for ctype in ("K8s", "OS", "GPU", "Deployment", "Kernel", "Network"):
        assert parse_constraint(ctype + ".a.b", "x").known_type


# ----------------------------------------------------------------------------- operators

@pytest.mark.parametrize("value,operator,operand", [
    (">= 1.30", ">=", "1.30"), (">=1.30", ">=", "1.30"), ("<= 2", "<=", "2"), ("> 5", ">", "5"),
    ("<5", "<", "5"), ("== 24.04", "==", "24.04"), ("!= rhel", "!=", "rhel"), ("  >=   v1.30  ", ">=", "v1.30"),
    ("ubuntu", "", "ubuntu"), ("  24.04 ", "", "24.04"),
])
def test_operators_and_bare_values(value, operator, operand):
    parsed = parse_constraint("K8s.server.version", value)
    assert (parsed.operator, parsed.operand) == (operator, operand)


@pytest.mark.parametrize("value,shown", [
    ("=> 1.30", "'=>'"), ("=< 1.30", "'=<'"), ("~= 1.30", "'~='"), (">> 1.30", "'>>'"),
    ("=== 1.30", "'==='"), ("= 1.30", "'='"), ("! 1.30", "'!'"), ("> = 1.30", "'> ='"),
])
def test_unknown_operator_is_error_naming_constraint_and_value(value, shown):
    with pytest.raises(ConstraintError) as info:
        parse_constraint("K8s.server.version", value)
    text = str(info.value)
    assert "unknown operator %s" % shown in text
    assert "K8s.server.version" in text
    assert repr(value.strip()) in text


@pytest.mark.parametrize("value", [">=", "<= ", "", "   ", None, ["1"]])
def test_empty_or_missing_operand_is_error(value):
    with pytest.raises(ConstraintError) as info:
        parse_constraint("K8s.server.version", value)
    assert "K8s.server.version" in str(info.value)


def test_compound_expression_is_rejected_clearly():
    with pytest.raises(ConstraintError, match="compound"):
        parse_constraint("K8s.server.version", ">= 1.30 < 1.35")


def test_numeric_value_is_accepted():
    assert parse_constraint("Network.ib.bandwidth", 300).operand == "300"


# ----------------------------------------------------------------------------- versions

@pytest.mark.parametrize("a,b,expected", [
    ("1.30", "1.29", 1), ("1.29.3", "1.30", -1), ("v1.30.2", "1.30", 0), ("1.32.4", "1.32", 0),
    ("6.8.0-1015-aws", "6.8", 0), ("6.8.0-1015-aws", "6.8.1", -1), ("V2.0", "v1.99", 1),
    ("1.30.0+k3s1", "1.30.0", 0), ("535.129.03", "535.104.05", 1), ("10", "9", 1), ("1.10", "1.9", 1),
    ("v1.33.5-eks-3025e55", "1.33", 0),
])
def test_compare_versions(a, b, expected):
    left, right = a, b
    assert compare_versions(left, right) == expected
    assert compare_versions(right, left) == -expected  # antisymmetric


@pytest.mark.parametrize("bad", ["1.x", "abc", "1..2", "", "v", "-1"])
def test_compare_versions_non_numeric_is_value_error(bad):
    with pytest.raises(VersionFormatError) as info:
        compare_versions(bad, "1.0")
    assert isinstance(info.value, ValueError)
    assert "not a version" in str(info.value)


def test_looks_like_version():
    assert looks_like_version("v1.30")
    assert looks_like_version("6.8.0-1015-aws")
    assert looks_like_version("300")
    assert not looks_like_version("ubuntu")
    assert not looks_like_version(True)
    assert not looks_like_version(3.5)


# ----------------------------------------------------------------------------- check_value

@pytest.mark.parametrize("measured,operator,operand,expected", [
    ("6.8.0-1015-aws", ">=", "6.8", True),
    ("6.8.0-1015-aws", "==", "6.8", True),
    ("6.5.0-1020-aws", ">=", "6.8", False),
    ("1.32.4", "==", "1.32", True),
    ("v1.29.3", ">=", "1.30", False),
    ("1.30.1", "<", "1.31", True),
    ("24.04", "!=", "22.04", True),
    (312.5, ">=", "300", True),
    (299.9, ">=", "300", False),
    (300.05, "<", "300.5", True),  # real numbers compare numerically, not as versions
    (8, "==", "8", True),
    (8, "", "8", True),
    ("ubuntu", "", "ubuntu", True),
    ("Ubuntu", "", "ubuntu", False),  # exact match is case-sensitive
    (" rhel ", "==", "rhel", True),
    ("rhel", "!=", "ubuntu", True),
    ("24.04.1", "", "24.04", False),  # bare value: exact text
    (True, "", "true", True),
])
def test_check_value(measured, operator, operand, expected):
    assert check_value(measured, operator, operand) is expected


@pytest.mark.parametrize("measured,operand", [("ubuntu", "5"), ("noble", "jammy"), ("1.30", "latest")])
def test_ordering_on_non_versions_is_value_error(measured, operand):
    with pytest.raises(ValueError, match="cannot order"):
        check_value(measured, ">=", operand)


def test_non_scalar_measurement_is_value_error():
    with pytest.raises(ValueError, match="not a scalar"):
        check_value({"a": 1}, "==", "1")


# ----------------------------------------------------------------------------- evaluation

def test_evaluate_pass_fail_missing_error_with_messages():
    snapshot = {"K8s.server.version": "1.29.3", "OS.release.ID": "ubuntu",
                "OS.sysctl./proc/sys/kernel/osrelease": "6.8.0-1015-aws"}
    constraints = [
        {"name": "K8s.server.version", "value": ">= 1.30"},
        {"name": "OS.release.ID", "value": "ubuntu"},
        {"name": "OS.sysctl./proc/sys/kernel/osrelease", "value": ">= 6.8"},
        {"name": "GPU.smi.driver", "value": ">= 570", "severity": "warning"},
        {"name": "OS.release.ID", "value": ">= 22"},
    ]
    results = evaluate_constraints(constraints, snapshot)
    assert [r.status for r in results] == ["fail", "pass", "pass", "missing", "error"]
    assert results[0].message.startswith("K8s.server.version is 1.29.3, needs >= 1.30")
    assert results[0].measured == "1.29.3"
    assert results[0].expected == ">= 1.30"
    assert results[0].operator == ">="
    assert results[1].operator == ""
    assert results[3].severity == "warning"
    assert results[3].measured is None
    assert "not measured" in results[3].message
    assert "cannot order" in results[4].message


def test_evaluate_accepts_constraint_objects_and_snapshot_objects():
    snap = Snapshot(measurements={"K8s.server.version": "v1.31.2"}, sources={"K8s.server.version": "kubernetes"})
    result = evaluate_constraint(Constraint(name="K8s.server.version", value=">= 1.30"), snap)
    assert result.status == "pass"
    assert "from kubernetes" in result.message


def test_evaluate_serialized_snapshot_dict():
    snap = Snapshot(measurements={"GPU.smi.driver": "570.86.15"}).to_dict()
    assert evaluate_constraints([{"name": "GPU.smi.driver", "value": ">= 570"}], snap)[0].status == "pass"


def test_heterogeneous_hosts_every_value_checked_and_named():
    snap = Snapshot(measurements={"OS.sysctl./proc/sys/kernel/osrelease": "6.5.0-1020-aws"},
                    variants={"OS.sysctl./proc/sys/kernel/osrelease": {"gpu-a": "6.8.0-1015-aws", "gpu-b": "6.5.0-1020-aws"}},
                    hosts=["gpu-a", "gpu-b"])
    failing = evaluate_constraints([{"name": "OS.sysctl./proc/sys/kernel/osrelease", "value": ">= 6.8"}], snap)[0]
    assert failing.status == "fail"
    assert "on gpu-b" in failing.message and "hosts differ" in failing.message
    assert failing.variants == {"gpu-a": "6.8.0-1015-aws", "gpu-b": "6.5.0-1020-aws"}
    # an upper bound is checked against the highest variant too, not only the minimum
    upper = evaluate_constraints([{"name": "OS.sysctl./proc/sys/kernel/osrelease", "value": "< 6.8"}], snap)[0]
    assert upper.status == "fail"
    assert "on gpu-a" in upper.message
    both = evaluate_constraints([{"name": "OS.sysctl./proc/sys/kernel/osrelease", "value": ">= 6.5"}], snap)[0]
    assert both.status == "pass"
    assert "hosts differ" in both.message


def test_malformed_constraint_raises_before_evaluation():
    with pytest.raises(ConstraintError, match="unknown operator"):
        evaluate_constraints([{"name": "K8s.server.version", "value": ">= 1.30"},
                              {"name": "OS.release.ID", "value": "=> 22.04"}], {})
    with pytest.raises(ConstraintError, match="no 'name'"):
        evaluate_constraints([{"value": "1"}], {})
    with pytest.raises(ConstraintError, match="no 'value'"):
        evaluate_constraints([{"name": "OS.release.ID"}], {})
    with pytest.raises(ConstraintError, match="severity"):
        evaluate_constraints([{"name": "OS.release.ID", "value": "ubuntu", "severity": "fatal"}], {})
    with pytest.raises(ConstraintError, match="must be a mapping"):
        evaluate_constraints(["OS.release.ID"], {})
    with pytest.raises(ConstraintError, match="list"):
        evaluate_constraints({"OS.release.ID": "ubuntu"}, {})
    with pytest.raises(ConstraintError, match="snapshot"):
        evaluate_constraints([{"name": "OS.release.ID", "value": "ubuntu"}], 42)


def test_constraint_message_is_appended_on_failure():
    result = evaluate_constraints([{"name": "OS.release.ID", "value": "ubuntu", "message": "only Ubuntu is validated"}],
                                  {"OS.release.ID": "rhel"})[0]
    assert result.status == "fail"
    assert result.message.endswith("only Ubuntu is validated")


def test_result_round_trip():
    result = evaluate_constraints([{"name": "K8s.server.version", "value": ">= 1.30"}], {"K8s.server.version": "1.29"})[0]
    assert ConstraintResult.from_dict(result.to_dict()) == result


# ----------------------------------------------------------------------------- summary

def test_summarize_counts_and_ok():
    results = evaluate_constraints([
        {"name": "K8s.server.version", "value": ">= 1.30"},
        {"name": "GPU.smi.driver", "value": ">= 570"},
        {"name": "OS.release.ID", "value": "ubuntu", "severity": "warning"},
    ], {"K8s.server.version": "1.31", "OS.release.ID": "rhel"})
    summary = summarize(results)
    assert summary == {"passed": 1, "failed": 1, "missing": 1, "errors": 0, "warnings": 1, "ok": True}
    assert summarize(results, missing_is_failure=True)["ok"] is False
    failing = evaluate_constraints([{"name": "K8s.server.version", "value": ">= 1.32"}], {"K8s.server.version": "1.31"})
    assert summarize(failing)["ok"] is False
    erroring = evaluate_constraints([{"name": "OS.release.ID", "value": "> 1"}], {"OS.release.ID": "rhel"})
    assert summarize([r.to_dict() for r in erroring]) == {
        "passed": 0, "failed": 0, "missing": 0, "errors": 1, "warnings": 0, "ok": False}


def test_summarize_rejects_bad_results():
    with pytest.raises(ConstraintError, match="status"):
        summarize([{"name": "a.b.c", "status": "maybe"}])
    with pytest.raises(ConstraintError):
        summarize(["pass"])
