# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The standalone ``python -m tests.harness.k8s_emulator serve`` command."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from kubernetes import client, config

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_serve_writes_kubeconfig_serves_nodes_and_stops_on_sigterm(tmp_path):
    kubeconfig = tmp_path / "out" / "kubeconfig"
    proc = subprocess.Popen(  # pylint: disable=consider-using-with
        [sys.executable, "-m", "tests.harness.k8s_emulator", "serve", "--nodes", "3", "--profile", "a100-aks",
         "--kubeconfig", str(kubeconfig), "--time-scale", "0.01", "--git-version", "v1.31.5"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline().strip()
        info = json.loads(proc.stdout.readline())
        assert first == str(kubeconfig) and kubeconfig.is_file()
        assert info["time_scale"] == 0.01 and info["url"].startswith("http://127.0.0.1:")
        assert oct(os.stat(kubeconfig).st_mode & 0o777) == "0o600"
        api = config.new_client_from_config(config_file=str(kubeconfig))
        nodes = client.CoreV1Api(api).list_node().items
        assert len(nodes) == 3 and nodes[0].metadata.labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
        assert client.VersionApi(api).get_code().git_version == "v1.31.5"
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=15)
        proc.stdout.close()
        proc.stderr.close()
    assert rc == 0
