# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""GPU readings from NVML (nvidia-ml-py, imported as ``pynvml``), live or replayed.

:func:`read_gpus` asks an NVML module for everything the GPU health checks need and returns a
*reading*: plain, JSON-safe dicts (format ``dsxos.cluster/gpu-readings/v1``, documented in
``docs/certify-gpu-health.md``).  Every per-device value is read on its own, so a field that NVML
does not support on a GPU (``NVML_ERROR_NOT_SUPPORTED``) is listed in the GPU's ``unsupported``
list and any other NVML error in its ``errors`` map; neither stops the reading.

A reading saved to a file is a *recording*; :mod:`nvml_recording` replays one through this same
:func:`read_gpus` code (its ``RecordedNvml`` answers the NVML calls like ``pynvml``).

``pynvml`` is imported lazily, only by :func:`import_pynvml`; this file needs nothing but the
standard library.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.errors import GpuError

READINGS_FORMAT = "dsxos.cluster/gpu-readings/v1"

# NVML return codes (nvmlReturn_t), as in nvml.h / pynvml (tests compare them with the installed pynvml).
NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_UNKNOWN = 999

NVML_ERROR_NAMES: Dict[int, str] = {
    NVML_ERROR_UNINITIALIZED: "NVML_ERROR_UNINITIALIZED",
    NVML_ERROR_INVALID_ARGUMENT: "NVML_ERROR_INVALID_ARGUMENT",
    NVML_ERROR_NOT_SUPPORTED: "NVML_ERROR_NOT_SUPPORTED",
    NVML_ERROR_NO_PERMISSION: "NVML_ERROR_NO_PERMISSION",
    5: "NVML_ERROR_ALREADY_INITIALIZED",
    NVML_ERROR_NOT_FOUND: "NVML_ERROR_NOT_FOUND",
    7: "NVML_ERROR_INSUFFICIENT_SIZE",
    8: "NVML_ERROR_INSUFFICIENT_POWER",
    NVML_ERROR_DRIVER_NOT_LOADED: "NVML_ERROR_DRIVER_NOT_LOADED",
    NVML_ERROR_TIMEOUT: "NVML_ERROR_TIMEOUT",
    11: "NVML_ERROR_IRQ_ISSUE",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML_ERROR_LIBRARY_NOT_FOUND",
    NVML_ERROR_FUNCTION_NOT_FOUND: "NVML_ERROR_FUNCTION_NOT_FOUND",
    14: "NVML_ERROR_CORRUPTED_INFOROM",
    NVML_ERROR_GPU_IS_LOST: "NVML_ERROR_GPU_IS_LOST",
    16: "NVML_ERROR_RESET_REQUIRED",
    17: "NVML_ERROR_OPERATING_SYSTEM",
    18: "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
    19: "NVML_ERROR_IN_USE",
    20: "NVML_ERROR_MEMORY",
    21: "NVML_ERROR_NO_DATA",
    22: "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED",
    23: "NVML_ERROR_INSUFFICIENT_RESOURCES",
    24: "NVML_ERROR_FREQ_NOT_SUPPORTED",
    25: "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
    26: "NVML_ERROR_DEPRECATED",
    27: "NVML_ERROR_NOT_READY",
    28: "NVML_ERROR_GPU_NOT_FOUND",
    29: "NVML_ERROR_INVALID_STATE",
    NVML_ERROR_UNKNOWN: "NVML_ERROR_UNKNOWN",
}
NVML_ERROR_CODES: Dict[str, int] = {name: code for code, name in NVML_ERROR_NAMES.items()}

# Enum values used below (nvml.h).
NVML_TEMPERATURE_GPU = 0
NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
NVML_AGGREGATE_ECC = 1
NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0
NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1
NVML_FEATURE_ENABLED = 1
NVML_EVENT_TYPE_XID_CRITICAL_ERROR = 0x8
#: nvml.h's NVML_NVLINK_MAX_LINKS (36 in current pynvml, 18 in older releases). The reader asks the NVML module for its
#: own value first, so an older pynvml (18) or a newer one works unchanged; links that do not exist answer
#: INVALID_ARGUMENT or NOT_SUPPORTED and are skipped.
NVML_NVLINK_MAX_LINKS = 36

#: nvmlNvLinkErrorCounter_t: NVML_NVLINK_ERROR_DL_REPLAY, _DL_RECOVERY, _DL_CRC_FLIT, _DL_CRC_DATA.
NVLINK_ERROR_COUNTERS = (("replay", 0), ("recovery", 1), ("crc_flit", 2), ("crc_data", 3))

#: nvmlClocksEventReason* bits (formerly nvmlClocksThrottleReason*) -> name used in readings.
CLOCK_EVENT_REASONS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
    (0x200, "board_limit"),     # nvmlClocksThrottleReasonBoardLimit (only in the older *ThrottleReason* names)
    (0x400, "reliability"),     # nvmlClocksThrottleReasonReliability (idem)
)

#: The dcgm-exporter field (``../shared/reference/dcgm-exporter``) that carries the same value as a reading key, with
#: the unit difference where there is one (tests check every name against the exporter's CSV lists).
DCGM_EXPORTER_FIELDS: Dict[str, str] = {
    "temperature_c": "DCGM_FI_DEV_GPU_TEMP",
    "power_w": "DCGM_FI_DEV_POWER_USAGE",               # W in both (NVML itself answers milliwatts)
    "clocks_sm_mhz": "DCGM_FI_DEV_SM_CLOCK",
    "clocks_mem_mhz": "DCGM_FI_DEV_MEM_CLOCK",
    "ecc_volatile_sbe": "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "ecc_volatile_dbe": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "ecc_aggregate_sbe": "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
    "ecc_aggregate_dbe": "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
    "retired_pages_sbe": "DCGM_FI_DEV_RETIRED_SBE",
    "retired_pages_dbe": "DCGM_FI_DEV_RETIRED_DBE",
    "retired_pages_pending": "DCGM_FI_DEV_RETIRED_PENDING",
    "remapped_rows.correctable": "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "remapped_rows.uncorrectable": "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "remapped_rows.failure": "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "pcie_replay_count": "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "nvlink.crc_flit": "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",   # summed over links by the exporter
    "nvlink.crc_data": "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "nvlink.replay": "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "nvlink.recovery": "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
    "xids": "DCGM_FI_DEV_XID_ERRORS",                   # the exporter keeps only the last XID value
}

#: Per-GPU keys read with one NVML call each (the names used in ``unsupported`` and ``errors``).
GPU_FIELDS = (
    "name", "uuid", "serial", "pci_bus_id",
    "temperature_c", "temperature_slowdown_c", "power_w", "power_limit_w",
    "clocks_sm_mhz", "clocks_mem_mhz", "clocks_sm_max_mhz", "clocks_mem_max_mhz", "clock_event_reasons",
    "ecc_mode_current", "ecc_volatile_sbe", "ecc_volatile_dbe", "ecc_aggregate_sbe", "ecc_aggregate_dbe",
    "retired_pages_sbe", "retired_pages_dbe", "retired_pages_pending", "remapped_rows",
    "pcie_gen", "pcie_gen_max", "pcie_width", "pcie_width_max", "pcie_replay_count", "nvlink",
)


class GpuReadingError(GpuError):
    """A recorded reading is unreadable or malformed (the message names file, field and value)."""


class NvmlUnavailableError(GpuError):
    """NVML cannot be used on this host (no library, no driver, no permission).

    The message is complete and says which host (``NVML library not found on <host> (no NVIDIA driver?)``): ``str()``
    is the message alone; ``field``/``value`` (the failed call and the NVML error) stay in :meth:`to_dict`.
    """

    render_fields = False


def import_pynvml() -> Any:
    """Import ``pynvml`` (nvidia-ml-py) or raise :class:`NvmlUnavailableError` saying what to install."""
    try:
        import pynvml  # pylint: disable=import-outside-toplevel,import-error
    except ImportError as exc:
        raise NvmlUnavailableError("Python package nvidia-ml-py (module pynvml) is not installed: %s" % exc) from exc
    return pynvml


def nvml_error_code(err: BaseException) -> Optional[int]:
    """The NVML return code carried by an NVMLError (``None`` for other exceptions)."""
    value = getattr(err, "value", None)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def nvml_error_name(err: BaseException) -> str:
    """``NVML_ERROR_*`` name of an NVMLError, else the exception's type and text."""
    code = nvml_error_code(err)
    if code is not None:
        return NVML_ERROR_NAMES.get(code, "NVML_ERROR_%d" % code)
    return "%s: %s" % (type(err).__name__, err)


def decode_clock_event_reasons(mask: Optional[int]) -> List[str]:
    """Names of the clock event (throttle) reason bits set in ``mask``."""
    if not isinstance(mask, int) or isinstance(mask, bool):
        return []
    return [name for bit, name in CLOCK_EVENT_REASONS if mask & bit]


def _text(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _cuda_version_text(value: Any) -> Any:
    """NVML's CUDA driver version integer (12040) as text (``12.4``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return "%d.%d" % (value // 1000, (value % 1000) // 10)
    return _text(value)


class _Reader:
    """One pass over NVML; collects per-field results and errors without raising."""

    def __init__(self, nvml: Any) -> None:
        self.nvml = nvml
        self.error_class = getattr(nvml, "NVMLError", None)

    def is_nvml_error(self, err: BaseException) -> bool:
        return bool(self.error_class) and isinstance(err, self.error_class)

    def call(self, target: Dict[str, Any], key: str, func: Callable[[], Any]) -> Any:
        """Run one NVML query for ``key``; record unsupported/errors in ``target`` instead of raising."""
        try:
            return func()
        except AttributeError:
            # An older pynvml without this function: the same as NVML not supporting it.
            target.setdefault("unsupported", []).append(key)
        except Exception as err:  # pylint: disable=broad-except
            if not self.is_nvml_error(err):
                raise
            if nvml_error_code(err) in (NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_FUNCTION_NOT_FOUND):
                target.setdefault("unsupported", []).append(key)
            else:
                target.setdefault("errors", {})[key] = nvml_error_name(err)
        return None

    def field(self, gpu: Dict[str, Any], key: str, func: Callable[[], Any]) -> None:
        gpu[key] = self.call(gpu, key, func)


def _read_nvlinks(reader: _Reader, gpu: Dict[str, Any], handle: Any) -> None:
    nvml = reader.nvml
    links: List[Dict[str, Any]] = []
    max_links = getattr(nvml, "NVML_NVLINK_MAX_LINKS", NVML_NVLINK_MAX_LINKS)
    if isinstance(max_links, bool) or not isinstance(max_links, int) or max_links <= 0:
        max_links = NVML_NVLINK_MAX_LINKS
    for link in range(max_links):
        try:
            state = nvml.nvmlDeviceGetNvLinkState(handle, link)
        except AttributeError:
            break
        except Exception as err:  # pylint: disable=broad-except
            if not reader.is_nvml_error(err):
                raise
            code = nvml_error_code(err)
            if code in (NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_FUNCTION_NOT_FOUND):
                continue  # this link does not exist on this GPU
            links.append({"link": link, "active": None, "error": nvml_error_name(err)})
            continue
        entry: Dict[str, Any] = {"link": link, "active": state == NVML_FEATURE_ENABLED}
        for name, counter in NVLINK_ERROR_COUNTERS:
            entry[name] = reader.call(entry, name, lambda c=counter: nvml.nvmlDeviceGetNvLinkErrorCounter(handle, link, c))
        links.append(entry)
    if links:
        gpu["nvlink"] = links
    else:
        gpu["nvlink"] = None
        gpu.setdefault("unsupported", []).append("nvlink")


def _read_gpu(reader: _Reader, index: int, handle: Any) -> Dict[str, Any]:
    nvml = reader.nvml
    gpu: Dict[str, Any] = {"index": index, "unsupported": [], "errors": {}, "xids": []}
    f = reader.field
    f(gpu, "name", lambda: _text(nvml.nvmlDeviceGetName(handle)))
    f(gpu, "uuid", lambda: _text(nvml.nvmlDeviceGetUUID(handle)))
    f(gpu, "serial", lambda: _text(nvml.nvmlDeviceGetSerial(handle)))
    f(gpu, "pci_bus_id", lambda: _text(nvml.nvmlDeviceGetPciInfo(handle).busId))
    f(gpu, "temperature_c", lambda: nvml.nvmlDeviceGetTemperature(handle, NVML_TEMPERATURE_GPU))
    f(gpu, "temperature_slowdown_c",
      lambda: nvml.nvmlDeviceGetTemperatureThreshold(handle, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN))
    f(gpu, "power_w", lambda: round(nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0, 3))
    f(gpu, "power_limit_w", lambda: round(nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0, 3))
    f(gpu, "clocks_sm_mhz", lambda: nvml.nvmlDeviceGetClockInfo(handle, NVML_CLOCK_SM))
    f(gpu, "clocks_mem_mhz", lambda: nvml.nvmlDeviceGetClockInfo(handle, NVML_CLOCK_MEM))
    f(gpu, "clocks_sm_max_mhz", lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, NVML_CLOCK_SM))
    f(gpu, "clocks_mem_max_mhz", lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, NVML_CLOCK_MEM))

    def _reasons() -> int:
        getter = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        if getter is None:
            getter = nvml.nvmlDeviceGetCurrentClocksThrottleReasons
        return int(getter(handle))

    f(gpu, "clock_event_reasons", _reasons)
    gpu["clock_event_reason_names"] = decode_clock_event_reasons(gpu["clock_event_reasons"])
    f(gpu, "ecc_mode_current", lambda: bool(nvml.nvmlDeviceGetEccMode(handle)[0] == NVML_FEATURE_ENABLED))
    for key, err_type, counter in (("ecc_volatile_sbe", NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC),
                                   ("ecc_volatile_dbe", NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC),
                                   ("ecc_aggregate_sbe", NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC),
                                   ("ecc_aggregate_dbe", NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC)):
        f(gpu, key, lambda e=err_type, c=counter: int(nvml.nvmlDeviceGetTotalEccErrors(handle, e, c)))
    f(gpu, "retired_pages_sbe",
      lambda: len(nvml.nvmlDeviceGetRetiredPages(handle, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)))
    f(gpu, "retired_pages_dbe",
      lambda: len(nvml.nvmlDeviceGetRetiredPages(handle, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)))
    f(gpu, "retired_pages_pending",
      lambda: bool(nvml.nvmlDeviceGetRetiredPagesPendingStatus(handle) == NVML_FEATURE_ENABLED))

    def _remap() -> Dict[str, Any]:
        corr, unc, pending, failure = nvml.nvmlDeviceGetRemappedRows(handle)
        return {"correctable": int(corr), "uncorrectable": int(unc), "pending": bool(pending), "failure": bool(failure)}

    f(gpu, "remapped_rows", _remap)
    f(gpu, "pcie_gen", lambda: nvml.nvmlDeviceGetCurrPcieLinkGeneration(handle))
    f(gpu, "pcie_gen_max", lambda: nvml.nvmlDeviceGetMaxPcieLinkGeneration(handle))
    f(gpu, "pcie_width", lambda: nvml.nvmlDeviceGetCurrPcieLinkWidth(handle))
    f(gpu, "pcie_width_max", lambda: nvml.nvmlDeviceGetMaxPcieLinkWidth(handle))
    f(gpu, "pcie_replay_count", lambda: nvml.nvmlDeviceGetPcieReplayCounter(handle))
    _read_nvlinks(reader, gpu, handle)
    return gpu


def _listen_for_xids(reader: _Reader, reading: Dict[str, Any], handles: Dict[int, Any], window_s: float,
                     clock: Callable[[], float]) -> None:
    """Collect XID events for ``window_s`` seconds; each goes to its GPU's ``xids`` (else the host's list)."""
    nvml = reader.nvml
    by_index = {gpu["index"]: gpu for gpu in reading["gpus"]}
    status: Dict[str, Any] = {"window_s": window_s, "registered": [], "errors": {}}
    reading["xid_listen"] = status
    event_set = reader.call(status, "event_set", nvml.nvmlEventSetCreate)
    if event_set is None:
        return
    try:
        for index, handle in handles.items():
            try:
                nvml.nvmlDeviceRegisterEvents(handle, NVML_EVENT_TYPE_XID_CRITICAL_ERROR, event_set)
                status["registered"].append(index)
            except Exception as err:  # pylint: disable=broad-except
                if not reader.is_nvml_error(err):
                    raise
                status["errors"]["gpu%d" % index] = nvml_error_name(err)
        deadline = clock() + window_s
        while status["registered"]:
            remaining_ms = int((deadline - clock()) * 1000)
            if remaining_ms <= 0:
                break
            try:
                data = nvml.nvmlEventSetWait_v2(event_set, remaining_ms)
            except Exception as err:  # pylint: disable=broad-except
                if not reader.is_nvml_error(err):
                    raise
                if nvml_error_code(err) != NVML_ERROR_TIMEOUT:
                    status["errors"]["wait"] = nvml_error_name(err)
                break
            if not int(getattr(data, "eventType", 0)) & NVML_EVENT_TYPE_XID_CRITICAL_ERROR:
                continue
            xid = int(data.eventData)
            index = reader.call(status, "event_device", lambda d=data: nvml.nvmlDeviceGetIndex(d.device))
            if index in by_index:
                by_index[index]["xids"].append(xid)
            else:
                reading["xid_events"].append({"gpu_index": index, "xid": xid})
    finally:
        reader.call(status, "event_set_free", lambda: nvml.nvmlEventSetFree(event_set))


def read_gpus(nvml: Any = None, host: str = "localhost", xid_window_s: float = 0.0,
              clock: Callable[[], float] = time.monotonic) -> Dict[str, Any]:
    """Read every GPU through ``nvml`` (the ``pynvml`` module, or a :class:`RecordedNvml`).

    Raises :class:`NvmlUnavailableError` when NVML cannot be initialised (for example
    "NVML library not found on <host> (no NVIDIA driver?)"); everything after initialisation is
    tolerant and ends up in the reading.
    """
    if nvml is None:
        nvml = import_pynvml()
    reader = _Reader(nvml)
    try:
        nvml.nvmlInit()
    except Exception as err:  # pylint: disable=broad-except
        if not reader.is_nvml_error(err):
            raise
        code = nvml_error_code(err)
        if code == NVML_ERROR_LIBRARY_NOT_FOUND:
            message = "NVML library not found on %s (no NVIDIA driver?)" % host
        elif code == NVML_ERROR_DRIVER_NOT_LOADED:
            message = "NVIDIA driver is not loaded on %s (NVML: %s)" % (host, nvml_error_name(err))
        elif code == NVML_ERROR_NO_PERMISSION:
            message = "no permission to use NVML on %s (NVML: %s)" % (host, nvml_error_name(err))
        else:
            message = "NVML could not be initialised on %s (%s)" % (host, nvml_error_name(err))
        raise NvmlUnavailableError(message, field="nvmlInit", value=nvml_error_name(err)) from err
    reading: Dict[str, Any] = {"format": READINGS_FORMAT, "host": host, "unsupported": [], "errors": {},
                               "gpus": [], "xid_events": []}
    try:
        reading["driver_version"] = reader.call(reading, "driver_version", lambda: _text(nvml.nvmlSystemGetDriverVersion()))
        reading["cuda_driver_version"] = reader.call(
            reading, "cuda_driver_version", lambda: _cuda_version_text(nvml.nvmlSystemGetCudaDriverVersion()))
        reading["nvml_version"] = reader.call(reading, "nvml_version", lambda: _text(nvml.nvmlSystemGetNVMLVersion()))
        count = reader.call(reading, "device_count", nvml.nvmlDeviceGetCount)
        reading["device_count"] = count
        handles: Dict[int, Any] = {}
        for index in range(count or 0):
            gpu_errors: Dict[str, Any] = {}
            handle = reader.call(gpu_errors, "handle", lambda i=index: nvml.nvmlDeviceGetHandleByIndex(i))
            if handle is None:
                reading["gpus"].append({"index": index, "unsupported": gpu_errors.get("unsupported", []),
                                        "errors": gpu_errors.get("errors", {"handle": "no handle"}), "xids": []})
                continue
            handles[index] = handle
            reading["gpus"].append(_read_gpu(reader, index, handle))
        if xid_window_s and xid_window_s > 0:
            _listen_for_xids(reader, reading, handles, float(xid_window_s), clock)
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception as err:  # pylint: disable=broad-except
            if not reader.is_nvml_error(err):
                raise
    return reading
