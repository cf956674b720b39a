# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Small helpers: fast JSON-tree copy, timestamps, generated name suffixes and quantities."""
from __future__ import annotations

import datetime
import random
import re
import threading
from typing import Any

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_rand = random.Random()
_rand_lock = threading.Lock()


def seed_random(seed: int | None) -> None:
    """Make generated names reproducible."""
    with _rand_lock:
        _rand.seed(seed)


def random_suffix(length: int = 5) -> str:
    """A suffix like the apiserver's ``generateName`` (consonants and digits)."""
    with _rand_lock:
        return "".join(_rand.choice(_SUFFIX_ALPHABET) for _pos in range(length))


def random_hex(length: int) -> str:
    """Lower-case hex digits."""
    with _rand_lock:
        return "".join(_rand.choice("0123456789abcdef") for _pos in range(length))


def deep_copy(obj: Any) -> Any:
    """Copy a JSON-like tree (dict/list/scalars) much faster than :func:`copy.deepcopy`."""
    kind = type(obj)
    if kind is dict:
        return {k: deep_copy(v) for k, v in obj.items()}
    if kind is list:
        return [deep_copy(v) for v in obj]
    return obj


def now_rfc3339() -> str:
    """UTC now as ``2026-01-02T03:04:05Z``."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


_QUANTITY_RE = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")
_SUFFIXES = {
    "": 1.0, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 1024.0, "Mi": 1024.0 ** 2, "Gi": 1024.0 ** 3, "Ti": 1024.0 ** 4, "Pi": 1024.0 ** 5, "Ei": 1024.0 ** 6,
}


def parse_quantity(value: Any) -> float:
    """A Kubernetes quantity (``500m``, ``8``, ``64Gi``) as a float; unparsable -> 0."""
    if value is None:
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    match = _QUANTITY_RE.match(str(value).strip())
    if not match or match.group(2) not in _SUFFIXES:
        return 0.0
    return float(match.group(1)) * _SUFFIXES[match.group(2)]
