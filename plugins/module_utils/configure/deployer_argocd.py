# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Argo CD deployer: an app-of-apps plus one ``Application`` per component.

Layout::

    README.md
    app-of-apps.yaml                  the parent Application (apply it once, by hand)
    applications/<component>.yaml     one Application per component, sync-wave = deployment order
    <component>/values.yaml           Helm values, read through the ``$values`` multi-source ref
    <component>/manifests/*           rendered manifests, a third source of the Application

The bundle is meant to be committed to a Git repository (options ``repo_url``, ``revision``
and ``path``, all required to be known at render time: no placeholder is ever emitted).
Helm charts from OCI registries use Argo CD's Helm-OCI form: ``repoURL`` is the registry path
*without* the ``oci://`` scheme and ``chart`` is the chart name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_writer import BundleFile
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.deployer_helm import (
    begin_render, check_manifest_name, is_chart, namespace_of, shown_namespace)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import ComponentBundle, RecipeResult
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import dump_yaml

NAME = "argocd"
API_VERSION = "argoproj.io/v1alpha1"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_PLACEHOLDER = re.compile(r"\{\{|\}\}|<no value>")
MANAGED_BY = "dsxos.cluster"


@dataclass
class DeployerOptions:
    """Options of the argocd deployer (``bundle_render`` checks keys and types)."""

    repo_url: str = ""  # Git repository the bundle is pushed to (REQUIRED)
    revision: str = ""  # branch, tag or commit of that repository (REQUIRED)
    path: str = ""  # directory of the bundle inside that repository ("" = repository root)
    app_of_apps_name: str = "dsxos-bundle"
    argocd_namespace: str = "argocd"  # namespace the Application objects live in
    project: str = "default"
    destination_server: str = "https://kubernetes.default.svc"
    automated: bool = True
    prune: bool = True
    self_heal: bool = True
    server_side_apply: bool = False

    def validate(self) -> None:
        for key in ("repo_url", "revision"):
            value = getattr(self, key)
            if not isinstance(value, str) or not value.strip():
                raise RenderError("the argocd deployer needs option %s (the Git repository/revision the bundle "
                                  "is pushed to); Argo CD Applications cannot be rendered without it" % key,
                                  field="options.%s" % key, value=value)
        for key in ("repo_url", "revision", "path", "app_of_apps_name", "argocd_namespace", "project",
                    "destination_server"):
            value = getattr(self, key)
            if _PLACEHOLDER.search(value) or any(ord(ch) < 32 for ch in value):
                raise RenderError("option must not contain template placeholders or control characters",
                                  field="options.%s" % key, value=value)
        parts = self.path.strip("/").split("/") if self.path.strip("/") else []
        if any(p in ("", ".", "..") for p in parts) or "\\" in self.path:
            raise RenderError("path must be a relative directory inside the repository without '..'",
                              field="options.path", value=self.path)
        for key in ("app_of_apps_name", "argocd_namespace", "project"):
            if not _DNS_LABEL.match(getattr(self, key)):
                raise RenderError("must be a DNS-1123 label (lowercase letters, digits, '-')",
                                  field="options.%s" % key, value=getattr(self, key))
        if not re.match(r"^https?://\S+$", self.destination_server):
            raise RenderError("destination_server must be an http(s) URL", field="options.destination_server",
                              value=self.destination_server)

    def repo_path(self, *parts: str) -> str:
        base = [p for p in self.path.strip("/").split("/") if p]
        return "/".join(base + list(parts))


def check_component_name(component: ComponentBundle) -> str:
    """Application/object names must be DNS-1123 labels; returns the name."""
    if not isinstance(component.name, str) or not _DNS_LABEL.match(component.name) or len(component.name) > 53:
        raise RenderError("component name must be a DNS-1123 label of at most 53 characters for Kubernetes objects",
                          field="components[].name", value=component.name)
    if component.namespace and not _DNS_LABEL.match(component.namespace):
        raise RenderError("namespace must be a DNS-1123 label", field="components[%s].namespace" % component.name,
                          value=component.namespace)
    return component.name


def oci_repo_url(component: ComponentBundle) -> Tuple[str, str]:
    """``(repoURL, chart)`` in Argo CD's Helm-OCI form (no scheme)."""
    base = component.repository[len("oci://"):].rstrip("/")
    if component.chart:
        return base, component.chart
    registry, chart = base.rsplit("/", 1) if "/" in base else ("", base)
    return registry, chart


def _sync_policy(opts: DeployerOptions) -> Dict[str, Any]:
    policy: Dict[str, Any] = {}
    if opts.automated:
        policy["automated"] = {"prune": bool(opts.prune), "selfHeal": bool(opts.self_heal)}
    sync_options = ["CreateNamespace=true"]
    if opts.server_side_apply:
        sync_options.append("ServerSideApply=true")
    policy["syncOptions"] = sync_options
    return policy


def _sources(c: ComponentBundle, opts: DeployerOptions) -> List[Dict[str, Any]]:
    values_src = {"repoURL": opts.repo_url, "targetRevision": opts.revision, "ref": "values"}
    sources: List[Dict[str, Any]] = []
    if c.type == "Kustomize":
        if not c.repository:
            raise RenderError("Kustomize component has no source", field="components[%s].repository" % c.name, value="")
        sources.append({"repoURL": c.repository, "targetRevision": c.kustomize_tag or "HEAD",
                        "path": c.kustomize_path.strip("/") or "."})
    elif c.repository:
        if c.is_oci:
            repo, chart = oci_repo_url(c)
        else:
            if not c.chart:
                raise RenderError("Helm component from an https repository needs a chart name",
                                  field="components[%s].chart" % c.name, value=c.chart)
            repo, chart = c.repository, c.chart
        sources.append({
            "repoURL": repo, "chart": chart, "targetRevision": c.version or "*",
            "helm": {"releaseName": c.name,
                     "valueFiles": ["$values/%s" % opts.repo_path(c.name, "values.yaml")]},
        })
        sources.append(values_src)
    if c.manifests:
        sources.append({"repoURL": opts.repo_url, "targetRevision": opts.revision,
                        "path": opts.repo_path(c.name, "manifests")})
    return sources


def _application(name: str, opts: DeployerOptions, sources: List[Dict[str, Any]], namespace: str,
                 wave: Optional[int]) -> Dict[str, Any]:
    metadata: Dict[str, Any] = {
        "name": name, "namespace": opts.argocd_namespace,
        "labels": {"app.kubernetes.io/managed-by": MANAGED_BY, "app.kubernetes.io/part-of": opts.app_of_apps_name},
    }
    if wave is not None:
        metadata["annotations"] = {"argocd.argoproj.io/sync-wave": str(wave)}
    metadata["finalizers"] = ["resources-finalizer.argocd.argoproj.io"]
    spec: Dict[str, Any] = {"project": opts.project}
    if len(sources) == 1:
        spec["source"] = sources[0]
    else:
        spec["sources"] = sources
    # no namespace (a manifest-only component without one): the manifests' own namespaces apply
    spec["destination"] = {"server": opts.destination_server, "namespace": namespace} if namespace else \
        {"server": opts.destination_server}
    spec["syncPolicy"] = _sync_policy(opts)
    return {"apiVersion": API_VERSION, "kind": "Application", "metadata": metadata, "spec": spec}


def _readme(result: RecipeResult, components: List[ComponentBundle], opts: DeployerOptions,
            skipped: List[str]) -> str:
    crit = ", ".join("%s=%s" % (k, v) for k, v in result.criteria.to_dict().items())
    lines = [
        "# Deployment bundle (Argo CD)",
        "",
        "Rendered by dsxos.cluster for criteria: %s." % crit,
        "",
        "Commit this directory to `%s` at revision `%s`, path `%s`, then apply the parent" % (
            opts.repo_url, opts.revision, opts.repo_path() or "."),
        "Application once:",
        "",
        "```bash",
        "kubectl apply -n %s -f app-of-apps.yaml" % opts.argocd_namespace,
        "```",
        "",
        "`%s` syncs `applications/`, which holds one Application per component. Each" % opts.app_of_apps_name,
        "Application carries an `argocd.argoproj.io/sync-wave` annotation equal to its position in the",
        "deployment order. Argo CD only waits for a child Application to be healthy before the next",
        "wave when the Application health check is enabled (`resource.customizations.health.argoproj.io_Application`",
        "in `argocd-cm`).",
        "",
        "## Components",
        "",
        "| wave | component | type | chart / source | version | namespace | manifests |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in components:
        source = c.repository or "(manifests only)"
        lines.append("| %d | %s | %s | %s | %s | %s | %d |" % (
            c.order, c.name, c.type, source + (" (chart %s)" % c.chart if c.chart else ""), c.version or "-",
            shown_namespace(c), len(c.manifests)))
    if skipped:
        lines += ["", "Nothing to deploy (no chart and no manifests), no Application: %s." % ", ".join(skipped)]
    lines += [
        "",
        "Helm values live in `<component>/values.yaml` and are referenced through a `$values` source;",
        "rendered manifests in `<component>/manifests/` are a further source of the same Application.",
        "",
    ]
    return "\n".join(lines)


def render(result: RecipeResult, components: List[ComponentBundle],
           options: Optional[DeployerOptions] = None) -> Dict[str, BundleFile]:
    """Render the Argo CD bundle files (without ``recipe.yaml``/``checksums.txt``)."""
    opts, ordered = begin_render(options, DeployerOptions, components, check_component_name)
    files: Dict[str, BundleFile] = {}
    skipped: List[str] = []
    for c in ordered:
        name = c.name
        if name == opts.app_of_apps_name:
            raise RenderError("a component has the same name as the app-of-apps Application",
                              field="options.app_of_apps_name", value=name)
        if c.type == "Helm" and c.repository:
            files["%s/values.yaml" % name] = BundleFile.text(dump_yaml(c.values or {}))
        for file_name in sorted(c.manifests):
            check_manifest_name(c, file_name)
            files["%s/manifests/%s" % (name, file_name)] = BundleFile.text(c.manifests[file_name])
        sources = _sources(c, opts)
        if not sources:
            skipped.append(name)
            continue
        namespace = namespace_of(c) if c.namespace or is_chart(c) or c.type == "Kustomize" else ""
        app = _application(name, opts, sources, namespace, c.order)
        files["applications/%s.yaml" % name] = BundleFile.text(dump_yaml(app))
    parent = _application(opts.app_of_apps_name, opts, [{
        "repoURL": opts.repo_url, "targetRevision": opts.revision, "path": opts.repo_path("applications"),
    }], opts.argocd_namespace, None)
    files["app-of-apps.yaml"] = BundleFile.text(dump_yaml(parent))
    files["README.md"] = BundleFile.text(_readme(result, ordered, opts, skipped))
    return dict(sorted(files.items()))
