#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: bundle_publish
short_description: Push a rendered bundle to an OCI registry as a Flux artifact
version_added: "0.1.0"
description:
  - Verifies the bundle against its C(checksums.txt) first (see M(dsxos.cluster.bundle_verify)) and refuses a bundle that
    does not match, naming every missing, modified, extra or unsafe file.
  - Packs C(checksums.txt) and the files it lists into a reproducible tar+gzip (sorted entries, mtime 0, uid/gid 0, modes
    0644/0755) and pushes it with the C(oras) Python SDK as the artifact C(flux push artifact) makes - an OCI image manifest,
    config C(application/vnd.cncf.flux.config.v1+json), one layer C(application/vnd.cncf.flux.content.v1.tar+gzip). A Flux
    C(OCIRepository) can consume it (M(dsxos.cluster.bundle_render) writes one with the flux deployer's C(oci_url) option).
  - Idempotent - the same bundle with the same annotations gives the same manifest digest; when the tag already points at it
    nothing is uploaded and the task reports no change. In check mode the registry is only read and the result says what
    would be pushed.
  - Manifest annotations - C(io.dsxos.bundle.criteria) and C(io.dsxos.bundle.components) from the bundle's C(recipe.yaml),
    C(org.opencontainers.image.revision) (default C(sha256:) of C(checksums.txt)), C(org.opencontainers.image.source) and
    C(org.opencontainers.image.created) when given, then O(annotations). No wall-clock time is added, so republishing is
    stable.
requirements:
  - oras (Python package) on the host running the module
author:
  - dsxos.cluster contributors (@dsxos)
options:
  bundle:
    description: Directory of the bundle (on the host running the module).
    type: path
    required: true
  reference:
    description: Where to push, C(oci://<registry>[:<port>]/<repository>:<tag>) (the C(oci://) prefix is optional).
    type: str
    required: true
  username:
    description: Registry user name (basic auth, or exchanged for a token when the registry asks for one).
    type: str
  password:
    description: Registry password or token for O(username).
    type: str
  plain_http:
    description: Talk plain HTTP instead of HTTPS (a local registry such as C(127.0.0.1:5000)).
    type: bool
    default: false
  validate_certs:
    description: Verify the registry's TLS certificate.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the registry's first answer (C(GET /v2/)).
    type: float
    default: 30.0
  source:
    description: Value of the C(org.opencontainers.image.source) annotation, e.g. the Git URL of the recipes.
    type: str
  revision:
    description: Value of the C(org.opencontainers.image.revision) annotation; default C(sha256:<digest of checksums.txt>).
    type: str
  created:
    description:
      - Value of the C(org.opencontainers.image.created) annotation (RFC 3339). Default - the recipe's C(metadata.created), if any.
      - A value that changes on every run changes the digest on every run, so the task is then never idempotent.
    type: str
  annotations:
    description: Extra manifest annotations (name to value); they win over the ones above.
    type: dict
    default: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Publish the Flux bundle
  dsxos.cluster.bundle_publish:
    bundle: /srv/bundles/flux
    reference: oci://ghcr.io/example/dsxos-bundle:v1
    username: "{{ registry_user }}"
    password: "{{ registry_token }}"
    source: https://git.example.com/platform/recipes.git
  register: published

- name: Local test registry over plain HTTP
  dsxos.cluster.bundle_publish:
    bundle: /srv/bundles/flux
    reference: oci://127.0.0.1:5000/dsxos/bundle:latest
    plain_http: true
"""

RETURN = r"""
reference:
  description: The pushed reference, C(oci://registry/repository:tag).
  returned: success
  type: str
  sample: oci://127.0.0.1:5000/dsxos/bundle:v1
url:
  description: The repository URL, as C(OCIRepository.spec.url) wants it.
  returned: success
  type: str
  sample: oci://127.0.0.1:5000/dsxos/bundle
tag:
  description: The tag.
  returned: success
  type: str
digest:
  description: Digest of the artifact's manifest (what the tag points at after the push; pin C(OCIRepository.spec.ref.digest) to it).
  returned: success
  type: str
  sample: sha256:9f2c5e0b8a0f1c0d4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4
previous_digest:
  description: What the tag pointed at before, or null when it did not exist.
  returned: success
  type: str
size:
  description: Size in bytes of the tar+gzip layer.
  returned: success
  type: int
manifest_size:
  description: Size in bytes of the manifest.
  returned: success
  type: int
layer_digest:
  description: Digest of the tar+gzip layer.
  returned: success
  type: str
media_types:
  description: C(manifest), C(config) and C(layer) media types.
  returned: success
  type: dict
annotations:
  description: The manifest annotations.
  returned: success
  type: dict
files:
  description: Number of files in the tarball (C(checksums.txt) included).
  returned: success
  type: int
pushed:
  description: Whether anything was uploaded (false when the tag already held the artifact, and in check mode).
  returned: success
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import BUNDLE_PUBLISH


def main() -> None:
    module = AnsibleModule(argument_spec=BUNDLE_PUBLISH.spec, supports_check_mode=True, **BUNDLE_PUBLISH.module_options)
    finish(module, call_entry(BUNDLE_PUBLISH, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
