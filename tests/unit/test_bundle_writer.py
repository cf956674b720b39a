# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""bundle_writer: atomic, idempotent bundle trees with Ansible-style diffs."""
from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.dsxos.cluster.plugins.module_utils.configure import bundle_writer
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_writer import (
    BundleFile, BundleWriteError, write_bundle)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeError


def _files(**overrides):
    files = {
        "recipe.yaml": BundleFile.text("kind: RecipeResult\n"),
        "README.md": BundleFile.text("# bundle\n"),
        "deploy.sh": BundleFile.text("#!/bin/bash\necho hi\n", mode=0o755),
        "a/values.yaml": BundleFile.text("x: 1\n"),
        "a/manifests/cm.yaml": BundleFile.text("kind: ConfigMap\n"),
    }
    files.update(overrides)
    return {k: v for k, v in files.items() if v is not None}


def _tree(root):
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            with open(full, "rb") as handle:
                out[rel] = (handle.read(), stat.S_IMODE(os.stat(full).st_mode))
    return out


def test_first_write_creates_tree_with_modes(tmp_path):
    dest = tmp_path / "bundle"
    files = _files()
    result = write_bundle(str(dest), files)
    assert result.changed is True
    assert result.added == sorted(files)
    assert result.removed == [] and result.modified == []
    assert _tree(dest) == {k: (v.content, v.mode) for k, v in files.items()}
    assert os.access(dest / "deploy.sh", os.X_OK)
    assert sorted(os.listdir(tmp_path)) == ["bundle"]


def test_second_write_is_unchanged(tmp_path):
    dest = tmp_path / "bundle"
    write_bundle(str(dest), _files())
    inode = os.stat(dest).st_ino
    result = write_bundle(str(dest), _files(), want_diff=True)
    assert result.changed is False
    assert (result.added, result.removed, result.modified, result.diff) == ([], [], [], [])
    assert os.stat(dest).st_ino == inode  # nothing was swapped


def test_added_removed_modified_and_diff(tmp_path):
    dest = tmp_path / "bundle"
    write_bundle(str(dest), _files())
    new = _files(**{"a/values.yaml": BundleFile.text("x: 2\n"), "README.md": None,
                    "b/values.yaml": BundleFile.text("y: 1\n")})
    result = write_bundle(str(dest), new, want_diff=True)
    assert result.changed is True
    assert result.added == ["b/values.yaml"]
    assert result.removed == ["README.md"]
    assert result.modified == ["a/values.yaml"]
    by_path = {d["after_header"].split(" ")[0] if d["after_header"] != "/dev/null" else d["before_header"].split(" ")[0]: d
               for d in result.diff}
    assert by_path["a/values.yaml"]["before"] == "x: 1\n"
    assert by_path["a/values.yaml"]["after"] == "x: 2\n"
    assert by_path["b/values.yaml"]["before_header"] == "/dev/null"
    assert by_path["b/values.yaml"]["after"] == "y: 1\n"
    assert by_path["README.md"]["after_header"] == "/dev/null"
    assert by_path["README.md"]["before"] == "# bundle\n"
    assert set(by_path["a/values.yaml"]) == {"before", "after", "before_header", "after_header"}
    assert _tree(dest) == {k: (v.content, v.mode) for k, v in new.items()}


def test_mode_change_alone_is_a_change(tmp_path):
    dest = tmp_path / "bundle"
    write_bundle(str(dest), _files())
    result = write_bundle(str(dest), _files(**{"deploy.sh": BundleFile.text("#!/bin/bash\necho hi\n", mode=0o700)}),
                          want_diff=True)
    assert result.changed is True and result.modified == ["deploy.sh"]
    assert "0755" in result.diff[0]["before_header"] and "0700" in result.diff[0]["after_header"]
    assert stat.S_IMODE(os.stat(dest / "deploy.sh").st_mode) == 0o700


def test_check_mode_touches_nothing(tmp_path):
    dest = tmp_path / "bundle"
    result = write_bundle(str(dest), _files(), check_mode=True, want_diff=True)
    assert result.changed is True and result.added == sorted(_files())
    assert len(result.diff) == len(_files())
    assert not dest.exists() and list(tmp_path.iterdir()) == []
    write_bundle(str(dest), _files())
    before = _tree(dest)
    result = write_bundle(str(dest), _files(**{"a/values.yaml": BundleFile.text("x: 3\n")}), check_mode=True)
    assert result.changed is True and result.modified == ["a/values.yaml"]
    assert _tree(dest) == before


def test_failure_mid_write_keeps_old_bundle_and_cleans_up(tmp_path, monkeypatch):
    dest = tmp_path / "bundle"
    write_bundle(str(dest), _files())
    before = _tree(dest)
    real = bundle_writer._write_file
    calls = []

    def failing(path, content, mode):
        calls.append(path)
        if len(calls) == 3:
            raise OSError(28, "No space left on device", path)
        real(path, content, mode)

    monkeypatch.setattr(bundle_writer, "_write_file", failing)
    with pytest.raises(BundleWriteError) as err:
        write_bundle(str(dest), _files(**{"a/values.yaml": BundleFile.text("x: 9\n")}))
    assert "No space left on device" in str(err.value)
    assert len(calls) == 3
    assert _tree(dest) == before
    assert sorted(os.listdir(tmp_path)) == ["bundle"]  # no temp dir left behind


def test_failure_during_swap_restores_old_bundle(tmp_path, monkeypatch):
    dest = tmp_path / "bundle"
    write_bundle(str(dest), _files())
    before = _tree(dest)
    real_rename = os.rename
    calls = []

    def flaky_rename(src, dst):
        calls.append((src, dst))
        if len(calls) == 2:  # old bundle already moved aside, new one not yet in place
            raise OSError(5, "Input/output error", dst)
        real_rename(src, dst)

    monkeypatch.setattr(bundle_writer.os, "rename", flaky_rename)
    with pytest.raises(BundleWriteError):
        write_bundle(str(dest), _files(**{"a/values.yaml": BundleFile.text("x: 9\n")}))
    monkeypatch.setattr(bundle_writer.os, "rename", real_rename)
    assert _tree(dest) == before
    assert sorted(os.listdir(tmp_path)) == ["bundle"]


def test_failed_restore_keeps_the_only_copy_of_the_old_bundle(tmp_path, monkeypatch):
    dest = tmp_path / "bundle"
    write_bundle(str(dest), _files())
    before = _tree(dest)
    real_rename = os.rename
    calls = []

    def failing_rename(src, dst):
        calls.append((src, dst))
        if len(calls) >= 2:  # the new tree cannot be put in place, and the old one cannot be put back
            raise OSError(5, "Input/output error", dst)
        real_rename(src, dst)

    monkeypatch.setattr(bundle_writer.os, "rename", failing_rename)
    with pytest.raises(BundleWriteError) as err:
        write_bundle(str(dest), _files(**{"a/values.yaml": BundleFile.text("x: 9\n")}))
    monkeypatch.setattr(bundle_writer.os, "rename", real_rename)
    assert not dest.exists()
    aside = calls[0][1]
    assert os.path.basename(aside) == "old" and aside in str(err.value) and "restores it" in str(err.value)
    assert _tree(aside) == before
    restored = bundle_writer.remove_stale_temps(str(dest), now=os.path.getmtime(os.path.dirname(aside)) + bundle_writer.STALE_AFTER_S + 1)
    assert restored == [os.path.dirname(aside)] and _tree(dest) == before


def test_refuses_a_destination_holding_a_mount_point(tmp_path, monkeypatch):
    dest = tmp_path / "bundle"
    write_bundle(str(dest), _files())
    real_lstat = os.lstat

    def other_root_device(path, *args, **kwargs):  # the entries below look like another filesystem
        info = real_lstat(path, *args, **kwargs)
        if os.fspath(path) == str(dest):
            fields = list(info[:10])
            fields[2] += 1
            return os.stat_result(fields)
        return info

    monkeypatch.setattr(bundle_writer.os, "lstat", other_root_device)
    with pytest.raises(BundleWriteError) as err:
        bundle_writer._scan_tree(str(dest))  # pylint: disable=protected-access
    assert "mount point" in str(err.value) and str(dest) in str(err.value)


def test_refuses_file_destination(tmp_path):
    dest = tmp_path / "bundle"
    dest.write_text("not a dir")
    with pytest.raises(BundleWriteError) as err:
        write_bundle(str(dest), _files())
    assert "not a directory" in str(err.value) and str(dest) in str(err.value)


def test_refuses_symlink_destination(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink(str(tmp_path / "real"), str(tmp_path / "link"))
    with pytest.raises(BundleWriteError, match="symbolic link"):
        write_bundle(str(tmp_path / "link"), _files())


def test_refuses_unrelated_directory_unless_forced(tmp_path):
    dest = tmp_path / "home"
    dest.mkdir()
    (dest / "precious.txt").write_text("keep me")
    with pytest.raises(BundleWriteError) as err:
        write_bundle(str(dest), _files())
    assert "not a bundle" in str(err.value) and str(dest) in str(err.value)
    assert (dest / "precious.txt").read_text() == "keep me"
    # check mode refuses too: it must report what a real run would do
    with pytest.raises(BundleWriteError):
        write_bundle(str(dest), _files(), check_mode=True)
    result = write_bundle(str(dest), _files(), force=True)
    assert result.removed == ["precious.txt"]
    assert not (dest / "precious.txt").exists()


def test_empty_directory_is_accepted(tmp_path):
    dest = tmp_path / "bundle"
    dest.mkdir()
    assert write_bundle(str(dest), _files()).changed is True
    assert (dest / "recipe.yaml").exists()


@pytest.mark.parametrize("relpath", ["/etc/passwd", "../escape.txt", "a/../../x", "a//b", "./a", "", "a\\b", "C:/x"])
def test_rejects_unsafe_relpaths(tmp_path, relpath):
    with pytest.raises(BundleWriteError) as err:
        write_bundle(str(tmp_path / "bundle"), {relpath: BundleFile.text("x")})
    assert repr(relpath) in str(err.value)
    assert not (tmp_path / "bundle").exists()


def test_rejects_file_and_directory_clash_and_bad_mode(tmp_path):
    with pytest.raises(BundleWriteError, match="both as a file and as a directory"):
        write_bundle(str(tmp_path / "b"), {"a": BundleFile.text("1"), "a/b": BundleFile.text("2")})
    with pytest.raises(BundleWriteError, match="mode"):
        write_bundle(str(tmp_path / "b"), {"a": BundleFile(b"1", mode=0o4755)})
    with pytest.raises(RecipeError):
        write_bundle(str(tmp_path / "b"), {"a": "not a BundleFile"})


def test_binary_files_are_listed_but_not_diffed(tmp_path):
    dest = tmp_path / "bundle"
    result = write_bundle(str(dest), _files(**{"blob.bin": BundleFile(b"\x00\x01\xff")}), want_diff=True)
    assert "blob.bin" in result.added
    assert all(not d["after_header"].startswith("blob.bin") for d in result.diff)
    assert (dest / "blob.bin").read_bytes() == b"\x00\x01\xff"


def test_large_diff_is_truncated(tmp_path):
    big = "line\n" * 20000
    result = write_bundle(str(tmp_path / "bundle"), _files(**{"big.txt": BundleFile.text(big)}),
                          check_mode=True, want_diff=True)
    entry = [d for d in result.diff if d["after_header"].startswith("big.txt")][0]
    assert len(entry["after"]) < len(big)
    assert "truncated" in entry["after"]


def test_stray_symlink_in_old_bundle_is_removed(tmp_path):
    dest = tmp_path / "bundle"
    write_bundle(str(dest), _files())
    os.symlink("/etc/hostname", str(dest / "a" / "link"))
    result = write_bundle(str(dest), _files())
    assert result.changed is True and result.removed == ["a/link"]
    assert not os.path.lexists(dest / "a" / "link")


def test_result_to_dict():
    result = bundle_writer.BundleWriteResult(changed=True, added=["a"])
    assert result.to_dict() == {"changed": True, "added": ["a"], "removed": [], "modified": [], "diff": []}
