# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Layered recipe directories: loading, layering, registry merge, path safety, bad files."""
from __future__ import annotations

import os

import pytest

from recipe_tree import RecipeTree, helm_entry, standard_tree

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import (
    RecipeLoadError, RecipePathError, RecipeSchemaError)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_resolver import resolve
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore, default_builtin_dir

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load(*dirs, **kwargs):
    kwargs.setdefault("include_builtin", False)
    return RecipeStore.load([str(d) for d in dirs], **kwargs)


def test_default_builtin_dir_is_collection_recipes():
    assert os.path.realpath(default_builtin_dir()) == os.path.realpath(os.path.join(REPO, "recipes"))


def test_loads_overlays_mixins_registry(tmp_path):
    standard_tree(tmp_path)
    store = _load(tmp_path)
    assert sorted(store.overlays) == ["base", "eks", "eks-training", "gke", "h100-eks-training"]
    assert store.overlays["base"].criteria is None
    assert store.overlays["eks-training"].base == "eks"
    assert store.overlays["h100-eks-training"].mixins == ["os-ubuntu"]
    assert store.overlays["eks"].path == str(tmp_path / "overlays" / "eks.yaml")
    assert list(store.mixins) == ["os-ubuntu"]
    assert store.registry["gpu-operator"]["helm"]["defaultChart"] == "nvidia/gpu-operator"
    assert store.dirs == [str(tmp_path)]


def test_builtin_first_user_dirs_replace_same_relpath_and_merge_registry(tmp_path):
    builtin, user1, user2 = tmp_path / "builtin", tmp_path / "u1", tmp_path / "u2"
    b = standard_tree(builtin)
    u1 = RecipeTree(user1)
    u1.registry([helm_entry("gpu-operator", version="v99", namespace="gpu"), helm_entry("extra")])
    u1.overlay("eks", criteria={"service": "eks"}, component_refs=[{"name": "extra"}])
    u1.values("nfd", {"from": "u1"})
    u2 = RecipeTree(user2)
    u2.values("nfd", {"from": "u2"})
    store = RecipeStore.load([str(user1), str(user2)], builtin_dir=str(builtin))
    assert store.dirs == [str(builtin), str(user1), str(user2)]
    assert store.user_dirs == [str(user1), str(user2)]
    assert store.overlays["eks"].path == u1.path("overlays/eks.yaml")
    assert store.overlays["gke"].path == b.path("overlays/gke.yaml")
    assert store.registry["gpu-operator"]["helm"]["defaultVersion"] == "v99"  # later entry replaces
    assert store.registry["nfd"]["helm"]["defaultVersion"] == "0.19.0"  # kept from builtin
    assert "extra" in store.registry
    assert store.load_yaml("components/nfd/values.yaml") == {"from": "u2"}
    assert store.load_yaml("components/gpu-operator/values.yaml")["toolkit"] == {"enabled": True}
    only_user = RecipeStore.load([str(user2)], include_builtin=False)
    assert not only_user.overlays and only_user.dirs == [str(user2)]


def test_same_name_in_later_dir_replaces(tmp_path):
    standard_tree(tmp_path / "a")
    RecipeTree(tmp_path / "b").overlay("gke", criteria={"service": "gke", "intent": "training"}, filename="other.yaml")
    store = _load(tmp_path / "a", tmp_path / "b")
    assert store.overlays["gke"].path == str(tmp_path / "b" / "overlays" / "other.yaml")


def test_duplicate_name_in_one_dir_is_error(tmp_path):
    tree = RecipeTree(tmp_path)
    tree.overlay("eks", criteria={"service": "eks"})
    tree.overlay("eks", criteria={"service": "eks"}, filename="eks-copy.yaml")
    with pytest.raises(RecipeSchemaError) as err:
        _load(tmp_path)
    assert "duplicate overlay name 'eks'" in str(err.value) and "eks-copy.yaml" in str(err.value)


def test_missing_dir_named(tmp_path):
    with pytest.raises(RecipePathError) as err:
        _load(tmp_path / "nope")
    assert str(tmp_path / "nope") in str(err.value)
    with pytest.raises(RecipePathError) as err:
        RecipeStore.load([], builtin_dir=str(tmp_path / "nobuiltin"))
    assert "nobuiltin" in str(err.value)


def test_unknown_top_level_dirs_and_other_kinds_ignored(tmp_path):
    tree = standard_tree(tmp_path)
    tree.file("checks/gpu-operator/health-check.yaml", "this: [is not: valid")
    tree.file("validators/catalog.yaml", "kind: ValidatorCatalog\n")
    tree.yaml("overlays/catalog.yaml", {"kind": "ValidatorCatalog", "apiVersion": "x", "metadata": {"name": "c"}})
    store = _load(tmp_path)
    assert "c" not in store.overlays and "eks" in store.overlays


def test_malformed_yaml_names_file_and_line(tmp_path):
    tree = standard_tree(tmp_path)
    bad = tree.file("overlays/broken.yaml", "kind: RecipeMetadata\nmetadata:\n  name: broken\nspec:\n  base: [eks\n")
    with pytest.raises(RecipeLoadError) as err:
        _load(tmp_path)
    assert bad in str(err.value) and "malformed YAML" in str(err.value)
    assert err.value.line is not None and err.value.line >= 5
    assert "%s:%d" % (bad, err.value.line) in str(err.value)


def test_alias_bomb_refused(tmp_path):
    tree = standard_tree(tmp_path)
    lines = ["kind: RecipeMetadata", "apiVersion: aicr.run/v1beta1", "metadata: {name: bomb}", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 8):
        prev = "*a%d" % (i - 1)
        lines.append("a%d: &a%d [%s]" % (i, i, ", ".join([prev] * 10)))
    bomb = tree.file("overlays/bomb.yaml", "\n".join(lines) + "\n")
    with pytest.raises(RecipeLoadError) as err:
        _load(tmp_path)
    assert "alias" in str(err.value) and bomb in str(err.value)


def test_wrong_api_version_and_kind(tmp_path):
    tree = RecipeTree(tmp_path, api_version="aicr.example/v9")
    path = tree.overlay("eks", criteria={"service": "eks"})
    with pytest.raises(RecipeSchemaError) as err:
        _load(tmp_path)
    assert path in str(err.value) and "apiVersion" in str(err.value) and "aicr.example/v9" in str(err.value)
    other = RecipeTree(tmp_path / "m")
    other.yaml("mixins/x.yaml", {"kind": "RecipeMetadata", "apiVersion": "aicr.run/v1beta1", "metadata": {"name": "x"}})
    with pytest.raises(RecipeSchemaError) as err:
        _load(tmp_path / "m")
    assert "expected RecipeMixin" in str(err.value) and "x.yaml" in str(err.value)


@pytest.mark.parametrize("api", ["aicr.nvidia.com/v1alpha1", "aicr.run/v1beta1", "aicr.run/v1alpha1"])
def test_accepted_api_versions(tmp_path, api):
    RecipeTree(tmp_path, api_version=api).overlay("eks", criteria={"service": "eks"})
    assert "eks" in _load(tmp_path).overlays


def test_schema_errors_name_file_and_field(tmp_path):
    tree = RecipeTree(tmp_path)
    path = tree.overlay("eks", criteria={"service": "eks"}, component_refs=[{"name": "x", "overrides": ["a"]}])
    with pytest.raises(RecipeSchemaError) as err:
        _load(tmp_path)
    assert path in str(err.value) and "spec.componentRefs[x].overrides" in str(err.value)
    tree.overlay("eks", criteria={"service": "eks"}, component_refs=[{"name": "x", "type": "Chart"}])
    with pytest.raises(RecipeSchemaError) as err:
        _load(tmp_path)
    assert "spec.componentRefs[x].type" in str(err.value) and "'Chart'" in str(err.value)
    tree.overlay("eks", criteria={"service": "eks", "gpu": "h100"})
    with pytest.raises(RecipeSchemaError) as err:
        _load(tmp_path)
    assert "'gpu'" in str(err.value) and path in str(err.value)


def _tree_with_values_file(root, values_file):
    tree = RecipeTree(root)
    tree.registry([helm_entry("nfd")])
    path = tree.base(component_refs=[{"name": "nfd", "valuesFile": values_file}])
    return tree, path


@pytest.mark.parametrize("values_file, words", [
    ("/etc/passwd", "absolute"),
    ("../outside/values.yaml", "escapes"),
    ("components/../../outside/values.yaml", "escapes"),
    ("components/nfd/missing.yaml", "not found"),
])
def test_values_file_path_errors_name_overlay_field_value(tmp_path, values_file, words):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "values.yaml").write_text("a: 1\n")
    overlay = _tree_with_values_file(tmp_path / "recipes", values_file)[1]
    store = _load(tmp_path / "recipes")
    with pytest.raises(RecipePathError) as err:
        resolve(store, {})
    msg = str(err.value)
    assert words in msg
    assert overlay in msg and "spec.componentRefs[nfd].valuesFile" in msg and repr(values_file) in msg


def test_symlink_out_of_recipe_dir_refused(tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "values.yaml").write_text("a: 1\n")
    tree, overlay = _tree_with_values_file(tmp_path / "recipes", "components/nfd/values.yaml")
    os.makedirs(tree.path("components/nfd"))
    os.symlink(str(tmp_path / "outside" / "values.yaml"), tree.path("components/nfd/values.yaml"))
    store = _load(tmp_path / "recipes")
    with pytest.raises(RecipePathError) as err:
        resolve(store, {})
    assert "symlink" in str(err.value) and overlay in str(err.value) and "valuesFile" in str(err.value)


def test_symlink_inside_recipe_dir_allowed(tmp_path):
    tree = _tree_with_values_file(tmp_path, "components/nfd/values.yaml")[0]
    tree.values("shared", {"a": 1})
    os.makedirs(tree.path("components/nfd"))
    os.symlink(tree.path("components/shared/values.yaml"), tree.path("components/nfd/values.yaml"))
    store = _load(tmp_path)
    assert resolve(store, {}).component("nfd").values_file == "components/nfd/values.yaml"
    assert store.load_yaml("components/nfd/values.yaml") == {"a": 1}


def test_manifest_path_escape_names_overlay(tmp_path):
    tree = RecipeTree(tmp_path)
    tree.registry([helm_entry("nfd")])
    overlay = tree.base(component_refs=[{"name": "nfd", "manifestFiles": ["../x.yaml"]}])
    with pytest.raises(RecipePathError) as err:
        resolve(_load(tmp_path), {})
    assert overlay in str(err.value) and "manifestFiles" in str(err.value) and "'../x.yaml'" in str(err.value)


def test_overlay_file_symlink_outside_refused(tmp_path):
    outside = RecipeTree(tmp_path / "outside")
    target = outside.overlay("evil", criteria={"service": "eks"})
    os.makedirs(str(tmp_path / "recipes" / "overlays"))
    os.symlink(target, str(tmp_path / "recipes" / "overlays" / "evil.yaml"))
    with pytest.raises(RecipePathError) as err:
        _load(tmp_path / "recipes")
    assert "symlink" in str(err.value) and "evil.yaml" in str(err.value)


def test_files_parsed_once_and_cached(tmp_path):
    standard_tree(tmp_path)
    store = _load(tmp_path)
    first = store.load_yaml("components/nfd/values.yaml")
    assert store.load_yaml("components/nfd/values.yaml") is first
    assert store.read_text("components/tuning/manifests/tuning.yaml") is store.read_text(
        "components/tuning/manifests/tuning.yaml")
    assert store.exists("components/nfd/values.yaml") and not store.exists("components/nfd/none.yaml")
