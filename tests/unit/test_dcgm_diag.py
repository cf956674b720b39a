# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""DCGM diagnostics: command building and parsing of DCGM 3.x / 4.x ``dcgmi diag -j`` output."""
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.dcgm_diag import (
    DcgmDiagError, build_dcgmi_diag_command, diag_checks, error_report, normalize_status, parse_dcgm_diag,
)

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "dcgm")


def _fixture(name):
    with open(os.path.join(FIXTURES, name), "r", encoding="utf-8") as handle:
        return handle.read()


def _test(report, name):
    matches = [t for t in report["tests"] if t["test"] == name]
    assert len(matches) == 1, [t["test"] for t in report["tests"]]
    return matches[0]


@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_command_is_an_argv_list(level):
    assert build_dcgmi_diag_command(level) == ["dcgmi", "diag", "-r", str(level), "-j"]


def test_command_with_gpus_and_timeout():
    argv = build_dcgmi_diag_command(2, dcgmi="/usr/bin/dcgmi", gpu_ids=[0, 3], timeout_s=600, timeout_bin="/usr/bin/timeout")
    assert argv == ["/usr/bin/timeout", "--kill-after=30", "600s", "/usr/bin/dcgmi", "diag", "-r", "2", "-j", "-i", "0,3"]


@pytest.mark.parametrize("level", [0, 5, -1, "2", 2.0, True])
def test_bad_levels_are_refused_naming_the_value(level):
    with pytest.raises(DcgmDiagError) as info:
        build_dcgmi_diag_command(level)
    assert "dcgm_level" in str(info.value)
    assert repr(level) in str(info.value)


def test_missing_level_is_refused():
    with pytest.raises(DcgmDiagError, match="level must be one of 1, 2, 3, 4"):
        build_dcgmi_diag_command(None)


def test_bad_gpu_ids_and_timeout_are_refused():
    with pytest.raises(DcgmDiagError, match="gpu_ids"):
        build_dcgmi_diag_command(1, gpu_ids=[0, -1])
    with pytest.raises(DcgmDiagError, match="dcgm_timeout_s"):
        build_dcgmi_diag_command(1, timeout_s=0)


@pytest.mark.parametrize("raw,expected", [("Pass", "pass"), ("PASS", "pass"), ("Fail", "fail"), ("FAIL", "fail"),
                                          ("Warn", "warn"), ("Skip", "skip"), ("SKIPPED", "skip"), ("Not Run", "skip"),
                                          ("", "skip"), (None, "skip"), ("weird", "warn")])
def test_status_normalisation(raw, expected):
    assert normalize_status(raw) == expected


def test_dcgm3_pass_with_null_entries():
    report = parse_dcgm_diag(_fixture("dcgm3_level1_pass.json"))
    assert report["format"] == "dcgm3"
    # dcgmi 3.x writes version and driver at the top level of the document (dcgmi/Diag.cpp HelperJsonBuildOutput)
    assert report["version"] == "3.1.8"
    assert report["driver_version"] == "535.129.03"
    assert report["gpu_serials"]["7"] == "1654123001008"
    assert report["status"] == "pass"
    assert len(report["tests"]) == 9  # the null entry is ignored
    denylist = _test(report, "Denylist")
    assert denylist["category"] == "Deployment"
    assert denylist["gpu_ids"] == []  # a Deployment result names no GPU unless it reports an error
    checks = diag_checks(report, 1)
    assert [c["status"] for c in checks] == ["ok"]
    assert "level 1 passed (9 passed" in checks[0]["reason"]


def test_dcgm3_memory_failure_on_one_gpu():
    report = parse_dcgm_diag(_fixture("dcgm3_level2_memory_fail.json"))
    assert report["status"] == "fail"
    memory = _test(report, "GPU Memory")
    assert memory["status"] == "fail"
    assert memory["failed_gpu_ids"] == [3]
    assert memory["gpu_ids"] == list(range(8))
    assert memory["error_codes"] == [58]
    assert "miscompare" in memory["messages"][0]
    assert memory["info"] == ["Allocated 80% of GPU memory"]
    assert _test(report, "Diagnostic")["status"] == "skip"
    assert report["counts"]["fail"] == 1
    assert report["version"] == "3.3.5" and report["driver_version"] == "550.90.07"
    assert memory["entities"][3]["errors"][0]["reported_severity"] == 2  # DCGM_ERROR_ISOLATE
    assert memory["entities"][3]["errors"][0]["reported_category"] == 10  # DCGM_FR_EC_HARDWARE_MEMORY
    assert [t["category"] for t in report["tests"]][-3:] == ["Integration", "Hardware", "Hardware"]
    checks = diag_checks(report, 2)
    assert len(checks) == 1
    check = checks[0]
    assert check["status"] == "fail" and check["gpu_index"] == 3 and check["scope"] == "gpu"
    assert check["action"] == "replace"  # DCGM_FR_MEMORY_MISMATCH
    assert "Hardware/GPU Memory failed on GPU 3" in check["reason"]
    assert check["faults"][0]["mnemonic"] == "DCGM_FR_MEMORY_MISMATCH"


def test_dcgm3_deployment_error_uses_the_warnings_key_and_an_integer_gpu_id():
    report = parse_dcgm_diag(_fixture("dcgm3_level1_persistence_fail.json"))
    persistence = _test(report, "Persistence Mode")
    assert persistence["status"] == "fail"
    assert persistence["gpu_ids"] == [1] and persistence["failed_gpu_ids"] == [1]
    assert persistence["error_codes"] == [29]
    assert persistence["messages"][0].startswith("Persistence mode for GPU 1 is currently disabled.")
    assert _test(report, "Graphics Processes")["status"] == "skip"
    checks = diag_checks(report, 1)
    assert len(checks) == 1
    check = checks[0]
    assert check["check"] == "dcgm_persistence_mode" and check["gpu_index"] == 1
    assert check["faults"][0]["mnemonic"] == "DCGM_FR_PERSISTENCE_MODE"
    assert "Persistence mode for GPU 1" in check["reason"]


def test_dcgm3_legacy_string_warnings_and_upper_case_status():
    report = parse_dcgm_diag(_fixture("dcgm3_legacy_strings_warn.json"))
    persistence = _test(report, "Persistence Mode")
    assert persistence["status"] == "warn"
    assert persistence["messages"] == ["Persistence mode for GPU 0 is currently disabled."]
    assert persistence["error_codes"] == []
    assert report["status"] == "warn"
    checks = diag_checks(report)
    assert checks[0]["status"] == "warn" and checks[0]["action"] == "none"
    assert checks[0]["gpu_ids"] == [0, 1] and checks[0]["scope"] == "host"


def test_dcgm4_pass_with_entities_and_metadata():
    report = parse_dcgm_diag(_fixture("dcgm4_level2_pass.json"))
    assert report["format"] == "dcgm4"
    assert report["version"] == "4.1.1"
    assert report["driver_version"] == "570.124.06"
    assert report["status"] == "pass"
    assert [t["test"] for t in report["tests"]] == ["software", "memory", "pcie"]
    assert _test(report, "memory")["gpu_ids"] == list(range(8))
    assert report["gpu_serials"]["0"] == "1654123001001"
    assert diag_checks(report)[0]["status"] == "ok"


def test_dcgm4_failure_warning_and_non_gpu_entities():
    report = parse_dcgm_diag(_fixture("dcgm4_level3_pcie_fail.json"))
    pcie = _test(report, "pcie")
    assert pcie["status"] == "fail" and pcie["failed_gpu_ids"] == [6] and pcie["error_codes"] == [46]
    error = [e for e in pcie["entities"] if e["gpu_ids"] == [6]][0]["errors"][0]
    assert error["name"] == "DCGM_FR_PCIE_WIDTH" and error["reported_severity"] == 2
    diagnostic = _test(report, "diagnostic")
    assert diagnostic["status"] == "warn" and diagnostic["error_codes"] == [10]
    cpu = _test(report, "cpu_eud")
    assert cpu["status"] == "skip" and cpu["gpu_ids"] == []
    assert cpu["entities"][0]["entity"]["group"] == "CPU"
    checks = {c["check"]: c for c in diag_checks(report, 3)}
    assert checks["dcgm_pcie"]["status"] == "fail" and checks["dcgm_pcie"]["gpu_index"] == 6
    assert checks["dcgm_pcie"]["action"] == "contact_support"
    assert checks["dcgm_diagnostic"]["status"] == "warn" and checks["dcgm_diagnostic"]["gpu_index"] == 2
    assert "dcgm_targeted_power" not in checks  # skipped tests are not findings


def test_noise_around_the_json_is_tolerated():
    report = parse_dcgm_diag(_fixture("dcgm4_noisy_prefix.txt"))
    assert report["status"] == "pass" and report["format"] == "dcgm4"


def test_runtime_error_is_an_error_report_and_a_failed_check():
    report = parse_dcgm_diag(_fixture("dcgm3_runtime_error.json"))
    assert report["status"] == "error"
    assert "unable to establish a connection" in report["runtime_error"]
    checks = diag_checks(report, 1)
    assert checks[0]["status"] == "fail" and checks[0]["action"] == "contact_support"
    assert "did not complete" in checks[0]["reason"]


def test_empty_results_are_not_a_pass():
    report = parse_dcgm_diag({"DCGM Diagnostic": {"test_categories": []}, "metadata": {"version": "4.2.3"}})
    assert report["status"] == "error"
    assert diag_checks(report)[0]["status"] == "fail"


def test_error_report_helper():
    report = error_report("dcgmi diag -r 3 timed out after 60 s")
    assert diag_checks(report, 3)[0]["reason"].endswith("timed out after 60 s")


@pytest.mark.parametrize("text,message", [
    ("", "printed no JSON"),
    ("Error: dcgmi not connected", "printed no JSON"),
    ("{not json}", "not valid JSON"),
    (json.dumps({"something": {}}), "not a dcgmi diag document"),
    (json.dumps({"DCGM GPU Diagnostic": {"test_categories": {"a": 1}}}), "test_categories must be a list"),
])
def test_bad_output_names_the_source(text, message):
    with pytest.raises(DcgmDiagError) as info:
        parse_dcgm_diag(text, source="node-7:dcgmi")
    assert message in str(info.value)
    assert "node-7:dcgmi" in str(info.value)
