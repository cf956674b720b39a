# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""``.Chart`` in Go-template manifests follows Helm's chart-metadata semantics (every field present, zero values when
unset) with AICR's version rule (no ``v`` prefix, ``0.1.0`` when there is none), so a chart label built the usual
way is a label value the API server accepts for every component: with a chart, manifest-only, versionless, with a
``v`` prefix or SemVer build metadata. The fixture tree ``aicr_manifest_only`` renders those cases through the
modules' entry points."""
from __future__ import annotations

import os
import re
from typing import Any, Dict

import hypothesis.strategies as st
import yaml
from hypothesis import given, settings

from ansible_collections.dsxos.cluster.plugins.module_utils.configure import entry
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import BUNDLE_RENDER, RECIPE_RESOLVE
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.go_template import (
    DEFAULT_CHART_VERSION, chart_metadata, compile_go_template, helm_context, normalized_chart_version,
    render_go_template)

TREE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "aicr_manifest_only")
CRITERIA = {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"}
#: Kubernetes' label value rule (apimachinery IsValidLabelValue): at most 63 characters
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
#: the fields of Helm's chart.Metadata, as templates see them, and their zero values
HELM_METADATA_ZERO = {
    "Description": "", "Home": "", "Icon": "", "Condition": "", "Tags": "", "KubeVersion": "", "Deprecated": False,
    "Sources": [], "Keywords": [], "Maintainers": [], "Annotations": {}, "Dependencies": [],
}
CHART_LABEL = '{{ .Chart.Name }}-{{ .Chart.Version | replace "+" "_" }}'


def valid_label_value(text: str) -> bool:
    return len(text) <= 63 and bool(LABEL_VALUE.match(text))


def _render(template: str, data: Dict[str, Any]) -> str:
    return render_go_template(compile_go_template(template, "t.yaml"), data)


def test_every_helm_metadata_field_is_there_with_its_zero_value():
    meta = chart_metadata("skyhook-customizations", None)
    assert set(meta) == set(HELM_METADATA_ZERO) | {"Name", "Version", "AppVersion", "APIVersion", "Type"}
    for field, zero in HELM_METADATA_ZERO.items():
        assert meta[field] == zero, field
    assert (meta["Name"], meta["Version"], meta["AppVersion"], meta["APIVersion"], meta["Type"]) == (
        "skyhook-customizations", "0.1.0", "", "v2", "application")
    # a field Helm has is never "missing": it renders as its zero value, and a list has a length
    data = helm_context("c", {}, "ns", None, None)
    assert _render("[{{ .Chart.AppVersion }}][{{ len .Chart.Keywords }}][{{ .Chart.Deprecated }}]", data) == "[][0][false]"


def test_version_rule():
    assert normalized_chart_version("v25.10.1") == "25.10.1"
    assert normalized_chart_version("V1.0.0") == "1.0.0"
    assert normalized_chart_version("25.10.1") == "25.10.1"
    assert normalized_chart_version("1.2.0+build.7") == "1.2.0+build.7"
    assert normalized_chart_version("version-2") == "version-2"  # a 'v' not followed by a digit stays
    for none in (None, "", "   "):
        assert normalized_chart_version(none) == DEFAULT_CHART_VERSION
    meta = chart_metadata("gpu-operator", "v25.10.1")
    assert (meta["Version"], meta["AppVersion"]) == ("25.10.1", "v25.10.1")


#: SemVer identifiers that start and end alphanumeric (one ending in "-" makes "<name>-<version>" end in "-" in Helm too:
#: that is the template's choice, not a version this rule could repair)
_IDENT = st.from_regex(r"[0-9A-Za-z]([0-9A-Za-z-]{0,6}[0-9A-Za-z])?", fullmatch=True)
_NUM = st.integers(min_value=0, max_value=99999).map(str)
_SEMVER = st.builds(lambda v, a, b, c, pre, build: "%s%s.%s.%s%s%s" % (v, a, b, c, pre, build),
                    st.sampled_from(["", "v", "V"]), _NUM, _NUM, _NUM,
                    st.one_of(st.just(""), st.lists(_IDENT, min_size=1, max_size=3).map(lambda p: "-" + ".".join(p))),
                    st.one_of(st.just(""), st.lists(_IDENT, min_size=1, max_size=3).map(lambda p: "+" + ".".join(p))))
_VERSION = st.one_of(st.none(), st.sampled_from(["", " ", "\t"]), _SEMVER)
_NAME = st.from_regex(r"[a-z]([-a-z0-9]{0,28}[a-z0-9])?", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(name=_NAME, version=_VERSION, chart=st.one_of(st.none(), _NAME))
def test_the_usual_chart_label_is_a_valid_label_value_for_every_component(name, version, chart):
    """The family of the ``skyhook-customizations-`` defect: no version, blank version, ``v`` prefix, build metadata,
    with or without a chart name: ``<chart>-<version>`` (``+`` replaced, as Helm's conventions say) is a valid label
    value whenever it fits 63 characters."""
    out = _render(CHART_LABEL, helm_context(name, {}, "ns", chart, version))
    assert not out.endswith("-")
    assert out.startswith((chart or name) + "-")
    if len(out) <= 63:
        assert valid_label_value(out), out


def _params(entry_point: Any, **given_: Any) -> Dict[str, Any]:
    out = {n: option.get("default") for n, option in entry_point.spec.items()}
    out.update(given_)
    return out


def test_manifest_only_tree_renders_labels_the_server_accepts(tmp_path):
    resolved = entry.run_resolve(_params(RECIPE_RESOLVE, criteria=CRITERIA, recipe_dirs=[TREE], include_builtin=False))
    dest = str(tmp_path / "bundle")
    entry.run_render(_params(BUNDLE_RENDER, recipe=resolved["recipe"], dest=dest, deployer="helm", recipe_dirs=[TREE],
                             include_builtin=False))
    objects = {}
    for component in ("gpu-operator", "skyhook-customizations", "dcgm-labels"):
        folder = os.path.join(dest, component, "manifests")
        for name in os.listdir(folder):
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                for doc in yaml.safe_load_all(handle):
                    objects[doc["metadata"]["name"]] = doc
    labels = {name: obj["metadata"]["labels"] for name, obj in objects.items()}
    assert labels["skyhook-tuning"]["helm.sh/chart"] == "skyhook-customizations-0.1.0"
    assert labels["kernel-module-params"]["helm.sh/chart"] == "gpu-operator-25.10.1"
    assert labels["kernel-module-params"]["app.kubernetes.io/version"] == "v25.10.1"
    assert labels["dcgm-labels"]["helm.sh/chart"] == "dcgm-labels-1.2.0_build.7"
    assert objects["dcgm-labels"]["metadata"]["annotations"] == {
        "example.com/chart-type": "application", "example.com/chart-description": "none", "example.com/chart-keywords": "0"}
    for name, values in labels.items():
        for key, value in values.items():
            assert valid_label_value(str(value)), (name, key, value)
