# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Sentinel MTTR benchmark: mean time to return one node to service through the reboot remediation and the
recertification, on the network-namespace fabric (needs root, iproute2, sshd, OpenMPI; builds the nccl-tests stand-in).

One ansible-playbook run per repetition, on localhost like the sentinel role, includes the role's task files
``tasks/remediation/reboot.yml`` (with the reboot stand-in of tests/harness/reboot_standin.py: THAT host's sshd is
killed and restarted, its boot-id file changes; the machine is never touched) and ``tasks/recertify.yml``
(gpu-health on recorded NVML readings, nccl-loopback and nccl-all-reduce with 2 neighbours on the CPU stand-in).
Time stamps come from the playbook (before/after each include) and from the stand-in's event log, so the time is
split into:

  reboot: checks   - reading the boot id and the reboot module's fact gathering, up to the reboot command;
  reboot: shutdown - the reboot command answered, until the host is down (the stand-in's --down-delay);
  reboot: boot     - down until sshd answers again (the stand-in's --boot-s: a real GPU node takes minutes here);
  reconnection     - sshd answers until Ansible has seen the new boot id, run the test command and re-read the id
                     (ansible.builtin.reboot's backoff: 1, 2, 4, 8, 12 s between probes);
  recertify        - the recertification task file.

Quarantine and drain belong to the sentinel role (another part of the work): STEP_HOOKS below is where their
measurements plug in (each hook returns {step name: seconds} for one repetition and is added to the table).

Usage: python bench/sentinel_mttr_bench.py [--runs N] [--boot-s S] [--down-delay S]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
import conftest  # noqa: E402,F401  # pylint: disable=unused-import,wrong-import-position
sys.path.insert(0, str(REPO / "tests" / "integration"))

from playbook_runner import build_and_install, run_playbook  # noqa: E402  # pylint: disable=wrong-import-position

from ansible_collections.dsxos.cluster.tests.harness import reboot_standin  # noqa: E402
from ansible_collections.dsxos.cluster.tests.harness.nccl_standin.build import build_standin  # noqa: E402
from ansible_collections.dsxos.cluster.tests.harness.netns_fabric import NetnsFabric  # noqa: E402

NVML = REPO / "tests" / "unit" / "fixtures" / "nvml"
STEPS = ["reboot: checks", "reboot: shutdown", "reboot: boot", "reconnection", "recertify"]
#: Extra steps measured elsewhere (quarantine, drain, release...): callables (repetition index) -> {step: seconds}.
STEP_HOOKS: List[Callable[[int], Dict[str, float]]] = []


def _playbook(root: Path, node: str, host: str, reboot: dict, recertify: dict) -> str:
    tasks_dir = root / "ansible_collections" / "dsxos" / "cluster" / "roles" / "sentinel" / "tasks"
    contract = {"sentinel_node": node, "sentinel_host": host, "sentinel_incident": {"id": "bench"}, "sentinel_gpus": [], "sentinel_pods": []}
    tasks = [
        {"name": "Mark start", "ansible.builtin.set_fact": {"bench_t0": "{{ now().timestamp() }}"}},
        {"name": "Reboot", "ansible.builtin.include_tasks": str(tasks_dir / "remediation" / "reboot.yml"),
         "vars": dict(contract, sentinel_reboot=reboot)},
        {"name": "Mark rebooted", "ansible.builtin.set_fact": {"bench_t1": "{{ now().timestamp() }}"}},
        {"name": "Recertify", "ansible.builtin.include_tasks": str(tasks_dir / "recertify.yml"),
         "vars": dict(contract, sentinel_recertify=recertify, sentinel_recertify_neighbours=2)},
        {"name": "Mark done", "ansible.builtin.set_fact": {"bench_t2": "{{ now().timestamp() }}"}},
        {"name": "Outcome", "ansible.builtin.debug": {"msg": {
            "t0": "{{ bench_t0 }}", "t1": "{{ bench_t1 }}", "t2": "{{ bench_t2 }}",
            "remediation": "{{ sentinel_remediation_result }}", "recertify": "{{ sentinel_recertify_result }}"}}},
    ]
    return yaml.safe_dump([{"name": "MTTR", "hosts": "localhost", "gather_facts": False, "tasks": tasks}], sort_keys=False)


def one_run(index: int, fabric: NetnsFabric, standin: reboot_standin.RebootStandin, root: Path, binary: Path, work: Path,
            args: argparse.Namespace) -> Dict[str, float]:
    host = fabric.names[0]
    inv_dir = work / "inventory"
    (inv_dir / "host_vars").mkdir(parents=True)
    data = yaml.safe_load(Path(fabric.inventory_path).read_text(encoding="utf-8"))
    data["all"]["hosts"] = {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}
    (inv_dir / "hosts.yml").write_text(yaml.safe_dump(data), encoding="utf-8")
    for name in fabric.names:
        (inv_dir / "host_vars" / f"{name}.yml").write_text(f"certify_recorded_readings: {NVML / 'h100x8_healthy.json'}\n", encoding="utf-8")
    recertify = {
        "categories": ["gpu-health", "nccl-loopback", "nccl-all-reduce"], "gpu_health": {"expected_gpu_count": 8},
        "nccl_loopback": {"binary_dir": str(binary), "gpus": 2, "mpirun": {"enabled": True, "allow_run_as_root": True},
                          "min_bytes": "1M", "max_bytes": "2M", "iters": 3, "warmup": 1},
        "mpirun": {"binary_dir": str(binary), "launcher_env": fabric.mpirun_env(), "allow_run_as_root": True,
                   "args": {"min_bytes": "1M", "max_bytes": "2M", "iters": 3, "warmup": 1}},
        "thresholds": {"use_builtin_floors": False, "relative": {"fraction": 0.25, "mad_z": 50}},
        "timeout_s": 120, "neighbour_group": "gpu_nodes", "report_dir": str(work / "reports"),
    }
    reboot = standin.sentinel_reboot(host, down_delay_s=args.down_delay, boot_s=args.boot_s)
    seen = len(standin.events(host))
    start = time.time()
    try:
        result = run_playbook(_playbook(root, "gpu-node-0", host, reboot, recertify), root, work / "run", inventory=inv_dir / "hosts.yml",
                              extra_args=["-f", "10"])
    finally:
        standin.sync_fabric_pids()
    wall = time.time() - start
    if result.rc != 0:
        raise SystemExit(result.describe())
    outcome = result.task("Outcome")["result"]["msg"]
    if not outcome["remediation"]["ok"] or not outcome["recertify"]["passed"]:
        raise SystemExit("repetition %d did not return the node: %s" % (index, outcome))
    events = {e["event"]: float(e["time"]) for e in standin.events(host)[seen:]}
    t0, t1, t2 = (float(outcome[k]) for k in ("t0", "t1", "t2"))
    steps = {"reboot: checks": events["requested"] - t0, "reboot: shutdown": events["down"] - events["requested"],
             "reboot: boot": events["up"] - events["down"], "reconnection": t1 - events["up"], "recertify": t2 - t1}
    for hook in STEP_HOOKS:
        steps.update(hook(index))
    steps["ansible-playbook start and end"] = wall - (t2 - t0)
    return steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--boot-s", type=float, default=1.0, help="how long the stand-in host stays down")
    parser.add_argument("--down-delay", type=float, default=1.0, help="seconds between the reboot command and the host going down")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dsxos-mttr-bench-"))
    root = build_and_install(work / "collections", work / "dist")
    binary = build_standin()
    fabric = NetnsFabric(hosts=3, workdir=work / "fabric").start()
    runs = []
    try:
        standin = reboot_standin.install(fabric)
        for index in range(args.runs):
            runs.append(one_run(index, fabric, standin, root, binary, work / f"run{index}", args))
    finally:
        fabric.stop()
    names = list(runs[0])
    mean = {name: statistics.mean(r[name] for r in runs) for name in names}
    total = sum(mean[n] for n in names if n != "ansible-playbook start and end")
    print("Sentinel MTTR on the 3-host netns fabric: reboot stand-in (down %.1f s after the command, %.1f s \"boot\") + recertify,"
          " mean of %d runs" % (args.down_delay, args.boot_s, len(runs)))
    print("  %-32s %7.1f s" % ("time to return (steps below)", total))
    for name in names:
        if name == "ansible-playbook start and end":
            continue
        spread = "%.1f-%.1f" % (min(r[name] for r in runs), max(r[name] for r in runs))
        print("  %-32s %7.1f s  %5.1f%%   (runs: %s s)" % (name, mean[name], 100.0 * mean[name] / total, spread))
    outside = mean["ansible-playbook start and end"]
    print("  %-32s %7.1f s  (outside the steps: Python start, inventory, playbook parse)" % ("ansible-playbook start and end", outside))
    print("  not measured here: quarantine, drain, release (the sentinel role; add them to STEP_HOOKS)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
