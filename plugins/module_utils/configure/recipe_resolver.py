# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Criteria -> :class:`RecipeResult`.

1. The ``base`` overlay is applied first (the root of every recipe).
2. All overlays whose criteria match are applied, ordered by ascending
   specificity, ties broken by overlay name; each with its ``spec.base`` chain
   parent-first (an overlay without ``spec.base`` inherits from ``base``), skipping
   overlays already applied.  The mixins an overlay names are merged right after it.
3. Registry defaults fill empty source/chart/version/namespace (Kustomize:
   source/path/tag); the namespace falls back to the component name, except for a
   manifest-only component, which then has no namespace.
4. Disabled components (``overrides.enabled: false`` or the ``disabled`` argument)
   leave the deployment order; dependencyRefs to them are dropped with a warning.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.deployment_order import deployment_order
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_criteria import overlay_matches, validate_criteria
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import DependencyError, RecipeResolveError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_merge import empty_spec, merge_spec
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import (
    ComponentRef, Constraint, Criteria, RecipeResult, ValidationPhase)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import BASE_NAME, RecipeDocument, RecipeStore

_CHAIN_MEMO = "recipe_resolver.chain"


def inheritance_chain(store: RecipeStore, name: str) -> List[RecipeDocument]:
    """Overlays from the topmost ancestor down to ``name`` (``base`` itself excluded:
    it is the implicit root).  Cached per store."""
    memo: Dict[str, List[RecipeDocument]] = store.memo.setdefault(_CHAIN_MEMO, {})
    if name in memo:
        return memo[name]
    chain: List[RecipeDocument] = []
    seen: List[str] = []
    current = name
    while current and current != BASE_NAME:
        if current in seen:
            path = seen[seen.index(current):] + [current]
            raise RecipeResolveError("overlay inheritance cycle: %s" % " -> ".join(path),
                                     path=store.overlays[seen[-1]].path, field="spec.base", value=current)
        doc = store.overlays.get(current)
        if doc is None:
            child = store.overlays[seen[-1]]
            raise RecipeResolveError("overlay %r names base %r, which is not an overlay of the recipe directories"
                                     % (child.name, current), path=child.path, field="spec.base", value=current)
        seen.append(current)
        chain.append(doc)
        current = doc.base
    if current == BASE_NAME and BASE_NAME not in store.overlays:
        child = store.overlays[seen[-1]]
        if child.base:  # an explicit ``base: base`` needs overlays/base.yaml
            raise RecipeResolveError("overlay %r names base %r, which is not an overlay of the recipe directories"
                                     % (child.name, BASE_NAME), path=child.path, field="spec.base", value=BASE_NAME)
    chain.reverse()
    memo[name] = chain
    return chain


def validate_inheritance(store: RecipeStore) -> None:
    """Check every overlay's base chain and mixin names (for catalog tests/lint)."""
    for name in sorted(store.overlays):
        for doc in inheritance_chain(store, name):
            for mixin in doc.mixins:
                if mixin not in store.mixins:
                    raise RecipeResolveError("overlay %r names mixin %r, which does not exist" % (doc.name, mixin),
                                             path=doc.path, field="spec.mixins", value=mixin)


def matching_overlays(store: RecipeStore, query: Criteria) -> List[RecipeDocument]:
    """Overlays whose criteria match ``query``, by ascending specificity then name."""
    found = [doc for doc in store.overlays.values() if overlay_matches(doc, query)]
    found.sort(key=lambda doc: (doc.criteria.specificity() if doc.criteria else 0, doc.name))
    return found


class _Merger:
    """Accumulates the merged spec and remembers which file set what (for errors)."""

    def __init__(self, store: RecipeStore) -> None:
        self.store = store
        self.spec: Dict[str, Any] = empty_spec()
        self.applied: List[str] = []
        self.applied_mixins: List[str] = []
        self.origins: Dict[Tuple[str, str], str] = {}  # (component, field) -> file that set it last
        self.manifest_origins: Dict[Tuple[str, str], str] = {}  # (component, manifest path) -> file

    def _record(self, doc: RecipeDocument) -> None:
        for ref in doc.spec.get("componentRefs") or []:
            name = ref["name"]
            self.origins.setdefault((name, "name"), doc.path)
            for key, value in ref.items():
                if value not in (None, ""):
                    self.origins[(name, key)] = doc.path
            for item in ref.get("manifestFiles") or []:
                self.manifest_origins.setdefault((name, item), doc.path)

    def apply(self, doc: RecipeDocument) -> None:
        if doc.name in self.applied:
            return
        self.spec = merge_spec(self.spec, doc.spec)
        self._record(doc)
        self.applied.append(doc.name)
        for mixin_name in doc.mixins:
            mixin = self.store.mixins.get(mixin_name)
            if mixin is None:
                raise RecipeResolveError("overlay %r names mixin %r, which does not exist in mixins/" % (doc.name, mixin_name),
                                         path=doc.path, field="spec.mixins", value=mixin_name)
            if mixin_name in self.applied_mixins:
                continue
            self.spec = merge_spec(self.spec, mixin.spec)
            self._record(mixin)
            self.applied_mixins.append(mixin_name)


def _chart_name(chart: str) -> str:
    return chart.rsplit("/", 1)[-1]


def _is_disabled_by_overrides(ref: Dict[str, Any]) -> bool:
    enabled = (ref.get("overrides") or {}).get("enabled", True)
    return enabled is False or (isinstance(enabled, str) and enabled.strip().lower() == "false")


def apply_registry_defaults(store: RecipeStore, ref: Dict[str, Any], origin: Optional[str]) -> ComponentRef:
    """A merged componentRef mapping -> :class:`ComponentRef` with registry defaults filled."""
    name = ref["name"]
    entry = store.registry.get(name)
    helm = (entry or {}).get("helm") or {}
    kustomize = (entry or {}).get("kustomize") or {}
    kind = ref.get("type") or ("Kustomize" if kustomize and not helm else "Helm")
    if entry is None and not ref.get("source") and not ref.get("manifestFiles"):
        raise RecipeResolveError(
            "component %r is not in registry.yaml and its componentRef has no source (nor manifestFiles)" % name,
            path=origin, field="spec.componentRefs[%s]" % name, value=name)
    out = ComponentRef.from_dict(ref)
    out.type = kind
    if kind == "Kustomize":
        out.source = out.source or str(kustomize.get("defaultSource") or "")
        out.path = out.path or str(kustomize.get("defaultPath") or "")
        out.tag = out.tag or str(kustomize.get("defaultTag") or "")
        namespace = kustomize.get("defaultNamespace") or helm.get("defaultNamespace")
    else:
        out.source = out.source or str(helm.get("defaultRepository") or "")
        out.chart = _chart_name(out.chart or str(helm.get("defaultChart") or ""))
        if not out.chart and out.source:
            out.chart = name
        out.version = out.version or str(helm.get("defaultVersion") or "")
        namespace = helm.get("defaultNamespace")
    manifest_only = kind == "Helm" and not out.source
    # a manifest-only component without a namespace has none (its manifests name theirs), as in AICR
    out.namespace = out.namespace or str(namespace or "") or ("" if manifest_only else name)
    if not out.manifest_files and (entry or {}).get("manifestFiles"):
        out.manifest_files = list(entry["manifestFiles"])
    return out


def _check_paths(store: RecipeStore, merger: _Merger, ref: ComponentRef) -> None:
    registry_file = store.registry_sources.get(ref.name)
    if ref.values_file:
        store.resolve_path(ref.values_file, merger.origins.get((ref.name, "valuesFile")),
                           "spec.componentRefs[%s].valuesFile" % ref.name)
    for item in ref.manifest_files:
        origin = merger.manifest_origins.get((ref.name, item), registry_file)
        store.resolve_path(item, origin, "spec.componentRefs[%s].manifestFiles" % ref.name)


def resolve(store: RecipeStore, criteria: Any, disabled: Iterable[str] = ()) -> RecipeResult:
    """Resolve ``criteria`` (mapping or :class:`Criteria`) against ``store``."""
    query = validate_criteria(criteria, store.extra_criteria_values)
    merger = _Merger(store)
    base = store.overlays.get(BASE_NAME)
    if base is not None:
        merger.apply(base)
    for doc in matching_overlays(store, query):
        for link in inheritance_chain(store, doc.name):
            merger.apply(link)

    warnings: List[str] = []
    if len(merger.applied) <= (1 if base is not None else 0):
        warnings.append("no overlay matched the criteria; the recipe is the base only")

    refs: Dict[str, ComponentRef] = {}
    for raw in merger.spec["componentRefs"]:
        origin = merger.origins.get((raw["name"], "name"))
        ref = apply_registry_defaults(store, raw, origin)
        _check_paths(store, merger, ref)
        refs[ref.name] = ref

    disabled_set: Set[str] = set()
    for name in disabled or ():
        if name in refs:
            disabled_set.add(name)
        else:
            warnings.append("disabled component %r is not part of this recipe" % name)
    disabled_set.update(raw["name"] for raw in merger.spec["componentRefs"] if _is_disabled_by_overrides(raw))

    graph = {name: list(ref.dependency_refs) for name, ref in refs.items()}
    try:
        order = deployment_order(graph, disabled_set, warnings)
    except DependencyError as exc:
        component = (exc.field or "")[len("componentRefs["):].split("]")[0]
        raise DependencyError(exc.message, path=merger.origins.get((component, "dependencyRefs")),
                              field=exc.field, value=exc.value) from None

    component_refs: List[ComponentRef] = []
    for name in order:
        ref = refs[name]
        ref.dependency_refs = [d for d in ref.dependency_refs if d not in disabled_set]
        component_refs.append(ref)
    for name in sorted(disabled_set):
        refs[name].enabled = False
        component_refs.append(refs[name])

    metadata: Dict[str, Any] = {"recipeDirs": list(store.dirs), "warnings": warnings}
    if merger.applied_mixins:
        metadata["appliedMixins"] = list(merger.applied_mixins)
    if disabled_set:
        metadata["disabledComponents"] = sorted(disabled_set)
    return RecipeResult(
        criteria=query,
        applied_overlays=list(merger.applied),
        constraints=[Constraint.from_dict(c) for c in merger.spec["constraints"]],
        component_refs=component_refs,
        deployment_order=order,
        validation={name: ValidationPhase.from_dict(body) for name, body in merger.spec["validation"].items()},
        metadata=metadata,
    )
