# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""`make demo`'s script end to end: built-in cluster, configure, drift, quarantine, drain, release."""
from __future__ import annotations

import os
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
    assert "Constraints: 1 passed, 0 failed, 0 missing" in proc.stdout
    assert "drained" in proc.stdout
    recap = [line for line in proc.stdout.splitlines() if line.startswith("localhost")][-1]
    assert "failed=0" in recap
