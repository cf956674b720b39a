# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The Configure modules, role and playbook through real ansible-playbook runs of the installed collection."""
from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import yaml

CRITERIA = {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"}

RESOLVE_AND_RENDER = """
- name: Resolve and render
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Resolve
      dsxos.cluster.recipe_resolve:
        criteria: "{{ criteria }}"
      register: resolved

    - name: Render
      dsxos.cluster.bundle_render:
        recipe: "{{ resolved.recipe }}"
        dest: "{{ dest }}"
        deployer: "{{ deployer }}"
        deployer_options: "{{ options | default({}) }}"
        values_overrides: "{{ overrides | default({}) }}"
"""


def _checksums_ok(bundle: Path) -> None:
    lines = (bundle / "checksums.txt").read_text(encoding="utf-8").splitlines()
    listed = set()
    for line in lines:
        digest, rel = line.split("  ", 1)
        listed.add(rel)
        assert hashlib.sha256((bundle / rel).read_bytes()).hexdigest() == digest, rel
    on_disk = {str(p.relative_to(bundle)) for p in bundle.rglob("*") if p.is_file()} - {"checksums.txt"}
    assert listed == on_disk
    assert "recipe.yaml" in listed


def test_resolve_returns_recipe_result(ansible_run) -> None:
    result = ansible_run("""
- name: Resolve
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Resolve
      dsxos.cluster.recipe_resolve:
        criteria: {service: eks, accelerator: h100, os: ubuntu, intent: training}
""")
    record = result.task("Resolve")
    assert record["status"] == "ok" and record["changed"] is False
    ret = record["result"]
    assert ret["recipe"]["kind"] == "RecipeResult"
    assert ret["applied_overlays"][0] == "base"
    assert ret["applied_overlays"][-1] == "h100-eks-ubuntu-training"
    order = ret["deployment_order"]
    assert order.index("cert-manager") < order.index("gpu-operator")
    assert ret["criteria"]["platform"] == "any"


def test_render_helm_idempotent_and_checksummed(ansible_run, tmp_path: Path) -> None:
    dest = tmp_path / "bundle"
    first = ansible_run(RESOLVE_AND_RENDER, extra_vars={"criteria": CRITERIA, "dest": str(dest), "deployer": "helm"})
    assert first.task("Render")["changed"] is True
    second = ansible_run(RESOLVE_AND_RENDER, extra_vars={"criteria": CRITERIA, "dest": str(dest), "deployer": "helm"})
    assert second.task("Render")["changed"] is False
    _checksums_ok(dest)
    assert (dest / "deploy.sh").stat().st_mode & 0o777 == 0o755
    dry = subprocess.run(["bash", str(dest / "deploy.sh"), "--dry-run"], capture_output=True, text=True, check=True)
    assert "helm upgrade --install" in dry.stdout
    assert dry.stdout.index("cert-manager") < dry.stdout.index("gpu-operator")
    recipe = yaml.safe_load((dest / "recipe.yaml").read_text(encoding="utf-8"))
    assert recipe["appliedOverlays"][-1] == "h100-eks-ubuntu-training"


def test_render_check_mode_and_diff_touch_nothing(ansible_run, tmp_path: Path) -> None:
    dest = tmp_path / "bundle"
    ansible_run(RESOLVE_AND_RENDER, extra_vars={"criteria": CRITERIA, "dest": str(dest), "deployer": "helm"})
    before = {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    overrides = {"gpu-operator": {"driver": {"version": "999.1.2"}}}
    result = ansible_run(RESOLVE_AND_RENDER, check=True, diff=True,
                         extra_vars={"criteria": CRITERIA, "dest": str(dest), "deployer": "helm", "overrides": overrides})
    render = result.task("Render")
    assert render["changed"] is True
    assert "gpu-operator/values.yaml" in render["result"]["modified"]
    diffs = render["result"]["diff"]
    assert any("999.1.2" in d.get("after", "") for d in diffs)
    after = {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    assert before == after


def test_render_argocd_needs_repo_url(ansible_run, tmp_path: Path) -> None:
    dest = tmp_path / "argo"
    failed = ansible_run(RESOLVE_AND_RENDER, expect_rc=2,
                         extra_vars={"criteria": CRITERIA, "dest": str(dest), "deployer": "argocd"})
    record = failed.task("Render")
    assert record["failed"] is True
    assert "repo_url" in record["msg"]
    assert not dest.exists()
    ok = ansible_run(RESOLVE_AND_RENDER, extra_vars={
        "criteria": CRITERIA, "dest": str(dest), "deployer": "argocd",
        "options": {"repo_url": "https://git.example.com/gitops.git", "revision": "main"}})
    assert ok.task("Render")["changed"] is True
    text = "".join(p.read_text(encoding="utf-8") for p in dest.rglob("*.yaml"))
    assert "{{" not in text
    assert "https://git.example.com/gitops.git" in text


def test_bad_criteria_names_field_and_allowed_values(ansible_run) -> None:
    result = ansible_run("""
- name: Bad criteria
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Resolve
      dsxos.cluster.recipe_resolve:
        criteria: {service: eks, accelerator: h1000}
""", expect_rc=2)
    msg = result.task("Resolve")["msg"]
    assert "accelerator" in msg and "h1000" in msg and "h100" in msg


def test_constraint_check_fails_on_violation(ansible_run) -> None:
    result = ansible_run("""
- name: Constraints
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Passing check
      dsxos.cluster.constraint_check:
        constraints:
          - {name: OS.sysctl./proc/sys/kernel/osrelease, value: ">= 6.8"}
        measurements:
          OS.sysctl./proc/sys/kernel/osrelease: 6.8.0-1015-aws
        fail_on_violation: true
      register: passing

    - name: Failing check
      dsxos.cluster.constraint_check:
        constraints:
          - {name: K8s.server.version, value: ">= 1.30"}
        measurements:
          K8s.server.version: v1.29.3
        fail_on_violation: true
""", expect_rc=2)
    passing = result.task("Passing check")
    assert passing["status"] == "ok"
    assert passing["result"]["results"][0]["status"] == "pass"
    failing = result.task("Failing check")
    assert failing["failed"] is True
    assert "K8s.server.version" in failing["msg"] and "1.29.3" in failing["msg"]


def test_configure_playbook_all_deployers_and_set_stats(ansible_run, tmp_path: Path) -> None:
    out = tmp_path / "bundles"
    extra = {
        "configure_criteria": {"service": "gke", "accelerator": "b200", "os": "cos", "intent": "training"},
        "configure_deployers": ["helm", "argocd", "flux"],
        "configure_deployer_options": {"argocd": {"repo_url": "https://git.example.com/g.git", "revision": "v1"}},
        "configure_output_dir": str(out),
        "configure_measurements": {"K8s.server.version": "1.32.1"},
    }
    result = ansible_run("dsxos.cluster.configure", extra_vars=extra,
                         extra_args=["-e", json.dumps({"configure_constraint_policy": "warn"})])
    for deployer in ("helm", "argocd", "flux"):
        assert (out / deployer / "checksums.txt").is_file()
        _checksums_ok(out / deployer)
    summary = result.task("dsxos.cluster.configure : Summarize the bundles")["result"]["msg"]
    assert any("gpu-operator" in line for line in summary)
    stats = result.task("dsxos.cluster.configure : Publish the outcome for AWX workflows")["result"]["ansible_stats"]["data"]["dsxos_configure"]
    assert stats["criteria"]["accelerator"] == "b200"
    assert set(stats["bundles"]) == {"helm", "argocd", "flux"}
    again = ansible_run("dsxos.cluster.configure", extra_vars=extra)
    rendered = again.results("dsxos.cluster.configure : Render the bundles")
    assert len(rendered) == 3 and all(r["changed"] is False for r in rendered)


def test_configure_playbook_constraint_policy_fail_keeps_old_bundle(ansible_run, tmp_path: Path) -> None:
    out = tmp_path / "bundles"
    base = {"configure_output_dir": str(out), "configure_constraint_policy": "fail",
            "configure_measurements": {"K8s.server.version": "1.33.0"}}
    ansible_run("dsxos.cluster.configure", extra_vars=base)
    before = (out / "helm" / "checksums.txt").read_bytes()
    bad = dict(base, configure_measurements={"K8s.server.version": "1.20.0"})
    failed = ansible_run("dsxos.cluster.configure", extra_vars=bad, expect_rc=2)
    assert "K8s.server.version" in failed.task("dsxos.cluster.configure : Stop on violated constraints")["msg"]
    assert failed.results("dsxos.cluster.configure : Render the bundles") == []
    assert (out / "helm" / "checksums.txt").read_bytes() == before
