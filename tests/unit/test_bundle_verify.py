# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""bundle_verify: missing/extra/modified/unsafe reported exactly, non-bundles refused before reading, the module adapter."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry
from ansible_collections.dsxos.cluster.plugins.module_utils.configure import bundle_verify
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_render import render_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_verify import (
    BundleVerifyError, parse_checksums, verify_bundle)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_writer import write_bundle
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import BUNDLE_VERIFY

from manifest_validation import sample_components, sample_result


def _bundle(path, deployer="flux"):
    comps = sample_components()
    files = render_bundle(sample_result(comps), comps, deployer, {"repo_url": "https://g.example/r.git", "revision": "v1"}
                          if deployer == "argocd" else {})
    write_bundle(str(path), files)
    return files


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def test_fresh_bundle_verifies_and_matches_sha256sum(tmp_path):
    for deployer in ("helm", "argocd", "flux"):
        files = _bundle(tmp_path / deployer, deployer)
        result = verify_bundle(str(tmp_path / deployer))
        assert result.ok, result.summary()
        assert result.listed == result.verified == len(files) - 1
        assert result.counts() == {"listed": len(files) - 1, "verified": len(files) - 1, "missing": 0, "extra": 0,
                                   "modified": 0, "unsafe": 0}
    # the same file is what sha256sum -c accepts
    proc = subprocess.run(["sha256sum", "-c", "--quiet", "checksums.txt"], cwd=str(tmp_path / "flux"),
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_missing_extra_modified_all_reported_at_once(tmp_path):
    root = tmp_path / "b"
    _bundle(root)
    os.remove(root / "gpu-operator" / "helmrelease.yaml")
    os.remove(root / "README.md")
    _write(str(root / "recipe.yaml"), "tampered: true\n")
    with open(root / "kustomization.yaml", "ab") as handle:
        handle.write(b"# one more byte\n")
    _write(str(root / "notes.txt"), "hand-made\n")
    _write(str(root / "deep" / "er" / "x.yaml"), "a: 1\n")
    result = verify_bundle(str(root))
    assert not result.ok
    assert result.missing == ["README.md", "gpu-operator/helmrelease.yaml"]
    assert result.modified == ["kustomization.yaml", "recipe.yaml"]
    assert result.extra == ["deep/er/x.yaml", "notes.txt"]
    assert result.unsafe == []
    assert result.verified == result.listed - 4
    text = result.summary()
    for word in ("2 missing: README.md, gpu-operator/helmrelease.yaml", "2 modified: kustomization.yaml, recipe.yaml",
                 "2 extra: deep/er/x.yaml, notes.txt", str(root)):
        assert word in text


def test_empty_directories_are_ignored(tmp_path):
    root = tmp_path / "b"
    _bundle(root)
    os.makedirs(root / "empty" / "nested")
    assert verify_bundle(str(root)).ok


def test_symlinks_are_never_followed(tmp_path):
    root = tmp_path / "b"
    _bundle(root)
    outside = tmp_path / "secret.txt"
    outside.write_text("do not read\n")
    os.symlink(str(outside), str(root / "escape.txt"))
    os.symlink("kustomization.yaml", str(root / "inside-link"))
    os.symlink(str(tmp_path), str(root / "dirlink"))
    # a listed file replaced by a link to identical content is still unsafe, never "verified"
    target = root / "README.md"
    copy = tmp_path / "README.copy"
    shutil.copy(str(target), str(copy))
    os.remove(target)
    os.symlink(str(copy), str(target))
    result = verify_bundle(str(root))
    reasons = {u["path"]: u["reason"] for u in result.unsafe}
    assert reasons == {
        "README.md": "symbolic link escaping the bundle (not followed)",
        "dirlink": "symbolic link escaping the bundle (not followed)",
        "escape.txt": "symbolic link escaping the bundle (not followed)",
        "inside-link": "symbolic link (not followed)",
    }
    assert result.missing == [] and result.modified == [] and result.extra == []
    assert not result.ok and result.verified == result.listed - 1


def test_fifo_and_listed_directory_are_unsafe(tmp_path):
    root = tmp_path / "b"
    _bundle(root)
    os.mkfifo(str(root / "pipe"))  # opening it would block: it must never be opened
    os.remove(root / "README.md")
    os.mkdir(root / "README.md")
    _write(str(root / "README.md" / "inner.txt"), "x\n")
    result = verify_bundle(str(root))
    assert {u["path"]: u["reason"] for u in result.unsafe} == {"pipe": "FIFO", "README.md": "listed path is a directory"}
    assert result.extra == ["README.md/inner.txt"]
    assert result.missing == []


def test_not_a_bundle_is_refused_before_reading(tmp_path, monkeypatch):
    plain = tmp_path / "home"
    _write(str(plain / "big.bin"), "x" * 1000)
    opened = []
    monkeypatch.setattr(bundle_verify, "file_sha256", lambda path: opened.append(path) or "0" * 64)
    monkeypatch.setattr(bundle_verify, "_walk", lambda root: opened.append(root) or ({}, []))
    with pytest.raises(BundleVerifyError) as err:
        verify_bundle(str(plain))
    assert "not a bundle" in str(err.value) and "checksums.txt" in str(err.value) and str(plain) in str(err.value)
    assert opened == []
    with pytest.raises(BundleVerifyError, match="does not exist"):
        verify_bundle(str(tmp_path / "nope"))
    with pytest.raises(BundleVerifyError, match="not a directory"):
        verify_bundle(str(plain / "big.bin"))


def test_checksums_file_itself_must_be_regular_and_bounded(tmp_path, monkeypatch):
    root = tmp_path / "b"
    _bundle(root)
    real = tmp_path / "real-checksums.txt"
    shutil.move(str(root / "checksums.txt"), str(real))
    os.symlink(str(real), str(root / "checksums.txt"))
    with pytest.raises(BundleVerifyError, match="not a regular file"):
        verify_bundle(str(root))
    os.remove(root / "checksums.txt")
    shutil.copy(str(real), str(root / "checksums.txt"))
    monkeypatch.setattr(bundle_verify, "MAX_CHECKSUMS_BYTES", 10)
    with pytest.raises(BundleVerifyError, match="larger than 10 bytes"):
        verify_bundle(str(root))


@pytest.mark.parametrize("text,needle,line", [
    ("nothex  a.txt\n", "malformed checksum line", 1),
    ("%s  a.txt\n%s  ../etc/passwd\n" % ("a" * 64, "b" * 64), "unsafe path", 2),
    ("%s  /abs\n" % ("a" * 64), "unsafe path", 1),
    ("%s  a.txt\n\n%s  a.txt\n" % ("a" * 64, "b" * 64), "listed twice", 3),
    ("%s  checksums.txt\n" % ("a" * 64), "must not list itself", 1),
    ("%s a.txt\n" % ("a" * 64), "malformed checksum line", 1),
])
def test_malformed_checksums_name_the_line(text, needle, line):
    with pytest.raises(BundleVerifyError) as err:
        parse_checksums(text, "/b/checksums.txt")
    assert needle in str(err.value) and err.value.line == line and err.value.file == "/b/checksums.txt"


def test_sha256sum_binary_marker_and_upper_case_are_accepted():
    digest = hashlib.sha256(b"x").hexdigest()
    assert parse_checksums("%s *a.txt\n%s  b/c.txt\r\n" % (digest.upper(), digest)) == {"a.txt": digest, "b/c.txt": digest}


def test_module_adapter_fails_or_reports(tmp_path):
    root = tmp_path / "b"
    _bundle(root)
    good = call_entry(BUNDLE_VERIFY, {"bundle": str(root), "fail_on_mismatch": True})
    assert good["ok"] and not good.get("failed") and good["changed"] is False and "matches" in good["msg"]
    _write(str(root / "extra.txt"), "x")
    bad = call_entry(BUNDLE_VERIFY, {"bundle": str(root), "fail_on_mismatch": True})
    assert bad["failed"] and bad["extra"] == ["extra.txt"] and "1 extra: extra.txt" in bad["msg"]
    report = call_entry(BUNDLE_VERIFY, {"bundle": str(root), "fail_on_mismatch": False})
    assert not report.get("failed") and report["ok"] is False and report["counts"]["extra"] == 1
    refused = call_entry(BUNDLE_VERIFY, {"bundle": str(tmp_path), "fail_on_mismatch": False})
    assert refused["failed"] and "not a bundle" in refused["msg"] and refused["error"]["file"] == str(tmp_path)


_NAMES = st.text(alphabet="abcdefgh", min_size=1, max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_mutation_set_is_reported_exactly(tmp_path_factory, data):
    root = tmp_path_factory.mktemp("prop") / "bundle"
    files = _bundle(root)
    listed = sorted(p for p in files if p != "checksums.txt")
    chosen = data.draw(st.lists(st.sampled_from(listed), unique=True, max_size=len(listed)))
    split = data.draw(st.integers(min_value=0, max_value=len(chosen)))
    deleted, modified = sorted(chosen[:split]), sorted(chosen[split:])
    added = sorted(set(data.draw(st.lists(st.tuples(_NAMES, _NAMES).map(lambda t: "new-%s/%s.txt" % t), max_size=5))))
    for relpath in deleted:
        os.remove(os.path.join(str(root), *relpath.split("/")))
    for relpath in modified:
        with open(os.path.join(str(root), *relpath.split("/")), "ab") as handle:
            handle.write(data.draw(st.binary(min_size=1, max_size=8)))
    for relpath in added:
        _write(os.path.join(str(root), *relpath.split("/")), "added\n")
    result = verify_bundle(str(root))
    assert result.missing == deleted
    assert result.modified == modified
    assert result.extra == added
    assert result.unsafe == []
    assert result.verified == len(listed) - len(deleted) - len(modified)
    assert result.ok == (not deleted and not modified and not added)
