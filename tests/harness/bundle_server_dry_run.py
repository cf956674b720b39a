# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Ask a real API server whether it would accept every object of a rendered bundle (server-side dry run).

The static checks (tests/unit/manifest_validation.py: strict JSON schemas) are the fast path. They miss the class of
output that is well-formed JSON but that a real server refuses: a label value ending in ``-``, a name that is not a
DNS label, a field of the wrong type in a CRD, an API version the server does not serve. This module sends each object
to a real server as a server-side apply with ``dryRun=All`` (nothing is stored) and collects every refusal.

* :func:`bundle_objects` -> the objects of a bundle that reach the API server, with the file each came from:
  every YAML document with ``apiVersion`` and ``kind`` in the bundle, except the files that are inputs of a tool
  rather than API objects (``values.yaml``, ``recipe.yaml``, kustomize's own ``kustomization.yaml`` build files
  of kind ``kustomize.config.k8s.io/v1beta1`` Kustomization).
* :func:`register_crds` registers the CRDs the objects need: those shipped in ``shared/schemas/crds`` (Argo CD,
  Flux) unchanged, and :data:`OWN_CRDS` for kinds whose CRD the project does not ship (PrometheusRule with a
  structural schema of the fields rules have, AlertmanagerConfig and Flux's Kustomization with those the
  catalog and the flux deployer write; others keep their ``spec`` unchecked and are reported as
  "metadata only" so nobody mistakes them for a full check).
* :class:`DryRun` applies the objects (namespaces they live in are created for real first, labelled
  ``dsxos.io/test=bundle-dry-run``) and returns :class:`Refusal` records: file, object, HTTP status and the
  server's message.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

import yaml

NOT_API_FILES = frozenset({"values.yaml", "recipe.yaml"})
#: kustomize build files: read by kustomize/Flux, never sent to an API server
NOT_API_KINDS = frozenset({("kustomize.config.k8s.io/v1beta1", "Kustomization")})
FIELD_MANAGER = "dsxos-bundle-dry-run"
TEST_LABEL = {"dsxos.io/test": "bundle-dry-run"}

_STRING = {"type": "string"}
_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
#: PrometheusRule (monitoring.coreos.com/v1): the fields prometheus-operator defines for ``spec.groups`` (a schema of
#: our own from its API reference, so types and unknown fields are checked; the rest of the object is standard).
PROMETHEUS_RULE_SPEC = {
    "type": "object",
    "properties": {
        "groups": {"type": "array", "items": {
            "type": "object", "required": ["name"],
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "interval": _STRING, "partial_response_strategy": _STRING, "limit": {"type": "integer"},
                "rules": {"type": "array", "items": {
                    "type": "object", "required": ["expr"],
                    "properties": {
                        "alert": _STRING, "record": _STRING, "for": _STRING, "keep_firing_for": _STRING,
                        "expr": {"x-kubernetes-int-or-string": True},
                        "labels": _STRING_MAP, "annotations": _STRING_MAP}}}}}}},
}
_DURATION = {"type": "string", "pattern": r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"}
_REF = {"type": "object", "required": ["name"], "properties": {"name": _STRING, "namespace": _STRING}}
#: Flux's Kustomization (kustomize.toolkit.fluxcd.io/v1): the fields the flux deployer writes, from Flux's API
#: reference (its CRD is not in shared/schemas/crds)
FLUX_KUSTOMIZATION_SPEC = {
    "type": "object",
    "required": ["interval", "prune", "sourceRef"],
    "properties": {
        "interval": _DURATION, "timeout": _DURATION, "retryInterval": _DURATION, "path": _STRING,
        "prune": {"type": "boolean"}, "wait": {"type": "boolean"}, "force": {"type": "boolean"},
        "suspend": {"type": "boolean"}, "targetNamespace": {"type": "string", "maxLength": 63, "minLength": 1},
        "serviceAccountName": _STRING, "dependsOn": {"type": "array", "items": _REF},
        "sourceRef": {"type": "object", "required": ["kind", "name"], "properties": {
            "kind": {"type": "string", "enum": ["OCIRepository", "GitRepository", "Bucket"]},
            "name": _STRING, "namespace": _STRING, "apiVersion": _STRING}},
    },
}
_MATCHERS = {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string", "minLength": 1}, "value": _STRING,
    "matchType": {"type": "string", "enum": ["!=", "=", "=~", "!~"]}}}}
_SECRET_KEY = {"type": "object", "required": ["key"], "properties": {"name": _STRING, "key": _STRING,
                                                                     "optional": {"type": "boolean"}}}
#: AlertmanagerConfig (monitoring.coreos.com/v1alpha1): route, receivers with webhook configs and inhibit rules, the
#: fields prometheus-operator's API reference gives them (the parts the catalog's EDA receiver writes are typed; other
#: receiver kinds are left open)
ALERTMANAGER_CONFIG_SPEC = {
    "type": "object",
    "properties": {
        "route": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {
            "receiver": _STRING, "groupBy": {"type": "array", "items": _STRING}, "groupWait": _STRING,
            "groupInterval": _STRING, "repeatInterval": _STRING, "matchers": _MATCHERS, "continue": {"type": "boolean"}}},
        "inhibitRules": {"type": "array", "items": {"type": "object", "properties": {
            "sourceMatch": _MATCHERS, "targetMatch": _MATCHERS, "equal": {"type": "array", "items": _STRING}}}},
        "receivers": {"type": "array", "items": {"type": "object", "required": ["name"],
                                                 "x-kubernetes-preserve-unknown-fields": True, "properties": {
            "name": {"type": "string", "minLength": 1},
            "webhookConfigs": {"type": "array", "items": {"type": "object", "properties": {
                "url": _STRING, "sendResolved": {"type": "boolean"}, "maxAlerts": {"type": "integer", "minimum": 0},
                "urlSecret": _SECRET_KEY,
                "httpConfig": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {
                    "authorization": {"type": "object", "properties": {
                        "type": _STRING, "credentials": _SECRET_KEY}}}}}}}}}},
    },
}


@dataclass(frozen=True)
class OwnCrd:
    """A CRD the tests register themselves: group, kind, plural, scope and the ``spec`` schema (None: unchecked)."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    spec_schema: Optional[Dict[str, Any]]

    def manifest(self) -> Dict[str, Any]:
        spec = self.spec_schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return {
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.%s" % (self.plural, self.group), "labels": dict(TEST_LABEL)},
            "spec": {
                "group": self.group, "scope": "Namespaced" if self.namespaced else "Cluster",
                "names": {"kind": self.kind, "plural": self.plural, "singular": self.kind.lower(),
                          "listKind": self.kind + "List"},
                "versions": [{"name": self.version, "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                    "type": "object", "properties": {"spec": spec}}}}],
            },
        }


OWN_CRDS: Tuple[OwnCrd, ...] = (
    OwnCrd("monitoring.coreos.com", "v1", "PrometheusRule", "prometheusrules", True, PROMETHEUS_RULE_SPEC),
    OwnCrd("kustomize.toolkit.fluxcd.io", "v1", "Kustomization", "kustomizations", True, FLUX_KUSTOMIZATION_SPEC),
    OwnCrd("monitoring.coreos.com", "v1alpha1", "AlertmanagerConfig", "alertmanagerconfigs", True, ALERTMANAGER_CONFIG_SPEC),
    OwnCrd("mellanox.com", "v1alpha1", "NicClusterPolicy", "nicclusterpolicies", False, None),
)


@dataclass(frozen=True)
class BundleObject:
    """One object of a bundle and where it came from (``relpath`` inside the bundle, document index)."""

    relpath: str
    index: int
    body: Dict[str, Any]

    @property
    def api_version(self) -> str:
        return str(self.body.get("apiVersion"))

    @property
    def kind(self) -> str:
        return str(self.body.get("kind"))

    @property
    def name(self) -> str:
        return str((self.body.get("metadata") or {}).get("name"))

    def describe(self) -> str:
        return "%s#%d %s/%s %s" % (self.relpath, self.index, self.api_version, self.kind, self.name)


@dataclass(frozen=True)
class Refusal:
    """What the server said about one object it would not accept."""

    where: str
    status: int
    reason: str
    message: str

    def __str__(self) -> str:
        return "%s: HTTP %s %s: %s" % (self.where, self.status, self.reason, self.message)


def bundle_objects(dest: str) -> List[BundleObject]:
    """Every API object in the bundle at ``dest`` (sorted by path, then document order)."""
    out: List[BundleObject] = []
    for root, dirs, names in os.walk(dest):
        dirs.sort()
        for name in sorted(names):
            if not name.endswith((".yaml", ".yml")) or name in NOT_API_FILES:
                continue
            path = os.path.join(root, name)
            relpath = os.path.relpath(path, dest).replace(os.sep, "/")
            with open(path, encoding="utf-8") as handle:
                docs = list(yaml.safe_load_all(handle))
            for index, doc in enumerate(docs):
                if not isinstance(doc, dict) or "apiVersion" not in doc or "kind" not in doc:
                    continue
                if (doc["apiVersion"], doc["kind"]) in NOT_API_KINDS:
                    continue
                out.append(BundleObject(relpath, index, doc))
    return out


def _crd_manifests(crd_dir: str) -> List[Dict[str, Any]]:
    out = []
    for name in sorted(os.listdir(crd_dir)):
        if name.endswith((".yaml", ".yml")):
            with open(os.path.join(crd_dir, name), encoding="utf-8") as handle:
                out.extend(d for d in yaml.safe_load_all(handle) if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition")
    return out


def _status_of(exc: Exception) -> Tuple[int, str, str]:
    status = int(getattr(exc, "status", 0) or 0)
    body = getattr(exc, "body", None)
    try:
        data = json.loads(body) if body else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    return status, str(data.get("reason") or getattr(exc, "reason", "") or type(exc).__name__), str(data.get("message") or body or exc)


class DryRun:
    """Server-side dry runs of bundle objects against one API server (a ``kubernetes.client.ApiClient``)."""

    def __init__(self, api_client: Any) -> None:
        from kubernetes.dynamic import DynamicClient  # pylint: disable=import-outside-toplevel

        self.api_client = api_client
        self._dynamic_class = DynamicClient
        self.dynamic = DynamicClient(api_client)
        self.metadata_only: Set[str] = set()
        self._namespaces: Set[str] = set()

    def register_crds(self, crd_dir: str, own: Sequence[OwnCrd] = OWN_CRDS, timeout_s: float = 60.0) -> List[str]:
        """Create (or keep) the shipped CRDs and ``own``; wait until each is established. -> their names."""
        crds = _crd_manifests(crd_dir) + [c.manifest() for c in own]
        self.metadata_only.update("%s/%s %s" % (c.group, c.version, c.kind) for c in own if c.spec_schema is None)
        api = self.dynamic.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
        names = []
        for crd in crds:
            name = crd["metadata"]["name"]
            names.append(name)
            try:
                api.create(body=crd)
            except Exception as exc:  # pylint: disable=broad-except
                if _status_of(exc)[0] != 409:
                    raise
        deadline = time.monotonic() + timeout_s
        pending = set(names)
        while pending:
            for name in sorted(pending):
                conditions = (api.get(name=name).to_dict().get("status") or {}).get("conditions") or []
                if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                    pending.discard(name)
            if pending and time.monotonic() > deadline:
                raise AssertionError("CRDs not established after %.0f s: %s" % (timeout_s, sorted(pending)))
            if pending:
                time.sleep(0.2)
        # discovery must see the new kinds: a fresh client (the old one cached the API list)
        self.dynamic = self._dynamic_class(self.api_client)
        return names

    def _ensure_namespace(self, namespace: str) -> None:
        if namespace in self._namespaces:
            return
        api = self.dynamic.resources.get(api_version="v1", kind="Namespace")
        try:
            api.create(body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": dict(TEST_LABEL)}})
        except Exception as exc:  # pylint: disable=broad-except
            if _status_of(exc)[0] != 409:
                raise
        self._namespaces.add(namespace)

    def apply(self, obj: BundleObject, default_namespace: str = "default") -> Optional[Refusal]:
        """Server-side apply ``obj`` with ``dryRun=All``; None when the server accepts it."""
        from kubernetes.dynamic.exceptions import ResourceNotFoundError  # pylint: disable=import-outside-toplevel

        try:
            resource = self.dynamic.resources.get(api_version=obj.api_version, kind=obj.kind)
        except ResourceNotFoundError:
            return Refusal(obj.describe(), 404, "NotServed", "the server does not serve %s %s" % (obj.api_version, obj.kind))
        namespace = None
        if resource.namespaced:
            namespace = (obj.body.get("metadata") or {}).get("namespace") or default_namespace
            self._ensure_namespace(namespace)
        try:
            resource.server_side_apply(body=obj.body, name=obj.name, namespace=namespace, field_manager=FIELD_MANAGER,
                                       force_conflicts=True, dry_run="All")
        except Exception as exc:  # pylint: disable=broad-except
            status, reason, message = _status_of(exc)
            return Refusal(obj.describe(), status, reason, message)
        return None

    def apply_all(self, objects: Iterable[BundleObject], default_namespace: str = "default") -> Tuple[int, List[Refusal]]:
        """Dry-run each distinct object once. -> (objects sent, refusals)."""
        seen: Dict[str, Optional[Refusal]] = {}
        refusals: List[Refusal] = []
        for obj in objects:
            key = json.dumps(obj.body, sort_keys=True, default=str)
            if key not in seen:
                seen[key] = self.apply(obj, default_namespace)
            refusal = seen[key]
            if refusal is not None:
                refusals.append(Refusal(obj.describe(), refusal.status, refusal.reason, refusal.message))
        return len(seen), refusals


def kinds_of(objects: Iterable[BundleObject]) -> Set[Tuple[str, str]]:
    """The ``(apiVersion, kind)`` pairs among ``objects``."""
    return {(o.api_version, o.kind) for o in objects}


def by_kind(refusals: Iterable[Refusal]) -> Mapping[str, List[str]]:
    """Refusals grouped by the server's reason, for a readable failure message."""
    out: Dict[str, List[str]] = {}
    for refusal in refusals:
        out.setdefault(refusal.reason, []).append(str(refusal))
    return out
