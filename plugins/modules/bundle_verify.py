#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

DOCUMENTATION = r"""
module: bundle_verify
short_description: Check a rendered bundle against its checksums.txt
version_added: "0.1.0"
description:
  - Reads the C(checksums.txt) of a bundle written by M(dsxos.cluster.bundle_render) (C(<sha256>  <path>) lines, the
    C(sha256sum) format) and checks the directory against it, like C(aicr verify) without the signature part.
  - Reports every problem at once - C(missing) (listed, absent), C(modified) (listed, different SHA-256), C(extra) (a file
    not listed; never read) and C(unsafe) (symbolic links, never followed, FIFOs, sockets, devices, listed directories).
    Empty directories are ignored.
  - A directory without C(checksums.txt) is refused before anything in it is read, and so is a malformed C(checksums.txt)
    (the error names the line).
  - Never changes anything.
author:
  - dsxos.cluster contributors (@dsxos)
options:
  bundle:
    description: Directory of the bundle (on the host running the module).
    type: path
    required: true
  fail_on_mismatch:
    description: Fail the task when the bundle does not match. With V(false) the result only reports it in RV(ok).
    type: bool
    default: true
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Refuse to deploy a bundle that was edited by hand
  dsxos.cluster.bundle_verify:
    bundle: /srv/bundles/gpu-a

- name: Report without failing
  dsxos.cluster.bundle_verify:
    bundle: /srv/bundles/gpu-a
    fail_on_mismatch: false
  register: verified

- name: Show what differs
  ansible.builtin.debug:
    msg: "{{ verified.counts }} modified={{ verified.modified }} missing={{ verified.missing }} extra={{ verified.extra }}"
  when: not verified.ok
"""

RETURN = r"""
ok:
  description: True when every listed file is present and unchanged and nothing else is in the bundle.
  returned: success
  type: bool
  sample: false
bundle:
  description: The absolute bundle directory.
  returned: success
  type: str
  sample: /srv/bundles/gpu-a
missing:
  description: Listed files that are absent, sorted.
  returned: success
  type: list
  elements: str
  sample: [gpu-operator/values.yaml]
modified:
  description: Listed files whose SHA-256 differs, sorted.
  returned: success
  type: list
  elements: str
extra:
  description: Files that are not listed in C(checksums.txt), sorted.
  returned: success
  type: list
  elements: str
unsafe:
  description: Symbolic links, special files and listed directories, each C(path) and C(reason).
  returned: success
  type: list
  elements: dict
  sample: [{path: link, reason: symbolic link escaping the bundle (not followed)}]
counts:
  description: C(listed), C(verified), C(missing), C(extra), C(modified), C(unsafe).
  returned: success
  type: dict
  sample: {listed: 21, verified: 20, missing: 0, extra: 1, modified: 1, unsafe: 0}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dsxos.cluster.plugins.module_utils.common.entry import call_entry, finish
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import BUNDLE_VERIFY


def main() -> None:
    module = AnsibleModule(argument_spec=BUNDLE_VERIFY.spec, supports_check_mode=True, **BUNDLE_VERIFY.module_options)
    finish(module, call_entry(BUNDLE_VERIFY, module.params, module.check_mode, module._diff))


if __name__ == "__main__":
    main()
