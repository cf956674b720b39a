# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""A readable unified diff of two Helm values documents, with secret-looking values masked.

A value is masked when its key (or any key above it) looks like a secret (password, token, secret, apiKey,
privateKey, credentials, auth...) or when the value itself is a PEM block. Masked values that differ are shown as
``<masked>`` against ``<masked: differs>``, so the diff still says *that* a secret changed, never what it is.

Both documents are checked once on entry (:func:`values_diff`): a mapping (or nothing), nested at most
``safe_yaml.MAX_DEPTH`` levels (cluster data such as a Helm release's ``config`` never went through a YAML
load), so the recursive walks below never hit Python's recursion limit.
"""
from __future__ import annotations

import difflib
import re
from typing import Any, Mapping, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import check_depth, dump_yaml
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeSchemaError

MASK = "<masked>"
MASK_DIFFERS = "<masked: differs>"
_SECRET_KEY_RE = re.compile(r"(pass(word|wd|phrase)?|secret|token|api[-_]?key|private[-_]?key|access[-_]?key|credential|"
                            r"auth|bearer|session[-_]?key|client[-_]?key|tls[-_]?key|ssh[-_]?key|pwd)", re.IGNORECASE)
_SAFE_KEY_RE = re.compile(r"(secretname|secretref|existingsecret|secretkeyref|tokenpath|authmethod|authtype|"
                          r"enabled|create|name|path|file|mount|key_?name|keyref)$", re.IGNORECASE)
MAX_DIFF_CHARS = 32 * 1024


def is_secret_key(key: Any) -> bool:
    """Does a key name suggest a secret value? (``existingSecret``/``secretName``-style references are not secrets.)"""
    text = str(key)
    return bool(_SECRET_KEY_RE.search(text)) and not _SAFE_KEY_RE.search(text)


def _looks_secret(value: Any) -> bool:
    return isinstance(value, str) and "-----BEGIN " in value


def _mask_alone(value: Any, secret: bool) -> Any:
    if isinstance(value, Mapping):
        return {k: _mask_alone(v, secret or is_secret_key(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_alone(v, secret) for v in value]
    if value is not None and (secret or _looks_secret(value)):
        return MASK
    return value


def mask_pair(expected: Any, actual: Any, secret: bool = False) -> tuple[Any, Any]:
    """Both documents with secret-looking values masked (a changed secret shows ``<masked>`` vs ``<masked: differs>``)."""
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        left: dict[Any, Any] = {}
        right: dict[Any, Any] = {}
        for key in list(expected) + [k for k in actual if k not in expected]:
            sub = secret or is_secret_key(key)
            if key in expected and key in actual:
                left[key], right[key] = mask_pair(expected[key], actual[key], sub)
            elif key in expected:
                left[key] = _mask_alone(expected[key], sub)
            else:
                right[key] = _mask_alone(actual[key], sub)
        return left, right
    if isinstance(expected, list) and isinstance(actual, list):
        pairs = [mask_pair(e, a, secret) for e, a in zip(expected, actual)]
        left_list = [p[0] for p in pairs] + [_mask_alone(v, secret) for v in expected[len(actual):]]
        right_list = [p[1] for p in pairs] + [_mask_alone(v, secret) for v in actual[len(expected):]]
        return left_list, right_list
    if secret or _looks_secret(expected) or _looks_secret(actual):
        if isinstance(expected, (Mapping, list)) or isinstance(actual, (Mapping, list)):
            return _mask_alone(expected, True), _mask_alone(actual, True)
        if expected == actual:
            return (MASK, MASK) if expected is not None else (None, None)
        return (MASK if expected is not None else None), (MASK_DIFFERS if actual is not None else None)
    return expected, actual


def normalize_values(values: Any, label: Optional[str] = None) -> dict[str, Any]:
    """``None`` (an empty values file, Helm's ``config: null``) -> ``{}``; a mapping -> a plain dict.

    Anything else is a :class:`RecipeSchemaError` naming ``label`` (where the values came from)."""
    if values is None:
        return {}
    if isinstance(values, Mapping):
        return {str(k): v for k, v in values.items()}
    raise RecipeSchemaError(f"Helm values must be a mapping, got {type(values).__name__}", field=label or "values",
                            value=type(values).__name__)


def _sorted(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _sorted(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def values_diff(expected: Any, actual: Any, from_label: str = "bundle", to_label: str = "cluster") -> Optional[str]:
    """Unified diff of the two value documents as YAML (secrets masked); None when they are equal."""
    left = check_depth(normalize_values(expected, from_label), field=from_label, error=RecipeSchemaError)
    right = check_depth(normalize_values(actual, to_label), field=to_label, error=RecipeSchemaError)
    if left == right:
        return None
    masked_left, masked_right = mask_pair(_sorted(left), _sorted(right))
    before = dump_yaml(masked_left).splitlines(keepends=True) if masked_left else []
    after = dump_yaml(masked_right).splitlines(keepends=True) if masked_right else []
    text = "".join(difflib.unified_diff(before, after, fromfile=from_label, tofile=to_label, n=3))
    if len(text) > MAX_DIFF_CHARS:
        text = text[:MAX_DIFF_CHARS] + f"\n... diff truncated at {MAX_DIFF_CHARS} characters\n"
    return text
