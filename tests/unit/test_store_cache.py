# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""store_cache: a loaded RecipeStore is reused while its files are unchanged and reloaded as soon as one changes."""
from __future__ import annotations

import os

import pytest

from recipe_tree import standard_tree

from ansible_collections.dsxos.cluster.plugins.module_utils.configure import store_cache
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import (
    BUNDLE_RENDER, render_recipe_bundle, resolve_recipe, run_render)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.store_cache import StoreCache, tree_signature

CRITERIA = {"service": "eks", "accelerator": "h100", "intent": "training"}


@pytest.fixture
def cache(monkeypatch):
    """A fresh cache that does not treat just-written test trees as racy (every edit below changes size or mtime)."""
    monkeypatch.setattr(store_cache, "RACY_S", 0.0)
    return StoreCache()


def _bump(path, text=None, seconds=10):
    """Rewrite ``path`` (optionally) and move its mtime ``seconds`` on, so the edit is visible even at the same size."""
    if text is not None:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    info = os.stat(path)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + seconds * 10 ** 9))


def test_unchanged_tree_is_loaded_once(tmp_path, cache):
    standard_tree(tmp_path)
    first = cache.get([str(tmp_path)], include_builtin=False)
    second = cache.get([str(tmp_path)], include_builtin=False)
    assert second is first
    assert (cache.loads, cache.hits, cache.uncached) == (1, 1, 0)


def test_key_separates_dirs_and_builtin(tmp_path, cache):
    standard_tree(tmp_path / "a")
    standard_tree(tmp_path / "b")
    one = cache.get([str(tmp_path / "a")], include_builtin=False)
    assert cache.get([str(tmp_path / "b")], include_builtin=False) is not one
    with_builtin = cache.get([str(tmp_path / "a")], include_builtin=True)
    assert with_builtin is not one and with_builtin.builtin_dir
    assert cache.loads == 3 and cache.hits == 0


def test_edited_overlay_is_reloaded(tmp_path, cache):
    tree = standard_tree(tmp_path)
    first = cache.get([str(tmp_path)], include_builtin=False)
    assert first.overlays["gke"].criteria.service == "gke"
    path = tree.path("overlays/gke.yaml")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    _bump(path, text.replace("name: gke", "name: gke2"))  # same size: only the mtime tells
    second = cache.get([str(tmp_path)], include_builtin=False)
    assert second is not first
    assert "gke2" in second.overlays and "gke" not in second.overlays


def test_lazily_read_values_file_change_is_seen(tmp_path, cache):
    """Values are read on first use, after the load: the signature covers components/ too."""
    tree = standard_tree(tmp_path)
    store = cache.get([str(tmp_path)], include_builtin=False)
    assert store.load_yaml("components/nfd/values.yaml")["master"]["replicas"] == 1
    _bump(tree.values("nfd", {"master": {"replicas": 3}, "worker": {"enabled": True}}))
    again = cache.get([str(tmp_path)], include_builtin=False)
    assert again is not store
    assert again.load_yaml("components/nfd/values.yaml")["master"]["replicas"] == 3


def test_added_and_removed_files_are_seen(tmp_path, cache):
    tree = standard_tree(tmp_path)
    first = cache.get([str(tmp_path)], include_builtin=False)
    tree.overlay("aks", criteria={"service": "aks"})
    second = cache.get([str(tmp_path)], include_builtin=False)
    assert "aks" in second.overlays and "aks" not in first.overlays
    os.unlink(tree.path("overlays/aks.yaml"))
    third = cache.get([str(tmp_path)], include_builtin=False)
    assert "aks" not in third.overlays


def test_shadowing_file_in_a_later_dir_is_seen(tmp_path, cache):
    """A file added to a later (higher-priority) directory replaces the earlier one's, also for cached lookups."""
    standard_tree(tmp_path / "low")
    (tmp_path / "high").mkdir()
    dirs = [str(tmp_path / "low"), str(tmp_path / "high")]
    first = cache.get(dirs, include_builtin=False)
    assert first.resolve_path("components/nfd/values.yaml").startswith(str(tmp_path / "low"))
    high = tmp_path / "high" / "components" / "nfd"
    high.mkdir(parents=True)
    (high / "values.yaml").write_text("master: {replicas: 9}\n", encoding="utf-8")
    second = cache.get(dirs, include_builtin=False)
    assert second.resolve_path("components/nfd/values.yaml").startswith(str(tmp_path / "high"))


def test_repointed_symlink_is_seen(tmp_path, cache):
    tree = standard_tree(tmp_path)
    tree.values("nfd", {"master": {"replicas": 5}}, filename="values-b.yaml")
    link = tree.path("components/nfd/current.yaml")
    os.symlink("values.yaml", link)
    first = cache.get([str(tmp_path)], include_builtin=False)
    assert first.load_yaml("components/nfd/current.yaml")["master"]["replicas"] == 1
    os.unlink(link)
    os.symlink("values-b.yaml", link)
    second = cache.get([str(tmp_path)], include_builtin=False)
    assert second.load_yaml("components/nfd/current.yaml")["master"]["replicas"] == 5


def test_racy_tree_is_not_cached(tmp_path, monkeypatch):
    """A tree changed within RACY_S of the signature could hide a same-size edit in the same timestamp tick."""
    monkeypatch.setattr(store_cache, "RACY_S", 3600.0)
    cache = StoreCache()
    standard_tree(tmp_path)
    first = cache.get([str(tmp_path)], include_builtin=False)
    second = cache.get([str(tmp_path)], include_builtin=False)
    assert second is not first
    assert (cache.loads, cache.hits, cache.uncached) == (2, 0, 2)


def test_huge_tree_is_not_cached(tmp_path, cache, monkeypatch):
    monkeypatch.setattr(store_cache, "MAX_SIGNATURE_ENTRIES", 5)
    standard_tree(tmp_path)
    first = cache.get([str(tmp_path)], include_builtin=False)
    assert cache.get([str(tmp_path)], include_builtin=False) is not first
    assert cache.uncached == 2


def test_failed_load_is_not_cached_and_fix_is_seen(tmp_path, cache):
    tree = standard_tree(tmp_path)
    bad = tree.file("overlays/bad.yaml", "kind: RecipeMetadata\napiVersion: nope/v0\nmetadata: {name: bad}\n")
    for dummy in range(2):
        with pytest.raises(RecipeError) as err:
            cache.get([str(tmp_path)], include_builtin=False)
        assert err.value.file == bad
    os.unlink(bad)
    assert "gke" in cache.get([str(tmp_path)], include_builtin=False).overlays


def test_missing_dir_raises_every_time(tmp_path, cache):
    for dummy in range(2):
        with pytest.raises(RecipeError):
            cache.get([str(tmp_path / "absent")], include_builtin=False)
    assert cache.hits == 0


def test_lru_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(store_cache, "RACY_S", 0.0)
    cache = StoreCache(max_stores=2)
    for name in ("a", "b", "c"):
        standard_tree(tmp_path / name)
        cache.get([str(tmp_path / name)], include_builtin=False)
    cache.get([str(tmp_path / "a")], include_builtin=False)  # evicted: loaded again
    assert cache.loads == 4 and cache.hits == 0


def test_signature_changes_with_any_entry(tmp_path):
    standard_tree(tmp_path)
    before, newest = tree_signature([str(tmp_path)])
    assert newest > 0
    assert tree_signature([str(tmp_path)])[0] == before
    (tmp_path / "checks").mkdir()
    assert tree_signature([str(tmp_path)])[0] != before


def test_builtin_store_is_reused_by_the_run_functions(tmp_path, monkeypatch):
    """resolve and render go through the process cache: one load of the built-in catalog for many calls."""
    monkeypatch.setattr(store_cache, "RACY_S", 0.0)  # a checkout seconds old is not "racy" for this test
    monkeypatch.setattr(store_cache, "STORES", StoreCache())
    recipe = resolve_recipe(CRITERIA)["recipe"]
    resolve_recipe(CRITERIA)
    params = {name: option.get("default") for name, option in BUNDLE_RENDER.spec.items()}
    for deployer, options in (("helm", {}), ("argocd", {"repo_url": "https://git.example.com/x.git", "revision": "main"})):
        params.update(recipe=recipe, dest=str(tmp_path / deployer), deployer=deployer, deployer_options=options)
        run_render(params)
    assert store_cache.STORES.loads == 1 and store_cache.STORES.hits == 3


def _tree_bytes(root):
    out = {}
    for dirpath, dummy, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as handle:
                out[os.path.relpath(path, root)] = handle.read()
    return out


def test_shared_store_gives_the_bytes_of_a_fresh_store(tmp_path):
    """Renders through one shared store (overrides, --set, disabled components in between) equal renders from a fresh
    store each: nothing a render does leaks into the shared store."""
    shared = RecipeStore.load([], include_builtin=True)
    criteria_list = [CRITERIA, {"service": "gke", "accelerator": "h100", "intent": "training"},
                     {"service": "eks", "accelerator": "gb200", "intent": "inference"}]
    options = {"helm": {}, "argocd": {"repo_url": "https://git.example.com/x.git", "revision": "main"}}
    for index, criteria in enumerate(criteria_list):
        recipe = resolve_recipe(criteria, store=shared)["recipe"]
        assert recipe == resolve_recipe(criteria, store=RecipeStore.load([], include_builtin=True))["recipe"]
        names = [ref["name"] for ref in recipe["componentRefs"]]
        noisy = {names[0]: {"injected": {"deep": [1, 2]}, "enabled": True}}
        render_recipe_bundle(recipe, str(tmp_path / "noise" / str(index)), "helm", values_overrides=noisy,
                             set_values=["%s:extra.key=1" % names[-1]], disabled_components=names[1:2], store=shared)
        for deployer, opts in options.items():
            via_shared = tmp_path / "shared" / ("%d-%s" % (index, deployer))
            via_fresh = tmp_path / "fresh" / ("%d-%s" % (index, deployer))
            render_recipe_bundle(recipe, str(via_shared), deployer, opts, store=shared)
            render_recipe_bundle(recipe, str(via_fresh), deployer, opts, store=RecipeStore.load([], include_builtin=True))
            assert _tree_bytes(via_shared) == _tree_bytes(via_fresh)
