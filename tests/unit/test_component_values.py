# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Component bundles: values layering, manifest templates, errors, speed."""
from __future__ import annotations

import time

import pytest

from recipe_tree import RecipeTree, helm_entry, standard_tree

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.component_values import (
    build_component_bundles, is_blank_manifest)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeSchemaError, RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_resolver import resolve
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import load_yaml_text

H100_EKS_TRAINING = {"service": "eks", "accelerator": "h100", "intent": "training"}


def _store(root):
    return RecipeStore.load([str(root)], include_builtin=False)


def _bundles(root, criteria=None, **kwargs):
    store = _store(root)
    return {b.name: b for b in build_component_bundles(store, resolve(store, criteria or {}), **kwargs)}


def test_values_layering(tmp_path):
    standard_tree(tmp_path)
    store = _store(tmp_path)
    result = resolve(store, H100_EKS_TRAINING)
    extra = {"gpu-operator": {"driver": {"version": "590", "repository": None}, "toolkit": {"env": ["X"]}}}
    bundles = build_component_bundles(store, result, extra_overrides=extra)
    assert [b.name for b in bundles] == result.deployment_order
    assert [b.order for b in bundles] == [0, 1, 2, 3]
    gpu = bundles[2]
    assert gpu.values == {
        "driver": {"enabled": True, "repository": None, "usePrecompiled": False, "version": "590", "rdma": True},
        "toolkit": {"enabled": True, "env": ["X"]},
        "list": [3],  # values-eks.yaml list replaced the values.yaml list
        "cdi": {"enabled": True},
    }
    assert (gpu.repository, gpu.chart, gpu.version, gpu.namespace) == (
        "https://helm.ngc.nvidia.com/nvidia", "gpu-operator", "v26.7.0", "gpu-operator")
    assert gpu.dependency_refs == ["nfd", "cert-manager"]
    assert bundles[1].values == {"master": {"replicas": 1}, "worker": {"enabled": True}}
    # cached files were not modified by the merge
    assert store.load_yaml("components/gpu-operator/values.yaml")["driver"] == {"enabled": False,
                                                                                "repository": "nvcr.io/nvidia"}
    bundles[1].values["master"]["replicas"] = 5
    assert store.load_yaml("components/nfd/values.yaml")["master"]["replicas"] == 1


def test_enabled_key_not_passed_to_values(tmp_path):
    tree = RecipeTree(tmp_path)
    tree.registry([helm_entry("x")])
    tree.base(component_refs=[{"name": "x", "overrides": {"enabled": True, "a": 1}}])
    assert _bundles(tmp_path)["x"].values == {"a": 1}


def test_manifest_rendering_and_variables(tmp_path):
    tree = standard_tree(tmp_path)
    tree.manifest("tuning", "all.yaml.j2",
                  "release: {{ release.name }}/{{ release.namespace }}\nchart: '{{ chart.name }}|{{ chart.version }}|"
                  "{{ chart.repository }}'\ncomponent: {{ component }}\ncriteria: {{ criteria.service }}-{{ criteria.nodes }}\n"
                  "profile: {{ values.profile }}\n{% if values.missing is defined %}x: 1\n{% endif %}"
                  "list:\n  {{ values | to_yaml | indent(2) }}\n")
    tree.manifest("tuning", "empty.yaml.j2", "# nothing for {{ component }}\n{% if false %}\nkind: X\n{% endif %}\n---\n\n")
    tree.overlay("h100-eks-training", base="eks-training",
                 criteria={"service": "eks", "accelerator": "h100", "intent": "training"},
                 component_refs=[{"name": "tuning", "type": "Helm", "overrides": {"profile": "h100"},
                                  "manifestFiles": ["components/tuning/manifests/tuning.yaml",
                                                    "components/tuning/manifests/all.yaml.j2",
                                                    "components/tuning/manifests/empty.yaml.j2"]}])
    tuning = _bundles(tmp_path, H100_EKS_TRAINING)["tuning"]
    assert sorted(tuning.manifests) == ["all.yaml", "tuning.yaml"]  # empty.yaml dropped
    assert tuning.manifest_only
    rendered = load_yaml_text(tuning.manifests["all.yaml"])
    assert rendered == {"release": "tuning/skyhook", "chart": "||", "component": "tuning", "criteria": "eks-0",
                        "profile": "h100", "list": {"profile": "h100"}}
    assert "name: tuning-h100" in tuning.manifests["tuning.yaml"]


def test_blank_manifest_detection():
    assert is_blank_manifest("\n  \n# c\n---\n...\n  # indented\n--- # doc\n")
    assert not is_blank_manifest("# c\n---\nkind: ConfigMap\n")


def _tuning_tree(root, template, filename="t.yaml.j2"):
    tree = RecipeTree(root)
    tree.registry([helm_entry("tuning")])
    tree.manifest("tuning", filename, template)
    tree.base(component_refs=[{"name": "tuning", "manifestFiles": ["components/tuning/manifests/" + filename]}])
    return tree


def test_undefined_variable_names_file_and_line(tmp_path):
    tree = _tuning_tree(tmp_path, "a: 1\nb: 2\nc: {{ values.nope }}\n")
    with pytest.raises(RenderError) as err:
        _bundles(tmp_path)
    assert tree.path("components/tuning/manifests/t.yaml.j2") + ":3" in str(err.value)
    assert "nope" in str(err.value)


def test_template_syntax_error_names_file_and_line(tmp_path):
    tree = _tuning_tree(tmp_path, "a: 1\n{% if %}\n")
    with pytest.raises(RenderError) as err:
        _bundles(tmp_path)
    assert tree.path("components/tuning/manifests/t.yaml.j2") + ":2" in str(err.value)
    assert "syntax" in str(err.value)


def test_sandbox_refuses_unsafe_access(tmp_path):
    _tuning_tree(tmp_path, "x: {{ values.__class__.__mro__ }}\n")
    with pytest.raises(RenderError) as err:
        _bundles(tmp_path)
    assert "t.yaml" in str(err.value)


def test_manifest_name_collision(tmp_path):
    tree = RecipeTree(tmp_path)
    tree.registry([helm_entry("x")])
    tree.file("components/x/a/m.yaml", "kind: A\n")
    tree.file("components/x/b/m.yaml", "kind: B\n")
    tree.base(component_refs=[{"name": "x", "manifestFiles": ["components/x/a/m.yaml", "components/x/b/m.yaml"]}])
    with pytest.raises(RenderError) as err:
        _bundles(tmp_path)
    assert "'m.yaml'" in str(err.value) and "components/x/b/m.yaml" in str(err.value)


def test_values_file_must_be_mapping(tmp_path):
    tree = RecipeTree(tmp_path)
    tree.registry([helm_entry("x")])
    tree.file("components/x/values.yaml", "- a\n- b\n")
    tree.base(component_refs=[{"name": "x"}])
    with pytest.raises(RecipeSchemaError) as err:
        _bundles(tmp_path)
    assert "components/x/values.yaml" in str(err.value) and "mapping" in str(err.value)


def test_disabling_at_bundle_time(tmp_path):
    standard_tree(tmp_path)
    store = _store(tmp_path)
    result = resolve(store, H100_EKS_TRAINING)
    bundles = build_component_bundles(store, result, extra_overrides={"cert-manager": {"enabled": False}},
                                      disabled=["tuning"])
    assert [(b.name, b.order) for b in bundles] == [("nfd", 0), ("gpu-operator", 1)]
    assert bundles[1].dependency_refs == ["nfd"]
    with pytest.raises(RenderError) as err:
        build_component_bundles(store, result, extra_overrides={"gpu-operatr": {"a": 1}})
    assert "'gpu-operatr'" in str(err.value)


def test_disabled_in_result_is_skipped(tmp_path):
    standard_tree(tmp_path)
    store = _store(tmp_path)
    result = resolve(store, H100_EKS_TRAINING, disabled=["nfd"])
    assert [b.name for b in build_component_bundles(store, result)] == ["cert-manager", "gpu-operator", "tuning"]


def test_resolve_and_render_under_50ms(tmp_path):
    standard_tree(tmp_path)
    store = _store(tmp_path)
    build_component_bundles(store, resolve(store, H100_EKS_TRAINING))  # warm caches
    start = time.perf_counter()
    for _round in range(10):
        bundles = build_component_bundles(store, resolve(store, H100_EKS_TRAINING))
    per_call = (time.perf_counter() - start) / 10
    assert len(bundles) == 4
    assert per_call < 0.05, "resolve+render took %.1f ms" % (per_call * 1000)
