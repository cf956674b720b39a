# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Every object of every rendered bundle is accepted by a real API server (server-side apply, ``dryRun=All``).

The bundles: every leaf recipe of the built-in catalog x helm, argocd, flux; and the upstream-format trees under
tests/unit/fixtures (``aicr_upstream_style``, with and without the scheduling options and ``set`` overrides, and
``aicr_manifest_only``: manifest-only components whose Go templates use ``.Chart`` the way upstream AICR components
do) x the three deployers. CRDs are registered from ``shared/schemas/crds`` (Argo CD, Flux) and the harness's own
(tests/harness/bundle_server_dry_run.py). Any refusal fails the test with the file, the object and the server's words.

A counter-test proves the check is not vacuous: the label value a ``.Chart.Version``-less render used to write
(``helm.sh/chart: <name>-``) is refused by the same server.
"""
from __future__ import annotations

import copy
import os
from typing import Any, Dict, List, Tuple

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.configure import entry
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import BUNDLE_RENDER, RECIPE_RESOLVE
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore
from ansible_collections.dsxos.cluster.tests.harness.bundle_server_dry_run import (
    OWN_CRDS, BundleObject, DryRun, bundle_objects, by_kind, kinds_of)

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DIR = os.environ.get("DSXOS_SHARED_DIR", os.path.join(os.path.dirname(os.path.dirname(TESTS)), "shared"))
CRD_DIR = os.path.join(SHARED_DIR, "schemas", "crds")
FIXTURES = os.path.join(TESTS, "unit", "fixtures")
DEPLOYER_OPTIONS: Dict[str, Dict[str, Any]] = {
    "helm": {},
    "argocd": {"repo_url": "https://git.example.com/ops/bundles.git", "revision": "main", "path": "clusters/a"},
    "flux": {"values_from": "configmap", "oci_url": "oci://registry.example.com/bundles/a", "oci_ref": "v1"},
}
UPSTREAM_TREES = {
    "aicr_upstream_style": {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"},
    "aicr_manifest_only": {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"},
}
#: the scheduling variant of the upstream-style tree (bundle_render's own option names)
SCHEDULED: Dict[str, Any] = {
    "system_node_selector": {"node-role.example.com/system": "true"},
    "system_node_tolerations": ["dedicated=system:NoSchedule"],
    "accelerated_node_selector": {"nvidia.com/gpu.present": "true"},
    "accelerated_node_tolerations": ["nvidia.com/gpu:NoSchedule"],
    "workload_gate_taint": "example.com/node-prep=pending:NoSchedule",
    "workload_selector": {"example.com/workload": "training"},
    "nodes": 16,
}

#: the catalog's EDA receiver, on (docs/operate-alerts.md)
EDA_RECEIVER_SET = ["kube-prometheus-stack:edaReceiver.url=http://eda.example.com:5050/alerts"]


def _params(entry_point: Any, **given: Any) -> Dict[str, Any]:
    out = {name: option.get("default") for name, option in entry_point.spec.items()}
    out.update(given)
    return out


def _catalog_leaves() -> List[Tuple[str, Dict[str, str]]]:
    store = RecipeStore.load([], include_builtin=True)
    bases = {doc.base for doc in store.overlays.values() if doc.base}
    out = []
    for name in sorted(store.overlays):
        if name in bases or name == "base":
            continue
        criteria = store.overlays[name].criteria
        out.append((name, {f: getattr(criteria, f) for f in ("service", "accelerator", "os", "intent", "platform")
                           if getattr(criteria, f, None) not in (None, "", "any")}))
    return out


def _render(tmp: str, label: str, criteria: Dict[str, str], deployer: str, recipe_dirs: List[str], builtin: bool,
            variant: Dict[str, Any]) -> str:
    resolved = entry.run_resolve(_params(RECIPE_RESOLVE, criteria=criteria, recipe_dirs=recipe_dirs, include_builtin=builtin))
    dest = os.path.join(tmp, "%s-%s" % (label, deployer))
    entry.run_render(_params(BUNDLE_RENDER, recipe=resolved["recipe"], dest=dest, deployer=deployer,
                             deployer_options=DEPLOYER_OPTIONS[deployer], recipe_dirs=recipe_dirs, include_builtin=builtin,
                             **variant))
    return dest


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, List[BundleObject]]:
    """bundle label -> its API objects, for every bundle this file checks."""
    tmp = str(tmp_path_factory.mktemp("bundles"))
    out: Dict[str, List[BundleObject]] = {}
    for deployer in DEPLOYER_OPTIONS:
        leaves = _catalog_leaves()
        for leaf, criteria in leaves:
            out["catalog/%s/%s" % (leaf, deployer)] = bundle_objects(_render(tmp, leaf, criteria, deployer, [], True, {}))
        # the optional parts switched on: the Alertmanager receiver for the EDA source
        leaf, criteria = leaves[0]
        label = "catalog-eda-receiver/%s" % leaf
        out["%s/%s" % (label, deployer)] = bundle_objects(_render(tmp, label.replace("/", "-"), criteria, deployer, [], True,
                                                                  {"set": EDA_RECEIVER_SET}))
        for tree, criteria in UPSTREAM_TREES.items():
            for variant_name, variant in (("plain", {}), ("scheduled", SCHEDULED)):
                label = "%s-%s" % (tree, variant_name)
                dest = _render(tmp, label, criteria, deployer, [os.path.join(FIXTURES, tree)], False, variant)
                out["%s/%s" % (label, deployer)] = bundle_objects(dest)
    return out


@pytest.fixture(scope="module")
def dry_run(real_cluster) -> DryRun:
    runner = DryRun(real_cluster.api_client())
    runner.register_crds(CRD_DIR)
    return runner


def test_every_object_of_every_rendered_bundle_is_accepted_by_the_real_api_server(rendered, dry_run):
    objects = [obj for objs in rendered.values() for obj in objs]
    assert len(rendered) >= 3 * (20 + 1 + 4), sorted(rendered)
    assert all(rendered[label] for label in rendered if "/helm" not in label), \
        [label for label in rendered if not rendered[label]]
    kinds = kinds_of(objects)
    # every kind the bundles write is checked: the deployers' own and those the components' manifests carry
    for expected in [("argoproj.io/v1alpha1", "Application"), ("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
                     ("source.toolkit.fluxcd.io/v1", "HelmRepository"), ("source.toolkit.fluxcd.io/v1", "OCIRepository"),
                     ("v1", "Namespace"), ("monitoring.coreos.com/v1", "PrometheusRule"), ("apps/v1", "DaemonSet"),
                     ("monitoring.coreos.com/v1alpha1", "AlertmanagerConfig"),
                     ("v1", "ConfigMap")]:
        assert expected in kinds, sorted(kinds)
    sent, refusals = dry_run.apply_all(objects)
    assert sent > 100, sent
    assert not refusals, "the API server refused %d object(s):\n%s" % (
        len(refusals), "\n".join("%s:\n  %s" % (reason, "\n  ".join(lines[:20])) for reason, lines in by_kind(refusals).items()))
    print("%d objects (%d distinct) of %d bundles accepted; kinds: %s; metadata-only CRDs: %s" % (
        len(objects), sent, len(rendered), sorted("%s %s" % k for k in kinds), sorted(dry_run.metadata_only)))


def test_the_server_refuses_what_the_schemas_let_through(dry_run):
    """The dry run catches the class the static schemas miss: each of these passes a JSON schema of its type."""
    base = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry-run-probe", "namespace": "default"},
            "data": {"a": "b"}}
    bad = {
        "label value ending in '-'": ("metadata", "labels", {"helm.sh/chart": "skyhook-customizations-"}),
        "label value over 63 characters": ("metadata", "labels", {"app": "x" * 64}),
        "annotation key with two slashes": ("metadata", "annotations", {"a/b/c": "x"}),
        "name not a DNS subdomain": ("metadata", "name", "Dry_Run"),
    }
    ok = dry_run.apply(BundleObject("probe.yaml", 0, base))
    assert ok is None, ok
    for what, (section, field, value) in bad.items():
        body = copy.deepcopy(base)
        body[section][field] = value
        refusal = dry_run.apply(BundleObject("probe.yaml", 0, body))
        assert refusal is not None, what
        assert refusal.status == 422 and refusal.reason == "Invalid", (what, refusal)
    rule = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": "probe", "namespace": "default"},
            "spec": {"groups": [{"name": "g", "rules": [{"alert": "A", "expr": "up == 0", "labels": {"severity": 3}}]}]}}
    refusal = dry_run.apply(BundleObject("rule.yaml", 0, rule))
    assert refusal is not None and refusal.status == 422, refusal
    assert "severity" in refusal.message, refusal
    assert [c.kind for c in OWN_CRDS if c.spec_schema is not None] == ["PrometheusRule", "Kustomization", "AlertmanagerConfig"]
