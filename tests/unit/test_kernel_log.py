"""Kernel log XIDs (gpu/kernel_log.py): NVRM line variants, time formats, GPU mapping, bounds, reading, module option."""
# pylint: disable=missing-function-docstring
from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.health_checks import evaluate
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.kernel_log import (
    KernelLogError, attach_to_reading, canonical_bus_id, dmesg_command, journal_command, parse_kernel_log, parse_since,
    pci_key, read_kernel_log,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.nvml_reader import read_gpus
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.nvml_recording import RecordedNvml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LOGS = os.path.join(HERE, "fixtures", "kernel_log")
NVML_FIXTURES = os.path.join(HERE, "fixtures", "nvml")
MODULE = os.path.join(REPO, "plugins", "modules", "gpu_health.py")


def _log(name):
    with open(os.path.join(LOGS, name), "r", encoding="utf-8") as handle:
        return handle.read()


def _reading(name="h100x8_healthy.json"):
    return read_gpus(RecordedNvml.from_file(os.path.join(NVML_FIXTURES, name)), host="gpu-node-01", xid_window_s=1.0)


# ----------------------------------------------------------------------------- line variants and time formats


def test_journal_short_iso_variants():
    parsed = parse_kernel_log(_log("journal_short_iso.log"))
    xids = parsed["xids"]
    assert [(x["xid"], x["pci_bus_id"]) for x in xids] == [
        (79, "00000000:AB:00.0"), (13, "00000000:3A:00.0"), (13, "00000000:3A:00.0"), (48, "00000000:5D:00.0"),
        (63, "00000000:5D:00.0")]
    lost = xids[0]
    assert lost["timestamp"] == "2026-03-02T09:12:40+00:00"
    assert lost["pid"] is None and lost["process"] is None  # pid='<unknown>', name=<unknown>
    assert lost["message"] == "GPU has fallen off the bus."
    assert lost["mnemonic"] == "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS" and lost["severity"] == "critical"
    app = xids[1]
    assert app["pid"] == 48213 and app["process"] == "python3" and app["application_class"] is True
    assert app["message"].startswith("Graphics SM Warp Exception on (GPC 1, TPC 2, SM 0)")
    assert parsed["gpu_uuids"] == {"00000000:AB:00.0": "GPU-3f1c0a75-5d1c-4e2a-9b7f-a1b2c3d40005"}
    assert parsed["lines"] == 12 and parsed["dropped"] == 0 and parsed["truncated"] is False


def test_sxid_and_other_nvrm_lines_are_not_xids():
    parsed = parse_kernel_log(_log("journal_short_iso.log"))
    assert 12028 not in [x["xid"] for x in parsed["xids"]]
    assert all("NVRM: Xid" in x["line"] for x in parsed["xids"])


def test_dmesg_iso_with_comma_fraction_offsets_old_driver_and_no_pci_tag():
    xids = parse_kernel_log(_log("dmesg_iso.log"))["xids"]
    assert [(x["xid"], x["pci_bus_id"]) for x in xids] == [(79, "00000000:18:00.0"), (119, "00000000:DB:00.0"),
                                                           (94, "00000000:2A:00.0")]
    assert xids[0]["timestamp"] == "2026-03-02T09:12:40.512000+00:00" and xids[0]["pid"] == 1122
    assert xids[0]["process"] is None  # driver 470: pid but no name
    assert xids[1]["timestamp"] == "2026-03-02T08:40:00.000001+00:00"  # +01:00 converted to UTC
    assert xids[1]["process"] == "nv-hostengine"
    assert xids[2]["pid"] is None and xids[2]["message"].startswith("Contained: CE User Channel")


def test_journal_json_with_byte_array_message():
    xids = parse_kernel_log(_log("journal_json.log"))["xids"]
    assert [(x["xid"], x["pci_bus_id"]) for x in xids] == [(74, "00000000:9A:00.0"), (95, "00000000:BA:00.0")]
    assert xids[0]["timestamp"] == "2026-03-02T09:12:40.512000+00:00"
    assert xids[0]["epoch"] == pytest.approx(1772442760.512)
    assert xids[0]["process"] == "all_reduce_perf"


def test_raw_dmesg_has_uptime_but_no_timestamp_and_ignores_since():
    xids = parse_kernel_log(_log("dmesg_raw.log"), since=4e9)["xids"]
    assert len(xids) == 1
    assert xids[0]["timestamp"] is None and xids[0]["uptime_s"] == pytest.approx(4377.512)


def test_since_drops_older_records():
    cut = datetime(2026, 3, 2, 10, 0, tzinfo=timezone.utc).timestamp()
    xids = parse_kernel_log(_log("journal_short_iso.log"), since=cut)["xids"]
    assert [x["xid"] for x in xids] == [13, 13, 48, 63]


@pytest.mark.parametrize("text,expected", [
    ("boot", None), ("", None), (None, None), ("all", None),
    ("90m", 1000000.0 - 5400), ("24h", 1000000.0 - 86400), ("7d", 1000000.0 - 7 * 86400), ("3600", 1000000.0 - 3600),
    ("@123456", 123456.0), ("1970-01-02T00:00:00+00:00", 86400.0), ("1970-01-02T00:00:00Z", 86400.0),
    ("1970-01-02T01:00:00+0100", 86400.0), ("1970-01-02 00:00:00", 86400.0),
])
def test_parse_since(text, expected):
    assert parse_since(text, now=1000000.0) == expected


@pytest.mark.parametrize("text", ["yesterday", "-5h", "@x", True, "2026-13-45T00:00:00"])
def test_bad_since_names_the_option(text):
    with pytest.raises((KernelLogError, ValueError)) as info:
        parse_since(text, now=0.0)
    if isinstance(info.value, KernelLogError):
        assert info.value.field == "kernel_log_since"


@pytest.mark.parametrize("text", ["2024-02-30T00:00:00", "2024-01-01T00:00:00+99:00", "2024-01-01T00:00:00-2500"])
def test_impossible_since_time_stamp_is_a_kernel_log_error(text):
    with pytest.raises(KernelLogError) as info:
        parse_since(text, now=0.0)
    assert info.value.field == "kernel_log_since" and text in str(info.value)


def test_journal_json_out_of_range_time_stamp_is_unknown():
    line = json.dumps({"MESSAGE": "NVRM: Xid (PCI:0000:9a:00): 74, pid=1, name=x, NVLink", "__REALTIME_TIMESTAMP": "999999999999999999999"})
    xids = parse_kernel_log(line + "\n")["xids"]
    assert [x["xid"] for x in xids] == [74] and xids[0]["timestamp"] is None


def test_pci_bus_id_spellings_map_to_the_same_key():
    assert pci_key("00000000:3B:00.0") == pci_key("0000:3b:00") == pci_key("PCI:0000:3b:00") == (0, 0x3B, 0)
    assert pci_key("3b:00.0") == (0, 0x3B, 0)
    assert pci_key("0001:3b:00") != pci_key("0000:3b:00")
    assert pci_key("nonsense") is None and pci_key(None) is None
    assert canonical_bus_id("0000:ab:00") == "00000000:AB:00.0"


# ----------------------------------------------------------------------------- bounds


def test_line_and_record_bounds_keep_the_newest():
    lines = ["2026-03-02T09:00:%02d+0000 h kernel: NVRM: Xid (PCI:0000:18:00): %d, pid=1, name=a, m" % (i, 13 + i % 2)
             for i in range(50)]
    parsed = parse_kernel_log("\n".join(lines), max_lines=20)
    assert parsed["truncated"] is True and parsed["lines"] == 20 and len(parsed["xids"]) == 20
    assert parsed["xids"][-1]["timestamp"] == "2026-03-02T09:00:49+00:00"
    parsed = parse_kernel_log("\n".join(lines), max_xids=5)
    assert parsed["dropped"] == 45 and len(parsed["xids"]) == 5
    assert parsed["xids"][0]["timestamp"] == "2026-03-02T09:00:45+00:00"


def test_file_larger_than_the_byte_limit_keeps_its_tail(tmp_path):
    path = tmp_path / "big.log"
    noise = "2026-03-02T09:00:00+0000 h kernel: eth0: noise line\n" * 2000
    path.write_text(noise + "2026-03-02T09:30:00+0000 h kernel: NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.\n",
                    encoding="utf-8")
    log = read_kernel_log("auto", log_file=str(path), max_bytes=4096)
    assert log["status"] == "ok" and log["source"] == "file" and log["truncated"] is True
    assert [x["xid"] for x in log["xids"]] == [79]
    assert log["lines"] < 100


def test_missing_log_file_names_the_file(tmp_path):
    with pytest.raises(KernelLogError) as info:
        read_kernel_log("auto", log_file=str(tmp_path / "nope.log"))
    assert info.value.file.endswith("nope.log")


# ----------------------------------------------------------------------------- reading (commands are argv lists)


def _fake_run(answers, calls):
    def run(argv, timeout_s, max_bytes):
        calls.append((list(argv), timeout_s, max_bytes))
        return answers[os.path.basename(argv[0])]
    return run


def _find(name):
    return "/usr/bin/" + name


def test_commands_are_argument_lists():
    assert journal_command("/usr/bin/journalctl", 1700000000.7, 500) == [
        "/usr/bin/journalctl", "-k", "-q", "--no-pager", "-o", "short-iso", "-n", "500", "--since", "@1700000000"]
    assert journal_command("journalctl", None)[-2:] != ["--since", "@0"]
    assert dmesg_command("/bin/dmesg") == ["/bin/dmesg", "--time-format", "iso"]


def test_auto_prefers_the_journal():
    calls = []
    log = read_kernel_log("auto", since=0.0, find=_find,
                          run=_fake_run({"journalctl": (0, _log("journal_short_iso.log"), "")}, calls))
    assert log["status"] == "ok" and log["source"] == "journal" and len(log["xids"]) == 5
    assert calls[0][0][:2] == ["/usr/bin/journalctl", "-k"] and calls[0][1] == 30.0
    assert log["since"] == "1970-01-01T00:00:00+00:00"


def test_auto_falls_back_to_dmesg_when_the_journal_is_not_permitted():
    calls = []
    answers = {"journalctl": (1, "", "No journal files were opened due to insufficient permissions."),
               "dmesg": (0, _log("dmesg_iso.log"), "")}
    log = read_kernel_log("auto", find=_find, run=_fake_run(answers, calls))
    assert [os.path.basename(c[0][0]) for c in calls] == ["journalctl", "dmesg"]
    assert log["source"] == "dmesg" and [x["xid"] for x in log["xids"]] == [79, 119, 94]


def test_dmesg_not_permitted_is_a_clear_non_fatal_message():
    answers = {"dmesg": (1, "", "dmesg: read kernel buffer failed: Operation not permitted\n")}
    log = read_kernel_log("dmesg", find=_find, run=_fake_run(answers, []))
    assert log["status"] == "unavailable" and log["xids"] == []
    assert "dmesg is not permitted" in log["message"] and "Operation not permitted" in log["message"]
    assert "become: true" in log["message"] and "dmesg_restrict" in log["message"]


def test_missing_tools_and_timeouts_are_unavailable_not_errors():
    log = read_kernel_log("auto", find=lambda name: None, run=_fake_run({}, []))
    assert log["status"] == "unavailable" and "journalctl not found" in log["message"] and "dmesg not found" in log["message"]
    log = read_kernel_log("journal", find=_find, run=_fake_run({"journalctl": (None, "", "")}, []), timeout_s=2)
    assert log["status"] == "unavailable" and "timed out after 2 s" in log["message"]
    log = read_kernel_log("journal", find=_find, run=_fake_run({"journalctl": (2, "", "Failed to parse timestamp")}, []))
    assert "exited with 2" in log["message"]


def test_off_and_bad_source():
    assert read_kernel_log("off")["status"] == "off"
    with pytest.raises(KernelLogError) as info:
        read_kernel_log("syslog")
    assert info.value.field == "kernel_log"


def test_real_subprocess_with_a_fake_dmesg(tmp_path, monkeypatch):
    fake = tmp_path / "dmesg"
    argv_file = tmp_path / "argv"
    fake.write_text("#!/bin/sh\nprintf '%%s\\n' \"$@\" > %s\ncat %s\n" % (argv_file, os.path.join(LOGS, "dmesg_iso.log")),
                    encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ.get("PATH", os.defpath))
    log = read_kernel_log("dmesg")
    assert argv_file.read_text(encoding="utf-8").split() == ["--time-format", "iso"]
    assert log["status"] == "ok" and [x["xid"] for x in log["xids"]] == [79, 119, 94]


def test_real_subprocess_timeout(tmp_path, monkeypatch):
    fake = tmp_path / "dmesg"
    fake.write_text("#!/bin/sh\nexec sleep 20\n", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ.get("PATH", os.defpath))
    log = read_kernel_log("dmesg", timeout_s=0.5)
    assert log["status"] == "unavailable" and "timed out" in log["message"]


# ----------------------------------------------------------------------------- mapping and evaluation


def test_records_map_to_gpu_index_and_uuid_by_bus_id():
    reading = _reading()
    attach_to_reading(reading, parse_kernel_log(_log("journal_short_iso.log")) | {"status": "ok", "source": "journal"})
    by_index = {g["index"]: g for g in reading["gpus"]}
    assert [x["xid"] for x in by_index[2]["kernel_xids"]] == [13, 13]
    assert by_index[2]["kernel_xids"][0]["uuid"] == "GPU-3f1c0a72-5d1c-4e2a-9b7f-a1b2c3d40002"
    assert [x["xid"] for x in by_index[3]["kernel_xids"]] == [48, 63]
    assert by_index[5]["kernel_xids"][0]["gpu_index"] == 5
    assert reading["kernel_xid_events"] == [] and reading["kernel_log"]["xid_count"] == 5


def test_lost_gpu_xid_goes_to_the_host_with_the_uuid_from_the_log():
    reading = _reading("h100x8_xid79.json")  # GPU 5 lost: NVML has no bus id for it
    log = parse_kernel_log(_log("journal_short_iso.log"))
    log["xids"] = [x for x in log["xids"] if x["xid"] == 79]
    attach_to_reading(reading, dict(log, status="ok", source="journal"))
    stray = reading["kernel_xid_events"]
    assert len(stray) == 1 and stray[0]["gpu_index"] is None
    assert stray[0]["uuid"] == "GPU-3f1c0a75-5d1c-4e2a-9b7f-a1b2c3d40005"
    result = evaluate(reading, expected_count=8)
    host_xid = [c for c in result["checks"] if c["check"] == "xid_79" and c["scope"] == "host"]
    assert host_xid and host_xid[0]["status"] == "fail" and "00000000:AB:00.0" in host_xid[0]["reason"]
    assert host_xid[0]["last_seen"] == "2026-03-02T09:12:40+00:00"


def test_evaluation_of_logged_xids():
    reading = _reading()
    attach_to_reading(reading, dict(parse_kernel_log(_log("journal_short_iso.log")), status="ok", source="journal"))
    result = evaluate(reading, expected_count=8)
    checks = {(c["check"], c["gpu_index"]): c for c in result["checks"]}
    app = checks[("xid_13", 2)]
    assert app["status"] == "warn" and app["count"] == 2 and app["sources"] == ["kernel_log"]
    assert "in the kernel log (last 2026-03-02T10:01:02+00:00)" in app["reason"]
    assert checks[("xid_48", 3)]["status"] == "fail"
    assert checks[("xid_79", 5)]["status"] == "fail"
    assert result["verdict"] == "fail"
    assert checks[("kernel_log", None)]["status"] == "ok" and "5 XID record(s)" in checks[("kernel_log", None)]["reason"]


def test_an_xid_seen_by_nvml_and_logged_is_counted_once():
    reading = _reading()
    reading["gpus"][0]["xids"] = [79]
    log = parse_kernel_log(_log("dmesg_iso.log"))
    attach_to_reading(reading, dict(log, status="ok", source="dmesg"))
    check = [c for c in evaluate(reading)["checks"] if c["check"] == "xid_79" and c["gpu_index"] == 0][0]
    assert check["count"] == 1 and check["sources"] == ["nvml", "kernel_log"]


def test_unavailable_log_is_an_ok_check_with_the_reason():
    reading = _reading()
    attach_to_reading(reading, {"status": "unavailable", "source": "dmesg", "message": "kernel log not read: dmesg is not "
                                "permitted for this user", "xids": []})
    check = [c for c in evaluate(reading)["checks"] if c["check"] == "kernel_log"][0]
    assert check["status"] == "ok" and "dmesg is not permitted" in check["reason"]


# ----------------------------------------------------------------------------- property: noise never hides or fakes an XID

_NOISE = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
                 max_size=80).filter(lambda s: "NVRM: Xid (" not in s)
_XID = st.tuples(st.integers(min_value=1, max_value=200), st.integers(min_value=0, max_value=255),
                 st.integers(min_value=0, max_value=31), st.integers(min_value=0, max_value=10 ** 6),
                 st.sampled_from(["pid", "pid_name", "unknown", "none"]), st.booleans(), st.sampled_from(["journal", "dmesg"]))
_BASE = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _xid_line(spec):
    code, bus, dev, offset_s, variant, pci_tag, fmt = spec
    stamp = _BASE + timedelta(seconds=offset_s)
    extra = {"pid": "pid=4242, ", "pid_name": "pid=4242, name=python3, ", "unknown": "pid='<unknown>', name=<unknown>, ",
             "none": ""}[variant]
    body = "NVRM: Xid (%s0000:%02x:%02x): %d, %sSome message, with commas: and colons." % (
        "PCI:" if pci_tag else "", bus, dev, code, extra)
    if fmt == "journal":
        return stamp.strftime("%Y-%m-%dT%H:%M:%S+0000") + " gpu-node kernel: " + body
    return stamp.strftime("%Y-%m-%dT%H:%M:%S,000000+00:00") + " " + body


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(_NOISE.map(lambda s: ("noise", s)), _XID.map(lambda x: ("xid", x))), max_size=40))
def test_noise_interleaved_with_xid_lines(items):
    lines = [_xid_line(value) if kind == "xid" else value for kind, value in items]
    expected = [value for kind, value in items if kind == "xid"]
    found = parse_kernel_log("\n".join(lines))["xids"]
    assert [x["xid"] for x in found] == [spec[0] for spec in expected]
    assert [x["pci_bus_id"] for x in found] == ["00000000:%02X:%02X.0" % (spec[1], spec[2]) for spec in expected]
    assert [x["timestamp"] for x in found] == [(_BASE + timedelta(seconds=spec[3])).isoformat() for spec in expected]
    assert [x["pid"] for x in found] == [4242 if spec[4] in ("pid", "pid_name") else None for spec in expected]
    assert all(x["message"] == "Some message, with commas: and colons." for x in found)


# ----------------------------------------------------------------------------- the module option


def _run_module(tmp_path, args, path=None):
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, ".build", "collections"))
    if path:
        env["PATH"] = path
    proc = subprocess.run([sys.executable, MODULE, str(args_file)], capture_output=True, text=True, env=env, timeout=60,
                          check=False)
    return json.loads(proc.stdout)


def test_module_reads_a_saved_kernel_log(tmp_path):
    out = _run_module(tmp_path, {"recorded_readings": os.path.join(NVML_FIXTURES, "h100x8_healthy.json"),
                                 "kernel_log_file": os.path.join(LOGS, "journal_short_iso.log"),
                                 "kernel_log_since": "2026-03-02T10:00:00+00:00", "return_readings": True})
    assert out["verdict"] == "fail"
    bad = sorted((c["check"], c["gpu_index"]) for c in out["checks"] if c["status"] != "ok")
    assert bad == [("xid_13", 2), ("xid_48", 3)]  # XID 63 (row remap recorded) is informational
    assert [c["status"] for c in out["checks"] if c["check"] == "xid_63"] == ["ok"]
    assert out["readings"]["kernel_log"]["source"] == "file"


def test_module_dmesg_not_permitted_warns_and_goes_on(tmp_path):
    fake = tmp_path / "dmesg"
    fake.write_text("#!/bin/sh\necho 'dmesg: read kernel buffer failed: Operation not permitted' >&2\nexit 1\n", encoding="utf-8")
    fake.chmod(0o755)
    out = _run_module(tmp_path, {"recorded_readings": os.path.join(NVML_FIXTURES, "h100x8_healthy.json"),
                                 "kernel_log": "dmesg", "expected_gpu_count": 8},
                      path=str(tmp_path) + os.pathsep + os.environ.get("PATH", os.defpath))
    assert not out.get("failed") and out["verdict"] == "ok"
    assert "dmesg is not permitted" in json.dumps(out["warnings"])  # ansible-core may wrap warnings in objects
    check = [c for c in out["checks"] if c["check"] == "kernel_log"][0]
    assert check["status"] == "ok" and "Operation not permitted" in check["reason"]


def test_module_rejects_a_bad_since(tmp_path):
    out = _run_module(tmp_path, {"recorded_readings": os.path.join(NVML_FIXTURES, "h100x8_healthy.json"),
                                 "kernel_log_since": "last tuesday"})
    assert out["failed"] and "kernel_log_since" in out["msg"]
