# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Entry points of the Configure phase, one :class:`EntryPoint` per module.

``RECIPE_RESOLVE``, ``BUNDLE_RENDER``, ``CONSTRAINT_CHECK`` (run on the controller by their action plugins),
``CLUSTER_SNAPSHOT`` and ``BUNDLE_DRIFT`` (Kubernetes reads). Each ``run_*`` takes the validated params of its
module, ``check_mode`` and ``diff`` and returns the module's result dict; bad input raises a
:class:`DsxosError` subclass, which :func:`..common.entry.call_entry` turns into a task failure.
Modules stay thin: argument spec -> ``call_entry(ENTRY, ...)`` -> ``finish``.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, is_dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import EntryPoint, call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_drift import DEPLOYERS, bundle_drift
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_render import render_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_writer import write_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.component_values import build_component_bundles
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.cluster_snapshot import collect_cluster_snapshot
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.constraints import evaluate_constraints, summarize
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_criteria import validate_criteria
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeError, RecipeLoadError, RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import (
    ANY,
    CRITERIA_FIELDS,
    Constraint,
    RecipeResult,
    SchedulingPaths,
    render_input,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_resolver import resolve
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.store_cache import cached_store
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.node_scheduling import scheduling_options
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.value_overrides import (
    parse_set, plan_overrides, without_components)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.snapshot import (
    Snapshot,
    infer_criteria_with_evidence,
    snapshot_from_host_facts,
    snapshot_from_values,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.connection_options import K8S_AUTH_SPEC


#: Argument specs shared by the modules (docs, direct execution) and the controller-side action plugins.
RECIPE_SOURCE_SPEC: Dict[str, Any] = dict(
    recipe_dirs=dict(type="list", elements="path", default=[]),
    include_builtin=dict(type="bool", default=True),
)
RESOLVE_SPEC: Dict[str, Any] = dict(
    RECIPE_SOURCE_SPEC,
    criteria=dict(type="dict", default={}),
    disabled_components=dict(type="list", elements="str", default=[]),
    snapshot=dict(type="dict"),
    infer=dict(type="bool", default=False),
)
#: One bundle of ``bundle_render``'s ``bundles`` list; unset keys take the task's option of the same name.
RENDER_ITEM_SPEC: Dict[str, Any] = dict(
    recipe=dict(type="dict"),
    criteria=dict(type="dict"),
    dest=dict(type="path", required=True),
    deployer=dict(type="str", choices=["helm", "argocd", "flux"]),
    deployer_options=dict(type="dict"),
    values_overrides=dict(type="dict"),
    disabled_components=dict(type="list", elements="str"),
    set=dict(type="list", elements="str"),
    force=dict(type="bool"),
)
RENDER_SPEC: Dict[str, Any] = dict(
    RECIPE_SOURCE_SPEC,
    recipe=dict(type="dict"),
    dest=dict(type="path"),
    bundles=dict(type="list", elements="dict", options=RENDER_ITEM_SPEC,
                 mutually_exclusive=[["recipe", "criteria"]], required_one_of=[["recipe", "criteria"]]),
    deployer=dict(type="str", default="helm", choices=["helm", "argocd", "flux"]),
    deployer_options=dict(type="dict", default={}),
    values_overrides=dict(type="dict", default={}),
    disabled_components=dict(type="list", elements="str", default=[]),
    force=dict(type="bool", default=False),
    set=dict(type="list", elements="str", default=[]),
    system_node_selector=dict(type="dict", default={}),
    system_node_tolerations=dict(type="list", elements="raw"),
    accelerated_node_selector=dict(type="dict", default={}),
    accelerated_node_tolerations=dict(type="list", elements="raw"),
    workload_gate_taint=dict(type="str"),
    workload_selector=dict(type="dict", default={}),
    nodes=dict(type="int", default=0),
)
CONSTRAINT_SPEC: Dict[str, Any] = dict(
    constraints=dict(type="list", elements="dict", default=[]),
    recipe=dict(type="dict"),
    phases=dict(type="list", elements="str", default=[]),
    snapshot=dict(type="dict"),
    host_facts=dict(type="dict"),
    measurements=dict(type="dict", default={}),
    missing_is_failure=dict(type="bool", default=False),
    fail_on_violation=dict(type="bool", default=False),
)
CLUSTER_SNAPSHOT_SPEC: Dict[str, Any] = dict(
    K8S_AUTH_SPEC,
    label_selector=dict(type="str"),
    host_facts=dict(type="dict"),
    snapshot=dict(type="dict"),
)
BUNDLE_DRIFT_SPEC: Dict[str, Any] = dict(
    K8S_AUTH_SPEC,
    bundle=dict(type="path", required=True),
    deployer=dict(type="str", choices=["auto"] + list(DEPLOYERS), default="auto"),
    components=dict(type="list", elements="str"),
)


def _plain(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if is_dataclass(obj):
        return asdict(obj)
    return obj


def build_snapshot(snapshot: Optional[Mapping[str, Any]] = None,
                   host_facts: Optional[Mapping[str, Mapping[str, Any]]] = None,
                   measurements: Optional[Mapping[str, Any]] = None) -> Snapshot:
    """Combine a serialized snapshot, Ansible host facts and user-given values (later wins)."""
    result = Snapshot.from_dict(dict(snapshot)) if snapshot else Snapshot()
    if host_facts:
        result = result.merge(snapshot_from_host_facts(host_facts))
    if measurements:
        result = result.merge(snapshot_from_values(dict(measurements)))
    return result


def resolve_recipe(criteria: Optional[Mapping[str, Any]], recipe_dirs: Sequence[str] = (),
                   include_builtin: bool = True, disabled_components: Sequence[str] = (),
                   snapshot: Optional[Mapping[str, Any]] = None, infer: bool = False,
                   store: Optional[RecipeStore] = None) -> Dict[str, Any]:
    """Resolve criteria (optionally completed from a snapshot) into a RecipeResult dict.

    ``store``: an already loaded store (a batch); by default the directories' store from :func:`.store_cache.cached_store`."""
    started = time.perf_counter()
    query = {k: v for k, v in dict(criteria or {}).items() if v not in (None, "")}
    evidence: Dict[str, Any] = {}
    if infer and snapshot:
        inferred, evidence = infer_criteria_with_evidence(Snapshot.from_dict(dict(snapshot)))
        for name in CRITERIA_FIELDS:
            value = getattr(inferred, name)
            if name not in query and value not in (ANY, 0):
                query[name] = value
    if store is None:
        store = cached_store(list(recipe_dirs), include_builtin=include_builtin)
    wanted = validate_criteria(query, store.extra_criteria_values)
    result = resolve(store, wanted, disabled=list(disabled_components))
    return {
        "recipe": result.to_dict(),
        "criteria": wanted.to_dict(),
        "applied_overlays": list(result.applied_overlays),
        "deployment_order": list(result.deployment_order),
        "inferred": {k: _plain(v) for k, v in evidence.items()},
        "elapsed_ms": round((time.perf_counter() - started) * 1000.0, 2),
    }


def render_recipe_bundle(recipe: Mapping[str, Any], dest: str, deployer: str = "helm",
                         deployer_options: Optional[Mapping[str, Any]] = None,
                         recipe_dirs: Sequence[str] = (), include_builtin: bool = True,
                         values_overrides: Optional[Mapping[str, Any]] = None,
                         disabled_components: Sequence[str] = (), force: bool = False,
                         check_mode: bool = False, want_diff: bool = False,
                         set_values: Sequence[str] = (), scheduling: Optional[Mapping[str, Any]] = None,
                         store: Optional[RecipeStore] = None) -> Dict[str, Any]:
    """Render a resolved recipe with one deployer and write it atomically to ``dest``.

    ``set_values`` are ``component:path=value`` overrides (:mod:`.value_overrides`); ``scheduling`` holds the
    keyword arguments of :func:`.node_scheduling.scheduling_options` (selectors, tolerations, taint, nodes);
    ``store`` as in :func:`resolve_recipe`."""
    started = time.perf_counter()
    result = render_input(recipe, values_overrides, disabled_components)
    if store is None:
        store = cached_store(list(recipe_dirs), include_builtin=include_builtin)
    options = scheduling_options(**dict(scheduling or {}))
    structured = dict(values_overrides or {})
    paths = {ref.name: SchedulingPaths.from_registry(store.registry.get(ref.name), store.registry_sources.get(ref.name))
             for ref in result.component_refs}
    plan = plan_overrides(result, parse_set(set_values), paths, disabled_components, structured)
    result = without_components(result, list(disabled_components), "disabled_components")
    result = without_components(result, plan.dropped, "a set <component>:enabled=false override")
    off = [name for name, extra in structured.items()
           if isinstance(extra, Mapping) and str(extra.get("enabled", "")).strip().lower() == "false"]
    result = without_components(result, off, "values_overrides <component>.enabled=false")
    components = build_component_bundles(store, result, extra_overrides=structured,
                                         disabled=list(disabled_components), set_overrides=plan.values,
                                         scheduling=options)
    files = render_bundle(result, components, deployer, dict(deployer_options or {}))
    written = write_bundle(dest, files, check_mode=check_mode, want_diff=want_diff, force=force)
    out: Dict[str, Any] = {
        "changed": written.changed,
        "dest": dest,
        "deployer": deployer,
        "files": sorted(files),
        "added": list(written.added),
        "removed": list(written.removed),
        "modified": list(written.modified),
        "components": [
            {"name": c.name, "type": c.type, "version": c.version, "namespace": c.namespace,
             "order": c.order, "repository": c.repository, "chart": c.chart,
             "manifests": sorted(c.manifests)}
            for c in components
        ],
        "disabled_components": [ref.name for ref in result.component_refs if not ref.enabled],
        "warnings": list(result.metadata.get("warnings") or []),
        "scheduling": options.to_dict(),
        "elapsed_ms": round((time.perf_counter() - started) * 1000.0, 2),
    }
    if want_diff:
        out["diff"] = list(written.diff)
    return out


def check_constraints(constraints: Optional[List[Mapping[str, Any]]] = None,
                      recipe: Optional[Mapping[str, Any]] = None,
                      phases: Sequence[str] = (),
                      snapshot: Optional[Mapping[str, Any]] = None,
                      host_facts: Optional[Mapping[str, Mapping[str, Any]]] = None,
                      measurements: Optional[Mapping[str, Any]] = None,
                      missing_is_failure: bool = False) -> Dict[str, Any]:
    """Evaluate constraints (given directly and/or taken from a recipe) against a snapshot."""
    selected: List[Constraint] = [Constraint.from_dict(dict(c)) for c in constraints or []]
    if recipe:
        result = RecipeResult.from_dict(dict(recipe))
        selected.extend(result.constraints)
        for phase in phases:
            if phase not in result.validation:
                raise RecipeError("recipe has no validation phase %r (has: %s)"
                                  % (phase, ", ".join(sorted(result.validation)) or "none"),
                                  field="phases", value=phase)
            selected.extend(result.validation[phase].constraints)
    snap = build_snapshot(snapshot, host_facts, measurements)
    evaluated = evaluate_constraints(selected, snap)
    results = [_plain(r) for r in evaluated]
    summary = dict(summarize(evaluated))
    violated = [r for r in results
                if r.get("severity", "error") == "error"
                and (r["status"] in ("fail", "error") or (missing_is_failure and r["status"] == "missing"))]
    summary["ok"] = not violated
    return {
        "results": results,
        "summary": summary,
        "violations": violated,
        "snapshot": snap.to_dict(),
    }


def run_resolve(args: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:
    """Adapter for the ``recipe_resolve`` module/action (validated ``args``)."""
    del check_mode, diff  # read-only
    out = resolve_recipe(args["criteria"], args["recipe_dirs"], args["include_builtin"],
                         args["disabled_components"], args.get("snapshot"), args["infer"])
    out["changed"] = False
    return out


def run_render(args: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:
    """Adapter for the ``bundle_render`` module/action (validated ``args``): one bundle, or ``bundles``."""
    if args.get("bundles") is not None:
        return render_bundles(args, check_mode, diff)
    return render_recipe_bundle(
        args["recipe"], args["dest"], args["deployer"], args["deployer_options"], args["recipe_dirs"],
        args["include_builtin"], args["values_overrides"], args["disabled_components"], args["force"],
        check_mode=check_mode, want_diff=diff, set_values=args.get("set") or [],
        scheduling={key: args.get(key) for key in SCHEDULING_OPTIONS})


#: the ``bundle_render`` options that are :func:`.node_scheduling.scheduling_options` arguments
SCHEDULING_OPTIONS = ("system_node_selector", "system_node_tolerations", "accelerated_node_selector",
                      "accelerated_node_tolerations", "workload_gate_taint", "workload_selector", "nodes")
#: keys of a ``bundles`` item that fall back to the task's option of the same name when unset
BATCH_INHERITED = ("deployer", "deployer_options", "values_overrides", "disabled_components", "set", "force")


def _batch_dests(items: Sequence[Mapping[str, Any]]) -> List[str]:
    """The absolute ``dest`` of every item; two items writing the same directory, or one inside another's, are refused
    (each write replaces its whole tree)."""
    dests = [os.path.abspath(str(item.get("dest") or "")) if item.get("dest") else "" for item in items]
    first: Dict[str, int] = {}
    for index, dest in enumerate(dests):
        if not dest:
            raise RenderError("bundle has no dest", field="bundles[%d].dest" % index, value=items[index].get("dest"))
        if dest in first:
            raise RenderError("bundles[%d] writes the same dest as bundles[%d]" % (index, first[dest]),
                              field="bundles[%d].dest" % index, value=dest)
        first[dest] = index
    for index, dest in enumerate(dests):
        parent = os.path.dirname(dest)
        while parent and parent != os.path.dirname(parent):
            if parent in first:
                raise RenderError("bundles[%d] dest is inside the dest of bundles[%d]" % (index, first[parent]),
                                  field="bundles[%d].dest" % index, value=dest)
            parent = os.path.dirname(parent)
    return dests


def render_bundles(args: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:
    """``bundle_render`` with ``bundles``: many bundles in one call, from ONE store load.

    Each item gives ``recipe`` (a resolved recipe) or ``criteria`` (resolved here, once per distinct criteria and
    ``disabled_components``) and ``dest``; its other keys default to the task's options (:data:`BATCH_INHERITED`;
    the recipe source and the node scheduling options are the task's). Every bundle is rendered and written as the
    single-bundle form would (its own atomic swap) and gets its own result, a failure included (through
    :func:`..common.entry.call_entry`, so a bad bundle fails alone, named ``bundles[i] (<dest>)``); the task is
    ``changed`` when any bundle changed and ``failed`` when any failed."""
    started = time.perf_counter()
    items = [dict(item or {}) for item in args.get("bundles") or []]
    dests = _batch_dests(items)
    store = cached_store(list(args.get("recipe_dirs") or []), include_builtin=args.get("include_builtin", True))
    scheduling = {key: args.get(key) for key in SCHEDULING_OPTIONS}
    resolved: Dict[str, Dict[str, Any]] = {}
    results: List[Dict[str, Any]] = []
    diffs: List[Dict[str, str]] = []
    for index, (item, dest) in enumerate(zip(items, dests)):
        opts = {key: item[key] if item.get(key) is not None else args.get(key) for key in BATCH_INHERITED}

        def one(params: Mapping[str, Any], one_check: bool, one_diff: bool, item: Dict[str, Any] = item,
                dest: str = dest, opts: Dict[str, Any] = opts) -> Dict[str, Any]:
            del params
            recipe = item.get("recipe")
            found: Dict[str, Any] = {}
            disabled = list(opts["disabled_components"] or [])
            if recipe is None:
                memo = json.dumps([item.get("criteria") or {}, disabled], sort_keys=True, default=str)
                if memo not in resolved:
                    resolved[memo] = resolve_recipe(item.get("criteria"), disabled_components=disabled, store=store)
                found = resolved[memo]
                recipe = found["recipe"]
            out = render_recipe_bundle(
                recipe, dest, opts["deployer"] or "helm", opts["deployer_options"], (), True, opts["values_overrides"],
                disabled, bool(opts["force"]), check_mode=one_check, want_diff=one_diff,
                set_values=opts["set"] or [], scheduling=scheduling, store=store)
            if found:
                out["criteria"] = found["criteria"]
                out["applied_overlays"] = found["applied_overlays"]
            return out

        single = EntryPoint(name=BUNDLE_RENDER.name, doing="rendering bundles[%d] (%s)" % (index, dest), spec={}, run=one)
        out = call_entry(single, {}, check_mode, diff)
        out.setdefault("dest", dest)
        out.setdefault("deployer", opts["deployer"] or "helm")
        for entry in out.pop("diff", None) or []:
            entry = dict(entry)
            for side in ("before_header", "after_header"):
                if entry.get(side) and entry[side] not in ("/dev/null", "..."):
                    entry[side] = "%s/%s" % (dest, entry[side])
            diffs.append(entry)
        results.append(out)
    failed = [(index, out) for index, out in enumerate(results) if out.get("failed")]
    final: Dict[str, Any] = {
        "changed": any(out.get("changed") for out in results),
        "bundles": results,
        "elapsed_ms": round((time.perf_counter() - started) * 1000.0, 2),
    }
    if diff:
        final["diff"] = diffs
    if failed:
        final["failed"] = True
        final["msg"] = "%d of %d bundles failed: %s" % (len(failed), len(results), "; ".join(
            "bundles[%d] (%s): %s" % (index, out["dest"], out.get("msg")) for index, out in failed))
    return final


def run_constraint_check(args: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:
    """Adapter for the ``constraint_check`` module/action: fails only when asked to."""
    del check_mode, diff  # read-only
    out = check_constraints(args["constraints"], args.get("recipe"), args["phases"], args.get("snapshot"),
                            args.get("host_facts"), args["measurements"], args["missing_is_failure"])
    out["changed"] = False
    if args["fail_on_violation"] and not out["summary"]["ok"]:
        out["failed"] = True
        out["msg"] = "constraints violated: " + "; ".join(v["message"] for v in out["violations"])
    return out


def _with_client(params: Mapping[str, Any], work: Callable[[Any], Dict[str, Any]]) -> Dict[str, Any]:
    """:func:`..kube.client.run_with_client`, imported on first use: the three recipe modules share this file and
    never talk to Kubernetes, so they must not pay for importing the ``kubernetes`` package (about a second)."""
    from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import run_with_client  # pylint: disable=import-outside-toplevel
    return run_with_client(params, work)


def run_cluster_snapshot(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:
    """Adapter for the ``cluster_snapshot`` module: connection options + ``label_selector``, ``host_facts``, ``snapshot``."""
    del check_mode, diff  # read-only
    result = _with_client(params, lambda client: collect_cluster_snapshot(
        client, params.get("label_selector") or "", params.get("host_facts"), params.get("snapshot")))
    result["changed"] = False
    return result


def run_bundle_drift(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:
    """Adapter for the ``bundle_drift`` module: connection options + ``bundle``, ``deployer``, ``components``."""
    del check_mode, diff  # read-only
    bundle = params.get("bundle")
    if not bundle:
        raise RecipeLoadError("a bundle directory is required", field="bundle", value=bundle)
    result = _with_client(params, lambda client: bundle_drift(
        client, str(bundle), params.get("deployer") or "auto", params.get("components") or None))
    result["changed"] = False
    return result


RECIPE_RESOLVE = EntryPoint(name="recipe_resolve", doing="resolving recipe criteria", spec=RESOLVE_SPEC, run=run_resolve)
BUNDLE_RENDER = EntryPoint(name="bundle_render", doing="rendering a deployment bundle", spec=RENDER_SPEC, run=run_render,
                           module_options=dict(mutually_exclusive=[["recipe", "bundles"], ["dest", "bundles"]],
                                               required_one_of=[["recipe", "bundles"]],
                                               required_together=[["recipe", "dest"]]))
CONSTRAINT_CHECK = EntryPoint(name="constraint_check", doing="checking constraints against a snapshot",
                              spec=CONSTRAINT_SPEC, run=run_constraint_check)
CLUSTER_SNAPSHOT = EntryPoint(name="cluster_snapshot", doing="reading the cluster into a snapshot",
                              spec=CLUSTER_SNAPSHOT_SPEC, run=run_cluster_snapshot)
BUNDLE_DRIFT = EntryPoint(name="bundle_drift", doing="comparing a bundle with the cluster",
                          spec=BUNDLE_DRIFT_SPEC, run=run_bundle_drift)


#: ``bundle_verify``: a bundle directory against its checksums.txt (read-only).
BUNDLE_VERIFY_SPEC: Dict[str, Any] = dict(
    bundle=dict(type="path", required=True),
    fail_on_mismatch=dict(type="bool", default=True),
)
#: ``bundle_publish``: a verified bundle pushed to an OCI registry as a Flux artifact.
BUNDLE_PUBLISH_SPEC: Dict[str, Any] = dict(
    bundle=dict(type="path", required=True),
    reference=dict(type="str", required=True),
    username=dict(type="str"),
    password=dict(type="str", no_log=True),
    plain_http=dict(type="bool", default=False),
    validate_certs=dict(type="bool", default=True),
    timeout=dict(type="float", default=30.0),
    source=dict(type="str"),
    revision=dict(type="str"),
    created=dict(type="str"),
    annotations=dict(type="dict", default={}),
)


def run_bundle_verify(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:
    """Adapter for the ``bundle_verify`` module: ``ok``, ``missing``/``extra``/``modified``/``unsafe``, ``counts``."""
    del check_mode, diff  # read-only
    from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_verify import verify_bundle  # pylint: disable=import-outside-toplevel
    found = verify_bundle(str(params.get("bundle") or ""))
    result = found.to_dict()
    result["changed"] = False
    result["msg"] = found.summary()
    if params.get("fail_on_mismatch", True) and not found.ok:
        result["failed"] = True
    return result


def run_bundle_publish(params: Mapping[str, Any], check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:
    """Adapter for the ``bundle_publish`` module: verify, build the artifact, push unless the tag holds it already."""
    del diff
    from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_publish import (  # pylint: disable=import-outside-toplevel
        RegistryAccess, publish_bundle)
    access = RegistryAccess(username=params.get("username") or None, password=params.get("password"),
                            plain_http=bool(params.get("plain_http")), validate_certs=params.get("validate_certs", True),
                            timeout=float(params.get("timeout") or 30.0))
    return publish_bundle(str(params.get("bundle") or ""), params.get("reference"), access, params.get("source"),
                          params.get("revision"), params.get("created"), params.get("annotations") or {},
                          check_mode=check_mode)


BUNDLE_VERIFY = EntryPoint(name="bundle_verify", doing="verifying a bundle against its checksums",
                           spec=BUNDLE_VERIFY_SPEC, run=run_bundle_verify)
BUNDLE_PUBLISH = EntryPoint(name="bundle_publish", doing="publishing a bundle to an OCI registry",
                            spec=BUNDLE_PUBLISH_SPEC, run=run_bundle_publish,
                            module_options=dict(required_together=[["username", "password"]]))
