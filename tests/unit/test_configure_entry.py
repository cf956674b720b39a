# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""configure/entry.py: each EntryPoint's run called directly with module params, and through call_entry."""
from __future__ import annotations

import os

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.connection_options import K8S_AUTH_SPEC
from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import EntryPoint, call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import DsxosError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure import entry
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import (
    BUNDLE_DRIFT, BUNDLE_RENDER, CLUSTER_SNAPSHOT, CONSTRAINT_CHECK, RECIPE_RESOLVE, run_constraint_check, run_render,
    run_resolve,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.kube import client as kube_client
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

CRITERIA = {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"}
ENTRIES = (RECIPE_RESOLVE, BUNDLE_RENDER, CONSTRAINT_CHECK, CLUSTER_SNAPSHOT, BUNDLE_DRIFT)


def params(entry_point: EntryPoint, **given):
    """What AnsibleModule would pass: every option of the spec, defaults filled in, ``given`` on top."""
    out = {name: option.get("default") for name, option in entry_point.spec.items()}
    out.update(given)
    return out


def resolved():
    return run_resolve(params(RECIPE_RESOLVE, criteria=CRITERIA))["recipe"]


def test_every_entry_point_is_declared_once_with_its_module_name():
    assert [e.name for e in ENTRIES] == ["recipe_resolve", "bundle_render", "constraint_check", "cluster_snapshot",
                                         "bundle_drift"]
    for entry_point in ENTRIES:
        assert isinstance(entry_point, EntryPoint) and entry_point.doing and callable(entry_point.run)
        assert entry_point.fqcn == "dsxos.cluster." + entry_point.name
    for name in ("kubeconfig", "context", "qps", "api_key"):
        assert CLUSTER_SNAPSHOT.spec[name] == BUNDLE_DRIFT.spec[name] == K8S_AUTH_SPEC[name]
    assert BUNDLE_DRIFT.spec["deployer"]["choices"] == ["auto", "helm", "argocd", "flux"]


# ----------------------------------------------------------------------------- recipe_resolve

def test_resolve_returns_the_recipe_and_changes_nothing():
    out = run_resolve(params(RECIPE_RESOLVE, criteria=CRITERIA), True, True)
    assert out["changed"] is False
    assert out["criteria"]["accelerator"] == "h100" and out["recipe"]["kind"] == "RecipeResult"
    assert out["deployment_order"] and out["applied_overlays"]


def test_resolve_infers_missing_criteria_from_a_snapshot():
    snapshot = {"measurements": {"GPU.smi.gpu.model": "NVIDIA H100 80GB HBM3", "K8s.node.count": 4,
                                 "K8s.node.provider-id": "aws:///us-east-1a/i-0abc", "OS.release.ID": "ubuntu"}}
    out = run_resolve(params(RECIPE_RESOLVE, criteria={"intent": "training"}, snapshot=snapshot, infer=True))
    assert out["criteria"]["service"] == "eks" and out["criteria"]["accelerator"] == "h100"
    assert out["criteria"]["nodes"] == 4 and out["inferred"]["nodes"]["source"] == "K8s.node.count"


def test_resolve_bad_criteria_names_field_and_value():
    with pytest.raises(DsxosError) as err:
        run_resolve(params(RECIPE_RESOLVE, criteria={"accelerator": "h999"}))
    assert err.value.field == "criteria.accelerator" and err.value.value == "h999"
    result = call_entry(RECIPE_RESOLVE, params(RECIPE_RESOLVE, criteria={"accelerator": "h999"}))
    assert result["failed"] is True and result["changed"] is False
    assert "h999" in result["msg"] and result["error"]["field"] == "criteria.accelerator"


def test_resolve_broken_recipe_file_names_the_file(tmp_path):
    overlays = tmp_path / "recipes" / "overlays"
    overlays.mkdir(parents=True)
    (overlays / "broken.yaml").write_text("kind: [unclosed\n")
    result = call_entry(RECIPE_RESOLVE, params(RECIPE_RESOLVE, criteria=CRITERIA, recipe_dirs=[str(tmp_path / "recipes")]))
    assert result["failed"] is True
    assert result["error"]["file"] and result["error"]["file"].endswith("broken.yaml")
    assert "broken.yaml" in result["msg"]


# ----------------------------------------------------------------------------- bundle_render

def test_render_writes_then_reports_no_change(tmp_path):
    dest = str(tmp_path / "bundle")
    first = run_render(params(BUNDLE_RENDER, recipe=resolved(), dest=dest))
    assert first["changed"] is True and "recipe.yaml" in first["files"] and os.path.isfile(os.path.join(dest, "deploy.sh"))
    again = run_render(params(BUNDLE_RENDER, recipe=resolved(), dest=dest))
    assert again["changed"] is False and not again["modified"]


def test_render_check_mode_writes_nothing_and_diff_is_returned(tmp_path):
    dest = tmp_path / "bundle"
    out = run_render(params(BUNDLE_RENDER, recipe=resolved(), dest=str(dest)), True, True)
    assert out["changed"] is True and out["added"]
    assert not dest.exists()
    assert isinstance(out["diff"], list) and out["diff"]
    no_diff = run_render(params(BUNDLE_RENDER, recipe=resolved(), dest=str(dest)), True, False)
    assert "diff" not in no_diff and not dest.exists()


def test_render_bad_deployer_option_names_field_and_value(tmp_path):
    args = params(BUNDLE_RENDER, recipe=resolved(), dest=str(tmp_path / "b"), deployer_options={"wait": "maybe"})
    with pytest.raises(DsxosError) as err:
        run_render(args)
    assert err.value.field == "options.wait" and err.value.value == "maybe"
    result = call_entry(BUNDLE_RENDER, args)
    assert result["failed"] is True and "options.wait" in result["msg"] and result["error"]["value"] == "maybe"
    assert not (tmp_path / "b").exists()


# ----------------------------------------------------------------------------- constraint_check

def test_constraint_check_results_and_fail_on_violation():
    args = params(CONSTRAINT_CHECK, constraints=[{"name": "K8s.server.version", "value": ">= 1.30"}],
                  measurements={"K8s.server.version": "v1.29.3"})
    out = run_constraint_check(args)
    assert out["changed"] is False and out["summary"]["ok"] is False and "failed" not in out
    failing = call_entry(CONSTRAINT_CHECK, dict(args, fail_on_violation=True))
    assert failing["failed"] is True and failing["msg"].startswith("constraints violated")
    passing = call_entry(CONSTRAINT_CHECK, dict(args, measurements={"K8s.server.version": "v1.31.0"}, fail_on_violation=True))
    assert "failed" not in passing and passing["summary"]["ok"] is True


def test_constraint_check_unknown_phase_names_field_and_value():
    with pytest.raises(DsxosError) as err:
        run_constraint_check(params(CONSTRAINT_CHECK, recipe=resolved(), phases=["nonexistent"]))
    assert err.value.field == "phases" and err.value.value == "nonexistent"


# ----------------------------------------------------------------------------- cluster_snapshot / bundle_drift

def test_cluster_snapshot_against_the_emulator(k8s_emulator):
    k8s_emulator.add_nodes(2, "h100-eks")
    out = entry.run_cluster_snapshot(params(CLUSTER_SNAPSHOT, kubeconfig=k8s_emulator.kubeconfig_path), True, True)
    assert out["changed"] is False
    assert out["criteria"]["accelerator"] == "h100" and out["criteria"]["nodes"] == 2
    assert out["api_calls"] == {"get version": 1, "list nodes": 1}
    bad = call_entry(CLUSTER_SNAPSHOT, params(CLUSTER_SNAPSHOT, kubeconfig=k8s_emulator.kubeconfig_path,
                                              label_selector="pool=$(reboot)"))
    assert bad["failed"] is True and "$(reboot)" in bad["msg"]


def test_cluster_snapshot_bad_kubeconfig_is_a_clean_failure(tmp_path):
    result = call_entry(CLUSTER_SNAPSHOT, params(CLUSTER_SNAPSHOT, kubeconfig=str(tmp_path / "missing")))
    assert result["failed"] is True and "missing" in result["msg"] and result["error"]["error"] == "K8sConfigError"


def test_bundle_drift_against_the_emulator(tmp_path, k8s_emulator):
    bundle = str(tmp_path / "bundle")
    run_render(params(BUNDLE_RENDER, recipe=resolved(), dest=bundle))
    out = entry.run_bundle_drift(params(BUNDLE_DRIFT, kubeconfig=k8s_emulator.kubeconfig_path, bundle=bundle), True, True)
    assert out["changed"] is False and out["deployer"] == "helm"
    statuses = {c["name"]: c["status"] for c in out["components"]}
    assert statuses and set(statuses.values()) <= {"missing", "not_checked"} and "missing" in statuses.values()
    assert out["api_calls"]


def test_bundle_drift_bad_bundle_names_the_file(tmp_path, k8s_emulator):
    (tmp_path / "empty").mkdir()
    result = call_entry(BUNDLE_DRIFT, params(BUNDLE_DRIFT, kubeconfig=k8s_emulator.kubeconfig_path,
                                             bundle=str(tmp_path / "empty"), deployer="helm"))
    assert result["failed"] is True and "recipe.yaml" in result["msg"]
    assert "recipe.yaml" in str(result["error"]["file"] or result["error"]["value"])
    unknown = call_entry(BUNDLE_DRIFT, params(BUNDLE_DRIFT, kubeconfig=k8s_emulator.kubeconfig_path,
                                              bundle=str(tmp_path / "empty")))
    assert unknown["failed"] is True and "not a bundle" in unknown["msg"]  # refused before the deployer is guessed
    with pytest.raises(DsxosError) as err:
        entry.run_bundle_drift(params(BUNDLE_DRIFT, bundle=""))
    assert err.value.field == "bundle"


def test_missing_kubernetes_library_is_named(monkeypatch, tmp_path):
    monkeypatch.setattr(kube_client, "HAS_KUBERNETES", False)
    monkeypatch.setattr(kube_client, "KUBERNETES_IMPORT_ERROR", "No module named 'kubernetes'")
    for entry_point, extra in ((CLUSTER_SNAPSHOT, {}), (BUNDLE_DRIFT, {"bundle": str(tmp_path)})):
        result = call_entry(entry_point, params(entry_point, **extra))
        assert result["failed"] is True and result["error"]["error"] == "K8sConfigError"
        assert "kubernetes" in result["msg"] and "pip install kubernetes" in result["msg"]
