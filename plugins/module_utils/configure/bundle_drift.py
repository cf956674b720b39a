# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Compare a rendered bundle (helm, argocd or flux layout) with what the cluster runs (read-only).

* helm bundles: the latest Helm release Secret of each chart component (chart version, user values, release status);
* argocd bundles: each component's Argo CD ``Application`` (chart ``targetRevision``, Helm section, sync and health status);
* flux bundles: each ``HelmRelease`` (chart version or the ``OCIRepository`` tag, values inline or from the values
  ConfigMap, ``Ready``/``Stalled`` conditions, deployed ``history``) and each Flux ``Kustomization`` (``Ready``).

Per component the status is one of ``in_sync``, ``missing``, ``version_drift``, ``values_drift``, ``out_of_sync``
(the cluster object matches but is not reconciled/healthy yet), ``failed`` or ``not_checked`` (nothing the deployer
leaves in the cluster can be compared, e.g. manifest-only components of a helm bundle).

The bundle side reads only what a bundle holds: a directory without a regular ``recipe.yaml`` is refused before
anything else in it is looked at, and every file read must be a regular file inside the bundle (a symlink, FIFO
or device is refused); YAML goes through ``safe_yaml`` (size, depth, duplicate-key limits).
"""
from __future__ import annotations

import base64
import binascii
import os
import stat
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.helm_release import (
    HelmReleaseDecodeError, decode_release_secret, latest_release_secret, revision_of,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sNotFound
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import validate_label_value, validate_namespace, validate_subdomain
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeLoadError, RecipePathError, RecipeSchemaError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import ComponentRef, RecipeResult
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import load_yaml_file, load_yaml_text
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.values_diff import normalize_values, values_diff

DEPLOYERS = ("helm", "argocd", "flux")
STATUSES = ("in_sync", "missing", "version_drift", "values_drift", "out_of_sync", "failed", "not_checked")
ARGO = ("argoproj.io", "v1alpha1", "applications")
FLUX_HR = ("helm.toolkit.fluxcd.io", "v2", "helmreleases")
FLUX_OCI = ("source.toolkit.fluxcd.io", "v1", "ocirepositories")
FLUX_KS = ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations")
_HELM_PENDING = ("pending-install", "pending-upgrade", "pending-rollback")
_HELM_GONE = ("uninstalling", "uninstalled")


@dataclass
class Expected:
    """What the bundle says one component should look like in the cluster."""

    name: str
    kind: str  # helm_release | argocd_application | flux_helmrelease | flux_kustomization | none
    namespace: str = ""
    object_name: str = ""
    version: str = ""
    values: Optional[dict[str, Any]] = None
    document: dict[str, Any] = field(default_factory=dict)  # the bundle's Application / HelmRelease / Kustomization
    extra: dict[str, Any] = field(default_factory=dict)
    reason: str = ""  # why not checked


# ---------------------------------------------------------------------------------------------- bundle side


def detect_deployer(bundle: str) -> str:
    """``argocd`` (``applications/`` or ``app-of-apps.yaml``), ``flux`` (``*/helmrelease.yaml`` or ``namespaces.yaml`` +
    ``kustomization.yaml``), ``helm`` (``deploy.sh``); else a :class:`RecipePathError` naming the directory."""
    if os.path.isdir(os.path.join(bundle, "applications")) or os.path.isfile(os.path.join(bundle, "app-of-apps.yaml")):
        return "argocd"
    if os.path.isfile(os.path.join(bundle, "kustomization.yaml")):
        return "flux"
    for entry in sorted(os.listdir(bundle)):
        if os.path.isfile(os.path.join(bundle, entry, "helmrelease.yaml")):
            return "flux"
    if os.path.isfile(os.path.join(bundle, "deploy.sh")):
        return "helm"
    raise RecipePathError("cannot tell the deployer of this bundle: no applications/ or app-of-apps.yaml (argocd), no "
                          "kustomization.yaml or */helmrelease.yaml (flux), no deploy.sh (helm); set deployer", path=bundle)


def _load_mapping(path: str, display: str) -> dict[str, Any]:
    data = load_yaml_file(path, display=display, error=RecipeLoadError)
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise RecipeSchemaError("expected a YAML mapping", path=display, value=type(data).__name__)
    return dict(data)


def _bundle_file(bundle: str, rel: str) -> Optional[str]:
    """``bundle/rel`` when it is a regular file (not a symlink), ``None`` when absent; anything else is refused."""
    path = os.path.join(bundle, rel)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RecipePathError(f"cannot read bundle file: {exc.strerror}", path=path) from None
    if not stat.S_ISREG(info.st_mode):
        raise RecipePathError("bundle file is not a regular file (a symlink, directory, FIFO or device); refused",
                              path=path, field="bundle", value=rel)
    return path


def _optional_mapping(bundle: str, rel: str) -> Optional[dict[str, Any]]:
    path = _bundle_file(bundle, rel)
    return _load_mapping(path, rel) if path is not None else None


def _is_chart(ref: ComponentRef) -> bool:
    return ref.type.lower() == "helm" and bool(ref.chart) and bool(ref.source)


def _norm_version(value: Any) -> str:
    text = str(value or "").strip()
    text = text.replace("_", "+")
    return text[1:] if text[:1] in ("v", "V") and text[1:2].isdigit() else text


def _chart_source(app: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
    spec = app.get("spec") or {}
    sources = spec.get("sources")
    if isinstance(sources, list) and sources:
        for index, source in enumerate(sources):
            if isinstance(source, Mapping) and source.get("chart"):
                return index, dict(source)
        return 0, dict(sources[0]) if isinstance(sources[0], Mapping) else {}
    source = spec.get("source")
    return -1, dict(source) if isinstance(source, Mapping) else {}


def _flux_values(bundle: str, name: str, release: Mapping[str, Any]) -> dict[str, Any]:
    spec = release.get("spec") or {}
    if spec.get("valuesFrom"):
        configmap = _optional_mapping(bundle, os.path.join(name, "values-configmap.yaml"))
        if configmap is not None:
            text = (configmap.get("data") or {}).get("values.yaml") or ""
            return normalize_values(load_yaml_text(text, source=f"{name}/values-configmap.yaml data.values.yaml", error=RecipeLoadError))
        values = _optional_mapping(bundle, os.path.join(name, "values.yaml"))
        return normalize_values(values)
    return normalize_values(spec.get("values"))


def _oci_tag(bundle: str, name: str) -> str:
    source = _optional_mapping(bundle, os.path.join(name, "source.yaml")) or {}
    return str(((source.get("spec") or {}).get("ref") or {}).get("tag") or "")


def load_bundle(bundle: str, deployer: str = "auto") -> tuple[str, RecipeResult, list[Expected]]:
    """Read ``recipe.yaml`` and the deployer's files; return (deployer, recipe, expectations in deployment order)."""
    if not os.path.isdir(bundle):
        raise RecipePathError("bundle directory does not exist", path=bundle, field="bundle")
    recipe_path = os.path.join(bundle, "recipe.yaml")
    if _bundle_file(bundle, "recipe.yaml") is None:  # before anything else is read: refuse what is not a bundle
        raise RecipePathError("bundle has no recipe.yaml (not a bundle)", path=recipe_path)
    if deployer in (None, "", "auto"):
        deployer = detect_deployer(bundle)
    if deployer not in DEPLOYERS:
        raise RecipeSchemaError(f"unknown deployer; known: auto, {', '.join(DEPLOYERS)}", field="deployer", value=deployer)
    recipe = RecipeResult.from_dict(_load_mapping(recipe_path, recipe_path), path=recipe_path, prefix="")
    refs = [r for r in recipe.component_refs if r.enabled]
    order = {name: i for i, name in enumerate(recipe.deployment_order)}
    refs.sort(key=lambda r: (order.get(r.name, len(order)), r.name))
    out = []
    for ref in refs:
        validate_subdomain(ref.name, f"{recipe_path}: componentRefs name")
        if deployer == "helm":
            out.append(_expect_helm(bundle, ref))
        elif deployer == "argocd":
            out.append(_expect_argocd(bundle, ref))
        else:
            out.append(_expect_flux(bundle, ref))
    return deployer, recipe, out


def _expect_helm(bundle: str, ref: ComponentRef) -> Expected:
    if not _is_chart(ref):
        why = "Kustomize component (applied with kubectl -k)" if ref.type.lower() == "kustomize" else \
            "manifest-only component (applied with kubectl; Helm does not track it)"
        return Expected(ref.name, "none", reason=why)
    namespace = validate_namespace(ref.namespace or "default", f"component {ref.name} namespace")
    values = normalize_values(_optional_mapping(bundle, os.path.join(ref.name, "values.yaml")))
    return Expected(ref.name, "helm_release", namespace, ref.name, ref.version, values)


def _expect_argocd(bundle: str, ref: ComponentRef) -> Expected:
    rel = os.path.join("applications", ref.name + ".yaml")
    app = _optional_mapping(bundle, rel)
    if app is None:
        return Expected(ref.name, "none", reason=f"no {rel} in the bundle (nothing for Argo CD to deploy)")
    meta = app.get("metadata") or {}
    name = validate_subdomain(meta.get("name") or ref.name, f"{rel} metadata.name")
    namespace = validate_namespace(meta.get("namespace") or "argocd", f"{rel} metadata.namespace")
    dummy_index, source = _chart_source(app)
    version = str(source.get("targetRevision") or "") if source.get("chart") else ""
    return Expected(ref.name, "argocd_application", namespace, name, version, None, app,
                    {"helm": source.get("helm") or {}, "chart": source.get("chart") or ""})


def _expect_flux(bundle: str, ref: ComponentRef) -> Expected:
    release = _optional_mapping(bundle, os.path.join(ref.name, "helmrelease.yaml"))
    if release is not None:
        meta = release.get("metadata") or {}
        name = validate_subdomain(meta.get("name") or ref.name, f"{ref.name}/helmrelease.yaml metadata.name")
        namespace = validate_namespace(meta.get("namespace") or "flux-system", f"{ref.name}/helmrelease.yaml metadata.namespace")
        spec = release.get("spec") or {}
        chart_ref = spec.get("chartRef") or {}
        version = str((((spec.get("chart") or {}).get("spec") or {}).get("version")) or "")
        extra: dict[str, Any] = {}
        if chart_ref:
            version = _oci_tag(bundle, ref.name) or ref.version
            extra["chart_ref"] = dict(chart_ref)
        if spec.get("valuesFrom"):
            extra["values_from"] = list(spec["valuesFrom"])
        return Expected(ref.name, "flux_helmrelease", namespace, name, version, _flux_values(bundle, ref.name, release), release, extra)
    kustomization = _optional_mapping(bundle, os.path.join(ref.name, "flux-kustomization.yaml"))
    if kustomization is not None:
        meta = kustomization.get("metadata") or {}
        name = validate_subdomain(meta.get("name") or ref.name, f"{ref.name}/flux-kustomization.yaml metadata.name")
        namespace = validate_namespace(meta.get("namespace") or "flux-system", f"{ref.name}/flux-kustomization.yaml metadata.namespace")
        return Expected(ref.name, "flux_kustomization", namespace, name, "", None, kustomization)
    return Expected(ref.name, "none", reason="manifest-only component (plain resources listed in kustomization.yaml)")


# ---------------------------------------------------------------------------------------------- cluster side


def _result(exp: Expected, status: str, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": exp.name, "kind": exp.kind, "namespace": exp.namespace or None, "object": exp.object_name or None,
                           "status": status, "drift": [], "expected_version": exp.version or None, "actual_version": None,
                           "values_diff": None, "message": ""}
    out.update(fields)
    return out


def _verdict(exp: Expected, version_ok: bool, diff: Optional[str], actual_version: Optional[str], message_parts: list[str],
             failed: Optional[str] = None, pending: Optional[str] = None, **fields: Any) -> dict[str, Any]:
    drift = []
    if not version_ok:
        drift.append("version")
        message_parts.insert(0, f"chart version {actual_version or '(none)'} in the cluster, {exp.version} in the bundle")
    if diff:
        drift.append("values")
        message_parts.append("values differ from the bundle")
    if failed:
        status = "failed"
        message_parts.insert(0, failed)
    elif not version_ok:
        status = "version_drift"
    elif diff:
        status = "values_drift"
    elif pending:
        status = "out_of_sync"
        message_parts.append(pending)
    else:
        status = "in_sync"
    return _result(exp, status, drift=drift, actual_version=actual_version, values_diff=diff, message="; ".join(message_parts), **fields)


def _versions_match(expected: str, actual: Optional[str]) -> bool:
    return not expected or _norm_version(expected) == _norm_version(actual)


def check_helm_release(client: KubeApi, exp: Expected) -> dict[str, Any]:
    """Compare one chart component with the latest revision of its Helm release Secret."""
    selector = f"owner=helm,name={validate_label_value(exp.object_name, 'release name')}"
    listing = client.call("list", "secrets", client.core.list_namespaced_secret, exp.namespace, label_selector=selector)
    secrets = [client.to_plain(s) for s in listing.items or ()]
    latest = latest_release_secret(secrets)
    if latest is None:
        return _result(exp, "missing", message=f"no Helm release {exp.object_name!r} in namespace {exp.namespace!r}")
    secret_name = (latest.get("metadata") or {}).get("name")
    try:
        release = decode_release_secret(latest)
    except HelmReleaseDecodeError as err:
        return _result(exp, "failed", message=str(err), revision=revision_of(latest), secret=secret_name)
    info = release.get("info") or {}
    state = str(info.get("status") or ((latest.get("metadata") or {}).get("labels") or {}).get("status") or "unknown")
    chart_meta = (release.get("chart") or {}).get("metadata") or {}
    actual_version = chart_meta.get("version")
    revision = int(release.get("version") or revision_of(latest))
    fields = {"revision": revision, "release_status": state, "secret": secret_name, "chart": chart_meta.get("name")}
    if state in _HELM_GONE:
        return _result(exp, "missing", actual_version=actual_version,
                       message=f"Helm release {exp.object_name!r} revision {revision} is {state}", **fields)
    diff = values_diff(exp.values, release.get("config"), f"bundle:{exp.name}/values.yaml",
                       f"cluster:{exp.namespace}/{exp.object_name} revision {revision}")
    failed = None
    pending = None
    if state == "failed":
        failed = f"Helm release revision {revision} failed: {info.get('description') or 'no description'}"
    elif state in _HELM_PENDING:
        pending = f"Helm release revision {revision} is {state}"
    elif state != "deployed":
        failed = f"Helm release revision {revision} has unexpected status {state}"
    return _verdict(exp, _versions_match(exp.version, actual_version), diff, actual_version, [], failed, pending, **fields)


def _get_custom(client: KubeApi, gvr: tuple[str, str, str], namespace: str, name: str) -> Optional[dict[str, Any]]:
    group, version, plural = gvr
    try:
        obj = client.call("get", f"{plural}.{group}", client.custom.get_namespaced_custom_object, group, version, namespace, plural, name)
    except K8sNotFound:
        return None
    return dict(obj) if isinstance(obj, Mapping) else client.to_plain(obj)


def _helm_section(helm: Any) -> dict[str, Any]:
    """The parts of an Argo CD ``source.helm`` that change what is deployed."""
    if not isinstance(helm, Mapping):
        return {}
    keep = ("releaseName", "valueFiles", "values", "valuesObject", "parameters", "fileParameters")
    return {k: helm[k] for k in keep if helm.get(k) not in (None, "", [], {})}


def check_argocd_application(client: KubeApi, exp: Expected) -> dict[str, Any]:
    """Compare one component with its Argo CD Application (chart targetRevision, Helm section, sync/health)."""
    app = _get_custom(client, ARGO, exp.namespace, exp.object_name)
    if app is None:
        return _result(exp, "missing", message=f"no Argo CD Application {exp.object_name!r} in namespace {exp.namespace!r}")
    index, source = _chart_source(app)
    spec_version = str(source.get("targetRevision") or "") if source.get("chart") else None
    status = app.get("status") or {}
    sync = status.get("sync") or {}
    health = status.get("health") or {}
    revisions = sync.get("revisions") or []
    deployed = revisions[index] if 0 <= index < len(revisions) else (sync.get("revision") if index <= 0 else None)
    fields = {"sync_status": sync.get("status"), "health_status": health.get("status"), "deployed_version": deployed,
              "target_revision": spec_version}
    diff = values_diff(_helm_section(exp.extra.get("helm")), _helm_section(source.get("helm")),
                       f"bundle:applications/{exp.name}.yaml helm", f"cluster:{exp.namespace}/{exp.object_name} helm")
    failed = None
    operation = status.get("operationState") or {}
    if operation.get("phase") in ("Failed", "Error"):
        failed = f"last sync {operation.get('phase')}: {operation.get('message') or 'no message'}"
    elif health.get("status") == "Degraded":
        failed = f"health Degraded: {health.get('message') or _conditions_text(status.get('conditions'))}"
    pending = None
    if not failed:
        if sync.get("status") != "Synced":
            pending = f"sync status {sync.get('status') or 'unknown'}"
        elif health.get("status") not in ("Healthy", None):
            pending = f"health {health.get('status')}"
        elif exp.version and deployed and not _versions_match(exp.version, str(deployed)):
            pending = f"synced revision {deployed} is not {exp.version} yet"
    return _verdict(exp, _versions_match(exp.version, spec_version), diff, spec_version, [], failed, pending, **fields)


def _conditions_text(conditions: Any) -> str:
    parts = []
    for cond in conditions or ():
        if isinstance(cond, Mapping):
            parts.append(f"{cond.get('type')}: {cond.get('message') or cond.get('reason') or ''}".strip())
    return "; ".join(parts) or "no message"


def _condition(obj: Mapping[str, Any], kind: str) -> Optional[Mapping[str, Any]]:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return cond
    return None


def _flux_readiness(obj: Mapping[str, Any]) -> tuple[Optional[str], Optional[str], dict[str, Any]]:
    """(failed message, pending message, fields) from Ready/Stalled conditions."""
    ready = _condition(obj, "Ready")
    stalled = _condition(obj, "Stalled")
    fields = {"ready": None if ready is None else ready.get("status"), "ready_reason": None if ready is None else ready.get("reason")}
    if stalled is not None and stalled.get("status") == "True":
        return f"Stalled ({stalled.get('reason')}): {stalled.get('message') or ''}".strip(), None, fields
    if ready is None:
        return None, "not reconciled yet (no Ready condition)", fields
    if ready.get("status") == "False":
        return f"Ready=False ({ready.get('reason')}): {ready.get('message') or ''}".strip(), None, fields
    if ready.get("status") != "True":
        return None, f"Ready={ready.get('status')} ({ready.get('reason')}): {ready.get('message') or ''}".strip(), fields
    return None, None, fields


def _cluster_flux_values(client: KubeApi, exp: Expected, release: Mapping[str, Any]) -> dict[str, Any]:
    spec = release.get("spec") or {}
    values: dict[str, Any] = normalize_values(spec.get("values"))
    for ref in spec.get("valuesFrom") or ():
        if not isinstance(ref, Mapping) or ref.get("kind") not in ("ConfigMap", "Secret"):
            continue
        key = ref.get("valuesKey") or "values.yaml"
        try:
            if ref["kind"] == "ConfigMap":
                obj = client.call("get", "configmaps", client.core.read_namespaced_config_map, ref.get("name"), exp.namespace)
                text = (obj.data or {}).get(key)
            else:
                obj = client.call("get", "secrets", client.core.read_namespaced_secret, ref.get("name"), exp.namespace)
                raw = (obj.data or {}).get(key)
                text = base64.b64decode(raw).decode("utf-8") if raw else None
        except K8sNotFound:
            if ref.get("optional"):
                continue
            values.setdefault("__missing_valuesFrom__", f"{ref['kind']}/{ref.get('name')}")
            continue
        except (binascii.Error, UnicodeDecodeError):
            text = None
        if text:
            loaded = load_yaml_text(text, source=f"{ref['kind']} {exp.namespace}/{ref.get('name')} key {key}", error=RecipeLoadError)
            if isinstance(loaded, Mapping):
                values = {**loaded, **values}  # inline values win over valuesFrom, as in Flux
    return values


def check_flux_helmrelease(client: KubeApi, exp: Expected) -> dict[str, Any]:
    """Compare one component with its Flux HelmRelease (version, values, Ready/Stalled, deployed history)."""
    release = _get_custom(client, FLUX_HR, exp.namespace, exp.object_name)
    if release is None:
        return _result(exp, "missing", message=f"no Flux HelmRelease {exp.object_name!r} in namespace {exp.namespace!r}")
    spec = release.get("spec") or {}
    spec_version: Optional[str] = str((((spec.get("chart") or {}).get("spec") or {}).get("version")) or "") or None
    chart_ref = spec.get("chartRef") or {}
    messages: list[str] = []
    if chart_ref:
        source_ns = chart_ref.get("namespace") or exp.namespace
        source = _get_custom(client, FLUX_OCI, source_ns, str(chart_ref.get("name") or ""))
        if source is None:
            return _result(exp, "missing", message=f"the HelmRelease's chart source OCIRepository {source_ns}/{chart_ref.get('name')} "
                           "does not exist")
        else:
            spec_version = str(((source.get("spec") or {}).get("ref") or {}).get("tag") or "") or None
    status = release.get("status") or {}
    history = status.get("history") or []
    deployed = (history[0].get("chartVersion") if history and isinstance(history[0], Mapping) else None) or \
        status.get("lastAppliedRevision") or None
    failed, pending, fields = _flux_readiness(release)
    fields.update({"deployed_version": deployed, "spec_version": spec_version})
    if not failed and not pending and exp.version and deployed and not _versions_match(exp.version, str(deployed)):
        pending = f"deployed chart {deployed} is not {exp.version} yet"
    diff = values_diff(exp.values, _cluster_flux_values(client, exp, release), f"bundle:{exp.name} values",
                       f"cluster:{exp.namespace}/{exp.object_name} values")
    version_ok = _versions_match(exp.version, spec_version) if spec_version is not None or exp.version else True
    return _verdict(exp, version_ok, diff, spec_version, messages, failed, pending, **fields)


def check_flux_kustomization(client: KubeApi, exp: Expected) -> dict[str, Any]:
    """A Flux Kustomization: present and Ready."""
    obj = _get_custom(client, FLUX_KS, exp.namespace, exp.object_name)
    if obj is None:
        return _result(exp, "missing", message=f"no Flux Kustomization {exp.object_name!r} in namespace {exp.namespace!r}")
    failed, pending, fields = _flux_readiness(obj)
    return _verdict(exp, True, None, None, [], failed, pending, **fields)


_CHECKS: dict[str, Callable[[KubeApi, Expected], dict[str, Any]]] = {
    "helm_release": check_helm_release, "argocd_application": check_argocd_application,
    "flux_helmrelease": check_flux_helmrelease, "flux_kustomization": check_flux_kustomization,
}


def summarize(components: list[Mapping[str, Any]]) -> dict[str, Any]:
    """``{in_sync, drifted, missing, failed, out_of_sync, not_checked, total, ok}``; ``ok`` when nothing drifted, is missing or failed.

    ``drifted`` counts version and values drift; ``out_of_sync`` (matching spec, not reconciled or healthy yet) is
    counted apart and does not clear ``ok`` unless ``strict``-style checks add it in ``failed_when``.
    """
    counts = {status: sum(1 for c in components if c["status"] == status) for status in STATUSES}
    drifted = counts["version_drift"] + counts["values_drift"]
    return {"in_sync": counts["in_sync"], "drifted": drifted, "version_drift": counts["version_drift"],
            "values_drift": counts["values_drift"], "missing": counts["missing"], "failed": counts["failed"],
            "out_of_sync": counts["out_of_sync"], "not_checked": counts["not_checked"], "total": len(components),
            "ok": drifted == 0 and counts["missing"] == 0 and counts["failed"] == 0}


def bundle_drift(client: KubeApi, bundle: str, deployer: str = "auto", components: Optional[list[str]] = None) -> dict[str, Any]:
    """Compare a bundle directory with the cluster; ``{deployer, components, summary, recipe_criteria}``."""
    kind, recipe, expected = load_bundle(bundle, deployer)
    if components:
        known = {e.name for e in expected}
        unknown = sorted(set(components) - known)
        if unknown:
            raise RecipeSchemaError(f"unknown component(s) {', '.join(unknown)}; the bundle has: {', '.join(sorted(known))}",
                                    path=bundle, field="components", value=unknown)
        expected = [e for e in expected if e.name in set(components)]
    results = []
    for exp in expected:
        if exp.kind == "none":
            results.append(_result(exp, "not_checked", message=exp.reason))
            continue
        results.append(_CHECKS[exp.kind](client, exp))
    return {"deployer": kind, "bundle": bundle, "recipe_criteria": recipe.criteria.to_dict(), "components": results,
            "summary": summarize(results)}
