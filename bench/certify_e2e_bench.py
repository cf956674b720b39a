# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Certify E2E benchmark: the certify role on the 8-host network-namespace fabric (needs root, iproute2, sshd, OpenMPI).

One host's link is slowed to 200 Mbit/s, as in the CI end-to-end test. The wall time of the ansible-playbook
run is split into:
  * NCCL test time    - wall time of the isolation rounds (the group tests running, in parallel per round),
  * Ansible overhead  - everything else (SSH, module transfer, the gpu-health category on recorded NVML
                        readings, aggregation, report).

Anchor: NVCRE's published cost at 232 nodes with faults is ~28 minutes in 7 rounds; the fabric here is 8 CPU
hosts, so only the rounds and the overhead split are comparable.

Usage: python bench/certify_e2e_bench.py [--runs N]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
import conftest  # noqa: E402,F401  # pylint: disable=unused-import,wrong-import-position
sys.path.insert(0, str(REPO / "tests" / "integration"))

from playbook_runner import build_and_install, run_playbook  # noqa: E402  # pylint: disable=wrong-import-position

from ansible_collections.dsxos.cluster.tests.harness.nccl_standin.build import build_standin  # noqa: E402
from ansible_collections.dsxos.cluster.tests.harness.netns_fabric import NetnsFabric  # noqa: E402

NVML = REPO / "tests" / "unit" / "fixtures" / "nvml"


def one_run(fabric: NetnsFabric, root: Path, binary: Path, work: Path) -> dict:
    inv_dir = work / "inventory"
    (inv_dir / "host_vars").mkdir(parents=True)
    (inv_dir / "hosts.yml").write_text(Path(fabric.inventory_path).read_text(encoding="utf-8"), encoding="utf-8")
    for name in fabric.names:
        recording = NVML / "h100x8_healthy.json"
        (inv_dir / "host_vars" / f"{name}.yml").write_text(f"certify_recorded_readings: {recording}\n", encoding="utf-8")
    extra = {
        "certify_target_group": "gpu_nodes", "certify_categories": ["gpu-health", "nccl-all-reduce"],
        "certify_mpirun": {"binary_dir": str(binary), "launcher_env": fabric.mpirun_env(), "allow_run_as_root": True,
                           "args": {"min_bytes": "1M", "max_bytes": "2M", "iters": 3, "warmup": 1}},
        "certify_thresholds": {"use_builtin_floors": False, "relative": {"fraction": 0.25, "mad_z": 50}},
        "certify_timeout_s": 60, "certify_report_dir": str(work / "report"),
    }
    start = time.perf_counter()
    result = run_playbook("dsxos.cluster.certify", root, work / "run", extra_vars=extra, inventory=inv_dir / "hosts.yml",
                          extra_args=["-f", "10"])
    wall = time.perf_counter() - start
    if result.rc != 0:
        raise SystemExit(result.describe())
    nccl = result.task("dsxos.cluster.certify : Categories nccl-all-reduce")["result"]
    durations = nccl.get("durations", {})
    rounds_s = sum(r.get("duration_s", 0.0) for r in durations.get("rounds", []))
    report = json.loads((work / "report" / "certify-report.json").read_text(encoding="utf-8"))
    return {"wall_s": wall, "nccl_rounds_s": rounds_s, "overhead_s": wall - rounds_s, "rounds": nccl.get("rounds"), "tests": len(nccl.get("tests", [])),
            "result": report["result"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dsxos-certify-bench-"))
    root = build_and_install(work / "collections", work / "dist")
    binary = build_standin()
    fabric = NetnsFabric(hosts=8, workdir=work / "fabric").start()
    runs = []
    try:
        fabric.slow_link(fabric.names[5], rate="200mbit")
        for index in range(args.runs):
            runs.append(one_run(fabric, root, binary, work / f"run{index}"))
    finally:
        fabric.stop()
    med = {key: statistics.median(r[key] for r in runs) for key in ("wall_s", "nccl_rounds_s", "overhead_s")}
    print("Certify E2E on the 8-host netns fabric (CPU stand-in, one link at 200 Mbit/s), median of %d runs" % len(runs))
    print("  wall time                 %6.1f s" % med["wall_s"])
    print("  NCCL test rounds          %6.1f s  (%.0f%%)  rounds %s, tests %s, result %s" % (
        med["nccl_rounds_s"], 100 * med["nccl_rounds_s"] / med["wall_s"], runs[0]["rounds"], runs[0]["tests"], runs[0]["result"]))
    print("  Ansible overhead          %6.1f s  (%.0f%%)" % (med["overhead_s"], 100 * med["overhead_s"] / med["wall_s"]))
    print("  NVCRE anchor at 232 nodes: 7 rounds, ~28 min; ratio of rounds here: %.2f" % ((runs[0]["rounds"] or 0) / 7.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
