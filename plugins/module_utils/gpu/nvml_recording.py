# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Recorded GPU readings: load, validate and replay them through :func:`nvml_reader.read_gpus`.

A reading saved as a file is a *recording* (format ``dsxos.cluster/gpu-readings/v1``, documented in
``docs/certify-gpu-health.md``).  :class:`RecordedNvml` is a stand-in for the ``pynvml`` module that answers the
same NVML calls from a recording, so recorded (or hand-made, fault-injected) readings go through exactly the same
code as a live host.  It ships with the collection, not with the tests: the ``gpu_health`` option
``recorded_readings`` uses it for offline triage of a reading saved from another host.
"""
from __future__ import annotations

import json
import os
from types import SimpleNamespace
from typing import Any, Dict, List

from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.nvml_reader import (
    GpuReadingError, NVLINK_ERROR_COUNTERS, NVML_CLOCK_SM, NVML_ERROR_CODES,
    NVML_ERROR_NAMES, NVML_ERROR_UNKNOWN, NVML_EVENT_TYPE_XID_CRITICAL_ERROR, NVML_FEATURE_ENABLED,
    NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
    NVML_VOLATILE_ECC, READINGS_FORMAT,
)

MAX_RECORDING_BYTES = 8 * 1024 * 1024


class RecordedNvmlError(Exception):
    """NVMLError of :class:`RecordedNvml` (carries ``value`` like pynvml's NVMLError)."""

    def __init__(self, value: int) -> None:
        self.value = value
        super().__init__(NVML_ERROR_NAMES.get(value, "NVML_ERROR_%d" % value))


class _Handle:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return "<RecordedNvml handle %d>" % self.index


def _expect(cond: bool, message: str, source: str, field: str, value: Any) -> None:
    if not cond:
        raise GpuReadingError(message, file=source, field=field, value=value)


def validate_recording(data: Any, source: str = "<recording>") -> Dict[str, Any]:
    """Check the shape of a recorded reading; returns it.  Errors name the file, field and value."""
    _expect(isinstance(data, dict), "a GPU reading must be a mapping", source, "(top level)", type(data).__name__)
    _expect(data.get("format") == READINGS_FORMAT, "unknown reading format (expected %s)" % READINGS_FORMAT,
            source, "format", data.get("format"))
    init_error = data.get("init_error")
    if init_error is not None:
        _expect(init_error in NVML_ERROR_CODES, "unknown NVML error name", source, "init_error", init_error)
        return data
    count = data.get("device_count")
    _expect(count is None or (isinstance(count, int) and not isinstance(count, bool) and count >= 0),
            "device_count must be a non-negative integer", source, "device_count", count)
    gpus = data.get("gpus")
    _expect(isinstance(gpus, list), "gpus must be a list", source, "gpus", type(gpus).__name__)
    seen = set()
    for pos, gpu in enumerate(gpus):
        where = "gpus[%d]" % pos
        _expect(isinstance(gpu, dict), "each GPU must be a mapping", source, where, type(gpu).__name__)
        index = gpu.get("index")
        _expect(isinstance(index, int) and not isinstance(index, bool) and index >= 0,
                "index must be a non-negative integer", source, where + ".index", index)
        _expect(index not in seen, "duplicate GPU index", source, where + ".index", index)
        seen.add(index)
        _expect(count is None or index < count, "GPU index is not below device_count", source, where + ".index", index)
        for key, value in (gpu.get("errors") or {}).items():
            _expect(value in NVML_ERROR_CODES, "unknown NVML error name", source, "%s.errors.%s" % (where, key), value)
        for xid in gpu.get("xids") or []:
            _expect(isinstance(xid, int) and not isinstance(xid, bool) and xid > 0, "an XID must be a positive integer",
                    source, where + ".xids", xid)
        nvlink = gpu.get("nvlink")
        _expect(nvlink is None or isinstance(nvlink, list), "nvlink must be a list of links", source, where + ".nvlink", nvlink)
        for link in nvlink or []:
            _expect(isinstance(link, dict) and isinstance(link.get("link"), int), "each NVLink needs an integer link number",
                    source, where + ".nvlink", link)
    return data


def load_recording(path: str) -> Dict[str, Any]:
    """Load and validate a recorded reading (JSON) from ``path``."""
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise GpuReadingError("cannot read recorded GPU readings: %s" % (exc.strerror or exc), file=path) from exc
    if size > MAX_RECORDING_BYTES:
        raise GpuReadingError("recorded GPU readings are larger than %d bytes" % MAX_RECORDING_BYTES, file=path, value=size)
    try:
        with open(path, "r", encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise GpuReadingError("cannot read recorded GPU readings: %s" % (exc.strerror or exc), file=path) from exc
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        raise GpuReadingError("recorded GPU readings are not valid JSON: %s" % exc, file=path, line=line) from exc
    return validate_recording(data, path)


class RecordedNvml:
    """Answers the NVML calls :func:`read_gpus` makes from a recorded reading.

    A field that is missing (or ``null``) or listed in a GPU's ``unsupported`` raises
    NOT_SUPPORTED; a field named in ``errors`` raises that NVML error; ``init_error`` at the top
    level makes ``nvmlInit`` fail (for example ``NVML_ERROR_LIBRARY_NOT_FOUND``).  Recorded XIDs
    are delivered as events, then the wait times out at once (no real waiting).
    """

    NVMLError = RecordedNvmlError

    def __init__(self, recording: Dict[str, Any], source: str = "<recording>") -> None:
        self.recording = validate_recording(recording, source)
        self.source = source
        self._gpus = {gpu["index"]: gpu for gpu in recording.get("gpus", [])}
        self._events: List[SimpleNamespace] = []
        self.initialised = False

    @classmethod
    def from_file(cls, path: str) -> "RecordedNvml":
        """Load ``path`` (see :func:`load_recording`) and wrap it."""
        return cls(load_recording(path), path)

    # -- helpers
    @staticmethod
    def _raise(name: str) -> None:
        raise RecordedNvmlError(NVML_ERROR_CODES.get(name, NVML_ERROR_UNKNOWN))

    def _system(self, key: str) -> Any:
        if key in (self.recording.get("errors") or {}):
            self._raise(self.recording["errors"][key])
        value = self.recording.get(key)
        if value is None or key in (self.recording.get("unsupported") or []):
            self._raise("NVML_ERROR_NOT_SUPPORTED")
        return value

    def _gpu(self, handle: Any) -> Dict[str, Any]:
        index = handle.index if isinstance(handle, _Handle) else handle
        gpu = self._gpus.get(index)
        if gpu is None:
            self._raise("NVML_ERROR_INVALID_ARGUMENT")
        return gpu

    def _value(self, handle: Any, key: str) -> Any:
        gpu = self._gpu(handle)
        errors = gpu.get("errors") or {}
        if "handle" in errors:
            self._raise(errors["handle"])
        if key in errors:
            self._raise(errors[key])
        value = gpu.get(key)
        if value is None or key in (gpu.get("unsupported") or []):
            self._raise("NVML_ERROR_NOT_SUPPORTED")
        return value

    # -- system
    def nvmlInit(self) -> None:  # pylint: disable=invalid-name
        """Fail with the recorded ``init_error``, if any."""
        if self.recording.get("init_error"):
            self._raise(self.recording["init_error"])
        self.initialised = True
        self._events = []
        for gpu in sorted(self._gpus.values(), key=lambda g: g["index"]):
            for xid in gpu.get("xids") or []:
                self._events.append(SimpleNamespace(eventType=NVML_EVENT_TYPE_XID_CRITICAL_ERROR, eventData=xid,
                                                    device=_Handle(gpu["index"])))
        for event in self.recording.get("xid_events") or []:
            index = event.get("gpu_index")
            self._events.append(SimpleNamespace(eventType=NVML_EVENT_TYPE_XID_CRITICAL_ERROR, eventData=event.get("xid"),
                                                device=_Handle(index if isinstance(index, int) else -1)))

    def nvmlShutdown(self) -> None:  # pylint: disable=invalid-name
        """Forget the session."""
        self.initialised = False

    def nvmlSystemGetDriverVersion(self) -> str:  # pylint: disable=invalid-name
        """Recorded driver version."""
        return self._system("driver_version")

    def nvmlSystemGetCudaDriverVersion(self) -> int:  # pylint: disable=invalid-name
        """Recorded CUDA version ``"12.4"`` as NVML's integer 12040."""
        text = str(self._system("cuda_driver_version"))
        major, minor = (text.split(".", 1) + ["0"])[:2]
        return int(major) * 1000 + int(minor or 0) * 10

    def nvmlSystemGetNVMLVersion(self) -> str:  # pylint: disable=invalid-name
        """Recorded NVML version."""
        return self._system("nvml_version")

    def nvmlDeviceGetCount(self) -> int:  # pylint: disable=invalid-name
        """Recorded device count (default: number of recorded GPUs)."""
        if "device_count" in (self.recording.get("errors") or {}):
            self._raise(self.recording["errors"]["device_count"])
        count = self.recording.get("device_count")
        return len(self._gpus) if count is None else count

    def nvmlDeviceGetHandleByIndex(self, index: int) -> _Handle:  # pylint: disable=invalid-name
        """A handle, or the recorded ``errors.handle`` (e.g. GPU_IS_LOST)."""
        gpu = self._gpus.get(index)
        if gpu is None:
            self._raise("NVML_ERROR_INVALID_ARGUMENT")
        if "handle" in (gpu.get("errors") or {}):
            self._raise(gpu["errors"]["handle"])
        return _Handle(index)

    def nvmlDeviceGetIndex(self, handle: Any) -> int:  # pylint: disable=invalid-name
        """Index of a handle."""
        return self._gpu(handle)["index"]

    # -- device fields
    def nvmlDeviceGetName(self, handle: Any) -> str:  # pylint: disable=invalid-name
        """Recorded ``name``."""
        return self._value(handle, "name")

    def nvmlDeviceGetUUID(self, handle: Any) -> str:  # pylint: disable=invalid-name
        """Recorded ``uuid``."""
        return self._value(handle, "uuid")

    def nvmlDeviceGetSerial(self, handle: Any) -> str:  # pylint: disable=invalid-name
        """Recorded ``serial``."""
        return self._value(handle, "serial")

    def nvmlDeviceGetPciInfo(self, handle: Any) -> SimpleNamespace:  # pylint: disable=invalid-name
        """Recorded ``pci_bus_id`` as ``busId``."""
        return SimpleNamespace(busId=self._value(handle, "pci_bus_id"))

    def nvmlDeviceGetTemperature(self, handle: Any, _sensor: int) -> int:  # pylint: disable=invalid-name
        """Recorded ``temperature_c``."""
        return self._value(handle, "temperature_c")

    def nvmlDeviceGetTemperatureThreshold(self, handle: Any, _kind: int) -> int:  # pylint: disable=invalid-name
        """Recorded ``temperature_slowdown_c``."""
        return self._value(handle, "temperature_slowdown_c")

    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int:  # pylint: disable=invalid-name
        """Recorded ``power_w`` in milliwatts."""
        return int(round(float(self._value(handle, "power_w")) * 1000))

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any) -> int:  # pylint: disable=invalid-name
        """Recorded ``power_limit_w`` in milliwatts."""
        return int(round(float(self._value(handle, "power_limit_w")) * 1000))

    def nvmlDeviceGetClockInfo(self, handle: Any, clock: int) -> int:  # pylint: disable=invalid-name
        """Recorded current SM/memory clock."""
        return self._value(handle, "clocks_sm_mhz" if clock == NVML_CLOCK_SM else "clocks_mem_mhz")

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, clock: int) -> int:  # pylint: disable=invalid-name
        """Recorded maximum SM/memory clock."""
        return self._value(handle, "clocks_sm_max_mhz" if clock == NVML_CLOCK_SM else "clocks_mem_max_mhz")

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any) -> int:  # pylint: disable=invalid-name
        """Recorded clock event reason bit mask."""
        return self._value(handle, "clock_event_reasons")

    def nvmlDeviceGetEccMode(self, handle: Any) -> List[int]:  # pylint: disable=invalid-name
        """Recorded ECC mode as [current, pending]."""
        mode = 1 if self._value(handle, "ecc_mode_current") else 0
        return [mode, mode]

    def nvmlDeviceGetTotalEccErrors(self, handle: Any, error_type: int, counter: int) -> int:  # pylint: disable=invalid-name
        """Recorded ECC counters."""
        kind = "sbe" if error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED else "dbe"
        scope = "volatile" if counter == NVML_VOLATILE_ECC else "aggregate"
        return self._value(handle, "ecc_%s_%s" % (scope, kind))

    def nvmlDeviceGetRetiredPages(self, handle: Any, cause: int) -> List[int]:  # pylint: disable=invalid-name
        """As many fake page addresses as recorded."""
        key = "retired_pages_sbe" if cause == NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS else "retired_pages_dbe"
        return list(range(int(self._value(handle, key))))

    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle: Any) -> int:  # pylint: disable=invalid-name
        """Recorded pending retirement flag."""
        return NVML_FEATURE_ENABLED if self._value(handle, "retired_pages_pending") else 0

    def nvmlDeviceGetRemappedRows(self, handle: Any) -> tuple:  # pylint: disable=invalid-name
        """Recorded row remapper state as (correctable, uncorrectable, pending, failure)."""
        rows = self._value(handle, "remapped_rows")
        return (int(rows.get("correctable", 0)), int(rows.get("uncorrectable", 0)),
                1 if rows.get("pending") else 0, 1 if rows.get("failure") else 0)

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: Any) -> int:  # pylint: disable=invalid-name
        """Recorded ``pcie_gen``."""
        return self._value(handle, "pcie_gen")

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: Any) -> int:  # pylint: disable=invalid-name
        """Recorded ``pcie_gen_max``."""
        return self._value(handle, "pcie_gen_max")

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: Any) -> int:  # pylint: disable=invalid-name
        """Recorded ``pcie_width``."""
        return self._value(handle, "pcie_width")

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: Any) -> int:  # pylint: disable=invalid-name
        """Recorded ``pcie_width_max``."""
        return self._value(handle, "pcie_width_max")

    def nvmlDeviceGetPcieReplayCounter(self, handle: Any) -> int:  # pylint: disable=invalid-name
        """Recorded ``pcie_replay_count``."""
        return self._value(handle, "pcie_replay_count")

    def _link(self, handle: Any, link: int) -> Dict[str, Any]:
        links = self._value(handle, "nvlink")
        for entry in links:
            if entry.get("link") == link:
                if entry.get("error"):
                    self._raise(entry["error"])
                return entry
        self._raise("NVML_ERROR_INVALID_ARGUMENT")
        return {}  # not reached

    def nvmlDeviceGetNvLinkState(self, handle: Any, link: int) -> int:  # pylint: disable=invalid-name
        """Recorded link state (1 = active)."""
        return NVML_FEATURE_ENABLED if self._link(handle, link).get("active") else 0

    def nvmlDeviceGetNvLinkErrorCounter(self, handle: Any, link: int, counter: int) -> int:  # pylint: disable=invalid-name
        """Recorded link error counter (missing counters are NOT_SUPPORTED)."""
        entry = self._link(handle, link)
        name = dict((c, n) for n, c in NVLINK_ERROR_COUNTERS).get(counter)
        value = entry.get(name) if name else None
        if value is None:
            self._raise("NVML_ERROR_NOT_SUPPORTED")
        return value

    # -- events
    def nvmlEventSetCreate(self) -> str:  # pylint: disable=invalid-name
        """A token standing for the event set."""
        return "recorded-event-set"

    def nvmlDeviceRegisterEvents(self, handle: Any, _types: int, _event_set: Any) -> None:  # pylint: disable=invalid-name
        """Registration succeeds for every recorded GPU that has a handle."""
        self._gpu(handle)

    def nvmlEventSetWait_v2(self, _event_set: Any, _timeout_ms: int) -> SimpleNamespace:  # pylint: disable=invalid-name
        """Next recorded XID event, else an immediate timeout."""
        if not self._events:
            self._raise("NVML_ERROR_TIMEOUT")
        return self._events.pop(0)

    def nvmlEventSetFree(self, _event_set: Any) -> None:  # pylint: disable=invalid-name
        """Nothing to free."""
        return None


def strip_volatile(reading: Dict[str, Any]) -> Dict[str, Any]:
    """A copy of ``reading`` without the event-listening details (for comparing readings)."""
    return {key: value for key, value in reading.items() if key != "xid_listen"}
