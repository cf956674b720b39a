# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A per-process cache of loaded :class:`RecipeStore` objects, checked against the files on every use.

Loading the built-in catalog (parse and check every overlay, mixin and the registry) costs far more than
rendering one bundle, and a controller action is called once per loop item, in the same worker process
(Ansible runs all items of one task and host in one worker). :func:`cached_store` keeps the loaded store
of each ``(recipe directories, include_builtin, builtin directory)`` and hands it out again while the
directories are unchanged, with the files it already read (values, templates) and its memo of compiled
templates.

"Unchanged" is a tree signature taken *before* each load and compared on each use: for every recipe
directory its real path, and the ``lstat`` of every entry below it (relative path, type, inode, size, mtime and
ctime in nanoseconds; a symlink also the ``stat`` of its target). Adding, removing, renaming, rewriting or
re-pointing any file or directory therefore gives a new signature and a fresh load.

Two cases are never cached (every call loads afresh, exactly as without this cache):

* *racy* trees: an entry changed less than :data:`RACY_S` seconds before the signature was taken (or carries a
  time in the future). A second edit within the file system's timestamp granularity, with the same size, would
  otherwise go unnoticed (git's "racily clean" problem);
* trees of more than :data:`MAX_SIGNATURE_ENTRIES` entries (a recipe directory pointed at something huge): the
  signature would cost more than it saves.

A load that fails is not cached either (the error is raised again on the next call). Treat a cached store as
read-only, as every :class:`RecipeStore` user already must.
"""
from __future__ import annotations

import os
import stat
import threading
import time
from collections import OrderedDict
from typing import Any, Iterable, List, Optional, Tuple, Union

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore, default_builtin_dir

#: Entries changed less than this many seconds before the signature make the tree "racy" (not cached).
RACY_S = 2.0
#: More entries than this under the recipe directories: not cached (a signature would cost too much).
MAX_SIGNATURE_ENTRIES = 20000
#: Stores kept per process (least recently used dropped first).
MAX_STORES = 4

Signature = Tuple[Any, ...]
_Key = Tuple[Tuple[str, ...], bool, str]


class _TooLarge(Exception):
    """The tree holds more than :data:`MAX_SIGNATURE_ENTRIES` entries."""


class StoreCache:
    """Loaded stores by key, each with the signature taken before its load. ``hits``, ``loads`` and ``uncached``
    (loads not kept: racy, too large) count calls, for tests and benchmarks."""

    def __init__(self, max_stores: int = MAX_STORES) -> None:
        self.max_stores = max_stores
        self._stores: "OrderedDict[_Key, Tuple[Signature, RecipeStore]]" = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.loads = 0
        self.uncached = 0

    def clear(self) -> None:
        with self._lock:
            self._stores.clear()
            self.hits = self.loads = self.uncached = 0

    def get(self, dirs: Union[str, Iterable[str], None] = (), include_builtin: bool = True,
            builtin_dir: Optional[str] = None) -> RecipeStore:
        """The store :meth:`RecipeStore.load` would return for these arguments, loaded at most once per tree state."""
        if dirs is None:
            dirs = []
        elif isinstance(dirs, str):
            dirs = [dirs]
        user_dirs = tuple(os.path.abspath(os.path.expanduser(str(d))) for d in dirs)
        builtin = (os.path.abspath(builtin_dir) if builtin_dir else default_builtin_dir()) if include_builtin else ""
        key: _Key = (user_dirs, bool(include_builtin), builtin)
        roots = ([builtin] if builtin else []) + list(user_dirs)
        started = time.time()
        try:
            signature: Optional[Signature]
            signature, newest = tree_signature(roots)
        except _TooLarge:
            signature, newest = None, 0
        with self._lock:
            held = self._stores.get(key)
            if held is not None and signature is not None and held[0] == signature:
                self._stores.move_to_end(key)
                self.hits += 1
                return held[1]
        store = RecipeStore.load(list(dirs), include_builtin=include_builtin, builtin_dir=builtin_dir)
        with self._lock:
            self.loads += 1
            if signature is None or newest / 1e9 > started - RACY_S:
                self.uncached += 1
                self._stores.pop(key, None)
                return store
            self._stores[key] = (signature, store)
            self._stores.move_to_end(key)
            while len(self._stores) > self.max_stores:
                self._stores.popitem(last=False)
        return store


def _entry(path: str, rel: str, info: os.stat_result) -> Tuple[Tuple[Any, ...], int]:
    """The signature entry of one path and its newest time (ns)."""
    newest = max(info.st_mtime_ns, info.st_ctime_ns)
    target: Tuple[Any, ...] = ()
    if stat.S_ISLNK(info.st_mode):
        try:
            link = os.readlink(path)
            pointed = os.stat(path)
            target = (link, pointed.st_mode, pointed.st_ino, pointed.st_size, pointed.st_mtime_ns, pointed.st_ctime_ns)
            newest = max(newest, pointed.st_mtime_ns, pointed.st_ctime_ns)
        except OSError:
            target = ("dangling",)
    return (rel, info.st_mode, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns) + target, newest


def tree_signature(roots: List[str]) -> Tuple[Signature, int]:
    """The signature of the recipe directories ``roots`` (see the module docstring) and the newest time in it
    (ns since the epoch). A missing root is part of it (``RecipeStore.load`` decides whether that is an error).
    Raises :class:`_TooLarge` past :data:`MAX_SIGNATURE_ENTRIES` entries."""
    out: List[Tuple[Any, ...]] = []
    count = 0
    newest = 0
    for root in roots:
        real = os.path.realpath(root)
        try:
            top = os.lstat(real)
        except OSError:
            out.append((root, real, "missing"))
            continue
        item, when = _entry(real, ".", top)
        out.append((root, real) + item)
        newest = max(newest, when)
        if not stat.S_ISDIR(top.st_mode):
            continue
        pending = [(real, "")]
        while pending:
            directory, rel_dir = pending.pop()
            try:
                with os.scandir(directory) as entries:
                    listed = sorted(entries, key=lambda e: e.name)
            except OSError as exc:
                out.append((directory, "unreadable", exc.errno))
                continue
            for entry in listed:
                rel = entry.name if not rel_dir else rel_dir + "/" + entry.name
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    out.append((rel, "vanished"))
                    continue
                count += 1
                if count > MAX_SIGNATURE_ENTRIES:
                    raise _TooLarge()
                item, when = _entry(entry.path, rel, info)
                out.append(item)
                newest = max(newest, when)
                if stat.S_ISDIR(info.st_mode):
                    pending.append((entry.path, rel))
    return tuple(out), newest


#: The cache of this process (a controller worker: every item of a looped task, see the module docstring).
STORES = StoreCache()


def cached_store(dirs: Union[str, Iterable[str], None] = (), include_builtin: bool = True,
                 builtin_dir: Optional[str] = None) -> RecipeStore:
    """:meth:`RecipeStore.load` through this process's :data:`STORES` cache."""
    return STORES.get(dirs, include_builtin, builtin_dir)
