# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Measurements of a cluster (a *snapshot*) and criteria inference from them.

A :class:`Snapshot` is a flat mapping ``{Type.Subtype.Key: value}`` using AICR's
measurement names, so recipe constraints look values up by their own name.  The
key set (documented in ``docs/constraints.md``) is:

* from Ansible facts (:func:`snapshot_from_host_facts`): ``OS.release.ID``,
  ``OS.release.VERSION_ID``, ``OS.sysctl./proc/sys/kernel/osrelease`` (kernel),
  any ``OS.sysctl./proc/sys/...`` collected into ``dsxos_sysctl``, and the
  dsxos extensions ``OS.host.distribution``, ``OS.host.distribution_major_version``,
  ``OS.host.os_family``, ``OS.host.architecture``;
* from Kubernetes (later): ``K8s.server.version``, ``K8s.node.provider-id``,
  ``K8s.node.provider``, ``K8s.node.kernel-version``, ``K8s.node.os-image``, ``K8s.node.count`` (dsxos),
  ``K8s.node.<label key>`` (e.g. ``K8s.node.nvidia.com/gpu.product``);
* from NVML / nvidia-smi (later): ``GPU.smi.driver``, ``GPU.smi.cuda-version``,
  ``GPU.smi.gpu-count``, ``GPU.smi.gpu.model``, ``GPU.hardware.model``.

When hosts disagree on a value, the snapshot keeps one representative value
(the lowest version, else the most common value) and lists every host's value in
``variants[name]``; constraint evaluation checks every variant.
"""
from __future__ import annotations

import copy
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.constraints import (
    VersionFormatError, compare_versions, looks_like_version, split_constraint_name,
)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeSchemaError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import ANY, CRITERIA_VALUES, Criteria

SNAPSHOT_API_VERSION = "dsxos.cluster/v1"
SNAPSHOT_KIND = "Snapshot"

# Measurement names (AICR spelling where AICR has one).
OS_RELEASE_ID = "OS.release.ID"
OS_RELEASE_VERSION_ID = "OS.release.VERSION_ID"
OS_KERNEL = "OS.sysctl./proc/sys/kernel/osrelease"
OS_DISTRIBUTION = "OS.host.distribution"
OS_MAJOR_VERSION = "OS.host.distribution_major_version"
OS_FAMILY = "OS.host.os_family"
OS_ARCHITECTURE = "OS.host.architecture"
K8S_SERVER_VERSION = "K8s.server.version"
K8S_SERVER_SERVICE = "K8s.server.service"
K8S_NODE_PROVIDER_ID = "K8s.node.provider-id"
K8S_NODE_PROVIDER = "K8s.node.provider"
K8S_NODE_OS_IMAGE = "K8s.node.os-image"
K8S_NODE_KERNEL = "K8s.node.kernel-version"
K8S_NODE_GPU_PRODUCT = "K8s.node.nvidia.com/gpu.product"
GPU_DRIVER = "GPU.smi.driver"
GPU_CUDA = "GPU.smi.cuda-version"
GPU_COUNT = "GPU.smi.gpu-count"
GPU_MODEL = "GPU.smi.gpu.model"
#: dsxos extension: how many nodes the snapshot describes (the GPU nodes of a cluster when it has any)
K8S_NODE_COUNT = "K8s.node.count"
GPU_HARDWARE_MODEL = "GPU.hardware.model"
GPU_DEVICE_PRODUCT = "GPU.device.product"
DEPLOYMENT_SERVICE_HINT = "Deployment.cluster.service"

#: Where a GPU product string may be found, most authoritative first.
ACCELERATOR_SOURCES = (GPU_MODEL, GPU_HARDWARE_MODEL, GPU_DEVICE_PRODUCT, K8S_NODE_GPU_PRODUCT,
                       "NodeTopology.label.nvidia.com/gpu.product")
#: Where an OS identity may be found, most authoritative first.
OS_SOURCES = (OS_RELEASE_ID, OS_DISTRIBUTION, K8S_NODE_OS_IMAGE)

# Ansible distribution fact -> /etc/os-release ID.
_DISTRIBUTION_IDS = {
    "ubuntu": "ubuntu", "debian": "debian", "redhat": "rhel", "rhel": "rhel", "centos": "centos",
    "rocky": "rocky", "almalinux": "almalinux", "oraclelinux": "ol", "fedora": "fedora", "amazon": "amzn",
    "sles": "sles", "sles_sap": "sles_sap", "suse": "sles", "opensuse leap": "opensuse-leap",
    "container-optimized os": "cos", "talos": "talos", "flatcar": "flatcar",
}

# (criteria value, compiled pattern) in matching order: GB before B, L40S before L40.
_ACCELERATOR_PATTERNS: Tuple[Tuple[str, "re.Pattern[str]"], ...] = tuple(
    (value, re.compile(r"(?<![a-z0-9])" + pattern + r"(?![0-9])")) for value, pattern in (
        ("gb300", r"gb300"), ("gb200", r"gb200"), ("b300", r"b300"), ("b200", r"b200"),
        ("h200", r"h200"), ("h100", r"h100"), ("a100", r"a100"), ("l40s", r"l40s"), ("l40", r"l40(?!s)"),
        ("rtx-pro-6000", r"rtx[ _-]?pro[ _-]?6000"),
    ))

# (criteria value, patterns matched against a lower-cased OS ID / name / image).
_OS_RULES: Tuple[Tuple[str, Tuple[str, ...], str], ...] = (
    ("ubuntu", ("ubuntu",), ""),
    ("rhel", ("rhel", "redhat", "red hat"), ""),
    ("rhel", ("rocky", "centos", "almalinux"), "RHEL-compatible distribution"),
    ("cos", ("cos", "container-optimized os"), ""),
    ("amazonlinux", ("amzn", "amazon", "amazonlinux", "amazon linux"), ""),
    ("talos", ("talos",), ""),
    ("sles", ("sles", "suse linux enterprise"), ""),
)

_PROVIDER_ID_PREFIXES = (("aws://", "eks"), ("gce://", "gke"), ("azure://", "aks"), ("oci://", "oke"), ("kind://", "kind"))
_PROVIDER_NAMES = {"aws": "eks", "eks": "eks", "gce": "gke", "gcp": "gke", "gke": "gke", "azure": "aks", "aks": "aks",
                   "oci": "oke", "oke": "oke", "kind": "kind"}
_VERSION_HINTS = (("-eks-", "eks"), ("-gke.", "gke"))

_MAX_LISTED_HOSTS = 5


@dataclass
class Snapshot:
    """Flat measurements with provenance.

    ``measurements``: ``{Type.Subtype.Key: value}``; ``sources``: name -> where it came
    from (``ansible_facts:host1,host2``, ``user``, ``kubernetes``...); ``hosts``: hosts
    that contributed; ``variants``: name -> ``{host: value}`` for names whose value
    differs between hosts (empty when all hosts agree).
    """

    measurements: Dict[str, Any] = field(default_factory=dict)
    sources: Dict[str, str] = field(default_factory=dict)
    hosts: List[str] = field(default_factory=list)
    variants: Dict[str, Dict[str, Any]] = field(default_factory=dict)

    def get(self, name: str, default: Any = None) -> Any:
        return self.measurements.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self.measurements

    def is_heterogeneous(self, name: str) -> bool:
        return bool(self.variants.get(name))

    def merge(self, other: "Snapshot") -> "Snapshot":
        """A new snapshot: ``other`` wins on every name it has (value, source, variants)."""
        if not isinstance(other, Snapshot):
            raise RecipeSchemaError("can only merge a Snapshot", field="snapshot", value=type(other).__name__)
        merged = copy.deepcopy(self)
        for name, value in other.measurements.items():
            merged.measurements[name] = copy.deepcopy(value)
            if name in other.sources:
                merged.sources[name] = other.sources[name]
            else:
                merged.sources.pop(name, None)
            if other.variants.get(name):
                merged.variants[name] = copy.deepcopy(other.variants[name])
            else:
                merged.variants.pop(name, None)
        for host in other.hosts:
            if host not in merged.hosts:
                merged.hosts.append(host)
        return merged

    def to_dict(self) -> Dict[str, Any]:
        return {
            "apiVersion": SNAPSHOT_API_VERSION,
            "kind": SNAPSHOT_KIND,
            "hosts": list(self.hosts),
            "measurements": copy.deepcopy(self.measurements),
            "sources": dict(self.sources),
            "variants": copy.deepcopy(self.variants),
        }

    @classmethod
    def from_dict(cls, data: Any, source: str = "user") -> "Snapshot":
        """Accepts :meth:`to_dict` output, an AICR snapshot (``measurements`` as a list of
        ``{type, subtypes: [{subtype, data}]}``) or a flat ``{name: value}`` mapping."""
        if isinstance(data, Snapshot):
            return copy.deepcopy(data)
        if not isinstance(data, Mapping):
            raise RecipeSchemaError("a snapshot must be a mapping", field="snapshot", value=type(data).__name__)
        measurements = data.get("measurements")
        if isinstance(measurements, list):
            return snapshot_from_aicr(data, source=source)
        if not isinstance(measurements, Mapping):
            if "measurements" in data or data.get("kind") == SNAPSHOT_KIND:
                raise RecipeSchemaError("snapshot measurements must be a mapping of {Type.Subtype.Key: value}",
                                        field="measurements", value=measurements)
            return snapshot_from_values(data, source=source)
        snap = snapshot_from_values(measurements, source=source)
        sources = data.get("sources") or {}
        variants = data.get("variants") or {}
        hosts = data.get("hosts") or []
        if not isinstance(sources, Mapping):
            raise RecipeSchemaError("snapshot sources must be a mapping name -> source", field="sources", value=sources)
        if not isinstance(variants, Mapping) or not all(isinstance(v, Mapping) for v in variants.values()):
            raise RecipeSchemaError("snapshot variants must be a mapping name -> {host: value}", field="variants",
                                    value=variants)
        if not isinstance(hosts, list):
            raise RecipeSchemaError("snapshot hosts must be a list", field="hosts", value=hosts)
        snap.sources.update({str(k): str(v) for k, v in sources.items()})
        snap.variants = {str(k): {str(h): copy.deepcopy(x) for h, x in v.items()} for k, v in variants.items() if v}
        snap.hosts = [str(h) for h in hosts]
        return snap


# --------------------------------------------------------------------------- builders

def _check_name(name: Any, where: str) -> str:
    if not isinstance(name, str):
        raise RecipeSchemaError("measurement name must be a string {Type}.{Subtype}.{Key}", field=where, value=name)
    split_constraint_name(name)  # ConstraintError naming the bad name
    return name.strip()


def snapshot_from_values(values: Mapping[str, Any], source: str = "user") -> Snapshot:
    """User-given measurements keyed by full name (``{"K8s.server.version": "1.31.2"}``)."""
    if not isinstance(values, Mapping):
        raise RecipeSchemaError("measurements must be a mapping of {Type.Subtype.Key: value}", field="measurements",
                                value=type(values).__name__)
    snap = Snapshot()
    for name, value in values.items():
        key = _check_name(name, "measurements")
        snap.measurements[key] = copy.deepcopy(value)
        snap.sources[key] = source
    return snap


def snapshot_from_aicr(document: Mapping[str, Any], source: str = "aicr") -> Snapshot:
    """Flatten an AICR snapshot document (``measurements: [{type, subtypes: [{subtype, data}]}]``)."""
    snap = Snapshot()
    for i, measurement in enumerate(document.get("measurements") or []):
        if not isinstance(measurement, Mapping) or not measurement.get("type"):
            raise RecipeSchemaError("AICR measurement needs a 'type'", field="measurements[%d]" % i, value=measurement)
        mtype = str(measurement["type"])
        for j, subtype in enumerate(measurement.get("subtypes") or []):
            where = "measurements[%d].subtypes[%d]" % (i, j)
            if not isinstance(subtype, Mapping) or not subtype.get("subtype"):
                raise RecipeSchemaError("AICR subtype needs a 'subtype' name", field=where, value=subtype)
            data = subtype.get("data") or {}
            if not isinstance(data, Mapping):
                raise RecipeSchemaError("AICR subtype data must be a mapping", field=where + ".data", value=data)
            for key, value in data.items():
                name = "%s.%s.%s" % (mtype, subtype["subtype"], key)
                snap.measurements[name] = copy.deepcopy(value)
                snap.sources[name] = source
    return snap


def _fact(hostvars: Mapping[str, Any], key: str) -> Any:
    facts = hostvars.get("ansible_facts")
    if isinstance(facts, Mapping) and facts.get(key) not in (None, ""):
        return facts[key]
    value = hostvars.get("ansible_" + key)
    return value if value not in (None, "") else None


def _distribution_id(distribution: str) -> str:
    lowered = distribution.strip().lower()
    return _DISTRIBUTION_IDS.get(lowered, re.sub(r"\s+", "-", lowered))


def sysctl_path(name: str) -> str:
    """``net.core.rmem_max`` or ``/proc/sys/net/core/rmem_max`` -> ``/proc/sys/net/core/rmem_max``."""
    text = str(name).strip()
    if text.startswith("/"):
        return text
    return "/proc/sys/" + text.replace(".", "/")


def _host_measurements(host: str, hostvars: Mapping[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    distribution = _fact(hostvars, "distribution")
    if distribution is not None:
        out[OS_DISTRIBUTION] = str(distribution)
        out[OS_RELEASE_ID] = _distribution_id(str(distribution))
    for key, name in (("distribution_version", OS_RELEASE_VERSION_ID), ("distribution_major_version", OS_MAJOR_VERSION),
                      ("os_family", OS_FAMILY), ("architecture", OS_ARCHITECTURE), ("kernel", OS_KERNEL)):
        value = _fact(hostvars, key)
        if value is not None:
            out[name] = str(value).strip()
    sysctl = hostvars.get("dsxos_sysctl")
    if sysctl is None and isinstance(hostvars.get("ansible_facts"), Mapping):
        sysctl = hostvars["ansible_facts"].get("dsxos_sysctl")
    if sysctl is not None:
        if not isinstance(sysctl, Mapping):
            raise RecipeSchemaError("dsxos_sysctl must be a mapping of sysctl path -> value",
                                    field="hostvars[%s].dsxos_sysctl" % host, value=sysctl)
        for path, value in sysctl.items():
            out["OS.sysctl." + sysctl_path(path)] = value.strip() if isinstance(value, str) else value
    return out


def representative_value(values: Iterable[Any]) -> Any:
    """The one value that stands for many hosts' or nodes' values, in the order given.

    The lowest version when every value is a version (equal versions: the smaller text), else the most common value
    (ties: the first in the order given). Callers pass the values in a stable order (sorted by host, or by text).
    """
    ordered = list(values)
    if all(looks_like_version(value) for value in ordered):
        try:
            best = ordered[0]
            for value in ordered[1:]:
                sign = compare_versions(value, best)
                if sign < 0 or (sign == 0 and str(value) < str(best)):
                    best = value
            return best
        except VersionFormatError:
            pass
    counts = Counter(repr(value) for value in ordered)
    top = max(counts.values())
    return next(value for value in ordered if counts[repr(value)] == top)


def _source_label(prefix: str, hosts: Iterable[str]) -> str:
    names = sorted(hosts)
    if len(names) > _MAX_LISTED_HOSTS:
        return "%s:%s and %d more" % (prefix, ",".join(names[:_MAX_LISTED_HOSTS]), len(names) - _MAX_LISTED_HOSTS)
    return "%s:%s" % (prefix, ",".join(names))


def snapshot_from_host_facts(hostvars: Mapping[str, Mapping[str, Any]]) -> Snapshot:
    """Build a snapshot from Ansible ``hostvars`` (``{host: {ansible_facts: {...}, dsxos_sysctl: {...}}}``).

    Facts are read from ``ansible_facts`` or, failing that, the injected
    ``ansible_<fact>`` variables.  Hosts without any usable fact are skipped.
    """
    if not isinstance(hostvars, Mapping):
        raise RecipeSchemaError("hostvars must be a mapping host -> variables", field="hostvars",
                                value=type(hostvars).__name__)
    per_name: Dict[str, Dict[str, Any]] = {}
    hosts: List[str] = []
    for host in sorted(hostvars, key=str):
        variables = hostvars[host]
        if not isinstance(variables, Mapping):
            raise RecipeSchemaError("host variables must be a mapping", field="hostvars[%s]" % host,
                                    value=type(variables).__name__)
        measured = _host_measurements(str(host), variables)
        if not measured:
            continue
        hosts.append(str(host))
        for name, value in measured.items():
            per_name.setdefault(name, {})[str(host)] = value
    snap = Snapshot(hosts=hosts)
    for name in sorted(per_name):
        values = per_name[name]
        snap.measurements[name] = representative_value(value for _host, value in sorted(values.items()))
        snap.sources[name] = _source_label("ansible_facts", values)
        if len({repr(v) for v in values.values()}) > 1:
            snap.variants[name] = dict(sorted(values.items()))
    return snap


# --------------------------------------------------------------------------- inference

def _evidence(value: str, source: Optional[str], raw: Any, note: str = "") -> Dict[str, Any]:
    return {"value": value, "source": source, "raw": raw, "note": note}


def accelerator_from_product(product: Any) -> Optional[str]:
    """``"NVIDIA H100 80GB HBM3"`` -> ``"h100"``; None when not recognised."""
    text = str(product or "").strip().lower()
    for value, pattern in _ACCELERATOR_PATTERNS:
        if pattern.search(text):
            return value
    return None


def os_from_release(value: Any) -> Tuple[Optional[str], str]:
    """``"rocky"`` -> ``("rhel", "RHEL-compatible distribution")``; ``(None, "")`` when unknown."""
    text = str(value or "").strip().lower().strip('"')
    for criteria, patterns, note in _OS_RULES:
        for pattern in patterns:
            if text == pattern or (" " in pattern and pattern in text) or text.startswith(pattern + " "):
                return criteria, note
    return None, ""


def service_from_hints(snapshot: Snapshot) -> Tuple[str, Optional[str], Any, str]:
    """(service, source name, raw value, note); ``any`` when nothing says."""
    for name in (K8S_SERVER_SERVICE, DEPLOYMENT_SERVICE_HINT):
        raw = snapshot.get(name)
        if raw not in (None, ""):
            value = str(raw).strip().lower()
            if value in CRITERIA_VALUES["service"]:
                return value, name, raw, "explicit service hint"
    raw = snapshot.get(K8S_NODE_PROVIDER_ID)
    if raw:
        for prefix, service in _PROVIDER_ID_PREFIXES:
            if str(raw).strip().lower().startswith(prefix):
                return service, K8S_NODE_PROVIDER_ID, raw, "node providerID prefix %s" % prefix
    raw = snapshot.get(K8S_NODE_PROVIDER)
    if raw and str(raw).strip().lower() in _PROVIDER_NAMES:
        return _PROVIDER_NAMES[str(raw).strip().lower()], K8S_NODE_PROVIDER, raw, "node provider"
    raw = snapshot.get(K8S_SERVER_VERSION)
    if raw:
        for marker, service in _VERSION_HINTS:
            if marker in str(raw).lower():
                return service, K8S_SERVER_VERSION, raw, "server gitVersion contains %r" % marker
    return ANY, None, None, "no platform hint (providerID, server version, explicit service)"


def infer_criteria_with_evidence(snapshot: Any) -> Tuple[Criteria, Dict[str, Dict[str, Any]]]:
    """Criteria inferred from measurements, plus per field ``{value, source, raw, note}``.

    ``intent`` and ``platform`` cannot be measured and stay ``any``; ``nodes`` is the node count the snapshot shows
    (see :func:`nodes_from_snapshot`; 0, meaning any, when it shows none).
    """
    snap = snapshot if isinstance(snapshot, Snapshot) else Snapshot.from_dict(snapshot)
    evidence: Dict[str, Dict[str, Any]] = {}

    accelerator = _evidence(ANY, None, None, "no GPU product measurement")
    for name in ACCELERATOR_SOURCES:
        raw = snap.get(name)
        if raw in (None, ""):
            continue
        value = accelerator_from_product(raw)
        if value is None:
            accelerator = _evidence(ANY, name, raw, "GPU product not recognised")
            continue
        others = sorted({accelerator_from_product(v) or str(v) for v in (snap.variants.get(name) or {}).values()} - {value})
        accelerator = _evidence(value, name, raw, "hosts also report: %s" % ", ".join(others) if others else "")
        break
    evidence["accelerator"] = accelerator

    os_evidence = _evidence(ANY, None, None, "no OS release measurement")
    for name in OS_SOURCES:
        raw = snap.get(name)
        if raw in (None, ""):
            continue
        value, note = os_from_release(raw)
        if value is None:
            os_evidence = _evidence(ANY, name, raw, "OS not recognised")
            continue
        if snap.is_heterogeneous(name):
            note = (note + "; " if note else "") + "hosts differ: %s" % ", ".join(
                sorted({str(v) for v in snap.variants[name].values()}))
        os_evidence = _evidence(value, name, raw, note)
        break
    evidence["os"] = os_evidence

    service, source, raw, note = service_from_hints(snap)
    evidence["service"] = _evidence(service, source, raw, note)
    for name in ("intent", "platform"):
        evidence[name] = _evidence(ANY, None, None, "not measurable; give it explicitly")
    nodes, evidence["nodes"] = nodes_from_snapshot(snap)

    criteria = Criteria(service=service, accelerator=evidence["accelerator"]["value"], os=evidence["os"]["value"],
                        nodes=nodes)
    return criteria, evidence


def nodes_from_snapshot(snapshot: Snapshot) -> Tuple[int, Dict[str, Any]]:
    """(node count, evidence): the ``K8s.node.count`` measurement (a cluster snapshot), else the number of hosts the
    snapshot was measured on (Ansible host facts); 0 (any) when neither says."""
    raw = snapshot.get(K8S_NODE_COUNT)
    if raw not in (None, ""):
        try:
            count = int(str(raw).strip())
        except ValueError:
            count = -1
        if count > 0:
            return count, {"value": count, "source": K8S_NODE_COUNT, "raw": raw, "note": "nodes counted in the cluster"}
        return 0, {"value": 0, "source": K8S_NODE_COUNT, "raw": raw, "note": "node count not a positive integer"}
    if snapshot.hosts:
        count = len(snapshot.hosts)
        return count, {"value": count, "source": "hosts", "raw": count, "note": "hosts the snapshot was measured on"}
    return 0, {"value": 0, "source": None, "raw": None, "note": "no node count measurement and no hosts"}


def infer_criteria(snapshot: Any) -> Criteria:
    """Criteria inferred from a snapshot (see :func:`infer_criteria_with_evidence`)."""
    return infer_criteria_with_evidence(snapshot)[0]
