# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""bundle_drift (with helm_release storage and values_diff masking) against the emulator, for each deployer and status."""
from __future__ import annotations

import base64
import gzip
import json
import os

import pytest
import yaml

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_drift import bundle_drift, detect_deployer, load_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_render import render_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_writer import write_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.helm_release import (
    HelmReleaseDecodeError, build_release_secret, decode_helm_payload, decode_release_secret, encode_helm_payload, latest_release_secret,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import client_from_params
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipePathError, RecipeSchemaError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.values_diff import MASK, MASK_DIFFERS, is_secret_key, mask_pair, values_diff
from ansible_collections.dsxos.cluster.tests.harness.k8s_emulator.pytest_fixture import (  # noqa: F401  pylint: disable=unused-import
    k8s_emulator, k8s_emulator_factory)

from manifest_validation import sample_components, sample_result

# pylint: disable=redefined-outer-name

OPTIONS = {"helm": {}, "argocd": {"repo_url": "https://git.example.com/ops/bundles.git", "revision": "v1"}, "flux": {}}
GPU_VALUES = {"driver": {"enabled": True, "version": "570.133.20"}, "dcgmExporter": {"enabled": True}}


def render(tmp_path, deployer, options=None):
    comps = sample_components()
    dest = str(tmp_path / f"bundle-{deployer}")
    write_bundle(dest, render_bundle(sample_result(comps), comps, deployer, options if options is not None else OPTIONS[deployer]))
    return dest


def client(emu):
    return client_from_params({"kubeconfig": emu.kubeconfig_path, "retry_backoff_s": 0})


def by_name(result):
    return {c["name"]: c for c in result["components"]}


# ---------------------------------------------------------------- Helm storage format


def test_helm_payload_round_trip_and_real_encoding():
    release = {"name": "r", "version": 3, "config": {"a": 1}}
    payload = encode_helm_payload(release)
    raw = base64.b64decode(payload)
    assert raw[:2] == b"\x1f\x8b"  # gzip inside base64, as Helm's secrets driver stores it
    assert json.loads(gzip.decompress(raw)) == release
    assert decode_helm_payload(payload) == release
    # very old Helm 3 stored uncompressed JSON
    assert decode_helm_payload(base64.b64encode(json.dumps(release).encode())) == release


def test_release_secret_is_what_helm_writes():
    secret = build_release_secret("gpu-operator", "gpu-operator", 4, "gpu-operator", "v25.3.0", values={"x": 1})
    assert secret["type"] == "helm.sh/release.v1"
    assert secret["metadata"]["name"] == "sh.helm.release.v1.gpu-operator.v4"
    assert secret["metadata"]["labels"] == {"name": "gpu-operator", "owner": "helm", "status": "deployed", "version": "4"}
    # API data = base64(Helm payload) = base64(base64(gzip(json)))
    inner = base64.b64decode(secret["data"]["release"])
    assert json.loads(gzip.decompress(base64.b64decode(inner)))["chart"]["metadata"]["version"] == "v25.3.0"
    assert decode_release_secret(secret)["config"] == {"x": 1}


def test_latest_revision_is_numeric_not_lexical():
    secrets = [build_release_secret("r", "ns", n) for n in (2, 10, 9)]
    assert latest_release_secret(secrets)["metadata"]["labels"]["version"] == "10"
    assert latest_release_secret([]) is None


def test_corrupt_release_names_the_secret():
    secret = build_release_secret("r", "ns", 1)
    secret["data"]["release"] = base64.b64encode(b"H4sI-not-gzip").decode()
    with pytest.raises(HelmReleaseDecodeError, match="Secret ns/sh.helm.release.v1.r.v1"):
        decode_release_secret(secret)


# ---------------------------------------------------------------- values diff


def test_secret_keys_and_masking():
    assert is_secret_key("password") and is_secret_key("apiToken") and is_secret_key("aws_secret_access_key")
    assert not is_secret_key("existingSecret") and not is_secret_key("secretName") and not is_secret_key("replicas")
    left, right = mask_pair({"db": {"password": "a", "user": "u"}, "token": "same"}, {"db": {"password": "b", "user": "u"}, "token": "same"})
    assert left == {"db": {"password": MASK, "user": "u"}, "token": MASK}
    assert right == {"db": {"password": MASK_DIFFERS, "user": "u"}, "token": MASK}


def test_values_diff_is_readable_and_masked():
    assert values_diff({"a": 1}, {"a": 1}) is None
    assert values_diff(None, {}) is None
    text = values_diff({"replicas": 1, "auth": {"password": "hunter2"}}, {"replicas": 3, "auth": {"password": "letmein"}}, "bundle", "cluster")
    assert text.startswith("--- bundle\n+++ cluster\n")
    assert "-replicas: 1" in text and "+replicas: 3" in text
    assert "hunter2" not in text and "letmein" not in text and MASK_DIFFERS in text
    pem = values_diff({"ca": "x"}, {"ca": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"})
    assert "MIIB" not in pem


# ---------------------------------------------------------------- bundle reading


def test_detect_deployer(tmp_path):
    for deployer in ("helm", "argocd", "flux"):
        assert detect_deployer(render(tmp_path, deployer)) == deployer
    with pytest.raises(RecipePathError, match="cannot tell the deployer"):
        detect_deployer(str(tmp_path))


def test_load_bundle_errors(tmp_path):
    with pytest.raises(RecipePathError, match="does not exist"):
        load_bundle(str(tmp_path / "nope"))
    bundle = render(tmp_path, "helm")
    with pytest.raises(RecipeSchemaError, match="unknown deployer"):
        load_bundle(bundle, "kustomize")
    os.unlink(os.path.join(bundle, "recipe.yaml"))
    with pytest.raises(RecipePathError, match="recipe.yaml"):
        load_bundle(bundle)


# ---------------------------------------------------------------- helm deployer


def _seed_helm(emu, **overrides):
    for ns in ("cert-manager", "gpu-operator", "kai-scheduler"):
        emu.add_namespace(ns)
    releases = {
        "cert-manager": [dict(revision=1, chart="cert-manager", chart_version="v1.17.2", values={"old": True}, status="superseded"),
                         dict(revision=2, chart="cert-manager", chart_version="v1.17.2", values={"crds": {"enabled": True}, "replicaCount": 1})],
        "gpu-operator": [dict(revision=1, chart="gpu-operator", chart_version="v25.3.0", values=GPU_VALUES)],
        "kai-scheduler": [dict(revision=1, chart="kai-scheduler", chart_version="v0.9.3", values={"global": {"gpuSharing": True}})],
    }
    releases.update(overrides)
    for name, revisions in releases.items():
        for rev in revisions:
            emu.api.create(build_release_secret(name, name, **rev))


def test_helm_all_in_sync(tmp_path, k8s_emulator):
    bundle = render(tmp_path, "helm")
    _seed_helm(k8s_emulator)
    result = bundle_drift(client(k8s_emulator), bundle)
    comps = by_name(result)
    assert result["deployer"] == "helm"
    assert [comps[n]["status"] for n in ("cert-manager", "gpu-operator", "kai-scheduler")] == ["in_sync"] * 3
    assert comps["cert-manager"]["revision"] == 2 and comps["cert-manager"]["secret"] == "sh.helm.release.v1.cert-manager.v2"
    assert comps["nic-tuning"]["status"] == "not_checked" and comps["node-tweaks"]["status"] == "not_checked"
    assert result["summary"] == {"in_sync": 3, "drifted": 0, "version_drift": 0, "values_drift": 0, "missing": 0, "failed": 0,
                                 "out_of_sync": 0, "not_checked": 2, "total": 5, "ok": True}


def test_helm_each_status(tmp_path, k8s_emulator):
    bundle = render(tmp_path, "helm")
    _seed_helm(k8s_emulator, **{
        "gpu-operator": [dict(revision=1, chart="gpu-operator", chart_version="v25.3.0", values=GPU_VALUES),
                         dict(revision=2, chart="gpu-operator", chart_version="v24.9.2", values=GPU_VALUES)],
        "cert-manager": [dict(revision=1, chart="cert-manager", chart_version="v1.17.2",
                              values={"crds": {"enabled": True}, "replicaCount": 2, "apiToken": "s3cr3t"})],
        "kai-scheduler": [dict(revision=1, chart="kai-scheduler", chart_version="v0.9.3", values={"global": {"gpuSharing": True}},
                               status="failed", description="Upgrade \"kai-scheduler\" failed: timed out waiting for the condition")],
    })
    result = bundle_drift(client(k8s_emulator), bundle)
    comps = by_name(result)
    gpu = comps["gpu-operator"]
    assert gpu["status"] == "version_drift" and gpu["expected_version"] == "v25.3.0" and gpu["actual_version"] == "v24.9.2"
    assert gpu["revision"] == 2 and "v24.9.2" in gpu["message"]
    cert = comps["cert-manager"]
    assert cert["status"] == "values_drift" and "-replicaCount: 1" in cert["values_diff"] and "+replicaCount: 2" in cert["values_diff"]
    assert "s3cr3t" not in cert["values_diff"] and "+apiToken: <masked>" in cert["values_diff"]
    kai = comps["kai-scheduler"]
    assert kai["status"] == "failed" and "timed out waiting" in kai["message"] and kai["release_status"] == "failed"
    summary = result["summary"]
    assert (summary["drifted"], summary["failed"], summary["missing"], summary["ok"]) == (2, 1, 0, False)


def test_helm_missing_and_uninstalled(tmp_path, k8s_emulator):
    bundle = render(tmp_path, "helm")
    k8s_emulator.add_namespace("gpu-operator")
    k8s_emulator.api.create(build_release_secret("gpu-operator", "gpu-operator", 1, "gpu-operator", "v25.3.0", status="uninstalled"))
    comps = by_name(bundle_drift(client(k8s_emulator), bundle, components=["gpu-operator", "cert-manager"]))
    assert set(comps) == {"gpu-operator", "cert-manager"}
    assert comps["cert-manager"]["status"] == "missing" and "no Helm release 'cert-manager'" in comps["cert-manager"]["message"]
    assert comps["gpu-operator"]["status"] == "missing" and "uninstalled" in comps["gpu-operator"]["message"]


def test_unknown_component_filter_is_named(tmp_path, k8s_emulator):
    bundle = render(tmp_path, "helm")
    with pytest.raises(RecipeSchemaError, match="nope"):
        bundle_drift(client(k8s_emulator), bundle, components=["nope"])


# ---------------------------------------------------------------- argocd deployer


def _app(bundle, name, status=None, **changes):
    with open(os.path.join(bundle, "applications", name + ".yaml"), encoding="utf-8") as handle:
        app = yaml.safe_load(handle)
    for index, source in enumerate(app["spec"].get("sources") or []):
        if source.get("chart") and changes:
            source.update(changes)
            app["spec"]["sources"][index] = source
    if status is not None:
        app["status"] = status
    return app


SYNCED = {"sync": {"status": "Synced"}, "health": {"status": "Healthy"}}


def test_argocd_statuses(tmp_path, k8s_emulator):
    bundle = render(tmp_path, "argocd")
    k8s_emulator.add_namespace("argocd")
    insert = k8s_emulator.api.insert
    insert(_app(bundle, "cert-manager", SYNCED))
    insert(_app(bundle, "gpu-operator", SYNCED, targetRevision="v24.9.2"))
    helm = {"releaseName": "kai-scheduler", "valueFiles": ["$values/kai-scheduler/values.yaml"], "valuesObject": {"global": {"gpuSharing": False}}}
    insert(_app(bundle, "kai-scheduler", SYNCED, helm=helm))
    insert(_app(bundle, "nic-tuning", {"sync": {"status": "Synced"}, "health": {"status": "Degraded", "message": "DaemonSet nic has 0 ready"}}))
    insert(_app(bundle, "node-tweaks", {"sync": {"status": "OutOfSync"}, "health": {"status": "Healthy"}}))
    result = bundle_drift(client(k8s_emulator), bundle)
    comps = by_name(result)
    assert result["deployer"] == "argocd"
    assert comps["cert-manager"]["status"] == "in_sync" and comps["cert-manager"]["sync_status"] == "Synced"
    assert comps["gpu-operator"]["status"] == "version_drift" and comps["gpu-operator"]["actual_version"] == "v24.9.2"
    assert comps["kai-scheduler"]["status"] == "values_drift" and "gpuSharing: false" in comps["kai-scheduler"]["values_diff"]
    assert comps["nic-tuning"]["status"] == "failed" and "0 ready" in comps["nic-tuning"]["message"]
    assert comps["node-tweaks"]["status"] == "out_of_sync" and "OutOfSync" in comps["node-tweaks"]["message"]
    assert result["summary"]["ok"] is False and result["summary"]["out_of_sync"] == 1


def test_argocd_missing_and_failed_operation(tmp_path, k8s_emulator):
    bundle = render(tmp_path, "argocd")
    k8s_emulator.add_namespace("argocd")
    status = {"sync": {"status": "OutOfSync"}, "health": {"status": "Missing"},
              "operationState": {"phase": "Failed", "message": "one or more objects failed to apply"}}
    k8s_emulator.api.insert(_app(bundle, "gpu-operator", status))
    comps = by_name(bundle_drift(client(k8s_emulator), bundle))
    assert comps["cert-manager"]["status"] == "missing"
    assert comps["gpu-operator"]["status"] == "failed" and "failed to apply" in comps["gpu-operator"]["message"]


# ---------------------------------------------------------------- flux deployer


def _flux_doc(bundle, rel):
    with open(os.path.join(bundle, rel), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _ready(status="True", reason="InstallSucceeded", message="Helm install succeeded", version=None):
    out = {"conditions": [{"type": "Ready", "status": status, "reason": reason, "message": message,
                           "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    if version:
        out["history"] = [{"chartName": "x", "chartVersion": version, "configDigest": "sha256:0", "digest": "sha256:1",
                           "firstDeployed": "2026-01-01T00:00:00Z", "lastDeployed": "2026-01-01T00:00:00Z", "name": "x",
                           "namespace": "x", "status": "deployed", "version": 1}]
    return out


def test_flux_statuses(tmp_path, k8s_emulator):
    bundle = render(tmp_path, "flux")
    k8s_emulator.add_namespace("flux-system")
    k8s_emulator.register_crd("kustomize.toolkit.fluxcd.io", "v1", "Kustomization")
    insert = k8s_emulator.api.insert
    cert = _flux_doc(bundle, "cert-manager/helmrelease.yaml")
    cert["status"] = _ready(version="v1.17.2")
    insert(cert)
    gpu = _flux_doc(bundle, "gpu-operator/helmrelease.yaml")
    gpu["spec"]["values"]["driver"]["version"] = "550.90.07"
    gpu["status"] = _ready(version="v25.3.0")
    insert(gpu)
    kai = _flux_doc(bundle, "kai-scheduler/helmrelease.yaml")
    kai["status"] = _ready("False", "UpgradeFailed", "Helm upgrade failed: context deadline exceeded")
    insert(kai)
    oci = _flux_doc(bundle, "kai-scheduler/source.yaml")
    insert(oci)
    tweaks = _flux_doc(bundle, "node-tweaks/flux-kustomization.yaml")
    tweaks["status"] = {"conditions": [{"type": "Ready", "status": "Unknown", "reason": "Progressing", "message": "reconciling"}]}
    insert(tweaks)
    result = bundle_drift(client(k8s_emulator), bundle)
    comps = by_name(result)
    assert result["deployer"] == "flux"
    assert comps["cert-manager"]["status"] == "in_sync" and comps["cert-manager"]["deployed_version"] == "v1.17.2"
    assert comps["gpu-operator"]["status"] == "values_drift" and "+  version: 550.90.07" in comps["gpu-operator"]["values_diff"]
    assert comps["kai-scheduler"]["status"] == "failed" and "UpgradeFailed" in comps["kai-scheduler"]["message"]
    assert comps["kai-scheduler"]["spec_version"] == "v0.9.3"  # from the OCIRepository tag
    assert comps["node-tweaks"]["status"] == "out_of_sync" and comps["node-tweaks"]["kind"] == "flux_kustomization"
    assert comps["nic-tuning"]["status"] == "not_checked"


def test_flux_version_drift_and_values_from_configmap(tmp_path, k8s_emulator):
    bundle = render(tmp_path, "flux", {"values_from": "configmap"})
    k8s_emulator.add_namespace("flux-system")
    gpu = _flux_doc(bundle, "gpu-operator/helmrelease.yaml")
    gpu["spec"]["chart"]["spec"]["version"] = "v24.9.2"
    gpu["status"] = _ready(version="v24.9.2")
    k8s_emulator.api.insert(gpu)
    configmap = _flux_doc(bundle, "gpu-operator/values-configmap.yaml")
    k8s_emulator.api.create(configmap)
    cert = _flux_doc(bundle, "cert-manager/helmrelease.yaml")
    cert["status"] = _ready(version="v1.17.2")
    k8s_emulator.api.insert(cert)
    cert_values = _flux_doc(bundle, "cert-manager/values-configmap.yaml")
    cert_values["data"]["values.yaml"] = "crds:\n  enabled: false\nreplicaCount: 1\n"
    k8s_emulator.api.create(cert_values)
    comps = by_name(bundle_drift(client(k8s_emulator), bundle, components=["gpu-operator", "cert-manager", "kai-scheduler"]))
    assert comps["gpu-operator"]["status"] == "version_drift" and comps["gpu-operator"]["values_diff"] is None
    assert comps["cert-manager"]["status"] == "values_drift" and "+  enabled: false" in comps["cert-manager"]["values_diff"]
    assert comps["kai-scheduler"]["status"] == "missing"


def test_read_only(tmp_path, k8s_emulator):
    bundle = render(tmp_path, "helm")
    _seed_helm(k8s_emulator)
    before = k8s_emulator.store.resource_version
    bundle_drift(client(k8s_emulator), bundle)
    assert k8s_emulator.store.resource_version == before
    counts = k8s_emulator.call_counts()
    assert all(key.split()[0] in ("get", "list") for key in counts), counts
