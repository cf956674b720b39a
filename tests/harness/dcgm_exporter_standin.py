# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A stand-in of NVIDIA dcgm-exporter for one GPU node: an HTTP server on 127.0.0.1 serving ``/metrics`` as dcgm-exporter does.

What it serves is decided by the exporter's counters CSV (the format of dcgm-exporter's ``default-counters.csv`` and of
the GPU Operator's ``dcgmExporter.config`` ConfigMap: ``DCGM field, Prometheus type, help``): one metric per ``gauge`` /
``counter`` field, every ``label`` field (``DCGM_FI_DRIVER_VERSION``) a label on every series. Each series carries the
labels dcgm-exporter puts on it: ``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``, ``Hostname``, the label
fields, and ``container``/``namespace``/``pod`` while a workload uses the GPU (its Kubernetes pod mapping).

The values come from a :class:`GpuNodeModel`: a healthy background (below every alert threshold of the shipped rules,
but not zero where a real GPU is not: a little throttling, some NVLink CRC noise, PCIe replays) and the faults
:data:`FAULTS` injected on one GPU from an onset time. The model is a function of scenario time ``t`` (seconds), so
the same model feeds the live server (``t`` = seconds since :meth:`DcgmExporterStandin.start`) and a rule-time replay
(``t`` = promtool's time). A field the model has no value for is served as 0 (gauge) or a constant (counter).
"""
from __future__ import annotations

import math
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

#: Fault kinds a model can inject, with what they do to the faulty GPU from the onset on
FAULTS: Dict[str, str] = {
    "xid": "DCGM_FI_DEV_XID_ERRORS holds XID 79 (the GPU fell off the bus)",
    "dbe": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL / _AGG_TOTAL grow by one double-bit error per minute",
    "nvlink": "NVLink flit CRC errors at 5/s and one NVLink recovery error per minute",
    "thermal": "thermally throttled 90 % of the time (DCGM_FI_DEV_THERMAL_VIOLATION grows 0.9e9 ns/s)",
    "missing": "the GPU stops reporting: none of its series is served any more",
}
#: Healthy background per field: (value at t=0, growth per second) - counters grow, gauges stay
HEALTHY: Dict[str, Tuple[float, float]] = {
    "DCGM_FI_DEV_SM_CLOCK": (1980.0, 0.0),
    "DCGM_FI_DEV_MEM_CLOCK": (2619.0, 0.0),
    "DCGM_FI_DEV_MEMORY_TEMP": (52.0, 0.0),
    "DCGM_FI_DEV_GPU_TEMP": (61.0, 0.0),
    "DCGM_FI_DEV_POWER_USAGE": (512.5, 0.0),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": (9.1e9, 512500.0),
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": (12.0, 0.05),
    "DCGM_FI_DEV_GPU_UTIL": (93.0, 0.0),
    "DCGM_FI_DEV_MEM_COPY_UTIL": (41.0, 0.0),
    "DCGM_FI_DEV_XID_ERRORS": (0.0, 0.0),
    "DCGM_FI_DEV_POWER_VIOLATION": (4.0e11, 0.02e9),
    "DCGM_FI_DEV_THERMAL_VIOLATION": (1.0e11, 0.01e9),
    "DCGM_FI_DEV_FB_FREE": (1297.0, 0.0),
    "DCGM_FI_DEV_FB_USED": (79703.0, 0.0),
    "DCGM_FI_DEV_FB_RESERVED": (559.0, 0.0),
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": (40.0, 0.1),
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": (3.0, 0.02),
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": (7.0, 0.05),
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": (8.0e12, 2.5e10),
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": (2.0, 0.0),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": (0.91, 0.0),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": (0.62, 0.0),
    "DCGM_FI_PROF_DRAM_ACTIVE": (0.48, 0.0),
    "DCGM_FI_PROF_PCIE_TX_BYTES": (2.1e9, 0.0),
    "DCGM_FI_PROF_PCIE_RX_BYTES": (2.4e9, 0.0),
}


@dataclass(frozen=True)
class CounterField:
    """One line of a counters CSV."""

    name: str
    kind: str
    help: str


def parse_counters_csv(text: str) -> List[CounterField]:
    """The fields of a dcgm-exporter counters CSV (comments and blank lines skipped); ValueError on a malformed line."""
    fields: List[CounterField] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [part.strip() for part in line.split(",", 2)]
        if len(parts) < 2 or not parts[0].startswith("DCGM_") or parts[1] not in ("gauge", "counter", "label"):
            raise ValueError("counters CSV line %d is not 'DCGM field, gauge|counter|label, help': %r" % (number, line))
        fields.append(CounterField(parts[0], parts[1], parts[2] if len(parts) > 2 else ""))
    return fields


def gpu_uuid(node: str, gpu: int) -> str:
    """A stable GPU UUID for a node's GPU (``GPU-xxxxxxxx-xxxx-...``)."""
    return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, "%s/gpu/%d" % (node, gpu)))


@dataclass
class GpuNodeModel:
    """The values of one node's GPUs as a function of scenario time (see the module doc)."""

    node: str
    gpus: int = 8
    model_name: str = "NVIDIA H100 80GB HBM3"
    driver_version: str = "570.124.06"
    #: GPU index -> (namespace, pod, container) of the workload using it
    workloads: Dict[int, Tuple[str, str, str]] = field(default_factory=dict)
    #: fault -> (GPU index, onset in scenario seconds)
    faults: Dict[str, Tuple[int, float]] = field(default_factory=dict)

    def inject(self, fault: str, gpu: int, onset: float) -> None:
        if fault not in FAULTS:
            raise ValueError("unknown fault %r (known: %s)" % (fault, ", ".join(FAULTS)))
        if not 0 <= gpu < self.gpus:
            raise ValueError("GPU %d out of range (0-%d)" % (gpu, self.gpus - 1))
        self.faults[fault] = (gpu, float(onset))

    def _active(self, fault: str, gpu: int, t: float) -> Optional[float]:
        """Seconds since the onset of ``fault`` on ``gpu`` at ``t`` (None: not active)."""
        found = self.faults.get(fault)
        if found is None or found[0] != gpu or t < found[1]:
            return None
        return t - found[1]

    def reports(self, gpu: int, t: float) -> bool:
        """Does the GPU report at all at ``t``?"""
        return self._active("missing", gpu, t) is None

    def value(self, name: str, kind: str, gpu: int, t: float) -> Optional[float]:
        """The value of field ``name`` (``kind`` gauge/counter) of ``gpu`` at ``t``; None while the GPU does not report."""
        if not self.reports(gpu, t):
            return None
        base, growth = HEALTHY.get(name, (0.0, 0.0))
        # a little per-GPU spread, so the GPUs of a node are not identical
        value = base * (1.0 + 0.003 * gpu) if kind == "gauge" else base + growth * max(t, 0.0)
        xid = self._active("xid", gpu, t)
        dbe = self._active("dbe", gpu, t)
        nvlink = self._active("nvlink", gpu, t)
        thermal = self._active("thermal", gpu, t)
        if name == "DCGM_FI_DEV_XID_ERRORS" and xid is not None:
            value = 79.0
        elif name in ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL") and dbe is not None:
            value += math.floor(dbe / 60.0) + 1
        elif name == "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL" and nvlink is not None:
            value += 5.0 * nvlink
        elif name == "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL" and nvlink is not None:
            value += math.floor(nvlink / 60.0) + 1
        elif name == "DCGM_FI_DEV_THERMAL_VIOLATION" and thermal is not None:
            value += 0.9e9 * thermal
        if kind == "counter":
            value = float(math.floor(value))
        return value

    def labels(self, gpu: int, label_fields: Mapping[str, str]) -> Dict[str, str]:
        """The labels of the GPU's series (dcgm-exporter's, in its order)."""
        out = {"gpu": str(gpu), "UUID": gpu_uuid(self.node, gpu), "pci_bus_id": "00000000:%02X:00.0" % (0x18 + 0x10 * gpu),
               "device": "nvidia%d" % gpu, "modelName": self.model_name, "Hostname": self.node}
        out.update(label_fields)
        if gpu in self.workloads:
            namespace, pod, container = self.workloads[gpu]
            out.update(container=container, namespace=namespace, pod=pod)
        return out

    def label_fields(self, fields: Sequence[CounterField]) -> Dict[str, str]:
        known = {"DCGM_FI_DRIVER_VERSION": self.driver_version, "DCGM_FI_NVML_VERSION": "12." + self.driver_version,
                 "DCGM_FI_DEV_BRAND": "NVIDIA"}
        return {f.name: known.get(f.name, "n/a") for f in fields if f.kind == "label"}

    def samples(self, fields: Sequence[CounterField], t: float) -> List[Tuple[CounterField, Dict[str, str], float]]:
        """Every (field, labels, value) served at ``t``."""
        label_fields = self.label_fields(fields)
        out = []
        for item in fields:
            if item.kind == "label":
                continue
            for gpu in range(self.gpus):
                value = self.value(item.name, item.kind, gpu, t)
                if value is not None:
                    out.append((item, self.labels(gpu, label_fields), value))
        return out


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def format_value(value: float) -> str:
    return repr(float(value)) if not float(value).is_integer() or abs(value) >= 1e15 else str(int(value))


def exposition(samples: Sequence[Tuple[CounterField, Dict[str, str], float]]) -> str:
    """Prometheus text format (``# HELP``/``# TYPE`` once per metric, then its series)."""
    lines: List[str] = []
    seen = set()
    for item, labels, value in samples:
        if item.name not in seen:
            seen.add(item.name)
            lines.append("# HELP %s %s" % (item.name, item.help))
            lines.append("# TYPE %s %s" % (item.name, item.kind))
        body = ",".join('%s="%s"' % (key, _escape(val)) for key, val in labels.items())
        lines.append("%s{%s} %s" % (item.name, body, format_value(value)))
    return "\n".join(lines) + "\n"


class MetricsServer:
    """An HTTP server on 127.0.0.1 (free port) answering ``GET /metrics`` with ``render()``; counts the scrapes answered
    and those the scraper dropped."""

    def __init__(self, render: Callable[[], str]) -> None:
        self.render = render
        self.scrapes = 0
        #: answers the scraper closed before they were written (a scrape that timed out)
        self.dropped = 0
        self._server: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return int(self._server.server_address[1])

    @property
    def address(self) -> str:
        return "127.0.0.1:%d" % self.port

    def start(self) -> "MetricsServer":
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802  pylint: disable=invalid-name
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404)
                    return
                try:
                    body = owner.render().encode("utf-8")
                except Exception as exc:  # pylint: disable=broad-except
                    self.send_error(500, str(exc)[:200])
                    return
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    owner.dropped += 1  # the scraper gave up (its scrape timeout): counted, not printed
                    return
                owner.scrapes += 1

            def log_message(self, *args: object) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="metrics-%d" % self.port, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()


class DcgmExporterStandin(MetricsServer):
    """dcgm-exporter of one node: serves ``model`` at the seconds since ``start()`` (or since ``epoch`` when given)."""

    def __init__(self, model: GpuNodeModel, fields: Sequence[CounterField], epoch: Optional[float] = None) -> None:
        super().__init__(self._render)
        self.model = model
        self.fields = list(fields)
        self.epoch = epoch

    def now(self) -> float:
        """Scenario seconds now."""
        assert self.epoch is not None, "not started"
        return time.time() - self.epoch

    def start(self) -> "DcgmExporterStandin":
        if self.epoch is None:
            self.epoch = time.time()
        super().start()
        return self

    def _render(self) -> str:
        return exposition(self.model.samples(self.fields, self.now()))
