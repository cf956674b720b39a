# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""GPU health evaluation: a reading (see :mod:`nvml_reader`) -> checks and a host verdict.

:func:`evaluate` runs one set of checks per GPU (NVML access, temperature, power, clock
throttling, ECC mode and counters, retired pages, row remapping, PCIe link, NVLink, XID events)
and per host (GPU count, unattributed XIDs, optional DCGM diagnostic).  Every check is a dict::

    {"check", "scope": "gpu"|"host", "gpu_index", "status": "ok"|"warn"|"fail",
     "reason", "action", "hint", ...}

``action`` is one of :data:`fault_catalog.ACTIONS`; the host's ``recommended_action`` is the
strongest action of its non-ok checks and its ``verdict`` the worst status.  Application-class
XIDs (13, 31, 43, 45, ...) give at most ``warn`` (see :func:`fault_catalog.condemns_node`).
Thresholds come from :data:`DEFAULT_POLICY`, overridable per key (:func:`validate_policy`).
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.dcgm_diag import diag_checks
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.fault_catalog import (
    condemns_node, lookup_xid, strongest_action,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.errors import GpuError

STATUSES = ("ok", "warn", "fail")
STATUS_RANK = {name: rank for rank, name in enumerate(STATUSES)}

#: Default thresholds.  Temperatures in degrees C, counts are absolute counter values.
DEFAULT_POLICY: Dict[str, Any] = {
    "temperature_warn_c": 85,
    "temperature_fail_c": 92,
    "power_over_limit_pct": 5.0,
    "ecc_disabled": "warn",
    "ecc_volatile_sbe_warn": 1000,
    "ecc_aggregate_sbe_warn": 10000,
    "ecc_aggregate_dbe_warn": 1,
    "retired_pages_fail": 60,
    "pcie_gen_downgrade": "warn",
    "pcie_width_downgrade": "fail",
    "pcie_replay_warn": 100,
    "nvlink_expected_active": None,
    "nvlink_crc_warn": 100,
    "nvlink_replay_warn": 100,
    "nvlink_recovery_warn": 1,
    "throttle_fail": ["hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"],
    "throttle_warn": ["sw_thermal_slowdown"],
    "application_xid_status": "warn",
    "expected_gpu_model": None,
    "gpu_count_above_expected": "warn",
}
_STATUS_KEYS = ("ecc_disabled", "pcie_gen_downgrade", "pcie_width_downgrade", "application_xid_status",
                "gpu_count_above_expected")
_LIST_KEYS = ("throttle_fail", "throttle_warn")
_OPTIONAL_KEYS = ("nvlink_expected_active", "expected_gpu_model")


class GpuHealthPolicyError(GpuError):
    """A threshold/policy value is unknown or has the wrong type (names the key and value)."""


def validate_policy(overrides: Optional[Mapping[str, Any]] = None, source: str = "thresholds") -> Dict[str, Any]:
    """:data:`DEFAULT_POLICY` updated with ``overrides``; unknown keys and bad values raise."""
    policy = dict(DEFAULT_POLICY)
    for key, value in (overrides or {}).items():
        field = "%s.%s" % (source, key)
        if key not in DEFAULT_POLICY:
            raise GpuHealthPolicyError("unknown threshold (known: %s)" % ", ".join(sorted(DEFAULT_POLICY)), field=field, value=key)
        if value is None and key in _OPTIONAL_KEYS:
            policy[key] = None
            continue
        if key in _STATUS_KEYS:
            if value not in STATUSES:
                raise GpuHealthPolicyError("must be one of ok, warn, fail", field=field, value=value)
        elif key in _LIST_KEYS:
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                raise GpuHealthPolicyError("must be a list of clock event reason names", field=field, value=value)
            value = list(value)
        elif key == "expected_gpu_model":
            if not isinstance(value, str) or not value.strip():
                raise GpuHealthPolicyError("must be a non-empty string", field=field, value=value)
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise GpuHealthPolicyError("must be a non-negative number", field=field, value=value)
        policy[key] = value
    if policy["temperature_fail_c"] < policy["temperature_warn_c"]:
        raise GpuHealthPolicyError("temperature_fail_c must not be below temperature_warn_c",
                                   field="%s.temperature_fail_c" % source, value=policy["temperature_fail_c"])
    return policy


def gpu_label(gpu: Mapping[str, Any]) -> str:
    """``GPU 3 (GPU-uuid, serial 1654..., 00000000:1B:00.0)`` with what is known."""
    parts = [str(gpu[key]) for key in ("uuid",) if gpu.get(key)]
    if gpu.get("serial"):
        parts.append("serial %s" % gpu["serial"])
    if gpu.get("pci_bus_id"):
        parts.append(str(gpu["pci_bus_id"]))
    return "GPU %s%s" % (gpu.get("index"), " (%s)" % ", ".join(parts) if parts else "")


class _Checks:
    """Collects checks for one GPU (or the host)."""

    def __init__(self, gpu: Optional[Mapping[str, Any]]) -> None:
        self.gpu = gpu
        self.items: List[Dict[str, Any]] = []

    def add(self, check: str, status: str, reason: str, action: str = "none", hint: str = "", **extra: Any) -> None:
        item: Dict[str, Any] = {"check": check, "scope": "gpu" if self.gpu is not None else "host",
                                "gpu_index": self.gpu.get("index") if self.gpu is not None else None,
                                "status": status, "reason": reason, "action": action if status != "ok" else "none",
                                "hint": hint}
        if self.gpu is not None and self.gpu.get("uuid"):
            item["uuid"] = self.gpu["uuid"]
        item.update(extra)
        self.items.append(item)


def _unsupported(gpu: Mapping[str, Any], key: str) -> bool:
    return key in (gpu.get("unsupported") or [])


def _check_access(c: _Checks, gpu: Mapping[str, Any], label: str) -> bool:
    errors = gpu.get("errors") or {}
    if not errors:
        c.add("nvml_access", "ok", "%s: all NVML queries answered" % label)
        return True
    lost = [key for key, name in errors.items() if name == "NVML_ERROR_GPU_IS_LOST"]
    if "handle" in errors or lost:
        c.add("nvml_access", "fail", "%s: NVML reports %s (%s)" % (label, errors.get("handle") or "NVML_ERROR_GPU_IS_LOST",
                                                                   ", ".join(sorted(errors))),
              "reboot", "The GPU is not reachable (fallen off the bus?): drain and power-cycle the node; "
              "if it recurs, reseat or replace the GPU.", errors=dict(errors))
        return "handle" not in errors
    c.add("nvml_access", "warn", "%s: NVML errors for %s" % (label, ", ".join("%s=%s" % kv for kv in sorted(errors.items()))),
          "contact_support", "Some NVML queries failed; check permissions and the driver (nvidia-smi -q).", errors=dict(errors))
    return True


def _check_identity(c: _Checks, gpu: Mapping[str, Any], label: str, policy: Mapping[str, Any]) -> None:
    expected = policy.get("expected_gpu_model")
    if not expected:
        return
    name = gpu.get("name") or ""
    if expected.lower() in name.lower():
        c.add("gpu_model", "ok", "%s is a %s" % (label, name))
    else:
        c.add("gpu_model", "fail", "%s is %r, expected a %s" % (label, name or "unknown model", expected), "contact_support",
              "The node does not carry the GPU model this cluster expects.", value=name)


def _check_temperature(c: _Checks, gpu: Mapping[str, Any], label: str, policy: Mapping[str, Any]) -> None:
    temp = gpu.get("temperature_c")
    if temp is None:
        c.add("temperature", "ok", "%s: temperature not reported" % label)
        return
    slowdown = gpu.get("temperature_slowdown_c")
    hint = "Verify cooling: airflow, fans, heat sinks, inlet temperature."
    if temp >= policy["temperature_fail_c"] or (slowdown and temp >= slowdown):
        limit = policy["temperature_fail_c"] if not slowdown else min(policy["temperature_fail_c"], slowdown)
        c.add("temperature", "fail", "%s: temperature %s C reaches the limit %s C" % (label, temp, limit),
              "contact_support", hint, value=temp)
    elif temp >= policy["temperature_warn_c"]:
        c.add("temperature", "warn", "%s: temperature %s C is above %s C" % (label, temp, policy["temperature_warn_c"]),
              "contact_support", hint, value=temp)
    else:
        c.add("temperature", "ok", "%s: temperature %s C" % (label, temp), value=temp)


def _check_power(c: _Checks, gpu: Mapping[str, Any], label: str, policy: Mapping[str, Any]) -> None:
    power, limit = gpu.get("power_w"), gpu.get("power_limit_w")
    if power is None:
        c.add("power", "ok", "%s: power draw not reported" % label)
        return
    if limit and power > limit * (1 + policy["power_over_limit_pct"] / 100.0):
        c.add("power", "warn", "%s: power draw %.1f W exceeds the enforced limit %.1f W" % (label, power, limit),
              "contact_support", "Check the power supply and power capping settings.", value=power)
    else:
        c.add("power", "ok", "%s: power draw %.1f W%s" % (label, power, " of %.1f W" % limit if limit else ""), value=power)


def _check_throttle(c: _Checks, gpu: Mapping[str, Any], label: str, policy: Mapping[str, Any]) -> None:
    names = list(gpu.get("clock_event_reason_names") or [])
    if gpu.get("clock_event_reasons") is None:
        c.add("clock_throttle", "ok", "%s: clock event reasons not reported" % label)
        return
    failing = [n for n in names if n in policy["throttle_fail"]]
    warning = [n for n in names if n in policy["throttle_warn"]]
    thermal = any("thermal" in n for n in failing + warning)
    hint = ("Verify cooling: airflow, fans, heat sinks, inlet temperature." if thermal
            else "Check the power supply, power brake signal and board power delivery.")
    if failing:
        c.add("clock_throttle", "fail", "%s: clocks throttled by %s" % (label, ", ".join(failing + warning)),
              "contact_support", hint, value=names)
    elif warning:
        c.add("clock_throttle", "warn", "%s: clocks throttled by %s" % (label, ", ".join(warning)), "contact_support", hint, value=names)
    else:
        c.add("clock_throttle", "ok", "%s: no harmful clock throttling%s" % (label, " (%s)" % ", ".join(names) if names else ""),
              value=names)


def _check_ecc(c: _Checks, gpu: Mapping[str, Any], label: str, policy: Mapping[str, Any]) -> None:
    mode = gpu.get("ecc_mode_current")
    if mode is False:
        status = policy["ecc_disabled"]
        c.add("ecc_mode", status, "%s: ECC is disabled" % label, "reboot",
              "Enable ECC (nvidia-smi -i <gpu> -e 1) and reset the GPU or reboot.", value=False)
    elif mode is True:
        c.add("ecc_mode", "ok", "%s: ECC enabled" % label, value=True)
    vol_dbe, vol_sbe = gpu.get("ecc_volatile_dbe"), gpu.get("ecc_volatile_sbe")
    agg_dbe, agg_sbe = gpu.get("ecc_aggregate_dbe"), gpu.get("ecc_aggregate_sbe")
    if all(v is None for v in (vol_dbe, vol_sbe, agg_dbe, agg_sbe)):
        c.add("ecc_errors", "ok", "%s: ECC counters not reported" % label)
        return
    counts = {"volatile_sbe": vol_sbe, "volatile_dbe": vol_dbe, "aggregate_sbe": agg_sbe, "aggregate_dbe": agg_dbe}
    if vol_dbe:
        c.add("ecc_errors", "fail", "%s: %d uncorrectable (double-bit) ECC error(s) since the last driver load" % (label, vol_dbe),
              "reset_gpu", "Drain the GPU and reset it (or reboot); if DBEs recur, contact support (XID 48).", value=counts)
    elif agg_dbe is not None and agg_dbe >= policy["ecc_aggregate_dbe_warn"] > 0:
        c.add("ecc_errors", "warn", "%s: %d uncorrectable ECC error(s) over the GPU's lifetime" % (label, agg_dbe),
              "contact_support", "Watch the row remapper; repeated uncorrectable errors may need an RMA.", value=counts)
    elif vol_sbe is not None and vol_sbe >= policy["ecc_volatile_sbe_warn"]:
        c.add("ecc_errors", "warn", "%s: %d correctable ECC errors since the last driver load" % (label, vol_sbe),
              "none", "High single-bit error rate; watch for XID 92/63 and row remapping.", value=counts)
    elif agg_sbe is not None and agg_sbe >= policy["ecc_aggregate_sbe_warn"]:
        c.add("ecc_errors", "warn", "%s: %d correctable ECC errors over the GPU's lifetime" % (label, agg_sbe),
              "none", "Memory is aging; watch row remapping.", value=counts)
    else:
        c.add("ecc_errors", "ok", "%s: no uncorrectable ECC errors" % label, value=counts)


def _check_retired_pages(c: _Checks, gpu: Mapping[str, Any], label: str, policy: Mapping[str, Any]) -> None:
    sbe, dbe, pending = gpu.get("retired_pages_sbe"), gpu.get("retired_pages_dbe"), gpu.get("retired_pages_pending")
    if sbe is None and dbe is None and pending is None:
        c.add("retired_pages", "ok", "%s: page retirement not supported (row remapping is used instead)" % label
              if _unsupported(gpu, "retired_pages_sbe") else "%s: retired pages not reported" % label)
        return
    total = (sbe or 0) + (dbe or 0)
    value = {"sbe": sbe, "dbe": dbe, "pending": pending}
    if total >= policy["retired_pages_fail"]:
        c.add("retired_pages", "fail", "%s: %d retired pages (limit %d)" % (label, total, policy["retired_pages_fail"]),
              "replace", "The GPU has retired too many memory pages; replace it (RMA).", value=value)
    elif pending:
        c.add("retired_pages", "fail", "%s: page retirement pending" % label, "reset_gpu",
              "Reset the GPU (or reboot) so the pending page retirement takes effect.", value=value)
    else:
        c.add("retired_pages", "ok", "%s: %d retired pages, none pending" % (label, total), value=value)


def _check_row_remap(c: _Checks, gpu: Mapping[str, Any], label: str) -> None:
    rows = gpu.get("remapped_rows")
    if not isinstance(rows, Mapping):
        c.add("row_remap", "ok", "%s: row remapping not supported" % label if _unsupported(gpu, "remapped_rows")
              else "%s: row remapping not reported" % label)
        return
    if rows.get("failure"):
        c.add("row_remap", "fail", "%s: row remapping failed (no spare rows left)" % label, "replace",
              "A row remapping failure means the GPU memory cannot be repaired; replace the GPU (RMA).", value=dict(rows))
    elif rows.get("pending"):
        c.add("row_remap", "fail", "%s: row remapping pending (%s uncorrectable, %s correctable rows)"
              % (label, rows.get("uncorrectable"), rows.get("correctable")), "reset_gpu",
              "Reset the GPU (or reboot) so the pending row remap is applied.", value=dict(rows))
    else:
        c.add("row_remap", "ok", "%s: %s uncorrectable and %s correctable rows remapped, none pending"
              % (label, rows.get("uncorrectable", 0), rows.get("correctable", 0)), value=dict(rows))


def _check_pcie(c: _Checks, gpu: Mapping[str, Any], label: str, policy: Mapping[str, Any]) -> None:
    gen, gen_max = gpu.get("pcie_gen"), gpu.get("pcie_gen_max")
    width, width_max = gpu.get("pcie_width"), gpu.get("pcie_width_max")
    if gen is None and width is None:
        c.add("pcie_link", "ok", "%s: PCIe link not reported" % label)
        return
    value = {"gen": gen, "gen_max": gen_max, "width": width, "width_max": width_max}
    link = "Gen%s x%s (max Gen%s x%s)" % (gen, width, gen_max, width_max)
    idle = "gpu_idle" in (gpu.get("clock_event_reason_names") or [])
    findings = []
    status = "ok"
    if width is not None and width_max and width < width_max:
        findings.append("width x%s below x%s" % (width, width_max))
        status = _worse(status, policy["pcie_width_downgrade"])
    if gen is not None and gen_max and gen < gen_max:
        if idle and not findings:
            findings.append("generation Gen%s below Gen%s while idle (power saving)" % (gen, gen_max))
        else:
            findings.append("generation Gen%s below Gen%s" % (gen, gen_max))
            status = _worse(status, policy["pcie_gen_downgrade"])
    replay = gpu.get("pcie_replay_count")
    if replay is not None and replay >= policy["pcie_replay_warn"] > 0:
        findings.append("%s PCIe replays" % replay)
        status = _worse(status, "warn")
    if status == "ok":
        c.add("pcie_link", "ok", "%s: PCIe link %s%s" % (label, link, ("; " + "; ".join(findings)) if findings else ""), value=value)
    else:
        c.add("pcie_link", status, "%s: PCIe link degraded, %s: %s" % (label, link, "; ".join(findings)), "contact_support",
              "Reseat the GPU/riser and check the slot and cables; a link that stays degraded needs hardware service.",
              value=value)


def _check_nvlink(c: _Checks, gpu: Mapping[str, Any], label: str, policy: Mapping[str, Any]) -> None:
    links = gpu.get("nvlink")
    if not links:
        c.add("nvlink", "ok", "%s: no NVLink reported" % label)
        return
    active = [link["link"] for link in links if link.get("active")]
    inactive = [link["link"] for link in links if not link.get("active")]
    expected = policy.get("nvlink_expected_active")
    value: Dict[str, Any] = {"active": len(active), "links": len(links), "down": inactive}
    if (expected is not None and len(active) < expected) or (expected is None and inactive):
        want = expected if expected is not None else len(links)
        down = ", ".join(str(n) for n in inactive) or "none"
        c.add("nvlink", "fail", "%s: %d of %d NVLinks active, down: %s" % (label, len(active), want, down),
              "reset_gpu", "Reset the GPU (or reboot); if the link stays down check the NVSwitch/peer and contact support (XID 74).",
              value=value)
        return
    totals = {name: sum(int(link.get(name) or 0) for link in links) for name in ("replay", "recovery", "crc_flit", "crc_data")}
    value["errors"] = totals
    noisy = []
    if totals["crc_flit"] + totals["crc_data"] >= policy["nvlink_crc_warn"] > 0:
        noisy.append("%d CRC errors" % (totals["crc_flit"] + totals["crc_data"]))
    if totals["replay"] >= policy["nvlink_replay_warn"] > 0:
        noisy.append("%d replays" % totals["replay"])
    if totals["recovery"] >= policy["nvlink_recovery_warn"] > 0:
        noisy.append("%d recoveries" % totals["recovery"])
    if noisy:
        c.add("nvlink", "warn", "%s: %d NVLinks active with errors: %s" % (label, len(active), ", ".join(noisy)), "reset_gpu",
              "Rising NVLink error counters point at a marginal link; reset the GPU and watch the counters.", value=value)
    else:
        c.add("nvlink", "ok", "%s: %d NVLinks active, no significant errors" % (label, len(active)), value=value)


def _check_xids(c: _Checks, xids: List[int], label: str, policy: Mapping[str, Any],
                kernel: Optional[List[Mapping[str, Any]]] = None) -> None:
    """One check per XID code seen by NVML (``xids``) or in the kernel log (``kernel`` records, see :mod:`kernel_log`).

    An XID that NVML delivered during the listening window is also in the kernel log, so a code's count is the larger
    of the two counts, not their sum.
    """
    kernel = list(kernel or [])
    logged: Dict[int, List[Mapping[str, Any]]] = {}
    for record in kernel:
        code = record.get("xid")
        if isinstance(code, int) and not isinstance(code, bool):
            logged.setdefault(code, []).append(record)
    if not xids and not logged:
        c.add("xid", "ok", "%s: no XID events seen" % label)
        return
    for code in sorted(set(xids) | set(logged)):
        entry = lookup_xid(code)
        records = logged.get(code, [])
        seen = max(xids.count(code), len(records))
        stamps = sorted(str(r["timestamp"]) for r in records if r.get("timestamp"))
        where = ""
        if records:
            where = ", in the kernel log" + (" (last %s)" % stamps[-1] if stamps else "")
        text = "%s: XID %d %s (%s)%s%s" % (label, code, entry.mnemonic, entry.name, " x%d" % seen if seen > 1 else "", where)
        if condemns_node(entry):
            status = "fail"
        elif entry.application_class:
            status = policy["application_xid_status"] if policy["application_xid_status"] != "fail" else "warn"
        elif entry.severity == "info":
            status = "ok"
        else:
            status = "warn"
        hint = "Application-class XID: debug the workload; the node stays in service." if entry.application_class else (
            "If it recurs: %s." % entry.follow_up.replace("_", " ") if entry.follow_up != "none" else "")
        extra: Dict[str, Any] = {}
        if records:
            sources = (["nvml"] if code in xids else []) + ["kernel_log"]
            extra = {"sources": sources, "first_seen": stamps[0] if stamps else None, "last_seen": stamps[-1] if stamps else None,
                     "pci_bus_ids": sorted({str(r.get("pci_bus_id")) for r in records if r.get("pci_bus_id")})}
        c.add("xid_%d" % code, status, text, entry.action, hint, fault=entry.to_dict(), count=seen, **extra)


def _check_kernel_log(c: _Checks, readings: Mapping[str, Any]) -> None:
    log = readings.get("kernel_log")
    if not isinstance(log, Mapping) or log.get("status") in (None, "off"):
        return
    host = readings.get("host", "localhost")
    if log.get("status") == "ok":
        c.add("kernel_log", "ok", "%s: kernel log read (%s, %s line(s), %s XID record(s)%s)" % (
            host, log.get("source"), log.get("lines", 0), log.get("xid_count", 0),
            ", since %s" % log["since"] if log.get("since") else ", this boot"), value=log.get("source"))
    else:
        c.add("kernel_log", "ok", "%s: %s (XIDs from before the listening window are not known)" % (host, log.get("message")),
              hint="Run gpu_health with become: true, or set kernel_log: off to skip the kernel log.", value=log.get("status"))


def _worse(a: str, b: str) -> str:
    return a if STATUS_RANK[a] >= STATUS_RANK[b] else b


def _evaluate_gpu(gpu: Mapping[str, Any], policy: Mapping[str, Any]) -> List[Dict[str, Any]]:
    label = gpu_label(gpu)
    c = _Checks(gpu)
    readable = _check_access(c, gpu, label)
    if readable:
        _check_identity(c, gpu, label, policy)
        _check_temperature(c, gpu, label, policy)
        _check_power(c, gpu, label, policy)
        _check_throttle(c, gpu, label, policy)
        _check_ecc(c, gpu, label, policy)
        _check_retired_pages(c, gpu, label, policy)
        _check_row_remap(c, gpu, label)
        _check_pcie(c, gpu, label, policy)
        _check_nvlink(c, gpu, label, policy)
    _check_xids(c, list(gpu.get("xids") or []), label, policy, list(gpu.get("kernel_xids") or []))
    return c.items


def _evaluate_host(readings: Mapping[str, Any], expected_count: Optional[int], policy: Mapping[str, Any]) -> List[Dict[str, Any]]:
    c = _Checks(None)
    host = readings.get("host", "localhost")
    count = readings.get("device_count")
    if count is None:
        count = len(readings.get("gpus") or [])
    lost = [g["index"] for g in readings.get("gpus") or [] if "handle" in (g.get("errors") or {})]
    usable = count - len(lost)
    if expected_count is None:
        c.add("gpu_count", "ok", "%s: %d GPU(s) present (no expected count given)" % (host, count), value=count)
    elif usable < expected_count:
        c.add("gpu_count", "fail", "%s: %d of %d expected GPUs usable%s" % (
            host, usable, expected_count, " (lost: %s)" % ", ".join(str(i) for i in lost) if lost else ""),
            "reboot", "A GPU is missing or unreachable: check lspci, dmesg for XID 79 and power; power-cycle the node; "
            "if it stays missing reseat or replace it.", value=usable, expected=expected_count)
    elif count > expected_count:
        c.add("gpu_count", policy["gpu_count_above_expected"], "%s: %d GPUs present, more than the %d expected"
              % (host, count, expected_count), "contact_support", "Check the expected GPU count of this node type.",
              value=count, expected=expected_count)
    else:
        c.add("gpu_count", "ok", "%s: %d of %d expected GPUs present" % (host, count, expected_count),
              value=count, expected=expected_count)
    stray = [e.get("xid") for e in readings.get("xid_events") or [] if isinstance(e.get("xid"), int)]
    logged = [e for e in readings.get("kernel_xid_events") or [] if isinstance(e, Mapping)]
    if stray or logged:
        buses = sorted({str(e.get("pci_bus_id")) for e in logged if e.get("pci_bus_id")})
        where = "%s (GPU unknown%s)" % (host, ": " + ", ".join(buses) if buses else "")
        _check_xids(c, stray, where, policy, logged)
    _check_kernel_log(c, readings)
    return c.items


def summarize(checks: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Verdict (worst status), reasons of non-ok checks and the strongest recommended action."""
    bad = [ch for ch in checks if ch["status"] != "ok"]
    verdict = "ok"
    for ch in bad:
        verdict = _worse(verdict, ch["status"])
    failing = [ch for ch in bad if ch["status"] == "fail"]
    action = strongest_action(ch["action"] for ch in (failing or bad))
    ordered = sorted(bad, key=lambda ch: -STATUS_RANK[ch["status"]])
    return {"verdict": verdict, "reasons": [ch["reason"] for ch in ordered], "recommended_action": action}


def snapshot_measurements(readings: Mapping[str, Any]) -> Dict[str, Any]:
    """Measurements in the snapshot's naming (``GPU.smi.*``, see snapshot.py) for constraint checks."""
    gpus = readings.get("gpus") or []
    models = sorted({g["name"] for g in gpus if g.get("name")})
    out: Dict[str, Any] = {}
    if readings.get("driver_version"):
        out["GPU.smi.driver"] = readings["driver_version"]
    if readings.get("cuda_driver_version"):
        out["GPU.smi.cuda-version"] = readings["cuda_driver_version"]
    count = readings.get("device_count")
    out["GPU.smi.gpu-count"] = count if count is not None else len(gpus)
    if models:
        out["GPU.smi.gpu.model"] = models[0] if len(models) == 1 else ", ".join(models)
    return out


def evaluate(readings: Mapping[str, Any], expected_count: Optional[int] = None, policy: Optional[Mapping[str, Any]] = None,
             dcgm: Optional[Mapping[str, Any]] = None, dcgm_level: Optional[int] = None) -> Dict[str, Any]:
    """Checks per GPU and per host, the host verdict and the recommended action.

    ``readings`` is a reading from :func:`nvml_reader.read_gpus`; ``policy`` is a full policy
    (:func:`validate_policy`) or overrides; ``dcgm`` an optional parsed DCGM report
    (:func:`dcgm_diag.parse_dcgm_diag`).
    """
    if expected_count is not None and (isinstance(expected_count, bool) or not isinstance(expected_count, int) or expected_count < 0):
        raise GpuHealthPolicyError("expected GPU count must be a non-negative integer", field="expected_gpu_count", value=expected_count)
    full = validate_policy(policy)
    checks: List[Dict[str, Any]] = []
    gpus_out: List[Dict[str, Any]] = []
    for gpu in readings.get("gpus") or []:
        gpu_checks = _evaluate_gpu(gpu, full)
        checks.extend(gpu_checks)
        summary = summarize(gpu_checks)
        gpus_out.append({"index": gpu.get("index"), "name": gpu.get("name"), "uuid": gpu.get("uuid"),
                         "serial": gpu.get("serial"), "pci_bus_id": gpu.get("pci_bus_id"),
                         "status": summary["verdict"], "reasons": summary["reasons"],
                         "recommended_action": summary["recommended_action"]})
    checks.extend(_evaluate_host(readings, expected_count, full))
    if dcgm is not None:
        checks.extend(diag_checks(dict(dcgm), dcgm_level))
    result = summarize(checks)
    result.update({"host": readings.get("host"), "driver_version": readings.get("driver_version"),
                   "cuda_driver_version": readings.get("cuda_driver_version"), "gpus": gpus_out, "checks": checks,
                   "measurements": snapshot_measurements(readings)})
    return result
