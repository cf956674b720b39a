# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Atomic, idempotent writing of a rendered bundle (a tree of files) to disk.

A bundle is ``{relative POSIX path: BundleFile}``.  :func:`write_bundle` compares it with
what is on disk, reports ``added``/``removed``/``modified`` paths and an Ansible-style diff,
and, only when something differs, replaces the destination directory in one swap:

1. every file is written into a fresh temporary directory created *next to* ``dest``
   (same filesystem), each file fsync'ed and chmod'ed to its mode;
2. the old ``dest`` is renamed aside, the new tree renamed into place, the old tree removed.

Any failure before the swap leaves the old bundle untouched and removes the temporary
directory; a failure during the swap puts the old bundle back.
"""
from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError

#: Files whose presence marks a directory as a bundle we may replace.
BUNDLE_MARKERS = ("checksums.txt", "recipe.yaml")
#: Per-file limit of diff text (characters) and of diff entries reported.
MAX_DIFF_CHARS = 32 * 1024
MAX_DIFF_FILES = 200
DEFAULT_FILE_MODE = 0o644
DIR_MODE = 0o755


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


def _read_tree(root: str) -> Dict[str, Tuple[Optional[bytes], int]]:
    """Current files under ``root``: relpath -> (content, mode).  Symlinks/specials read as ``None``."""
    tree: Dict[str, Tuple[Optional[bytes], int]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root)
        names = list(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        for name in names:
            full = os.path.join(dirpath, name)
            rel = name if rel_dir == "." else "/".join(rel_dir.split(os.sep) + [name])
            info = os.lstat(full)
            if stat.S_ISREG(info.st_mode):
                with open(full, "rb") as handle:
                    tree[rel] = (handle.read(), stat.S_IMODE(info.st_mode))
            else:
                tree[rel] = (None, stat.S_IMODE(info.st_mode))
    return tree


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


def _diff_entry(relpath: str, old: Optional[Tuple[Optional[bytes], int]], new: Optional[BundleFile]) -> Optional[Dict[str, str]]:
    before = _as_text(old[0]) if old is not None else ""
    after = _as_text(new.content) if new is not None else ""
    if before is None or after is None:
        return None  # binary or special file: listed in added/removed/modified only
    before_header = "%s (mode %04o)" % (relpath, old[1]) if old is not None else "/dev/null"
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
    """Create ``path`` (must not exist), write, fsync and chmod it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(path, mode)


def _populate(root: str, files: Dict[str, BundleFile]) -> None:
    made = set()
    for relpath in sorted(files):
        parent = posixpath.dirname(relpath)
        if parent and parent not in made:
            os.makedirs(os.path.join(root, *parent.split("/")), mode=DIR_MODE, exist_ok=True)
            made.add(parent)
        _write_file(os.path.join(root, *relpath.split("/")), files[relpath].content, files[relpath].mode)
    for parent in sorted(made, key=len, reverse=True):
        _fsync_dir(os.path.join(root, *parent.split("/")))
    _fsync_dir(root)


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

    try:
        old = _read_tree(dest) if os.path.isdir(dest) else {}
    except OSError as exc:
        raise BundleWriteError("cannot read existing bundle: %s" % exc.strerror, path=exc.filename or dest,
                               field="dest") from None
    if os.path.isdir(dest) and os.listdir(dest) and not force \
            and not any(os.path.isfile(os.path.join(dest, marker)) for marker in BUNDLE_MARKERS):
        raise BundleWriteError("destination is a non-empty directory that is not a bundle (no %s); "
                               "refusing to replace it without force" % " or ".join(BUNDLE_MARKERS),
                               path=dest, field="dest")

    added = sorted(p for p in files if p not in old)
    removed = sorted(p for p in old if p not in files)
    modified = sorted(p for p in files if p in old and old[p] != (files[p].content, files[p].mode))
    changed = bool(added or removed or modified) or not os.path.isdir(dest)
    result = BundleWriteResult(changed=changed, added=added, removed=removed, modified=modified)
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
        work = tempfile.mkdtemp(prefix=".%s.bundle-" % os.path.basename(dest), dir=parent)
        new_tree = os.path.join(work, "new")
        os.mkdir(new_tree)
        mode = stat.S_IMODE(os.stat(dest).st_mode) if os.path.isdir(dest) else DIR_MODE
        os.chmod(new_tree, mode)
        _populate(new_tree, files)
        _swap(dest, new_tree, work)
    except OSError as exc:
        raise BundleWriteError("cannot write bundle: %s" % exc.strerror, path=exc.filename or dest,
                               field="dest") from None
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
    return result
