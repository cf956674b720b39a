# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Sentinel MTTR benchmark: mean time to return one node to service through the whole loop, on the network-namespace
fabric (needs root, iproute2, sshd, OpenMPI; builds the nccl-tests stand-in) and the Kubernetes emulator.

One ``ansible-playbook dsxos.cluster.remediate`` run per repetition with one XID 79 alert for a fresh node of the
emulator whose host is a fabric host (``sentinel_node_hosts``), with the role's own task files (no stub):
quarantine (cordon + taint, incident), drain (the node's pods, their grace scaled by ``--time-scale``),
``tasks/remediation/reboot.yml`` (with the reboot stand-in of tests/harness/reboot_standin.py, set per host with
``sentinel_host_reboot``: THAT host's sshd is killed and restarted, its boot-id file changes; the machine is never
touched), ``tasks/recertify.yml`` (gpu-health on recorded NVML readings, nccl-loopback and nccl-all-reduce with 2
neighbours on the CPU stand-in) and the return (uncordon, incident closed). A thread reads the node's incident record
every 50 ms (its steps carry millisecond times); the stand-in's event log splits the reboot:

  alert -> quarantined - ansible-playbook start, the decision, lock, breaker, cordon + taint, incident opened;
  drain               - quarantined until drained (evictions, the pods' grace);
  reboot: checks      - drained until the reboot command (lock renewal, boot id read, the reboot module's checks);
  reboot: shutdown    - the reboot command answered, until the host is down (the stand-in's --down-delay);
  reboot: boot        - down until sshd answers again (the stand-in's --boot-s: a real GPU node takes minutes here);
  reconnection        - sshd answers until the recertification starts (the new boot id seen, test command, records);
  recertify           - recertifying until returned (uncordon and close included).

Usage: python bench/sentinel_mttr_bench.py [--runs N] [--pods 15] [--time-scale 0.1] [--boot-s S] [--down-delay S]
"""
from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
import conftest  # noqa: E402,F401  # pylint: disable=unused-import,wrong-import-position
sys.path.insert(0, str(REPO / "tests" / "integration"))

from playbook_runner import build_and_install, run_playbook  # noqa: E402  # pylint: disable=wrong-import-position

from _backends import load_average  # noqa: E402  # pylint: disable=wrong-import-position

from ansible_collections.dsxos.cluster.plugins.module_utils.operate.incident_values import parse_rfc3339  # noqa: E402
from ansible_collections.dsxos.cluster.tests.harness import reboot_standin  # noqa: E402
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.emulator import Emulator  # noqa: E402
from ansible_collections.dsxos.cluster.tests.harness.nccl_standin.build import build_standin  # noqa: E402
from ansible_collections.dsxos.cluster.tests.harness.netns_fabric import NetnsFabric  # noqa: E402

NVML = REPO / "tests" / "unit" / "fixtures" / "nvml"
STEPS = ["alert -> quarantined", "drain", "reboot: checks", "reboot: shutdown", "reboot: boot", "reconnection", "recertify"]


class IncidentWatch(threading.Thread):
    """Reads one node's incident record every ``period_s`` and keeps the first time of each step (from the record)."""

    def __init__(self, emu: Emulator, node: str, period_s: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.emu, self.node, self.period_s = emu, node, period_s
        self.steps: Dict[str, float] = {}
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            try:
                self.read()
            except Exception as exc:  # pylint: disable=broad-except  # reported, the watch goes on
                print("incident watch: %s: %s" % (self.node, exc), file=sys.stderr)
            time.sleep(self.period_s)

    def read(self) -> None:
        """One read of the node's incident record."""
        notes = self.emu.api.get("v1", "Node", self.node)["metadata"].get("annotations") or {}
        text = notes.get("dsxos.io/incident")
        for step in json.loads(text).get("steps") or [] if text else []:
            self.steps.setdefault(step["state"], parse_rfc3339(step["time"]))
        for entry in json.loads(notes.get("dsxos.io/incident-history") or "[]"):
            if entry.get("outcome") and entry.get("ended_at"):
                self.steps.setdefault(entry["outcome"], parse_rfc3339(entry["ended_at"]))


def _xid79(node: str) -> dict:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {"node": node, "gpu": "3", "uuid": "GPU-bench", "code": 79, "fault_class": "fallen-off-bus", "action": None,
            "status": "firing", "fingerprint": "bench-" + node, "starts_at": now, "ends_at": None, "pods": [],
            "alertname": "XidCritical", "severity": "critical", "labels": {"bench": "mttr"}}


def _inventory(fabric: NetnsFabric, standin: reboot_standin.RebootStandin, work: Path, args: argparse.Namespace) -> Path:
    inv_dir = work / "inventory"
    (inv_dir / "host_vars").mkdir(parents=True, exist_ok=True)
    data = yaml.safe_load(Path(fabric.inventory_path).read_text(encoding="utf-8"))
    data["all"]["hosts"] = {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}
    (inv_dir / "hosts.yml").write_text(yaml.safe_dump(data), encoding="utf-8")
    for name in fabric.names:
        reboot = standin.sentinel_reboot(name, down_delay_s=args.down_delay, boot_s=args.boot_s)
        host_vars = {"certify_recorded_readings": str(NVML / "h100x8_healthy.json"),
                     "sentinel_host_reboot": {k: reboot[k] for k in ("command", "boot_time_command")}}
        (inv_dir / "host_vars" / f"{name}.yml").write_text(yaml.safe_dump(host_vars), encoding="utf-8")
    return inv_dir / "hosts.yml"


def one_run(index: int, emu: Emulator, fabric: NetnsFabric, standin: reboot_standin.RebootStandin, root: Path, binary: Path,
            work: Path, inventory: Path, pods: int) -> Dict[str, float]:
    host = fabric.names[0]
    node = emu.add_nodes(1, "h100-eks", name_prefix=f"gpu-mttr{index}-")[0]
    if pods:
        emu.seed_pods(pods, namespace=f"ml-{index}", nodes=[node])
    recertify = {
        "categories": ["gpu-health", "nccl-loopback", "nccl-all-reduce"], "gpu_health": {"expected_gpu_count": 8},
        "nccl_loopback": {"binary_dir": str(binary), "gpus": 2, "mpirun": {"enabled": True, "allow_run_as_root": True},
                          "min_bytes": "1M", "max_bytes": "2M", "iters": 3, "warmup": 1},
        "mpirun": {"binary_dir": str(binary), "launcher_env": fabric.mpirun_env(), "allow_run_as_root": True,
                   "args": {"min_bytes": "1M", "max_bytes": "2M", "iters": 3, "warmup": 1}},
        "thresholds": {"use_builtin_floors": False, "relative": {"fraction": 0.25, "mad_z": 50}},
        "timeout_s": 120, "neighbour_group": "gpu_nodes", "report_dir": str(work / "reports"),
    }
    variables = {"sentinel_k8s_auth": {"kubeconfig": emu.kubeconfig_path}, "sentinel_destructive": True,
                 "sentinel_events": [_xid79(node)], "sentinel_node_hosts": {node: host},
                 "sentinel_reboot": {"timeout_s": 120, "test_command": "true", "connect_timeout_s": 5},
                 "sentinel_recertify": recertify, "sentinel_recertify_neighbours": 2,
                 # the seeded pods are bare (no controller): force evicts them, as the storm bench does
                 "sentinel_drain": {"timeout_s": 600, "force": True},
                 # one fresh node per repetition: the breaker (10 % of the fleet by default) would count them all
                 "sentinel_circuit_breaker": {"max_fraction": 1.0, "max_nodes": 100}}
    seen = len(standin.events(host))
    watch = IncidentWatch(emu, node)
    watch.start()
    start = time.time()
    try:
        result = run_playbook("dsxos.cluster.remediate", root, work / "run", extra_vars=variables, inventory=inventory,
                              extra_args=["-f", "10"])
    finally:
        standin.sync_fabric_pids()
        time.sleep(0.2)
        watch.halt.set()
        watch.join()
    wall = time.time() - start
    if result.rc != 0 or "returned" not in watch.steps:
        raise SystemExit("repetition %d did not return the node (steps seen: %s)\n%s" % (index, sorted(watch.steps), result.describe()))
    events = {e["event"]: float(e["time"]) for e in standin.events(host)[seen:]}
    at = watch.steps
    steps = {"alert -> quarantined": at["quarantined"] - start, "drain": at["drained"] - at["quarantined"],
             "reboot: checks": events["requested"] - at["drained"], "reboot: shutdown": events["down"] - events["requested"],
             "reboot: boot": events["up"] - events["down"], "reconnection": at["recertifying"] - events["up"],
             "recertify": at["returned"] - at["recertifying"]}
    steps["ansible-playbook end"] = wall - (at["returned"] - start)
    return steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pods", type=int, default=15, help="pods on the node (drained before the reboot)")
    parser.add_argument("--time-scale", type=float, default=0.1, help="emulator time scale (the pods' 30 s grace becomes 3 s)")
    parser.add_argument("--boot-s", type=float, default=1.0, help="how long the stand-in host stays down")
    parser.add_argument("--down-delay", type=float, default=1.0, help="seconds between the reboot command and the host going down")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dsxos-mttr-bench-"))
    root = build_and_install(work / "collections", work / "dist")
    binary = build_standin()
    emu = Emulator(time_scale=args.time_scale, seed=7, workdir=str(work / "emulator")).start()
    fabric = NetnsFabric(hosts=3, workdir=work / "fabric").start()
    runs = []
    try:
        standin = reboot_standin.install(fabric)
        inventory = _inventory(fabric, standin, work, args)
        for index in range(args.runs):
            runs.append(one_run(index, emu, fabric, standin, root, binary, work / f"run{index}", inventory, args.pods))
    finally:
        fabric.stop()
        emu.stop()
    mean = {name: statistics.mean(r[name] for r in runs) for name in STEPS + ["ansible-playbook end"]}
    total = sum(mean[n] for n in STEPS)
    print("Sentinel MTTR, the whole loop (remediate playbook: quarantine, drain of %d pods with %.1f s grace, reboot stand-in down"
          " %.1f s after the command and %.1f s \"boot\", recertify with 2 neighbours, return) on the 3-host netns fabric and the"
          " emulator, mean of %d runs; %s" % (args.pods, 30 * args.time_scale, args.down_delay, args.boot_s, len(runs), load_average()))
    print("  %-24s %7.1f s   (runs: %s s)" % ("time to return", total, ", ".join("%.1f" % sum(r[n] for n in STEPS) for r in runs)))
    for name in STEPS:
        spread = "%.1f-%.1f" % (min(r[name] for r in runs), max(r[name] for r in runs))
        print("  %-24s %7.1f s  %5.1f%%   (runs: %s s)" % (name, mean[name], 100.0 * mean[name] / total, spread))
    print("  %-24s %7.1f s  (after the return: the summary, the process's end)" % ("ansible-playbook end", mean["ansible-playbook end"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
