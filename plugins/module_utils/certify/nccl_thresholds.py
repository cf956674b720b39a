# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Pass/fail thresholds for NCCL bus bandwidth: absolute floors per hardware profile and
relative checks against the fleet itself.

* **Absolute floors** are keyed by ``(accelerator, scope, collective)`` where scope is
  ``intra-node`` (one NVLink domain: an 8-GPU HGX board, or one GB200 NVL72 rack) or
  ``multi-node`` (traffic crosses the scale-out network).  The built-in values in
  :data:`BUILTIN_FLOORS` come from public figures and are deliberately conservative; each
  carries its source and a confidence label (see docs/certify-nccl.md).
* **Relative checks** compare one entity (node or node group) with the fleet's robust centre:
  it fails when it is below ``fraction x median`` or when its modified z-score
  ``(x - median) / (1.4826 x MAD)`` is below ``-mad_z`` (Iglewicz and Hoaglin's 3.5).  Fleets
  smaller than ``min_fleet_size`` get no relative check; a zero MAD falls back to the mean absolute
  deviation, and the scale never drops below ``min_spread_fraction x median`` so that a very
  tight fleet does not flag a node that is 0.5 % slower.

The value compared is an :class:`NcclResult`'s ``large_message_busbw`` (or a plain number).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_collectives import COLLECTIVES, canonical_collective
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_result_model import NcclResult
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.errors import CertifyError
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import load_yaml_file

SCOPES = ("intra-node", "multi-node")

#: 1 / Phi^-1(3/4): makes the MAD a consistent estimator of the standard deviation for normal data.
MAD_SCALE = 1.4826
#: Used when the MAD is 0: sqrt(pi/2), the same consistency constant for the mean absolute deviation.
MEAN_AD_SCALE = 1.253314

DEFAULT_FRACTION = 0.90
DEFAULT_MAD_Z = 3.5
DEFAULT_MIN_FLEET_SIZE = 4
DEFAULT_MIN_SPREAD_FRACTION = 0.01

_ACCELERATOR_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_FLOOR_KEYS = ("floor", "expected", "source", "confidence")
_RELATIVE_KEYS = ("fraction", "mad_z", "min_fleet_size", "min_spread_fraction")
_TOP_KEYS = ("floors", "relative", "use_builtin_floors")


class ThresholdConfigError(CertifyError):
    """A thresholds configuration is malformed; ``field`` is the dotted key, ``value`` the bad value."""


@dataclass(frozen=True)
class FloorProfile:
    """An absolute busbw floor (GB/s) for one (accelerator, scope, collective)."""

    accelerator: str
    scope: str
    collective: str
    floor: float
    expected: Optional[float] = None
    source: str = "user"
    confidence: str = "user"

    @property
    def key(self) -> Tuple[str, str, str]:
        return (self.accelerator, self.scope, self.collective)

    def label(self) -> str:
        return "%s %s %s" % self.key

    def to_dict(self) -> Dict[str, Any]:
        return {"accelerator": self.accelerator, "scope": self.scope, "collective": self.collective,
                "floor": self.floor, "expected": self.expected, "source": self.source, "confidence": self.confidence}


def _builtin(accelerator: str, scope: str, floor: float, expected: float, source: str, confidence: str) -> FloorProfile:
    return FloorProfile(accelerator=accelerator, scope=scope, collective="all_reduce", floor=floor, expected=expected,
                        source=source, confidence=confidence)


#: Built-in all_reduce floors, GB/s of large-message busbw.  ``expected`` is the public figure for a
#: healthy system, ``floor`` roughly 85 % of the low end of that figure.  Sources and caveats are in
#: docs/certify-nccl.md; override any of them with a thresholds config.
BUILTIN_FLOORS: Dict[Tuple[str, str, str], FloorProfile] = {p.key: p for p in (
    _builtin("h100-sxm", "intra-node", 400.0, 470.0,
             "8x H100 SXM, NVLink 4 + NVSwitch (450 GB/s per direction per GPU); published nccl-tests runs show "
             "460-480 GB/s busbw at >= 1 GiB", "medium"),
    _builtin("h200-sxm", "intra-node", 400.0, 470.0,
             "8x H200 SXM: same NVLink 4 / NVSwitch fabric as H100 SXM, so the H100 figure applies", "medium"),
    _builtin("a100-sxm", "intra-node", 195.0, 230.0,
             "8x A100 SXM, NVLink 3 (300 GB/s per direction per GPU); published runs show 230-240 GB/s busbw",
             "medium"),
    _builtin("gb200-nvl72", "intra-node", 600.0, 750.0,
             "GB200 NVL72 rack, NVLink 5 (900 GB/s per direction per GPU); few public nccl-tests numbers, "
             "reported values vary widely with NCCL version and NVLS", "low"),
    _builtin("l40s-pcie", "intra-node", 15.0, 20.0,
             "8x L40S on PCIe Gen4 without NVLink; strongly depends on the PCIe switch topology", "low"),
    _builtin("h100-sxm", "multi-node", 300.0, 370.0,
             "H100 SXM nodes with 8x 400 Gb/s InfiniBand NDR (rail-optimised), no SHARP; published runs show "
             "350-400 GB/s busbw", "medium"),
    _builtin("h200-sxm", "multi-node", 300.0, 370.0,
             "H200 SXM nodes with 8x 400 Gb/s InfiniBand NDR: same network-bound figure as H100", "medium"),
)}

#: Substrings of ``nvidia-smi``/nccl-tests device names -> accelerator profile id (first match wins).
_DEVICE_NAME_MAP = (
    ("gb200", "gb200-nvl72"),
    ("h200", "h200-sxm"),
    ("h100 pcie", "h100-pcie"),
    ("h100 nvl", "h100-nvl"),
    ("h100", "h100-sxm"),
    ("h800", "h800-sxm"),
    ("a100-pcie", "a100-pcie"),
    ("a100 pcie", "a100-pcie"),
    ("a100", "a100-sxm"),
    ("l40s", "l40s-pcie"),
)


def accelerator_from_device_name(name: Optional[str]) -> Optional[str]:
    """``"NVIDIA H100 80GB HBM3"`` -> ``"h100-sxm"``; ``None`` when the name is not known."""
    if not name:
        return None
    low = name.lower()
    for needle, accelerator in _DEVICE_NAME_MAP:
        if needle in low:
            return accelerator
    return None


def scope_of_result(result: NcclResult) -> str:
    """``multi-node`` when the ranks span more than one host, else ``intra-node``.

    For GB200 NVL72 one NVLink domain spans 18 hosts; pass ``scope="intra-node"`` explicitly there.
    """
    return "multi-node" if len(result.hosts) > 1 else "intra-node"


@dataclass
class RelativePolicy:
    """How an entity is compared with its fleet."""

    fraction: float = DEFAULT_FRACTION
    mad_z: float = DEFAULT_MAD_Z
    min_fleet_size: int = DEFAULT_MIN_FLEET_SIZE
    min_spread_fraction: float = DEFAULT_MIN_SPREAD_FRACTION

    def to_dict(self) -> Dict[str, Any]:
        return {"fraction": self.fraction, "mad_z": self.mad_z, "min_fleet_size": self.min_fleet_size,
                "min_spread_fraction": self.min_spread_fraction}

    @classmethod
    def from_dict(cls, data: Optional[Mapping[str, Any]], source: str = "<thresholds>",
                  prefix: str = "relative") -> "RelativePolicy":
        data = _mapping(data or {}, source, prefix)
        _unknown_keys(data, _RELATIVE_KEYS, source, prefix)
        policy = cls()
        if "fraction" in data:
            value = _number(data["fraction"], source, prefix + ".fraction")
            if not 0.0 < value <= 1.0:
                raise ThresholdConfigError("fraction must be in (0, 1]", file=source, field=prefix + ".fraction",
                                           value=data["fraction"])
            policy.fraction = value
        if "mad_z" in data:
            value = _number(data["mad_z"], source, prefix + ".mad_z")
            if value <= 0.0:
                raise ThresholdConfigError("mad_z must be > 0 (it is the magnitude of the low-side z-score limit)",
                                           file=source, field=prefix + ".mad_z", value=data["mad_z"])
            policy.mad_z = value
        if "min_fleet_size" in data:
            value = data["min_fleet_size"]
            if isinstance(value, bool) or not isinstance(value, int) or value < 3:
                raise ThresholdConfigError("min_fleet_size must be an integer >= 3", file=source,
                                           field=prefix + ".min_fleet_size", value=value)
            policy.min_fleet_size = value
        if "min_spread_fraction" in data:
            value = _number(data["min_spread_fraction"], source, prefix + ".min_spread_fraction")
            if not 0.0 <= value < 1.0:
                raise ThresholdConfigError("min_spread_fraction must be in [0, 1)", file=source,
                                           field=prefix + ".min_spread_fraction", value=data["min_spread_fraction"])
            policy.min_spread_fraction = value
        return policy


@dataclass
class ThresholdConfig:
    """Floors plus relative policy; build it with :func:`validate_thresholds`."""

    floors: Dict[Tuple[str, str, str], FloorProfile] = field(default_factory=lambda: dict(BUILTIN_FLOORS))
    relative: RelativePolicy = field(default_factory=RelativePolicy)

    def floor_for(self, accelerator: Optional[str], scope: Optional[str], collective: Optional[str]) -> Optional[FloorProfile]:
        """The floor for this key, or ``None`` when none is configured."""
        canon = canonical_collective(collective) if collective else None
        if not accelerator or not scope or not canon:
            return None
        return self.floors.get((accelerator.lower(), scope, canon))

    def profile_for_result(self, result: NcclResult, accelerator: Optional[str] = None,
                           scope: Optional[str] = None) -> Optional[FloorProfile]:
        """The floor matching a parsed run (accelerator from the device names, scope from the hosts)."""
        if accelerator is None:
            names = result.device_names
            accelerator = accelerator_from_device_name(names[0]) if names else None
        return self.floor_for(accelerator, scope or scope_of_result(result), result.collective)

    def to_dict(self) -> Dict[str, Any]:
        floors: Dict[str, Dict[str, Dict[str, Any]]] = {}
        for (accelerator, scope, collective), profile in sorted(self.floors.items()):
            floors.setdefault(accelerator, {}).setdefault(scope, {})[collective] = {
                "floor": profile.floor, "expected": profile.expected, "source": profile.source,
                "confidence": profile.confidence}
        return {"floors": floors, "relative": self.relative.to_dict(), "use_builtin_floors": False}


def _mapping(value: Any, source: str, key: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ThresholdConfigError("must be a mapping", file=source, field=key or None, value=value)
    for name in value:
        if not isinstance(name, str):
            raise ThresholdConfigError("keys must be strings", file=source, field=key or None, value=name)
    return value


def _unknown_keys(data: Mapping[str, Any], allowed: Tuple[str, ...], source: str, prefix: str) -> None:
    for name in data:
        if name not in allowed:
            dotted = "%s.%s" % (prefix, name) if prefix else name
            raise ThresholdConfigError("unknown key (allowed: %s)" % ", ".join(allowed), file=source, field=dotted,
                                       value=data[name])


def _number(value: Any, source: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(float(value)) or math.isinf(float(value)):
        raise ThresholdConfigError("must be a finite number", file=source, field=key, value=value)
    return float(value)


def _floor_entry(raw: Any, accelerator: str, scope: str, collective: str, source: str, key: str) -> FloorProfile:
    if isinstance(raw, Mapping):
        _unknown_keys(raw, _FLOOR_KEYS, source, key)
        if "floor" not in raw:
            raise ThresholdConfigError("missing required key 'floor'", file=source, field=key, value=dict(raw))
        floor = _number(raw["floor"], source, key + ".floor")
        floor_key = key + ".floor"
        expected = None
        if raw.get("expected") is not None:
            expected = _number(raw["expected"], source, key + ".expected")
            if expected < floor:
                raise ThresholdConfigError("expected must not be below floor (%s)" % floor, file=source,
                                           field=key + ".expected", value=raw["expected"])
        src = str(raw.get("source") or "user")
        confidence = str(raw.get("confidence") or "user")
        raw_floor = raw["floor"]
    else:
        floor = _number(raw, source, key)
        floor_key, raw_floor, expected, src, confidence = key, raw, None, "user", "user"
    if floor < 0.0:
        raise ThresholdConfigError("floor must be >= 0 GB/s", file=source, field=floor_key, value=raw_floor)
    return FloorProfile(accelerator=accelerator, scope=scope, collective=collective, floor=floor, expected=expected,
                        source=src, confidence=confidence)


def validate_thresholds(data: Optional[Mapping[str, Any]], source: str = "<thresholds>") -> ThresholdConfig:
    """Validate a user thresholds config and merge it over the built-in floors.

    Shape::

        use_builtin_floors: true          # default true; false starts from an empty table
        floors:
          h100-sxm:                       # accelerator id: lower case, [a-z0-9._-]
            intra-node:                   # intra-node | multi-node
              all_reduce: 420             # GB/s, or {floor: 420, expected: 470, source: "...", confidence: ...}
        relative:
          fraction: 0.9                   # (0, 1]
          mad_z: 3.5                      # > 0
          min_fleet_size: 4               # integer >= 3
          min_spread_fraction: 0.01       # [0, 1)

    Raises :class:`ThresholdConfigError` naming the dotted key and the value on any problem.
    """
    if data is None:
        return ThresholdConfig()
    data = _mapping(data, source, "")
    _unknown_keys(data, _TOP_KEYS, source, "")
    use_builtin = data.get("use_builtin_floors", True)
    if not isinstance(use_builtin, bool):
        raise ThresholdConfigError("must be true or false", file=source, field="use_builtin_floors", value=use_builtin)
    floors: Dict[Tuple[str, str, str], FloorProfile] = dict(BUILTIN_FLOORS) if use_builtin else {}
    for accelerator, scopes in _mapping(data.get("floors") or {}, source, "floors").items():
        acc_key = "floors.%s" % accelerator
        if not _ACCELERATOR_RE.match(accelerator):
            raise ThresholdConfigError("accelerator id must be lower case letters, digits, '.', '_' or '-'",
                                       file=source, field=acc_key, value=accelerator)
        for scope, collectives in _mapping(scopes, source, acc_key).items():
            scope_key = "%s.%s" % (acc_key, scope)
            if scope not in SCOPES:
                raise ThresholdConfigError("unknown scope (allowed: %s)" % ", ".join(SCOPES), file=source,
                                           field=scope_key, value=scope)
            for collective, raw in _mapping(collectives, source, scope_key).items():
                coll_key = "%s.%s" % (scope_key, collective)
                canon = canonical_collective(collective)
                if canon is None:
                    raise ThresholdConfigError("unknown collective (allowed: %s)" % ", ".join(COLLECTIVES),
                                               file=source, field=coll_key, value=collective)
                profile = _floor_entry(raw, accelerator, scope, canon, source, coll_key)
                floors[profile.key] = profile
    relative = RelativePolicy.from_dict(data.get("relative"), source=source)
    return ThresholdConfig(floors=floors, relative=relative)


def load_thresholds_file(path: str) -> ThresholdConfig:
    """Read a YAML thresholds file (safe loader, size limits) and validate it."""
    data = load_yaml_file(path)
    return validate_thresholds(data, source=path)


@dataclass
class FleetStats:
    """Robust centre and spread of a fleet's measurements."""

    count: int
    median: Optional[float]
    mad: Optional[float]
    scale: Optional[float]
    relative_applied: bool
    note: str = ""

    def to_dict(self) -> Dict[str, Any]:
        return {"count": self.count, "median": self.median, "mad": self.mad, "scale": self.scale,
                "relative_applied": self.relative_applied, "note": self.note}


def _median(values: List[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


def _valid_number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    if math.isnan(number) or math.isinf(number) or number < 0.0:
        return None
    return number


def fleet_stats(measurements: Mapping[str, Any], policy: Optional[RelativePolicy] = None) -> FleetStats:
    """Median, MAD and the z-score scale over the valid (finite, >= 0) measurements.

    ``scale = max(1.4826 x MAD, min_spread_fraction x median)``; when the MAD is 0 (more than half
    the fleet reports the same value) ``1.2533 x mean absolute deviation`` replaces it.
    """
    policy = policy or RelativePolicy()
    values = [v for v in (_valid_number(m) for m in measurements.values()) if v is not None]
    if not values:
        return FleetStats(count=0, median=None, mad=None, scale=None, relative_applied=False,
                          note="no valid measurement in the fleet: relative checks not applied")
    median = _median(values)
    deviations = [abs(v - median) for v in values]
    mad = _median(deviations)
    notes = []
    spread = MAD_SCALE * mad
    if mad == 0.0:
        mean_ad = sum(deviations) / len(deviations)
        spread = MEAN_AD_SCALE * mean_ad
        notes.append("MAD is 0; mean absolute deviation used instead")
    floor_spread = policy.min_spread_fraction * median
    if spread < floor_spread:
        spread = floor_spread
        notes.append("spread raised to %.3g (%.1f%% of the median)" % (floor_spread, 100.0 * policy.min_spread_fraction))
    applied = len(values) >= policy.min_fleet_size
    if not applied:
        notes.insert(0, "fleet of %d < %d: relative checks not applied" % (len(values), policy.min_fleet_size))
    return FleetStats(count=len(values), median=median, mad=mad, scale=spread, relative_applied=applied,
                      note="; ".join(notes))


@dataclass
class ThresholdVerdict:
    """Outcome for one entity: ``passed`` plus reasons that name the floor, value and median used."""

    entity: str
    passed: bool
    value: Optional[float]
    floor: Optional[float] = None
    floor_profile: Optional[str] = None
    median: Optional[float] = None
    fraction_limit: Optional[float] = None
    z_score: Optional[float] = None
    reasons: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return {"entity": self.entity, "passed": self.passed, "value": self.value, "floor": self.floor,
                "floor_profile": self.floor_profile, "median": self.median, "fraction_limit": self.fraction_limit,
                "z_score": self.z_score, "reasons": list(self.reasons), "notes": list(self.notes)}


def evaluate(measurement: Union[float, int, NcclResult, None], profile: Optional[FloorProfile] = None,
             fleet: Optional[FleetStats] = None, policy: Optional[RelativePolicy] = None,
             entity: str = "") -> ThresholdVerdict:
    """Judge one measurement (GB/s, or a parsed run's ``large_message_busbw``).

    Fails when the run itself is not ok, when the value is missing, below ``profile.floor``, below
    ``fraction x fleet median``, or a low-side MAD outlier.  Missing pieces (no profile, tiny fleet)
    are recorded in ``notes``; they never pass or fail on their own.
    """
    policy = policy or RelativePolicy()
    reasons: List[str] = []
    notes: List[str] = []
    if isinstance(measurement, NcclResult):
        if not measurement.ok:
            reasons.extend("run not usable: %s" % r for r in measurement.reasons)
        value = measurement.large_message_busbw
        if not entity:
            entity = measurement.source
    else:
        value = _valid_number(measurement)
        if value is None and measurement is not None:
            reasons.append("measurement %r is not a finite, non-negative number" % (measurement,))
    verdict = ThresholdVerdict(entity=entity, passed=False, value=value)
    if value is None:
        if not reasons:
            reasons.append("no busbw measurement")
        verdict.reasons, verdict.notes = reasons, notes
        return verdict

    if profile is not None:
        verdict.floor = profile.floor
        verdict.floor_profile = profile.label()
        if value < profile.floor:
            reasons.append("busbw %.2f GB/s is below the floor %.2f GB/s for %s (%s%s)"
                           % (value, profile.floor, profile.label(), profile.source,
                              ", expected about %.0f GB/s" % profile.expected if profile.expected else ""))
    else:
        notes.append("no absolute floor configured for this profile: floor check not applied")

    if fleet is None or fleet.median is None:
        notes.append("no fleet statistics: relative checks not applied")
    elif not fleet.relative_applied:
        verdict.median = fleet.median
        notes.append(fleet.note or "relative checks not applied")
    else:
        verdict.median = fleet.median
        limit = policy.fraction * fleet.median
        verdict.fraction_limit = limit
        if value < limit:
            reasons.append("busbw %.2f GB/s is below %.2f x fleet median %.2f GB/s = %.2f GB/s"
                           % (value, policy.fraction, fleet.median, limit))
        if fleet.scale:
            z_score = (value - fleet.median) / fleet.scale
            verdict.z_score = z_score
            if z_score < -policy.mad_z:
                reasons.append("busbw %.2f GB/s is a low outlier: modified z-score %.2f < -%.2f (fleet median %.2f GB/s, "
                               "robust spread %.2f GB/s over %d entities)"
                               % (value, z_score, policy.mad_z, fleet.median, fleet.scale, fleet.count))
        else:
            notes.append("fleet spread is 0: z-score check not applied")
        if fleet.note:
            notes.append(fleet.note)
    verdict.reasons, verdict.notes = reasons, notes
    verdict.passed = not reasons
    return verdict


def evaluate_fleet(measurements: Mapping[str, Union[float, int, NcclResult, None]],
                   profile: Optional[FloorProfile] = None,
                   policy: Optional[RelativePolicy] = None) -> Dict[str, ThresholdVerdict]:
    """Judge every entity of ``{id: busbw or NcclResult}`` against the floor and the fleet.

    Runs that are not ok, and missing values, are left out of the fleet statistics (and fail).
    """
    policy = policy or RelativePolicy()
    values: Dict[str, Optional[float]] = {}
    for name, item in measurements.items():
        if isinstance(item, NcclResult):
            values[name] = item.large_message_busbw if item.ok else None
        else:
            values[name] = _valid_number(item)
    stats = fleet_stats({k: v for k, v in values.items() if v is not None}, policy)
    return {name: evaluate(item, profile=profile, fleet=stats, policy=policy, entity=name)
            for name, item in measurements.items()}
