# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Hostile input to the Configure modules: every case ends in a clear, named error (never a RecursionError, a hang,
a huge read or a stray temporary folder)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import DsxosError, YamlLoadError
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import (
    MAX_DEPTH, check_depth, dump_yaml, load_yaml_file, load_yaml_text)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure import bundle_writer
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_drift import load_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_writer import (
    BundleFile, BundleWriteError, remove_stale_temps, temp_prefix, write_bundle)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.constraints import OPERATORS
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import BUNDLE_RENDER, RECIPE_RESOLVE, run_resolve
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import (
    ConstraintError, RecipeError, RecipeLoadError, RecipePathError, RecipeSchemaError)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_merge import copy_data, deep_merge
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import (
    RecipeResult, render_input, validate_component_name)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.values_diff import values_diff

from recipe_tree import RecipeTree

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CRITERIA = {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"}


def params(entry_point, **given):
    out = {name: option.get("default") for name, option in entry_point.spec.items()}
    out.update(given)
    return out


def nested(depth, leaf=1):
    """``{"k": {"k": ... leaf}}`` with ``depth`` mappings, built without recursion."""
    value = leaf
    for dummy in range(depth):
        value = {"k": value}
    return value


def deep_yaml(depth):
    """Block-style YAML of ``depth`` nested mappings (900 levels is about 4.5 KB in flow style)."""
    return "{k: " * depth + "1" + "}" * depth + "\n"


@pytest.fixture(scope="module")
def resolved_recipe():
    return run_resolve(params(RECIPE_RESOLVE, criteria=CRITERIA))["recipe"]


@pytest.fixture
def alarm():
    """Fail (instead of hanging the suite) when a test blocks for more than 20 s."""
    def on_alarm(signum, frame):
        raise TimeoutError("blocked: the code under test hung")
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def small_tree(root, values=None, refs=None, registry=None):
    tree = RecipeTree(root)
    tree.registry(registry if registry is not None else [
        {"name": "app", "helm": {"defaultRepository": "https://charts.example.com", "defaultChart": "app",
                                 "defaultVersion": "1.0.0"}}])
    tree.base(component_refs=refs if refs is not None else [{"name": "app", "type": "Helm"}])
    tree.values("app", values if values is not None else {"replicas": 1})
    return tree


# ------------------------------------------------------------------------------------------------ a. deep nesting

def test_deep_values_file_names_the_file(tmp_path):
    tree = small_tree(tmp_path / "r")
    tree.file("components/app/values.yaml", deep_yaml(900))
    store = RecipeStore.load([tree.root], include_builtin=False)
    with pytest.raises(RecipeLoadError) as err:
        store.load_yaml("components/app/values.yaml")
    assert "nested deeper than %d levels" % MAX_DEPTH in str(err.value)
    assert err.value.file.endswith("components/app/values.yaml")


def test_yaml_over_the_parser_limit_is_a_named_error():
    with pytest.raises(YamlLoadError) as err:
        load_yaml_text("[" * 5000 + "]" * 5000, source="deep.yaml")
    assert err.value.file == "deep.yaml" and "nested deeper" in err.value.message


def test_self_referencing_alias_is_refused():
    with pytest.raises(YamlLoadError, match="nested deeper"):
        load_yaml_text("a: &x [1, *x]\n", source="cycle.yaml")


def test_deep_values_overrides_option_names_the_option(resolved_recipe):
    with pytest.raises(RecipeSchemaError) as err:
        render_input(resolved_recipe, {"gpu-operator": nested(900)})
    assert err.value.field == "values_overrides" and "nested deeper" in str(err.value)


def test_deep_recipe_option_names_the_option(resolved_recipe):
    recipe = dict(resolved_recipe, metadata={"x": nested(900)})
    with pytest.raises(RecipeSchemaError) as err:
        render_input(recipe)
    assert err.value.field == "recipe" and "nested deeper" in str(err.value)


def test_render_module_fails_cleanly_on_deep_overrides(tmp_path, resolved_recipe):
    result = call_entry(BUNDLE_RENDER, params(BUNDLE_RENDER, recipe=resolved_recipe, dest=str(tmp_path / "b"),
                                              values_overrides={"gpu-operator": nested(900)}))
    assert result["failed"] is True and "values_overrides" in result["msg"] and "nested deeper" in result["msg"]
    assert not (tmp_path / "b").exists()


def test_merge_copy_diff_and_dump_never_raise_recursion_error():
    deep = nested(2000)
    with pytest.raises(RecipeSchemaError, match="nested deeper"):
        copy_data(deep)
    with pytest.raises(RecipeSchemaError, match="nested deeper"):
        deep_merge({"k": {"x": 1}}, deep)
    with pytest.raises(RecipeSchemaError) as err:
        values_diff({"a": 1}, deep, "bundle", "cluster:ns/app")
    assert err.value.field == "cluster:ns/app"
    with pytest.raises(DsxosError, match="nested too deeply"):
        dump_yaml(nested(5000))


@settings(max_examples=40, deadline=None)
@given(depth=st.integers(min_value=1, max_value=400), flow=st.booleans())
def test_any_depth_loads_or_fails_by_name(depth, flow):
    text = deep_yaml(depth) if flow else "".join("  " * i + "k:\n" for i in range(depth - 1)) + "  " * (depth - 1) + "k: 1\n"
    if depth <= MAX_DEPTH:
        data = load_yaml_text(text, source="d.yaml")
        assert check_depth(data) is data
        assert copy_data(data) == data and deep_merge(data, data) == data
    else:
        with pytest.raises(YamlLoadError) as err:
            load_yaml_text(text, source="d.yaml")
        assert err.value.file == "d.yaml"


# ------------------------------------------------------------------------------------------------ b. destinations

def _files():
    return {"recipe.yaml": BundleFile.text("kind: RecipeResult\n"), "a/values.yaml": BundleFile.text("x: 1\n"),
            "checksums.txt": BundleFile.text("")}


def test_non_bundle_destination_is_refused_before_anything_is_read(tmp_path, monkeypatch):
    dest = tmp_path / "home"
    dest.mkdir()
    (dest / "fifo").mkdir()
    os.mkfifo(str(dest / "fifo" / "kmsg"))
    with open(dest / "huge.img", "wb") as handle:  # sparse: 3 GB apparent size, no disk used
        handle.truncate(3 * 1024 ** 3)

    def no_scan(root):
        raise AssertionError("the destination was read")
    monkeypatch.setattr(bundle_writer, "_scan_tree", no_scan)
    for check_mode in (True, False):
        with pytest.raises(BundleWriteError) as err:
            write_bundle(str(dest), _files(), check_mode=check_mode)
        assert "not a bundle" in str(err.value) and err.value.file == str(dest)


def test_root_and_mount_points_are_refused_even_with_force():
    with pytest.raises(BundleWriteError, match="mount point"):
        write_bundle("/", _files(), check_mode=True, force=True)
    with pytest.raises(BundleWriteError, match="mount point"):
        write_bundle("/proc", _files(), check_mode=True, force=True)


def test_marker_must_be_a_regular_file(tmp_path):
    dest = tmp_path / "b"
    dest.mkdir()
    (dest / "data").write_text("precious")
    os.symlink("/etc/hostname", str(dest / "recipe.yaml"))
    with pytest.raises(BundleWriteError, match="not a bundle"):
        write_bundle(str(dest), _files())


def test_existing_bundle_is_read_with_bounded_memory_and_no_blocking(tmp_path, alarm):
    dest = tmp_path / "b"
    write_bundle(str(dest), _files())
    os.mkfifo(str(dest / "a" / "pipe"))
    os.symlink("/etc/hostname", str(dest / "a" / "link"))
    os.remove(dest / "a" / "values.yaml")
    with open(dest / "a" / "values.yaml", "wb") as handle:  # a 3 GB (sparse) file where a small one belongs
        handle.truncate(3 * 1024 ** 3)
    tracemalloc.start()
    try:
        result = write_bundle(str(dest), _files(), want_diff=True, check_mode=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.modified == ["a/values.yaml"] and result.removed == ["a/link", "a/pipe"]
    assert peak < 16 * 1024 * 1024
    assert not [d for d in result.diff if d["after_header"].startswith("a/values.yaml")]  # zeros: binary, not diffed
    write_bundle(str(dest), _files())
    assert sorted(os.listdir(dest / "a")) == ["values.yaml"]


def test_big_text_file_diff_reads_a_bounded_prefix(tmp_path):
    dest = tmp_path / "b"
    write_bundle(str(dest), _files())
    (dest / "a" / "values.yaml").write_text("line: 1\n" * 200000)  # 1.6 MB of text
    result = write_bundle(str(dest), _files(), want_diff=True, check_mode=True)
    diff = [d for d in result.diff if d["after_header"].startswith("a/values.yaml")][0]
    assert "truncated" in diff["before"] and len(diff["before"]) < 40 * 1024


def test_equal_size_files_are_compared_chunk_by_chunk(tmp_path, monkeypatch):
    monkeypatch.setattr(bundle_writer, "COMPARE_CHUNK", 7)
    body = b"0123456789" * 100
    files = dict(_files(), blob=BundleFile(body))
    dest = tmp_path / "b"
    write_bundle(str(dest), files)
    assert write_bundle(str(dest), files).changed is False
    changed = dict(files, blob=BundleFile(body[:-1] + b"X"))
    assert write_bundle(str(dest), changed, check_mode=True).modified == ["blob"]


def test_too_many_entries_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(bundle_writer, "MAX_TREE_ENTRIES", 5)
    dest = tmp_path / "b"
    write_bundle(str(dest), _files())
    for index in range(10):
        (dest / ("extra%d" % index)).write_text("x")
    with pytest.raises(BundleWriteError, match="more than 5 entries"):
        write_bundle(str(dest), _files(), check_mode=True)


def test_drift_refuses_non_bundle_and_symlinked_files(tmp_path, alarm):
    other = tmp_path / "other"
    other.mkdir()
    (other / "deploy.sh").write_text("#!/bin/sh\n")
    with pytest.raises(RecipePathError, match="not a bundle"):
        load_bundle(str(other))
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    os.symlink("/etc/hostname", str(bundle / "recipe.yaml"))
    with pytest.raises(RecipePathError, match="not a regular file"):
        load_bundle(str(bundle), "helm")
    os.remove(bundle / "recipe.yaml")
    os.mkfifo(str(bundle / "recipe.yaml"))
    with pytest.raises(RecipePathError, match="not a regular file"):
        load_bundle(str(bundle), "helm")


# ------------------------------------------------------------------------------------------------ c. killed renders

def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_killed_render_leaves_no_temp_folder_for_good(tmp_path):
    dest = tmp_path / "bundle"
    write_bundle(str(dest), _files())
    script = textwrap.dedent("""
        import os, signal, sys
        sys.path.insert(0, %r)
        from ansible_collections.dsxos.cluster.plugins.module_utils.configure import bundle_writer
        real = bundle_writer._write_file
        def dying(path, content, mode):
            real(path, content, mode)
            os.kill(os.getpid(), signal.SIGKILL)
        bundle_writer._write_file = dying
        files = {"recipe.yaml": bundle_writer.BundleFile.text("kind: RecipeResult\\n"),
                 "a/values.yaml": bundle_writer.BundleFile.text("x: 2\\n")}
        bundle_writer.write_bundle(%r, files)
    """) % (os.path.join(REPO, ".build", "collections"), str(dest))
    proc = subprocess.Popen([sys.executable, "-c", script])
    assert proc.wait(timeout=60) == -signal.SIGKILL
    leftovers = [n for n in os.listdir(tmp_path) if n != "bundle"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".bundle.bundle-tmp-")
    assert "-%d-" % proc.pid in leftovers[0]
    result = write_bundle(str(dest), _files())
    assert os.listdir(tmp_path) == ["bundle"]
    assert result.stale_removed == [str(tmp_path / leftovers[0])]


def test_live_temp_folder_of_another_process_is_kept(tmp_path):
    dest = tmp_path / "bundle"
    write_bundle(str(dest), _files())
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        prefix = temp_prefix(str(dest))
        mine = re.sub(r"-\d+-$", "-%d-" % live.pid, prefix)
        live_dir = tmp_path / (mine + "abc123")
        dead_dir = tmp_path / (re.sub(r"-\d+-$", "-%d-" % _dead_pid(), prefix) + "xyz789")
        other_bundle = tmp_path / (".other" + prefix[len(".bundle"):] + "zzz000")
        for path in (live_dir, dead_dir, other_bundle):
            (path / "new").mkdir(parents=True)
        write_bundle(str(dest), _files())
        assert live_dir.is_dir() and other_bundle.is_dir() and not dead_dir.exists()
        old = os.stat(live_dir).st_mtime - bundle_writer.STALE_AFTER_S - 5
        os.utime(live_dir, (old, old))
        assert remove_stale_temps(str(dest)) == [str(live_dir)]  # a live render older than the limit is stale too
    finally:
        live.kill()
        live.wait()


def test_bundle_moved_aside_by_a_killed_swap_is_put_back(tmp_path):
    dest = tmp_path / "bundle"
    write_bundle(str(dest), _files())
    work = tmp_path / (re.sub(r"-\d+-$", "-%d-" % _dead_pid(), temp_prefix(str(dest))) + "abc123")
    work.mkdir()
    os.rename(dest, work / "old")  # killed between the two renames of the swap
    assert remove_stale_temps(str(dest)) == [str(work)]
    assert (dest / "recipe.yaml").read_text() == "kind: RecipeResult\n"


# ------------------------------------------------------------------------------------------------ d. recipe option

@pytest.mark.parametrize("change, field, words", [
    ({"deploymentOrder": ["gpu-operator", "ghost"]}, "recipe.deploymentOrder[1]", "not in componentRefs"),
    ({"deploymentOrder": "gpu-operator"}, "recipe.deploymentOrder", "must be a list"),
    ({"componentRefs": "gpu-operator"}, "recipe.componentRefs", "must be a list"),
    ({"componentRefs": [{"type": "Helm"}]}, "recipe.componentRefs[0].name", "non-empty string"),
    ({"componentRefs": [{"name": "-set"}]}, "recipe.componentRefs[0].name", "DNS-1123"),
    ({"constraints": {"K8s.server.version": ">= 1.30"}}, "recipe.constraints", "must be a list"),
    ({"criteria": {"nodes": "many"}}, "recipe.criteria.nodes", "non-negative integer"),
])
def test_hand_written_recipe_is_validated(resolved_recipe, change, field, words):
    with pytest.raises(RecipeSchemaError) as err:
        render_input(dict(resolved_recipe, **change))
    assert err.value.field == field and words in err.value.message


def test_component_field_types_are_checked(resolved_recipe):
    refs = [dict(r) for r in resolved_recipe["componentRefs"]]
    refs[0]["manifestFiles"] = "one.yaml"
    with pytest.raises(RecipeSchemaError) as err:
        RecipeResult.from_dict(dict(resolved_recipe, componentRefs=refs))
    assert err.value.field == "recipe.componentRefs[%s].manifestFiles" % refs[0]["name"]
    refs[0] = dict(resolved_recipe["componentRefs"][0], enabled="false")
    with pytest.raises(RecipeSchemaError, match="enabled must be true or false"):
        RecipeResult.from_dict(dict(resolved_recipe, componentRefs=refs))


def test_empty_recipe_never_replaces_a_bundle(tmp_path, resolved_recipe):
    dest = tmp_path / "b"
    assert call_entry(BUNDLE_RENDER, params(BUNDLE_RENDER, recipe=resolved_recipe, dest=str(dest)))["changed"]
    before = sorted(os.listdir(dest))
    empty = dict(resolved_recipe, componentRefs=[], deploymentOrder=[])
    out = call_entry(BUNDLE_RENDER, params(BUNDLE_RENDER, recipe=empty, dest=str(dest)))
    assert out["failed"] is True and "no enabled component" in out["msg"]
    everything = list(resolved_recipe["deploymentOrder"])
    out = call_entry(BUNDLE_RENDER, params(BUNDLE_RENDER, recipe=resolved_recipe, dest=str(dest),
                                           disabled_components=everything))
    assert out["failed"] is True and "no enabled component" in out["msg"]
    assert sorted(os.listdir(dest)) == before


# ------------------------------------------------------------------------------------------------ e. duplicate keys

def test_duplicate_key_names_file_and_line(tmp_path):
    tree = small_tree(tmp_path / "r")
    path = tree.file("overlays/dup.yaml", "kind: RecipeMetadata\napiVersion: aicr.run/v1beta1\nmetadata:\n  name: dup\n"
                                          "spec:\n  base: base\n  base: other\n")
    with pytest.raises(RecipeLoadError) as err:
        RecipeStore.load([tree.root], include_builtin=False)
    assert err.value.file == path and err.value.line == 7 and "duplicate key 'base'" in err.value.message


def test_merge_keys_may_still_be_overridden():
    assert load_yaml_text("a: &x {k: 1, j: 2}\nb:\n  <<: *x\n  k: 3\n") == {"a": {"k": 1, "j": 2}, "b": {"k": 3, "j": 2}}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keys=st.lists(st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True), min_size=1, max_size=8, unique=True),
       data=st.data())
def test_any_repeated_key_is_found(keys, data):
    repeat = data.draw(st.sampled_from(keys))
    lines = ["%s: %d" % (key, pos) for pos, key in enumerate(keys)]
    at = data.draw(st.integers(min_value=keys.index(repeat) + 1, max_value=len(lines)))
    lines.insert(at, "%s: again" % repeat)
    with pytest.raises(YamlLoadError) as err:
        load_yaml_text("\n".join(lines) + "\n", source="k.yaml")
    assert err.value.line == at + 1 and repr(repeat) in err.value.message


def test_builtin_catalog_has_no_duplicate_keys():
    root = os.path.join(REPO, "recipes")
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            if name.endswith((".yaml", ".yml")):
                load_yaml_file(os.path.join(dirpath, name))
                count += 1
    assert count > 50


# ------------------------------------------------------------------------------------------------ f. operators

@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(op=st.text(alphabet="<>=!~", min_size=1, max_size=3).filter(lambda o: o not in OPERATORS))
def test_unknown_operator_is_refused_at_load(tmp_path_factory, op):
    tree = small_tree(tmp_path_factory.mktemp("r"))
    path = tree.overlay("eks", criteria={"service": "eks"},
                        constraints=[{"name": "K8s.server.version", "value": "%s 1.30" % op}])
    with pytest.raises(ConstraintError) as err:
        RecipeStore.load([tree.root], include_builtin=False)
    assert err.value.file == path and err.value.field == "spec.constraints[K8s.server.version].value"


def test_unknown_operator_in_a_validation_phase_is_refused(tmp_path):
    tree = small_tree(tmp_path / "r")
    path = tree.overlay("eks", criteria={"service": "eks"},
                        validation={"performance": {"constraints": [{"name": "nccl-bw", "value": "=> 100"}]}})
    with pytest.raises(ConstraintError) as err:
        RecipeStore.load([tree.root], include_builtin=False)
    assert err.value.file == path and err.value.field == "spec.validation.performance.constraints[nccl-bw].value"


# ------------------------------------------------------------------------------------------------ g. names

def test_option_like_component_name_is_refused_in_overlay_and_registry(tmp_path):
    tree = small_tree(tmp_path / "r", refs=[{"name": "--set=x", "source": "https://x"}])
    with pytest.raises(RecipeSchemaError) as err:
        RecipeStore.load([tree.root], include_builtin=False)
    assert err.value.file.endswith("overlays/base.yaml") and err.value.field == "spec.componentRefs[0].name"
    tree = small_tree(tmp_path / "r2", registry=[{"name": "-f", "helm": {}}])
    with pytest.raises(RecipeSchemaError) as err:
        RecipeStore.load([tree.root], include_builtin=False)
    assert err.value.file.endswith("registry.yaml") and err.value.field == "components[0].name"


@settings(max_examples=200, deadline=None)
@given(name=st.text(alphabet="abcXYZ09-_.:/ ", max_size=60))
def test_component_name_rule(name):
    valid = bool(re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", name)) and len(name) <= 53
    try:
        assert validate_component_name(name, "f.yaml", "x") == name and valid
    except RecipeSchemaError as err:
        assert not valid and err.file == "f.yaml" and err.field == "x"


# ------------------------------------------------------------------------------------------------ h. more inputs

def test_fifo_overlay_is_refused_without_blocking(tmp_path, alarm):
    tree = small_tree(tmp_path / "r")
    os.mkfifo(tree.path("overlays/pipe.yaml"))
    with pytest.raises(RecipeLoadError, match="not a regular file"):
        RecipeStore.load([tree.root], include_builtin=False)


def test_registry_symlink_outside_and_registry_shape(tmp_path):
    outside = RecipeTree(tmp_path / "outside")
    outside.registry([])
    tree = small_tree(tmp_path / "r")
    os.remove(tree.path("registry.yaml"))
    os.symlink(outside.path("registry.yaml"), tree.path("registry.yaml"))
    with pytest.raises(RecipePathError, match="outside"):
        RecipeStore.load([tree.root], include_builtin=False)
    tree2 = small_tree(tmp_path / "r2")
    tree2.yaml("registry.yaml", {"apiVersion": "aicr.run/v1beta1", "kind": "ComponentRegistry",
                                 "components": {"app": {"helm": {}}}})
    with pytest.raises(RecipeSchemaError) as err:
        RecipeStore.load([tree2.root], include_builtin=False)
    assert err.value.field == "components" and "must be a list" in err.value.message


@pytest.mark.parametrize("content, words", [
    (b"\xff\xfe\x00bad", "not UTF-8"),
    (b"a: \x01\x02\n", "malformed YAML"),
])
def test_binary_or_non_utf8_values_file(tmp_path, content, words):
    tree = small_tree(tmp_path / "r")
    with open(tree.path("components/app/values.yaml"), "wb") as handle:
        handle.write(content)
    store = RecipeStore.load([tree.root], include_builtin=False)
    with pytest.raises(RecipeLoadError, match=words) as err:
        store.load_yaml("components/app/values.yaml")
    assert err.value.file.endswith("components/app/values.yaml")


@pytest.mark.parametrize("relpath, words", [
    ("../outside.yaml", "escapes"), ("/etc/passwd", "absolute"), ("components/app/\0x", "non-empty relative"),
    ("components/link.yaml", "symlink"),
])
def test_values_file_paths_stay_inside(tmp_path, relpath, words):
    tree = small_tree(tmp_path / "r")
    os.symlink("/etc/hostname", tree.path("components/link.yaml"))
    store = RecipeStore.load([tree.root], include_builtin=False)
    with pytest.raises(RecipePathError, match=words) as err:
        store.resolve_path(relpath, "overlays/base.yaml", "spec.componentRefs[app].valuesFile")
    assert err.value.field == "spec.componentRefs[app].valuesFile"


def test_oversized_values_file(tmp_path):
    tree = small_tree(tmp_path / "r")
    with open(tree.path("components/app/values.yaml"), "wb") as handle:
        handle.truncate(5 * 1024 * 1024)
    store = RecipeStore.load([tree.root], include_builtin=False)
    with pytest.raises(RecipeLoadError, match="byte limit"):
        store.load_yaml("components/app/values.yaml")
    with pytest.raises(RecipeLoadError, match="byte limit"):
        store.read_text("components/app/values.yaml")


def test_every_error_is_a_recipe_error():
    assert issubclass(ConstraintError, RecipeError) and issubclass(RecipeLoadError, DsxosError)


def test_a_repeated_key_is_named_as_written_even_when_yaml_reads_it_as_a_boolean():
    """YAML 1.1 reads on/off/yes/no as booleans: the error names the key as the file spells it, and what it was read as."""
    with pytest.raises(YamlLoadError) as err:
        load_yaml_text("on: 1\non: 2\n", source="k.yaml")
    assert err.value.line == 2 and "duplicate key 'on'" in err.value.message and "read as True" in err.value.message
    with pytest.raises(YamlLoadError) as err:
        load_yaml_text("on: 1\nyes: 2\n", source="k.yaml")
    assert "duplicate key 'yes'" in err.value.message and "like 'on' there" in err.value.message
