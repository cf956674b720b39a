# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Argo CD deployer: app-of-apps, multi-source Applications, options, CRD validation."""
from __future__ import annotations

import dataclasses

import pytest
import yaml

from ansible_collections.dsxos.cluster.plugins.module_utils.configure import deployer_argocd
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_render import render_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import ComponentBundle

from manifest_validation import KUSTOMIZE_SOURCE, sample_components, sample_result, validate_bundle, validate_objects

REPO = "https://git.example.com/ops/bundles.git"
BASE = {"repo_url": REPO, "revision": "main", "path": "clusters/gpu-a"}


def _render(**options):
    comps = sample_components()
    opts = dict(BASE)
    opts.update(options)
    return render_bundle(sample_result(comps), comps, "argocd", opts)


def _app(files, name):
    return yaml.safe_load(files["applications/%s.yaml" % name].content)


def test_every_object_validates_against_the_crds():
    files = _render()
    # 5 component Applications + app-of-apps + 3 manifest objects
    assert validate_bundle(files) == 9
    files = _render(automated=False, server_side_apply=True, path="")
    assert validate_bundle(files) == 9


def test_no_unrendered_placeholder_anywhere():
    for files in (_render(), _render(path="")):
        for relpath, bfile in files.items():
            assert b"{{" not in bfile.content and b"}}" not in bfile.content, relpath


@pytest.mark.parametrize("missing", ["repo_url", "revision"])
def test_repo_url_and_revision_are_required(missing):
    opts = dict(BASE)
    del opts[missing]
    comps = sample_components()
    with pytest.raises(RenderError) as err:
        render_bundle(sample_result(comps), comps, "argocd", opts)
    assert "options.%s" % missing in str(err.value)
    assert "needs option %s" % missing in str(err.value)
    with pytest.raises(RenderError):
        deployer_argocd.render(sample_result(comps), comps, deployer_argocd.DeployerOptions())


def test_placeholder_in_option_is_refused():
    with pytest.raises(RenderError) as err:
        _render(repo_url="{{ .RepoURL }}")
    assert "options.repo_url" in str(err.value) and "{{ .RepoURL }}" in str(err.value)


def test_https_chart_with_values_ref_and_manifests_source():
    app = _app(_render(), "gpu-operator")
    assert app["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "1"
    assert app["spec"]["sources"] == [
        {"repoURL": "https://helm.ngc.nvidia.com/nvidia", "chart": "gpu-operator", "targetRevision": "v25.3.0",
         "helm": {"releaseName": "gpu-operator",
                  "valueFiles": ["$values/clusters/gpu-a/gpu-operator/values.yaml"]}},
        {"repoURL": REPO, "targetRevision": "main", "ref": "values"},
        {"repoURL": REPO, "targetRevision": "main", "path": "clusters/gpu-a/gpu-operator/manifests"},
    ]
    assert app["spec"]["destination"] == {"server": "https://kubernetes.default.svc", "namespace": "gpu-operator"}
    assert app["metadata"]["namespace"] == "argocd" and app["spec"]["project"] == "default"


def test_oci_chart_uses_repo_url_without_scheme():
    app = _app(_render(), "kai-scheduler")
    chart = app["spec"]["sources"][0]
    assert chart["repoURL"] == "ghcr.io/nvidia/kai-scheduler"
    assert chart["chart"] == "kai-scheduler" and chart["targetRevision"] == "v0.9.3"
    assert len(app["spec"]["sources"]) == 2  # no manifests


@pytest.mark.parametrize("version", ["v25.3.0", "25.3.0", "V1.0.0", "1.2.0-rc.1+build.7"])
@pytest.mark.parametrize("component", ["gpu-operator", "kai-scheduler"])
def test_target_revision_is_the_version_exactly_as_the_chart_publishes_it(component, version):
    """Not AICR's stripped ``v``: an OCI registry is asked for the tag letter for letter (Helm's registry client uses a
    SemVer version as the tag verbatim, and ``helm push`` tags a chart with its version), so ``25.3.0`` does not find
    a chart pushed as ``v25.3.0``; a classic Helm repository finds the entry either way (Helm's index lookup
    compares SemVer numbers). The version as published is the one that works for both (docs/bundles.md)."""
    comps = [dataclasses.replace(c, version=version) if c.name == component else c for c in sample_components()]
    files = render_bundle(sample_result(comps), comps, "argocd", dict(BASE))
    chart = _app(files, component)["spec"]["sources"][0]
    assert chart["targetRevision"] == version
    assert chart["repoURL"] == ("ghcr.io/nvidia/kai-scheduler" if component == "kai-scheduler"
                                else "https://helm.ngc.nvidia.com/nvidia")


def test_manifest_only_component_has_only_the_path_source():
    """Not AICR's chart Application with an empty ``repoURL`` (which Argo CD cannot sync): the rendered manifests
    from the bundle's own repository, one plain path source."""
    app = _app(_render(), "nic-tuning")
    assert "sources" not in app["spec"]
    assert app["spec"]["source"] == {"repoURL": REPO, "targetRevision": "main", "path": "clusters/gpu-a/nic-tuning/manifests"}
    assert app["spec"]["destination"]["namespace"] == "network-tuning"


def test_kustomize_component_points_at_its_source():
    app = _app(_render(), "node-tweaks")
    assert app["spec"]["source"] == {"repoURL": KUSTOMIZE_SOURCE, "targetRevision": "v1.2.0", "path": "deploy/overlays/gpu"}


def test_sync_waves_follow_deployment_order():
    files = _render()
    for comp in sample_components():
        assert _app(files, comp.name)["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == str(comp.order)


def test_app_of_apps_and_files_in_tree():
    files = _render()
    parent = yaml.safe_load(files["app-of-apps.yaml"].content)
    assert parent["metadata"]["name"] == "dsxos-bundle"
    assert parent["spec"]["source"] == {"repoURL": REPO, "targetRevision": "main", "path": "clusters/gpu-a/applications"}
    assert parent["spec"]["destination"]["namespace"] == "argocd"
    for comp in sample_components():
        if comp.type == "Helm" and comp.repository:
            assert yaml.safe_load(files["%s/values.yaml" % comp.name].content) == comp.values
        for name, text in comp.manifests.items():
            assert files["%s/manifests/%s" % (comp.name, name)].content.decode() == text
    assert sorted(p for p in files if p.startswith("applications/")) == sorted(
        "applications/%s.yaml" % c.name for c in sample_components())
    assert "kubectl apply -n argocd -f app-of-apps.yaml" in files["README.md"].content.decode()


def test_root_path_and_options():
    files = _render(path="", app_of_apps_name="gpu-stack", argocd_namespace="gitops", project="platform",
                    destination_server="https://10.0.0.1:6443", automated=False, server_side_apply=True)
    parent = yaml.safe_load(files["app-of-apps.yaml"].content)
    assert parent["metadata"]["name"] == "gpu-stack" and parent["spec"]["source"]["path"] == "applications"
    app = _app(files, "cert-manager")
    assert app["metadata"]["namespace"] == "gitops" and app["spec"]["project"] == "platform"
    assert app["metadata"]["labels"]["app.kubernetes.io/part-of"] == "gpu-stack"
    assert app["spec"]["sources"][0]["helm"]["valueFiles"] == ["$values/cert-manager/values.yaml"]
    assert app["spec"]["destination"]["server"] == "https://10.0.0.1:6443"
    assert app["spec"]["syncPolicy"] == {"syncOptions": ["CreateNamespace=true", "ServerSideApply=true"]}
    app = _app(_render(prune=False, self_heal=False), "cert-manager")
    assert app["spec"]["syncPolicy"]["automated"] == {"prune": False, "selfHeal": False}


@pytest.mark.parametrize("key,value", [("path", "../x"), ("project", "Bad_Project"), ("destination_server", "kube"),
                                       ("argocd_namespace", "")])
def test_bad_options_name_field_and_value(key, value):
    with pytest.raises(RenderError) as err:
        _render(**{key: value})
    assert "options.%s" % key in str(err.value) and repr(value) in str(err.value)


def test_component_names_must_be_dns_labels():
    comp = ComponentBundle(name="GPU_Operator", type="Helm", order=0, namespace="x",
                           repository="https://e.com", chart="c")
    with pytest.raises(RenderError) as err:
        deployer_argocd.render(sample_result([comp]), [comp], deployer_argocd.DeployerOptions(**BASE))
    assert "'GPU_Operator'" in str(err.value)


def test_component_named_like_app_of_apps_is_refused():
    comp = ComponentBundle(name="dsxos-bundle", type="Helm", order=0, namespace="x",
                           repository="https://e.com", chart="c")
    with pytest.raises(RenderError, match="app-of-apps"):
        deployer_argocd.render(sample_result([comp]), [comp], deployer_argocd.DeployerOptions(**BASE))


def test_validator_rejects_a_broken_application():
    app = _app(_render(), "cert-manager")
    app["spec"]["sources"][0]["helm"]["valueFile"] = ["typo"]
    with pytest.raises(AssertionError, match="valueFile"):
        validate_objects([app])
    del app["spec"]["sources"][0]["helm"]["valueFile"]
    app["spec"]["syncPolicy"]["automated"]["prune"] = "yes"
    with pytest.raises(AssertionError, match="not of type 'boolean'"):
        validate_objects([app])
