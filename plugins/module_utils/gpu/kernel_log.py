# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""XID errors the NVIDIA driver wrote to the kernel log, with their timestamps.

NVML only reports XIDs that happen while ``gpu_health`` listens (``xid_window_s``); the driver also logs
every XID to the kernel log, so faults that happened *before* the window are read from there.  The driver
(NVRM) writes one line per XID::

    NVRM: Xid (PCI:0000:3b:00): 79, pid=1122, GPU has fallen off the bus.                    (470 and older)
    NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python3, Graphics SM Warp Exception ...   (510 and newer)
    NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off ...   (525 and newer)
    NVRM: Xid (PCI:0000:3b:00): 48, An uncorrectable double bit error ...                   (no process)
    NVRM: Xid (0000:3b:00): 79, ...                                                          (no ``PCI:`` tag)

and, on recent drivers, ``NVRM: GPU at PCI:0000:3b:00: GPU-<uuid>`` lines that name the GPU's UUID.

Accepted inputs (one record per line, the format is detected per line):

* ``journalctl -k -o short-iso`` / ``short-iso-precise``: ``2024-05-01T12:34:56+0000 host kernel: NVRM: Xid ...``;
* ``journalctl -k -o json``: one JSON object per line (``__REALTIME_TIMESTAMP`` in microseconds, ``MESSAGE``);
* ``dmesg --time-format iso``: ``2024-05-01T12:34:56,123456+00:00 NVRM: Xid ...``;
* plain ``dmesg``: ``[ 1234.567890] NVRM: Xid ...`` (seconds since boot only, so no ``timestamp`` and no ``since`` cut-off).

:func:`parse_kernel_log` turns text into XID records ``{xid, pci_bus_id, timestamp, epoch, uptime_s, pid, process,
message, mnemonic, severity, action, application_class, line}``; :func:`read_kernel_log` runs ``journalctl`` or
``dmesg`` (argument lists, a timeout, bounded output; never a shell) or reads a saved file; :func:`attach_to_reading`
maps each record's PCI bus id to the GPU index and UUID NVML reported and stores the records in a reading.
Nothing here raises when the log cannot be read: the result says ``status: unavailable`` and why.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.errors import GpuError
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.fault_catalog import lookup_xid

SOURCES = ("auto", "dmesg", "journal", "off")
#: At most this many lines are examined (journalctl gets ``-n``; longer logs keep their newest lines).
MAX_LINES = 200000
#: At most this many bytes of log text are examined (the newest ones).
MAX_BYTES = 16 * 1024 * 1024
#: At most this many XID records are returned (the newest ones); ``dropped`` counts the rest.
MAX_XIDS = 1000
#: Wall-clock limit of ``journalctl`` / ``dmesg`` in seconds.
DEFAULT_TIMEOUT_S = 30.0
#: Default ``since``: XIDs logged during the last 24 hours.
DEFAULT_SINCE = "24h"
EXTRA_BIN_DIRS = ("/bin", "/usr/bin", "/sbin", "/usr/sbin", "/usr/local/sbin")

_BUS = r"(?P<bus>(?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)"
XID_RE = re.compile(r"NVRM: Xid \((?:PCI:)?" + _BUS + r"\): (?P<xid>\d+)(?:, ?(?P<rest>.*))?$")
GPU_AT_RE = re.compile(r"NVRM: GPU at PCI:" + _BUS + r": (?P<uuid>GPU-[0-9A-Fa-f-]{8,})")
_PID_RE = re.compile(r"^pid=(?:'(?P<q>[^']*)'|(?P<p>[^,\s]*))(?:, ?|$)")
_NAME_RE = re.compile(r"^name=(?P<name>[^,]*)(?:, ?|$)")
_ISO_RE = re.compile(r"^(?P<date>\d{4}-\d{2}-\d{2})[T ](?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d{1,9}))?"
                     r"(?P<tz>Z|[+-]\d{2}:?\d{2})?(?=\s)\s*(?P<rest>.*)$")
_UPTIME_RE = re.compile(r"^\[\s*(?P<up>\d+\.\d+)\]\s*(?P<rest>.*)$")
_DURATION_RE = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>s|m|h|d|w)?$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, None: 1}
_DENIED_WORDS = ("operation not permitted", "permission denied", "insufficient permissions", "not permitted")


class KernelLogError(GpuError):
    """A bad ``kernel_log`` / ``kernel_log_since`` option or an unreadable ``kernel_log_file``."""


# ----------------------------------------------------------------------------- small parsers


def pci_key(bus_id: Any) -> Optional[Tuple[int, int, int]]:
    """``(domain, bus, device)`` of a PCI bus id in NVML (``00000000:3B:00.0``) or NVRM (``0000:3b:00``) spelling."""
    if not isinstance(bus_id, str):
        return None
    text = bus_id.strip()
    if text.upper().startswith("PCI:"):
        text = text[4:]
    match = re.match(r"^(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})(?:\.[0-7])?$", text)
    if not match:
        return None
    return int(match.group(1) or "0", 16), int(match.group(2), 16), int(match.group(3), 16)


def canonical_bus_id(bus_id: str) -> str:
    """NVML's spelling ``00000000:3B:00.0`` of a PCI bus id (unchanged when it cannot be parsed)."""
    key = pci_key(bus_id)
    if key is None:
        return bus_id
    return "%08X:%02X:%02X.0" % key


def _iso_to_datetime(date: str, clock: str, frac: Optional[str], tz: Optional[str]) -> datetime:
    micro = int((frac or "0")[:6].ljust(6, "0"))
    value = datetime.strptime("%s %s" % (date, clock), "%Y-%m-%d %H:%M:%S").replace(microsecond=micro)
    if not tz or tz == "Z":
        return value.replace(tzinfo=timezone.utc)
    sign = 1 if tz[0] == "+" else -1
    digits = tz[1:].replace(":", "")
    offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4]))
    return value.replace(tzinfo=timezone(sign * offset))


def parse_since(since: Any, now: Optional[float] = None) -> Optional[float]:
    """Cut-off as epoch seconds: ``boot``/``all``/empty -> None; ``90m``, ``24h``, ``7d``, ``3600`` -> that long ago;
    ``@1714566896`` -> that epoch; an ISO 8601 timestamp (``2024-05-01T12:00:00+00:00``; no offset = UTC)."""
    if since is None:
        return None
    if isinstance(since, bool):
        raise KernelLogError("kernel_log_since must be a duration (24h), an ISO timestamp or 'boot'", field="kernel_log_since",
                             value=since)
    if isinstance(since, (int, float)):
        since = str(since)
    text = str(since).strip()
    if text.lower() in ("", "boot", "all"):
        return None
    current = time.time() if now is None else now
    if text.startswith("@"):
        try:
            return float(text[1:])
        except ValueError as exc:
            raise KernelLogError("kernel_log_since '@' needs epoch seconds", field="kernel_log_since", value=since) from exc
    duration = _DURATION_RE.match(text)
    if duration:
        return current - float(duration.group("n")) * _UNIT_S[duration.group("unit")]
    iso = _ISO_RE.match(text + " ")
    if iso and not iso.group("rest"):
        try:
            return _iso_to_datetime(iso.group("date"), iso.group("time"), iso.group("frac"), iso.group("tz")).timestamp()
        except (ValueError, OverflowError, OSError) as exc:
            raise KernelLogError("kernel_log_since is not a valid time stamp (%s)" % exc, field="kernel_log_since",
                                 value=since) from None
    raise KernelLogError("kernel_log_since must be 'boot', a duration such as 90m, 24h or 7d, '@<epoch seconds>' or an ISO "
                         "8601 timestamp", field="kernel_log_since", value=since)


def _split_rest(rest: str) -> Tuple[Optional[int], Optional[str], str]:
    """``pid=..., name=..., message`` -> (pid, process name, message); ``<unknown>`` values become None."""
    pid: Optional[int] = None
    name: Optional[str] = None
    match = _PID_RE.match(rest)
    if match:
        raw = match.group("q") if match.group("q") is not None else match.group("p")
        pid = int(raw) if raw and raw.isdigit() else None
        rest = rest[match.end():]
        named = _NAME_RE.match(rest)
        if named:
            value = named.group("name").strip()
            name = None if value in ("", "<unknown>") else value
            rest = rest[named.end():]
    return pid, name, rest.strip()


def _journal_json(line: str) -> Optional[Tuple[str, Optional[datetime]]]:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    message = record.get("MESSAGE")
    if isinstance(message, list):  # journald writes non-UTF-8 messages as a list of byte values
        message = bytes(b for b in message if isinstance(b, int) and 0 <= b < 256).decode("utf-8", "replace")
    if not isinstance(message, str):
        return None
    stamp = None
    raw = record.get("__REALTIME_TIMESTAMP")
    if isinstance(raw, (str, int)) and str(raw).isdigit():
        try:
            stamp = datetime.fromtimestamp(int(raw) / 1e6, tz=timezone.utc)
        except (ValueError, OverflowError, OSError):
            stamp = None  # out of range: the time is unknown
    return message, stamp


def _line_time(line: str) -> Tuple[str, Optional[datetime], Optional[float]]:
    """(text after the time stamp, absolute time or None, seconds since boot or None)."""
    if line.startswith("{"):
        parsed = _journal_json(line)
        if parsed is not None:
            return parsed[0], parsed[1], None
    iso = _ISO_RE.match(line)
    if iso:
        try:
            stamp = _iso_to_datetime(iso.group("date"), iso.group("time"), iso.group("frac"), iso.group("tz"))
        except ValueError:
            stamp = None
        if stamp is not None:
            return iso.group("rest"), stamp, None
    up = _UPTIME_RE.match(line)
    if up:
        return up.group("rest"), None, float(up.group("up"))
    return line, None, None


# ----------------------------------------------------------------------------- parsing


def parse_kernel_log(text: Any, since: Optional[float] = None, max_lines: int = MAX_LINES,
                     max_xids: int = MAX_XIDS) -> Dict[str, Any]:
    """XID records and GPU UUID announcements found in kernel log ``text`` (str, bytes or an iterable of lines).

    Records older than ``since`` (epoch seconds) are dropped; lines without an absolute time are kept (their
    age is unknown).  Returns ``{"xids", "gpu_uuids" (canonical bus id -> uuid), "lines", "dropped", "truncated"}``.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines: Sequence[str] = text.splitlines() if isinstance(text, str) else [str(item) for item in text]
    truncated = False
    if len(lines) > max_lines:
        lines = lines[-max_lines:]
        truncated = True
    xids: List[Dict[str, Any]] = []
    uuids: Dict[str, str] = {}
    for raw in lines:
        line = raw.rstrip("\r\n")
        if "NVRM" not in line and not line.startswith("{"):
            continue
        rest, stamp, uptime = _line_time(line)
        if "NVRM" not in rest:
            continue
        found = XID_RE.search(rest)
        if found is None:
            gpu_at = GPU_AT_RE.search(rest)
            if gpu_at:
                uuids[canonical_bus_id(gpu_at.group("bus"))] = gpu_at.group("uuid")
            continue
        if since is not None and stamp is not None and stamp.timestamp() < since:
            continue
        pid, name, message = _split_rest(found.group("rest") or "")
        code = int(found.group("xid"))
        fault = lookup_xid(code)
        xids.append({
            "xid": code,
            "pci_bus_id": canonical_bus_id(found.group("bus")),
            "timestamp": stamp.astimezone(timezone.utc).isoformat() if stamp is not None else None,
            "epoch": round(stamp.timestamp(), 6) if stamp is not None else None,
            "uptime_s": uptime,
            "pid": pid,
            "process": name,
            "message": message[:500],
            "mnemonic": fault.mnemonic,
            "severity": fault.severity,
            "action": fault.action,
            "application_class": fault.application_class,
            "line": line[:1000],
        })
    dropped = max(0, len(xids) - max_xids)
    if dropped:
        xids = xids[-max_xids:]
    return {"xids": xids, "gpu_uuids": uuids, "lines": len(lines), "dropped": dropped, "truncated": truncated}


# ----------------------------------------------------------------------------- reading


def _find(name: str) -> Optional[str]:
    path = os.environ.get("PATH", os.defpath)
    return shutil.which(name, path=os.pathsep.join([path] + list(EXTRA_BIN_DIRS)))


def _run_bounded(argv: List[str], timeout_s: float, max_bytes: int) -> Tuple[Optional[int], str, str]:
    """Run ``argv`` (no shell, no stdin); ``rc`` None on timeout.  Only the last ``max_bytes`` of stdout are kept."""
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=False, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, "", ""
    except OSError as err:
        return 127, "", str(err)
    out = proc.stdout[-max_bytes:] if len(proc.stdout) > max_bytes else proc.stdout
    return proc.returncode, out.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")[:2000]


def journal_command(journalctl: str, since: Optional[float], max_lines: int = MAX_LINES) -> List[str]:
    """argv of ``journalctl -k`` (this boot's kernel messages) in ``short-iso`` format, newest ``max_lines`` lines."""
    argv = [journalctl, "-k", "-q", "--no-pager", "-o", "short-iso", "-n", str(max_lines)]
    if since is not None:
        argv += ["--since", "@%d" % int(since)]
    return argv


def dmesg_command(dmesg: str) -> List[str]:
    """argv of ``dmesg --time-format iso``."""
    return [dmesg, "--time-format", "iso"]


def _denied(text: str) -> bool:
    lower = text.lower()
    return any(word in lower for word in _DENIED_WORDS)


def _result(source: str, status: str, message: str, since: Optional[float], parsed: Optional[Dict[str, Any]] = None,
            command: Optional[List[str]] = None) -> Dict[str, Any]:
    parsed = parsed or {"xids": [], "gpu_uuids": {}, "lines": 0, "dropped": 0, "truncated": False}
    return {"source": source, "status": status, "message": message, "command": command,
            "since": datetime.fromtimestamp(since, tz=timezone.utc).isoformat() if since is not None else None,
            "lines": parsed["lines"], "truncated": parsed["truncated"], "dropped": parsed["dropped"],
            "gpu_uuids": parsed["gpu_uuids"], "xids": parsed["xids"]}


def _read_file(path: str, since: Optional[float], max_bytes: int, max_lines: int) -> Dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - max_bytes))
            data = handle.read(max_bytes)
    except OSError as err:
        raise KernelLogError("cannot read kernel_log_file: %s" % (err.strerror or err), file=path) from err
    if size > max_bytes:
        data = data.split(b"\n", 1)[-1]  # drop the partial first line
    parsed = parse_kernel_log(data, since=since, max_lines=max_lines)
    parsed["truncated"] = parsed["truncated"] or size > max_bytes
    return _result("file", "ok", "read %d line(s) of %s" % (parsed["lines"], path), since, parsed)


def read_kernel_log(source: str = "auto", since: Optional[float] = None, log_file: Optional[str] = None,
                    timeout_s: float = DEFAULT_TIMEOUT_S, max_bytes: int = MAX_BYTES, max_lines: int = MAX_LINES,
                    find: Callable[[str], Optional[str]] = _find,
                    run: Callable[[List[str], float, int], Tuple[Optional[int], str, str]] = _run_bounded) -> Dict[str, Any]:
    """The XIDs in this host's kernel log (or in ``log_file``) since ``since`` (epoch seconds, None = this boot).

    ``source``: ``journal`` (``journalctl -k``), ``dmesg`` (``dmesg --time-format iso``), ``auto`` (the journal, else
    dmesg) or ``off``.  Never raises for a log that cannot be read (missing tool, no permission, timeout): the
    result's ``status`` is ``unavailable`` and ``message`` says why and what to do.
    """
    if source not in SOURCES:
        raise KernelLogError("kernel_log must be one of %s" % ", ".join(SOURCES), field="kernel_log", value=source)
    if log_file:
        return _read_file(log_file, since, max_bytes, max_lines)
    if source == "off":
        return _result("off", "off", "kernel log not read (kernel_log: off)", since)
    problems: List[str] = []
    order = ["journal", "dmesg"] if source == "auto" else [source]
    for kind in order:
        tool = find("journalctl" if kind == "journal" else "dmesg")
        if not tool:
            problems.append("%s not found" % ("journalctl" if kind == "journal" else "dmesg"))
            continue
        argv = journal_command(tool, since, max_lines) if kind == "journal" else dmesg_command(tool)
        rc, out, err = run(argv, timeout_s, max_bytes)
        name = os.path.basename(argv[0])
        if rc is None:
            problems.append("%s timed out after %s s" % (name, timeout_s))
            continue
        if _denied(err) or (rc != 0 and _denied(out)):
            hint = ("kernel.dmesg_restrict is set: run the task with become: true, or use kernel_log: journal"
                    if kind == "dmesg" else "run the task with become: true (or as a member of systemd-journal/adm)")
            problems.append("%s is not permitted for this user (%s): %s" % (name, (err or out).strip()[:200], hint))
            continue
        if rc != 0:
            problems.append("%s exited with %d: %s" % (name, rc, (err or out).strip()[:200]))
            continue
        parsed = parse_kernel_log(out, since=since, max_lines=max_lines)
        return _result(kind, "ok", "read %d line(s) with %s" % (parsed["lines"], name), since, parsed, argv)
    return _result(source, "unavailable", "kernel log not read: " + "; ".join(problems), since)


# ----------------------------------------------------------------------------- attaching to a reading


def attach_to_reading(reading: Dict[str, Any], log: Mapping[str, Any]) -> Dict[str, Any]:
    """Store ``log`` in ``reading``: each XID goes to the ``kernel_xids`` of the GPU with its PCI bus id (index and
    UUID added), XIDs of GPUs NVML does not know to ``kernel_xid_events``, the rest of ``log`` to ``kernel_log``."""
    by_bus: Dict[Tuple[int, int, int], Dict[str, Any]] = {}
    for gpu in reading.get("gpus") or []:
        key = pci_key(gpu.get("pci_bus_id"))
        if key is not None:
            by_bus[key] = gpu
        gpu["kernel_xids"] = []
    stray: List[Dict[str, Any]] = []
    uuids = dict(log.get("gpu_uuids") or {})
    for record in log.get("xids") or []:
        entry = dict(record)
        gpu = by_bus.get(pci_key(entry.get("pci_bus_id")) or (-1, -1, -1))
        if gpu is not None:
            entry["gpu_index"] = gpu.get("index")
            entry["uuid"] = gpu.get("uuid")
            gpu["kernel_xids"].append(entry)
        else:
            entry["gpu_index"] = None
            entry["uuid"] = uuids.get(entry.get("pci_bus_id"))
            stray.append(entry)
    reading["kernel_xid_events"] = stray
    reading["kernel_log"] = {key: value for key, value in log.items() if key != "xids"}
    reading["kernel_log"]["xid_count"] = len(log.get("xids") or [])
    return reading


def xid_codes(entries: Iterable[Mapping[str, Any]]) -> List[int]:
    """The XID codes of kernel log records."""
    return [int(e["xid"]) for e in entries if isinstance(e.get("xid"), int) and not isinstance(e.get("xid"), bool)]
