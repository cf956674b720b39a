# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""bundle_render ``bundles``: many bundles in one call (one store load), per-bundle results and errors; and the
durability pass of bundle_writer (syncfs or fsync, never skipped, failures keep the old bundle)."""
from __future__ import annotations

import errno
import os

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.configure import bundle_writer, store_cache
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_writer import BundleFile, write_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import (
    BUNDLE_RENDER, render_recipe_bundle, resolve_recipe)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.store_cache import StoreCache

CRITERIA = {"service": "eks", "accelerator": "h100", "intent": "training"}
ARGOCD = {"repo_url": "https://git.example.com/gitops.git", "revision": "main"}


def _params(**kwargs):
    params = {name: option.get("default") for name, option in BUNDLE_RENDER.spec.items()}
    params.update(kwargs)
    return params


def _tree_bytes(root):
    out = {}
    for dirpath, dummy, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as handle:
                out[os.path.relpath(path, root)] = handle.read()
    return out


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    monkeypatch.setattr(store_cache, "STORES", StoreCache())


def test_batch_equals_single_renders_and_loads_the_store_once(tmp_path):
    recipe = resolve_recipe(CRITERIA)["recipe"]
    store_cache.STORES.clear()
    bundles = [
        {"criteria": CRITERIA, "dest": str(tmp_path / "b" / "helm")},
        {"criteria": CRITERIA, "dest": str(tmp_path / "b" / "argocd"), "deployer": "argocd", "deployer_options": ARGOCD},
        {"recipe": recipe, "dest": str(tmp_path / "b" / "flux"), "deployer": "flux"},
    ]
    out = call_entry(BUNDLE_RENDER, _params(bundles=bundles))
    assert "failed" not in out and out["changed"] is True
    assert [b["dest"] for b in out["bundles"]] == [b["dest"] for b in bundles]
    assert [b["deployer"] for b in out["bundles"]] == ["helm", "argocd", "flux"]
    assert all(b["changed"] and b["files"] for b in out["bundles"])
    assert out["bundles"][0]["applied_overlays"][-1] == "h100-eks-training"
    assert out["bundles"][0]["criteria"]["service"] == "eks"
    assert "criteria" not in out["bundles"][2]
    assert store_cache.STORES.loads + store_cache.STORES.hits == 1
    for item in bundles:
        single = str(tmp_path / "single" / os.path.basename(item["dest"]))
        render_recipe_bundle(recipe, single, item.get("deployer", "helm"), item.get("deployer_options"))
        assert _tree_bytes(item["dest"]) == _tree_bytes(single)
    again = call_entry(BUNDLE_RENDER, _params(bundles=bundles))
    assert again["changed"] is False and not any(b["changed"] for b in again["bundles"])


def test_items_inherit_task_options_and_replace_them(tmp_path):
    bundles = [{"criteria": CRITERIA, "dest": str(tmp_path / "a")},
               {"criteria": CRITERIA, "dest": str(tmp_path / "b"), "deployer": "helm", "deployer_options": {}}]
    out = call_entry(BUNDLE_RENDER, _params(bundles=bundles, deployer="argocd", deployer_options=ARGOCD))
    assert "failed" not in out
    assert [b["deployer"] for b in out["bundles"]] == ["argocd", "helm"]
    assert "app-of-apps.yaml" in out["bundles"][0]["files"] and "deploy.sh" not in out["bundles"][0]["files"]
    assert "deploy.sh" in out["bundles"][1]["files"] and "app-of-apps.yaml" not in out["bundles"][1]["files"]
    with open(tmp_path / "a" / "app-of-apps.yaml", encoding="utf-8") as handle:
        assert ARGOCD["repo_url"] in handle.read()


def test_failed_item_is_named_and_the_others_are_written(tmp_path):
    bundles = [{"criteria": CRITERIA, "dest": str(tmp_path / "ok")},
               {"criteria": {"service": "nope"}, "dest": str(tmp_path / "bad")},
               {"criteria": CRITERIA, "dest": str(tmp_path / "bad-opts"), "deployer": "argocd", "deployer_options": {"x": 1}},
               {"criteria": CRITERIA, "dest": str(tmp_path / "ok2"), "deployer": "argocd", "deployer_options": ARGOCD}]
    out = call_entry(BUNDLE_RENDER, _params(bundles=bundles))
    assert out["failed"] is True and out["changed"] is True
    assert out["msg"].startswith("2 of 4 bundles failed: ")
    assert "bundles[1] (%s): unknown criteria value 'nope'" % (tmp_path / "bad") in out["msg"]
    assert "bundles[2] (%s): unknown option(s) x for deployer argocd" % (tmp_path / "bad-opts") in out["msg"]
    assert out["bundles"][1]["failed"] is True and out["bundles"][1]["error"]["field"] == "criteria.service"
    assert out["bundles"][2]["error"]["field"] == "options"
    assert os.path.isfile(tmp_path / "ok" / "checksums.txt") and os.path.isfile(tmp_path / "ok2" / "checksums.txt")
    assert not os.path.exists(tmp_path / "bad") and not os.path.exists(tmp_path / "bad-opts")


@pytest.mark.parametrize("second,message", [("same", "same dest as bundles[0]"), ("same/inner", "inside the dest of bundles[0]")])
def test_overlapping_dests_are_refused_before_writing(tmp_path, second, message):
    bundles = [{"criteria": CRITERIA, "dest": str(tmp_path / "same")},
               {"criteria": CRITERIA, "dest": str(tmp_path / second)}]
    out = call_entry(BUNDLE_RENDER, _params(bundles=bundles))
    assert out["failed"] is True and message in out["msg"]
    assert out["error"]["field"] == "bundles[1].dest"
    assert not os.listdir(tmp_path)


def test_check_mode_writes_nothing_and_diff_names_each_dest(tmp_path):
    bundles = [{"criteria": CRITERIA, "dest": str(tmp_path / "a")},
               {"criteria": CRITERIA, "dest": str(tmp_path / "b"), "deployer": "argocd", "deployer_options": ARGOCD}]
    out = call_entry(BUNDLE_RENDER, _params(bundles=bundles), check_mode=True, diff=True)
    assert out["changed"] is True and not os.listdir(tmp_path)
    headers = [d["after_header"] for d in out["diff"]]
    assert any(h.startswith(str(tmp_path / "a") + "/") for h in headers)
    assert any(h.startswith(str(tmp_path / "b") + "/") for h in headers)
    assert all("diff" not in b for b in out["bundles"])


def test_empty_batch_is_a_no_op(tmp_path):
    out = call_entry(BUNDLE_RENDER, _params(bundles=[]))
    assert out == {"changed": False, "bundles": [], "elapsed_ms": out["elapsed_ms"]}


def _validate(params):
    validator = ArgumentSpecValidator(BUNDLE_RENDER.spec, **BUNDLE_RENDER.module_options)
    return " | ".join(validator.validate(params).error_messages)


def test_argument_spec_rules(tmp_path):
    dest = str(tmp_path / "x")
    assert not _validate({"recipe": {}, "dest": dest})
    assert not _validate({"bundles": [{"criteria": CRITERIA, "dest": dest}]})
    assert "mutually exclusive" in str(_validate({"recipe": {}, "dest": dest, "bundles": []}))
    assert "one of the following is required" in str(_validate({"deployer": "helm"}))
    assert "parameters are required together" in str(_validate({"recipe": {}}))
    both = _validate({"bundles": [{"criteria": CRITERIA, "recipe": {}, "dest": dest}]})
    assert "mutually exclusive" in both
    neither = _validate({"bundles": [{"dest": dest}]})
    assert "one of the following is required" in neither
    no_dest = _validate({"bundles": [{"criteria": CRITERIA}]})
    assert "missing required arguments: dest" in no_dest


def test_batch_dest_helper_refuses_empty_dest():
    from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import _batch_dests  # pylint: disable=import-outside-toplevel
    with pytest.raises(RenderError) as err:
        _batch_dests([{"dest": "/tmp/x"}, {"dest": ""}])
    assert err.value.field == "bundles[1].dest"


# ---------------------------------------------------------------- durability of bundle_writer

FILES = {"a.txt": BundleFile.text("a\n"), "sub/deep/b.txt": BundleFile.text("b\n"), "recipe.yaml": BundleFile.text("r\n"),
         "checksums.txt": BundleFile.text("c\n")}


def test_fsync_method_syncs_every_file_and_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(bundle_writer, "SYNC_METHOD", "fsync")
    synced = []
    real_fsync = os.fsync

    def counting_fsync(fd):
        synced.append(os.readlink("/proc/self/fd/%d" % fd))
        real_fsync(fd)
    monkeypatch.setattr(os, "fsync", counting_fsync)
    write_bundle(str(tmp_path / "dest"), FILES)
    names = {os.path.basename(p.rstrip("/")) for p in synced}
    # every file, every directory of the new tree (sub and sub/deep included) and the parent after the swap
    assert {"a.txt", "b.txt", "recipe.yaml", "checksums.txt", "sub", "deep", "new", os.path.basename(str(tmp_path))} <= names
    assert _tree_bytes(tmp_path / "dest") == {k: v.content for k, v in FILES.items()}


def test_syncfs_method_is_one_call_and_its_failure_keeps_the_old_bundle(tmp_path, monkeypatch):
    # The supported controllers are Linux 5.8+ (Debian 12 and newer), where syncfs(2) reports writeback errors: the
    # durable pass must use it there. A controller without it takes the fsync method, tested above.
    assert bundle_writer.sync_method() == "syncfs", "syncfs(2) is expected on this Linux controller"
    calls = []
    real = bundle_writer._SYNCFS[0]  # pylint: disable=protected-access

    def fake_syncfs(fd):
        calls.append(fd)
        return real[0](fd)
    monkeypatch.setattr(bundle_writer, "_SYNCFS", [(fake_syncfs, real[1])])
    dest = str(tmp_path / "dest")
    write_bundle(dest, FILES)
    assert len(calls) == 1
    monkeypatch.setattr(bundle_writer, "_SYNCFS", [(lambda fd: -1, lambda: errno.EIO)])
    changed = dict(FILES, **{"a.txt": BundleFile.text("changed\n")})
    with pytest.raises(bundle_writer.BundleWriteError) as err:
        write_bundle(dest, changed)
    assert os.strerror(errno.EIO) in str(err.value)
    assert _tree_bytes(dest) == {k: v.content for k, v in FILES.items()}
    assert sorted(os.listdir(tmp_path)) == ["dest"]  # the temporary tree is gone


# ---------------------------------------------------------------- deployer_helm: parsed manifest namespaces are memoized

def test_declared_namespaces_memo_follows_content_and_never_caches_errors():
    from ansible_collections.dsxos.cluster.plugins.module_utils.configure import deployer_helm  # pylint: disable=import-outside-toplevel
    from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import ComponentBundle  # pylint: disable=import-outside-toplevel

    def component(text):
        return ComponentBundle(name="c", type="Helm", order=0, namespace="", manifests={"m.yaml": text})
    one = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: one}\n"
    two = one.replace("one", "two")
    assert deployer_helm.declared_namespaces(component(one)) == {"one"}
    assert deployer_helm.declared_namespaces(component(two)) == {"two"}
    assert deployer_helm.declared_namespaces(component(one)) == {"one"}
    for dummy in range(2):
        with pytest.raises(RenderError):
            deployer_helm.declared_namespaces(component("a: [unclosed\n"))
