# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Fault catalog: NVIDIA XID codes and DCGM health/diagnostic error codes.

Each entry says how bad a fault is (``severity``: info, warning, critical), which part of the
system it points at (``component``), what to do first (``action``) and what to do if it comes
back (``follow_up``).  The entries are written from NVIDIA's public XID catalog for Ampere and
newer GPUs (docs.nvidia.com/deploy/xid-errors, columns "Resolution Bucket (Immediate Action)"
and "(Investigatory Action)") and from DCGM's ``dcgmError_t`` enumeration (``dcgm_errors.h``),
mapped onto this collection's action vocabulary:

========================  =====================================================================
action                    meaning
========================  =====================================================================
``none``                  nothing to do on the node
``check_application``     the workload faulted; debug the application (cuda-gdb, compute-sanitizer)
``reset_gpu``             drain the GPU and reset it (``nvidia-smi -r``), or reboot the node
``reboot``                drain and reboot (power-cycle) the node
``contact_support``       collect ``nvidia-bug-report.sh`` and open a case with the vendor
``replace``               the GPU (or board) must be replaced (RMA)
========================  =====================================================================

Rules used by the Certify and Operate phases:

* :func:`condemns_node` is true only for a *critical* entry that is not application-class.
  Application-class XIDs (13, 31, 43, 45, ...) are caused by the workload and never condemn a node.
* An unknown code gives a conservative entry (severity warning, action contact_support) that does
  not condemn a node by itself.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, Iterable, Optional

SEVERITIES = ("info", "warning", "critical")
ACTIONS = ("none", "check_application", "reset_gpu", "reboot", "contact_support", "replace")
COMPONENTS = ("application", "driver", "firmware", "gsp", "memory", "nvlink", "pcie", "power",
              "thermal", "fabric", "c2c", "engine", "software", "gpu", "performance", "unknown")

#: Action rank: a host's recommended action is the highest-ranked action among its findings.
ACTION_RANK: Dict[str, int] = {name: rank for rank, name in enumerate(ACTIONS)}
SEVERITY_RANK: Dict[str, int] = {name: rank for rank, name in enumerate(SEVERITIES)}


@dataclass(frozen=True)
class FaultEntry:
    """One catalogued fault (an XID or a DCGM error code)."""

    kind: str                 # "xid" or "dcgm"
    code: int
    mnemonic: str             # NVIDIA's symbolic name (ROBUST_CHANNEL_..., DCGM_FR_...)
    name: str                 # short human description
    severity: str             # info | warning | critical
    component: str
    action: str               # immediate action (see ACTIONS)
    follow_up: str = "none"   # action when the fault persists or recurs
    application_class: bool = False
    known: bool = True

    def to_dict(self) -> Dict[str, Any]:
        """Plain dict (JSON-safe)."""
        return asdict(self)


def _xid(code: int, mnemonic: str, name: str, severity: str, component: str, action: str,
         follow_up: str = "none", application_class: bool = False) -> FaultEntry:
    return FaultEntry("xid", code, mnemonic, name, severity, component, action, follow_up, application_class)


def _dcgm(code: int, mnemonic: str, name: str, severity: str, component: str, action: str,
          follow_up: str = "none") -> FaultEntry:
    return FaultEntry("dcgm", code, mnemonic, name, severity, component, action, follow_up, False)


_XID_ENTRIES = (
    _xid(8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing (channel idle timeout)",
         "warning", "driver", "check_application", "contact_support"),
    _xid(11, "ROBUST_CHANNEL_GR_ERROR_MISSING_HW", "Invalid or corrupted push buffer stream",
         "info", "application", "check_application", "none", True),
    _xid(13, "ROBUST_CHANNEL_GR_EXCEPTION", "Graphics engine exception (application fault, e.g. out-of-bounds access)",
         "info", "application", "check_application", "none", True),
    _xid(14, "ROBUST_CHANNEL_FAKE_ERROR", "Injected test error",
         "info", "driver", "none"),
    _xid(25, "ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", "Invalid or illegal push buffer stream",
         "info", "application", "check_application", "none", True),
    _xid(31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault (MMU fault, usually an application bug)",
         "info", "application", "check_application", "contact_support", True),
    _xid(32, "ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream (DMA controller fault, often PCIe quality)",
         "warning", "pcie", "check_application", "contact_support"),
    _xid(37, "ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD", "Driver firmware error (unimplemented method)",
         "info", "firmware", "none", "check_application"),
    _xid(38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "Driver firmware error (FECS watchdog timeout)",
         "warning", "firmware", "none", "contact_support"),
    _xid(39, "ROBUST_CHANNEL_CE0_ERROR", "Copy engine exception", "warning", "engine", "check_application", "contact_support"),
    _xid(40, "ROBUST_CHANNEL_CE1_ERROR", "Copy engine exception", "warning", "engine", "check_application", "contact_support"),
    _xid(41, "ROBUST_CHANNEL_CE2_ERROR", "Copy engine exception", "warning", "engine", "check_application", "contact_support"),
    _xid(43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing (application hit a software fault; GPU stays healthy)",
         "info", "application", "none", "none", True),
    _xid(44, "ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW", "Graphics engine fault during context switch",
         "warning", "driver", "none", "contact_support"),
    _xid(45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup after an application abort or an earlier error",
         "info", "application", "none", "none", True),
    _xid(46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing (GPU timeout)",
         "critical", "gpu", "reset_gpu", "contact_support"),
    _xid(48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double-bit (uncorrectable) ECC error",
         "critical", "memory", "reset_gpu", "contact_support"),
    _xid(54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING", "Auxiliary power is not connected to the GPU board",
         "critical", "power", "contact_support", "replace"),
    _xid(56, "DISPLAY_CHANNEL_EXCEPTION", "Display engine error (not used on Ampere and newer)",
         "info", "engine", "none", "contact_support"),
    _xid(57, "FB_LINK_TRAINING_FAILURE_ERROR", "Error programming the video memory interface (not used on Ampere and newer)",
         "warning", "memory", "contact_support", "replace"),
    _xid(58, "FB_MEMORY_ERROR", "Unstable video memory interface (not used on Ampere and newer)",
         "warning", "memory", "contact_support", "replace"),
    _xid(60, "ROBUST_CHANNEL_SEC2_ERROR", "Video processor exception", "warning", "engine", "check_application", "contact_support"),
    _xid(61, "PMU_BREAKPOINT", "Internal micro-controller breakpoint (not used on Ampere and newer)",
         "warning", "firmware", "contact_support"),
    _xid(62, "PMU_HALT_ERROR", "Internal micro-controller halt",
         "critical", "firmware", "reset_gpu", "contact_support"),
    _xid(63, "INFOROM_DRAM_RETIREMENT_EVENT", "GPU memory row remapping / page retirement event (recorded, no action)",
         "info", "memory", "none"),
    _xid(64, "INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory row remapping / page retirement failure",
         "critical", "memory", "reset_gpu", "replace"),
    _xid(66, "ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION", "Illegal register access by the driver",
         "warning", "driver", "none", "contact_support"),
    _xid(67, "ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION", "Illegal access by the driver",
         "warning", "driver", "none", "contact_support"),
    _xid(68, "ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 video decoder exception",
         "warning", "engine", "check_application", "contact_support"),
    _xid(69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics engine class error (invalid method from the application)",
         "info", "application", "check_application", "none", True),
    _xid(74, "NVLINK_ERROR", "NVLink error (link to a GPU or NVSwitch failed)",
         "critical", "nvlink", "reset_gpu", "contact_support"),
    _xid(79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus (not reachable over PCIe)",
         "critical", "pcie", "reboot", "contact_support"),
    _xid(80, "PBDMA_PUSHBUFFER_CRC_MISMATCH", "Corrupted data sent to the GPU",
         "warning", "pcie", "check_application", "contact_support"),
    _xid(92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate",
         "warning", "memory", "none", "contact_support"),
    _xid(93, "INFOROM_ERASE_LIMIT_EXCEEDED", "InfoROM wear limit reached (non-fatal)",
         "warning", "firmware", "none", "contact_support"),
    _xid(94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error (one application affected; reset the GPU when convenient)",
         "warning", "memory", "reset_gpu", "none"),
    _xid(95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error (all applications affected)",
         "critical", "memory", "reset_gpu", "contact_support"),
    _xid(109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context switch timeout",
         "critical", "driver", "reset_gpu", "contact_support"),
    _xid(110, "SEC_FAULT_ERROR", "Security fault (usually hardware)",
         "critical", "gpu", "reboot", "contact_support"),
    _xid(119, "GSP_RPC_TIMEOUT", "GSP firmware RPC timeout",
         "critical", "gsp", "reset_gpu", "contact_support"),
    _xid(120, "GSP_ERROR", "Error in code running on the GSP core",
         "critical", "gsp", "reset_gpu", "contact_support"),
    _xid(121, "C2C_ERROR", "Corrected errors on the C2C link to the Grace CPU (no operational impact)",
         "info", "c2c", "none", "reset_gpu"),
    _xid(136, "ALI_TRAINING_FAIL", "NVLink training failed",
         "critical", "nvlink", "reset_gpu", "contact_support"),
    _xid(137, "NVLINK_PRIV_ERR", "NVLink privilege error (illegal peer-to-peer access, usually an application bug)",
         "info", "application", "check_application", "contact_support", True),
    _xid(140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "Unrecovered ECC error (page offlining / row remapping could not be recorded)",
         "critical", "memory", "reset_gpu", "contact_support"),
    _xid(143, "GPU_INIT_ERROR", "GPU initialization error",
         "critical", "gpu", "reset_gpu", "contact_support"),
    _xid(144, "NVLINK_SAW_ERROR", "NVLink SAW error", "critical", "nvlink", "reset_gpu", "contact_support"),
    _xid(145, "NVLINK_RLW_ERROR", "NVLink RLW error", "critical", "nvlink", "reset_gpu", "contact_support"),
    _xid(146, "NVLINK_TLW_ERROR", "NVLink TLW error", "critical", "nvlink", "reset_gpu", "contact_support"),
    _xid(147, "NVLINK_TREX_ERROR", "NVLink TREX error", "critical", "nvlink", "reset_gpu", "contact_support"),
    _xid(148, "NVLINK_NVLPW_CTRL_ERROR", "NVLink NVLPW_CTRL error", "critical", "nvlink", "reset_gpu", "contact_support"),
    _xid(149, "NVLINK_NETIR_ERROR", "NVLink NETIR error", "critical", "nvlink", "reset_gpu", "contact_support"),
    _xid(150, "NVLINK_MSE_ERROR", "NVLink MSE error", "critical", "nvlink", "reset_gpu", "contact_support"),
    _xid(154, "GPU_RECOVERY_ACTION_CHANGED", "GPU recovery action changed (summarises the action needed for another XID)",
         "info", "driver", "none"),
    _xid(155, "NVLINK_SW_DEFINED_ERROR", "NVLink link down flagged as intentional",
         "warning", "nvlink", "reset_gpu", "check_application"),
    _xid(156, "RESOURCE_RETIREMENT_EVENT", "Resource retirement event",
         "warning", "gpu", "reset_gpu", "none"),
    _xid(157, "RESOURCE_RETIREMENT_FAILURE", "Resource retirement failure (no spare resources left)",
         "warning", "gpu", "contact_support", "replace"),
    _xid(158, "GPU_FATAL_TIMEOUT", "GPU fatal timeout",
         "critical", "gpu", "reset_gpu", "contact_support"),
)

#: XID code -> entry.
XID_CATALOG: Dict[int, FaultEntry] = {entry.code: entry for entry in _XID_ENTRIES}

_DCGM_ENTRIES = (
    _dcgm(0, "DCGM_FR_OK", "No error", "info", "unknown", "none"),
    _dcgm(1, "DCGM_FR_UNKNOWN", "Unknown error", "warning", "unknown", "contact_support"),
    _dcgm(2, "DCGM_FR_UNRECOGNIZED", "Unrecognized error code", "warning", "unknown", "contact_support"),
    _dcgm(3, "DCGM_FR_PCI_REPLAY_RATE", "Unacceptable rate of PCIe replays", "warning", "pcie", "contact_support", "replace"),
    _dcgm(4, "DCGM_FR_VOLATILE_DBE_DETECTED", "Uncorrectable volatile double-bit ECC error", "critical", "memory", "reset_gpu", "contact_support"),
    _dcgm(5, "DCGM_FR_VOLATILE_SBE_DETECTED", "Unacceptable rate of volatile single-bit ECC errors", "warning", "memory", "none", "contact_support"),
    _dcgm(6, "DCGM_FR_PENDING_PAGE_RETIREMENTS", "Pending page retirements", "critical", "memory", "reset_gpu"),
    _dcgm(7, "DCGM_FR_RETIRED_PAGES_LIMIT", "Too many retired pages", "critical", "memory", "replace"),
    _dcgm(8, "DCGM_FR_RETIRED_PAGES_DBE_LIMIT", "Too many pages retired for double-bit errors", "critical", "memory", "replace"),
    _dcgm(9, "DCGM_FR_CORRUPT_INFOROM", "Corrupt InfoROM", "critical", "firmware", "contact_support", "replace"),
    _dcgm(10, "DCGM_FR_CLOCK_THROTTLE_THERMAL", "Clocks throttled for overheating", "warning", "thermal", "contact_support"),
    _dcgm(11, "DCGM_FR_POWER_UNREADABLE", "Power usage cannot be read", "warning", "power", "contact_support"),
    _dcgm(12, "DCGM_FR_CLOCK_THROTTLE_POWER", "Clocks throttled for power", "warning", "power", "contact_support"),
    _dcgm(13, "DCGM_FR_NVLINK_ERROR_THRESHOLD", "Unacceptable rate of NVLink errors", "warning", "nvlink", "reset_gpu", "contact_support"),
    _dcgm(14, "DCGM_FR_NVLINK_DOWN", "NVLink is down", "critical", "nvlink", "reset_gpu", "contact_support"),
    _dcgm(15, "DCGM_FR_NVSWITCH_FATAL_ERROR", "Fatal NVSwitch error", "critical", "fabric", "reboot", "contact_support"),
    _dcgm(16, "DCGM_FR_NVSWITCH_NON_FATAL_ERROR", "Non-fatal NVSwitch error", "warning", "fabric", "none", "contact_support"),
    _dcgm(18, "DCGM_FR_NO_ACCESS_TO_FILE", "A file cannot be accessed", "warning", "software", "contact_support"),
    _dcgm(20, "DCGM_FR_DEVICE_COUNT_MISMATCH", "GPU count differs between /dev and NVML", "critical", "driver", "reboot", "contact_support"),
    _dcgm(21, "DCGM_FR_BAD_PARAMETER", "Bad parameter passed to the diagnostic", "warning", "software", "contact_support"),
    _dcgm(22, "DCGM_FR_CANNOT_OPEN_LIB", "A required library cannot be opened", "critical", "software", "contact_support"),
    _dcgm(23, "DCGM_FR_DENYLISTED_DRIVER", "A denylisted driver (nouveau) is loaded", "critical", "software", "reboot", "contact_support"),
    _dcgm(25, "DCGM_FR_GRAPHICS_PROCESSES", "Graphics processes are running on the GPU", "warning", "software", "check_application"),
    _dcgm(27, "DCGM_FR_FIELD_QUERY", "A DCGM field could not be queried", "warning", "software", "contact_support"),
    _dcgm(28, "DCGM_FR_BAD_CUDA_ENV", "Environment variables that hurt CUDA are set", "warning", "software", "check_application"),
    _dcgm(29, "DCGM_FR_PERSISTENCE_MODE", "Persistence mode is disabled", "warning", "software", "none"),
    _dcgm(30, "DCGM_FR_LOW_BANDWIDTH", "PCIe/NVLink bandwidth is too low", "critical", "pcie", "contact_support", "replace"),
    _dcgm(31, "DCGM_FR_HIGH_LATENCY", "PCIe latency is too high", "warning", "pcie", "contact_support"),
    _dcgm(33, "DCGM_FR_FIELD_VIOLATION", "An error counter is above zero", "warning", "unknown", "contact_support"),
    _dcgm(34, "DCGM_FR_FIELD_THRESHOLD", "A value is above its threshold", "warning", "unknown", "contact_support"),
    _dcgm(40, "DCGM_FR_THERMAL_VIOLATIONS", "Thermal violations", "warning", "thermal", "contact_support"),
    _dcgm(41, "DCGM_FR_THERMAL_VIOLATIONS_TS", "Thermal violations", "warning", "thermal", "contact_support"),
    _dcgm(42, "DCGM_FR_TEMP_VIOLATION", "Temperature is too high", "warning", "thermal", "contact_support"),
    _dcgm(43, "DCGM_FR_THROTTLING_VIOLATION", "Non-benign clock throttling", "warning", "thermal", "contact_support"),
    _dcgm(44, "DCGM_FR_INTERNAL", "Internal DCGM error", "warning", "software", "contact_support"),
    _dcgm(45, "DCGM_FR_PCIE_GENERATION", "PCIe generation is too low", "warning", "pcie", "contact_support"),
    _dcgm(46, "DCGM_FR_PCIE_WIDTH", "PCIe link width is too low", "critical", "pcie", "contact_support", "replace"),
    _dcgm(47, "DCGM_FR_ABORTED", "Test aborted by a signal", "info", "software", "none"),
    _dcgm(48, "DCGM_FR_TEST_DISABLED", "Test disabled for this GPU", "info", "software", "none"),
    _dcgm(49, "DCGM_FR_CANNOT_GET_STAT", "Telemetry for a needed value is missing", "warning", "software", "contact_support"),
    _dcgm(50, "DCGM_FR_STRESS_LEVEL", "Stress level too low (bad performance)", "warning", "performance", "contact_support"),
    _dcgm(51, "DCGM_FR_CUDA_API", "CUDA API call failed", "warning", "software", "reset_gpu", "contact_support"),
    _dcgm(52, "DCGM_FR_FAULTY_MEMORY", "Faulty GPU memory detected", "critical", "memory", "replace"),
    _dcgm(54, "DCGM_FR_CUDA_UNBOUND", "CUDA context no longer bound", "warning", "software", "reset_gpu"),
    _dcgm(55, "DCGM_FR_ECC_DISABLED", "ECC memory is disabled", "warning", "memory", "reboot"),
    _dcgm(56, "DCGM_FR_MEMORY_ALLOC", "GPU memory cannot be allocated", "warning", "memory", "check_application"),
    _dcgm(57, "DCGM_FR_CUDA_DBE", "CUDA detected an uncorrectable double-bit error", "critical", "memory", "reset_gpu", "contact_support"),
    _dcgm(58, "DCGM_FR_MEMORY_MISMATCH", "GPU memory miscompare", "critical", "memory", "replace"),
    _dcgm(59, "DCGM_FR_CUDA_DEVICE", "No CUDA device for an existing GPU", "critical", "driver", "reboot", "contact_support"),
    _dcgm(60, "DCGM_FR_ECC_UNSUPPORTED", "ECC is unsupported on this SKU", "info", "memory", "none"),
    _dcgm(62, "DCGM_FR_MEMORY_BANDWIDTH", "Memory bandwidth is too low", "warning", "performance", "contact_support"),
    _dcgm(63, "DCGM_FR_TARGET_POWER", "Target power draw not reached", "warning", "power", "contact_support"),
    _dcgm(64, "DCGM_FR_API_FAIL", "An API call failed", "warning", "software", "contact_support"),
    _dcgm(65, "DCGM_FR_API_FAIL_GPU", "An API call failed for this GPU", "warning", "gpu", "reset_gpu", "contact_support"),
    _dcgm(66, "DCGM_FR_CUDA_CONTEXT", "CUDA context cannot be created", "critical", "gpu", "reset_gpu", "contact_support"),
    _dcgm(67, "DCGM_FR_DCGM_API", "DCGM API failure", "warning", "software", "contact_support"),
    _dcgm(68, "DCGM_FR_CONCURRENT_GPUS", "Test needs several GPUs", "info", "software", "none"),
    _dcgm(70, "DCGM_FR_NVLINK_CRC_ERROR_THRESHOLD", "NVLink CRC error rate too high", "warning", "nvlink", "reset_gpu", "contact_support"),
    _dcgm(71, "DCGM_FR_NVLINK_ERROR_CRITICAL", "NVLink error on a counter that must stay zero", "critical", "nvlink", "reset_gpu", "contact_support"),
    _dcgm(72, "DCGM_FR_ENFORCED_POWER_LIMIT", "Enforced power limit too low for the test", "warning", "power", "none"),
    _dcgm(73, "DCGM_FR_MEMORY_ALLOC_HOST", "Host memory cannot be allocated", "warning", "software", "none"),
    _dcgm(77, "DCGM_FR_HAD_TO_RESTORE_STATE", "GPU state had to be restored", "info", "software", "none"),
    _dcgm(78, "DCGM_FR_L1TAG_UNSUPPORTED", "L1TAG test unsupported on this SKU", "info", "gpu", "none"),
    _dcgm(79, "DCGM_FR_L1TAG_MISCOMPARE", "L1TAG test miscompare", "critical", "gpu", "replace"),
    _dcgm(80, "DCGM_FR_ROW_REMAP_FAILURE", "Row remapping failed", "critical", "memory", "replace"),
    _dcgm(81, "DCGM_FR_UNCONTAINED_ERROR", "Uncontained error (XID 95)", "critical", "memory", "reset_gpu", "contact_support"),
    _dcgm(82, "DCGM_FR_EMPTY_GPU_LIST", "No GPU given to the test", "warning", "software", "none"),
    _dcgm(83, "DCGM_FR_DBE_PENDING_PAGE_RETIREMENTS", "Pending page retirements after a double-bit error", "critical", "memory", "reset_gpu"),
    _dcgm(84, "DCGM_FR_UNCORRECTABLE_ROW_REMAP", "Uncorrectable row remapping", "critical", "memory", "reset_gpu", "replace"),
    _dcgm(85, "DCGM_FR_PENDING_ROW_REMAP", "Row remapping is pending", "critical", "memory", "reset_gpu"),
    _dcgm(86, "DCGM_FR_BROKEN_P2P_MEMORY_DEVICE", "Peer-to-peer write into this GPU failed", "critical", "nvlink", "reset_gpu", "contact_support"),
    _dcgm(87, "DCGM_FR_BROKEN_P2P_WRITER_DEVICE", "Peer-to-peer write from this GPU failed", "critical", "nvlink", "reset_gpu", "contact_support"),
    _dcgm(89, "DCGM_FR_EUD_BINARY_PERMISSIONS", "EUD binary permissions are wrong", "warning", "software", "none"),
    _dcgm(90, "DCGM_FR_EUD_NON_ROOT_USER", "EUD must run as root", "warning", "software", "none"),
    _dcgm(91, "DCGM_FR_EUD_SPAWN_FAILURE", "EUD binary could not be started", "warning", "software", "contact_support"),
    _dcgm(92, "DCGM_FR_EUD_TIMEOUT", "EUD timed out", "warning", "software", "contact_support"),
    _dcgm(93, "DCGM_FR_EUD_ZOMBIE", "EUD process kept running", "warning", "software", "reboot"),
    _dcgm(94, "DCGM_FR_EUD_NON_ZERO_EXIT_CODE", "EUD exited with an error", "critical", "gpu", "contact_support"),
    _dcgm(95, "DCGM_FR_EUD_TEST_FAILED", "EUD (field diagnostic) test failed", "critical", "gpu", "contact_support", "replace"),
    _dcgm(96, "DCGM_FR_FILE_CREATE_PERMISSIONS", "A file cannot be created", "warning", "software", "none"),
    _dcgm(97, "DCGM_FR_PAUSE_RESUME_FAILED", "Pause/resume of DCGM failed", "warning", "software", "contact_support"),
    _dcgm(98, "DCGM_FR_PCIE_H_REPLAY_VIOLATION", "PCIe test caught correctable errors", "warning", "pcie", "contact_support"),
    _dcgm(99, "DCGM_FR_GPU_EXPECTED_NVLINKS_UP", "Fewer NVLinks up on the GPU than expected", "critical", "nvlink", "reset_gpu", "contact_support"),
    _dcgm(100, "DCGM_FR_NVSWITCH_EXPECTED_NVLINKS_UP", "Fewer NVLinks up on an NVSwitch than expected", "critical", "fabric", "reboot", "contact_support"),
    _dcgm(101, "DCGM_FR_XID_ERROR", "XID error detected", "warning", "driver", "contact_support"),
    _dcgm(102, "DCGM_FR_SBE_VIOLATION", "Single-bit ECC error detected", "warning", "memory", "none"),
    _dcgm(103, "DCGM_FR_DBE_VIOLATION", "Double-bit ECC error detected", "critical", "memory", "reset_gpu", "contact_support"),
    _dcgm(104, "DCGM_FR_PCIE_REPLAY_VIOLATION", "PCIe replay errors detected", "warning", "pcie", "contact_support"),
    _dcgm(105, "DCGM_FR_SBE_THRESHOLD_VIOLATION", "Single-bit ECC error threshold exceeded", "warning", "memory", "contact_support"),
    _dcgm(106, "DCGM_FR_DBE_THRESHOLD_VIOLATION", "Double-bit ECC error threshold exceeded", "critical", "memory", "reset_gpu", "replace"),
    _dcgm(107, "DCGM_FR_PCIE_REPLAY_THRESHOLD_VIOLATION", "PCIe replay threshold exceeded", "warning", "pcie", "contact_support"),
    _dcgm(108, "DCGM_FR_CUDA_FM_NOT_INITIALIZED", "Fabric Manager is not initialized (start nvidia-fabricmanager)",
          "critical", "fabric", "contact_support"),
    _dcgm(109, "DCGM_FR_SXID_ERROR", "Fatal NVSwitch error (SXID)", "critical", "fabric", "reboot", "contact_support"),
    _dcgm(110, "DCGM_FR_GFLOPS_THRESHOLD_VIOLATION", "GFLOPS below threshold", "warning", "performance", "contact_support"),
    _dcgm(111, "DCGM_FR_NAN_VALUE", "NaN value produced by the GPU", "critical", "gpu", "contact_support", "replace"),
)

#: DCGM error code (dcgmError_t) -> entry.
DCGM_ERROR_CATALOG: Dict[int, FaultEntry] = {entry.code: entry for entry in _DCGM_ENTRIES}
_DCGM_BY_NAME: Dict[str, FaultEntry] = {entry.mnemonic: entry for entry in _DCGM_ENTRIES}

#: dcgmErrorSeverity_t as reported in DCGM 4.x JSON (``error_severity``).
DCGM_REPORTED_SEVERITY = {0: "none", 1: "monitor", 2: "isolate", 3: "unknown", 4: "triage", 5: "config", 6: "reset"}


def _coerce_code(code: Any, what: str) -> int:
    if isinstance(code, bool):
        raise ValueError("%s must be an integer, got %r" % (what, code))
    if isinstance(code, int):
        return code
    if isinstance(code, str) and code.strip().lstrip("-").isdigit():
        return int(code.strip())
    raise ValueError("%s must be an integer, got %r" % (what, code))


def lookup_xid(code: Any) -> FaultEntry:
    """Catalog entry of an XID; an unknown code gives a conservative, non-condemning entry."""
    value = _coerce_code(code, "XID code")
    entry = XID_CATALOG.get(value)
    if entry is not None:
        return entry
    return FaultEntry("xid", value, "UNKNOWN_XID", "XID %d is not in the catalog" % value, "warning", "unknown",
                      "contact_support", "contact_support", False, False)


def lookup_dcgm_error(code: Any) -> FaultEntry:
    """Catalog entry of a DCGM error code (number or ``DCGM_FR_*`` name); unknown codes are conservative."""
    if isinstance(code, str) and code.strip().upper().startswith("DCGM_FR_"):
        entry = _DCGM_BY_NAME.get(code.strip().upper())
        if entry is not None:
            return entry
        return FaultEntry("dcgm", -1, code.strip().upper(), "DCGM error %s is not in the catalog" % code.strip(), "warning",
                          "unknown", "contact_support", "contact_support", False, False)
    value = _coerce_code(code, "DCGM error code")
    entry = DCGM_ERROR_CATALOG.get(value)
    if entry is not None:
        return entry
    return FaultEntry("dcgm", value, "DCGM_FR_UNKNOWN_%d" % value, "DCGM error %d is not in the catalog" % value, "warning",
                      "unknown", "contact_support", "contact_support", False, False)


def condemns_node(entry: Optional[FaultEntry]) -> bool:
    """True when the fault by itself takes the node out of service (critical and not application-class)."""
    if entry is None:
        return False
    return entry.severity == "critical" and not entry.application_class and entry.known


def strongest_action(actions: Iterable[str]) -> str:
    """The highest-ranked action of ``actions`` (``none`` for an empty input)."""
    best = "none"
    for action in actions:
        if ACTION_RANK.get(action, ACTION_RANK["contact_support"]) > ACTION_RANK[best]:
            best = action if action in ACTION_RANK else "contact_support"
    return best
