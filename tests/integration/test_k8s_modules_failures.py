# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Every Kubernetes-facing module fails with a clear message on the failures operators meet.

One playbook per failure mode, with every module as a task (``ignore_errors``), run through real
ansible-playbook against both Kubernetes backends (``k8s_cluster``: the emulator and the real control plane): RBAC
refusal, API unreachable, exhausted retries (injected 503s: emulator only), invalid node name, unknown node. Each task
must fail (never crash with a traceback) and its message must name the problem.

Timings are short and explicit (the ``k8s_auth`` options ``retries``, ``retry_backoff_s``, ``request_timeout_s``),
never the defaults (8 retries with a backoff growing to 5 s): a failure case costs one module start per module, not
retry sleeps. The bundle for the drift check is rendered once per file (``drift_bundle``), not in every playbook.
"""
from __future__ import annotations

import socket
from pathlib import Path

import pytest

from playbook_runner import run_playbook

NODE_MODULES = ("node_lock", "node_quarantine", "node_drain", "node_certification")
ALL_MODULES = ("cluster_snapshot", "bundle_drift", "circuit_breaker") + NODE_MODULES


#: One retry after a 10 ms pause, 5 s per request: enough to show "after 2 attempt(s)", never a default sleep.
TIMINGS = {"retries": 1, "retry_backoff_s": 0.01, "request_timeout_s": 5}

RENDER = """
- name: Render the bundle the drift check reads
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Resolve a recipe for the drift check
      dsxos.cluster.recipe_resolve:
        criteria: {service: eks, accelerator: h100, os: ubuntu, intent: training}
      register: resolved

    - name: Render it
      dsxos.cluster.bundle_render:
        recipe: "{{ resolved.recipe }}"
        dest: "{{ bundle_dir }}"
"""


def _playbook(node: str) -> str:
    """Every Kubernetes module once, acting on ``node`` where it takes one; failures are recorded, not fatal."""
    return f"""
- name: Kubernetes modules under a failure
  hosts: localhost
  gather_facts: false
  module_defaults:
    group/dsxos.cluster.k8s:
      kubeconfig: "{{{{ kubeconfig }}}}"
      retries: "{{{{ timings.retries }}}}"
      retry_backoff_s: "{{{{ timings.retry_backoff_s }}}}"
      request_timeout_s: "{{{{ timings.request_timeout_s }}}}"
  tasks:
    - name: cluster_snapshot
      dsxos.cluster.cluster_snapshot:
      ignore_errors: true

    - name: bundle_drift
      dsxos.cluster.bundle_drift:
        bundle: "{{{{ bundle_dir }}}}"
      ignore_errors: true

    - name: circuit_breaker
      dsxos.cluster.circuit_breaker:
        action: record
        nodes: ["{node}"]
        reason: failure matrix
      ignore_errors: true

    - name: node_lock
      dsxos.cluster.node_lock:
        node: "{node}"
        holder: failure-matrix
      ignore_errors: true

    - name: node_quarantine
      dsxos.cluster.node_quarantine:
        nodes: ["{node}"]
        action: cordon
        reason: failure matrix
      ignore_errors: true

    - name: node_drain
      dsxos.cluster.node_drain:
        nodes: ["{node}"]
        reason: failure matrix
        timeout_s: 10
      ignore_errors: true

    - name: node_certification
      dsxos.cluster.node_certification:
        nodes: ["{node}"]
        categories: [gpu-health]
        results:
          gpu-health:
            "{node}": {{verdict: pass}}
        label: true
      ignore_errors: true
"""


@pytest.fixture(scope="module")
def drift_bundle(installed_collection: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Helm bundle rendered once, through the installed collection, for every bundle_drift task of this file."""
    base = tmp_path_factory.mktemp("failure-bundle")
    bundle = base / "bundle"
    result = run_playbook(RENDER, installed_collection, base / "render", extra_vars={"bundle_dir": str(bundle)})
    assert result.rc == 0 and result.task("Render it")["status"] == "ok", result.describe()
    return str(bundle)


def _run(ansible_run, bundle: str, kubeconfig: str, node: str, **timings):
    result = ansible_run(_playbook(node), expect_rc=None,
                         extra_vars={"kubeconfig": kubeconfig, "bundle_dir": bundle, "timings": dict(TIMINGS, **timings)})
    assert "Traceback" not in result.stdout + result.stderr, result.describe()
    return {name: result.task(name) for name in ALL_MODULES}


def _assert_failed(records, modules, *needles):
    for name in modules:
        record = records[name]
        assert record["failed"] is True, (name, record)
        msg = (record.get("msg") or "").lower()
        assert any(needle.lower() in msg for needle in needles), (name, record.get("msg"))


@pytest.fixture
def cluster(k8s_cluster):
    k8s_cluster.add_nodes(3, "h100-eks")
    return k8s_cluster


def test_rbac_refusal_names_verb_and_resource(ansible_run, cluster, drift_bundle):  # pylint: disable=redefined-outer-name
    nobody = cluster.identity("failure-matrix", namespace="ops", deny=[(["*"], ["*"])])
    node = "ip-10-0-0-0.ec2.internal"
    records = _run(ansible_run, drift_bundle, nobody.kubeconfig_path, node)
    _assert_failed(records, ALL_MODULES, "forbidden", "403")
    for name in ALL_MODULES:
        msg = records[name]["msg"]
        assert any(res in msg for res in ("nodes", "secrets", "configmaps", "leases", "namespaces", "pods", "version")), (name, msg)


def test_api_unreachable_names_the_server(ansible_run, drift_bundle, tmp_path):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: gone, cluster: {{server: "http://127.0.0.1:{port}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: gone, context: {{cluster: gone, user: u}}}}]
current-context: gone
""", encoding="utf-8")
    # Nobody listens: a refused connection is immediate; no retry, and a short request timeout in case the port
    # is taken meanwhile by something that accepts and never answers.
    records = _run(ansible_run, drift_bundle, str(kubeconfig), "ip-10-0-0-0.ec2.internal", retries=0, request_timeout_s=2)
    _assert_failed(records, ALL_MODULES, f"127.0.0.1:{port}")


@pytest.mark.emulator_only("faults")
def test_exhausted_retries_name_the_attempts(ansible_run, cluster, drift_bundle):  # pylint: disable=redefined-outer-name
    node = "ip-10-0-0-0.ec2.internal"
    cluster.faults.set("/api", error_rate=1.0, error_code=503)
    cluster.faults.set("/apis", error_rate=1.0, error_code=503)
    cluster.faults.set("/version", error_rate=1.0, error_code=503)
    records = _run(ansible_run, drift_bundle, cluster.kubeconfig_path, node)
    _assert_failed(records, ALL_MODULES, "retr", "attempt", "503")


def _invalid_node_name(ansible_run, cluster, drift_bundle):
    bad = "Bad_Node;rm -rf /"
    records = _run(ansible_run, drift_bundle, cluster.kubeconfig_path, bad)
    _assert_failed(records, ("circuit_breaker",) + NODE_MODULES, "invalid", "rfc 1123", "not a valid")
    for name in ("circuit_breaker",) + NODE_MODULES:
        assert "Bad_Node" in records[name]["msg"], (name, records[name]["msg"])
    return records


def test_invalid_node_name_is_refused_before_any_call(ansible_run, cluster, drift_bundle):  # pylint: disable=redefined-outer-name
    _invalid_node_name(ansible_run, cluster, drift_bundle)
    for node in cluster.api.list("v1", "Node"):  # nothing was written to any node
        assert not node["spec"].get("unschedulable") and not any(k.startswith("dsxos.io/") for k in node["metadata"].get("labels") or {})


@pytest.mark.emulator_only("api_calls")
def test_invalid_node_name_patches_no_node(ansible_run, cluster, drift_bundle):  # pylint: disable=redefined-outer-name
    _invalid_node_name(ansible_run, cluster, drift_bundle)
    assert cluster.api_calls("patch", "nodes") == 0


def test_unknown_node_is_named(ansible_run, cluster, drift_bundle):  # pylint: disable=redefined-outer-name
    ghost = "no-such-node.example.internal"
    records = _run(ansible_run, drift_bundle, cluster.kubeconfig_path, ghost)
    for name in ("node_quarantine", "node_drain", "node_certification", "node_lock"):
        record = records[name]
        assert record["failed"] is True, (name, record)
        msg = record["msg"].lower()
        assert ghost in msg and any(word in msg for word in ("not found", "unknown", "does not exist")), (name, record["msg"])


#: malformed kubeconfigs (issue 10 part 6): each must fail the module naming the file, never "MODULE FAILURE"
BAD_KUBECONFIGS = {
    "bad-yaml": ("apiVersion: v1\nclusters: [\n", "malformed yaml"),
    "context-without-cluster": ('clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\n'
                                "contexts: [{name: x, context: {cluster: nope, user: u}}]\ncurrent-context: x\n", "cluster 'nope'"),
}

BAD_KUBECONFIG_PLAYBOOK = """
- name: Kubernetes modules with a malformed kubeconfig
  hosts: localhost
  gather_facts: false
  tasks:
    - name: node_lock
      dsxos.cluster.node_lock:
        kubeconfig: "{{ kubeconfig }}"
        node: gpu-0
        holder: failure-matrix
      ignore_errors: true

    - name: node_quarantine
      dsxos.cluster.node_quarantine:
        kubeconfig: "{{ kubeconfig }}"
        nodes: [gpu-0]
        action: cordon
        reason: failure matrix
      ignore_errors: true
"""


@pytest.mark.parametrize("case", sorted(BAD_KUBECONFIGS))
def test_malformed_kubeconfig_names_the_file(ansible_run, tmp_path, case):
    content, needle = BAD_KUBECONFIGS[case]
    kubeconfig = tmp_path / f"{case}.kubeconfig"
    kubeconfig.write_text(content, encoding="utf-8")
    result = ansible_run(BAD_KUBECONFIG_PLAYBOOK, expect_rc=None, extra_vars={"kubeconfig": str(kubeconfig)})
    assert "Traceback" not in result.stdout + result.stderr, result.describe()
    for name in ("node_lock", "node_quarantine"):
        record = result.task(name)
        msg = record.get("msg") or ""
        assert record["failed"] is True and str(kubeconfig) in msg and needle in msg.lower(), (name, record)
        assert "MODULE FAILURE" not in msg and "Module failed" not in msg, (name, msg)
