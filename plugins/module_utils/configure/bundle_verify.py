# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Verify a bundle directory against its ``checksums.txt`` (like ``aicr verify``, without signatures).

``checksums.txt`` is what :func:`..bundle_render.checksums` writes and ``sha256sum -c`` reads: one
``<64 hex digits>  <relative path>`` line per file (``sha256sum``'s binary marker ``<hex> *<path>`` is accepted
too), covering every file of the bundle except itself.  :func:`verify_bundle` reports, all at once:

* ``missing``: listed but absent;
* ``modified``: listed, a regular file, but its SHA-256 differs;
* ``extra``: a file in the bundle that is not listed (never read);
* ``unsafe``: a symbolic link (never followed, inside or escaping the bundle), a FIFO, a socket, a device, or a
  listed path that is a directory.  The bundle writer never produces any of these.

Empty directories carry no content and are ignored.  A directory without ``checksums.txt`` is refused with a
:class:`BundleVerifyError` naming the path *before* anything else in it is read or walked, so pointing the check at
the wrong directory (a home directory, ``/``) never hashes unrelated files.  A malformed ``checksums.txt`` (bad
line, unsafe path, duplicate, over :data:`MAX_CHECKSUMS_BYTES`) is an error naming its line, not a mismatch.
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_writer import check_relpath
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeError

CHECKSUMS_FILE = "checksums.txt"
#: ``checksums.txt`` larger than this is refused (a bundle of 10^5 files stays far below it).
MAX_CHECKSUMS_BYTES = 8 * 1024 * 1024
_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")
_CHUNK = 1024 * 1024


class BundleVerifyError(RecipeError):
    """The directory cannot be verified at all: not a bundle, unreadable or malformed ``checksums.txt``."""


@dataclass
class VerifyResult:
    """What :func:`verify_bundle` found; ``ok`` is true only when every list is empty."""

    bundle: str
    listed: int
    verified: int = 0  # listed files whose content matched
    missing: List[str] = field(default_factory=list)
    extra: List[str] = field(default_factory=list)
    modified: List[str] = field(default_factory=list)
    unsafe: List[Dict[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.modified or self.unsafe)

    def counts(self) -> Dict[str, int]:
        return {"listed": self.listed, "verified": self.verified, "missing": len(self.missing),
                "extra": len(self.extra), "modified": len(self.modified), "unsafe": len(self.unsafe)}

    def summary(self) -> str:
        """One line naming every problem (for a task's ``msg``)."""
        if self.ok:
            return "bundle %s matches its %s (%d files)" % (self.bundle, CHECKSUMS_FILE, self.listed)
        parts = []
        for label, paths in (("missing", self.missing), ("modified", self.modified), ("extra", self.extra),
                             ("unsafe", ["%s (%s)" % (u["path"], u["reason"]) for u in self.unsafe])):
            if paths:
                parts.append("%d %s: %s" % (len(paths), label, ", ".join(paths)))
        return "bundle %s does not match its %s: %s" % (self.bundle, CHECKSUMS_FILE, "; ".join(parts))

    def to_dict(self) -> Dict[str, Any]:
        return {"bundle": self.bundle, "ok": self.ok, "missing": list(self.missing), "extra": list(self.extra),
                "modified": list(self.modified), "unsafe": [dict(u) for u in self.unsafe], "counts": self.counts()}


def parse_checksums(text: str, path: str = CHECKSUMS_FILE) -> Dict[str, str]:
    """``{relpath: sha256 hex (lower case)}`` from ``checksums.txt`` text; errors name the line."""
    entries: Dict[str, str] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        match = _LINE.match(line.rstrip("\r"))
        if not match:
            raise BundleVerifyError("malformed checksum line (expected '<sha256>  <path>')", path=path, line=number,
                                    value=line[:200])
        digest, relpath = match.group(1).lower(), match.group(2)
        try:
            check_relpath(relpath)
        except RecipeError:
            raise BundleVerifyError("unsafe path in checksum line (absolute, '..' or empty component)", path=path,
                                    line=number, value=relpath) from None
        if relpath == CHECKSUMS_FILE:
            raise BundleVerifyError("%s must not list itself" % CHECKSUMS_FILE, path=path, line=number, value=relpath)
        if relpath in entries:
            raise BundleVerifyError("path listed twice", path=path, line=number, value=relpath)
        entries[relpath] = digest
    return entries


def _read_checksums(root: str) -> str:
    target = os.path.join(root, CHECKSUMS_FILE)
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        raise BundleVerifyError("not a bundle: the directory has no %s; nothing was read" % CHECKSUMS_FILE,
                                path=root, field="bundle") from None
    if not stat.S_ISREG(info.st_mode):
        raise BundleVerifyError("%s is not a regular file (symbolic link or special file)" % CHECKSUMS_FILE,
                                path=target, field="bundle")
    if info.st_size > MAX_CHECKSUMS_BYTES:
        raise BundleVerifyError("%s is larger than %d bytes" % (CHECKSUMS_FILE, MAX_CHECKSUMS_BYTES), path=target,
                                value=info.st_size)
    fd = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_CHECKSUMS_BYTES + 1)
    if len(data) > MAX_CHECKSUMS_BYTES:
        raise BundleVerifyError("%s is larger than %d bytes" % (CHECKSUMS_FILE, MAX_CHECKSUMS_BYTES), path=target)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BundleVerifyError("%s is not UTF-8 text" % CHECKSUMS_FILE, path=target, value=str(exc)) from None


def bundle_root(bundle: Any) -> str:
    """The absolute bundle directory (a symbolic link to a directory is accepted for the root only)."""
    if not isinstance(bundle, str) or not bundle:
        raise BundleVerifyError("a bundle directory is required", field="bundle", value=bundle)
    root = os.path.abspath(bundle)
    if not os.path.exists(root):
        raise BundleVerifyError("bundle directory does not exist", path=root, field="bundle")
    if not os.path.isdir(root):
        raise BundleVerifyError("bundle path is not a directory", path=root, field="bundle")
    return root


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symbolic link"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def _link_reason(root: str, full: str) -> str:
    target = os.path.realpath(full)
    inside = target == root or target.startswith(root.rstrip(os.sep) + os.sep)
    return "symbolic link (not followed)" if inside else "symbolic link escaping the bundle (not followed)"


def _walk(root: str) -> Tuple[Dict[str, int], List[Dict[str, str]]]:
    """Regular files (relpath -> mode) and unsafe entries (symlinks, specials) under ``root``; links never followed."""
    files: Dict[str, int] = {}
    unsafe: List[Dict[str, str]] = []
    real_root = os.path.realpath(root)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root)
        prefix = "" if rel_dir == "." else "/".join(rel_dir.split(os.sep)) + "/"
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            info = os.lstat(full)
            if stat.S_ISDIR(info.st_mode):
                continue
            rel = prefix + name
            if stat.S_ISREG(info.st_mode):
                files[rel] = info.st_mode
            elif stat.S_ISLNK(info.st_mode):
                unsafe.append({"path": rel, "reason": _link_reason(real_root, full)})
            else:
                unsafe.append({"path": rel, "reason": _kind(info.st_mode)})
    return files, unsafe


def file_sha256(path: str) -> str:
    """SHA-256 of a regular file, streamed; refuses to follow a symbolic link or to open a FIFO."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise BundleVerifyError("not a regular file", path=path)
        digest = hashlib.sha256()
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_bundle(bundle: str, entries: Optional[Dict[str, str]] = None) -> VerifyResult:
    """Check ``bundle`` against its ``checksums.txt`` (or against ``entries`` already parsed from it)."""
    root = bundle_root(bundle)
    if entries is None:
        entries = parse_checksums(_read_checksums(root), os.path.join(root, CHECKSUMS_FILE))
    present, unsafe = _walk(root)
    result = VerifyResult(bundle=root, listed=len(entries))
    unsafe_paths = {u["path"] for u in unsafe}
    for relpath in sorted(entries):
        full = os.path.join(root, *relpath.split("/"))
        if relpath in unsafe_paths or _parent_is_link(relpath, unsafe_paths):
            continue
        if relpath not in present:
            if os.path.isdir(full):
                result.unsafe.append({"path": relpath, "reason": "listed path is a directory"})
            else:
                result.missing.append(relpath)
            continue
        if file_sha256(full) != entries[relpath]:
            result.modified.append(relpath)
        else:
            result.verified += 1
    result.extra = sorted(p for p in present if p not in entries and p != CHECKSUMS_FILE)
    result.unsafe = sorted(unsafe + result.unsafe, key=lambda u: u["path"])
    return result


def _parent_is_link(relpath: str, unsafe_paths: Any) -> bool:
    """A listed file below a symlinked directory is reported through that link (unsafe), not as missing."""
    parts = relpath.split("/")
    return any("/".join(parts[:i]) in unsafe_paths for i in range(1, len(parts)))


def verified_entries(bundle: str) -> Tuple[str, Dict[str, str]]:
    """``(root, {relpath: sha256})`` of a bundle that verifies; raises :class:`BundleVerifyError` naming every problem."""
    root = bundle_root(bundle)
    entries = parse_checksums(_read_checksums(root), os.path.join(root, CHECKSUMS_FILE))
    result = verify_bundle(root, entries)
    if not result.ok:
        raise BundleVerifyError(result.summary(), path=root, field="bundle")
    return root, entries
