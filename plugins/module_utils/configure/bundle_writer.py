# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Atomic, idempotent writing of a rendered bundle (a tree of files) to disk.

A bundle is ``{relative POSIX path: BundleFile}``.  :func:`write_bundle` compares it with
what is on disk, reports ``added``/``removed``/``modified`` paths and an Ansible-style diff,
and, only when something differs, replaces the destination directory in one swap:

1. every file is written into a fresh temporary directory created *next to* ``dest``
   (same filesystem) and chmod'ed to its mode; then the whole new tree is made durable in one pass (one
   ``syncfs`` of that file system on Linux 5.8+, else an ``fsync`` of every file, then of every directory);
2. the old ``dest`` is renamed aside, the new tree renamed into place, the old tree removed.

Any failure before the swap leaves the old bundle untouched and removes the temporary
directory; a failure during the swap puts the old bundle back.

Hostile destinations (see ``docs/bundles.md``, "Limits"):

* a destination that is not a bundle (no regular ``checksums.txt`` or ``recipe.yaml`` in it) is refused
  *before anything in it is read* unless ``force``; ``/`` and mount points are always refused;
* what is read of an existing bundle is bounded: at most :data:`MAX_TREE_ENTRIES` entries, symlinks are never
  followed (they are entries of their own), FIFOs/devices/sockets and other filesystems are never opened, files
  are compared with the new content by size first and then chunk by chunk (never read whole into memory), and
  diff text reads at most :data:`MAX_DIFF_READ` bytes of a file;
* a render killed at any moment leaves at most one temporary folder ``.<dest>.bundle-tmp-<host>-<pid>-XXXX``;
  the next (non check mode) write to the same ``dest`` removes those whose process is gone (no such pid, a zombie,
  or a pid reused since the folder was made) or that are older than :data:`STALE_AFTER_S`, first putting back a
  bundle the killed render had moved aside.
"""
from __future__ import annotations

import os
import platform
import posixpath
import re
import shutil
import stat
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.common.process_liveness import owner_alive
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError

#: Files whose presence marks a directory as a bundle we may replace.
BUNDLE_MARKERS = ("checksums.txt", "recipe.yaml")
#: Per-file limit of diff text (characters) and of diff entries reported.
MAX_DIFF_CHARS = 32 * 1024
MAX_DIFF_FILES = 200
DEFAULT_FILE_MODE = 0o644
DIR_MODE = 0o755
#: Most entries (files, symlinks, specials) an existing destination may hold; bundles hold a few hundred.
MAX_TREE_ENTRIES = 20000
#: Most bytes of one existing file read to show it in a diff.
MAX_DIFF_READ = 4 * MAX_DIFF_CHARS
#: Bytes compared at a time when checking whether an existing file already holds the new content.
COMPARE_CHUNK = 1024 * 1024
#: A temporary folder of a live render older than this (seconds) is stale too.
STALE_AFTER_S = 30 * 60
TEMP_TAG = ".bundle-tmp-"
#: How a new tree is made durable before the swap: ``auto`` (``syncfs`` on Linux 5.8+, else ``fsync``) or
#: ``fsync`` (every file, then every directory). Never skipped: see :func:`_make_durable`.
SYNC_METHOD = "auto"


class BundleWriteError(RenderError):
    """The bundle could not be written (unsafe destination, bad path, I/O error)."""


@dataclass(frozen=True)
class BundleFile:
    """One file of a bundle: raw bytes and a permission mode (``0o644``, ``0o755``)."""

    content: bytes
    mode: int = DEFAULT_FILE_MODE

    @classmethod
    def text(cls, text: str, mode: int = DEFAULT_FILE_MODE) -> "BundleFile":
        """A UTF-8 text file."""
        return cls(content=text.encode("utf-8"), mode=mode)


@dataclass
class BundleWriteResult:
    """What :func:`write_bundle` did (or, in check mode, would do)."""

    changed: bool
    added: List[str] = field(default_factory=list)
    removed: List[str] = field(default_factory=list)
    modified: List[str] = field(default_factory=list)
    diff: List[Dict[str, str]] = field(default_factory=list)
    #: stale temporary folders of killed renders removed by this write (not part of :meth:`to_dict`)
    stale_removed: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return {"changed": self.changed, "added": list(self.added), "removed": list(self.removed),
                "modified": list(self.modified), "diff": [dict(d) for d in self.diff]}


def check_relpath(relpath: Any) -> str:
    """Return ``relpath`` if it is a safe relative POSIX path inside a bundle, else raise."""
    if not isinstance(relpath, str) or not relpath:
        raise BundleWriteError("bundle path must be a non-empty string", field="path", value=relpath)
    if relpath.startswith("/") or "\\" in relpath or "\0" in relpath or (len(relpath) > 1 and relpath[1] == ":"):
        raise BundleWriteError("bundle path must be relative (no leading '/', drive or backslash)",
                               field="path", value=relpath)
    parts = relpath.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise BundleWriteError("bundle path must not contain '..', '.' or empty components",
                               field="path", value=relpath)
    return relpath


def _check_files(files: Dict[str, BundleFile]) -> None:
    dirs = set()
    for relpath, bfile in files.items():
        check_relpath(relpath)
        if not isinstance(bfile, BundleFile) or not isinstance(bfile.content, bytes):
            raise BundleWriteError("bundle entry must be a BundleFile with bytes content", field="path", value=relpath)
        if not isinstance(bfile.mode, int) or isinstance(bfile.mode, bool) or not 0 <= bfile.mode <= 0o777:
            raise BundleWriteError("file mode must be an integer between 0 and 0o777", field="mode",
                                   value="%s: %r" % (relpath, bfile.mode))
        parent = posixpath.dirname(relpath)
        while parent:
            dirs.add(parent)
            parent = posixpath.dirname(parent)
    clash = sorted(dirs.intersection(files))
    if clash:
        raise BundleWriteError("bundle path is used both as a file and as a directory", field="path", value=clash[0])


@dataclass(frozen=True)
class _OldEntry:
    """One entry of the existing destination, from ``lstat`` only (nothing is read)."""

    full: str
    mode: int
    size: int
    regular: bool
    dev: int
    ino: int


def _scan_tree(root: str) -> Dict[str, _OldEntry]:
    """Entries under ``root`` (relpath -> :class:`_OldEntry`), without reading any file and without following
    symlinks; an entry on another filesystem (a mount point) or more than :data:`MAX_TREE_ENTRIES` is refused."""
    tree: Dict[str, _OldEntry] = {}
    root_dev = os.lstat(root).st_dev
    pending: List[Tuple[str, str]] = [(root, "")]
    while pending:
        directory, rel_dir = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                rel = entry.name if not rel_dir else rel_dir + "/" + entry.name
                info = entry.stat(follow_symlinks=False)
                if info.st_dev != root_dev:
                    raise BundleWriteError("destination contains a mount point (another filesystem); refusing to move or "
                                           "remove it", path=entry.path, field="dest")
                if stat.S_ISDIR(info.st_mode):
                    pending.append((entry.path, rel))
                    continue
                tree[rel] = _OldEntry(entry.path, stat.S_IMODE(info.st_mode), info.st_size, stat.S_ISREG(info.st_mode),
                                      info.st_dev, info.st_ino)
                if len(tree) > MAX_TREE_ENTRIES:
                    raise BundleWriteError("destination holds more than %d entries; it is not a bundle this module wrote, "
                                           "refusing to read or replace it" % MAX_TREE_ENTRIES, path=root, field="dest")
    return tree


def _open_entry(entry: _OldEntry) -> Optional[int]:
    """A read descriptor of ``entry`` when it still is the same regular file (never a symlink, never blocking)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(entry.full, flags)
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != (entry.dev, entry.ino):
        os.close(fd)
        return None
    return fd


def _same_content(entry: _OldEntry, content: bytes) -> bool:
    """Does ``entry`` hold exactly ``content``?  Size first, then chunk by chunk (bounded memory)."""
    if not entry.regular or entry.size != len(content):
        return False
    fd = _open_entry(entry)
    if fd is None:
        return False
    try:
        view = memoryview(content)
        offset = 0
        while True:
            chunk = os.read(fd, COMPARE_CHUNK)
            if not chunk:
                return offset == len(content)
            if view[offset:offset + len(chunk)] != chunk:
                return False
            offset += len(chunk)
    finally:
        os.close(fd)


def _old_content(entry: Optional[_OldEntry]) -> Optional[bytes]:
    """At most :data:`MAX_DIFF_READ` bytes of an existing regular file, for the diff; ``None`` for anything else."""
    if entry is None or not entry.regular:
        return None
    fd = _open_entry(entry)
    if fd is None:
        return None
    try:
        raw = os.read(fd, MAX_DIFF_READ)
    finally:
        os.close(fd)
    if entry.size > len(raw):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start >= len(raw) - 4:  # cut inside a multi-byte character
                raw = raw[:exc.start]
        raw += b"\n... [truncated: file is %d bytes]\n" % entry.size
    return raw


def _as_text(content: Optional[bytes]) -> Optional[str]:
    if content is None:
        return None
    if b"\0" in content:
        return None
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text) > MAX_DIFF_CHARS:
        text = text[:MAX_DIFF_CHARS] + "\n... [truncated: %d more characters]\n" % (len(text) - MAX_DIFF_CHARS)
    return text


def _diff_entry(relpath: str, old: Optional[_OldEntry], new: Optional[BundleFile]) -> Optional[Dict[str, str]]:
    before = _as_text(_old_content(old)) if old is not None else ""
    after = _as_text(new.content) if new is not None else ""
    if before is None or after is None:
        return None  # binary or special file: listed in added/removed/modified only
    before_header = "%s (mode %04o)" % (relpath, old.mode) if old is not None else "/dev/null"
    after_header = "%s (mode %04o)" % (relpath, new.mode) if new is not None else "/dev/null"
    return {"before": before, "after": after, "before_header": before_header, "after_header": after_header}


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _write_file(path: str, content: bytes, mode: int) -> None:
    """Create ``path`` (must not exist), write and chmod it; :func:`_make_durable` syncs it afterwards."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)
    os.chmod(path, mode)


def _load_syncfs() -> Optional[Tuple[Callable[[int], int], Callable[[], int]]]:
    """``(syncfs, get_errno)`` from the C library on Linux 5.8 or later (where ``syncfs`` reports writeback errors
    of the file system, like ``fsync``), else ``None``."""
    if not sys.platform.startswith("linux"):
        return None
    release = re.match(r"(\d+)\.(\d+)", platform.release())
    if release is None or (int(release.group(1)), int(release.group(2))) < (5, 8):
        return None
    try:
        import ctypes  # pylint: disable=import-outside-toplevel
        libc = ctypes.CDLL(None, use_errno=True)
        func = libc.syncfs
    except (ImportError, OSError, AttributeError):
        return None
    func.argtypes = [ctypes.c_int]
    func.restype = ctypes.c_int
    return func, ctypes.get_errno


_SYNCFS: List[Optional[Tuple[Callable[[int], int], Callable[[], int]]]] = []


def sync_method() -> str:
    """How :func:`write_bundle` makes a new tree durable before swapping it in: ``syncfs`` or ``fsync``
    (:data:`SYNC_METHOD`, ``auto`` picking ``syncfs`` where the platform has it)."""
    if SYNC_METHOD == "fsync":
        return "fsync"
    if not _SYNCFS:
        _SYNCFS.append(_load_syncfs())
    return "syncfs" if _SYNCFS[0] is not None else "fsync"


def _make_durable(root: str, files: Dict[str, BundleFile], dirs: Set[str]) -> None:
    """Make every file and directory of the new tree ``root`` durable before the swap.

    ``syncfs``: ONE call flushes the file system holding ``root`` (every file's data and metadata, the directory
    entries) and reports any writeback error, instead of one ``fsync`` per file and directory (each a journal
    commit on ext4/XFS). Otherwise every file is fsync'ed in one pass after all were written, then every
    directory, deepest first. Either way a failure raises ``OSError`` before the swap (the old bundle stays)."""
    if sync_method() == "syncfs":
        func, get_errno = _SYNCFS[0]  # type: ignore[misc]
        fd = os.open(root, os.O_RDONLY)
        try:
            if func(fd) != 0:
                code = get_errno()
                raise OSError(code, os.strerror(code), root)
        finally:
            os.close(fd)
        return
    for relpath in sorted(files):
        path = os.path.join(root, *relpath.split("/"))
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    for parent in sorted(dirs, key=len, reverse=True):
        _fsync_dir(os.path.join(root, *parent.split("/")))
    _fsync_dir(root)


def _populate(root: str, files: Dict[str, BundleFile]) -> None:
    made: Set[str] = set()
    for relpath in sorted(files):
        parent = posixpath.dirname(relpath)
        if parent and parent not in made:
            os.makedirs(os.path.join(root, *parent.split("/")), mode=DIR_MODE, exist_ok=True)
            while parent:
                made.add(parent)
                parent = posixpath.dirname(parent)
        _write_file(os.path.join(root, *relpath.split("/")), files[relpath].content, files[relpath].mode)
    _make_durable(root, files, made)


def _swap(dest: str, new_tree: str, work: str) -> None:
    """Put ``new_tree`` at ``dest``; the previous ``dest`` (if any) is moved into ``work`` first."""
    old_aside = os.path.join(work, "old")
    had_old = os.path.lexists(dest)
    if had_old:
        os.rename(dest, old_aside)
    try:
        os.rename(new_tree, dest)
    except BaseException:
        if had_old:
            os.rename(old_aside, dest)
        raise
    _fsync_dir(os.path.dirname(dest))


def _host_token() -> str:
    return re.sub(r"[^A-Za-z0-9]", "", os.uname().nodename)[:16] or "host"


def temp_prefix(dest: str) -> str:
    """Name prefix of the temporary folders a write to ``dest`` makes (next to it): recognisable and owned."""
    return ".%s%s%s-%d-" % (os.path.basename(dest), TEMP_TAG, _host_token(), os.getpid())


def remove_stale_temps(dest: str, now: Optional[float] = None) -> List[str]:
    """Remove the temporary folders of earlier writes to ``dest`` whose process is gone (same host: no such pid, a
    zombie, or a pid reused by a process started after the folder was made; see
    :func:`~ansible_collections.dsxos.cluster.plugins.module_utils.common.process_liveness.owner_alive`) or that are
    older than :data:`STALE_AFTER_S`; a bundle such a write had moved aside (killed mid-swap) is put back first.
    Returns the removed paths."""
    parent = os.path.dirname(dest)
    pattern = re.compile(r"^%s%s(?P<host>[A-Za-z0-9]*)-(?P<pid>\d+)-[A-Za-z0-9_]+$"
                         % (re.escape("." + os.path.basename(dest)), re.escape(TEMP_TAG)))
    now = time.time() if now is None else now
    host = _host_token()
    removed: List[str] = []
    try:
        names = [entry.name for entry in os.scandir(parent) if pattern.match(entry.name)]
    except OSError:
        return removed
    for name in sorted(names):
        match = pattern.match(name)
        path = os.path.join(parent, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or match is None:
            continue
        old_enough = now - info.st_mtime > STALE_AFTER_S
        # gone: no such pid, a zombie, or a pid reused by a process started after the folder was made
        dead = match.group("host") == host and not owner_alive(int(match.group("pid")), made_at=info.st_mtime)
        if not (dead or old_enough):
            continue
        aside = os.path.join(path, "old")
        if not os.path.lexists(dest) and os.path.isdir(aside) and not os.path.islink(aside):
            try:
                os.rename(aside, dest)
            except OSError:
                pass
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            removed.append(path)
    return removed


def _is_bundle(dest: str) -> bool:
    for marker in BUNDLE_MARKERS:
        try:
            if stat.S_ISREG(os.lstat(os.path.join(dest, marker)).st_mode):
                return True
        except OSError:
            continue
    return False


def _is_empty_dir(dest: str) -> bool:
    with os.scandir(dest) as entries:
        return next(entries, None) is None


def write_bundle(dest: str, files: Dict[str, BundleFile], check_mode: bool = False, want_diff: bool = False,
                 force: bool = False) -> BundleWriteResult:
    """Make directory ``dest`` hold exactly ``files``; see the module docstring.

    ``force`` allows replacing a non-empty directory that does not look like a bundle
    (no ``checksums.txt`` and no ``recipe.yaml``); without it such a directory is refused.
    """
    if not isinstance(dest, str) or not dest:
        raise BundleWriteError("bundle destination must be a non-empty path", field="dest", value=dest)
    _check_files(files)
    dest = os.path.abspath(dest)
    if os.path.islink(dest):
        raise BundleWriteError("bundle destination is a symbolic link; refusing to replace it", path=dest, field="dest")
    if os.path.lexists(dest) and not os.path.isdir(dest):
        raise BundleWriteError("bundle destination exists and is not a directory", path=dest, field="dest")
    if os.path.realpath(dest) == os.path.realpath(os.sep) or os.path.ismount(dest):
        raise BundleWriteError("bundle destination is / or a mount point; refusing to replace it", path=dest, field="dest")

    try:
        is_dir = os.path.isdir(dest)
        if is_dir and not force and not _is_bundle(dest) and not _is_empty_dir(dest):
            raise BundleWriteError("destination is a non-empty directory that is not a bundle (no %s); "
                                   "refusing to read or replace it without force" % " or ".join(BUNDLE_MARKERS),
                                   path=dest, field="dest")
        stale = [] if check_mode else remove_stale_temps(dest)
        old = _scan_tree(dest) if is_dir else {}
        added = sorted(p for p in files if p not in old)
        removed = sorted(p for p in old if p not in files)
        modified = sorted(p for p in files if p in old and (
            old[p].mode != files[p].mode or not _same_content(old[p], files[p].content)))
    except OSError as exc:
        raise BundleWriteError("cannot read existing bundle: %s" % exc.strerror, path=exc.filename or dest,
                               field="dest") from None
    changed = bool(added or removed or modified) or not is_dir
    result = BundleWriteResult(changed=changed, added=added, removed=removed, modified=modified, stale_removed=stale)
    if want_diff:
        for relpath in sorted(added + removed + modified):
            if len(result.diff) >= MAX_DIFF_FILES:
                result.diff.append({"before": "", "after": "", "before_header": "...",
                                    "after_header": "... [diff truncated after %d files]" % MAX_DIFF_FILES})
                break
            entry = _diff_entry(relpath, old.get(relpath), files.get(relpath))
            if entry is not None:
                result.diff.append(entry)
    if not changed or check_mode:
        return result

    parent = os.path.dirname(dest)
    work = None
    try:
        os.makedirs(parent, exist_ok=True)
        work = tempfile.mkdtemp(prefix=temp_prefix(dest), dir=parent)
        new_tree = os.path.join(work, "new")
        os.mkdir(new_tree)
        mode = stat.S_IMODE(os.stat(dest).st_mode) if os.path.isdir(dest) else DIR_MODE
        os.chmod(new_tree, mode)
        _populate(new_tree, files)
        _swap(dest, new_tree, work)
    except OSError as exc:
        message = "cannot write bundle: %s" % exc.strerror
        if _holds_only_old_bundle(work, dest):
            message += ("; the previous bundle could not be put back and is kept in %s (the next write to this "
                        "destination restores it)" % os.path.join(work or "", "old"))
        raise BundleWriteError(message, path=exc.filename or dest, field="dest") from None
    finally:
        if work is not None and not _holds_only_old_bundle(work, dest):
            shutil.rmtree(work, ignore_errors=True)
    return result


def _holds_only_old_bundle(work: Optional[str], dest: str) -> bool:
    """True when ``work`` holds the only copy of the previous bundle (moved aside, not put back): never remove it,
    :func:`remove_stale_temps` restores it."""
    return work is not None and os.path.lexists(os.path.join(work, "old")) and not os.path.lexists(dest)
