# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""kubernetes.core (k8s_info, k8s, k8s_drain) against the emulator through a real ansible-playbook run.

kubernetes.core ships in the ``ansible`` PyPI bundle (ansible==12.3.0 -> kubernetes.core 6.2.0). Without it this test
FAILS (it does not skip): the emulator's compatibility with the modules the project uses must stay proven.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_client, k8s_emulator, k8s_emulator_factory)

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  vars:
    gpu_nodes: {gpu_nodes}
  tasks:
    - name: list GPU nodes
      kubernetes.core.k8s_info:
        kind: Node
        label_selectors: ["nvidia.com/gpu.present=true"]
      register: nodes
    - name: create a ConfigMap (client-side apply)
      kubernetes.core.k8s:
        state: present
        apply: true
        definition:
          apiVersion: v1
          kind: ConfigMap
          metadata: {{name: dsxos-probe, namespace: default}}
          data: {{answer: "42"}}
      register: created
    - name: apply it again (idempotent)
      kubernetes.core.k8s:
        state: present
        apply: true
        definition:
          apiVersion: v1
          kind: ConfigMap
          metadata: {{name: dsxos-probe, namespace: default}}
          data: {{answer: "42"}}
      register: reapplied
    - name: present again without apply (idempotent)
      kubernetes.core.k8s:
        state: present
        definition:
          apiVersion: v1
          kind: ConfigMap
          metadata: {{name: dsxos-probe, namespace: default}}
          data: {{answer: "42"}}
      register: present_again
    - name: create an Argo CD Application (custom resource)
      kubernetes.core.k8s:
        state: present
        definition:
          apiVersion: argoproj.io/v1alpha1
          kind: Application
          metadata: {{name: gpu-operator, namespace: default}}
          spec: {{project: default}}
      register: app
    - name: pods on the first node
      kubernetes.core.k8s_info:
        kind: Pod
        namespace: default
        field_selectors: ["spec.nodeName={{{{ gpu_nodes[0] }}}}"]
        label_selectors: ["app=web"]
      register: on_first
    - name: drain the first node (PDB allows one disruption)
      kubernetes.core.k8s_drain:
        name: "{{{{ gpu_nodes[0] }}}}"
        delete_options: {{ignore_daemonsets: true, wait_timeout: 30, wait_sleep: 1}}
      register: drained
    - name: drain the node holding the single-replica PDB-protected pod
      kubernetes.core.k8s_drain:
        name: "{{{{ gpu_nodes[3] }}}}"
        delete_options: {{ignore_daemonsets: true}}
      register: blocked
      ignore_errors: true
    - name: report
      ansible.builtin.copy:
        dest: "{{{{ result_file }}}}"
        content: "{{{{ {{'nodes': nodes.resources | map(attribute='metadata.name') | list, 'created': created.changed,
                      'reapplied': reapplied.changed, 'present_again': present_again.changed, 'app': app.changed, 'on_first': on_first.resources | length,
                      'drained': drained, 'blocked_failed': blocked is failed, 'blocked_msg': blocked.msg | default('')}} | to_json }}}}"
"""


def _bundle_collections_dir() -> str:
    spec = importlib.util.find_spec("ansible_collections.kubernetes.core")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("kubernetes.core is not importable: install the ansible bundle (pip install ansible==12.3.0) into the venv; "
                    "this test proves the emulator works with kubernetes.core's k8s, k8s_info and k8s_drain")
    core_dir = list(spec.submodule_search_locations)[0]
    return os.path.dirname(os.path.dirname(os.path.dirname(core_dir)))


def test_kubernetes_core_modules_against_emulator(k8s_emulator, tmp_path):  # pylint: disable=redefined-outer-name
    collections_dir = _bundle_collections_dir()
    emu = k8s_emulator
    nodes = emu.add_nodes(4, "h100-eks")
    emu.add_nodes(1, "cpu")
    emu.add_deployment("web", replicas=3, node_selector={"nvidia.com/gpu.present": "true"})
    emu.wait_for(lambda: len([p for p in emu.api.pods("default", label_selector="app=web") if p["status"].get("phase") == "Running"]) == 3,
                 10, what="web pods running")
    used = {p["spec"]["nodeName"] for p in emu.api.pods("default", label_selector="app=web")}
    free = [n for n in nodes if n not in used]
    assert len(free) == 1
    ordered = sorted(used) + free  # gpu_nodes[3] is the node without a web pod
    emu.add_pdb("web", {"app": "web"}, min_available=2)
    emu.add_deployment("solo", replicas=1, node_selector={"kubernetes.io/hostname": ordered[3]})
    emu.add_pdb("solo", {"app": "solo"}, min_available=1)
    emu.wait_for(lambda: [p["status"].get("phase") for p in emu.api.pods("default", label_selector="app=solo")] == ["Running"], 10,
                 what="solo running")
    emu.settle()
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK.format(gpu_nodes=json.dumps(ordered)), encoding="utf-8")
    result_file = tmp_path / "result.json"
    env = dict(os.environ, K8S_AUTH_KUBECONFIG=emu.kubeconfig_path, ANSIBLE_COLLECTIONS_PATH=collections_dir,
               ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="False", ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_NOCOLOR="1",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="False", TMPDIR=str(tmp_path), ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
               ANSIBLE_HOME=str(tmp_path / "ansible-home"))
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
         "-e", f"ansible_python_interpreter={sys.executable}", "-e", f"result_file={result_file}", str(playbook)],
        env=env, capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    result = json.loads(result_file.read_text(encoding="utf-8"))
    assert sorted(result["nodes"]) == sorted(nodes)
    assert result["created"] is True and result["reapplied"] is False and result["present_again"] is False and result["app"] is True
    assert result["on_first"] == 1
    assert result["drained"]["changed"] is True and "1 Pod(s) deleted from node" in result["drained"]["result"]
    assert result["blocked_failed"] is True
    assert "Cannot evict pod as it would violate the pod's disruption budget." in result["blocked_msg"]
    assert emu.api.get("v1", "Node", ordered[0])["spec"]["unschedulable"] is True
    # kubernetes.core 6.2 k8s_drain fails on the 429 WITHOUT reverting its cordon: callers must uncordon themselves
    assert emu.api.get("v1", "Node", ordered[3])["spec"]["unschedulable"] is True
    assert all(p["spec"].get("nodeName") != ordered[0] for p in emu.api.pods("default", label_selector="app=web"))
    assert not emu.pdb_violated("web") and emu.pdb_min_healthy("web") == 2
    assert emu.api_calls("create", "pods/eviction") == 2 and emu.api_calls("list", "pods") >= 2
    assert emu.api.get("argoproj.io/v1alpha1", "Application", "gpu-operator", "default")["spec"]["project"] == "default"
