# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""bundle_writer: atomic, idempotent bundle trees with Ansible-style diffs."""
from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.dsxos.cluster.plugins.module_utils.common import process_liveness
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


# ------------------------------------------------------------------ temporary folders: is their owner still alive?

needs_proc = pytest.mark.skipif(not os.path.isfile("/proc/self/stat"), reason="needs the Linux /proc")
CHILD_ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))

#: A render that stops after writing its first file (its temporary folder exists) and waits to be killed.
RENDER_STALLED_MID_WRITE = textwrap.dedent("""
    import ctypes, os, sys, time
    from ansible_collections.dsxos.cluster.plugins.module_utils.configure import bundle_writer
    if len(sys.argv) > 2:  # the process name (comm) shown in /proc/<pid>/stat
        ctypes.CDLL(None).prctl(15, sys.argv[2].encode(), 0, 0, 0)
    real = bundle_writer._write_file
    def stalled(path, content, mode):
        real(path, content, mode)
        print(os.getpid(), flush=True)
        time.sleep(300)
    bundle_writer._write_file = stalled
    bundle_writer.write_bundle(sys.argv[1], {"recipe.yaml": bundle_writer.BundleFile.text("kind: RecipeResult\\n"),
                                             "a/values.yaml": bundle_writer.BundleFile.text("x: 2\\n")})
""")

#: Makes itself a child subreaper, starts the render through a parent that exits at once (the render is an orphan,
#: reparented to this process) and never reaps it: once killed, the orphan stays a zombie.
SUBREAPER = textwrap.dedent("""
    import ctypes, os, signal, subprocess, sys, time
    if ctypes.CDLL(None).prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        sys.exit(3)
    def reap_all_and_exit(*_args):
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                sys.exit(0)
    signal.signal(signal.SIGTERM, reap_all_and_exit)
    middle = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.Popen(sys.argv[1:])",
                               sys.executable, "-c"] + sys.argv[1:])
    middle.wait()
    time.sleep(300)
""")


def _proc_fields(pid):
    """The fields of /proc/<pid>/stat after the process name, read here without the code under test; None if gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].decode().split()
    except OSError:
        return None


def _wait_until(predicate, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.02)


def _wait_zombie(pid):
    _wait_until(lambda: (_proc_fields(pid) or ["?"])[0] == "Z", "pid %d to be a zombie" % pid)
    os.kill(pid, 0)  # what the old check asked: it succeeds on a zombie


def _started_at(pid):
    """Wall-clock start of ``pid``: /proc/stat btime + /proc/<pid>/stat field 22 (clock ticks after boot)."""
    with open("/proc/stat", encoding="ascii") as handle:
        btime = int(re.search(r"^btime (\d+)$", handle.read(), re.M).group(1))
    return btime + int(_proc_fields(pid)[19]) / os.sysconf("SC_CLK_TCK")


def _temp_name(dest, pid, suffix):
    """The name a render with ``pid`` on this host gives its temporary folder for ``dest``."""
    return re.sub(r"-\d+-$", "-%d-" % pid, bundle_writer.temp_prefix(str(dest))) + suffix


def _leftovers(parent):
    return sorted(name for name in os.listdir(parent) if name != "bundle")


def _stop(proc):
    if proc.poll() is None:
        proc.kill()
    proc.wait()


@needs_proc
def test_temp_folder_of_a_killed_unreaped_render_is_removed(tmp_path):
    """Issue 23: a render SIGKILLed mid-write that its parent has not reaped is a zombie; kill(pid, 0) succeeds on it,
    yet it is gone: the next write removes its folder (while it ran, its folder was kept)."""
    dest = tmp_path / "bundle"
    write_bundle(str(dest), _files())
    render = subprocess.Popen([sys.executable, "-c", RENDER_STALLED_MID_WRITE, str(dest)], stdout=subprocess.PIPE,
                              env=CHILD_ENV)
    try:
        assert int(render.stdout.readline()) == render.pid
        leftover = _leftovers(tmp_path)
        assert len(leftover) == 1 and "-%d-" % render.pid in leftover[0]
        assert write_bundle(str(dest), _files()).stale_removed == []  # a live render's folder is kept
        os.kill(render.pid, signal.SIGKILL)  # and deliberately not reaped
        _wait_zombie(render.pid)
        result = write_bundle(str(dest), _files(**{"a/values.yaml": BundleFile.text("x: 3\n")}))
        assert result.stale_removed == [str(tmp_path / leftover[0])]
        assert _leftovers(tmp_path) == []
        assert (dest / "a" / "values.yaml").read_text() == "x: 3\n"
        assert _proc_fields(render.pid)[0] == "Z"  # removed because it is a zombie, not because it was reaped
    finally:
        render.stdout.close()
        _stop(render)


@needs_proc
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux only")
def test_temp_folder_of_a_killed_orphan_render_is_removed(tmp_path):
    """A render whose parent exited is an orphan: alive, its folder is kept; SIGKILLed under a parent (subreaper)
    that never reaps it, it is an orphaned zombie and its folder is removed."""
    dest = tmp_path / "bundle"
    write_bundle(str(dest), _files())
    reaper = subprocess.Popen([sys.executable, "-c", SUBREAPER, RENDER_STALLED_MID_WRITE, str(dest)],
                              stdout=subprocess.PIPE, env=CHILD_ENV)
    orphan = None
    try:
        orphan = int(reaper.stdout.readline())
        _wait_until(lambda: (_proc_fields(orphan) or ["?", "?"])[1] == str(reaper.pid), "the render to be an orphan")
        leftover = _leftovers(tmp_path)
        assert len(leftover) == 1 and "-%d-" % orphan in leftover[0]
        assert write_bundle(str(dest), _files()).stale_removed == []
        assert _leftovers(tmp_path) == leftover
        os.kill(orphan, signal.SIGKILL)
        _wait_zombie(orphan)
        assert write_bundle(str(dest), _files()).stale_removed == [str(tmp_path / leftover[0])]
        assert _leftovers(tmp_path) == [] and (dest / "recipe.yaml").is_file()
    finally:
        if orphan is not None and (_proc_fields(orphan) or ["Z"])[0] != "Z":
            os.kill(orphan, signal.SIGKILL)
        reaper.stdout.close()
        reaper.terminate()  # it reaps the orphan's zombie, then exits
        try:
            reaper.wait(timeout=30)
        finally:
            _stop(reaper)


@needs_proc
def test_temp_folder_whose_pid_a_later_process_reuses_is_removed(tmp_path):
    """A live process with the folder's pid that started after the folder was made is not its owner (pid reuse);
    a folder made after (or at most about 2 s before, clock-tick slack) the process started is its own."""
    dest = tmp_path / "bundle"
    write_bundle(str(dest), _files())
    later = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        started = _started_at(later.pid)
        reused = tmp_path / _temp_name(dest, later.pid, "reused")
        within_slack = tmp_path / _temp_name(dest, later.pid, "slack1")
        own = tmp_path / _temp_name(dest, later.pid, "own")
        for path, made in ((reused, started - 120), (within_slack, started - 1), (own, None)):
            (path / "new").mkdir(parents=True)
            if made is not None:  # two minutes before the process started: far below the 30 minute age limit
                os.utime(path, (made, made))
        assert write_bundle(str(dest), _files()).stale_removed == [str(reused)]
        assert within_slack.is_dir() and own.is_dir()
    finally:
        _stop(later)


@needs_proc
def test_folder_with_the_writers_own_pid_from_before_it_started_is_removed(tmp_path):
    """The writer's own pid is reused too when the folder predates the writer: such a folder is removed, one the
    writer made itself is kept."""
    dest = tmp_path / "bundle"
    write_bundle(str(dest), _files())
    cleaner = subprocess.Popen(
        [sys.executable, "-c", "import json, sys\n"
         "from ansible_collections.dsxos.cluster.plugins.module_utils.configure import bundle_writer\n"
         "sys.stdin.readline()\nprint(json.dumps(bundle_writer.remove_stale_temps(sys.argv[1])))", str(dest)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=CHILD_ENV)
    try:
        earlier = tmp_path / _temp_name(dest, cleaner.pid, "earlier")
        mine = tmp_path / _temp_name(dest, cleaner.pid, "mine")
        earlier.mkdir()
        mine.mkdir()
        made = _started_at(cleaner.pid) - 60
        os.utime(earlier, (made, made))
        out, _err = cleaner.communicate("go\n", timeout=60)
        assert json.loads(out) == [str(earlier)]
        assert mine.is_dir() and not earlier.exists()
    finally:
        _stop(cleaner)


@needs_proc
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to run processes of two users")
def test_another_users_render_is_alive_unless_a_zombie(tmp_path):
    """kill(pid, 0) fails with EPERM on another user's process: that process is alive (its folder kept) unless
    /proc says it is a zombie (its folder removed). The cleaner runs as nobody, the renders as root."""
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    zombie = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    parent = tempfile.mkdtemp(prefix="bundle-eperm-")  # tmp_path's parents are private to root
    try:
        os.chmod(parent, 0o777)
        dest = os.path.join(parent, "bundle")
        folders = {}
        for name, proc in (("live", live), ("zombie", zombie)):
            folders[name] = os.path.join(parent, _temp_name(dest, proc.pid, name))
            os.mkdir(folders[name], 0o777)
            os.chmod(folders[name], 0o777)
        zombie.kill()
        _wait_zombie(zombie.pid)
        reader, writer = os.pipe()
        child = os.fork()
        if child == 0:  # pragma: no cover - runs in the forked child
            code = 1
            try:
                os.close(reader)
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                errors = []
                for pid in (live.pid, zombie.pid):
                    try:
                        os.kill(pid, 0)
                        errors.append(None)
                    except OSError as exc:
                        errors.append(exc.errno)
                answer = {"errors": errors, "removed": bundle_writer.remove_stale_temps(dest)}
                os.write(writer, json.dumps(answer).encode())
                code = 0
            finally:
                os._exit(code)
        os.close(writer)
        with os.fdopen(reader, "rb") as handle:
            answer = json.loads(handle.read() or b"{}")
        assert os.waitpid(child, 0)[1] == 0
        assert answer["errors"] == [errno.EPERM, errno.EPERM]  # the old check called both alive
        assert answer["removed"] == [folders["zombie"]]
        assert os.path.isdir(folders["live"]) and not os.path.exists(folders["zombie"])
    finally:
        _stop(live)
        _stop(zombie)
        shutil.rmtree(parent, ignore_errors=True)


@needs_proc
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_NAME) is Linux only")
@pytest.mark.parametrize("live_comm, dead_comm", [("a) Z (b", "a) R (b"), ("x) X 1 2 (", "sleep) S (s"), ("a b c d e", ")")])
def test_hostile_process_names_do_not_fool_the_liveness_check(tmp_path, live_comm, dead_comm):
    """/proc/<pid>/stat shows the process name in parentheses, and a name may hold spaces and parentheses: the state
    is read after the LAST ')'. A live render named like a zombie is kept, a zombie named like a live one is removed."""
    dest = tmp_path / "bundle"
    write_bundle(str(dest), _files())
    renders = [subprocess.Popen([sys.executable, "-c", RENDER_STALLED_MID_WRITE, str(dest), comm], stdout=subprocess.PIPE,
                                env=CHILD_ENV) for comm in (live_comm, dead_comm)]
    try:
        for render in renders:
            assert int(render.stdout.readline()) == render.pid
        with open("/proc/%d/stat" % renders[0].pid, "rb") as handle:
            assert b"(" + live_comm.encode() + b")" in handle.read()
        names = {render.pid: [n for n in _leftovers(tmp_path) if "-%d-" % render.pid in n][0] for render in renders}
        os.kill(renders[1].pid, signal.SIGKILL)
        _wait_zombie(renders[1].pid)
        assert write_bundle(str(dest), _files()).stale_removed == [str(tmp_path / names[renders[1].pid])]
        assert _leftovers(tmp_path) == [names[renders[0].pid]]
    finally:
        for render in renders:
            render.stdout.close()
            _stop(render)


def test_temp_folder_with_a_number_no_pid_can_have_is_removed(tmp_path):
    """A pid beyond pid_t (2**31 - 1) can belong to no process: the folder is gone, and the check does not crash
    (kill() raised OverflowError on such a number); a bundle moved aside in it is put back."""
    dest = tmp_path / "bundle"
    write_bundle(str(dest), _files())
    big = [tmp_path / _temp_name(dest, pid, "big") for pid in (2 ** 31, 2 ** 64, 10 ** 40)]
    for path in big:
        path.mkdir()
    os.rename(dest, big[0] / "old")
    assert bundle_writer.remove_stale_temps(str(dest)) == sorted(str(path) for path in big)
    assert _leftovers(tmp_path) == [] and (dest / "recipe.yaml").read_text() == "kind: RecipeResult\n"
    assert process_liveness.owner_alive(2 ** 31 - 1) is False  # the largest pid_t: asked, no such process


_COMM = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=15)
_STATE = st.sampled_from("RSDZTtWXxKPI")


def _stat_line(pid, comm, state, start_ticks):
    fields = [str(pid), "(%s)" % comm, state] + ["0"] * 18 + [str(start_ticks)] + ["0"] * 30
    return " ".join(fields) + "\n"


@given(pid=st.integers(1, 2 ** 22), comm=_COMM, state=_STATE, start=st.integers(0, 2 ** 40))
@settings(max_examples=300, deadline=None)
def test_parse_proc_stat_takes_the_fields_after_the_last_parenthesis(pid, comm, state, start):
    info = process_liveness.parse_proc_stat(_stat_line(pid, comm, state, start))
    assert (info.pid, info.comm, info.state, info.start_ticks) == (pid, comm, state, start)


@pytest.mark.parametrize("line", ["", "123", "123 (x)", "x (y) S " + "0 " * 30, "12 (x) SS " + "0 " * 30,
                                  "12 (x) S " + "0 " * 10, "12 (x) S " + "0 " * 18 + "-5 0 0"])
def test_parse_proc_stat_refuses_what_is_not_a_stat_line(line):
    with pytest.raises(ValueError):
        process_liveness.parse_proc_stat(line)


@given(comm=_COMM, state=_STATE, offset=st.integers(-36000, 36000).map(lambda tenths: tenths / 10.0))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_owner_alive_follows_state_and_start_time_of_proc(tmp_path, comm, state, offset):
    """owner_alive() over a /proc copy describing this (live) process with any name, state and start time: alive
    exactly when the state is not Z/X/x and the process started at most 2 s after the folder was made."""
    proc = tmp_path / "proc"
    (proc / str(os.getpid())).mkdir(parents=True, exist_ok=True)
    (proc / "stat").write_text("cpu  1 2 3\nbtime 1000000000\nprocesses 5\n")
    ticks = os.sysconf("SC_CLK_TCK")
    start_ticks = 50000 * ticks
    (proc / str(os.getpid()) / "stat").write_bytes(_stat_line(os.getpid(), comm, state, start_ticks).encode())
    made = 1000000000 + 50000 + offset
    alive = process_liveness.owner_alive(os.getpid(), made_at=made, proc=str(proc))
    assert alive == (state not in "ZXx" and offset >= -process_liveness.START_SLACK_S)


@needs_proc
def test_without_proc_only_kill_0_is_asked(tmp_path):
    """Where /proc cannot be read (not Linux), the check is the old one: kill(pid, 0), so a zombie counts as alive
    (its folder goes after 30 minutes); with /proc it is gone. A pid no process has is gone either way."""
    zombie = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        zombie.kill()
        _wait_zombie(zombie.pid)
        assert process_liveness.owner_alive(zombie.pid, made_at=time.time(), proc=str(tmp_path / "no-proc")) is True
        assert process_liveness.owner_alive(zombie.pid, made_at=time.time()) is False
        assert process_liveness.owner_alive(os.getpid(), made_at=time.time(), proc=str(tmp_path / "no-proc")) is True
        assert process_liveness.owner_alive(os.getpid(), made_at=time.time()) is True
    finally:
        _stop(zombie)
    with open("/proc/sys/kernel/pid_max", encoding="ascii") as handle:
        no_such_pid = int(handle.read()) + 1
    for pid in (no_such_pid, 0, -1):
        assert process_liveness.owner_alive(pid, made_at=time.time()) is False
        assert process_liveness.owner_alive(pid, proc=str(tmp_path / "no-proc")) is False
