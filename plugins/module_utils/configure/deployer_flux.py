# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Flux deployer: Flux v2 sources + HelmReleases, tied together by one ``kustomization.yaml``.

Layout::

    README.md
    kustomization.yaml                      kustomize.config.k8s.io/v1beta1, lists every resource file
    namespaces.yaml                         Namespace objects of the target namespaces (option create_namespaces)
    <component>/source.yaml                 HelmRepository (https), OCIRepository (oci:// chart) or
                                            GitRepository/OCIRepository (Kustomize source)
    <component>/helmrelease.yaml            helm.toolkit.fluxcd.io/v2 HelmRelease
    <component>/flux-kustomization.yaml     kustomize.toolkit.fluxcd.io/v1 Kustomization (Kustomize components)
    <component>/values.yaml                 the Helm values (inline in the HelmRelease, or via the ConfigMap)
    <component>/values-configmap.yaml       ConfigMap holding values.yaml (values_from: configmap)
    <component>/manifests/*                 rendered manifests, plain resources of the kustomization

OCI charts use the form Flux recommends since helm-controller v1: an ``OCIRepository``
(``source.toolkit.fluxcd.io/v1``) with the Helm chart layer selected (``operation: copy``) and
``HelmRelease.spec.chartRef`` pointing at it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_writer import BundleFile
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.deployer_argocd import check_component_name
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.deployer_helm import (
    begin_render, check_manifest_name, namespace_of, oci_chart_ref, shown_namespace)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import ComponentBundle, RecipeResult
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import dump_yaml, dump_yaml_all

NAME = "flux"
HELM_RELEASE_API = "helm.toolkit.fluxcd.io/v2"
SOURCE_API = "source.toolkit.fluxcd.io/v1"
KUSTOMIZE_API = "kustomize.toolkit.fluxcd.io/v1"
HELM_CHART_MEDIA_TYPE = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
#: Media types of ``flux push artifact`` (and of ``bundle_publish``): the config and the tar+gzip content layer.
FLUX_CONFIG_MEDIA_TYPE = "application/vnd.cncf.flux.config.v1+json"
FLUX_CONTENT_MEDIA_TYPE = "application/vnd.cncf.flux.content.v1.tar+gzip"
#: The file pointing Flux at the bundle published to a registry (option ``oci_url``); not in kustomization.yaml.
OCI_SOURCE_FILE = "flux-oci-source.yaml"
_OCI_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_OCI_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
VALUES_FROM = ("inline", "configmap")
#: Namespaces never emitted as Namespace objects (they exist; pruning them would be fatal).
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABELS = {"app.kubernetes.io/managed-by": "dsxos.cluster"}


@dataclass
class DeployerOptions:
    """Options of the flux deployer (``bundle_render`` checks keys and types)."""

    flux_namespace: str = "flux-system"  # namespace of the sources and HelmReleases
    interval: str = "10m"  # reconcile interval of sources and releases
    timeout: str = "10m"  # Helm action timeout
    values_from: str = "inline"  # inline | configmap
    retries: int = 3  # install/upgrade remediation retries
    create_namespaces: bool = True  # emit Namespace objects for the target namespaces
    oci_url: str = ""  # oci://registry/repo the bundle is published to: adds flux-oci-source.yaml
    oci_ref: str = "latest"  # tag, or sha256:<digest>, of that artifact
    oci_name: str = "dsxos-bundle"  # name of that OCIRepository and its Flux Kustomization
    oci_insecure: bool = False  # the registry speaks plain HTTP (OCIRepository spec.insecure)

    def validate(self) -> None:
        if not _DNS_LABEL.match(self.flux_namespace):
            raise RenderError("flux_namespace must be a DNS-1123 label", field="options.flux_namespace",
                              value=self.flux_namespace)
        for key in ("interval", "timeout"):
            if not _DURATION.match(getattr(self, key)):
                raise RenderError("must be a duration such as 10m or 1h", field="options.%s" % key,
                                  value=getattr(self, key))
        if self.values_from not in VALUES_FROM:
            raise RenderError("values_from must be one of %s" % ", ".join(VALUES_FROM), field="options.values_from",
                              value=self.values_from)
        if self.retries < 0:
            raise RenderError("retries must not be negative", field="options.retries", value=self.retries)
        _validate_oci_options(self)


def _validate_oci_options(opts: "DeployerOptions") -> None:
    if not opts.oci_url:
        return
    if not re.match(r"^oci://[^/\s]+/[a-z0-9]+([._/-][a-z0-9]+)*$", opts.oci_url):
        raise RenderError("oci_url must be oci://<registry>/<repository> (no tag)", field="options.oci_url",
                          value=opts.oci_url)
    if not (_OCI_TAG.match(opts.oci_ref) or _OCI_DIGEST.match(opts.oci_ref)):
        raise RenderError("oci_ref must be a tag or sha256:<64 hex digits>", field="options.oci_ref", value=opts.oci_ref)
    if not _DNS_LABEL.match(opts.oci_name):
        raise RenderError("oci_name must be a DNS-1123 label", field="options.oci_name", value=opts.oci_name)


def oci_bundle_source(opts: "DeployerOptions") -> List[Dict[str, Any]]:
    """The ``OCIRepository`` of the published bundle and the Flux ``Kustomization`` applying it (path ``./``)."""
    ref = {"digest": opts.oci_ref} if _OCI_DIGEST.match(opts.oci_ref) else {"tag": opts.oci_ref}
    spec: Dict[str, Any] = {"interval": opts.interval, "url": opts.oci_url, "ref": ref,
                            "layerSelector": {"mediaType": FLUX_CONTENT_MEDIA_TYPE, "operation": "extract"}}
    if opts.oci_insecure:
        spec["insecure"] = True
    source = {"apiVersion": SOURCE_API, "kind": "OCIRepository", "metadata": _meta(opts.oci_name, opts.flux_namespace),
              "spec": spec}
    apply = {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization", "metadata": _meta(opts.oci_name, opts.flux_namespace),
             "spec": {"interval": opts.interval, "timeout": opts.timeout, "path": "./", "prune": True, "wait": True,
                      "sourceRef": {"kind": "OCIRepository", "name": opts.oci_name, "namespace": opts.flux_namespace}}}
    return [source, apply]


def _meta(name: str, namespace: str) -> Dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": dict(LABELS)}


def _is_chart(c: ComponentBundle) -> bool:
    return c.type == "Helm" and bool(c.repository)


def _oci_tag(version: str) -> str:
    # OCI tags cannot hold '+': Helm pushes semver build metadata with '_' instead.
    return version.replace("+", "_")


def _chart_source(c: ComponentBundle, opts: DeployerOptions) -> Dict[str, Any]:
    if c.is_oci:
        spec: Dict[str, Any] = {
            "interval": opts.interval,
            "url": oci_chart_ref(c),
            "ref": {"tag": _oci_tag(c.version)} if c.version else {"semver": "*"},
            "layerSelector": {"mediaType": HELM_CHART_MEDIA_TYPE, "operation": "copy"},
        }
        return {"apiVersion": SOURCE_API, "kind": "OCIRepository", "metadata": _meta(c.name, opts.flux_namespace),
                "spec": spec}
    if not c.repository.startswith(("https://", "http://")):
        raise RenderError("Helm repository must be an https:// or oci:// URL", field="components[%s].repository" % c.name,
                          value=c.repository)
    if not c.chart:
        raise RenderError("Helm component from an https repository needs a chart name",
                          field="components[%s].chart" % c.name, value=c.chart)
    return {"apiVersion": SOURCE_API, "kind": "HelmRepository", "metadata": _meta(c.name, opts.flux_namespace),
            "spec": {"interval": opts.interval, "url": c.repository}}


def _kustomize_source(c: ComponentBundle, opts: DeployerOptions) -> Dict[str, Any]:
    if c.repository.startswith("oci://"):
        ref = {"tag": c.kustomize_tag} if c.kustomize_tag else {"semver": "*"}
        return {"apiVersion": SOURCE_API, "kind": "OCIRepository", "metadata": _meta(c.name, opts.flux_namespace),
                "spec": {"interval": opts.interval, "url": c.repository, "ref": ref}}
    if not re.match(r"^(https?|ssh)://", c.repository):
        raise RenderError("Kustomize source must be an https://, ssh:// or oci:// URL",
                          field="components[%s].repository" % c.name, value=c.repository)
    spec: Dict[str, Any] = {"interval": opts.interval, "url": c.repository}
    if c.kustomize_tag:
        spec["ref"] = {"tag": c.kustomize_tag}
    return {"apiVersion": SOURCE_API, "kind": "GitRepository", "metadata": _meta(c.name, opts.flux_namespace),
            "spec": spec}


def _helm_release(c: ComponentBundle, opts: DeployerOptions, depends: List[str], source_kind: str) -> Dict[str, Any]:
    spec: Dict[str, Any] = {"interval": opts.interval, "timeout": opts.timeout, "releaseName": c.name,
                            "targetNamespace": namespace_of(c)}
    if source_kind == "OCIRepository":
        spec["chartRef"] = {"kind": "OCIRepository", "name": c.name, "namespace": opts.flux_namespace}
    else:
        chart_spec: Dict[str, Any] = {"chart": c.chart, "version": c.version or "*",
                                      "sourceRef": {"kind": "HelmRepository", "name": c.name,
                                                    "namespace": opts.flux_namespace},
                                      "interval": opts.interval}
        spec["chart"] = {"spec": chart_spec}
    if depends:
        spec["dependsOn"] = [{"name": name} for name in depends]
    spec["install"] = {"createNamespace": True, "crds": "CreateReplace", "remediation": {"retries": opts.retries}}
    spec["upgrade"] = {"crds": "CreateReplace", "remediation": {"retries": opts.retries,
                                                                "strategy": "rollback"}}
    if opts.values_from == "configmap":
        spec["valuesFrom"] = [{"kind": "ConfigMap", "name": "%s-values" % c.name, "valuesKey": "values.yaml"}]
    elif c.values:
        spec["values"] = c.values
    return {"apiVersion": HELM_RELEASE_API, "kind": "HelmRelease", "metadata": _meta(c.name, opts.flux_namespace),
            "spec": spec}


def _flux_kustomization(c: ComponentBundle, opts: DeployerOptions, depends: List[str], source_kind: str) -> Dict[str, Any]:
    path = c.kustomize_path.strip("/")
    spec: Dict[str, Any] = {"interval": opts.interval, "timeout": opts.timeout,
                            "path": "./" + path if path else "./", "prune": True, "wait": True,
                            "sourceRef": {"kind": source_kind, "name": c.name, "namespace": opts.flux_namespace}}
    if depends:
        spec["dependsOn"] = [{"name": name} for name in depends]
    return {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization", "metadata": _meta(c.name, opts.flux_namespace),
            "spec": spec}


def _values_configmap(c: ComponentBundle, opts: DeployerOptions) -> Dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta("%s-values" % c.name, opts.flux_namespace),
            "data": {"values.yaml": dump_yaml(c.values or {})}}


def _readme(result: RecipeResult, components: List[ComponentBundle], opts: DeployerOptions,
            dropped: Dict[str, List[str]]) -> str:
    crit = ", ".join("%s=%s" % (k, v) for k, v in result.criteria.to_dict().items())
    lines = [
        "# Deployment bundle (Flux)",
        "",
        "Rendered by dsxos.cluster for criteria: %s." % crit,
        "",
        "Commit this directory to a repository Flux watches and point a Flux `Kustomization` at it,",
        "or apply it directly:",
        "",
        "```bash",
        "kubectl apply -k .",
        "```",
        "",
        "Sources and releases live in namespace `%s`; each HelmRelease installs into the component's" % opts.flux_namespace,
        "namespace (`targetNamespace`, `install.createNamespace`). Order comes from `spec.dependsOn`.",
        "Helm values are %s." % ("inline in each HelmRelease" if opts.values_from == "inline"
                                 else "in a ConfigMap `<component>-values` referenced by `spec.valuesFrom`"),
        "",
        "## Components",
        "",
        "| # | component | kind | source | version | namespace | depends on |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in components:
        kind = "HelmRelease" if _is_chart(c) else ("Kustomization" if c.type == "Kustomize" else "manifests")
        lines.append("| %d | %s | %s | %s | %s | %s | %s |" % (
            c.order, c.name, kind, c.repository or "-", c.version or c.kustomize_tag or "-", shown_namespace(c),
            ", ".join(c.dependency_refs) or "-"))
    if dropped:
        lines += ["", "Dependencies Flux cannot express (not in the bundle, or across HelmRelease/Kustomization/"
                  "plain manifests) and therefore left out of `dependsOn`:", ""]
        lines += ["- %s: %s" % (name, ", ".join(deps)) for name, deps in sorted(dropped.items())]
    lines += [
        "",
        "Rendered manifests (`<component>/manifests/`) are plain resources of `kustomization.yaml`; objects",
        "without `metadata.namespace` land in the namespace of whatever applies the kustomization, so",
        "manifests should name their namespace. Manifests that need a chart's CRDs converge on the next",
        "reconciliation once the HelmRelease is ready.",
        "",
    ]
    if opts.oci_url:
        ref = "digest" if _OCI_DIGEST.match(opts.oci_ref) else "tag"
        lines += [
            "## Pulling the published bundle from an OCI registry",
            "",
            "`%s` holds an `OCIRepository` `%s/%s` (`%s`, %s `%s`) and a Flux `Kustomization` of the"
            % (OCI_SOURCE_FILE, opts.flux_namespace, opts.oci_name, opts.oci_url, ref, opts.oci_ref),
            "same name applying its root. It is not listed in `kustomization.yaml`: publish the bundle first",
            "(`dsxos.cluster.bundle_publish` to `%s:<tag>`), then apply the file once, by hand:" % opts.oci_url,
            "",
            "```bash",
            "kubectl apply -f %s" % OCI_SOURCE_FILE,
            "```",
            "",
            "From then on Flux pulls the published artifact instead of a Git checkout.",
            "",
        ]
    return "\n".join(lines)


def render(result: RecipeResult, components: List[ComponentBundle],
           options: Optional[DeployerOptions] = None) -> Dict[str, BundleFile]:
    """Render the Flux bundle files (without ``recipe.yaml``/``checksums.txt``)."""
    opts, ordered = begin_render(options, DeployerOptions, components, check_component_name)
    kinds = {}
    for c in ordered:
        kinds[c.name] = "HelmRelease" if _is_chart(c) else ("Kustomization" if c.type == "Kustomize" else "manifests")
    files: Dict[str, BundleFile] = {}
    resources: List[str] = []
    dropped: Dict[str, List[str]] = {}
    namespaces = sorted({namespace_of(c) for c in ordered} - set(SYSTEM_NAMESPACES) - {opts.flux_namespace})
    if opts.create_namespaces and namespaces:
        files["namespaces.yaml"] = BundleFile.text(dump_yaml_all([
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": dict(LABELS)}}
            for ns in namespaces]))
        resources.append("namespaces.yaml")
    for c in ordered:
        name = c.name
        kind = kinds[name]
        depends = [d for d in c.dependency_refs if kinds.get(d) == kind and kind != "manifests" and d != name]
        lost = [d for d in c.dependency_refs if d not in depends]
        if lost:
            dropped[name] = lost
        if kind == "HelmRelease":
            source = _chart_source(c, opts)
            files["%s/source.yaml" % name] = BundleFile.text(dump_yaml(source))
            files["%s/values.yaml" % name] = BundleFile.text(dump_yaml(c.values or {}))
            resources.append("%s/source.yaml" % name)
            if opts.values_from == "configmap":
                files["%s/values-configmap.yaml" % name] = BundleFile.text(dump_yaml(_values_configmap(c, opts)))
                resources.append("%s/values-configmap.yaml" % name)
            files["%s/helmrelease.yaml" % name] = BundleFile.text(dump_yaml(_helm_release(c, opts, depends, source["kind"])))
            resources.append("%s/helmrelease.yaml" % name)
        elif kind == "Kustomization":
            source = _kustomize_source(c, opts)
            files["%s/source.yaml" % name] = BundleFile.text(dump_yaml(source))
            files["%s/flux-kustomization.yaml" % name] = BundleFile.text(
                dump_yaml(_flux_kustomization(c, opts, depends, source["kind"])))
            resources += ["%s/source.yaml" % name, "%s/flux-kustomization.yaml" % name]
        for file_name in sorted(c.manifests):
            check_manifest_name(c, file_name)
            relpath = "%s/manifests/%s" % (name, file_name)
            files[relpath] = BundleFile.text(c.manifests[file_name])
            resources.append(relpath)
    files["kustomization.yaml"] = BundleFile.text(dump_yaml({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": resources}))
    files["README.md"] = BundleFile.text(_readme(result, ordered, opts, dropped))
    if opts.oci_url:
        files[OCI_SOURCE_FILE] = BundleFile.text(dump_yaml_all(oci_bundle_source(opts)))
    return dict(sorted(files.items()))
