# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Self-tests of the integration fixtures: a real ansible-playbook run, structured results, the built artifact."""
from __future__ import annotations

import json
from pathlib import Path

from playbook_runner import TEST_COLLECTIONS

TRIVIAL_PLAY = """
- name: Self-test play
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Remember a fact
      ansible.builtin.set_fact:
        greeting: "hello {{ who }}"

    - name: Show it
      ansible.builtin.debug:
        msg: "{{ greeting }}"

    - name: Never runs
      ansible.builtin.debug:
        msg: unreachable
      when: false

    - name: Write a file
      ansible.builtin.copy:
        content: "{{ greeting }}\\n"
        dest: "{{ out_file }}"
        mode: "0644"
"""


def test_trivial_playbook_gives_structured_results(ansible_run, tmp_path: Path) -> None:
    out_file = tmp_path / "greeting.txt"
    result = ansible_run(TRIVIAL_PLAY, extra_vars={"who": "world", "out_file": str(out_file)})

    assert result.rc == 0
    assert [t["task"] for t in result.tasks] == ["Remember a fact", "Show it", "Never runs", "Write a file"]
    assert result.task("Remember a fact")["result"]["ansible_facts"] == {"greeting": "hello world"}
    shown = result.task("Show it", host="localhost")
    assert shown["status"] == "ok" and shown["msg"] == "hello world" and shown["action"] == "ansible.builtin.debug"
    assert result.task("Never runs")["skipped"] is True
    written = result.task("Write a file")
    assert written["changed"] is True and written["failed"] is False
    assert out_file.read_text(encoding="utf-8") == "hello world\n"
    assert result.stats["localhost"]["changed"] == 1 and result.stats["localhost"]["failures"] == 0
    assert "PLAY RECAP" in result.stdout


def test_check_mode_and_diff_reach_the_modules(ansible_run, tmp_path: Path) -> None:
    out_file = tmp_path / "greeting.txt"
    result = ansible_run(TRIVIAL_PLAY, extra_vars={"who": "check", "out_file": str(out_file)}, check=True, diff=True)

    written = result.task("Write a file")
    assert written["changed"] is True
    assert "diff" in written["result"]
    assert not out_file.exists(), "check mode must not write"


def test_failed_task_is_recorded_and_expect_rc_is_enforced(ansible_run) -> None:
    play = """
- name: Failing play
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Fail on purpose
      ansible.builtin.fail:
        msg: boom
"""
    result = ansible_run(play, expect_rc=2)
    failed = result.task("Fail on purpose")
    assert failed["failed"] is True and failed["status"] == "failed" and failed["msg"] == "boom"
    try:
        ansible_run(play)  # default expect_rc=0
    except AssertionError as err:
        assert "ansible-playbook exit 2, expected 0" in str(err)
    else:
        raise AssertionError("ansible_run did not enforce expect_rc")


def test_playbooks_see_the_installed_build_not_the_source_tree(ansible_run, installed_collection: Path) -> None:
    installed = installed_collection / "ansible_collections" / "dsxos" / "cluster"
    manifest = json.loads((installed / "MANIFEST.json").read_text(encoding="utf-8"))
    assert manifest["collection_info"]["namespace"] == "dsxos"
    assert manifest["collection_info"]["name"] == "cluster"
    assert not installed.is_symlink()

    play = """
- name: Where does dsxos.cluster come from
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Read the collections path
      ansible.builtin.debug:
        msg: "{{ lookup('ansible.builtin.config', 'COLLECTIONS_PATHS') }}"
"""
    result = ansible_run(play)
    # the installed build, then only the test-only stub collection (never the source tree)
    assert result.task("Read the collections path")["msg"] == [str(installed_collection), str(TEST_COLLECTIONS)]
    assert not (TEST_COLLECTIONS / "ansible_collections" / "dsxos" / "cluster").exists()


def test_inventory_as_mapping_and_playbook_as_path(ansible_run, tmp_path: Path) -> None:
    book = tmp_path / "site.yml"
    book.write_text(
        "- name: Two hosts\n  hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - name: Say my name\n      ansible.builtin.debug:\n        msg: \"{{ inventory_hostname }}\"\n",
        encoding="utf-8",
    )
    inventory = {"all": {"hosts": {name: {"ansible_connection": "local"} for name in ("alpha", "beta")}}}
    result = ansible_run(str(book), inventory=inventory)
    assert sorted(r["msg"] for r in result.results("Say my name")) == ["alpha", "beta"]
    assert result.task("Say my name", host="beta")["msg"] == "beta"


def test_loop_items_are_recorded_one_by_one(ansible_run) -> None:
    play = """
- name: Loop
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Visit each
      ansible.builtin.debug:
        msg: "at {{ place }}"
      loop: [alpha, beta, gamma]
      loop_control:
        loop_var: place
      when: place != 'beta'
"""
    result = ansible_run(play)
    records = result.results("Visit each")
    assert [r["item"] for r in records] == ["alpha", "beta", "gamma"]
    assert [r["status"] for r in records] == ["ok", "skipped", "ok"]
    assert records[0]["msg"] == "at alpha" and records[0]["loop_var"] == "place"
