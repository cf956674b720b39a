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

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.certify import nccl_runner
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.errors import CertifyError


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
        for test in tests:
            hosts = [self.addresses.get(n, n) for n in test.nodes]
            specs[test.id] = factory(hosts=hosts, collective=collective, options=self.launch)
        parallel = self.max_parallel if self.max_parallel and self.max_parallel > 0 else max(1, len(specs))
        return run_groups(specs, max_parallel=parallel)


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
