# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""bundle_render: dispatch, option checks, recipe.yaml, checksums, determinism and idempotence."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_collections.dsxos.cluster.plugins.module_utils.configure import bundle_render
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_render import render_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_writer import write_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import RecipeResult

import manifest_validation
from manifest_validation import sample_components, sample_result, validate_objects

OPTIONS = {
    "helm": {},
    "argocd": {"repo_url": "https://git.example.com/ops/bundles.git", "revision": "v1"},
    "flux": {"values_from": "configmap"},
}


def _render(deployer, options=None):
    comps = sample_components()
    return render_bundle(sample_result(comps), comps, deployer, OPTIONS[deployer] if options is None else options)


def test_shared_dir_is_present():
    # the bundle tests validate against shared CRDs: a missing ../shared must fail, never skip
    assert os.path.isdir(manifest_validation.CRD_DIR), manifest_validation.CRD_DIR
    assert ("helm.toolkit.fluxcd.io/v2", "HelmRelease") in manifest_validation.crd_schemas()
    assert ("argoproj.io/v1alpha1", "Application") in manifest_validation.crd_schemas()


def test_unknown_deployer_names_value_and_allowed():
    with pytest.raises(RenderError) as err:
        render_bundle(sample_result(), sample_components(), "kustomize", {})
    assert "'kustomize'" in str(err.value) and "argocd, flux, helm" in str(err.value)
    with pytest.raises(RenderError):
        render_bundle(sample_result(), sample_components(), ["helm"], {})


def test_unknown_options_are_named():
    with pytest.raises(RenderError) as err:
        render_bundle(sample_result(), sample_components(), "helm", {"timeout": "5m", "colour": "red", "zeal": 1})
    message = str(err.value)
    assert "colour, zeal" in message and "deployer helm" in message and "allowed: retries, retry_delay, timeout, wait" in message
    with pytest.raises(RenderError, match="repo_url"):
        render_bundle(sample_result(), sample_components(), "flux", {"repo_url": "x"})


def test_option_types_are_checked_and_coerced():
    with pytest.raises(RenderError) as err:
        render_bundle(sample_result(), sample_components(), "helm", {"wait": "maybe"})
    assert "options.wait" in str(err.value) and "'maybe'" in str(err.value)
    with pytest.raises(RenderError, match="options.retries"):
        render_bundle(sample_result(), sample_components(), "helm", {"retries": [3]})
    opts = bundle_render.build_options("helm", {"wait": "false", "retries": "7", "timeout": None})
    assert (opts.wait, opts.retries, opts.timeout) == (False, 7, "10m")
    assert bundle_render.option_spec("flux")["flux_namespace"] == "flux-system"


@pytest.mark.parametrize("deployer", sorted(OPTIONS))
def test_recipe_yaml_round_trips(deployer):
    files = _render(deployer)
    data = yaml.safe_load(files["recipe.yaml"].content)
    result = sample_result()
    assert data == result.to_dict()
    assert RecipeResult.from_dict(data).to_dict() == result.to_dict()


@pytest.mark.parametrize("deployer", sorted(OPTIONS))
def test_checksums_cover_every_file(deployer):
    files = _render(deployer)
    lines = files["checksums.txt"].content.decode().splitlines()
    paths = [line.split("  ", 1)[1] for line in lines]
    assert paths == sorted(paths)
    assert set(paths) == set(files) - {"checksums.txt"}
    assert "recipe.yaml" in paths
    for line in lines:
        digest, path = line.split("  ", 1)
        assert digest == hashlib.sha256(files[path].content).hexdigest()
    assert list(files) == sorted(files)


def test_sha256sum_accepts_checksums(tmp_path):
    tool = ["sha256sum", "--check", "--strict"] if shutil.which("sha256sum") else ["shasum", "-a", "256", "--check"]
    assert shutil.which(tool[0]), "need sha256sum (coreutils) or shasum"
    write_bundle(str(tmp_path / "b"), _render("helm"))
    proc = subprocess.run(tool + ["checksums.txt"], cwd=str(tmp_path / "b"),
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("deployer", sorted(OPTIONS))
def test_rendering_is_deterministic_and_writes_are_idempotent(tmp_path, deployer):
    first = _render(deployer)
    second = _render(deployer)
    assert {k: (v.content, v.mode) for k, v in first.items()} == {k: (v.content, v.mode) for k, v in second.items()}
    dest = str(tmp_path / "bundle")
    assert write_bundle(dest, first).changed is True
    again = write_bundle(dest, second, want_diff=True)
    assert again.changed is False and again.diff == []


def test_changed_component_shows_in_diff(tmp_path):
    dest = str(tmp_path / "bundle")
    write_bundle(dest, _render("helm"))
    comps = sample_components()
    comps[1].values["driver"]["version"] = "580.1.1"
    result = write_bundle(dest, render_bundle(sample_result(comps), comps, "helm", {}), want_diff=True)
    assert result.changed is True
    assert result.modified == ["checksums.txt", "gpu-operator/values.yaml"]
    entry = [d for d in result.diff if d["after_header"].startswith("gpu-operator/values.yaml")][0]
    assert "570.133.20" in entry["before"] and "580.1.1" in entry["after"]


def test_duplicate_components_are_refused():
    comps = sample_components()
    comps.append(sample_components()[0])
    with pytest.raises(RenderError) as err:
        render_bundle(sample_result(), comps, "helm", {})
    assert "'cert-manager'" in str(err.value)


def test_validator_rejects_unknown_fields_and_kinds(monkeypatch):
    with pytest.raises(AssertionError, match="datax"):
        validate_objects([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "datax": {}}])
    with pytest.raises(AssertionError, match="Couldn't find schema"):
        validate_objects([{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "x"}}])
    with pytest.raises(AssertionError, match="no CRD"):
        validate_objects([{"apiVersion": "argoproj.io/v1beta9", "kind": "Application", "metadata": {"name": "x"}}])
    with pytest.raises(AssertionError, match="resources"):
        validate_objects([{"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                           "resources": ["../outside.yaml"]}])


def test_validator_fails_when_shared_dir_is_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(manifest_validation, "CRD_DIR", str(tmp_path / "nope"))
    manifest_validation.crd_schemas.cache_clear()
    try:
        with pytest.raises(AssertionError, match="shared CRD directory is missing"):
            manifest_validation.crd_schemas()
    finally:
        monkeypatch.undo()
        manifest_validation.crd_schemas.cache_clear()


_RENDER_SCRIPT = r"""
import json, sys
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import run_render, run_resolve
source = {"recipe_dirs": ["my-recipes"], "include_builtin": True, "disabled_components": []}
resolved = run_resolve(dict(source, criteria={"service": "eks", "accelerator": "h100", "intent": "training"},
                            snapshot=None, infer=False))
out = run_render(dict(source, recipe=resolved["recipe"], dest=sys.argv[1], deployer=sys.argv[2], deployer_options=json.loads(sys.argv[3]),
                      values_overrides={}, force=False))
print(json.dumps(resolved["recipe"]["metadata"]["recipeDirs"]))
"""


def _tree_bytes(top):
    out = {}
    for root, _dirs, names in os.walk(top):
        for name in names:
            path = os.path.join(root, name)
            out[os.path.relpath(path, top)] = open(path, "rb").read()  # pylint: disable=consider-using-with
    return out


@pytest.mark.parametrize("deployer", sorted(OPTIONS))
def test_bundle_bytes_do_not_depend_on_install_location_or_cwd(tmp_path, deployer):
    """The same recipe rendered by two installs of the collection, each from its own cwd, gives the same bytes,
    and no bundle file names a path of the machine (install location, recipe dirs, cwd, home)."""
    import json  # pylint: disable=import-outside-toplevel
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    trees, dirs_seen = [], []
    for place in ("first", "second-install"):
        collection = tmp_path / place / "ansible_collections" / "dsxos" / "cluster"
        for sub in ("plugins", "recipes"):
            shutil.copytree(os.path.join(repo, sub), str(collection / sub), ignore=shutil.ignore_patterns("__pycache__"))
        work = tmp_path / place / "work"
        (work / "my-recipes").mkdir(parents=True)
        dest = tmp_path / place / "bundle"
        env = dict(os.environ, PYTHONPATH=str(tmp_path / place), PYTHONDONTWRITEBYTECODE="1")
        run = subprocess.run([sys.executable, "-c", _RENDER_SCRIPT, str(dest), deployer, json.dumps(OPTIONS[deployer])],
                             cwd=str(work), env=env, capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stderr
        dirs_seen.append(json.loads(run.stdout.strip().splitlines()[-1]))
        assert all(d.startswith(str(tmp_path / place)) for d in dirs_seen[-1])  # it really used this install
        trees.append(_tree_bytes(str(dest)))
    assert trees[0] == trees[1]
    local = [str(tmp_path), repo, os.path.expanduser("~")] + [d for seen in dirs_seen for d in seen]
    for rel, content in trees[0].items():
        text = content.decode("utf-8", "replace")
        leaked = [path for path in local if path in text]
        assert not leaked, "%s names local path(s) %s" % (rel, leaked)
