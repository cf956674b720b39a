# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The constraint language of AICR recipes and its evaluation against a snapshot.

A constraint is a name ``{Type}.{Subtype}.{Key}`` and a value expression:

* the name is split on its first two dots only, so keys may contain dots and
  slashes (``OS.sysctl./proc/sys/kernel/osrelease``);
* the value is ``<op> <operand>`` with ``op`` one of ``>= <= > < == !=``
  (whitespace optional) or a bare value meaning an exact match.

Comparison rules (see ``docs/constraints.md``):

* versions (``v1.30``, ``6.8.0-1015-aws``) compare numerically part by part, only
  up to the shorter precision, ignoring ``-``/``+`` suffixes;
* a measurement that is a real number (int/float, e.g. a bandwidth) against a
  numeric operand compares as numbers;
* ``==``/``!=``/exact on anything else compare stripped strings, case-sensitively;
* ordering anything else is an evaluation *error* (a result, never a crash).

Snapshots are duck-typed: anything with ``.measurements`` (and optionally
``.variants``, ``.sources``) such as :class:`snapshot.Snapshot`, or a plain mapping
(either a flat ``{name: value}`` mapping or a serialized Snapshot).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import ConstraintError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import Constraint

#: Operators in the order they are matched (longest first).
OPERATORS = (">=", "<=", "==", "!=", ">", "<")
#: The operator recorded for a bare value (exact match), as in AICR.
EXACT = ""
ORDERING_OPERATORS = (">=", "<=", ">", "<")
#: Measurement types known today; the set is open (unknown types are accepted).
KNOWN_TYPES = frozenset(("K8s", "OS", "GPU", "Deployment", "Kernel", "Network", "SystemD",
                         "NodeTopology", "NetworkTopology", "Performance", "Conformance"))
SEVERITIES = ("error", "warning")
STATUSES = ("pass", "fail", "missing", "error")

_OPERATOR_CHARS = "<>=!~"
_OPERATOR_RUN = re.compile(r"^[<>=!~]+")
_VERSION_RE = re.compile(r"^[vV]?\d+(?:\.\d+)*(?:[-+].*)?$")
_NUMBER_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
_COMPOUND_RE = re.compile(r"\s(?:[<>=!]=?|\|\|)")


class VersionFormatError(ValueError):
    """A string that was expected to be a version has a non-numeric part."""


@dataclass(frozen=True)
class ParsedConstraint:
    """A constraint split into its parts.  ``operator`` is ``""`` for an exact match."""

    type: str
    subtype: str
    key: str
    operator: str
    operand: str

    @property
    def name(self) -> str:
        return "%s.%s.%s" % (self.type, self.subtype, self.key)

    @property
    def known_type(self) -> bool:
        return self.type in KNOWN_TYPES


@dataclass
class ConstraintResult:
    """Outcome of one constraint against one snapshot."""

    name: str
    expected: str
    operator: str
    measured: Any
    status: str  # pass | fail | missing | error
    severity: str = "error"
    message: str = ""
    variants: Dict[str, Any] = field(default_factory=dict)  # host -> value when hosts disagree

    @property
    def blocking(self) -> bool:
        """True when this result makes the check fail (failed or errored, severity error)."""
        return self.severity == "error" and self.status in ("fail", "error")

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "name": self.name, "expected": self.expected, "operator": self.operator,
            "measured": self.measured, "status": self.status, "severity": self.severity,
            "message": self.message,
        }
        if self.variants:
            out["variants"] = dict(self.variants)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ConstraintResult":
        try:
            status = str(data["status"])
            name = str(data["name"])
        except (KeyError, TypeError):
            raise ConstraintError("a constraint result needs 'name' and 'status'", field="results",
                                  value=data) from None
        if status not in STATUSES:
            raise ConstraintError("unknown constraint result status (expected one of %s)" % ", ".join(STATUSES),
                                  field="%s.status" % name, value=status)
        return cls(name=name, expected=str(data.get("expected", "")), operator=str(data.get("operator", "")),
                   measured=data.get("measured"), status=status,
                   severity=str(data.get("severity") or "error"), message=str(data.get("message") or ""),
                   variants=dict(data.get("variants") or {}))


# --------------------------------------------------------------------------- parsing

def split_constraint_name(name: Any) -> Tuple[str, str, str]:
    """``"OS.sysctl./proc/sys/kernel/osrelease"`` -> ``("OS", "sysctl", "/proc/sys/kernel/osrelease")``."""
    if not isinstance(name, str):
        raise ConstraintError("constraint name must be a string {Type}.{Subtype}.{Key}", field="name", value=name)
    text = name.strip()
    parts = text.split(".", 2)
    if len(parts) != 3 or not all(part.strip() for part in parts):
        raise ConstraintError("constraint name must have the form {Type}.{Subtype}.{Key} (two dots at least)",
                              field="name", value=name)
    return parts[0], parts[1], parts[2]


def parse_constraint_value(name: str, value: Any) -> Tuple[str, str]:
    """Split a value expression into ``(operator, operand)``; ``operator`` is ``""`` for a bare value."""
    if value is None or isinstance(value, (dict, list, tuple, set)):
        raise ConstraintError("constraint value must be a scalar expression such as '>= 1.30'",
                              field="%s.value" % name, value=value)
    text = _as_text(value).strip()
    if not text:
        raise ConstraintError("constraint value is empty", field="%s.value" % name, value=value)
    if text[0] not in _OPERATOR_CHARS:
        return EXACT, text
    run = _OPERATOR_RUN.match(text)
    symbol = run.group(0) if run else text[0]
    if symbol not in OPERATORS:
        raise ConstraintError("unknown operator %r in constraint %s (allowed: %s, or a bare value)"
                              % (symbol, name, " ".join(OPERATORS)), field="%s.value" % name, value=text)
    operand = text[len(symbol):].strip()
    if not operand:
        raise ConstraintError("operator %r in constraint %s has no operand" % (symbol, name),
                              field="%s.value" % name, value=text)
    if operand[0] in _OPERATOR_CHARS:
        raise ConstraintError("unknown operator %r in constraint %s (allowed: %s, or a bare value)"
                              % (symbol + " " + operand[0], name, " ".join(OPERATORS)), field="%s.value" % name, value=text)
    if _COMPOUND_RE.search(operand):
        raise ConstraintError("compound constraint expressions (several operators or '||') are not supported in %s"
                              % name, field="%s.value" % name, value=text)
    return symbol, operand


def parse_constraint(name: Any, value: Any) -> ParsedConstraint:
    """Parse one constraint; raises :class:`ConstraintError` naming the constraint and value."""
    ctype, subtype, key = split_constraint_name(name)
    operator, operand = parse_constraint_value(name.strip(), value)
    return ParsedConstraint(type=ctype, subtype=subtype, key=key, operator=operator, operand=operand)


# --------------------------------------------------------------------------- comparison

def looks_like_version(value: Any) -> bool:
    """Digits and dots with an optional leading ``v`` and optional ``-``/``+`` suffix."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return False
    return bool(_VERSION_RE.match(str(value).strip()))


def _version_parts(value: Any) -> List[int]:
    text = str(value).strip()
    core = text[1:] if text[:1] in ("v", "V") else text
    for sep in ("-", "+"):
        core = core.split(sep, 1)[0]
    if not core:
        raise VersionFormatError("not a version: %r is empty once the v prefix and -/+ suffixes are removed" % text)
    parts = []
    for part in core.split("."):
        if not part.isdigit():
            raise VersionFormatError("not a version: %r has the non-numeric part %r" % (text, part))
        parts.append(int(part))
    return parts


def compare_versions(a: Any, b: Any) -> int:
    """-1, 0 or 1.  Compares only to the shorter precision (``1.32.4`` == ``1.32``).

    Raises :class:`VersionFormatError` (a ``ValueError``) for non-numeric parts.
    """
    left, right = _version_parts(a), _version_parts(b)
    width = min(len(left), len(right))
    for x, y in zip(left[:width], right[:width]):
        if x != y:
            return -1 if x < y else 1
    return 0


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _is_real_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not (
        isinstance(value, float) and math.isnan(value))


def _as_number(value: Any) -> Optional[float]:
    if _is_real_number(value):
        return float(value)
    if isinstance(value, str) and _NUMBER_RE.match(value.strip()):
        return float(value.strip())
    return None


def _order(sign: int, operator: str) -> bool:
    return {">=": sign >= 0, "<=": sign <= 0, ">": sign > 0, "<": sign < 0, "==": sign == 0, "!=": sign != 0}[operator]


def check_value(measured: Any, operator: str, operand: str) -> bool:
    """True when ``measured <operator> operand`` holds.

    Raises ``ValueError`` with a human reason when the values cannot be compared
    that way (ordering on text, a non-scalar measurement, an unknown operator).
    """
    if operator not in OPERATORS and operator != EXACT:
        raise ValueError("unknown operator %r" % operator)
    if isinstance(measured, (dict, list, tuple, set)) or measured is None:
        raise ValueError("measured value %r is not a scalar" % (measured,))
    operand = str(operand).strip()
    text = _as_text(measured).strip()
    number = _as_number(operand)
    if _is_real_number(measured) and number is not None:
        diff = float(measured) - number
        return _order((diff > 0) - (diff < 0), operator or "==")
    if operator == EXACT:
        return text == operand
    if looks_like_version(text) and looks_like_version(operand):
        return _order(compare_versions(text, operand), operator)
    measured_number = _as_number(text)
    if measured_number is not None and number is not None:
        diff = measured_number - number
        return _order((diff > 0) - (diff < 0), operator)
    if operator in ("==", "!="):
        return (text == operand) == (operator == "==")
    raise ValueError("cannot order %r against %r: %s" % (
        text, operand, "neither is a version or a number" if not (looks_like_version(text) or looks_like_version(operand))
        else "only one side is a version or a number"))


# --------------------------------------------------------------------------- evaluation

def _coerce_constraint(item: Union[Constraint, Mapping[str, Any]], index: int) -> Constraint:
    if isinstance(item, Constraint):
        constraint = item
    elif isinstance(item, Mapping):
        if "name" not in item:
            raise ConstraintError("constraint #%d has no 'name'" % index, field="constraints[%d]" % index, value=dict(item))
        if "value" not in item or item.get("value") is None:
            raise ConstraintError("constraint %s has no 'value'" % item.get("name"),
                                  field="constraints[%d].value" % index, value=dict(item))
        constraint = Constraint.from_dict(dict(item, value=_as_text(item["value"])))
    else:
        raise ConstraintError("constraint #%d must be a mapping with name and value" % index,
                              field="constraints[%d]" % index, value=item)
    if constraint.severity not in SEVERITIES:
        raise ConstraintError("constraint %s has unknown severity (expected error or warning)" % constraint.name,
                              field="%s.severity" % constraint.name, value=constraint.severity)
    return constraint


def _snapshot_parts(snapshot: Any) -> Tuple[Mapping[str, Any], Mapping[str, Mapping[str, Any]], Mapping[str, str]]:
    """(measurements, variants, sources) from a Snapshot object or mapping."""
    if snapshot is None:
        return {}, {}, {}
    if hasattr(snapshot, "measurements"):
        return (snapshot.measurements, getattr(snapshot, "variants", None) or {},
                getattr(snapshot, "sources", None) or {})
    if isinstance(snapshot, Mapping):
        if isinstance(snapshot.get("measurements"), Mapping):
            return (snapshot["measurements"], snapshot.get("variants") or {}, snapshot.get("sources") or {})
        return snapshot, {}, {}
    raise ConstraintError("snapshot must be a Snapshot or a mapping of {Type.Subtype.Key: value}",
                          field="snapshot", value=type(snapshot).__name__)


def _fmt(value: Any) -> str:
    return _as_text(value) if not isinstance(value, str) else value


def _needs(operator: str, operand: str) -> str:
    return "needs %s %s" % (operator, operand) if operator else "needs exactly %s" % operand


def _describe_variants(variants: Mapping[str, Any]) -> str:
    distinct = sorted({_fmt(v) for v in variants.values()})
    return "hosts differ: %s" % ", ".join(
        "%s on %s" % (value, ",".join(sorted(h for h, v in variants.items() if _fmt(v) == value))) for value in distinct)


def evaluate_constraint(constraint: Union[Constraint, Mapping[str, Any]], snapshot: Any, index: int = 0) -> ConstraintResult:
    """Evaluate one constraint; a malformed constraint raises :class:`ConstraintError`."""
    item = _coerce_constraint(constraint, index)
    parsed = parse_constraint(item.name, item.value)
    measurements, all_variants, sources = _snapshot_parts(snapshot)
    name = parsed.name
    expected = item.value.strip()
    base = dict(name=name, expected=expected, operator=parsed.operator, severity=item.severity)
    if name not in measurements or measurements[name] is None:
        return ConstraintResult(measured=None, status="missing",
                                message="%s was not measured (%s)" % (name, _needs(parsed.operator, parsed.operand)), **base)
    measured = measurements[name]
    variants = dict(all_variants.get(name) or {})
    where = " [from %s]" % sources[name] if sources.get(name) else ""
    candidates: List[Tuple[Optional[str], Any]] = [(None, measured)]
    candidates.extend(sorted(variants.items()))
    failing: List[str] = []
    try:
        for host, value in candidates:
            if not check_value(value, parsed.operator, parsed.operand):
                failing.append(host or "")
    except ValueError as exc:
        return ConstraintResult(measured=measured, status="error", variants=variants,
                                message="%s is %s, %s: %s" % (name, _fmt(measured), _needs(parsed.operator, parsed.operand), exc),
                                **base)
    hetero = " (%s)" % _describe_variants(variants) if variants else ""
    if not failing:
        wanted = "satisfies %s %s" % (parsed.operator, parsed.operand) if parsed.operator else "matches %s" % parsed.operand
        message = "%s is %s, %s%s%s" % (name, _fmt(measured), wanted, hetero, where)
        return ConstraintResult(measured=measured, status="pass", variants=variants, message=message, **base)
    hosts = [h for h in failing if h]
    on_hosts = " on %s" % ", ".join(hosts) if hosts else ""
    message = "%s is %s%s, %s%s%s" % (name, _fmt(measured), on_hosts, _needs(parsed.operator, parsed.operand), hetero, where)
    if item.message:
        message += ": " + item.message
    return ConstraintResult(measured=measured, status="fail", variants=variants, message=message, **base)


def evaluate_constraints(constraints: Iterable[Union[Constraint, Mapping[str, Any]]], snapshot: Any) -> List[ConstraintResult]:
    """Evaluate every constraint (in order) against ``snapshot``.

    Malformed constraints (bad name, unknown operator, bad severity) raise
    :class:`ConstraintError` before anything is evaluated, so a recipe error is
    never reported as a cluster failure.
    """
    if constraints is None:
        return []
    if isinstance(constraints, Mapping):
        raise ConstraintError("constraints must be a list of {name, value} mappings", field="constraints",
                              value=type(constraints).__name__)
    items = [_coerce_constraint(c, i) for i, c in enumerate(constraints)]
    for item in items:
        parse_constraint(item.name, item.value)
    _snapshot_parts(snapshot)
    return [evaluate_constraint(item, snapshot, i) for i, item in enumerate(items)]


def summarize(results: Iterable[Union[ConstraintResult, Mapping[str, Any]]], missing_is_failure: bool = False) -> Dict[str, Any]:
    """Counts per status and ``ok``.

    ``ok`` is False when any result with severity ``error`` failed or errored, or,
    with ``missing_is_failure``, is missing.  Warnings never make ``ok`` False.
    """
    counts = {"passed": 0, "failed": 0, "missing": 0, "errors": 0, "warnings": 0}
    ok = True
    for index, result in enumerate(results):
        if not isinstance(result, ConstraintResult):
            if not isinstance(result, Mapping):
                raise ConstraintError("constraint result #%d must be a mapping" % index, field="results[%d]" % index,
                                      value=result)
            result = ConstraintResult.from_dict(result)
        key = {"pass": "passed", "fail": "failed", "missing": "missing", "error": "errors"}[result.status]
        counts[key] += 1
        if result.severity == "error":
            if result.blocking or (missing_is_failure and result.status == "missing"):
                ok = False
        elif result.status != "pass":
            counts["warnings"] += 1
    summary: Dict[str, Any] = dict(counts)
    summary["ok"] = ok
    return summary
