# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Publish a verified bundle to an OCI registry as a Flux-compatible artifact (with the ``oras`` SDK).

The artifact is what ``flux push artifact`` produces, so a Flux ``OCIRepository`` can consume it:

* an OCI image manifest (``application/vnd.oci.image.manifest.v1+json``);
* config ``application/vnd.cncf.flux.config.v1+json`` (the blob ``{}``);
* one layer ``application/vnd.cncf.flux.content.v1.tar+gzip``: the bundle as a gzipped tarball.

The tarball is reproducible: ``checksums.txt`` and exactly the files it lists (after :func:`..bundle_verify`
accepted the bundle, and hashed again while packing), sorted by path, with their parent directories, mtime 0,
uid/gid 0, no user/group names, modes normalised to 0644/0755, gzip header without name or time.  With
annotations that do not move (no "now" timestamp), the same bundle always gives the same manifest digest, so
publishing is idempotent: when the tag already points at that digest nothing is uploaded (``changed: false``).
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import posixpath
import re
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.common.errors import YamlLoadError
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import load_yaml_text
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_verify import (
    CHECKSUMS_FILE, BundleVerifyError, file_sha256, verified_entries)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.deployer_flux import (
    FLUX_CONFIG_MEDIA_TYPE, FLUX_CONTENT_MEDIA_TYPE)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RecipeError

try:
    import oras.provider
    import requests
    HAS_ORAS = True
    ORAS_IMPORT_ERROR: Optional[str] = None
except ImportError as _exc:  # pragma: no cover - exercised by ansible-test's import sanity test
    HAS_ORAS = False
    ORAS_IMPORT_ERROR = str(_exc)

OCI_MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
LAYER_TITLE = "bundle.tar.gz"
RECIPE_FILE = "recipe.yaml"
ANN_SOURCE = "org.opencontainers.image.source"
ANN_REVISION = "org.opencontainers.image.revision"
ANN_CREATED = "org.opencontainers.image.created"
ANN_TITLE = "org.opencontainers.image.title"
ANN_CRITERIA = "io.dsxos.bundle.criteria"
ANN_COMPONENTS = "io.dsxos.bundle.components"
_REGISTRY = re.compile(r"^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)(:[0-9]{1,5})?$")
_PATH_COMPONENT = re.compile(r"^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_CREATED = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$")


class BundlePublishError(RecipeError):
    """The bundle could not be published (bad reference, registry unreachable or refusing, missing oras)."""


def require_oras() -> None:
    """Fail with a message naming the package and the interpreter when the ``oras`` SDK is missing."""
    if not HAS_ORAS:
        import sys  # pylint: disable=import-outside-toplevel
        raise BundlePublishError("the Python package 'oras' is required to publish bundles (pip install oras); "
                                 "missing for interpreter %s: %s" % (sys.executable, ORAS_IMPORT_ERROR),
                                 field="oras")


@dataclass(frozen=True)
class OciReference:
    """``oci://<registry>/<repository>:<tag>``."""

    registry: str
    repository: str
    tag: str

    @property
    def url(self) -> str:
        """The ``OCIRepository.spec.url`` form: ``oci://registry/repository``."""
        return "oci://%s/%s" % (self.registry, self.repository)

    @property
    def reference(self) -> str:
        return "%s:%s" % (self.url, self.tag)

    @property
    def target(self) -> str:
        """``registry/repository:tag`` (what oras parses)."""
        return "%s/%s:%s" % (self.registry, self.repository, self.tag)


def parse_reference(reference: Any) -> OciReference:
    """Parse ``[oci://]registry[:port]/path/name:tag``; errors name the reference and the bad part."""
    if not isinstance(reference, str) or not reference.strip():
        raise BundlePublishError("an OCI reference oci://<registry>/<repository>:<tag> is required",
                                 field="reference", value=reference)
    text = reference.strip()
    rest = text[len("oci://"):] if text.startswith("oci://") else text
    if "://" in rest or "@" in rest:
        raise BundlePublishError("reference must be oci://<registry>/<repository>:<tag> (no other scheme, no @digest: "
                                 "a push needs a tag)", field="reference", value=reference)
    registry, sep, path = rest.partition("/")
    if not sep or not _REGISTRY.match(registry):
        raise BundlePublishError("reference must start with a registry host[:port]", field="reference", value=reference)
    repository, colon, tag = path.rpartition(":")
    if not colon or "/" in tag:
        raise BundlePublishError("reference needs a tag (oci://<registry>/<repository>:<tag>)", field="reference",
                                 value=reference)
    if not _TAG.match(tag):
        raise BundlePublishError("invalid tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})", field="reference", value=tag)
    parts = repository.split("/")
    bad = [p for p in parts if not _PATH_COMPONENT.match(p)]
    if bad or len(repository) > 255:
        raise BundlePublishError("invalid repository path component (lower-case letters, digits, '.', '_', '-')",
                                 field="reference", value=bad[0] if bad else repository)
    return OciReference(registry=registry, repository=repository, tag=tag)


def _tar_info(name: str, size: int, mode: int, is_dir: bool = False) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE if is_dir else tarfile.REGTYPE
    info.size = 0 if is_dir else size
    info.mode = mode
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def bundle_tarball(root: str, entries: Mapping[str, str]) -> bytes:
    """The reproducible tar+gzip of ``checksums.txt`` and the files ``entries`` lists, each hashed again while packed.

    A file whose SHA-256 no longer matches ``entries`` (changed after verification) is a :class:`BundleVerifyError`.
    """
    paths = sorted(set(entries) | {CHECKSUMS_FILE})
    dirs = set()
    for relpath in paths:
        parent = posixpath.dirname(relpath)
        while parent:
            dirs.add(parent)
            parent = posixpath.dirname(parent)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(set(paths) | dirs):
            if name in dirs:
                tar.addfile(_tar_info(name, 0, 0o755, is_dir=True))
                continue
            full = os.path.join(root, *name.split("/"))
            fd = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as handle:
                content = handle.read()
                mode = os.fstat(handle.fileno()).st_mode
            if name != CHECKSUMS_FILE and hashlib.sha256(content).hexdigest() != entries[name]:
                raise BundleVerifyError("file changed after the bundle was verified; refusing to publish it",
                                        path=full, field="bundle")
            tar.addfile(_tar_info(name, len(content), 0o755 if mode & 0o111 else 0o644), io.BytesIO(content))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def _recipe_annotations(root: str, entries: Mapping[str, str]) -> Dict[str, str]:
    if RECIPE_FILE not in entries:
        return {}
    path = os.path.join(root, RECIPE_FILE)
    with open(path, "rb") as handle:
        text = handle.read().decode("utf-8", errors="replace")
    try:
        recipe = load_yaml_text(text, source=path, error=YamlLoadError)
    except YamlLoadError:
        return {}
    out: Dict[str, str] = {}
    if isinstance(recipe, dict):
        criteria = recipe.get("criteria")
        if isinstance(criteria, dict):
            out[ANN_CRITERIA] = ",".join("%s=%s" % (k, criteria[k]) for k in criteria)
        order = recipe.get("deploymentOrder")
        if isinstance(order, list):
            out[ANN_COMPONENTS] = ",".join(str(c) for c in order)
        metadata = recipe.get("metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("created"), str):
            out[ANN_CREATED] = metadata["created"]
    return out


def artifact_annotations(root: str, entries: Mapping[str, str], source: Optional[str] = None,
                         revision: Optional[str] = None, created: Optional[str] = None,
                         extra: Optional[Mapping[str, Any]] = None) -> Dict[str, str]:
    """Manifest annotations: criteria/components (and ``created`` if the recipe has one) from ``recipe.yaml``,
    ``revision`` defaulting to the SHA-256 of ``checksums.txt`` (changes exactly when a file does), then the
    caller's ``source``/``revision``/``created`` and ``extra`` annotations.  Never a wall-clock time."""
    out = _recipe_annotations(root, entries)
    out[ANN_REVISION] = "sha256:%s" % file_sha256(os.path.join(root, CHECKSUMS_FILE))
    if source:
        out[ANN_SOURCE] = str(source)
    if revision:
        out[ANN_REVISION] = str(revision)
    if created:
        if not _CREATED.match(str(created)):
            raise BundlePublishError("created must be an RFC 3339 time such as 2026-01-31T12:00:00Z", field="created",
                                     value=created)
        out[ANN_CREATED] = str(created)
    for key, value in dict(extra or {}).items():
        if not isinstance(key, str) or not key or value is None or isinstance(value, (dict, list)):
            raise BundlePublishError("annotations must map names to plain values", field="annotations.%s" % key,
                                     value=value)
        out[key] = str(value)
    return dict(sorted(out.items()))


def _descriptor(media_type: str, blob: bytes, annotations: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    out: Dict[str, Any] = {"mediaType": media_type, "digest": "sha256:" + hashlib.sha256(blob).hexdigest(),
                           "size": len(blob)}
    if annotations:
        out["annotations"] = annotations
    return out


@dataclass
class Artifact:
    """The blobs and the manifest of one bundle, byte for byte."""

    layer: bytes
    config: bytes
    manifest: bytes
    annotations: Dict[str, str]
    files: List[str]

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.manifest).hexdigest()

    @property
    def layer_descriptor(self) -> Dict[str, Any]:
        return _descriptor(FLUX_CONTENT_MEDIA_TYPE, self.layer, {ANN_TITLE: LAYER_TITLE})

    @property
    def config_descriptor(self) -> Dict[str, Any]:
        return _descriptor(FLUX_CONFIG_MEDIA_TYPE, self.config)


def build_artifact(bundle: str, source: Optional[str] = None, revision: Optional[str] = None,
                   created: Optional[str] = None, annotations: Optional[Mapping[str, Any]] = None) -> Artifact:
    """Verify ``bundle`` (every problem named) and build its artifact; no network."""
    root, entries = verified_entries(bundle)
    layer = bundle_tarball(root, entries)
    config = b"{}"
    notes = artifact_annotations(root, entries, source, revision, created, annotations)
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST_MEDIA_TYPE,
        "config": _descriptor(FLUX_CONFIG_MEDIA_TYPE, config),
        "layers": [_descriptor(FLUX_CONTENT_MEDIA_TYPE, layer, {ANN_TITLE: LAYER_TITLE})],
        "annotations": notes,
    }
    body = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return Artifact(layer=layer, config=config, manifest=body, annotations=notes,
                    files=sorted(set(entries) | {CHECKSUMS_FILE}))


@dataclass
class RegistryAccess:
    """How to reach the registry."""

    username: Optional[str] = None
    password: Optional[str] = None
    plain_http: bool = False
    validate_certs: bool = True
    timeout: float = 30.0


class _Registry:
    """The few registry calls publishing needs, through ``oras.provider.Registry``."""

    def __init__(self, ref: OciReference, access: RegistryAccess) -> None:
        require_oras()
        self.ref = ref
        self.access = access
        self.scheme = "http" if access.plain_http else "https"
        self.server = "%s://%s" % (self.scheme, ref.registry)
        challenge = self._ping()
        backend = "basic" if challenge.lower().startswith("basic") else "token"
        self.client = oras.provider.Registry(hostname=ref.registry, insecure=access.plain_http,
                                             tls_verify=access.validate_certs, auth_backend=backend)
        if access.username:
            self.client.auth.set_basic_auth(access.username, access.password or "")
        elif challenge:
            raise BundlePublishError("the registry requires authentication; give username and password",
                                     server=self.server, field="username")
        self.container = self.client.get_container(ref.target)

    def _ping(self) -> str:
        """``GET /v2/`` with a timeout (oras itself retries for minutes): '' when open, else the auth challenge."""
        url = "%s/v2/" % self.server
        try:
            response = requests.get(url, timeout=self.access.timeout, verify=self.access.validate_certs)
        except requests.exceptions.SSLError as exc:
            raise BundlePublishError("TLS error talking to the registry (plain_http for an http registry, "
                                     "validate_certs for a self-signed one): %s" % exc, server=self.server) from None
        except requests.exceptions.RequestException as exc:
            raise BundlePublishError("registry unreachable: %s" % type(exc).__name__, server=self.server,
                                     value=str(exc)[:300]) from None
        if response.status_code == 401:
            return response.headers.get("Www-Authenticate", "") or "unknown"
        if response.status_code != 200:
            raise BundlePublishError("registry does not answer the OCI distribution API (GET /v2/ gave HTTP %d)"
                                     % response.status_code, server=self.server)
        return ""

    def _check(self, response: Any, doing: str, ok: Tuple[int, ...]) -> Any:
        if response.status_code in ok:
            return response
        if response.status_code in (401, 403):
            raise BundlePublishError("registry refused the credentials while %s (HTTP %d)" % (doing, response.status_code),
                                     server=self.server, field="username", value=self.access.username)
        detail = (response.text or "")[:300]
        raise BundlePublishError("registry answered HTTP %d while %s: %s" % (response.status_code, doing, detail),
                                 server=self.server, value=self.ref.reference)

    def _request(self, method: str, url: str, doing: str, ok: Tuple[int, ...], **kwargs: Any) -> Any:
        try:
            response = self.client.do_request(url, method, **kwargs)
        except (requests.exceptions.RequestException, ValueError) as exc:
            raise BundlePublishError("registry request failed while %s: %s" % (doing, exc), server=self.server) from None
        return self._check(response, doing, ok)

    def current_digest(self) -> Optional[str]:
        """Digest of the manifest the tag points at, or None when the tag does not exist."""
        url = "%s://%s" % (self.scheme, self.container.manifest_url())
        response = self._request("HEAD", url, "reading tag %s" % self.ref.tag, (200, 404),
                                 headers={"Accept": OCI_MANIFEST_MEDIA_TYPE})
        if response.status_code == 404:
            return None
        digest = response.headers.get("Docker-Content-Digest")
        if digest:
            return digest
        body = self._request("GET", url, "reading tag %s" % self.ref.tag, (200,),
                             headers={"Accept": OCI_MANIFEST_MEDIA_TYPE}).content
        return "sha256:" + hashlib.sha256(body).hexdigest()

    def upload_blob(self, blob: bytes, descriptor: Dict[str, Any], workdir: str) -> None:
        path = os.path.join(workdir, descriptor["digest"].replace(":", "-"))
        with open(path, "wb") as handle:
            handle.write(blob)
        try:
            response = self.client.upload_blob(path, self.container, descriptor)
        except (requests.exceptions.RequestException, ValueError) as exc:
            raise BundlePublishError("uploading blob %s failed: %s" % (descriptor["digest"], exc),
                                     server=self.server) from None
        self._check(response, "uploading blob %s" % descriptor["digest"], (200, 201, 202))

    def put_manifest(self, body: bytes) -> Optional[str]:
        url = "%s://%s" % (self.scheme, self.container.manifest_url())
        response = self._request("PUT", url, "pushing the manifest", (200, 201), data=body,
                                 headers={"Content-Type": OCI_MANIFEST_MEDIA_TYPE})
        return response.headers.get("Docker-Content-Digest")


def publish_bundle(bundle: str, reference: str, access: Optional[RegistryAccess] = None, source: Optional[str] = None,
                   revision: Optional[str] = None, created: Optional[str] = None,
                   annotations: Optional[Mapping[str, Any]] = None, check_mode: bool = False) -> Dict[str, Any]:
    """Verify ``bundle``, build its artifact and push it to ``reference`` unless the tag already holds it."""
    ref = parse_reference(reference)
    artifact = build_artifact(bundle, source, revision, created, annotations)
    registry = _Registry(ref, access or RegistryAccess())
    previous = registry.current_digest()
    changed = previous != artifact.digest
    if changed and not check_mode:
        workdir = tempfile.mkdtemp(prefix="dsxos-publish-")
        try:
            registry.upload_blob(artifact.config, artifact.config_descriptor, workdir)
            registry.upload_blob(artifact.layer, artifact.layer_descriptor, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        pushed = registry.put_manifest(artifact.manifest)
        if pushed and pushed != artifact.digest:
            raise BundlePublishError("registry stored the manifest under digest %s, expected %s" % (pushed, artifact.digest),
                                     server=registry.server, value=ref.reference)
    return {
        "changed": changed,
        "reference": ref.reference,
        "url": ref.url,
        "tag": ref.tag,
        "digest": artifact.digest,
        "previous_digest": previous,
        "size": len(artifact.layer),
        "manifest_size": len(artifact.manifest),
        "layer_digest": artifact.layer_descriptor["digest"],
        "media_types": {"manifest": OCI_MANIFEST_MEDIA_TYPE, "config": FLUX_CONFIG_MEDIA_TYPE,
                        "layer": FLUX_CONTENT_MEDIA_TYPE},
        "annotations": dict(artifact.annotations),
        "files": len(artifact.files),
        "pushed": changed and not check_mode,
    }
