# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The hosts runner: the group tests of a certification round over inventory hosts, one ``mpirun`` each.

A runner has one method, ``run_tests(tests, collective) -> {test_id: RunOutput}``; the tests of one call share no
node, so all of them may run at the same time (``max_parallel`` caps it). :class:`HostsRunner` builds and runs each
launch with :mod:`nccl_runner` (``MpiLaunch`` / ``run_groups``); the Kubernetes equivalent is
:mod:`runner_kubernetes`.
"""
from __future__ import annotations

import dataclasses
import ipaddress
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.certify import nccl_runner
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.errors import CertifyError

#: an inventory host name the hosts runner accepts: letters, digits, '.', '-' and '_' (no shell or mpirun syntax)
_INVENTORY_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,252}$")
REFUSED_PREFIX = "refused:"


def _shown(value: Any) -> str:
    text = str(value)
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _plain_name(text: Any) -> bool:
    if not isinstance(text, str):
        return False
    if _INVENTORY_NAME_RE.fullmatch(text):
        return True
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def host_problem(name: Any, address: Any = None, mpirun: bool = True) -> Optional[str]:
    """Why this inventory host cannot be certified safely, or None.

    The name, and the address the host is reached at (``address``, else the name), must be inventory-style host
    names (letters, digits, '.', '-', '_'; not starting with '-') or IP addresses; with ``mpirun`` (multi-node
    categories) the address must also pass :func:`nccl_runner.validate_host`, the rule of the ``mpirun`` host list.
    The reason is the host's own: the other hosts are not affected.
    """
    if not _plain_name(name):
        return ("%s invalid host name %s: only letters, digits, '.', '-' and '_' are allowed; the host was never "
                "contacted" % (REFUSED_PREFIX, _shown(name)))
    target = address if address not in (None, "") else name
    if not _plain_name(target):
        return ("%s invalid address %s: only letters, digits, '.', '-', '_' or an IP address are allowed; the host was "
                "never contacted" % (REFUSED_PREFIX, _shown(target)))
    if mpirun:
        try:
            nccl_runner.validate_host(target, "address")
        except CertifyError as err:
            return "%s invalid address %s for the mpirun host list (%s); the host was never contacted" % (
                REFUSED_PREFIX, _shown(target), err.message)
    return None


def refuse_invalid_hosts(nodes: Sequence[Any], mpirun: bool = True) -> List[Any]:
    """The nodes (``CertifyNode``) with each unusable one excluded, its reason from :func:`host_problem`."""
    out = []
    for node in nodes:
        problem = None if node.exclude_reason else host_problem(node.name, node.address, mpirun)
        out.append(dataclasses.replace(node, exclude_reason=problem) if problem else node)
    return out


class HostsRunner:
    """Group tests over inventory hosts with ``mpirun`` (see :mod:`nccl_runner`).

    ``addresses`` maps node name -> address to connect to (defaults to the name); ``launch`` holds the
    :class:`nccl_runner.MpiLaunch` fields shared by every test (binary directory, mpirun path, ssh options,
    extra mpirun/test arguments, environment, ``timeout_s``...).  ``run_groups`` is injectable for tests.
    """

    def __init__(self, addresses: Mapping[str, Optional[str]], launch: Optional[Mapping[str, Any]] = None,
                 max_parallel: int = 0, run_groups: Optional[Callable[..., Dict[str, Any]]] = None,
                 spec_factory: Optional[Callable[..., Any]] = None) -> None:
        self.addresses = {name: (addr or name) for name, addr in addresses.items()}
        self.launch = dict(launch or {})
        self.max_parallel = max_parallel
        self._run_groups = run_groups
        self._spec_factory = spec_factory

    def _backend(self) -> Tuple[Callable[..., Dict[str, Any]], Callable[..., Any]]:
        return (self._run_groups or nccl_runner.run_groups), (self._spec_factory or nccl_spec_factory(nccl_runner))

    def run_tests(self, tests: Sequence[Any], collective: str) -> Dict[str, Any]:
        run_groups, factory = self._backend()
        specs = {}
        refused: Dict[str, Any] = {}
        for test in tests:
            hosts = [self.addresses.get(n, n) for n in test.nodes]
            problems = [p for p in (host_problem(n, self.addresses.get(n)) for n in test.nodes) if p]
            if problems:  # only this test fails; the others of the round still run
                refused[test.id] = nccl_runner.RunOutput(rc=-1, stdout="", stderr="; ".join(problems), duration_s=0.0)
                continue
            specs[test.id] = factory(hosts=hosts, collective=collective, options=self.launch)
        parallel = self.max_parallel if self.max_parallel and self.max_parallel > 0 else max(1, len(specs))
        outputs = dict(run_groups(specs, max_parallel=parallel)) if specs else {}
        outputs.update(refused)
        return outputs


def nccl_spec_factory(module: Any) -> Callable[..., Any]:
    """A factory building ``module.MpiLaunch`` from hosts, the collective and the shared launch options.

    ``options`` holds ``MpiLaunch`` fields (``binary_dir``, ``slots_per_host``, ``env``, ``launcher_env``,
    ``mpirun``, ``mpirun_args``, ``allow_run_as_root``, ``oversubscribe``, ``tag_output``, ``timeout_s``);
    ``args`` may be a mapping of ``NcclTestArgs`` fields.  Unknown keys raise :class:`CertifyError`.
    """
    launch_cls = getattr(module, "MpiLaunch")
    args_cls = getattr(module, "NcclTestArgs", None)
    fields = set(getattr(launch_cls, "__dataclass_fields__", {})) - {"hosts", "collective"}
    arg_fields = set(getattr(args_cls, "__dataclass_fields__", {}))

    def build(hosts: List[str], collective: str, options: Mapping[str, Any]) -> Any:
        kwargs: Dict[str, Any] = {}
        for key, value in options.items():
            if value is None:
                continue
            if fields and key not in fields:
                raise CertifyError("unknown mpirun option (allowed: %s)" % ", ".join(sorted(fields)),
                                   field="mpirun.%s" % key, value=value)
            if key == "args" and isinstance(value, Mapping) and args_cls is not None:
                unknown = sorted(set(value) - arg_fields)
                if unknown:
                    raise CertifyError("unknown nccl-tests argument (allowed: %s)" % ", ".join(sorted(arg_fields)),
                                       field="mpirun.args.%s" % unknown[0], value=value[unknown[0]])
                value = args_cls(**{k: v for k, v in value.items() if v is not None})
            kwargs[key] = value
        if "binary_dir" in fields and not kwargs.get("binary_dir"):
            raise CertifyError("the hosts runner needs the directory of the nccl-tests binaries",
                               field="mpirun.binary_dir", value=kwargs.get("binary_dir"))
        return launch_cls(hosts=list(hosts), collective=collective, **kwargs)

    return build


def validate_hosts_launch(launch: Mapping[str, Any], collectives: Sequence[str]) -> None:
    """Build and render one launch per collective so a bad ``mpirun`` option fails before any test runs."""
    factory = nccl_spec_factory(nccl_runner)
    for collective in collectives:
        nccl_runner.build_mpirun_command(factory(hosts=["127.0.0.1", "127.0.0.2"], collective=collective, options=launch))
