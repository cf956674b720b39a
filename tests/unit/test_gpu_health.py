# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""GPU health: NVML readings (live and recorded), evaluation of injected faults, and the gpu_health module."""
from __future__ import annotations

import copy
import json
import os
import socket
import subprocess
import sys

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.health_checks import (
    DEFAULT_POLICY, GpuHealthPolicyError, evaluate, validate_policy,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.nvml_reader import (
    READINGS_FORMAT, GpuReadingError, NvmlUnavailableError, decode_clock_event_reasons, import_pynvml, read_gpus,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.nvml_recording import RecordedNvml, load_recording, strip_volatile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
NVML_FIXTURES = os.path.join(HERE, "fixtures", "nvml")
DCGM_FIXTURES = os.path.join(HERE, "fixtures", "dcgm")
MODULE = os.path.join(REPO, "plugins", "modules", "gpu_health.py")


def _recording(name):
    return load_recording(os.path.join(NVML_FIXTURES, name))


def _read(name, window=1.0):
    return read_gpus(RecordedNvml.from_file(os.path.join(NVML_FIXTURES, name)), host="gpu-node-01", xid_window_s=window)


def _checks(result, check, gpu=None):
    return [c for c in result["checks"] if c["check"] == check and (gpu is None or c["gpu_index"] == gpu)]


def _bad(result):
    return [(c["check"], c["gpu_index"], c["status"]) for c in result["checks"] if c["status"] != "ok"]


# ----------------------------------------------------------------------------- readings


def test_healthy_recording_replays_through_read_gpus():
    reading = _read("h100x8_healthy.json")
    assert reading["format"] == READINGS_FORMAT
    assert reading["driver_version"] == "550.90.07"
    assert reading["cuda_driver_version"] == "12.4"
    assert reading["device_count"] == 8 and len(reading["gpus"]) == 8
    gpu = reading["gpus"][0]
    assert gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert gpu["uuid"].startswith("GPU-") and gpu["serial"] and gpu["pci_bus_id"] == "00000000:18:00.0"
    assert gpu["pcie_gen"] == 5 and gpu["pcie_width"] == 16
    assert len(gpu["nvlink"]) == 18 and all(link["active"] for link in gpu["nvlink"])
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert gpu["clock_event_reason_names"] == ["gpu_idle"]
    # H100 has no page retirement (row remapping instead): NOT_SUPPORTED per field, not an error.
    assert {"retired_pages_sbe", "retired_pages_dbe", "retired_pages_pending"} <= set(gpu["unsupported"])
    assert gpu["errors"] == {}
    assert reading["xid_listen"]["registered"] == list(range(8))


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(NVML_FIXTURES) if n.startswith("h100x8_")))
def test_reading_a_replayed_reading_gives_the_same_reading(name):
    first = _read(name)
    second = read_gpus(RecordedNvml(strip_volatile(first), "<first pass>"), host="gpu-node-01", xid_window_s=1.0)
    assert strip_volatile(second) == strip_volatile(first)


def test_not_supported_fields_and_gpu_errors_do_not_stop_the_reading():
    recording = _recording("h100x8_healthy.json")
    gpu = recording["gpus"][1]
    gpu["temperature_c"] = None  # NOT_SUPPORTED
    gpu["errors"] = {"power_w": "NVML_ERROR_NO_PERMISSION"}
    gpu["nvlink"] = None
    reading = read_gpus(RecordedNvml(recording), host="h")
    out = reading["gpus"][1]
    assert out["temperature_c"] is None and "temperature_c" in out["unsupported"]
    assert out["power_w"] is None and out["errors"] == {"power_w": "NVML_ERROR_NO_PERMISSION"}
    assert out["nvlink"] is None and "nvlink" in out["unsupported"]
    assert out["uuid"] == gpu["uuid"] and out["pcie_width"] == 16
    result = evaluate(reading, expected_count=8)
    access = _checks(result, "nvml_access", 1)[0]
    assert access["status"] == "warn" and "power_w=NVML_ERROR_NO_PERMISSION" in access["reason"]
    assert _checks(result, "temperature", 1)[0]["status"] == "ok"
    assert result["verdict"] == "warn"


class _OldPynvml:
    """An older pynvml: no nvmlDeviceGetCurrentClocksEventReasons and no remapped rows call."""

    def __init__(self, inner):
        self._inner = inner
        self.NVMLError = inner.NVMLError

    def __getattr__(self, name):
        if name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetRemappedRows"):
            raise AttributeError(name)
        if name == "nvmlDeviceGetCurrentClocksThrottleReasons":
            return self._inner.nvmlDeviceGetCurrentClocksEventReasons
        return getattr(self._inner, name)


def test_older_pynvml_without_new_functions_is_tolerated():
    reading = read_gpus(_OldPynvml(RecordedNvml(_recording("h100x8_thermal_throttle.json"))), host="h")
    gpu = reading["gpus"][3]
    assert gpu["clock_event_reason_names"] == ["sw_thermal_slowdown", "hw_thermal_slowdown"]
    assert gpu["remapped_rows"] is None and "remapped_rows" in gpu["unsupported"]


def test_clock_event_reason_decoding():
    assert decode_clock_event_reasons(0x1 | 0x40 | 0x80) == ["gpu_idle", "hw_thermal_slowdown", "hw_power_brake_slowdown"]
    assert decode_clock_event_reasons(0) == []
    assert decode_clock_event_reasons(None) == []


def test_xid_window_zero_does_not_listen():
    reading = _read("h100x8_xid79.json", window=0)
    assert "xid_listen" not in reading
    assert all(gpu["xids"] == [] for gpu in reading["gpus"])


def test_recorded_host_level_xid_without_gpu_is_reported():
    recording = _recording("h100x8_healthy.json")
    recording["xid_events"] = [{"gpu_index": None, "xid": 79}]
    reading = read_gpus(RecordedNvml(recording), host="h", xid_window_s=1)
    assert reading["xid_events"] == [{"gpu_index": None, "xid": 79}]
    result = evaluate(reading, expected_count=8)
    stray = _checks(result, "xid_79")[0]
    assert stray["scope"] == "host" and stray["status"] == "fail" and "GPU unknown" in stray["reason"]


def test_no_nvml_library_fails_clearly_with_a_recording():
    with pytest.raises(NvmlUnavailableError) as info:
        read_gpus(RecordedNvml(_recording("no_nvml.json")), host="cpu-node-01")
    assert info.value.message == "NVML library not found on cpu-node-01 (no NVIDIA driver?)"


def test_real_pynvml_without_a_gpu_fails_clearly():
    pynvml = import_pynvml()  # nvidia-ml-py must be installed (see requirements)
    try:
        reading = read_gpus(pynvml, host="ci-host")
    except NvmlUnavailableError as err:
        assert "on ci-host" in err.message
        if err.value == "NVML_ERROR_LIBRARY_NOT_FOUND":
            assert err.message == "NVML library not found on ci-host (no NVIDIA driver?)"
    else:  # a machine with a driver: the reading must be well-formed
        assert reading["format"] == READINGS_FORMAT and reading["device_count"] == len(reading["gpus"])


@pytest.mark.parametrize("mutate,field", [
    (lambda d: d.update(format="other/v9"), "format"),
    (lambda d: d.update(gpus={"0": {}}), "gpus"),
    (lambda d: d["gpus"][0].update(index=-1), "gpus[0].index"),
    (lambda d: d["gpus"][1].update(index=0), "gpus[1].index"),
    (lambda d: d["gpus"][2].update(errors={"power_w": "SOMETHING"}), "gpus[2].errors.power_w"),
    (lambda d: d["gpus"][3].update(xids=["79"]), "gpus[3].xids"),
    (lambda d: d.update(device_count=-2), "device_count"),
    (lambda d: d.update(init_error="NOPE"), "init_error"),
])
def test_malformed_recordings_name_file_field_and_value(tmp_path, mutate, field):
    data = _recording("h100x8_healthy.json")
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(GpuReadingError) as info:
        load_recording(str(path))
    assert str(path) in str(info.value)
    assert "field %s" % field in str(info.value)


def test_unreadable_recordings(tmp_path):
    with pytest.raises(GpuReadingError, match="cannot read"):
        load_recording(str(tmp_path / "missing.json"))
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": ', encoding="utf-8")
    with pytest.raises(GpuReadingError, match="not valid JSON"):
        load_recording(str(broken))


# ----------------------------------------------------------------------------- evaluation


def test_healthy_host_is_ok():
    result = evaluate(_read("h100x8_healthy.json"), expected_count=8)
    assert result["verdict"] == "ok" and result["recommended_action"] == "none" and result["reasons"] == []
    assert len(result["gpus"]) == 8 and all(g["status"] == "ok" for g in result["gpus"])
    assert _checks(result, "gpu_count")[0]["reason"] == "gpu-node-01: 8 of 8 expected GPUs present"
    assert _checks(result, "retired_pages", 0)[0]["reason"].endswith("page retirement not supported (row remapping is used instead)")
    assert result["measurements"] == {"GPU.smi.driver": "550.90.07", "GPU.smi.cuda-version": "12.4", "GPU.smi.gpu-count": 8,
                                      "GPU.smi.gpu.model": "NVIDIA H100 80GB HBM3"}
    checks_per_gpu = {c["check"] for c in result["checks"] if c["gpu_index"] == 0}
    assert checks_per_gpu == {"nvml_access", "temperature", "power", "clock_throttle", "ecc_mode", "ecc_errors", "retired_pages",
                              "row_remap", "pcie_link", "nvlink", "xid"}


def test_volatile_dbe_fails_with_gpu_reset():
    result = evaluate(_read("h100x8_ecc_dbe_volatile.json"), expected_count=8)
    assert result["verdict"] == "fail" and result["recommended_action"] == "reset_gpu"
    assert sorted(_bad(result)) == [("ecc_errors", 2, "fail"), ("xid_48", 2, "fail")]
    ecc = _checks(result, "ecc_errors", 2)[0]
    assert "2 uncorrectable (double-bit) ECC error(s)" in ecc["reason"]
    assert ecc["uuid"] in ecc["reason"] and "serial 1654123001003" in ecc["reason"]
    assert result["gpus"][2]["status"] == "fail" and result["gpus"][0]["status"] == "ok"


def test_pending_row_remap_fails_with_gpu_reset():
    result = evaluate(_read("h100x8_row_remap_pending.json"), expected_count=8)
    assert result["verdict"] == "fail" and result["recommended_action"] == "reset_gpu"
    assert ("row_remap", 4, "fail") in _bad(result)
    assert ("xid_63", 4, "fail") not in _bad(result)  # XID 63 is the remap event itself: informational
    assert _checks(result, "xid_63", 4)[0]["status"] == "ok"


def test_row_remap_failure_means_replace():
    recording = _recording("h100x8_healthy.json")
    recording["gpus"][7]["remapped_rows"] = {"correctable": 0, "uncorrectable": 8, "pending": False, "failure": True}
    result = evaluate(read_gpus(RecordedNvml(recording), host="h"), expected_count=8)
    assert result["recommended_action"] == "replace"
    assert _checks(result, "row_remap", 7)[0]["status"] == "fail"


def test_pcie_downgrade_fails():
    result = evaluate(_read("h100x8_pcie_downgraded.json"), expected_count=8)
    assert _bad(result) == [("pcie_link", 6, "fail")]
    check = _checks(result, "pcie_link", 6)[0]
    assert "Gen4 x8 (max Gen5 x16)" in check["reason"] and "width x8 below x16" in check["reason"]
    assert check["action"] == "contact_support" and "Reseat" in check["hint"]
    assert check["value"] == {"gen": 4, "gen_max": 5, "width": 8, "width_max": 16}


def test_pcie_generation_drop_while_idle_is_power_saving():
    recording = _recording("h100x8_healthy.json")
    recording["gpus"][0]["pcie_gen"] = 1  # idle GPUs train the link down
    result = evaluate(read_gpus(RecordedNvml(recording), host="h"), expected_count=8)
    check = _checks(result, "pcie_link", 0)[0]
    assert check["status"] == "ok" and "while idle" in check["reason"]
    recording["gpus"][0]["clock_event_reasons"] = 0  # busy: now it is a downgrade
    result = evaluate(read_gpus(RecordedNvml(recording), host="h"), expected_count=8)
    assert _checks(result, "pcie_link", 0)[0]["status"] == "warn"
    strict = evaluate(read_gpus(RecordedNvml(recording), host="h"), 8, {"pcie_gen_downgrade": "fail"})
    assert _checks(strict, "pcie_link", 0)[0]["status"] == "fail"


def test_nvlink_down_fails_with_gpu_reset():
    result = evaluate(_read("h100x8_nvlink_down.json"), expected_count=8)
    assert result["verdict"] == "fail" and result["recommended_action"] == "reset_gpu"
    check = _checks(result, "nvlink", 1)[0]
    assert check["status"] == "fail" and "16 of 18 NVLinks active, down: 3, 7" in check["reason"]
    assert _checks(result, "xid_74", 1)[0]["status"] == "fail"


def test_nvlink_expected_count_and_error_counters():
    recording = _recording("h100x8_healthy.json")
    recording["gpus"][1]["nvlink"] = copy.deepcopy(recording["gpus"][1]["nvlink"][:12])
    recording["gpus"][0]["nvlink"][0]["crc_flit"] = 150
    reading = read_gpus(RecordedNvml(recording), host="h")
    result = evaluate(reading, 8, {"nvlink_expected_active": 18})
    assert _checks(result, "nvlink", 0)[0]["status"] == "warn"
    assert "150 CRC errors" in _checks(result, "nvlink", 0)[0]["reason"]
    assert _checks(result, "nvlink", 1)[0]["status"] == "fail"
    assert _checks(evaluate(reading, 8), "nvlink", 1)[0]["status"] == "ok"  # 12 reported links, all active


def test_xid79_lost_gpu_fails_with_reboot():
    result = evaluate(_read("h100x8_xid79.json"), expected_count=8)
    assert result["verdict"] == "fail" and result["recommended_action"] == "reboot"
    assert sorted(_bad(result), key=str) == sorted([("nvml_access", 5, "fail"), ("xid_79", 5, "fail"),
                                                    ("gpu_count", None, "fail")], key=str)
    assert "7 of 8 expected GPUs usable (lost: 5)" in _checks(result, "gpu_count")[0]["reason"]
    assert _checks(result, "xid_79", 5)[0]["fault"]["mnemonic"] == "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
    # the lost GPU gets no temperature/ECC/... checks, only access and XID
    assert {c["check"] for c in result["checks"] if c["gpu_index"] == 5} == {"nvml_access", "xid_79"}


def test_application_xids_never_fail_the_node():
    result = evaluate(_read("h100x8_xid13_application.json"), expected_count=8)
    assert result["verdict"] == "warn"
    assert result["recommended_action"] == "check_application"
    statuses = {(c["check"], c["gpu_index"]): c["status"] for c in result["checks"] if c["check"].startswith("xid_")}
    assert statuses == {("xid_13", 0): "warn", ("xid_43", 0): "warn", ("xid_45", 0): "warn", ("xid_31", 3): "warn"}
    assert _checks(result, "xid_13", 0)[0]["count"] == 2
    assert "x2" in _checks(result, "xid_13", 0)[0]["reason"]
    # even a policy asking for "fail" cannot make an application XID condemn the node
    strict = evaluate(_read("h100x8_xid13_application.json"), 8, {"application_xid_status": "fail"})
    assert strict["verdict"] == "warn"
    quiet = evaluate(_read("h100x8_xid13_application.json"), 8, {"application_xid_status": "ok"})
    assert quiet["verdict"] == "ok"


def test_thermal_throttle_fails():
    result = evaluate(_read("h100x8_thermal_throttle.json"), expected_count=8)
    assert result["verdict"] == "fail"
    assert sorted(_bad(result)) == [("clock_throttle", 3, "fail"), ("temperature", 3, "fail")]
    temp = _checks(result, "temperature", 3)[0]
    assert "91 C reaches the limit 89 C" in temp["reason"]  # the GPU's own slowdown temperature
    assert "cooling" in _checks(result, "clock_throttle", 3)[0]["hint"]


def test_temperature_thresholds_are_configurable():
    reading = _read("h100x8_healthy.json")
    result = evaluate(reading, 8, {"temperature_warn_c": 30, "temperature_fail_c": 35})
    statuses = [c["status"] for c in result["checks"] if c["check"] == "temperature"]
    assert statuses == ["warn", "warn", "fail", "fail", "warn", "warn", "fail", "fail"]


def test_gpu_count_7_of_8_fails_and_too_many_warns():
    result = evaluate(_read("h100x8_gpu_count_7.json"), expected_count=8)
    assert _bad(result) == [("gpu_count", None, "fail")]
    assert result["recommended_action"] == "reboot"
    assert "7 of 8 expected GPUs usable" in result["reasons"][0]
    assert evaluate(_read("h100x8_healthy.json"), expected_count=4)["verdict"] == "warn"
    assert evaluate(_read("h100x8_gpu_count_7.json"))["verdict"] == "ok"  # nothing expected, nothing to compare


def test_ecc_disabled_and_aggregate_counters():
    recording = _recording("h100x8_healthy.json")
    recording["gpus"][0]["ecc_mode_current"] = False
    recording["gpus"][1]["ecc_aggregate_dbe"] = 3
    recording["gpus"][2]["ecc_volatile_sbe"] = 5000
    result = evaluate(read_gpus(RecordedNvml(recording), host="h"), expected_count=8)
    assert _checks(result, "ecc_mode", 0)[0]["status"] == "warn"
    assert _checks(result, "ecc_errors", 1)[0]["status"] == "warn"
    assert _checks(result, "ecc_errors", 2)[0]["status"] == "warn"
    assert result["verdict"] == "warn"


def test_expected_gpu_model():
    reading = _read("h100x8_healthy.json")
    assert evaluate(reading, 8, {"expected_gpu_model": "H100"})["verdict"] == "ok"
    result = evaluate(reading, 8, {"expected_gpu_model": "B200"})
    assert result["verdict"] == "fail" and "expected a B200" in result["reasons"][0]


def test_dcgm_report_is_merged_into_the_verdict():
    from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.dcgm_diag import parse_dcgm_diag

    with open(os.path.join(DCGM_FIXTURES, "dcgm4_level3_pcie_fail.json"), encoding="utf-8") as handle:
        report = parse_dcgm_diag(handle.read())
    result = evaluate(_read("h100x8_healthy.json"), 8, dcgm=report, dcgm_level=3)
    assert result["verdict"] == "fail"
    assert _checks(result, "dcgm_pcie")[0]["gpu_index"] == 6
    assert "DCGM diagnostic level 3 Integration/pcie failed on GPU 6" in result["reasons"][0]


@pytest.mark.parametrize("overrides,field", [
    ({"temperature_warn": 80}, "thresholds.temperature_warn"),
    ({"temperature_warn_c": "hot"}, "thresholds.temperature_warn_c"),
    ({"temperature_warn_c": True}, "thresholds.temperature_warn_c"),
    ({"pcie_gen_downgrade": "maybe"}, "thresholds.pcie_gen_downgrade"),
    ({"throttle_fail": "hw_slowdown"}, "thresholds.throttle_fail"),
    ({"temperature_warn_c": 95, "temperature_fail_c": 90}, "thresholds.temperature_fail_c"),
])
def test_bad_policy_names_key_and_value(overrides, field):
    with pytest.raises(GpuHealthPolicyError) as info:
        validate_policy(overrides)
    assert "field %s" % field in str(info.value)


def test_policy_defaults_and_bad_expected_count():
    assert validate_policy() == DEFAULT_POLICY
    assert validate_policy({"nvlink_expected_active": None})["nvlink_expected_active"] is None
    with pytest.raises(GpuHealthPolicyError, match="expected_gpu_count"):
        evaluate(_read("h100x8_healthy.json"), expected_count=-1)


# ----------------------------------------------------------------------------- the module


def _run_module(tmp_path, args):
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, ".build", "collections"))
    proc = subprocess.run([sys.executable, MODULE, str(args_file)], capture_output=True, text=True, env=env, timeout=60,
                          check=False)
    try:
        return json.loads(proc.stdout)
    except ValueError as exc:
        raise AssertionError("module printed no JSON: %s\n%s" % (proc.stdout, proc.stderr)) from exc


def test_module_on_a_recorded_healthy_host(tmp_path):
    out = _run_module(tmp_path, {"recorded_readings": os.path.join(NVML_FIXTURES, "h100x8_healthy.json"),
                                 "expected_gpu_count": 8, "return_readings": True})
    assert not out.get("failed"), out.get("msg")
    assert out["changed"] is False
    assert out["verdict"] == "ok" and out["recommended_action"] == "none" and out["host"] == "gpu-node-01"
    assert len(out["gpus"]) == 8 and out["dcgm"] is None
    assert out["readings"]["format"] == READINGS_FORMAT


def test_module_fail_on_fail_with_lost_gpu(tmp_path):
    out = _run_module(tmp_path, {"recorded_readings": os.path.join(NVML_FIXTURES, "h100x8_xid79.json"),
                                 "expected_gpu_count": 8, "fail_on": "fail"})
    assert out["failed"] is True
    assert out["msg"].startswith("GPU health fail on gpu-node-01: ")
    assert out["recommended_action"] == "reboot"


def test_module_without_nvml_fails_with_a_clear_message(tmp_path):
    out = _run_module(tmp_path, {"recorded_readings": os.path.join(NVML_FIXTURES, "no_nvml.json")})
    assert out["failed"] is True
    assert out["msg"] == "NVML library not found on cpu-node-01 (no NVIDIA driver?)"
    assert "Traceback" not in json.dumps(out)


def test_module_live_nvml_on_this_machine(tmp_path):
    out = _run_module(tmp_path, {"xid_window_s": 0})
    if out.get("failed"):  # no NVIDIA driver here (CI): a clear message, not a traceback
        assert "on %s" % socket.gethostname() in out["msg"]
        assert "exception" not in out
    else:
        assert out["verdict"] in ("ok", "warn", "fail")


def test_module_with_recorded_dcgm_output(tmp_path):
    out = _run_module(tmp_path, {"recorded_readings": os.path.join(NVML_FIXTURES, "h100x8_healthy.json"),
                                 "dcgm_level": 3, "dcgm_recorded_output": os.path.join(DCGM_FIXTURES, "dcgm4_level3_pcie_fail.json")})
    assert out["verdict"] == "fail"
    assert out["dcgm"]["format"] == "dcgm4" and out["dcgm"]["status"] == "fail"
    assert [c["check"] for c in out["checks"] if c["status"] == "fail"] == ["dcgm_pcie"]


def test_module_runs_dcgmi_without_a_shell(tmp_path):
    argv_file = tmp_path / "argv.txt"
    fake = tmp_path / "dcgmi"
    fake.write_text("#!/bin/sh\nprintf '%%s\\n' \"$@\" > %s\ncat %s\nexit 226\n"
                    % (argv_file, os.path.join(DCGM_FIXTURES, "dcgm3_level2_memory_fail.json")), encoding="utf-8")
    fake.chmod(0o755)
    out = _run_module(tmp_path, {"recorded_readings": os.path.join(NVML_FIXTURES, "h100x8_healthy.json"),
                                 "dcgm_level": 2, "dcgmi_path": str(fake)})
    assert argv_file.read_text(encoding="utf-8").split() == ["diag", "-r", "2", "-j"]
    assert out["dcgm"]["format"] == "dcgm3"
    assert _checks(out, "dcgm_gpu_memory")[0]["gpu_index"] == 3
    assert out["recommended_action"] == "replace"


def test_module_dcgmi_timeout_is_a_failed_check(tmp_path):
    fake = tmp_path / "dcgmi"
    fake.write_text("#!/bin/sh\nsleep 30\n", encoding="utf-8")
    fake.chmod(0o755)
    out = _run_module(tmp_path, {"recorded_readings": os.path.join(NVML_FIXTURES, "h100x8_healthy.json"),
                                 "dcgm_level": 1, "dcgmi_path": str(fake), "dcgm_timeout_s": 1})
    check = _checks(out, "dcgm_diag")[0]
    assert check["status"] == "fail" and "timed out after 1 s" in check["reason"]


def test_module_rejects_bad_thresholds_and_options(tmp_path):
    out = _run_module(tmp_path, {"recorded_readings": os.path.join(NVML_FIXTURES, "h100x8_healthy.json"),
                                 "thresholds": {"temp_max": 3}})
    assert out["failed"] and "thresholds.temp_max" in out["msg"]
    out = _run_module(tmp_path, {"dcgm_recorded_output": os.path.join(DCGM_FIXTURES, "dcgm4_level2_pass.json")})
    assert out["failed"] and "needs dcgm_level" in out["msg"]
    out = _run_module(tmp_path, {"recorded_readings": str(tmp_path / "nope.json")})
    assert out["failed"] and "nope.json" in out["msg"]


def test_recording_round_trip_through_module_output(tmp_path):
    """A reading returned by the module can be saved and evaluated again with the same result."""
    out = _run_module(tmp_path, {"recorded_readings": os.path.join(NVML_FIXTURES, "h100x8_nvlink_down.json"),
                                 "return_readings": True, "expected_gpu_count": 8})
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(out["readings"]), encoding="utf-8")
    again = _run_module(tmp_path, {"recorded_readings": str(saved), "expected_gpu_count": 8})
    assert again["checks"] == out["checks"]
    assert again["verdict"] == "fail"


# ----------------------------------------------------------------------------- public constants (drift detection)


def test_nvml_constants_match_the_installed_pynvml():
    pynvml = import_pynvml()
    from ansible_collections.dsxos.cluster.plugins.module_utils.gpu import nvml_reader as ours  # pylint: disable=import-outside-toplevel
    for code, name in ours.NVML_ERROR_NAMES.items():
        assert getattr(pynvml, name) == code, name
    for name in ("NVML_TEMPERATURE_GPU", "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN", "NVML_CLOCK_SM", "NVML_CLOCK_MEM",
                 "NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_VOLATILE_ECC",
                 "NVML_AGGREGATE_ECC", "NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS",
                 "NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR", "NVML_FEATURE_ENABLED", "NVML_NVLINK_MAX_LINKS"):
        assert getattr(ours, name) == getattr(pynvml, name), name
    assert ours.NVML_EVENT_TYPE_XID_CRITICAL_ERROR == pynvml.nvmlEventTypeXidCriticalError
    public_counters = {"replay": "NVML_NVLINK_ERROR_DL_REPLAY", "recovery": "NVML_NVLINK_ERROR_DL_RECOVERY",
                       "crc_flit": "NVML_NVLINK_ERROR_DL_CRC_FLIT", "crc_data": "NVML_NVLINK_ERROR_DL_CRC_DATA"}
    assert dict(ours.NVLINK_ERROR_COUNTERS) == {
        name: getattr(pynvml, const) for name, const in public_counters.items()}
    reason_names = {"gpu_idle": "GpuIdle", "applications_clocks_setting": "ApplicationsClocksSetting",
                    "sw_power_cap": "SwPowerCap", "hw_slowdown": "HwSlowdown", "sync_boost": "SyncBoost",
                    "sw_thermal_slowdown": "SwThermalSlowdown", "hw_thermal_slowdown": "HwThermalSlowdown",
                    "hw_power_brake_slowdown": "HwPowerBrakeSlowdown", "display_clock_setting": "DisplayClockSetting",
                    "board_limit": "BoardLimit", "reliability": "Reliability"}
    for bit, name in ours.CLOCK_EVENT_REASONS:
        public = getattr(pynvml, "nvmlClocksEventReason" + reason_names[name], None)
        if public is None:  # only defined under the older name
            public = getattr(pynvml, "nvmlClocksThrottleReason" + reason_names[name])
        assert public == bit, name
    assert sorted(reason_names) == sorted(name for _bit, name in ours.CLOCK_EVENT_REASONS)


def test_recorded_nvml_answers_only_calls_pynvml_has_with_the_same_shapes():
    import inspect  # pylint: disable=import-outside-toplevel
    pynvml = import_pynvml()
    calls = [name for name in dir(RecordedNvml) if name.startswith("nvml")]
    assert len(calls) > 25
    for name in calls:
        assert callable(getattr(pynvml, name, None)), name
        ours = [p for p in inspect.signature(getattr(RecordedNvml, name)).parameters if p != "self"]
        theirs = list(inspect.signature(getattr(pynvml, name)).parameters)
        assert len(ours) == len(theirs), (name, ours, theirs)
    # nvmlDeviceGetRemappedRows returns (corrRows, uncRows, isPending, failureOccurred)
    assert "return (c_corr.value, c_unc.value, c_bpending.value, c_bfailure.value)" in inspect.getsource(
        pynvml.nvmlDeviceGetRemappedRows)
    fields = [f[0] for f in pynvml.c_nvmlEventData_t._fields_]  # pylint: disable=protected-access
    assert fields[:3] == ["device", "eventType", "eventData"]
    assert "busId" in [f[0] for f in pynvml.nvmlPciInfo_t._fields_]  # pylint: disable=protected-access
    # power is read in milliwatts and reported in watts
    reading = _read("h100x8_healthy.json")
    recorded = _recording("h100x8_healthy.json")
    assert reading["gpus"][0]["power_w"] == recorded["gpus"][0]["power_w"]
    nvml = RecordedNvml(recorded)
    assert nvml.nvmlDeviceGetPowerUsage(0) == int(recorded["gpus"][0]["power_w"] * 1000)


def _exporter_fields():
    shared = os.environ.get("DSXOS_SHARED_DIR", os.path.join(os.path.dirname(REPO), "shared"))
    folder = os.path.join(shared, "reference", "dcgm-exporter")
    assert os.path.isdir(folder), "dcgm-exporter reference is missing: %s (set DSXOS_SHARED_DIR)" % folder
    enabled, known = set(), set()
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".csv"):
            continue
        with open(os.path.join(folder, name), "r", encoding="utf-8") as handle:
            for line in handle:
                text = line.strip()
                commented = text.startswith("#")
                field = text.lstrip("#").strip().split(",")[0].strip()
                if field.startswith(("DCGM_FI_", "DCGM_EXP_")) and " " not in field:
                    known.add(field)
                    if not commented:
                        enabled.add(field)
    assert "DCGM_FI_DEV_XID_ERRORS" in enabled, "reference lists unreadable in %s" % folder
    return enabled, known


def test_every_dcgm_exporter_field_we_name_exists_in_the_reference():
    import re  # pylint: disable=import-outside-toplevel
    from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.nvml_reader import DCGM_EXPORTER_FIELDS  # pylint: disable=import-outside-toplevel
    enabled, known = _exporter_fields()
    missing = sorted(set(DCGM_EXPORTER_FIELDS.values()) - known)
    assert not missing, missing
    named = {}
    for top in ("plugins", "roles", "docs", "playbooks", "recipes"):
        for root, _dirs, files in os.walk(os.path.join(REPO, top)):
            for name in files:
                if not name.endswith((".py", ".md", ".yml", ".yaml", ".j2", ".json")):
                    continue
                path = os.path.join(root, name)
                with open(path, "r", encoding="utf-8", errors="replace") as handle:
                    for field in re.findall(r"\bDCGM_(?:FI|EXP)_[A-Z0-9_]*[A-Z0-9]", handle.read()):
                        named.setdefault(field, os.path.relpath(path, REPO))
    assert "DCGM_FI_DEV_XID_ERRORS" in named
    unknown = {field: where for field, where in named.items() if field not in known}
    assert not unknown, unknown
    # the fields the docs compare with (certify-gpu-health.md) are named there
    with open(os.path.join(REPO, "docs", "certify-gpu-health.md"), "r", encoding="utf-8") as handle:
        doc = handle.read()
    assert all(field in doc for field in DCGM_EXPORTER_FIELDS.values())
    assert "DCGM_FI_DEV_PCIE_REPLAY_COUNTER" in enabled and "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" not in enabled
