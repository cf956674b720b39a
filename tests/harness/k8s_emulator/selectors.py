# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Label selectors (string and ``metav1.LabelSelector`` forms) and field selectors."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from .errors import ApiError, bad_request


@dataclass(frozen=True)
class Requirement:
    """One label requirement: ``op`` is one of ``=``, ``!=``, ``in``, ``notin``, ``exists``, ``!``."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        """True if ``labels`` satisfy this requirement."""
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        # "!=" and "notin" match objects without the label, like the apiserver
        return not present or labels[self.key] not in self.values


LabelSelector = tuple[Requirement, ...]

_KEY_RE = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _split_terms(text: str) -> list[str]:
    terms, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if cur or terms:
        terms.append("".join(cur).strip())
    return terms


def _check_key(key: str, text: str) -> None:
    if not key or not _KEY_RE.match(key):
        raise bad_request(f"unable to parse requirement: invalid label key {key!r} in selector {text!r}")


def _check_value(value: str, text: str) -> None:
    if len(value) > 63 or not _VALUE_RE.match(value):
        raise bad_request(f"unable to parse requirement: invalid label value {value!r} in selector {text!r}")


_SET_RE = re.compile(r"^(\S+)\s+(in|notin)\s*\((.*)\)$")


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse the ``labelSelector`` query syntax (``a=b,c!=d,e in (x,y),f notin (z),g,!h``); 400 on bad syntax."""
    if not text:
        return ()
    reqs: list[Requirement] = []
    for term in _split_terms(text):
        if not term:
            raise bad_request(f"unable to parse requirement: empty term in label selector {text!r}")
        match = _SET_RE.match(term)
        if match:
            key, op, raw = match.group(1), match.group(2), match.group(3)
            _check_key(key, text)
            values = tuple(v.strip() for v in raw.split(",")) if raw.strip() else ()
            for value in values:
                _check_value(value, text)
            reqs.append(Requirement(key, "in" if op == "in" else "notin", values))
            continue
        for token, op in (("!=", "!="), ("==", "="), ("=", "=")):
            if token in term:
                key, value = (part.strip() for part in term.split(token, 1))
                _check_key(key, text)
                _check_value(value, text)
                reqs.append(Requirement(key, op, (value,)))
                break
        else:
            if term.startswith("!"):
                key = term[1:].strip()
                _check_key(key, text)
                reqs.append(Requirement(key, "!"))
            else:
                if any(ch in term for ch in " ()<>"):
                    raise bad_request(f"unable to parse requirement: found {term!r} in label selector {text!r}")
                _check_key(term, text)
                reqs.append(Requirement(term, "exists"))
    return tuple(reqs)


_EXPR_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def selector_from_spec(spec: dict[str, Any] | None, where: str = "selector") -> LabelSelector | None:
    """Convert a ``metav1.LabelSelector`` dict; ``None`` spec -> ``None`` (matches nothing), ``{}`` -> matches everything."""
    if spec is None:
        return None
    reqs = [Requirement(k, "=", (str(v),)) for k, v in sorted((spec.get("matchLabels") or {}).items())]
    for expr in spec.get("matchExpressions") or []:
        op = _EXPR_OPS.get(expr.get("operator", ""))
        if op is None:
            raise ApiError(422, f"{where}.matchExpressions: Unsupported value: {expr.get('operator')!r}")
        reqs.append(Requirement(str(expr.get("key", "")), op, tuple(str(v) for v in expr.get("values") or ())))
    return tuple(reqs)


def labels_match(selector: LabelSelector | None, labels: dict[str, str] | None) -> bool:
    """True if every requirement holds; a ``None`` selector matches nothing."""
    if selector is None:
        return False
    labels = labels or {}
    return all(req.matches(labels) for req in selector)


# ---------------------------------------------------------------- field selectors

FieldSelector = tuple[tuple[str, bool, str], ...]  # (field, equal?, value)


def _get_path(obj: dict[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


_COMMON_FIELDS = ("metadata.name", "metadata.namespace")
SUPPORTED_FIELDS: dict[str, tuple[str, ...]] = {
    "pods": ("spec.nodeName", "status.phase", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
             "status.podIP", "status.nominatedNodeName", "spec.hostNetwork"),
    "nodes": ("spec.unschedulable",),
    "events": ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
               "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
               "reportingComponent", "source", "type", "regarding.kind", "regarding.name", "regarding.namespace"),
    "secrets": ("type",),
    "namespaces": ("status.phase",),
    "jobs": ("status.successful",),
    "replicasets": ("status.replicas",),
}


def parse_field_selector(text: str | None, plural: str) -> FieldSelector:
    """Parse ``fieldSelector`` (``a=b``, ``a==b``, ``a!=b`` joined by commas); 400 for unsupported fields like the apiserver."""
    if not text:
        return ()
    out = []
    allowed = _COMMON_FIELDS + SUPPORTED_FIELDS.get(plural, ())
    for term in text.split(","):
        term = term.strip()
        if not term:
            continue
        if "!=" in term:
            key, value = term.split("!=", 1)
            equal = False
        elif "==" in term:
            key, value = term.split("==", 1)
            equal = True
        elif "=" in term:
            key, value = term.split("=", 1)
            equal = True
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        key = key.strip()
        if key not in allowed:
            raise bad_request(f'field label not supported: {key}')
        out.append((key, equal, value.strip()))
    return tuple(out)


def field_getter(field: str) -> Callable[[dict[str, Any]], str]:
    """A function reading a dotted field as the string the apiserver compares."""
    if field == "source":
        return lambda obj: _get_path(obj, "source.component")
    return lambda obj: _get_path(obj, field)


def fields_match(selector: FieldSelector, obj: dict[str, Any]) -> bool:
    """True if the object satisfies every field requirement."""
    for field, equal, value in selector:
        actual = field_getter(field)(obj)
        if (actual == value) != equal:
            return False
    return True


def field_value(selector: FieldSelector, field: str) -> str | None:
    """The value of an equality requirement on ``field`` (for index lookups), else None."""
    for name, equal, value in selector:
        if name == field and equal:
            return value
    return None
