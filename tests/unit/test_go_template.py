# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The Go text/template renderer (against Go's own golden outputs), its errors, and the bounds of both engines."""
from __future__ import annotations

import glob
import json
import os
import re
import time

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from recipe_tree import RecipeTree, helm_entry

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.component_values import (
    build_component_bundles, render_manifest)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.go_template import (
    compile_go_template, helm_context, render_go_template)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.go_template_funcs import to_yaml
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_resolver import resolve
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.render_limits import RenderLimits

CASES = os.path.join(os.path.dirname(__file__), "fixtures", "go_templates", "cases")
CASE_FILES = sorted(glob.glob(os.path.join(CASES, "*.tmpl")))
SMALL = RenderLimits(time_s=5.0, output_bytes=10000, iterations=1000, depth=20)


def _render(source, data=None, limits=None, path="m.yaml"):
    return render_go_template(compile_go_template(source, path, limits), {} if data is None else data, limits)


def _data(stem):
    path = stem + ".json" if os.path.exists(stem + ".json") else os.path.join(CASES, "data.json")
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def test_every_case_has_a_golden_file():
    assert len(CASE_FILES) >= 25
    for path in CASE_FILES:
        stem = path[:-len(".tmpl")]
        assert os.path.exists(stem + ".out") != os.path.exists(stem + ".err"), stem


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: os.path.basename(p)[:-5])
def test_matches_go_golden(path):
    stem = path[:-len(".tmpl")]
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    if os.path.exists(stem + ".out"):
        with open(stem + ".out", encoding="utf-8") as handle:
            assert _render(source, _data(stem), path=path) == handle.read()
        return
    with open(stem + ".err", encoding="utf-8") as handle:
        go_error = handle.read().strip()
    with pytest.raises(RenderError) as err:
        _render(source, _data(stem), path=path)
    go_lines = [int(n) for n in re.findall(r"\.tmpl:(\d+)", go_error)]
    assert err.value.file == path and err.value.line in go_lines and err.value.column
    reason = go_error.split(">: ", 1)[1] if ">: " in go_error else go_error.rsplit(": ", 1)[1]
    assert reason.split(" started at")[0] in err.value.message


# ---------------------------------------------------------------------------- errors name file, line, column, construct

@pytest.mark.parametrize("source,line,column,words", [
    ("a\nb: {{ nosuch 1 }}\n", 2, 7, ['function "nosuch" not defined', "<nosuch>", "syntax error"]),
    ("x\n  {{ if .a }}\n", 2, 3, ["{{if}} has no {{end}}", "<if>"]),
    ("{{ .a", 1, 1, ["unclosed action"]),
    ("{{ end }}", 1, 1, ["unexpected {{end}}"]),
    ("{{/* open", 1, 1, ["unclosed comment"]),
    ("{{ $nope }}", 1, 4, ['undefined variable "$nope"']),
    ("{{ 1x }}", 1, 4, ["bad number syntax"]),
    ("{{ \"open }}", 1, 4, ["unterminated quoted string"]),
    ("{{ break }}", 1, 1, ["{{break}} outside {{range}}"]),
    ("a\n {{ required \"give x\" .x }}", 2, 5, ["error calling required: give x", "<required>"]),
    ("{{ index (list 1 2) 5 }}", 1, 4, ["index out of range: 5", "<index>"]),
    ("{{ eq 1 \"1\" }}", 1, 4, ["incompatible types for comparison: int and string", "<eq>"]),
    ("{{ lt (list) 1 }}", 1, 4, ["invalid type for comparison", "<lt>"]),
    ("{{ .a.b 1 }}", 1, 4, ["b is not a method but has arguments"]),
    ("{{ \"x\" 1 }}", 1, 4, ["can't give argument to non-function"]),
    ("{{ .missing.field }}", 1, 4, ["nil pointer evaluating interface {}.field"]),
    ("{{ nindent \"2\" \"x\" }}", 1, 12, ["expected integer; found", "<nindent>"]),
    ("{{ template \"none\" }}", 1, 1, ['no template "none"', "<template none>"]),
    ("{{ range 1.5 }}{{ end }}", 1, 10, ["range can't iterate over 1.5"]),
    ("{{ fail \"stop here\" }}", 1, 4, ["error calling fail: stop here"]),
])
def test_errors_name_file_line_column_and_construct(source, line, column, words):
    with pytest.raises(RenderError) as err:
        _render(source, {"a": {"b": 1}}, path="/recipes/m.yaml")
    assert (err.value.file, err.value.line, err.value.column) == ("/recipes/m.yaml", line, column), str(err.value)
    assert "/recipes/m.yaml:%d:%d" % (line, column) in str(err.value)
    for word in words:
        assert word in str(err.value)
    assert err.value.to_dict()["column"] == column


def test_helm_context_and_aicr_values_layout():
    data = helm_context("gpu-operator", {"a": 1}, "gpu-operator", "gpu-operator", "v25.10.1")
    out = _render('{{ index .Values "gpu-operator" "a" }} {{ .Release.Name }} {{ .Release.Namespace }} '
                  '{{ .Release.Service }} {{ .Release.IsInstall }} {{ .Chart.Name }} {{ .Chart.Version }}', data)
    assert out == "1 gpu-operator gpu-operator Helm true gpu-operator 25.10.1"


def test_engine_by_file_name_in_bundles(tmp_path):
    tree = RecipeTree(tmp_path)
    tree.registry([helm_entry("tuning")])
    tree.manifest("tuning", "go.yaml", "name: {{ (index .Values \"tuning\").name | upper }}\nns: {{ .Release.Namespace }}\n"
                                       "chart: {{ .Chart.Name }}-{{ .Chart.Version }}\n{{- /* gone */}}\n")
    tree.manifest("tuning", "jinja.yaml.j2", "name: {{ values.name }}\n{# gone #}\n")
    tree.base(component_refs=[{"name": "tuning", "namespace": "ns1", "overrides": {"name": "x"},
                               "manifestFiles": ["components/tuning/manifests/go.yaml",
                                                 "components/tuning/manifests/jinja.yaml.j2"]}])
    store = RecipeStore.load([str(tmp_path)], include_builtin=False)
    (bundle,) = build_component_bundles(store, resolve(store, {}))
    assert bundle.manifests["go.yaml"].startswith("name: X\nns: ns1\nchart: ")
    assert bundle.manifests["jinja.yaml"] == "name: x\n"


# ---------------------------------------------------------------------------- properties

_WS = st.text(alphabet=" \t\r\nab", max_size=6)


@settings(max_examples=150, deadline=None)
@given(before=_WS, after=_WS, cond=st.booleans(), left=st.booleans(), right=st.booleans(), body=_WS)
def test_trim_markers_follow_go_rule(before, after, cond, left, right, body):
    source = before + ("{{- " if left else "{{ ") + ("true" if cond else "false") + (" -}}" if right else " }}") + \
        body + "{{ end }}" + after
    source = source.replace("{{ true", "{{ if true").replace("{{- true", "{{- if true")
    source = source.replace("{{ false", "{{ if false").replace("{{- false", "{{- if false")
    spaces = " \t\r\n"
    expected = (before.rstrip(spaces) if left else before) + ((body.lstrip(spaces) if right else body) if cond else "") + after
    assert _render(source) == expected


_KEYS = st.text(min_size=1, max_size=8)
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2 ** 40, max_value=2 ** 40),
                     st.floats(min_value=0.0001, max_value=99999, allow_nan=False), st.text(max_size=12),
                     st.sampled_from(["true", "no", "1.5", "0x1F", "- a", "a: b", "#c", "x #y", " lead", "trail ",
                                      "multi\nline", "multi\nline\n", "2001-12-14", "~", "", "'q'", "\"dq\"", "tab\tx"]))
_DATA = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(_KEYS, inner, max_size=4)), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(data=_DATA)
def test_to_yaml_round_trips_through_a_yaml_parser(data):
    text = to_yaml(data)
    assert not text.endswith("\n")
    # Helm trims toYaml's final newline; a manifest puts one back after it (a literal block needs it)
    assert yaml.safe_load(text + "\n") == data


def test_to_yaml_layout_like_sigs_yaml():
    assert to_yaml({"b": [1, {"w": None, "v": "s"}], "a": {}, "c": "multi\nline"}) == \
        "a: {}\nb:\n- 1\n- v: s\n  w: null\nc: |-\n  multi\n  line"
    assert to_yaml({"k": "true", "num": "12", "e": ""}) == 'e: ""\nk: "true"\nnum: "12"'
    assert to_yaml({"y": 1, "on": 2}) == '"on": 2\n"y": 1'  # YAML 1.1 booleans are quoted keys
    assert to_yaml(None) == "null" and to_yaml([]) == "[]" and to_yaml(1e21) == "1e+21"


# ---------------------------------------------------------------------------- bounds: Go templates

@pytest.mark.parametrize("source,words", [
    ("{{ range 100000 }}{{ end }}", "1000 loop iterations"),
    ("{{ range 30 }}{{ range 30 }}{{ range 30 }}{{ end }}{{ end }}{{ end }}", "1000 loop iterations"),
    ("{{ range 500 }}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{{ end }}", "output exceeds the limit of 10000 bytes"),
    ("{{ $s := \"xxxxxxxxxxxxxxxx\" }}{{ range 20 }}{{ $s = printf \"%s%s\" $s $s }}{{ end }}", "output limit"),
    ("{{ printf \"%*d\" 100000000 1 }}", "output limit"),
    ("{{ define \"r\" }}{{ template \"r\" . }}{{ end }}{{ template \"r\" 1 }}", "exceeded maximum template depth (20)"),
    ("{{ define \"r\" }}{{ include \"r\" . }}{{ end }}{{ include \"r\" 1 }}", "exceeded maximum template depth (20)"),
    ("{{ if 1 }}" * 30 + "{{ end }}" * 30, "nesting deeper than the limit of 20"),
    ("{{ " + "(" * 30 + "1" + ")" * 30 + " }}", "nesting deeper than the limit of 20"),
])
def test_go_bounds(source, words):
    start = time.monotonic()
    with pytest.raises(RenderError) as err:
        _render(source, limits=SMALL, path="/r/bound.yaml")
    assert words in str(err.value) and "/r/bound.yaml" in str(err.value)
    assert time.monotonic() - start < 5


def test_go_time_limit():
    limits = RenderLimits(time_s=0.2, output_bytes=10 ** 9, iterations=10 ** 9)
    start = time.monotonic()
    with pytest.raises(RenderError) as err:
        _render("{{ range 100000 }}{{ range 100000 }}{{ end }}{{ end }}", limits=limits, path="/r/slow.yaml")
    assert "longer than the limit of 0.2 s" in str(err.value) and "/r/slow.yaml" in str(err.value)
    assert time.monotonic() - start < 5


def test_deep_data_is_an_error_not_a_recursion_error():
    deep = {}
    for level in range(5000):
        deep = {"a": deep, "level": level}
    for source in ("{{ toYaml . }}", "{{ toJson . }}", "{{ . }}"):
        with pytest.raises(RenderError) as err:
            _render(source, deep, path="/r/deep.yaml")
        assert "/r/deep.yaml" in str(err.value) and "deep" in str(err.value)


def test_default_limits_render_normal_templates():
    assert _render("{{ range 1000 }}x{{ end }}") == "x" * 1000


# ---------------------------------------------------------------------------- bounds: Jinja2

def _jinja(tmp_path, template, limits=SMALL, values=None):
    tree = RecipeTree(tmp_path)
    tree.registry([helm_entry("tuning")])
    tree.manifest("tuning", "t.yaml.j2", template)
    store = RecipeStore.load([str(tmp_path)], include_builtin=False)
    variables = {"values": {"a": [0], 1: {2}} if values is None else values, "release": {"name": "tuning", "namespace": "n"},
                 "chart": {}, "component": "tuning",
                 "criteria": {}}
    return tree, lambda: render_manifest(store, "components/tuning/manifests/t.yaml.j2", variables, "origin", limits)


@pytest.mark.parametrize("template,words", [
    ("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}", "1000 loop iterations"),
    ("{% for c in 'x' * 5000 %}{% for d in 'y' * 5000 %}{% endfor %}{% endfor %}", "1000 loop iterations"),
    ("{{ 9 ** (9 ** 9) }}", "larger than the output limit"),
    ("{{ 'a' * 10 ** 12 }}", "exceeds the output limit"),
    ("{{ [1] * 10 ** 12 }}", "exceeds the output limit"),
    ("{% for i in range(2000) %}x{% endfor %}", "1000 loop iterations"),
    ("{% for i in range(500) %}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{% endfor %}", "output exceeds the limit of 10000 bytes"),
    ("{% macro r(n) %}{{ r(n) }}{% endmacro %}{{ r(1) }}", "nested too deeply"),
    ("{% if 1 %}" * 3000 + "{% endif %}" * 3000, "nested too deeply"),
    ("{{ lipsum(1000000) }}", "lipsum"),
    ("{{ 'x'|center(20000000000) }}", "larger than the output limit"),
    ("{{ '%20000000000d' % 1 }}", "larger than the output limit"),
    ("{{ '%.20000000000f' % 1 }}", "larger than the output limit"),
    ("{{ '%*d' % (20000000000, 1) }}", "larger than the output limit"),
    ("{{ '%20000000000d'|format(1) }}", "larger than the output limit"),
    ("{{ '{:>20000000000}'.format(1) }}", "larger than the output limit"),
    ("{{ '{0:>{1}}'.format(1, 20000000000) }}", "nested replacement fields"),
    ("{{ '{:>20000000000}'.format_map({}) }}", "larger than the output limit"),
    ("{{ ('x\n' * 4000)|indent(20000, true) }}", "larger than the output limit"),
    ("{{ 'x'|indent(20000000000, true) }}", "larger than the output limit"),
    ("{{ 'x'|wordwrap(20000000000) }}", "larger than the output limit"),
    ("{{ ('x ' * 4000)|wordwrap(1, wrapstring='y' * 5000) }}", "larger than the output limit"),
    ("{{ 'x'|truncate(20000000000) }}", "larger than the output limit"),
    ("{{ ('x' * 5000)|replace('x', 'y' * 5000) }}", "larger than the output limit"),
    ("{{ values.keys() | to_yaml }}", "to_yaml cannot serialize"),
    ("{{ values | to_json }}", "to_json cannot serialize"),
    ("{{ values.update({'a': 1}) }}", "unsafe"),
    ("{{ values.a.append(1) }}", "unsafe"),
])
def test_jinja_bounds(tmp_path, template, words):
    tree, run = _jinja(tmp_path, template)
    start = time.monotonic()
    with pytest.raises(RenderError) as err:
        run()
    assert words in str(err.value), str(err.value)
    assert tree.path("components/tuning/manifests/t.yaml.j2") in str(err.value)
    assert time.monotonic() - start < 10


def test_jinja_time_limit(tmp_path):
    tree, run = _jinja(tmp_path, "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}",
                       RenderLimits(time_s=0.2, iterations=10 ** 12))
    with pytest.raises(RenderError) as err:
        run()
    assert "longer than the limit of 0.2 s" in str(err.value)
    assert tree.path("components/tuning/manifests/t.yaml.j2") in str(err.value)


def test_jinja_within_limits_still_renders(tmp_path):
    _tree, run = _jinja(tmp_path, "{% for i in range(3) %}{{ i * 2 }}{{ 2 ** 3 }}{% endfor %}{{ 'ab' * 2 }}")
    assert run() == "082848abab"


def test_jinja_bounded_filters_and_formats_still_render(tmp_path):
    source = ("{{ 'a'|center(5) }}|{{ 'a\nb'|indent(2) }}|{{ 'aa bb'|wordwrap(2) }}|{{ 'abcdefgh'|truncate(5, leeway=0) }}|"
              "{{ '%3d'|format(7) }}|{{ '%-4s' % 'x' }}|{{ '{:>3}'.format(1) }}|{{ 'aXa'|replace('a', 'bb') }}|{{ 7 % 4 }}|"
              "{{ values.a | to_yaml }}|{{ values.a | to_json }}")
    _tree, run = _jinja(tmp_path, source, values={"a": [1]})
    assert run() == "  a  |a\n  b|aa\nbb|ab...|  7|x   |  1|bbXbb|3|- 1|[1]"


# ---------------------------------------------------------------------------- Go: sizes checked before building, keys, join, printf

@pytest.mark.parametrize("source", [
    "{{ indent 20000000000 \"x\" }}",
    "{{ nindent 20000000000 \"x\" }}",
    "{{ \"x\\nx\\nx\\nx\" | indent 4000 }}",
    "{{ $s := printf \"%5000s\" \"x\" }}{{ replace \" \" $s $s }}",
    "{{ $s := printf \"%5000s\" \"\" }}{{ replace \"\" \"yyy\" $s }}",
])
def test_go_indent_and_replace_refused_before_building(source):
    start = time.monotonic()
    with pytest.raises(RenderError) as err:
        _render(source, limits=SMALL, path="/r/big.yaml")
    assert "over the output limit" in str(err.value) and "/r/big.yaml" in str(err.value)
    assert time.monotonic() - start < 5


def test_go_indent_and_replace_within_limits():
    assert _render("{{ indent 2 \"a\\nb\" }}|{{ nindent 1 \"a\" }}|{{ replace \"a\" \"bb\" \"aXa\" }}", limits=SMALL) == "  a\n  b|\n a|bbXbb"


def test_helm_context_keys_become_strings():
    values = {1: "one", "nested": {False: "f", 2.5: ["x", {3: "y"}]}}
    data = helm_context("c", values, "ns", None, None)
    assert data["Values"]["c"] == {"1": "one", "nested": {"false": "f", "2.5": ["x", {"3": "y"}]}}
    assert values[1] == "one" and 3 in values["nested"][2.5][1]  # the caller's values are not changed
    assert _render("{{ index .Values.c \"1\" }} {{ range $k, $v := .Values.c.nested }}{{ $k }};{{ end }}", data) == "one 2.5;false;"
    shared = {"a": 1}
    cyclic = {"s": shared, "t": shared, "l": []}
    cyclic["l"].append(cyclic)
    copied = helm_context("c", cyclic, None, None, None)["Values"]["c"]
    assert copied["s"] is copied["t"] and copied["l"][0] is copied


def test_go_unexpected_exception_is_a_render_error():
    with pytest.raises(RenderError) as err:
        _render("{{ range $k, $v := . }}{{ $k }}{{ end }}", {1: "a", "b": 2}, path="/r/keys.yaml")
    assert "/r/keys.yaml" in str(err.value)


@pytest.mark.parametrize("source,expected", [
    ("{{ join \",\" (list \"a\" nil 1 true) }}", "a,1,true"),
    ("{{ join \",\" \"abc\" }}", "abc"),
    ("{{ join \",\" 7 }}", "7"),
    ("{{ join \",\" nil }}", ""),
    ("{{ join \",\" (dict \"a\" 1) }}", "map[a:1]"),
])
def test_go_join_strslice(source, expected):
    assert _render(source) == expected


@pytest.mark.parametrize("source,expected", [
    ("{{ printf \"%[2]d %[1]d\" 11 22 }}", "22 11"),
    ("{{ printf \"%[3]*.[2]*[1]f\" 12.0 2 6 }}", " 12.00"),
    ("{{ printf \"%d %d %#[1]x %#x\" 16 17 }}", "16 17 0x10 0x11"),
    ("{{ printf \"%[1]s %s\" \"a\" \"b\" }}", "a b"),
    ("{{ printf \"%[1]s\" \"a\" \"b\" }}", "a"),
    ("{{ printf \"%[5]d\" 1 2 }}", "%!d(BADINDEX)"),
    ("{{ printf \"%[0]d\" 1 }}", "%!d(BADINDEX)"),
    ("{{ printf \"%[x]d\" 1 }}", "%!d(BADINDEX)"),
    ("{{ printf \"%[1]5d\" 1 }}", "%!d(BADINDEX)"),
    ("{{ printf \"%-[1]5s|\" \"a\" }}", "%!s(BADINDEX)|"),
    ("{{ printf \"%[1]*d\" 100000000 1 }}", None),
])
def test_go_printf_explicit_argument_indexes(source, expected):
    if expected is None:
        with pytest.raises(RenderError):
            _render(source, limits=SMALL)
    else:
        assert _render(source) == expected
