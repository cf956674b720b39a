# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Flux deployer: sources, HelmReleases, values inline/ConfigMap, kustomization, CRD validation."""
from __future__ import annotations

import pytest
import yaml

from ansible_collections.dsxos.cluster.plugins.module_utils.configure import deployer_flux
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_render import render_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import ComponentBundle

from manifest_validation import KUSTOMIZE_SOURCE, load_docs, sample_components, sample_result, validate_bundle, validate_objects


def _render(components=None, **options):
    comps = components if components is not None else sample_components()
    return render_bundle(sample_result(comps), comps, "flux", options)


def _doc(files, relpath):
    docs = load_docs(files, relpath)
    assert len(docs) == 1
    return docs[0]


@pytest.mark.parametrize("values_from", ["inline", "configmap"])
def test_every_object_validates(values_from):
    files = _render(values_from=values_from)
    # namespaces(5) + 3x(source+release) + node-tweaks(source+kustomization) + 3 manifest objects
    # + kustomization.yaml (+3 ConfigMaps)
    expected = 5 + 6 + 2 + 3 + 1 + (3 if values_from == "configmap" else 0)
    assert validate_bundle(files) == expected


def test_https_chart_uses_helmrepository():
    files = _render()
    source = _doc(files, "gpu-operator/source.yaml")
    assert source["apiVersion"] == "source.toolkit.fluxcd.io/v1" and source["kind"] == "HelmRepository"
    assert source["spec"]["url"] == "https://helm.ngc.nvidia.com/nvidia"
    release = _doc(files, "gpu-operator/helmrelease.yaml")
    assert release["apiVersion"] == "helm.toolkit.fluxcd.io/v2"
    assert release["metadata"] == {"name": "gpu-operator", "namespace": "flux-system",
                                   "labels": {"app.kubernetes.io/managed-by": "dsxos.cluster"}}
    spec = release["spec"]
    assert spec["chart"]["spec"]["chart"] == "gpu-operator" and spec["chart"]["spec"]["version"] == "v25.3.0"
    assert spec["chart"]["spec"]["sourceRef"] == {"kind": "HelmRepository", "name": "gpu-operator",
                                                  "namespace": "flux-system"}
    assert "chartRef" not in spec
    assert spec["releaseName"] == "gpu-operator" and spec["targetNamespace"] == "gpu-operator"
    assert spec["install"]["createNamespace"] is True
    assert spec["values"] == sample_components()[1].values


def test_oci_chart_uses_ocirepository_and_chartref():
    files = _render()
    source = _doc(files, "kai-scheduler/source.yaml")
    assert source["kind"] == "OCIRepository"
    assert source["spec"]["url"] == "oci://ghcr.io/nvidia/kai-scheduler/kai-scheduler"
    assert source["spec"]["ref"] == {"tag": "v0.9.3"}
    assert source["spec"]["layerSelector"] == {"mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
                                               "operation": "copy"}
    spec = _doc(files, "kai-scheduler/helmrelease.yaml")["spec"]
    assert spec["chartRef"] == {"kind": "OCIRepository", "name": "kai-scheduler", "namespace": "flux-system"}
    assert "chart" not in spec


def test_oci_version_with_build_metadata_becomes_a_valid_tag():
    comp = ComponentBundle(name="x", type="Helm", order=0, namespace="x", repository="oci://r.io/charts",
                           chart="x", version="1.2.3+build.7")
    files = _render([comp])
    assert _doc(files, "x/source.yaml")["spec"]["ref"] == {"tag": "1.2.3_build.7"}


def test_depends_on_only_bundle_helmreleases():
    files = _render()
    assert "dependsOn" not in _doc(files, "cert-manager/helmrelease.yaml")["spec"]
    assert _doc(files, "gpu-operator/helmrelease.yaml")["spec"]["dependsOn"] == [{"name": "cert-manager"}]
    assert _doc(files, "kai-scheduler/helmrelease.yaml")["spec"]["dependsOn"] == [{"name": "gpu-operator"}]
    readme = files["README.md"].content.decode()
    assert "- gpu-operator: not-in-bundle" in readme and "- node-tweaks: nic-tuning" in readme


def test_values_from_configmap():
    files = _render(values_from="configmap")
    for comp in sample_components()[:3]:
        spec = _doc(files, "%s/helmrelease.yaml" % comp.name)["spec"]
        assert "values" not in spec
        assert spec["valuesFrom"] == [{"kind": "ConfigMap", "name": "%s-values" % comp.name, "valuesKey": "values.yaml"}]
        cm = _doc(files, "%s/values-configmap.yaml" % comp.name)
        assert cm["metadata"]["name"] == "%s-values" % comp.name and cm["metadata"]["namespace"] == "flux-system"
        assert yaml.safe_load(cm["data"]["values.yaml"]) == comp.values
        assert yaml.safe_load(files["%s/values.yaml" % comp.name].content) == comp.values


def test_kustomization_lists_every_resource_file():
    for values_from in ("inline", "configmap"):
        files = _render(values_from=values_from)
        kust = _doc(files, "kustomization.yaml")
        assert kust["apiVersion"] == "kustomize.config.k8s.io/v1beta1" and kust["kind"] == "Kustomization"
        resource_files = sorted(p for p in files if p.endswith(".yaml") and p not in ("kustomization.yaml", "recipe.yaml")
                                and not p.endswith("/values.yaml"))
        assert sorted(kust["resources"]) == resource_files
        assert kust["resources"][0] == "namespaces.yaml"
        assert "gpu-operator/manifests/dcgm-metrics.yaml" in kust["resources"]


def test_namespaces_and_flux_namespace_option():
    comps = sample_components()
    comps[0].namespace = "kube-system"
    comps[1].namespace = "gitops"
    files = _render(comps, flux_namespace="gitops", interval="5m", timeout="20m", retries=7)
    names = [d["metadata"]["name"] for d in load_docs(files, "namespaces.yaml")]
    assert names == ["kai-scheduler", "network-tuning", "node-tweaks"]  # no system or flux namespace
    for path in ("cert-manager/helmrelease.yaml", "cert-manager/source.yaml", "node-tweaks/flux-kustomization.yaml"):
        doc = _doc(files, path)
        assert doc["metadata"]["namespace"] == "gitops"
        assert doc["spec"]["interval"] == "5m"
    spec = _doc(files, "cert-manager/helmrelease.yaml")["spec"]
    assert spec["timeout"] == "20m" and spec["install"]["remediation"]["retries"] == 7
    assert spec["chart"]["spec"]["sourceRef"]["namespace"] == "gitops"
    files = _render(create_namespaces=False)
    assert "namespaces.yaml" not in files
    assert "namespaces.yaml" not in _doc(files, "kustomization.yaml")["resources"]


def test_kustomize_component_uses_gitrepository_and_flux_kustomization():
    files = _render()
    source = _doc(files, "node-tweaks/source.yaml")
    assert source["kind"] == "GitRepository" and source["spec"]["url"] == KUSTOMIZE_SOURCE
    assert source["spec"]["ref"] == {"tag": "v1.2.0"}
    kust = _doc(files, "node-tweaks/flux-kustomization.yaml")
    assert kust["apiVersion"] == "kustomize.toolkit.fluxcd.io/v1"
    assert kust["spec"]["path"] == "./deploy/overlays/gpu"
    assert kust["spec"]["sourceRef"] == {"kind": "GitRepository", "name": "node-tweaks", "namespace": "flux-system"}


def test_manifest_only_component_is_plain_resources():
    files = _render()
    assert not [p for p in files if p.startswith("nic-tuning/") and not p.startswith("nic-tuning/manifests/")]
    assert files["nic-tuning/manifests/nic.yaml"].content.decode() == sample_components()[3].manifests["nic.yaml"]


@pytest.mark.parametrize("key,value", [("values_from", "secret"), ("interval", "often"), ("flux_namespace", "Flux")])
def test_bad_options(key, value):
    with pytest.raises(RenderError) as err:
        _render(**{key: value})
    assert "options.%s" % key in str(err.value) and repr(value) in str(err.value)


def test_bad_sources_are_refused():
    comp = ComponentBundle(name="x", type="Helm", order=0, namespace="x", repository="ftp://e.com", chart="x")
    with pytest.raises(RenderError, match="components\\[x\\].repository"):
        deployer_flux.render(sample_result([comp]), [comp])


def test_validator_enforces_helmrelease_chart_rule():
    release = _doc(_render(), "kai-scheduler/helmrelease.yaml")
    release["spec"]["chart"] = {"spec": {"chart": "x", "sourceRef": {"kind": "HelmRepository", "name": "x"}}}
    with pytest.raises(AssertionError, match="either chart or chartRef"):
        validate_objects([release])
