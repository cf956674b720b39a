# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Validation of names and labels that come from users or alerts, before they reach the Kubernetes API.

Rules follow Kubernetes' apimachinery validation: DNS-1123 subdomain for node/object names, DNS-1123 label for
namespaces, qualified names for label keys and the label-value syntax. Every pattern is applied with ``fullmatch``
(``$`` alone would accept a trailing newline), and no validator strips: a name with leading or trailing whitespace
or a control character anywhere is refused, never silently cleaned.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Any

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sError

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE = re.compile(r"^" + _DNS1123_LABEL + r"$")
_DNS1123_SUBDOMAIN_RE = re.compile(r"^" + _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + r")*$")
_QUALIFIED_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

MAX_SUBDOMAIN = 253
MAX_LABEL = 63


class K8sInvalidName(K8sError):
    """A name, namespace, label key or label value does not follow the Kubernetes syntax (names the field and value)."""

    def __init__(self, message: str, field: str, value: Any) -> None:
        super().__init__(f"{message} (field {field}, value {value!r})", reason="Invalid", field=field, value=value)


def unprintable_reason(text: str, inner_space: bool = True) -> str:
    """Why ``text`` is not a clean single-line string ('' when it is): leading/trailing whitespace, a control or format
    character (C0, DEL, C1, zero-width, BOM ...), a line or paragraph separator, or whitespace other than a plain space
    (any whitespace at all when ``inner_space`` is false)."""
    if text != text.strip():
        return "has leading or trailing whitespace"
    for index, char in enumerate(text):
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp") or (char.isspace() and (char != " " or not inner_space)):
            return f"contains the character {char!r} at position {index}"
    return ""


def require_printable(value: Any, field: str, inner_space: bool = True) -> str:
    """``value`` if it is a string without leading/trailing whitespace or control characters, else :class:`K8sInvalidName`."""
    if not isinstance(value, str):
        raise K8sInvalidName(f"{field} must be a string, got {type(value).__name__}", field, value)
    problem = unprintable_reason(value, inner_space)
    if problem:
        raise K8sInvalidName(f"invalid {field}: it {problem}", field, value)
    return value


def _require_str(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise K8sInvalidName(f"{field} must be a string, got {type(value).__name__}", field, value)
    if value == "":
        raise K8sInvalidName(f"{field} must not be empty", field, value)
    return value


def _validate_dns_name(value: Any, field: str, max_len: int, pattern: Any, kind: str, allowed: str) -> str:
    """``value`` if it is a string of at most ``max_len`` characters matching ``pattern``, else :class:`K8sInvalidName`."""
    name = _require_str(value, field)
    if len(name) > max_len:
        raise K8sInvalidName(f"{field} is {len(name)} characters long; at most {max_len} are allowed", field, value)
    if not pattern.fullmatch(name):
        problem = unprintable_reason(name, inner_space=False)
        raise K8sInvalidName(f"{field} is not a valid RFC 1123 {kind}: {allowed}, starting and ending with a letter or digit"
                             + (f"; it {problem}" if problem else ""), field, value)
    return name


def validate_subdomain(value: Any, field: str = "name") -> str:
    """Return ``value`` if it is an RFC 1123 subdomain (lower-case alphanumerics, '-' and '.', <= 253 chars)."""
    return _validate_dns_name(value, field, MAX_SUBDOMAIN, _DNS1123_SUBDOMAIN_RE, "subdomain", "lower-case letters, digits, '-' and '.'")


def validate_node_name(name: Any, field: str = "node") -> str:
    """Return a valid node name (RFC 1123 subdomain, <= 253 chars) or raise :class:`K8sInvalidName` naming the value."""
    return validate_subdomain(name, field)


def validate_namespace(name: Any, field: str = "namespace") -> str:
    """Return a valid namespace name (RFC 1123 label, <= 63 chars)."""
    return _validate_dns_name(name, field, MAX_LABEL, _DNS1123_LABEL_RE, "label", "lower-case letters, digits and '-'")


def validate_label_key(key: Any, field: str = "label key") -> str:
    """Return a valid label (or annotation/taint) key: ``[prefix/]name``, prefix a DNS subdomain, name <= 63 chars."""
    value = require_printable(_require_str(key, field), field)
    prefix, sep, name = value.rpartition("/")
    if sep:
        if not prefix:
            raise K8sInvalidName(f"{field} has an empty prefix before '/'", field, key)
        validate_subdomain(prefix, f"{field} prefix")
    if not name:
        raise K8sInvalidName(f"{field} has an empty name part", field, key)
    if len(name) > MAX_LABEL:
        raise K8sInvalidName(f"{field} name part is {len(name)} characters long; at most {MAX_LABEL} are allowed", field, key)
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        raise K8sInvalidName(f"{field} name part must consist of alphanumerics, '-', '_' or '.', starting and ending "
                             "with an alphanumeric", field, key)
    return value


def validate_label_value(value: Any, field: str = "label value") -> str:
    """Return a valid label value (empty, or <= 63 alphanumerics/'-'/'_'/'.', starting and ending alphanumeric)."""
    if not isinstance(value, str):
        raise K8sInvalidName(f"{field} must be a string, got {type(value).__name__}", field, value)
    require_printable(value, field)
    if len(value) > MAX_LABEL:
        raise K8sInvalidName(f"{field} is {len(value)} characters long; at most {MAX_LABEL} are allowed", field, value)
    if not _LABEL_VALUE_RE.fullmatch(value):
        raise K8sInvalidName(f"{field} must be empty or consist of alphanumerics, '-', '_' or '.', starting and ending "
                             "with an alphanumeric", field, value)
    return value


def validate_label_selector(selector: Any, field: str = "label_selector") -> str:
    """Light check of a label selector string: keys must be valid label keys, values valid label values; no shell-ish characters.

    Accepts the equality-based (``a=b``, ``a==b``, ``a!=b``), existence (``a``, ``!a``) and set-based (``a in (x,y)``,
    ``a notin (x)``) forms, comma-separated.
    """
    if selector is None or selector == "":
        return ""
    text = require_printable(_require_str(selector, field), field)
    for part in _split_selector(text, field):
        part = part.strip(" ")
        match = re.fullmatch(r"(!?) *([^ !=()]+) *(?:(==|=|!=) *([^ ]*)| +(in|notin) *\(([^)]*)\))? *", part)
        if not match:
            raise K8sInvalidName("cannot parse label selector requirement", field, part)
        bang, key, oper, value, set_op, values = match.groups()
        validate_label_key(key, f"{field} key")
        if bang and (oper or set_op):
            raise K8sInvalidName("'!' only negates an existence requirement", field, part)
        if oper:
            validate_label_value(value, f"{field} value")
        if set_op:
            for item in values.split(","):
                validate_label_value(item.strip(" "), f"{field} value")
    return text


def _split_selector(text: str, field: str) -> list[str]:
    parts, depth, current = [], 0, []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise K8sInvalidName("unbalanced ')' in label selector", field, text)
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth:
        raise K8sInvalidName("unbalanced '(' in label selector", field, text)
    parts.append("".join(current))
    if any(not p.strip(" ") for p in parts):
        raise K8sInvalidName("empty requirement in label selector", field, text)
    return parts
