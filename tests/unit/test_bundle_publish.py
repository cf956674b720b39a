# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""bundle_publish without a registry: references, the reproducible tarball, the manifest, annotations; the flux
deployer's OCIRepository for the published bundle (validated against the shared CRD)."""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
import time

import pytest
import yaml

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.configure import bundle_publish
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_publish import (
    BundlePublishError, build_artifact, bundle_tarball, parse_reference, publish_bundle)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_render import render_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_verify import BundleVerifyError, verified_entries
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_writer import write_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import BUNDLE_PUBLISH
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError

from manifest_validation import load_docs, sample_components, sample_result, validate_bundle, validate_objects


def _bundle(path, deployer="helm"):
    comps = sample_components()
    files = render_bundle(sample_result(comps), comps, deployer, {})
    write_bundle(str(path), files)
    return files


@pytest.mark.parametrize("text,expected", [
    ("oci://127.0.0.1:5000/dsxos/bundle:v1", ("127.0.0.1:5000", "dsxos/bundle", "v1")),
    ("ghcr.io/org/a.b/c_d:1.2.3-rc_1", ("ghcr.io", "org/a.b/c_d", "1.2.3-rc_1")),
    ("oci://[::1]:5000/x:latest", ("[::1]:5000", "x", "latest")),
])
def test_reference_parsing(text, expected):
    ref = parse_reference(text)
    assert (ref.registry, ref.repository, ref.tag) == expected
    assert ref.reference == "oci://%s/%s:%s" % expected and ref.url == "oci://%s/%s" % expected[:2]


@pytest.mark.parametrize("text,needle", [
    ("", "required"),
    ("oci://host/repo", "needs a tag"),
    ("oci://host:5000", "registry host"),
    ("https://host/repo:v1", "no other scheme"),
    ("oci://host/repo@sha256:" + "a" * 64, "no @digest"),
    ("oci://host/Repo:v1", "repository path"),
    ("oci://host/repo:-bad", "invalid tag"),
    ("oci://host//repo:v1", "repository path"),
])
def test_bad_references_are_named(text, needle):
    with pytest.raises(BundlePublishError) as err:
        parse_reference(text)
    assert needle in str(err.value) and err.value.field == "reference"


def _members(blob):
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        return [(m.name, m.type, m.mode, m.mtime, m.uid, m.gid, m.uname, m.gname, m.size) for m in tar.getmembers()], \
            {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_tarball_is_reproducible_across_directories_times_and_modes(tmp_path):
    files = _bundle(tmp_path / "a")
    time.sleep(1.1)
    old = os.umask(0o077)
    try:
        _bundle(tmp_path / "elsewhere" / "b")
    finally:
        os.umask(old)
    os.utime(tmp_path / "elsewhere" / "b" / "README.md", (1, 1))
    os.chmod(tmp_path / "elsewhere" / "b" / "README.md", 0o600)
    one = bundle_tarball(*verified_entries(str(tmp_path / "a")))
    two = bundle_tarball(*verified_entries(str(tmp_path / "elsewhere" / "b")))
    assert one == two
    assert one[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # gzip: no name, mtime 0
    members, contents = _members(one)
    names = [m[0] for m in members]
    assert names == sorted(names)
    assert {m[3] for m in members} == {0} and {m[4] for m in members} == {0} and {m[5] for m in members} == {0}
    assert {m[6] for m in members} == {""} and {m[7] for m in members} == {""}
    assert contents == {path: f.content for path, f in files.items()}
    modes = {m[0]: m[2] for m in members}
    assert modes["deploy.sh"] == 0o755 and modes["README.md"] == 0o644 and modes["gpu-operator"] == 0o755


def test_artifact_manifest_media_types_and_annotations(tmp_path):
    _bundle(tmp_path / "b")
    art = build_artifact(str(tmp_path / "b"), source="https://git.example.com/recipes.git",
                         annotations={"team": "gpu"})
    manifest = json.loads(art.manifest)
    assert manifest["mediaType"] == "application/vnd.oci.image.manifest.v1+json" and manifest["schemaVersion"] == 2
    assert manifest["config"] == {"mediaType": "application/vnd.cncf.flux.config.v1+json",
                                  "digest": "sha256:" + hashlib.sha256(b"{}").hexdigest(), "size": 2}
    [layer] = manifest["layers"]
    assert layer["mediaType"] == "application/vnd.cncf.flux.content.v1.tar+gzip"
    assert layer["digest"] == "sha256:" + hashlib.sha256(art.layer).hexdigest() and layer["size"] == len(art.layer)
    checksums = (tmp_path / "b" / "checksums.txt").read_bytes()
    assert manifest["annotations"] == {
        "io.dsxos.bundle.components": ",".join(sample_result(sample_components()).deployment_order),
        "io.dsxos.bundle.criteria": "service=eks,accelerator=h100,os=ubuntu,intent=training,platform=any,nodes=0",
        "org.opencontainers.image.revision": "sha256:" + hashlib.sha256(checksums).hexdigest(),
        "org.opencontainers.image.source": "https://git.example.com/recipes.git",
        "team": "gpu",
    }
    assert art.digest == "sha256:" + hashlib.sha256(art.manifest).hexdigest()
    # same inputs, same digest; a changed annotation, a different digest
    assert build_artifact(str(tmp_path / "b"), source="https://git.example.com/recipes.git",
                          annotations={"team": "gpu"}).digest == art.digest
    assert build_artifact(str(tmp_path / "b"), created="2026-01-31T12:00:00Z").digest != art.digest
    with pytest.raises(BundlePublishError, match="RFC 3339"):
        build_artifact(str(tmp_path / "b"), created="yesterday")


def test_tampered_bundle_is_refused_before_any_network(tmp_path, monkeypatch):
    _bundle(tmp_path / "b")
    (tmp_path / "b" / "gpu-operator" / "values.yaml").write_text("tampered: true\n")
    (tmp_path / "b" / "stray.txt").write_text("x\n")
    monkeypatch.setattr(bundle_publish, "_Registry", lambda *a, **k: pytest.fail("registry contacted"))
    with pytest.raises(BundleVerifyError) as err:
        publish_bundle(str(tmp_path / "b"), "oci://127.0.0.1:1/x:v1")
    assert "1 modified: gpu-operator/values.yaml" in str(err.value) and "1 extra: stray.txt" in str(err.value)


def test_file_changed_after_verification_is_refused(tmp_path):
    _bundle(tmp_path / "b")
    root, entries = verified_entries(str(tmp_path / "b"))
    (tmp_path / "b" / "README.md").write_text("changed in between\n")
    with pytest.raises(BundleVerifyError, match="changed after the bundle was verified"):
        bundle_tarball(root, entries)


def test_unreachable_registry_is_a_named_error(tmp_path):
    _bundle(tmp_path / "b")
    result = call_entry(BUNDLE_PUBLISH, {"bundle": str(tmp_path / "b"), "reference": "oci://127.0.0.1:9/x/y:v1",
                                         "username": None, "password": None, "plain_http": True, "validate_certs": True,
                                         "timeout": 2.0, "source": None, "revision": None, "created": None,
                                         "annotations": {}})
    assert result["failed"] and "registry unreachable" in result["msg"] and "http://127.0.0.1:9" in result["msg"]


def test_missing_oras_names_the_package(tmp_path, monkeypatch):
    _bundle(tmp_path / "b")
    monkeypatch.setattr(bundle_publish, "HAS_ORAS", False)
    monkeypatch.setattr(bundle_publish, "ORAS_IMPORT_ERROR", "No module named 'oras'")
    with pytest.raises(BundlePublishError) as err:
        publish_bundle(str(tmp_path / "b"), "oci://127.0.0.1:1/x:v1")
    assert "'oras'" in str(err.value) and "pip install oras" in str(err.value)


def test_password_is_no_log():
    assert BUNDLE_PUBLISH.spec["password"]["no_log"] is True


def _flux(**options):
    comps = sample_components()
    return render_bundle(sample_result(comps), comps, "flux", options)


def test_flux_oci_source_for_the_published_bundle_validates_against_the_crd():
    files = _flux(oci_url="oci://127.0.0.1:5000/dsxos/bundle", oci_ref="v1", oci_insecure=True)
    source, apply = load_docs(files, "flux-oci-source.yaml")
    assert validate_objects([source, apply], "flux-oci-source.yaml") == 2
    assert source["kind"] == "OCIRepository" and source["apiVersion"] == "source.toolkit.fluxcd.io/v1"
    assert source["spec"]["url"] == "oci://127.0.0.1:5000/dsxos/bundle" and source["spec"]["ref"] == {"tag": "v1"}
    assert source["spec"]["layerSelector"] == {"mediaType": "application/vnd.cncf.flux.content.v1.tar+gzip",
                                               "operation": "extract"}
    assert source["spec"]["insecure"] is True
    assert apply["spec"]["sourceRef"] == {"kind": "OCIRepository", "name": "dsxos-bundle", "namespace": "flux-system"}
    assert apply["spec"]["path"] == "./"
    # not a resource of the bundle's own kustomization (it points at the bundle; applied once, by hand)
    assert "flux-oci-source.yaml" not in yaml.safe_load(files["kustomization.yaml"].content)["resources"]
    assert validate_bundle(files) == validate_bundle(_flux()) + 2


def test_flux_oci_source_by_digest_and_absent_by_default():
    digest = "sha256:" + "ab" * 32
    files = _flux(oci_url="oci://ghcr.io/org/bundle", oci_ref=digest, oci_name="gpu-bundle")
    source, apply = load_docs(files, "flux-oci-source.yaml")
    assert source["spec"]["ref"] == {"digest": digest} and "insecure" not in source["spec"]
    assert source["metadata"]["name"] == apply["metadata"]["name"] == "gpu-bundle"
    validate_objects([source, apply], "flux-oci-source.yaml")
    assert "flux-oci-source.yaml" not in _flux()


@pytest.mark.parametrize("options,field", [
    ({"oci_url": "https://ghcr.io/org/bundle"}, "options.oci_url"),
    ({"oci_url": "oci://ghcr.io/org/bundle:v1"}, "options.oci_url"),
    ({"oci_url": "oci://ghcr.io/org/bundle", "oci_ref": "sha256:xyz"}, "options.oci_ref"),
    ({"oci_url": "oci://ghcr.io/org/bundle", "oci_name": "Bad_Name"}, "options.oci_name"),
])
def test_flux_oci_options_are_checked(options, field):
    with pytest.raises(RenderError) as err:
        _flux(**options)
    assert err.value.field == field


def test_published_tarball_matches_flux_layout(tmp_path):
    # what Flux extracts from the layer is the flux bundle itself, kustomization.yaml at the root
    files = _flux(oci_url="oci://127.0.0.1:5000/dsxos/bundle", oci_ref="v1")
    write_bundle(str(tmp_path / "flux"), files)
    art = build_artifact(str(tmp_path / "flux"))
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(art.layer)), mode="r:") as tar:
        names = tar.getnames()
    assert "kustomization.yaml" in names and "flux-oci-source.yaml" in names and "checksums.txt" in names
    assert art.files == sorted(files)
