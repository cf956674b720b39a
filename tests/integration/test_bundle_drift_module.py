# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""dsxos.cluster.bundle_drift through real ansible-playbook runs: render a bundle, seed the cluster (both Kubernetes
backends, ``k8s_cluster``) with Helm release Secrets, compare."""
from __future__ import annotations

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.helm_release import build_release_secret

PLAY = """
- name: Drift
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Resolve
      dsxos.cluster.recipe_resolve:
        criteria: {service: eks, accelerator: h100, os: ubuntu, intent: training}
      register: resolved

    - name: Render
      dsxos.cluster.bundle_render:
        recipe: "{{ resolved.recipe }}"
        dest: "{{ dest }}"
        deployer: helm

    - name: Drift
      dsxos.cluster.bundle_drift:
        kubeconfig: "{{ kubeconfig }}"
        bundle: "{{ dest }}"
      register: drift
      failed_when: not drift.summary.ok
"""


def test_drift_on_a_rendered_bundle(ansible_run, k8s_cluster, tmp_path):
    dest = str(tmp_path / "bundle")
    extra = {"kubeconfig": k8s_cluster.kubeconfig_path, "dest": dest}
    result = ansible_run(PLAY, extra_vars=extra, expect_rc=2)
    drift = result.task("Drift")
    assert drift["status"] == "failed" and drift["changed"] is False
    comps = drift["result"]["components"]
    charts = [c for c in comps if c["kind"] == "helm_release"]
    assert charts and all(c["status"] == "missing" for c in charts)
    assert drift["result"]["summary"]["missing"] == len(charts)

    # install every chart component as Helm would (values from the bundle), then one with drifted values
    import os  # pylint: disable=import-outside-toplevel
    import yaml  # pylint: disable=import-outside-toplevel
    for comp in charts:
        k8s_cluster.add_namespace(comp["namespace"])
        with open(os.path.join(dest, comp["name"], "values.yaml"), encoding="utf-8") as handle:
            values = yaml.safe_load(handle)
        k8s_cluster.api.create(build_release_secret(comp["object"], comp["namespace"], 1, comp["name"], comp["expected_version"], values=values))
    clean = ansible_run(PLAY, extra_vars=extra).task("Drift")
    assert clean["status"] == "ok" and clean["result"]["summary"]["ok"] is True
    assert clean["result"]["summary"]["in_sync"] == len(charts)

    victim = charts[0]
    k8s_cluster.api.create(build_release_secret(victim["object"], victim["namespace"], 2, victim["name"], "0.0.1-old",
                                                values={"password": "hunter2"}))
    drifted = ansible_run(PLAY, extra_vars=extra, expect_rc=2).task("Drift")
    comp = next(c for c in drifted["result"]["components"] if c["name"] == victim["name"])
    assert comp["status"] == "version_drift" and comp["drift"] == ["version", "values"] and comp["revision"] == 2
    assert "hunter2" not in drifted["result"]["components"].__repr__() and "<masked>" in comp["values_diff"]
