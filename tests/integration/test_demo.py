# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""`make demo`'s script end to end: built-in cluster, configure, drift, quarantine, drain, release."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from playbook_runner import REPO, default_inventory


def test_demo_lifecycle_runs_on_the_built_in_cluster(installed_collection: Path, tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.ini"
    inventory.write_text(default_inventory(), encoding="utf-8")
    out = tmp_path / "demo"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["VENV"] = str(Path(sys.executable).parent.parent)
    env["ANSIBLE_HOME"] = str(tmp_path / "ansible-home")
    proc = subprocess.run(["bash", str(REPO / "scripts" / "demo.sh"), str(installed_collection), str(inventory), str(out)],
                          capture_output=True, text=True, env=env, timeout=300, check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    for deployer in ("helm", "argocd", "flux"):
        assert (out / "bundles" / deployer / "checksums.txt").is_file()
    recipe = (out / "bundles" / "helm" / "recipe.yaml").read_text(encoding="utf-8")
    assert "h100-eks-training" in recipe
    out_text = proc.stdout
    assert "Constraints: 1 passed, 0 failed, 0 missing" in out_text
    # Human-readable output: tables and sentences, no Python dicts or lists.
    assert re.search(r"^\s+node\s+GPU\s+GPUs\s+driver\s+ready\s+schedulable$", out_text, re.M), out_text[-4000:]
    assert re.search(r"^\s+ip-10-0-0-7\.ec2\.internal\s+NVIDIA-H100-80GB-HBM3\s+8\s", out_text, re.M)
    assert "Inferred criteria: service eks, accelerator h100, os amazonlinux." in out_text
    assert re.search(r"^\s+component\s+expected\s+in cluster\s+status$", out_text, re.M)
    assert re.search(r"^\s+cert-manager\s+v\S+\s+-\s+missing$", out_text, re.M)
    assert "{'" not in out_text and "': " not in out_text.split("Summarize the bundles")[0], "a Python dict leaked into the demo output"
    # The quarantine names the node, who, why and the breaker's state (count / cap / tripped).
    node = "ip-10-0-0-0.ec2.internal"
    assert f"Node {node} cordoned: quarantined and unschedulable (changed)." in out_text, out_text[-4000:]
    assert "  who: make-demo\n" in out_text
    assert "  why: demo: XID 79 on GPU 3\n" in out_text
    assert "Circuit breaker closed (not tripped): 1 of 2 quarantines allowed in this window used (8 GPU nodes, max_fraction 0.25)." in out_text
    # The drain: a sentence and a pod table.
    assert re.search(rf"^\s+Node {re.escape(node)} drained in [0-9.]+ s: evicted \d+\.$", out_text, re.M)
    assert re.search(r"^\s+namespace\s+pod\s+outcome\s+PDB$", out_text, re.M)
    # The release: the node, who, why, and the breaker after it.
    assert f"Node {node} released: released and schedulable (changed)." in out_text
    assert "  why: demo: GPU replaced and recertified\n" in out_text
    assert "Circuit breaker closed (not tripped): 1 of 2 quarantines used in this window" in out_text
    recap = [line for line in proc.stdout.splitlines() if line.startswith("localhost")][-1]
    assert "failed=0" in recap
