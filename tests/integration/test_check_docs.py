# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""tests/check_docs.py must pass documented plugins and flag undocumented ones (on a throwaway collection)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

CHECK_DOCS = Path(__file__).resolve().parents[1] / "check_docs.py"

GOOD_MODULE = '''#!/usr/bin/python
from __future__ import annotations

DOCUMENTATION = r"""
module: good
short_description: A documented module
description: [Does nothing.]
author: [Someone (@someone)]
options: {}
"""
EXAMPLES = r"""
- name: Run it
  demo.docs.good:
"""
RETURN = r"""
"""
from ansible.module_utils.basic import AnsibleModule

if __name__ == "__main__":
    AnsibleModule(argument_spec={}).exit_json(changed=False)
'''

UNDOCUMENTED_MODULE = '''#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule

if __name__ == "__main__":
    AnsibleModule(argument_spec={}).exit_json(changed=False)
'''

FILTERS = '''
def shout(value):
    return str(value).upper()


def whisper(value):
    return str(value).lower()


class FilterModule:
    def filters(self):
        return {"shout": shout, "whisper": whisper}
'''

SHOUT_DOC = '''DOCUMENTATION:
  name: shout
  short_description: Upper-case a string
  description: [Upper-cases its input.]
  author: [Someone (@someone)]
  positional: _input
  options:
    _input:
      description: Text.
      type: str
      required: true
EXAMPLES: |
  loud: "{{ 'a' | demo.docs.shout }}"
RETURN:
  _value:
    description: The upper-cased text.
    type: str
'''


def _load_check_docs():
    spec = importlib.util.spec_from_file_location("check_docs_under_test", CHECK_DOCS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def _collection(root: Path, with_bad: bool) -> Path:
    source = root / "ansible_collections" / "demo" / "docs"
    (source / "plugins" / "modules").mkdir(parents=True)
    (source / "plugins" / "filter").mkdir(parents=True)
    (source / "galaxy.yml").write_text("namespace: demo\nname: docs\nversion: 1.0.0\nreadme: README.md\nauthors: [x]\n", encoding="utf-8")
    (source / "plugins" / "modules" / "good.py").write_text(GOOD_MODULE, encoding="utf-8")
    (source / "plugins" / "filter" / "text.py").write_text(FILTERS if with_bad else FILTERS.replace(', "whisper": whisper', ""), encoding="utf-8")
    (source / "plugins" / "filter" / "shout.yml").write_text(SHOUT_DOC, encoding="utf-8")
    if with_bad:
        (source / "plugins" / "modules" / "bare.py").write_text(UNDOCUMENTED_MODULE, encoding="utf-8")
    return source


def test_documented_plugins_pass(tmp_path: Path) -> None:
    check_docs = _load_check_docs()
    source = _collection(tmp_path, with_bad=False)
    report = check_docs.check_collection(tmp_path, "demo.docs", source)
    assert report.problems == []
    assert report.checked == {"module": ["good"], "filter": ["shout"]}


def test_undocumented_module_and_filter_fail(tmp_path: Path, capsys) -> None:
    check_docs = _load_check_docs()
    source = _collection(tmp_path, with_bad=True)
    status = check_docs.main(["--collections-path", str(tmp_path), "--collection", "demo.docs", "--source", str(source)])
    captured = capsys.readouterr()
    assert status == 1
    assert "module demo.docs.bare" in captured.err and "Missing documentation" in captured.err
    assert "filter demo.docs.whisper" in captured.err
    assert "demo.docs.good" not in captured.err and "demo.docs.shout" not in captured.err
    assert "check_docs: failed: 2 modules, 2 filters; 2 problem(s)" in captured.out


def test_missing_install_is_reported(tmp_path: Path) -> None:
    check_docs = _load_check_docs()
    report = check_docs.check_collection(tmp_path, "demo.absent", tmp_path)
    assert len(report.problems) == 1 and "collection not installed" in report.problems[0]
