# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""AWX / AAP content (docs/awx.md): generated surveys, the controller and EDA playbooks, the execution environment.

* the surveys under extensions/awx/surveys/ are what scripts/gen_awx_surveys.py generates from the roles' argument
  specs now, map every type/choice/default as documented, and every default passes AWX's own survey validation rules;
* ``ansible-playbook --syntax-check`` accepts extensions/awx/*.yml with the venv's awx.awx collection on the path
  (an unknown module or option name fails the check);
* ``ansible-builder create`` turns execution-environment.yml into a build context whose Containerfile installs the
  pinned ansible-core/ansible-runner, the Python and system requirements and the collection tarball offline.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SURVEY_DIR = REPO / "extensions" / "awx" / "surveys"
VENV_BIN = Path(sys.executable).parent
SITE = next((REPO / ".venv" / "lib").glob("python3*/site-packages"), None)


def _generator():
    spec = importlib.util.spec_from_file_location("gen_awx_surveys", REPO / "scripts" / "gen_awx_surveys.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()


def _question(template, variable):
    spec = json.loads((SURVEY_DIR / f"{template}.json").read_text(encoding="utf-8"))["spec"]
    return next(q for q in spec if q["variable"] == variable)


@pytest.mark.parametrize("template", sorted(GEN.SURVEYS))
def test_surveys_are_up_to_date_with_the_argument_specs(template):
    path = SURVEY_DIR / f"{template}.json"
    assert path.read_text(encoding="utf-8") == GEN.render(template), f"{path} is stale: run scripts/gen_awx_surveys.py"


def test_check_mode_of_the_generator_reports_stale_files(tmp_path):
    assert GEN.main(["--check"]) == 0
    assert GEN.main(["--check", "--out", str(tmp_path)]) == 1 and list(tmp_path.iterdir()) == []
    assert GEN.main(["--out", str(tmp_path)]) == 0 and sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{t}.json" for t in GEN.SURVEYS)
    assert GEN.main(["--check", "--out", str(tmp_path)]) == 0


def test_types_choices_and_defaults_are_mapped():
    assert _question("certify", "certify_dcgm_level") == {
        "variable": "certify_dcgm_level", "question_name": "certify_dcgm_level", "required": False, "type": "multiplechoice",
        "choices": ["1", "2", "3", "4"], "default": "1", "question_description": _question("certify", "certify_dcgm_level")["question_description"]}
    assert (_question("certify", "certify_renew_fraction")["type"], _question("certify", "certify_renew_fraction")["default"]) == ("float", 0.5)
    assert (_question("certify", "certify_timeout_s")["type"], _question("certify", "certify_timeout_s")["default"]) == ("integer", 1800)
    formats = _question("certify", "certify_report_formats")
    assert formats["type"] == "multiselect" and formats["default"] == "json\njunit\nmarkdown\nhtml" and "html" in formats["choices"]
    assert _question("remediate", "sentinel_destructive") | {"question_description": ""} == {
        "variable": "sentinel_destructive", "question_name": "sentinel_destructive", "required": False, "type": "multiplechoice",
        "choices": ["true", "false"], "default": "false", "question_description": ""}
    nodes = _question("remediate", "sentinel_nodes")
    assert nodes["type"] == "text" and "default" not in nodes and nodes["question_description"].endswith("(comma-separated)")
    assert (nodes["min"], nodes["max"]) == (0, 1024)
    deployers = _question("configure", "configure_deployers")
    assert deployers["type"] == "multiselect" and deployers["choices"] == ["helm", "argocd", "flux"] and deployers["default"] == "helm"
    assert _question("configure", "configure_output_dir")["default"] == "~/dsxos-bundles"
    reason = _question("remediate", "sentinel_reason")
    assert "O(" not in json.dumps(reason) and "sentinel_nodes" in reason["question_description"]
    assert [q["variable"] for q in json.loads((SURVEY_DIR / "status.json").read_text())["spec"]] == ["sentinel_status_dir", "sentinel_status_window_s"]


def test_every_option_is_asked_or_named_as_skipped():
    for template, (role, wanted) in GEN.SURVEYS.items():
        options = GEN.load_spec(role)
        survey = json.loads((SURVEY_DIR / f"{template}.json").read_text(encoding="utf-8"))
        asked = [q["variable"] for q in survey["spec"]]
        skipped = re.search(r"Not asked \(pass as extra variables\): (.*)\.$", survey["description"])
        skipped_names = skipped.group(1).split(", ") if skipped else []
        assert sorted(asked + skipped_names) == sorted(options if wanted is None else wanted), template
        for name in skipped_names:
            assert options[name].get("type") in ("dict", "raw") or options[name].get("elements") == "raw", (template, name)
        assert "sentinel_mode" not in asked  # fixed by each playbook


def _awx_validation_errors(question, value):
    """AWX's survey element validation (awx/main/models/mixins.py _survey_element_validation), for a default."""
    kind = question["type"]
    if kind in ("text", "textarea", "password"):
        return [] if isinstance(value, str) and question.get("min", 0) <= len(value) <= question.get("max", 10 ** 9) else ["text"]
    if kind == "integer":
        return [] if type(value) is int else ["integer"]  # pylint: disable=unidiomatic-typecheck
    if kind == "float":
        return [] if type(value) in (int, float) else ["float"]  # pylint: disable=unidiomatic-typecheck
    if kind == "multiplechoice":
        return [] if value in question["choices"] else ["choice"]
    if kind == "multiselect":  # the default is newline-separated text in the spec; AWX's UI sends a list
        return [] if all(v in question["choices"] for v in value.splitlines()) else ["multiselect"]
    return ["unknown type " + kind]


def test_every_default_passes_awx_validation_and_types_are_known():
    for template in GEN.SURVEYS:
        survey = json.loads((SURVEY_DIR / f"{template}.json").read_text(encoding="utf-8"))
        assert set(survey) == {"name", "description", "spec"} and survey["name"] == GEN.TITLES[template]
        variables = [q["variable"] for q in survey["spec"]]
        assert len(variables) == len(set(variables)), template
        for question in survey["spec"]:
            assert question["type"] in ("text", "password", "integer", "float", "multiplechoice", "multiselect"), question
            if "default" in question:
                assert question["default"] not in ("", None) and _awx_validation_errors(question, question["default"]) == [], (template, question)


def _ansible_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_COLLECTIONS_PATH=str(SITE), ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="False", ANSIBLE_LOCALHOST_WARNING="False",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="False", ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_NOCOLOR="1")
    return env


@pytest.mark.parametrize("playbook", ["controller.yml", "eda_activation.yml"])
def test_awx_playbooks_pass_syntax_check_with_awx_awx(playbook, tmp_path):
    assert SITE is not None and (SITE / "ansible_collections" / "awx" / "awx").is_dir(), "awx.awx comes with the ansible bundle in .venv"
    proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), "--syntax-check", str(REPO / "extensions" / "awx" / playbook)],
                          env=_ansible_env(tmp_path), capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING" not in proc.stderr, proc.stderr


def test_syntax_check_catches_an_unknown_awx_module(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n    - name: X\n      awx.awx.job_templatez: {name: x}\n", encoding="utf-8")
    proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), "--syntax-check", str(bad)], env=_ansible_env(tmp_path),
                          capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert proc.returncode != 0 and "job_templatez" in proc.stdout + proc.stderr


def test_controller_playbook_wires_every_survey_and_the_workflow():
    play = yaml.safe_load((REPO / "extensions" / "awx" / "controller.yml").read_text(encoding="utf-8"))[0]
    templates = play["vars"]["dsxos_awx_job_templates"]
    assert sorted(t["survey"] for t in templates) == sorted(GEN.SURVEYS)
    for template in templates:
        assert (REPO / template["playbook"]).is_file(), template
        assert template["name"] == GEN.TITLES[template["survey"]]
    workflow = next(t for t in play["tasks"] if "awx.awx.workflow_job_template" in t)["awx.awx.workflow_job_template"]
    nodes = {n["identifier"]: n for n in workflow["workflow_nodes"]}
    assert nodes["remediate"]["related"]["success_nodes"] == [{"identifier": "recertify"}]
    assert nodes["remediate"]["unified_job_template"]["name"] == GEN.TITLES["remediate"]
    rulebook = yaml.safe_load((REPO / "extensions" / "eda" / "rulebooks" / "gpu_sentinel_controller.yml").read_text(encoding="utf-8"))[0]
    names = [[a["run_job_template"]["name"] for a in r.get("actions") or [r["action"]] if "run_job_template" in a] for r in rulebook["rules"]]
    assert all("dsxos GPU sentinel remediate" in name for name in names[0]) and len(names[0]) == 2
    assert ["dsxos GPU sentinel release" in name for name in names[1]] == [True]
    # the release sweep: the release template itself, with no events (a sweep only), on a schedule
    schedule = next(t for t in play["tasks"] if "awx.awx.schedule" in t)
    assert "selectattr('survey', 'equalto', 'release')" in schedule["awx.awx.schedule"]["unified_job_template"]
    assert [t["name"] for t in templates if t["survey"] == "release"] == [GEN.TITLES["release"]]
    assert schedule["awx.awx.schedule"]["extra_data"] == {"sentinel_events": [], "sentinel_release_sweep": True}
    assert "RRULE:FREQ=MINUTELY;INTERVAL=15" in play["vars"]["dsxos_awx_release_sweep_rrule"]


def _pin(path, package):
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lower().startswith(package + "=="):
            return line.split("==", 1)[1].strip()
    raise AssertionError(f"{package} is not pinned in {path}")


def test_ansible_builder_creates_the_build_context(tmp_path):
    builder = VENV_BIN / "ansible-builder"
    assert builder.is_file(), "ansible-builder is pinned in requirements-test.txt (make venv)"
    galaxy = yaml.safe_load((REPO / "galaxy.yml").read_text(encoding="utf-8"))
    tarball = f"{galaxy['namespace']}-{galaxy['name']}-{galaxy['version']}.tar.gz"
    work = tmp_path / "ee"
    (work / ".build" / "dist").mkdir(parents=True)
    for name in ("execution-environment.yml", "requirements.txt", "bindep.txt"):
        shutil.copy(REPO / name, work / name)
    # what `make build` writes (the tarball's content does not matter to the build context)
    (work / ".build" / "dist" / tarball).write_bytes(b"placeholder for the collection tarball")
    context = tmp_path / "context"
    proc = subprocess.run([str(builder), "create", "--file", str(work / "execution-environment.yml"), "--context", str(context),
                           "--output-filename", "Containerfile"], capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No matches" not in proc.stdout + proc.stderr
    containerfile = (context / "Containerfile").read_text(encoding="utf-8")
    core, runner = _pin(REPO / "requirements.txt", "ansible-core"), _pin(REPO / "requirements-test.txt", "ansible-runner")
    assert f'ARG ANSIBLE_INSTALL_REFS="ansible-core=={core} ansible-runner=={runner}"' in containerfile
    assert 'ARG PYCMD="/usr/bin/python3.11"' in containerfile and 'ARG EE_BASE_IMAGE="quay.io/centos/centos:stream9"' in containerfile
    assert "--user-pip=requirements.txt --user-bindep=bindep.txt" in containerfile
    final = containerfile.split("# Final build stage", 1)[1]
    assert "COPY _build/collection/ /tmp/dsxos-collection/" in final
    assert "ansible-galaxy collection install --offline --no-deps -p /usr/share/ansible/collections /tmp/dsxos-collection/dsxos-cluster-*.tar.gz" in final
    assert final.index("install-from-bindep") < final.index("ansible-galaxy collection install")
    assert (context / "_build" / "collection" / tarball).is_file()
    assert (context / "_build" / "requirements.txt").read_text() == (REPO / "requirements.txt").read_text()
    assert "openssh-clients [platform:rpm]" in (context / "_build" / "bindep.txt").read_text()
    assert "Galaxy build stage" not in containerfile  # no Galaxy: the collection comes from the local tarball


def test_the_decision_environment_builds_a_context_with_the_rulebook_java_and_the_collection(tmp_path):
    """extensions/eda/decision-environment.yml (the image eda_activation.yml registers as dsxos-de): ansible-rulebook
    and its rule engine pinned as in the test requirements, Java 17, the collection from the local tarball."""
    builder = VENV_BIN / "ansible-builder"
    galaxy = yaml.safe_load((REPO / "galaxy.yml").read_text(encoding="utf-8"))
    tarball = f"{galaxy['namespace']}-{galaxy['name']}-{galaxy['version']}.tar.gz"
    work = tmp_path / "repo"
    (work / ".build" / "dist").mkdir(parents=True)
    shutil.copytree(REPO / "extensions" / "eda", work / "extensions" / "eda", ignore=shutil.ignore_patterns("__pycache__"))
    (work / ".build" / "dist" / tarball).write_bytes(b"placeholder for the collection tarball")
    context = tmp_path / "context"
    proc = subprocess.run([str(builder), "create", "--file", str(work / "extensions" / "eda" / "decision-environment.yml"),
                           "--context", str(context), "--output-filename", "Containerfile"],
                          capture_output=True, text=True, timeout=120, check=False, cwd=work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    containerfile = (context / "Containerfile").read_text(encoding="utf-8")
    final = containerfile.split("# Final build stage", 1)[1]
    assert "ansible-galaxy collection install --offline --no-deps" in final and "RUN ansible-rulebook --version" in final
    assert (context / "_build" / "collection" / tarball).is_file()
    assert "java-17-openjdk-headless [platform:rpm]" in (context / "_build" / "bindep.txt").read_text(encoding="utf-8")
    pins = [line for line in (context / "_build" / "requirements.txt").read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")]
    assert {p.split("==")[0].lower() for p in pins} >= {"ansible-rulebook", "drools_jpy", "aiohttp", "prometheus_client"}
    for pin in pins:
        package, version = pin.split("==")
        source = REPO / ("requirements.txt" if package.lower() in ("aiohttp", "prometheus_client", "pyyaml") else "requirements-test.txt")
        assert _pin(source, package.lower()) == version, (pin, source)
    de = yaml.safe_load((REPO / "extensions" / "eda" / "decision-environment.yml").read_text(encoding="utf-8"))
    ee = yaml.safe_load((REPO / "execution-environment.yml").read_text(encoding="utf-8"))
    assert de["dependencies"]["ansible_core"] == ee["dependencies"]["ansible_core"]
    assert de["dependencies"]["ansible_runner"] == ee["dependencies"]["ansible_runner"]
    activation = (REPO / "extensions" / "awx" / "eda_activation.yml").read_text(encoding="utf-8")
    assert "dsxos_eda_decision_environment: dsxos-de" in activation and "dsxos-de" in de["options"]["tags"][0]
