# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Helm deployer: layout, scripts (syntax, dry-run order, real runs against stub helm/kubectl,
retries, quoting of hostile names) and rendered objects."""
from __future__ import annotations

import os
import shlex
import subprocess

import pytest
import yaml

from ansible_collections.dsxos.cluster.plugins.module_utils.configure import deployer_helm
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_render import render_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_writer import write_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import ComponentBundle

from manifest_validation import sample_components, sample_result, validate_bundle

HOSTILE = "evil'; touch pwned #$(touch pwned2) `touch pwned3` \"x\""
JETSTACK = deployer_helm.repo_alias("https://charts.jetstack.io")
NGC = deployer_helm.repo_alias("https://helm.ngc.nvidia.com/nvidia")

STUB = r"""#!/usr/bin/env bash
{ printf '%s\0' "$(basename "$0")" "$@"; printf '\036'; } >> "$STUB_LOG"
if [ "$(basename "$0") ${1:-}" = "${STUB_FAIL_CMD:-none}" ]; then
  n=$(cat "$STUB_LOG.count" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "$STUB_LOG.count"
  [ "$n" -le "${STUB_FAIL_TIMES:-0}" ] && exit 3
fi
if [ "$(basename "$0") ${1:-}" = "helm status" ]; then exit "${STUB_STATUS_RC:-0}"; fi
exit 0
"""


def _expected_deploy(timeout="10m"):
    return [
        ["helm", "repo", "add", JETSTACK, "https://charts.jetstack.io", "--force-update"],
        ["helm", "upgrade", "--install", "cert-manager", JETSTACK + "/cert-manager", "--version", "v1.17.2",
         "--namespace", "cert-manager", "--create-namespace", "-f", "cert-manager/values.yaml", "--wait",
         "--timeout", timeout],
        ["helm", "repo", "add", NGC, "https://helm.ngc.nvidia.com/nvidia", "--force-update"],
        ["helm", "upgrade", "--install", "gpu-operator", NGC + "/gpu-operator", "--version", "v25.3.0",
         "--namespace", "gpu-operator", "--create-namespace", "-f", "gpu-operator/values.yaml", "--wait",
         "--timeout", timeout],
        ["kubectl", "apply", "-n", "gpu-operator", "-f", "gpu-operator/manifests/"],
        ["helm", "upgrade", "--install", "kai-scheduler", "oci://ghcr.io/nvidia/kai-scheduler/kai-scheduler",
         "--version", "v0.9.3", "--namespace", "kai-scheduler", "--create-namespace", "-f",
         "kai-scheduler/values.yaml", "--wait", "--timeout", timeout],
        ["kubectl", "apply", "-f", "nic-tuning/namespace.yaml"],
        ["kubectl", "apply", "-n", "network-tuning", "-f", "nic-tuning/manifests/"],
        ["kubectl", "apply", "-k", "https://github.com/example/gpu-kustomize//deploy/overlays/gpu?ref=v1.2.0"],
    ]


def _expected_undeploy(timeout="10m"):
    return [
        ["kubectl", "delete", "-k", "https://github.com/example/gpu-kustomize//deploy/overlays/gpu?ref=v1.2.0",
         "--ignore-not-found"],
        ["kubectl", "delete", "-n", "network-tuning", "-f", "nic-tuning/manifests/", "--ignore-not-found"],
        ["helm", "uninstall", "kai-scheduler", "--namespace", "kai-scheduler", "--wait", "--timeout", timeout],
        ["kubectl", "delete", "-n", "gpu-operator", "-f", "gpu-operator/manifests/", "--ignore-not-found"],
        ["helm", "uninstall", "gpu-operator", "--namespace", "gpu-operator", "--wait", "--timeout", timeout],
        ["helm", "uninstall", "cert-manager", "--namespace", "cert-manager", "--wait", "--timeout", timeout],
    ]


def _write(tmp_path, components=None, options=None):
    comps = components if components is not None else sample_components()
    files = render_bundle(sample_result(comps), comps, "helm", options or {})
    dest = tmp_path / "bundle"
    write_bundle(str(dest), files)
    return files, dest


def _run(script, *args, env=None, cwd=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(["bash", str(script)] + list(args), capture_output=True, text=True, env=full_env,
                          cwd=cwd, timeout=60, check=False)


def _dry(script, *args, cwd=None):
    proc = _run(script, "--dry-run", *args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return [shlex.split(line) for line in proc.stdout.splitlines() if line.strip()]


@pytest.fixture()
def stubs(tmp_path):
    bindir = tmp_path / "stubbin"
    bindir.mkdir()
    for tool in ("helm", "kubectl"):
        path = bindir / tool
        path.write_text(STUB)
        path.chmod(0o755)
    log = tmp_path / "calls.log"

    def calls():
        if not log.exists():
            return []
        records = log.read_bytes().split(b"\x1e")
        return [[a.decode() for a in rec.split(b"\0")[:-1]] for rec in records if rec]

    env = {"PATH": "%s%s%s" % (bindir, os.pathsep, os.environ.get("PATH", "")), "STUB_LOG": str(log),
           "DSXOS_RETRY_DELAY": "0"}
    return env, calls


def test_layout_and_modes(tmp_path):
    files, dest = _write(tmp_path)
    assert files["deploy.sh"].mode == 0o755 and files["undeploy.sh"].mode == 0o755
    for comp in sample_components():
        assert "%s/README.md" % comp.name in files
        if comp.type == "Helm":
            assert yaml.safe_load(files["%s/values.yaml" % comp.name].content) == comp.values
        for manifest, text in comp.manifests.items():
            assert files["%s/manifests/%s" % (comp.name, manifest)].content.decode() == text
    assert "node-tweaks/values.yaml" not in files  # Kustomize: no Helm values
    readme = files["README.md"].content.decode()
    names = [c.name for c in sample_components()]
    assert [readme.index("| %s |" % n) for n in names] == sorted(readme.index("| %s |" % n) for n in names)
    assert "./deploy.sh --dry-run" in readme
    assert os.access(dest / "deploy.sh", os.X_OK)


def test_scripts_are_valid_bash(tmp_path):
    _files, dest = _write(tmp_path)
    for script in ("deploy.sh", "undeploy.sh"):
        proc = subprocess.run(["bash", "-n", str(dest / script)], capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
        text = (dest / script).read_text()
        assert text.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in text


def test_deploy_dry_run_prints_commands_in_order(tmp_path):
    _files, dest = _write(tmp_path)
    assert _dry(dest / "deploy.sh", cwd=str(tmp_path)) == _expected_deploy()


def test_dry_run_ends_saying_nothing_was_deployed(tmp_path, stubs):
    """The last line of a dry run says nothing happened; stdout stays the commands only; no tool is called."""
    env, calls = stubs
    _files, dest = _write(tmp_path)
    for script, word in (("deploy.sh", "deployed"), ("undeploy.sh", "removed")):
        proc = _run(dest / script, "--dry-run", env=env)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.strip().splitlines()[-1] == "dry run: nothing was %s" % word
        assert "nothing was" not in proc.stdout
    assert calls() == []
    real = _run(dest / "deploy.sh", "--only", "cert-manager", env=env)
    assert real.returncode == 0, real.stderr
    assert calls() and "dry run" not in real.stderr
    assert real.stderr.strip().splitlines()[-1] == "deploy finished"


def test_undeploy_dry_run_is_reverse_order(tmp_path):
    _files, dest = _write(tmp_path)
    assert _dry(dest / "undeploy.sh") == _expected_undeploy()


def test_only_and_skip(tmp_path):
    _files, dest = _write(tmp_path)
    only = _dry(dest / "deploy.sh", "--only", "kai-scheduler", "--only", "cert-manager")
    expected = _expected_deploy()
    assert only == [expected[0], expected[1], expected[5]]  # deployment order, not argument order
    skip = _dry(dest / "deploy.sh", "--skip", "gpu-operator")
    assert skip == expected[:2] + expected[5:]
    proc = _run(dest / "deploy.sh", "--only", "nope")
    assert proc.returncode == 2 and "unknown component: nope" in proc.stderr
    proc = _run(dest / "undeploy.sh", "--bogus")
    assert proc.returncode == 2 and "unknown argument" in proc.stderr


def test_options_timeout_and_wait(tmp_path):
    _files, dest = _write(tmp_path, options={"timeout": "25m", "wait": False})
    cmds = _dry(dest / "deploy.sh")
    upgrades = [c for c in cmds if c[:2] == ["helm", "upgrade"]]
    assert len(upgrades) == 3
    assert all("--wait" not in c and c[-2:] == ["--timeout", "25m"] for c in upgrades)
    proc = _run(dest / "deploy.sh", "--dry-run", env={"DSXOS_HELM_TIMEOUT": "1h"})
    assert "--timeout 1h" in proc.stdout
    with pytest.raises(RenderError) as err:
        deployer_helm.render(sample_result(), sample_components(), deployer_helm.DeployerOptions(timeout="ten"))
    assert "options.timeout" in str(err.value) and "'ten'" in str(err.value)


def test_real_run_against_stubs_with_retries(tmp_path, stubs):
    env, calls = stubs
    _files, dest = _write(tmp_path)
    env = dict(env, STUB_FAIL_CMD="helm upgrade", STUB_FAIL_TIMES="2", DSXOS_RETRY_ATTEMPTS="4")
    proc = _run(dest / "deploy.sh", env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    recorded = calls()
    # the first helm upgrade failed twice and was retried; afterwards every command ran once, in order
    assert recorded[:3] == [_expected_deploy()[0]] + [_expected_deploy()[1]] * 2
    deduped = [recorded[0]] + recorded[3:]
    assert deduped == _expected_deploy()
    assert proc.stderr.count("retrying in") == 2
    # files referenced by relative path exist relative to the bundle (the script cds there)
    for cmd in _expected_deploy():
        for arg in cmd:
            if arg.endswith(("values.yaml", "manifests/", "namespace.yaml")):
                assert (dest / arg).exists(), arg


def test_retries_give_up_with_the_command_status(tmp_path, stubs):
    env, calls = stubs
    _files, dest = _write(tmp_path)
    env = dict(env, STUB_FAIL_CMD="helm repo", STUB_FAIL_TIMES="99", DSXOS_RETRY_ATTEMPTS="3")
    proc = _run(dest / "deploy.sh", env=env)
    assert proc.returncode == 3
    assert "failed after 3 attempt(s)" in proc.stderr
    assert calls() == [_expected_deploy()[0]] * 3


def test_undeploy_real_run_skips_missing_releases(tmp_path, stubs):
    env, calls = stubs
    _files, dest = _write(tmp_path)
    proc = _run(dest / "undeploy.sh", env=dict(env, STUB_STATUS_RC="1"))
    assert proc.returncode == 0, proc.stderr
    recorded = calls()
    assert [c for c in recorded if c[:2] == ["helm", "uninstall"]] == []
    assert [c for c in recorded if c[0] == "kubectl"] == [c for c in _expected_undeploy() if c[0] == "kubectl"]
    proc = _run(dest / "undeploy.sh", env=env)
    assert proc.returncode == 0, proc.stderr
    assert [c for c in calls() if c[:2] == ["helm", "uninstall"]] == [
        c for c in _expected_undeploy() if c[0] == "helm"]


def test_hostile_names_are_quoted(tmp_path, stubs):
    env, calls = stubs
    comp = ComponentBundle(name=HOSTILE, type="Helm", order=0, namespace="ns $(touch pwned4)",
                           repository="https://example.com/charts?x=1&y=$(touch pwned5)", chart="c;d",
                           version="1.0'\"; touch pwned6", values={"a": 1}, manifests={"m.yaml": "kind: X\n"})
    _files, dest = _write(tmp_path, components=[comp])
    alias = deployer_helm.repo_alias(comp.repository)
    expected = [
        ["helm", "repo", "add", alias, comp.repository, "--force-update"],
        ["helm", "upgrade", "--install", HOSTILE, alias + "/c;d", "--version", comp.version, "--namespace",
         comp.namespace, "--create-namespace", "-f", HOSTILE + "/values.yaml", "--wait", "--timeout", "10m"],
        ["kubectl", "apply", "-n", comp.namespace, "-f", HOSTILE + "/manifests/"],
    ]
    assert subprocess.run(["bash", "-n", str(dest / "deploy.sh")], check=False).returncode == 0
    assert _dry(dest / "deploy.sh", "--only", HOSTILE, cwd=str(tmp_path)) == expected
    proc = _run(dest / "deploy.sh", env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert calls() == expected
    proc = _run(dest / "undeploy.sh", env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert calls()[-1] == ["helm", "uninstall", HOSTILE, "--namespace", comp.namespace, "--wait", "--timeout", "10m"]
    for root in (tmp_path, dest):
        assert not [n for n in os.listdir(root) if n.startswith("pwned")]
    assert not [n for n in os.listdir(os.getcwd()) if n.startswith("pwned")]


def test_oci_chart_without_chart_name_uses_repository_as_reference():
    comp = ComponentBundle(name="kai", type="Helm", order=0, namespace="kai",
                           repository="oci://ghcr.io/nvidia/kai-scheduler/kai-scheduler", version="v1")
    assert deployer_helm.oci_chart_ref(comp) == "oci://ghcr.io/nvidia/kai-scheduler/kai-scheduler"


@pytest.mark.parametrize("name", ["..", "a/b", "", "bad\nname"])
def test_unusable_component_names_are_rejected(name):
    comp = ComponentBundle(name=name, type="Helm", order=0, namespace="x", repository="https://e.com", chart="c")
    with pytest.raises(RenderError) as err:
        deployer_helm.render(sample_result([comp]), [comp])
    assert repr(name) in str(err.value)


def test_manifest_names_must_be_plain_file_names():
    comp = ComponentBundle(name="a", type="Helm", order=0, namespace="x", manifests={"../../etc/x.yaml": "kind: X"})
    with pytest.raises(RenderError) as err:
        deployer_helm.render(sample_result([comp]), [comp])
    assert "components[a].manifests" in str(err.value) and "../../etc/x.yaml" in str(err.value)


def test_https_component_without_chart_fails():
    comp = ComponentBundle(name="a", type="Helm", order=0, namespace="x", repository="https://e.com/charts")
    with pytest.raises(RenderError, match="components\\[a\\].chart"):
        deployer_helm.render(sample_result([comp]), [comp])


def test_rendered_objects_are_valid():
    comps = sample_components()
    files = render_bundle(sample_result(comps), comps, "helm", {})
    # gpu-operator ConfigMap, nic-tuning ConfigMap + PriorityClass, nic-tuning Namespace
    assert validate_bundle(files) == 4
