# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The GPU health alert rules (``extensions/prometheus/dsxos-gpu-health.rules.yml``) and their catalog copy.

* ``promtool check rules`` accepts the file and ``promtool test rules`` passes every ``extensions/prometheus/tests``
  file; every alert has a firing and a not-firing case there. promtool comes from Debian's ``prometheus`` package
  (``scripts/system_deps.sh`` installs it); without it these tests fail, saying so.
* Labels: every alert yields node, fault_class, action and severity (and per GPU: gpu, uuid, code where known);
  values come from ``fault_classes.FAULT_CLASSES`` and ``fault_catalog.ACTIONS``/``SEVERITIES``.
* XID alerts list, per fault class, exactly the catalogued XIDs that ``fault_class_of`` puts in that class, each
  with the catalog's action and severity; DCGM-coded alerts agree with their ``DCGM_FR_*`` catalog entry.
* Every DCGM field used is in the shared dcgm-exporter field lists; those outside the exporter's default counter
  set are named in docs/operate-alerts.md.
* The catalog's PrometheusRule template is what ``scripts/gen_prometheus_rule.py`` writes and renders the same groups.
"""
from __future__ import annotations

import glob
import importlib.util
import os
import re
import shutil
import subprocess
from typing import Any, Dict, List, Set

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import load_yaml_file, load_yaml_text
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.component_values import template_environment
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.fault_catalog import (
    ACTIONS, SEVERITIES, XID_CATALOG, lookup_dcgm_error)
from ansible_collections.dsxos.cluster.plugins.module_utils.gpu.fault_classes import FAULT_CLASSES, fault_class_of

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROM_DIR = os.path.join(REPO, "extensions", "prometheus")
RULES = os.path.join(PROM_DIR, "dsxos-gpu-health.rules.yml")
PROMTOOL_TESTS = sorted(glob.glob(os.path.join(PROM_DIR, "tests", "*.test.yml")))
COMPONENT = os.path.join(REPO, "recipes", "components", "gpu-health-rules")
MANIFEST = os.path.join(COMPONENT, "manifests", "gpu-health-rules.yaml.j2")
DOC = os.path.join(REPO, "docs", "operate-alerts.md")
SHARED_DIR = os.environ.get("DSXOS_SHARED_DIR", os.path.join(os.path.dirname(REPO), "shared"))
DCGM_REFERENCE = os.path.join(SHARED_DIR, "reference", "dcgm-exporter")
PROMTOOL_TIMEOUT_S = 180

#: Alerts about a whole node: no gpu/uuid label.
NODE_LEVEL = {"GPUCountBelowCapacity", "GPUTelemetryAbsent", "NodeCertificationFailed"}
#: Alerts without an XID/DCGM code.
NO_CODE = NODE_LEVEL | {"GPUMissing"}
#: Per-GPU alerts that do not carry the exporter's pod mapping (a vanished series has no current pod).
NO_POD = NODE_LEVEL | {"GPUMissing"}
XID_TERM = re.compile(r'DCGM_FI_DEV_XID_ERRORS == (\d+), "dsxos_xid", "(\d+):([a-z_]+):([a-z]+)"')
XID_LABEL_STEPS = ('"code", "$1", "dsxos_xid", "([0-9]+):.*"', '"action", "$1", "dsxos_xid", "[0-9]*:([a-z_]+):.*"',
                   '"severity", "$1", "dsxos_xid", ".*:([a-z]+)"', '"uuid", "$1", "UUID", "(.+)"')


def _rules() -> List[Dict[str, Any]]:
    data = load_yaml_file(RULES)
    return [rule for group in data["groups"] for rule in group["rules"]]


def _alerts() -> Dict[str, Dict[str, Any]]:
    rules = _rules()
    names = [r.get("alert") for r in rules]
    assert None not in names, "only alerting rules are expected (PrometheusRule schema of the catalog tests)"
    assert len(set(names)) == len(names), "duplicate alert names"
    return {r["alert"]: r for r in rules}


def _promtool() -> str:
    path = shutil.which("promtool")
    assert path, ("promtool is not installed: install Debian's prometheus package "
                  "(apt-get install -y --no-install-recommends prometheus, or scripts/system_deps.sh as root)")
    return path


def _run(args: List[str], cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=PROMTOOL_TIMEOUT_S, check=False,
                          stdin=subprocess.DEVNULL)


def _produced_labels(rule: Dict[str, Any]) -> Set[str]:
    """Labels an alert carries: its static labels, the labels its expression sets with label_replace, and the labels
    of its leading aggregation (``by (...)``). The promtool tests check the real label sets."""
    expr = rule["expr"]
    labels = set(rule.get("labels", {}))
    labels |= set(re.findall(r',\s*"([a-z_]+)", "\$1"', expr))
    first_by = re.search(r"\bby \(([^)]*)\)", expr)
    assert first_by, "%s: expected an aggregation by (...)" % rule["alert"]
    labels |= {name.strip() for name in first_by.group(1).split(",")}
    return labels


def _reference_fields() -> Dict[str, bool]:
    """DCGM field names in the shared field lists -> True when enabled in the default counter set."""
    assert os.path.isdir(DCGM_REFERENCE), "dcgm-exporter reference is missing: %s (set DSXOS_SHARED_DIR)" % DCGM_REFERENCE
    fields: Dict[str, bool] = {}
    for file_name in ("default-counters.csv", "dcp-metrics-included.csv"):
        with open(os.path.join(DCGM_REFERENCE, file_name), encoding="utf-8") as handle:
            for line in handle:
                match = re.match(r"^(#\s*)?(DCGM_FI_[A-Z0-9_]+)\s*,", line.strip())
                if match:
                    enabled = match.group(1) is None and file_name == "default-counters.csv"
                    fields[match.group(2)] = fields.get(match.group(2), False) or enabled
    assert fields, "no DCGM field found under %s" % DCGM_REFERENCE
    return fields


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_prometheus_rule", os.path.join(REPO, "scripts", "gen_prometheus_rule.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------- promtool

def test_promtool_check_rules_accepts_the_rule_file():
    result = _run([_promtool(), "check", "rules", RULES], PROM_DIR)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: %d rules found" % len(_rules()) in result.stdout + result.stderr


def test_promtool_unit_tests_pass():
    assert PROMTOOL_TESTS, "no promtool test file under %s/tests" % PROM_DIR
    result = _run([_promtool(), "test", "rules"] + [os.path.basename(p) for p in PROMTOOL_TESTS], os.path.join(PROM_DIR, "tests"))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert output.count("SUCCESS") == len(PROMTOOL_TESTS), output
    assert "FAILED" not in output


def test_promtool_unit_tests_fail_on_a_wrong_expectation(tmp_path):
    """The promtool run above is not vacuous: one changed expected label makes it fail."""
    source = os.path.join(PROM_DIR, "tests", "xid.test.yml")
    with open(source, encoding="utf-8") as handle:
        text = handle.read()
    assert 'code: "48"' in text
    rules_dir = tmp_path / "prometheus"
    (rules_dir / "tests").mkdir(parents=True)
    shutil.copy(RULES, str(rules_dir))
    broken = rules_dir / "tests" / "xid.test.yml"
    broken.write_text(text.replace('code: "48"', 'code: "49"', 1), encoding="utf-8")
    result = _run([_promtool(), "test", "rules", "xid.test.yml"], str(rules_dir / "tests"))
    assert result.returncode != 0 and "FAILED" in result.stdout + result.stderr


def test_every_alert_has_a_firing_and_a_silent_promtool_case():
    firing: Set[str] = set()
    silent: Set[str] = set()
    for path in PROMTOOL_TESTS:
        data = load_yaml_file(path)
        assert data["rule_files"] == ["../dsxos-gpu-health.rules.yml"], path
        for test in data["tests"]:
            for case in test.get("alert_rule_test", []):
                (firing if case.get("exp_alerts") else silent).add(case["alertname"])
    alerts = set(_alerts())
    assert alerts - firing == set(), "alerts without a firing case"
    assert alerts - silent == set(), "alerts without a not-firing case"
    assert (firing | silent) - alerts == set(), "promtool cases for unknown alerts"


# ---------------------------------------------------------------------------- labels

def test_every_alert_has_the_required_labels_and_annotations():
    for name, rule in _alerts().items():
        produced = _produced_labels(rule)
        required = {"node", "fault_class", "action", "severity"}
        if name not in NODE_LEVEL:
            required |= {"gpu", "uuid"}
        if name not in NO_CODE:
            required.add("code")
        if name not in NO_POD:
            required |= {"pod", "namespace", "container"}
        assert required <= produced, (name, required - produced)
        labels = rule["labels"]
        assert labels["fault_class"] in FAULT_CLASSES, name
        if "action" in labels:
            assert labels["action"] in ACTIONS and labels["severity"] in SEVERITIES, name
        annotations = rule["annotations"]
        assert set(annotations) == {"summary", "description"} and all(v.strip() for v in annotations.values()), name


def test_rule_text_has_no_template_markup():
    """Rendered catalog manifests must hold no '{{' (tests/unit/test_catalog.py), so annotations are plain text."""
    with open(RULES, encoding="utf-8") as handle:
        text = handle.read()
    assert "{{" not in text and "{%" not in text and "{#" not in text


def test_xid_alerts_agree_with_the_catalog():
    by_class: Dict[str, Set[int]] = {}
    for code, entry in XID_CATALOG.items():
        by_class.setdefault(fault_class_of(entry), set()).add(code)
    covered: Dict[str, str] = {}
    for name, rule in _alerts().items():
        expr = rule["expr"]
        if "DCGM_FI_DEV_XID_ERRORS" not in expr:
            continue
        fault_class = rule["labels"]["fault_class"]
        assert fault_class not in covered, "fault class %s has two XID alerts (%s, %s)" % (fault_class, covered[fault_class], name)
        covered[fault_class] = name
        assert not {"code", "action", "severity"} & set(rule["labels"]), "%s: XID labels come from the expression" % name
        for step in XID_LABEL_STEPS:
            assert step in expr, (name, step)
        terms = XID_TERM.findall(expr)
        codes = set()
        for value, code, action, severity in terms:
            entry = XID_CATALOG[int(value)]
            assert (value, action, severity) == (code, entry.action, entry.severity), (name, value)
            codes.add(int(value))
        want = sorted(by_class.get(fault_class, set()))
        expected_terms = "\n".join('label_replace(DCGM_FI_DEV_XID_ERRORS == %d, "dsxos_xid", "%d:%s:%s", "", "")'
                                   % (c, c, XID_CATALOG[c].action, XID_CATALOG[c].severity) for c in want)
        assert sorted(codes) == want and len(terms) == len(want), (
            "%s: the XIDs of class %s differ from the catalog; the terms should be:\n%s" % (name, fault_class, expected_terms))
        if fault_class == "unknown":
            chain = re.search(r"DCGM_FI_DEV_XID_ERRORS > 0((?:\s*!= \d+)+)", expr)
            assert chain, "%s: the catch-all for uncatalogued XIDs is missing" % name
            assert {int(c) for c in re.findall(r"\d+", chain.group(1))} == set(XID_CATALOG), (
                "%s: the catch-all must exclude exactly the catalogued XIDs" % name)
    assert set(covered) == set(by_class), "fault classes with catalogued XIDs but no XID alert: %s" % (set(by_class) - set(covered))
    assert covered["fallen-off-bus"] == "GPUFallenOffBus" and "DCGM_FI_DEV_XID_ERRORS == 79," in _alerts()["GPUFallenOffBus"]["expr"]
    for application_xid in by_class["application"]:
        for name in (covered[c] for c in ("fatal-hardware", "memory", "nvlink", "fallen-off-bus", "pcie", "power")):
            assert "DCGM_FI_DEV_XID_ERRORS == %d," % application_xid not in _alerts()[name]["expr"]


def test_dcgm_coded_alerts_agree_with_the_catalog():
    seen = 0
    for name, rule in _alerts().items():
        code = rule["labels"].get("code")
        if code is None:
            continue
        assert code.startswith("DCGM_FR_"), (name, code)
        entry = lookup_dcgm_error(code)
        assert entry.known, (name, code)
        want = {"severity": entry.severity, "action": entry.action, "fault_class": fault_class_of(entry)}
        got = {key: rule["labels"][key] for key in want}
        assert got == want, (name, code)
        seen += 1
    assert seen >= 10


# ---------------------------------------------------------------------------- metric names

def test_every_dcgm_metric_is_a_reference_field_and_non_default_ones_are_documented():
    fields = _reference_fields()
    with open(DOC, encoding="utf-8") as handle:
        doc = handle.read()
    used: Set[str] = set()
    for rule in _rules():
        used |= set(re.findall(r"\bDCGM_FI_[A-Z0-9_]+", rule["expr"]))
    assert "DCGM_FI_DEV_XID_ERRORS" in used and "DCGM_FI_DEV_GPU_TEMP" in used
    assert used - set(fields) == set(), "DCGM fields not in the shared dcgm-exporter field lists"
    for name in sorted(used):
        if not fields[name]:
            assert name in doc, "%s is not a default exporter counter: docs/operate-alerts.md must say to enable it" % name


# ---------------------------------------------------------------------------- catalog copy

def test_catalog_template_is_generated_from_the_rule_file():
    with open(RULES, encoding="utf-8") as handle:
        wanted = _generator().manifest_text(handle.read())
    with open(MANIFEST, encoding="utf-8") as handle:
        current = handle.read()
    assert current == wanted, "%s is out of date: run python3 scripts/gen_prometheus_rule.py" % MANIFEST


def test_generator_check_mode_reports_a_stale_template(tmp_path, capsys):
    generator = _generator()
    for relpath in (generator.RULES_FILE, generator.MANIFEST_FILE):
        os.makedirs(os.path.dirname(str(tmp_path / relpath)), exist_ok=True)
    shutil.copy(RULES, str(tmp_path / generator.RULES_FILE))
    (tmp_path / generator.MANIFEST_FILE).write_text("stale\n", encoding="utf-8")
    assert generator.main(["--check", "--repo", str(tmp_path)]) == 1
    assert generator.main(["--repo", str(tmp_path)]) == 0
    assert generator.main(["--check", "--repo", str(tmp_path)]) == 0
    assert "up to date" in capsys.readouterr().out
    with pytest.raises(generator.RuleFileError):
        generator.manifest_text("---\nfoo: 1\ngroups: []\n")


def test_catalog_template_renders_the_rule_file_groups():
    values = load_yaml_file(os.path.join(COMPONENT, "values.yaml"))
    with open(MANIFEST, encoding="utf-8") as handle:
        template = template_environment().from_string(handle.read())
    release = {"name": "gpu-health-rules", "namespace": "monitoring"}
    rendered = template.render(values=values, release=release)
    docs = [d for d in load_yaml_text(rendered, multi=True) if d]
    assert len(docs) == 1
    rule = docs[0]
    assert rule["kind"] == "PrometheusRule" and rule["metadata"]["namespace"] == "monitoring"
    assert rule["metadata"]["labels"]["role"] == "gpu-health"
    assert rule["spec"]["groups"] == load_yaml_file(RULES)["groups"]
    off = template.render(values=dict(values, enabled=False), release=release)
    assert [d for d in load_yaml_text(off, multi=True) if d] == []
