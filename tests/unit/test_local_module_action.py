# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""When a Kubernetes module may run in the Ansible worker instead of as a module process
(plugins/plugin_utils/local_module_action.py): only when nothing about the task would differ."""
from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.dsxos.cluster.plugins.plugin_utils.local_module_action import SWITCH, in_process_refusal

OK = {"connection": "local", "become": False, "environment": None, "async_val": 0, "interpreter": None,
      "executable": "/venv/bin/python", "has_kubernetes": True, "switch": ""}


def refusal(**changes):
    args = dict(OK)
    args.update(changes)
    return in_process_refusal(**args)


@pytest.mark.parametrize("connection", ["local", "ansible.builtin.local"])
@pytest.mark.parametrize("interpreter", [None, "auto", "auto_silent", "/venv/bin/python", "/venv/bin/../bin/python"])
def test_runs_in_process_when_nothing_would_differ(connection, interpreter):
    assert refusal(connection=connection, interpreter=interpreter) is None
    assert refusal(environment=[{}], switch="1") is None  # an empty environment entry sets nothing


@pytest.mark.parametrize("changes, words", [
    ({"connection": "ssh"}, "connection is ssh"),
    ({"connection": "ansible.builtin.paramiko_ssh"}, "connection is"),
    ({"connection": "community.docker.docker"}, "connection is"),
    ({"become": True}, "become"),
    ({"environment": [{"K8S_AUTH_KUBECONFIG": "/other"}]}, "environment"),
    ({"environment": [{}, {"HTTPS_PROXY": "http://proxy:3128"}]}, "environment"),
    ({"async_val": 60}, "async"),
    ({"interpreter": "/usr/bin/python3"}, "interpreter is /usr/bin/python3"),
    ({"interpreter": "/venv/bin/python3.11"}, "interpreter"),  # another name: maybe another interpreter
    ({"has_kubernetes": False}, "kubernetes client does not import"),
    ({"switch": "0"}, SWITCH), ({"switch": "false"}, SWITCH), ({"switch": " No "}, SWITCH), ({"switch": "off"}, SWITCH),
])
def test_anything_that_would_differ_runs_the_module(changes, words):
    reason = refusal(**changes)
    assert reason is not None and words in reason, reason


def test_the_switch_is_read_from_the_environment(monkeypatch):
    args = dict(OK)
    del args["switch"]
    monkeypatch.setenv(SWITCH, "false")
    assert in_process_refusal(**args) == "%s is off" % SWITCH
    monkeypatch.setenv(SWITCH, "true")
    assert in_process_refusal(**args) is None
    monkeypatch.delenv(SWITCH)
    assert in_process_refusal(**args) is None


def test_default_executable_is_this_interpreter():
    assert in_process_refusal("local", False, None, 0, sys.executable, has_kubernetes=True, switch="") is None
    other = os.path.join(os.path.dirname(sys.executable), "not-this-python")
    assert in_process_refusal("local", False, None, 0, other, has_kubernetes=True, switch="") is not None
