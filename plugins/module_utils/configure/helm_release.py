# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Helm 3 release storage (the default ``secrets`` driver): encode, decode and pick the latest revision.

Helm keeps every revision of a release in a Secret of type ``helm.sh/release.v1`` named
``sh.helm.release.v1.<release>.v<revision>`` in the release namespace, labelled ``owner=helm``, ``name=<release>``,
``status=<status>``, ``version=<revision>``. Its data key ``release`` holds the *Helm payload*
``base64(gzip(JSON of the release))``; the Kubernetes API transports Secret data base64-encoded once more, so what a
client reads from ``secret.data["release"]`` is ``base64(base64(gzip(json)))``.
"""
from __future__ import annotations

import base64
import binascii
import gzip
import io
import json
import zlib
from typing import Any, Iterable, Mapping, Optional

RELEASE_SECRET_TYPE = "helm.sh/release.v1"
RELEASE_SECRET_PREFIX = "sh.helm.release.v1."
_GZIP_MAGIC = b"\x1f\x8b\x08"
#: a decoded release larger than this is refused (gzip bomb guard); Secrets are at most 1 MiB compressed
MAX_RELEASE_BYTES = 64 * 1024 * 1024
#: statuses Helm writes (pkg/release/status.go)
STATUSES = ("unknown", "deployed", "uninstalled", "superseded", "failed", "uninstalling", "pending-install", "pending-upgrade",
            "pending-rollback")


class HelmReleaseDecodeError(ValueError):
    """A release Secret whose payload is not base64/gzip/JSON (names the Secret)."""


def encode_helm_payload(release: Mapping[str, Any]) -> str:
    """The Helm payload of a release: ``base64(gzip(json))`` (what Helm stores as the Secret's ``release`` bytes)."""
    raw = json.dumps(release, separators=(",", ":"), sort_keys=True).encode("utf-8")
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9, mtime=0) as handle:
        handle.write(raw)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _gunzip_limited(data: bytes, where: str) -> bytes:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, MAX_RELEASE_BYTES + 1)
    except zlib.error as err:
        raise HelmReleaseDecodeError(f"{where}: release payload is not valid gzip: {err}") from err
    if len(out) > MAX_RELEASE_BYTES or inflater.unconsumed_tail:
        raise HelmReleaseDecodeError(f"{where}: decoded release exceeds {MAX_RELEASE_BYTES} bytes")
    return out


def decode_helm_payload(payload: str | bytes, where: str = "release") -> dict[str, Any]:
    """Inverse of :func:`encode_helm_payload` (uncompressed JSON, as very old Helm 3 wrote, is accepted too)."""
    try:
        data = base64.b64decode(payload, validate=False)
    except (binascii.Error, ValueError) as err:
        raise HelmReleaseDecodeError(f"{where}: release payload is not base64: {err}") from err
    if data[:3] == _GZIP_MAGIC:
        data = _gunzip_limited(data, where)
    try:
        release = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise HelmReleaseDecodeError(f"{where}: release payload is not JSON: {err}") from err
    if not isinstance(release, dict):
        raise HelmReleaseDecodeError(f"{where}: release payload is a {type(release).__name__}, not an object")
    return release


def release_secret_name(release: str, revision: int) -> str:
    """``sh.helm.release.v1.<release>.v<revision>``."""
    return f"{RELEASE_SECRET_PREFIX}{release}.v{int(revision)}"


def build_release_secret(name: str, namespace: str, revision: int = 1, chart: str = "chart", chart_version: str = "0.1.0",
                         app_version: str = "", values: Optional[Mapping[str, Any]] = None, status: str = "deployed",
                         description: str = "", last_deployed: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    """A Secret (API JSON form, ``data`` base64 as the API wants it) exactly as Helm 3 stores one release revision."""
    if status not in STATUSES:
        raise ValueError(f"unknown Helm release status {status!r}; known: {', '.join(STATUSES)}")
    release = {
        "name": name, "namespace": namespace, "version": int(revision),
        "info": {"first_deployed": last_deployed, "last_deployed": last_deployed, "deleted": "", "status": status,
                 "description": description or ("Install complete" if revision == 1 else "Upgrade complete")},
        "chart": {"metadata": {"name": chart, "version": chart_version, "appVersion": app_version, "apiVersion": "v2"},
                  "lock": None, "templates": [], "values": {}, "schema": None, "files": []},
        "config": dict(values) if values else None,
        "manifest": "",
    }
    payload = encode_helm_payload(release)
    return {
        "apiVersion": "v1", "kind": "Secret", "type": RELEASE_SECRET_TYPE,
        "metadata": {"name": release_secret_name(name, revision), "namespace": namespace,
                     "labels": {"name": name, "owner": "helm", "status": status, "version": str(int(revision))}},
        "data": {"release": base64.b64encode(payload.encode("ascii")).decode("ascii")},
    }


def revision_of(secret: Mapping[str, Any]) -> int:
    """Revision number from the ``version`` label, else from the ``.v<N>`` name suffix; -1 if neither."""
    meta = secret.get("metadata") or {}
    label = (meta.get("labels") or {}).get("version")
    try:
        return int(str(label))
    except (TypeError, ValueError):
        pass
    name = str(meta.get("name") or "")
    suffix = name.rsplit(".v", 1)[-1] if ".v" in name else ""
    return int(suffix) if suffix.isdigit() else -1


def decode_release_secret(secret: Mapping[str, Any]) -> dict[str, Any]:
    """The release document of one Secret in API JSON form (``data.release`` = base64 of the Helm payload)."""
    meta = secret.get("metadata") or {}
    where = f"Secret {meta.get('namespace', '')}/{meta.get('name', '')}"
    data = (secret.get("data") or {}).get("release")
    if not data:
        raise HelmReleaseDecodeError(f"{where}: no data.release")
    try:
        payload = base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError) as err:
        raise HelmReleaseDecodeError(f"{where}: data.release is not base64: {err}") from err
    return decode_helm_payload(payload, where)


def latest_release_secret(secrets: Iterable[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    """The Secret with the highest revision (ignores anything that is not a Helm release Secret)."""
    candidates = [s for s in secrets if s.get("type") in (None, RELEASE_SECRET_TYPE)
                  and ((s.get("metadata") or {}).get("labels") or {}).get("owner") == "helm"]
    if not candidates:
        return None
    return max(candidates, key=revision_of)
