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

import time
from dataclasses import asdict, is_dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import EntryPoint
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_drift import DEPLOYERS, bundle_drift
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_render import render_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_writer import write_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.component_values import build_component_bundles
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.cluster_snapshot import collect_cluster_snapshot
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.constraints import evaluate_constraints, summarize
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_criteria import validate_criteria
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeError, RecipeLoadError
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
RENDER_SPEC: Dict[str, Any] = dict(
    RECIPE_SOURCE_SPEC,
    recipe=dict(type="dict", required=True),
    dest=dict(type="path", required=True),
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
                   snapshot: Optional[Mapping[str, Any]] = None, infer: bool = False) -> Dict[str, Any]:
    """Resolve criteria (optionally completed from a snapshot) into a RecipeResult dict."""
    started = time.perf_counter()
    query = {k: v for k, v in dict(criteria or {}).items() if v not in (None, "")}
    evidence: Dict[str, Any] = {}
    if infer and snapshot:
        inferred, evidence = infer_criteria_with_evidence(Snapshot.from_dict(dict(snapshot)))
        for name in CRITERIA_FIELDS:
            value = getattr(inferred, name)
            if name not in query and value not in (ANY, 0):
                query[name] = value
    store = RecipeStore.load(list(recipe_dirs), include_builtin=include_builtin)
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
                         set_values: Sequence[str] = (), scheduling: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """Render a resolved recipe with one deployer and write it atomically to ``dest``.

    ``set_values`` are ``component:path=value`` overrides (:mod:`.value_overrides`); ``scheduling`` holds the
    keyword arguments of :func:`.node_scheduling.scheduling_options` (selectors, tolerations, taint, nodes)."""
    started = time.perf_counter()
    result = render_input(recipe, values_overrides, disabled_components)
    store = RecipeStore.load(list(recipe_dirs), include_builtin=include_builtin)
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
    """Adapter for the ``bundle_render`` module/action (validated ``args``)."""
    return render_recipe_bundle(
        args["recipe"], args["dest"], args["deployer"], args["deployer_options"], args["recipe_dirs"],
        args["include_builtin"], args["values_overrides"], args["disabled_components"], args["force"],
        check_mode=check_mode, want_diff=diff, set_values=args.get("set") or [],
        scheduling={key: args.get(key) for key in SCHEDULING_OPTIONS})


#: the ``bundle_render`` options that are :func:`.node_scheduling.scheduling_options` arguments
SCHEDULING_OPTIONS = ("system_node_selector", "system_node_tolerations", "accelerated_node_selector",
                      "accelerated_node_tolerations", "workload_gate_taint", "workload_selector", "nodes")


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
BUNDLE_RENDER = EntryPoint(name="bundle_render", doing="rendering a deployment bundle", spec=RENDER_SPEC, run=run_render)
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
