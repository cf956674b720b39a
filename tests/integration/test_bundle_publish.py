# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""bundle_verify and bundle_publish through ansible-playbook against a real OCI registry (Debian's docker-registry,
htpasswd basic auth, plain HTTP on 127.0.0.1): publish, pull back with oras, republish idempotently, refuse tampering."""
from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import oras.provider
import pytest

from tests.harness.oci_registry import OciRegistry

USER = "dsxos"
PASSWORD = "s3cret-Pa55-for-registry"
CRITERIA = {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"}

RENDER = """
- name: Render the flux bundle
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Resolve
      dsxos.cluster.recipe_resolve:
        criteria: "{{ criteria }}"
      register: resolved

    - name: Render
      dsxos.cluster.bundle_render:
        recipe: "{{ resolved.recipe }}"
        dest: "{{ dest }}"
        deployer: flux
        deployer_options:
          oci_url: "{{ oci_url }}"
          oci_ref: v1
          oci_insecure: true
"""

VERIFY_AND_PUBLISH = """
- name: Verify and publish
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Verify
      dsxos.cluster.bundle_verify:
        bundle: "{{ dest }}"
        fail_on_mismatch: "{{ strict | default(true) }}"
      register: verified

    - name: Publish
      dsxos.cluster.bundle_publish:
        bundle: "{{ dest }}"
        reference: "{{ reference }}"
        username: "{{ user }}"
        password: "{{ password }}"
        plain_http: true
        timeout: 20
        source: https://git.example.com/platform/recipes.git
"""


@pytest.fixture(scope="module", name="registry")
def registry_fixture(tmp_path_factory: pytest.TempPathFactory):
    with OciRegistry(str(tmp_path_factory.mktemp("oci-registry")), users={USER: PASSWORD}) as reg:
        yield reg


def _pull(registry: OciRegistry, repository: str, tag: str):
    client = oras.provider.Registry(hostname=registry.host, insecure=True, auth_backend="basic")
    client.auth.set_basic_auth(USER, PASSWORD)
    container = client.get_container("%s/%s:%s" % (registry.host, repository, tag))
    manifest = client.get_manifest(container)
    [layer] = manifest["layers"]
    blob = client.get_blob(container, layer["digest"]).content
    assert "sha256:" + hashlib.sha256(blob).hexdigest() == layer["digest"]
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    return manifest, files


def _manifest_digest(registry: OciRegistry, repository: str, tag: str) -> str:
    client = oras.provider.Registry(hostname=registry.host, insecure=True, auth_backend="basic")
    client.auth.set_basic_auth(USER, PASSWORD)
    container = client.get_container("%s/%s:%s" % (registry.host, repository, tag))
    response = client.do_request("http://%s" % container.manifest_url(), "GET",
                                 headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
    assert response.status_code == 200, response.text
    return "sha256:" + hashlib.sha256(response.content).hexdigest()


def test_publish_pull_republish_and_refuse_tampering(ansible_run, registry: OciRegistry, tmp_path: Path) -> None:
    bundle = tmp_path / "flux"
    repository = "dsxos/bundle"
    reference = "oci://%s/%s:v1" % (registry.host, repository)
    variables = {"criteria": CRITERIA, "dest": str(bundle), "oci_url": "oci://%s/%s" % (registry.host, repository),
                 "reference": reference, "user": USER, "password": PASSWORD}
    ansible_run(RENDER, extra_vars=variables)
    assert (bundle / "flux-oci-source.yaml").is_file()

    # check mode: the registry is only read; nothing is pushed
    dry = ansible_run(VERIFY_AND_PUBLISH, extra_vars=variables, check=True)
    record = dry.task("Publish")
    assert record["status"] == "ok" and record["changed"] is True
    assert record["result"]["pushed"] is False and record["result"]["previous_digest"] is None
    client = oras.provider.Registry(hostname=registry.host, insecure=True, auth_backend="basic")
    client.auth.set_basic_auth(USER, PASSWORD)
    tags = client.do_request("%s/v2/%s/tags/list" % (registry.url, repository), "GET")
    assert tags.status_code == 404 and "NAME_UNKNOWN" in tags.text  # nothing was pushed: the repository does not exist

    first = ansible_run(VERIFY_AND_PUBLISH, extra_vars=variables)
    verified = first.task("Verify")
    assert verified["changed"] is False and verified["result"]["ok"] is True
    assert verified["result"]["counts"]["verified"] == verified["result"]["counts"]["listed"] > 10
    published = first.task("Publish")
    ret = published["result"]
    assert published["changed"] is True and ret["pushed"] is True
    assert ret["reference"] == reference and ret["digest"] == dry.task("Publish")["result"]["digest"]
    assert ret["media_types"]["layer"] == "application/vnd.cncf.flux.content.v1.tar+gzip"
    assert PASSWORD not in first.stdout + first.stderr + json.dumps(first.tasks)

    # pull it back: the registry holds exactly the manifest we computed and the bundle's bytes
    assert _manifest_digest(registry, repository, "v1") == ret["digest"]
    manifest, pulled = _pull(registry, repository, "v1")
    assert manifest["config"]["mediaType"] == "application/vnd.cncf.flux.config.v1+json"
    assert manifest["layers"][0]["size"] == ret["size"]
    assert manifest["annotations"]["org.opencontainers.image.source"] == "https://git.example.com/platform/recipes.git"
    assert manifest["annotations"]["io.dsxos.bundle.criteria"].startswith("service=eks,accelerator=h100")
    on_disk = {str(p.relative_to(bundle)): p.read_bytes() for p in bundle.rglob("*") if p.is_file()}
    assert pulled == on_disk

    # same bundle again: the tag already points at the same digest
    again = ansible_run(VERIFY_AND_PUBLISH, extra_vars=variables)
    record = again.task("Publish")
    assert record["changed"] is False and record["result"]["pushed"] is False
    assert record["result"]["previous_digest"] == ret["digest"] == record["result"]["digest"]

    # tampered bundle: verify names the file, publish refuses, the tag is untouched
    values = next(bundle.glob("*/values.yaml"))
    values.write_text(values.read_text() + "tampered: true\n")
    (bundle / "stray.txt").write_text("hand-made\n")
    rel = str(values.relative_to(bundle))
    bad = ansible_run(VERIFY_AND_PUBLISH, extra_vars=dict(variables, strict=False), expect_rc=2)
    report = bad.task("Verify")["result"]
    assert report["ok"] is False and report["modified"] == [rel] and report["extra"] == ["stray.txt"]
    refused = bad.task("Publish")
    assert refused["status"] == "failed"
    assert "1 modified: %s" % rel in refused["msg"] and "1 extra: stray.txt" in refused["msg"]
    strict = ansible_run(VERIFY_AND_PUBLISH, extra_vars=variables, expect_rc=2)
    assert strict.task("Verify")["status"] == "failed" and "does not match" in strict.task("Verify")["msg"]
    assert _manifest_digest(registry, repository, "v1") == ret["digest"]


def test_wrong_password_and_missing_credentials_are_named(ansible_run, registry: OciRegistry, tmp_path: Path) -> None:
    bundle = tmp_path / "flux"
    variables = {"criteria": CRITERIA, "dest": str(bundle), "oci_url": "oci://%s/dsxos/other" % registry.host,
                 "reference": "oci://%s/dsxos/other:v1" % registry.host, "user": USER, "password": "wrong-password"}
    ansible_run(RENDER, extra_vars=variables)
    result = ansible_run(VERIFY_AND_PUBLISH, extra_vars=variables, expect_rc=2)
    failed = result.task("Publish")
    assert failed["status"] == "failed" and "refused the credentials" in failed["msg"] and registry.host in failed["msg"]
    assert "wrong-password" not in result.stdout + result.stderr + json.dumps(result.tasks)
