# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The three PATCH flavours: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and Kubernetes strategic merge patch.

The strategic merge patch knows the patch strategies of the fields the project touches (containers by name,
conditions by type, ...); lists without a merge key (e.g. ``spec.taints``, ``spec.tolerations``) are replaced,
as in the real apiserver.
"""
from __future__ import annotations

import copy
from typing import Any

from .errors import ApiError, bad_request

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: dicts merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# ---------------------------------------------------------------- JSON patch

def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, f"invalid JSON pointer {path!r}: must start with '/'")
    return [_unescape(tok) for tok in path[1:].split("/")]


def _parent(doc: Any, tokens: list[str], path: str) -> tuple[Any, str]:
    cur = doc
    for tok in tokens[:-1]:
        if isinstance(cur, dict) and tok in cur:
            cur = cur[tok]
        elif isinstance(cur, list) and tok.isdigit() and int(tok) < len(cur):
            cur = cur[int(tok)]
        else:
            raise ApiError(422, f"jsonpatch: path {path!r} does not exist (missing {tok!r})")
    return cur, tokens[-1]


def _get(doc: Any, path: str) -> Any:
    cur = doc
    for tok in _pointer(path):
        if isinstance(cur, dict) and tok in cur:
            cur = cur[tok]
        elif isinstance(cur, list) and tok.isdigit() and int(tok) < len(cur):
            cur = cur[int(tok)]
        else:
            raise ApiError(422, f"jsonpatch: path {path!r} does not exist")
    return cur


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent, last = _parent(doc, tokens, path)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise ApiError(422, f"jsonpatch: add index out of range at {path!r}")
    else:
        raise ApiError(422, f"jsonpatch: cannot add at {path!r}")
    return doc


def _remove(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        raise ApiError(422, "jsonpatch: cannot remove the whole document")
    parent, last = _parent(doc, tokens, path)
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise ApiError(422, f"jsonpatch: remove operation does not apply: doc is missing path: {path!r}")


#: what kube-apiserver answers (422 Invalid, empty details) when a JSON patch cannot be applied: the cause is not returned
PATCH_REJECTED = "the server rejected our request due to an error in our request"


def json_patch(target: Any, operations: Any) -> Any:
    """Apply RFC 6902 operations (add, remove, replace, move, copy, test) to a copy of ``target``.

    An operation that does not apply (a failed ``test``, a missing path) answers 422 like kube-apiserver: the generic
    ``PATCH_REJECTED`` message with empty details; the emulator's own explanation is kept in ``ApiError.cause``.
    """
    try:
        return _json_patch(target, operations)
    except ApiError as err:
        if err.code != 422:
            raise
        rejected = ApiError(422, PATCH_REJECTED, "Invalid", {})
        rejected.cause = err.message
        raise rejected from err


def _json_patch(target: Any, operations: Any) -> Any:
    if not isinstance(operations, list):
        raise bad_request("json patch must be a JSON array of operations")
    doc = copy.deepcopy(target)
    for index, op in enumerate(operations):
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"json patch operation {index} must be an object with 'op' and 'path'")
        kind, path = op["op"], op["path"]
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)
            tokens = _pointer(path)
            if not tokens:
                doc = copy.deepcopy(op.get("value"))
            else:
                parent, last = _parent(doc, tokens, path)
                if isinstance(parent, list):
                    parent[int(last)] = copy.deepcopy(op.get("value"))
                else:
                    parent[last] = copy.deepcopy(op.get("value"))
        elif kind == "move":
            value = _remove(doc, op.get("from", ""))
            doc = _add(doc, path, value)
        elif kind == "copy":
            doc = _add(doc, path, copy.deepcopy(_get(doc, op.get("from", ""))))
        elif kind == "test":
            actual = _get(doc, path)
            if actual != op.get("value"):
                raise ApiError(422, f"jsonpatch test operation does not apply: doc is not equal to the test value at {path!r}: "
                                    f"{actual!r} != {op.get('value')!r}")
        else:
            raise bad_request(f"json patch operation {index}: unsupported op {kind!r}")
    return doc


# ---------------------------------------------------------------- strategic merge patch

#: list field name -> patch merge key (lists of maps merged by key)
MERGE_KEYS: dict[str, str] = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "env": "name",
    "volumes": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath", "conditions": "type",
    "ownerReferences": "uid", "imagePullSecrets": "name", "addresses": "type", "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey", "resourceClaims": "name", "envFrom": "",
}
#: primitive lists merged as sets
MERGE_PRIMITIVE_LISTS = frozenset({"finalizers"})


def _merge_key(field: str, items: list[Any]) -> str | None:
    if field == "ports":
        sample = next((i for i in items if isinstance(i, dict)), {})
        return "containerPort" if "containerPort" in sample else "port"
    key = MERGE_KEYS.get(field)
    return key or None


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Apply a strategic merge patch to a copy of ``target``."""
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch must be a JSON object")
    return _smp_map(copy.deepcopy(target) if isinstance(target, dict) else {}, patch)


def _smp_map(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(target.get(field), list):
                target[field] = [item for item in target[field] if item not in (value or [])]
            continue
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            current = target.get(key)
            target[key] = _smp_map(current if isinstance(current, dict) else {}, value)
        elif isinstance(value, list):
            target[key] = _smp_list(key, target.get(key), value)
        else:
            target[key] = value
    return target


def _smp_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    current = current if isinstance(current, list) else []
    replace = any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch)
    if replace:
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and i.get("$patch") == "replace")]
    if field in MERGE_PRIMITIVE_LISTS:
        out = list(current)
        for item in patch:
            if item not in out:
                out.append(item)
        return out
    key = _merge_key(field, patch + current)
    if not key or not all(isinstance(i, dict) for i in patch):
        return copy.deepcopy(patch)
    out = [dict(i) if isinstance(i, dict) else i for i in current]
    for item in patch:
        if key not in item:
            raise bad_request(f"map: {item!r} does not contain declared merge key: {key}")
        idx = next((n for n, cur in enumerate(out) if isinstance(cur, dict) and cur.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append(_smp_map({}, item))
        else:
            out[idx] = _smp_map(out[idx], item)
    return out
