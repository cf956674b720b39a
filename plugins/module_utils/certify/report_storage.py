# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Storing the rendered certification report: files on the controller and a Kubernetes ConfigMap.

:func:`write_report_files` writes ``<basename>.json|.xml|.md|.html`` atomically and only when the content changed;
:func:`report_of_record` finds the report already written for the same outcome (``rewrite: outcome``: a rerun that
certifies the same thing leaves the report, and so the run, unchanged);
:func:`configmap_payload` builds the ConfigMap content (gzip + base64 in ``binaryData`` above a size) and
:func:`store_configmap` creates or replaces it, leaving an identical one untouched.
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import re
import tempfile
from typing import Any, Dict, Mapping, Optional, Sequence

from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.report_model import CertifyReportError, SCHEMA_ID
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.report_render import to_json, to_markdown
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sNotFound
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import validate_namespace, validate_subdomain

EXTENSIONS = {"json": ".json", "junit": ".xml", "markdown": ".md", "html": ".html"}
DEFAULT_BASENAME = "certify-report"
DEFAULT_COMPRESS_ABOVE_BYTES = 512 * 1024
#: The API server refuses ConfigMaps above 1 MiB (the whole object); keep room for metadata.
CONFIGMAP_MAX_BYTES = 1024 * 1024 - 16 * 1024
#: The most of an existing JSON report read to compare outcomes (a larger one is rewritten, never parsed).
MAX_RECORD_BYTES = 64 * 1024 * 1024
_BASENAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def validate_basename(basename: Any) -> str:
    """A file/ConfigMap-key stem: letters, digits, ``.``, ``_``, ``-`` (no path separators)."""
    if not isinstance(basename, str) or not _BASENAME_RE.match(basename) or basename in (".", ".."):
        raise CertifyReportError("must be 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit",
                                 field="basename", value=basename)
    return basename


def _write_atomic(path: str, data: bytes) -> None:
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


#: ``rewrite`` choices of the certify_report module: ``outcome`` keeps the report of record while a new run reaches the
#: same outcome; ``always`` writes every run's report (new timings and measurements each time).
REWRITE_CHOICES = ("outcome", "always")


def report_outcome(report: Mapping[str, Any]) -> Dict[str, Any]:
    """What a certification decided and about what, without what it measured: the platform and GPU it certified
    (name, service, versions, product, driver), the result, the categories' statuses and every node's verdict and
    category statuses. Two runs with the same outcome certify the same thing."""
    nodes = report.get("nodes") or {}
    return {
        "platform": report.get("platform") or {},
        "gpu": report.get("gpu") or {},
        "result": report.get("result"),
        "categories": {c: (i or {}).get("status") for c, i in (report.get("categories") or {}).items()},
        "nodes": {n: {"verdict": (v or {}).get("verdict"),
                      "categories": {c: (e or {}).get("status") for c, e in ((v or {}).get("categories") or {}).items()}}
                  for n, v in nodes.items()},
    }


def report_of_record(dest_dir: str, report: Mapping[str, Any], formats: Sequence[str],
                     basename: str = DEFAULT_BASENAME) -> Optional[Dict[str, Any]]:
    """The report already in ``dest_dir`` when it has every format in ``formats`` and the same outcome as ``report``
    (see :func:`report_outcome`), else None. A JSON report that cannot be read never counts."""
    validate_basename(basename)
    dest = os.path.abspath(os.path.expanduser(dest_dir))
    if not all(os.path.isfile(os.path.join(dest, basename + EXTENSIONS[f])) for f in formats):
        return None
    try:
        with open(os.path.join(dest, basename + EXTENSIONS["json"]), "rb") as handle:
            existing = json.loads(handle.read(MAX_RECORD_BYTES + 1).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(existing, dict) or report_outcome(existing) != report_outcome(report):
        return None
    return existing


def write_report_files(dest_dir: str, rendered: Mapping[str, str], basename: str = DEFAULT_BASENAME,
                       check_mode: bool = False) -> Dict[str, Any]:
    """Write ``<basename>.json|.xml|.md|.html`` into ``dest_dir`` (created when missing), each atomically and only
    when its content differs. Returns ``{"files": {format: path}, "changed_files": [paths]}``."""
    validate_basename(basename)
    dest = os.path.abspath(os.path.expanduser(dest_dir))
    if os.path.exists(dest) and not os.path.isdir(dest):
        raise CertifyReportError("exists and is not a directory", field="dest_dir", value=dest_dir)
    files, changed = {}, []
    for fmt, text in rendered.items():
        path = os.path.join(dest, basename + EXTENSIONS[fmt])
        data = text.encode("utf-8")
        files[fmt] = path
        try:
            with open(path, "rb") as handle:
                same = handle.read() == data
        except FileNotFoundError:
            same = False
        if same:
            continue
        changed.append(path)
        if not check_mode:
            os.makedirs(dest, exist_ok=True)
            _write_atomic(path, data)
    return {"files": files, "changed_files": changed}


def _gzip(text: str) -> str:
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")


def configmap_payload(report: Mapping[str, Any], basename: str = DEFAULT_BASENAME, json_text: Optional[str] = None,
                      markdown_text: Optional[str] = None, compress_above_bytes: int = DEFAULT_COMPRESS_ABOVE_BYTES) -> Dict[str, Any]:
    """``{"data", "binaryData", "labels", "annotations", "compressed"}`` for the report ConfigMap.

    The JSON and the Markdown go to ``data`` as ``<basename>.json``/``.md``; when together they exceed
    ``compress_above_bytes`` they go to ``binaryData`` as ``<basename>.json.gz``/``.md.gz`` (gzip, mtime 0, so the
    bytes only change with the content) and the annotation ``dsxos.io/compression: gzip`` says so.
    """
    validate_basename(basename)
    if isinstance(compress_above_bytes, bool) or not isinstance(compress_above_bytes, int) or compress_above_bytes < 0:
        raise CertifyReportError("must be a non-negative integer", field="configmap.compress_above_bytes", value=compress_above_bytes)
    json_text = json_text if json_text is not None else to_json(report)
    markdown_text = markdown_text if markdown_text is not None else to_markdown(report)
    size = len(json_text.encode("utf-8")) + len(markdown_text.encode("utf-8"))
    compressed = size > compress_above_bytes
    if compressed:
        data: Dict[str, str] = {}
        binary = {basename + ".json.gz": _gzip(json_text), basename + ".md.gz": _gzip(markdown_text)}
        stored = sum(len(v) for v in binary.values())
    else:
        data = {basename + ".json": json_text, basename + ".md": markdown_text}
        binary = {}
        stored = size
    if stored > CONFIGMAP_MAX_BYTES:
        raise CertifyReportError("the report is too large for a ConfigMap (%d bytes stored%s, limit %d); keep it as files"
                                 % (stored, " after gzip+base64" if compressed else "", CONFIGMAP_MAX_BYTES),
                                 field="configmap", value=size)
    digest = hashlib.sha256(json_text.encode("utf-8")).hexdigest()
    labels = {"app.kubernetes.io/managed-by": "dsxos.cluster", "app.kubernetes.io/component": "certify-report",
              "dsxos.io/certify-result": str(report["result"])}
    annotations = {"dsxos.io/report-sha256": digest, "dsxos.io/report-schema": SCHEMA_ID}
    if compressed:
        annotations["dsxos.io/compression"] = "gzip"
    return {"data": data, "binaryData": binary, "labels": labels, "annotations": annotations, "compressed": compressed,
            "bytes": size, "stored_bytes": stored}


def _decoded(existing: Mapping[str, Any]) -> Dict[str, str]:
    """The text entries of an existing ConfigMap, gunzipped where needed (unreadable entries compare unequal)."""
    out = dict(existing.get("data") or {})
    for key, value in (existing.get("binaryData") or {}).items():
        try:
            out[key] = gzip.decompress(base64.b64decode(value)).decode("utf-8") if key.endswith(".gz") else value
        except (ValueError, OSError, EOFError):
            out[key] = "\0unreadable"
    return out


def store_configmap(client: KubeApi, namespace: str, name: str, payload: Mapping[str, Any], check_mode: bool = False) -> Dict[str, Any]:
    """Create or replace the ConfigMap ``namespace/name`` with ``payload`` (from :func:`configmap_payload`).

    Unchanged content (compared after decompression), labels and annotations mean no write. Returns
    ``{"namespace", "name", "action": created|replaced|unchanged, "changed", "compressed", "keys"}``.
    """
    validate_namespace(namespace, "configmap.namespace")
    validate_subdomain(name, "configmap.name")
    core = client.core
    try:
        existing = client.to_plain(client.call("get", "configmaps", core.read_namespaced_config_map, name, namespace))
    except K8sNotFound:
        existing = None
    want_plain = {"data": dict(payload["data"]), "binaryData": dict(payload["binaryData"])}
    keys = sorted(list(payload["data"]) + list(payload["binaryData"]))
    summary = {"namespace": namespace, "name": name, "compressed": bool(payload["compressed"]), "keys": keys}
    if existing is not None:
        meta = existing.get("metadata") or {}
        labels = meta.get("labels") or {}
        annotations = meta.get("annotations") or {}
        same = (_decoded(existing) == _decoded(want_plain)
                and sorted((existing.get("data") or {})) == sorted(payload["data"])
                and sorted((existing.get("binaryData") or {})) == sorted(payload["binaryData"])
                and all(labels.get(k) == v for k, v in payload["labels"].items())
                and all(annotations.get(k) == v for k, v in payload["annotations"].items())
                and (payload["compressed"] or "dsxos.io/compression" not in annotations))
        if same:
            summary.update(action="unchanged", changed=False)
            return summary
    body: Dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": name, "namespace": namespace, "labels": dict(payload["labels"]),
                                         "annotations": dict(payload["annotations"])},
                            "data": dict(payload["data"]) or None, "binaryData": dict(payload["binaryData"]) or None}
    if existing is not None:
        meta = existing.get("metadata") or {}
        body["metadata"]["labels"] = dict(meta.get("labels") or {}, **payload["labels"])
        annotations = dict(meta.get("annotations") or {}, **payload["annotations"])
        if not payload["compressed"]:
            annotations.pop("dsxos.io/compression", None)
        body["metadata"]["annotations"] = annotations
        body["metadata"]["resourceVersion"] = meta.get("resourceVersion")
        summary.update(action="replaced", changed=True)
        if not check_mode:
            client.call("replace", "configmaps", core.replace_namespaced_config_map, name, namespace, body)
        return summary
    summary.update(action="created", changed=True)
    if not check_mode:
        client.call("create", "configmaps", core.create_namespaced_config_map, namespace, body)
    return summary
