# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The Kubernetes runner: the group tests of a certification round as Jobs.

A runner has one method, ``run_tests(tests, collective) -> {test_id: RunOutput}``; the tests of one call share no
node, so all of them may run at the same time (``max_parallel`` caps it).

* :class:`KubernetesRunner` - one ``batch/v1`` Job per group test, pinned to the test's nodes:

  - a single-node test is a plain Job whose pod has ``nodeSelector: kubernetes.io/hostname``;
  - a multi-node test is an **Indexed** Job with ``completions = parallelism = len(nodes)``, a
    required node affinity with one ``matchFields metadata.name In [<node>]`` term per node (node names, not the
    hostname label, which may differ on some clouds; a field term takes exactly one value), a required pod anti-affinity on
    ``kubernetes.io/hostname`` between its own pods, and (by default) all GPUs of a node requested by
    each pod; together these put exactly one pod on each chosen node.  Per-pod pinning by index is
    impossible with one pod template, and the scheduler need not honour an index order, so the pod
    of completion index 0 is the *launcher* whose log is the test output: it reads the members from
    ``DSXOS_NCCL_NODES`` and starts the collective over the other pods (``hostNetwork`` by default);
  - the Job carries ``backoffLimit: 0`` (a failed NCCL run is a finding, not something to retry),
    ``activeDeadlineSeconds`` and ``ttlSecondsAfterFinished``;
  - completion is awaited with a watch on the run's Jobs (re-listed every ``poll_s`` and after a
    410 Gone); a Job still running at ``timeout_s`` is deleted with propagation ``Background`` and
    reported ``timed_out``, with the scheduling state of its pods as the explanation. Its
    ``activeDeadlineSeconds`` is the same ``timeout_s``, so the Job controller may end it first (condition
    Failed, reason ``DeadlineExceeded``): that is the same timeout and is reported the same way;
  - the output is the launcher pod's log (``pods/log``); failed worker pods add their exit code and
    log tail to ``stderr``.

:func:`k8s_nodes` lists the nodes a certification targets when the playbook names none.
"""
from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.dsxos.cluster.plugins.module_utils.certify.errors import CertifyError
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.nccl_rounds import CertifyNode, RunOutput
from ansible_collections.dsxos.cluster.plugins.module_utils.certify.topology_grouping import natural_key, node_info_from_k8s
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.api import KubeApi
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.client import ensure_namespace
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.errors import K8sApiError, K8sConflict, K8sError, K8sNotFound
from ansible_collections.dsxos.cluster.plugins.module_utils.kube.names import validate_label_selector

MANAGED_BY = "dsxos.cluster"
LABEL_RUN = "dsxos.io/certify-run"
LABEL_TEST = "dsxos.io/certify-test"
LABEL_JOB = "dsxos.io/certify-job"
ANNOTATION_NODES = "dsxos.io/certify-nodes"
ANNOTATION_COLLECTIVE = "dsxos.io/certify-collective"
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
HOSTNAME_LABEL = "kubernetes.io/hostname"
DEFAULT_NAMESPACE = "dsxos-certify"
DEFAULT_COMMAND: Tuple[str, ...] = (
    "/bin/sh", "-c",
    'exec "${DSXOS_NCCL_BINARY}" -b 1M -e 8G -f 2 -g "${DSXOS_NCCL_GPUS_PER_NODE}"')
_NAME_BAD = re.compile(r"[^a-z0-9-]+")
_KUBE_OPTION_KEYS = ("namespace", "image", "command", "args", "gpus_per_node", "gpu_resource", "host_network", "env",
                     "tolerations", "service_account", "image_pull_secrets", "labels", "poll_s", "keep_jobs",
                     "ttl_s", "run_id", "binary_template", "node_hostnames", "resources", "recertify_nodes")


def _collective_binary(collective: str, template: str) -> str:
    return template.replace("{collective}", collective)


@dataclass
class KubeRunnerOptions:  # pylint: disable=too-many-instance-attributes
    """How group tests become Jobs (see :func:`kube_options_from_params`)."""

    image: str
    namespace: str = DEFAULT_NAMESPACE
    command: Tuple[str, ...] = DEFAULT_COMMAND
    args: Tuple[str, ...] = ()
    gpus_per_node: int = 8
    gpu_resource: str = "nvidia.com/gpu"
    host_network: bool = True
    env: Dict[str, str] = field(default_factory=dict)
    tolerations: List[Dict[str, Any]] = field(default_factory=list)
    service_account: Optional[str] = None
    image_pull_secrets: Tuple[str, ...] = ()
    labels: Dict[str, str] = field(default_factory=dict)
    resources: Dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 1800.0
    max_parallel: int = 0
    poll_s: float = 10.0
    keep_jobs: bool = False
    ttl_s: int = 3600
    run_id: str = ""
    binary_template: str = "{collective}_perf"
    node_hostnames: Dict[str, str] = field(default_factory=dict)
    #: cordoned nodes tested anyway: their cordon is the quarantine of a certification failure (the certify role's
    #: recertification); every other cordoned node stays excluded
    recertify_nodes: Tuple[str, ...] = ()


def _str_list(value: Any, where: str) -> Tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise CertifyError("must be a list of strings", field=where, value=value)
    return tuple(value)


def positive_number(value: Any, where: str, kind: type, minimum: float) -> Any:
    if isinstance(value, bool):
        raise CertifyError("must be a number", field=where, value=value)
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise CertifyError("must be a number", field=where, value=value) from None
    if number < minimum:
        raise CertifyError("must be >= %s" % minimum, field=where, value=value)
    return number


def kube_options_from_params(params: Mapping[str, Any], timeout_s: float = 1800.0, max_parallel: int = 0) -> KubeRunnerOptions:
    """Validate the ``kubernetes`` option dict of the certify_nccl module (field names in errors: ``kubernetes.<key>``)."""
    if not isinstance(params, Mapping):
        raise CertifyError("kubernetes must be a mapping", field="kubernetes", value=params)
    unknown = sorted(set(params) - set(_KUBE_OPTION_KEYS))
    if unknown:
        raise CertifyError("unknown key (allowed: %s)" % ", ".join(_KUBE_OPTION_KEYS), field="kubernetes.%s" % unknown[0],
                           value=params[unknown[0]])
    image = params.get("image")
    if not isinstance(image, str) or not image.strip():
        raise CertifyError("the kubernetes runner needs a container image with nccl-tests", field="kubernetes.image", value=image)
    opts = KubeRunnerOptions(image=image.strip(), timeout_s=positive_number(timeout_s, "timeout_s", float, 1.0),
                             max_parallel=positive_number(max_parallel or 0, "max_parallel", int, 0))
    namespace = params.get("namespace") or DEFAULT_NAMESPACE
    if not isinstance(namespace, str) or not re.match(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", namespace):
        raise CertifyError("namespace must be an RFC 1123 label", field="kubernetes.namespace", value=namespace)
    opts.namespace = namespace
    if params.get("command") is not None:
        opts.command = _str_list(params["command"], "kubernetes.command")
        if not opts.command:
            raise CertifyError("command must not be empty", field="kubernetes.command", value=params["command"])
    if params.get("args") is not None:
        opts.args = _str_list(params["args"], "kubernetes.args")
    if params.get("gpus_per_node") is not None:
        opts.gpus_per_node = positive_number(params["gpus_per_node"], "kubernetes.gpus_per_node", int, 0)
    if params.get("gpu_resource"):
        opts.gpu_resource = str(params["gpu_resource"])
    if params.get("host_network") is not None:
        if not isinstance(params["host_network"], bool):
            raise CertifyError("must be true or false", field="kubernetes.host_network", value=params["host_network"])
        opts.host_network = params["host_network"]
    for key in ("env", "labels", "node_hostnames", "resources"):
        value = params.get(key)
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise CertifyError("must be a mapping", field="kubernetes.%s" % key, value=value)
        setattr(opts, key, dict(value) if key == "resources" else {str(k): str(v) for k, v in value.items()})
    if params.get("tolerations") is not None:
        tol = params["tolerations"]
        if not isinstance(tol, list) or not all(isinstance(t, Mapping) for t in tol):
            raise CertifyError("must be a list of toleration mappings", field="kubernetes.tolerations", value=tol)
        opts.tolerations = [dict(t) for t in tol]
    if params.get("service_account"):
        opts.service_account = str(params["service_account"])
    if params.get("image_pull_secrets") is not None:
        opts.image_pull_secrets = _str_list(params["image_pull_secrets"], "kubernetes.image_pull_secrets")
    if params.get("recertify_nodes") is not None:
        opts.recertify_nodes = _str_list(params["recertify_nodes"], "kubernetes.recertify_nodes")
    if params.get("poll_s") is not None:
        opts.poll_s = positive_number(params["poll_s"], "kubernetes.poll_s", float, 0.05)
    if params.get("ttl_s") is not None:
        opts.ttl_s = positive_number(params["ttl_s"], "kubernetes.ttl_s", int, 0)
    if params.get("keep_jobs") is not None:
        opts.keep_jobs = bool(params["keep_jobs"])
    if params.get("binary_template"):
        opts.binary_template = str(params["binary_template"])
    run_id = params.get("run_id") or ""
    if run_id and (not isinstance(run_id, str) or not re.match(r"^[a-z0-9]{1,12}$", run_id)):
        raise CertifyError("run_id must be 1-12 lower case letters or digits", field="kubernetes.run_id", value=run_id)
    opts.run_id = run_id or new_run_id()
    return opts


def new_run_id() -> str:
    """A short id for one certification run (labels every Job it creates)."""
    return "%06x%s" % (int(time.time()) & 0xFFFFFF, secrets.token_hex(2))


def job_name(run_id: str, test_id: str, collective: str) -> str:
    """``nccl-<run>-<collective>-<test>``, a valid Job name of at most 52 characters (pods add suffixes)."""
    base = _NAME_BAD.sub("-", ("nccl-%s-%s-%s" % (run_id, collective.replace("_", ""), test_id)).lower()).strip("-")
    if len(base) <= 52:
        return base
    digest = hashlib.sha1(base.encode("utf-8")).hexdigest()[:6]
    return base[:45].rstrip("-") + "-" + digest


def build_job(opts: KubeRunnerOptions, test_id: str, nodes: Sequence[str], collective: str) -> Dict[str, Any]:
    """The batch/v1 Job (plain dict) that runs one group test on ``nodes``."""
    name = job_name(opts.run_id, test_id, collective)
    labels = dict(opts.labels)
    labels.update({"app.kubernetes.io/managed-by": MANAGED_BY, "app.kubernetes.io/component": "nccl-test",
                   LABEL_RUN: opts.run_id, LABEL_TEST: _NAME_BAD.sub("-", test_id.lower())[:63].strip("-") or "test"})
    pod_labels = dict(labels)
    pod_labels[LABEL_JOB] = name
    annotations = {ANNOTATION_NODES: ",".join(nodes), ANNOTATION_COLLECTIVE: collective}
    env = [{"name": "DSXOS_NCCL_TEST_ID", "value": test_id},
           {"name": "DSXOS_NCCL_COLLECTIVE", "value": collective},
           {"name": "DSXOS_NCCL_BINARY", "value": _collective_binary(collective, opts.binary_template)},
           {"name": "DSXOS_NCCL_NODES", "value": ",".join(nodes)},
           {"name": "DSXOS_NCCL_NODE_COUNT", "value": str(len(nodes))},
           {"name": "DSXOS_NCCL_GPUS_PER_NODE", "value": str(opts.gpus_per_node)},
           {"name": "DSXOS_NCCL_JOB", "value": name},
           {"name": "DSXOS_NCCL_NAMESPACE", "value": opts.namespace},
           {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    env.extend({"name": k, "value": v} for k, v in sorted(opts.env.items()))
    resources = json.loads(json.dumps(opts.resources)) if opts.resources else {}
    if opts.gpus_per_node > 0:
        resources.setdefault("limits", {})[opts.gpu_resource] = str(opts.gpus_per_node)
        resources.setdefault("requests", {})[opts.gpu_resource] = str(opts.gpus_per_node)
    container: Dict[str, Any] = {"name": "nccl", "image": opts.image, "command": list(opts.command), "env": env}
    if opts.args:
        container["args"] = list(opts.args)
    if resources:
        container["resources"] = resources
    pod_spec: Dict[str, Any] = {"restartPolicy": "Never", "containers": [container], "terminationGracePeriodSeconds": 10}
    if opts.host_network:
        pod_spec["hostNetwork"] = True
        pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if opts.tolerations:
        pod_spec["tolerations"] = [dict(t) for t in opts.tolerations]
    if opts.service_account:
        pod_spec["serviceAccountName"] = opts.service_account
    if opts.image_pull_secrets:
        pod_spec["imagePullSecrets"] = [{"name": s} for s in opts.image_pull_secrets]
    spec: Dict[str, Any] = {"backoffLimit": 0, "activeDeadlineSeconds": max(1, int(opts.timeout_s)),
                            "ttlSecondsAfterFinished": opts.ttl_s}
    if len(nodes) == 1:
        pod_spec["nodeSelector"] = {HOSTNAME_LABEL: opts.node_hostnames.get(nodes[0], nodes[0])}
        spec.update(completions=1, parallelism=1)
    else:
        pod_spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                # one term per node (terms are ORed): the API server accepts exactly one value for a metadata.name field
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]} for node in nodes]}},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {LABEL_JOB: name}}, "topologyKey": HOSTNAME_LABEL}]}}
        spec.update(completions=len(nodes), parallelism=len(nodes), completionMode="Indexed")
    spec["template"] = {"metadata": {"labels": pod_labels, "annotations": dict(annotations)}, "spec": pod_spec}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": opts.namespace, "labels": labels, "annotations": annotations},
            "spec": spec}


def _job_finished(job: Mapping[str, Any]) -> Optional[str]:
    """``Complete``/``Failed`` when the Job has that condition set to True, else None."""
    for cond in ((job.get("status") or {}).get("conditions") or []):
        if cond.get("type") in ("Complete", "Failed") and str(cond.get("status")) == "True":
            return str(cond["type"])
    return None


def _deadline_exceeded(job: Mapping[str, Any]) -> bool:
    """Whether the Job controller failed the Job at its ``activeDeadlineSeconds`` (the runner's ``timeout_s``)."""
    return any(cond.get("type") == "Failed" and str(cond.get("status")) == "True" and cond.get("reason") == "DeadlineExceeded"
               for cond in ((job.get("status") or {}).get("conditions") or []))


def _exit_code(pod: Mapping[str, Any]) -> Optional[int]:
    for status in ((pod.get("status") or {}).get("containerStatuses") or []):
        term = (status.get("state") or {}).get("terminated")
        if term and term.get("exitCode") is not None:
            return int(term["exitCode"])
    return None


def _pending_reason(pod: Mapping[str, Any]) -> str:
    status = pod.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and str(cond.get("status")) == "False":
            return "not scheduled (%s): %s" % (cond.get("reason") or "?", cond.get("message") or "")
    return "phase %s" % (status.get("phase") or "unknown")


@dataclass
class _Active:
    test_id: str
    name: str
    nodes: Tuple[str, ...]
    started: float


class KubernetesRunner:
    """Runs group tests as Jobs through a :class:`kube.client.KubeClient` (see the module docstring)."""

    def __init__(self, client: KubeApi, options: KubeRunnerOptions, clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.opts = options
        self.clock = clock
        self.batch: Any = client.batch  # BatchV1Api, built on first use by KubeClient
        self.jobs_created: List[str] = []
        self.jobs_deleted: List[str] = []

    # ------------------------------------------------------------------ API helpers
    def _json(self, resp: Any) -> Dict[str, Any]:
        data = getattr(resp, "data", resp)
        if isinstance(data, (bytes, str)):
            return json.loads(data)
        return self.client.to_plain(data)

    def ensure_namespace(self) -> bool:
        """Create the namespace when it is missing; True when it was created (see :func:`kube.client.ensure_namespace`)."""
        return ensure_namespace(self.client, self.opts.namespace, {"app.kubernetes.io/managed-by": MANAGED_BY})

    def _create(self, job: Dict[str, Any]) -> None:
        try:
            self.client.call("create", "jobs", self.batch.create_namespaced_job, self.opts.namespace, job,
                             _preload_content=False)
        except K8sConflict:
            pass  # a retried create whose first answer was lost: the Job exists
        self.jobs_created.append(job["metadata"]["name"])

    def _delete(self, name: str) -> None:
        try:
            self.client.call("delete", "jobs", self.batch.delete_namespaced_job, name, self.opts.namespace,
                             propagation_policy="Background", _preload_content=False)
            self.jobs_deleted.append(name)
        except K8sNotFound:
            pass

    def _pods(self, name: str) -> List[Dict[str, Any]]:
        resp = self.client.call("list", "pods", self.client.core.list_namespaced_pod, self.opts.namespace,
                                label_selector="%s=%s" % (LABEL_JOB, name), _preload_content=False)
        pods = self._json(resp).get("items") or []
        return sorted(pods, key=lambda p: int(((p.get("metadata") or {}).get("annotations") or {}).get(INDEX_ANNOTATION, "0")
                                              if str(((p.get("metadata") or {}).get("annotations") or {})
                                                     .get(INDEX_ANNOTATION, "0")).isdigit() else 0))

    def _log(self, pod: Mapping[str, Any]) -> Tuple[str, Optional[str]]:
        meta = pod.get("metadata") or {}
        try:
            resp = self.client.call("get", "pods/log", self.client.core.read_namespaced_pod_log, meta.get("name"),
                                    self.opts.namespace, _preload_content=False)
            data = getattr(resp, "data", resp)
            return (data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data or "")), None
        except K8sError as err:
            return "", "no log from pod %s: %s" % (meta.get("name"), err)

    def _list_jobs(self) -> Tuple[List[Dict[str, Any]], str]:
        resp = self.client.call("list", "jobs", self.batch.list_namespaced_job, self.opts.namespace,
                                label_selector="%s=%s" % (LABEL_RUN, self.opts.run_id), _preload_content=False)
        data = self._json(resp)
        return data.get("items") or [], str((data.get("metadata") or {}).get("resourceVersion") or "")

    # ------------------------------------------------------------------ results
    def _collect(self, act: _Active, job: Mapping[str, Any], timed_out: bool) -> RunOutput:
        duration = self.clock() - act.started
        pods = self._pods(act.name)
        launcher = None
        for pod in pods:
            index = ((pod.get("metadata") or {}).get("annotations") or {}).get(INDEX_ANNOTATION)
            if index in (None, "0") and (launcher is None or _exit_code(pod) is not None):
                launcher = pod
        stderr: List[str] = []
        stdout = ""
        if launcher is not None:
            stdout, problem = self._log(launcher)
            if problem:
                stderr.append(problem)
        else:
            stderr.append("no pod of job %s was created" % act.name)
        for pod in pods:
            meta = pod.get("metadata") or {}
            code = _exit_code(pod)
            node = (pod.get("spec") or {}).get("nodeName") or "no node"
            index = (meta.get("annotations") or {}).get(INDEX_ANNOTATION, "0")
            where = "pod %s on %s (index %s)" % (meta.get("name"), node, index)
            if timed_out and code is None:
                stderr.append("%s: %s" % (where, _pending_reason(pod)))
            elif code not in (None, 0) and pod is not launcher:
                text, _problem = self._log(pod)
                tail = " | ".join(line for line in text.strip().splitlines()[-3:])
                stderr.append("%s exited with code %d%s" % (where, code, (": " + tail) if tail else ""))
        finished = _job_finished(job) if job else None
        if timed_out:
            rc = -1
            stderr.insert(0, "job %s/%s did not finish within %.0f s; deleted (propagation Background)" % (
                self.opts.namespace, act.name, self.opts.timeout_s))
        else:
            code = _exit_code(launcher) if launcher is not None else None
            rc = code if code is not None else (0 if finished == "Complete" else 1)
            if finished == "Failed" and rc == 0:
                rc = 1
            if finished == "Failed":
                conds = [c for c in ((job.get("status") or {}).get("conditions") or []) if c.get("type") == "Failed"]
                if conds:
                    why = "%s %s" % (conds[0].get("reason") or "", conds[0].get("message") or "")
                    stderr.insert(0, "job %s failed: %s" % (act.name, why.strip()))
        return RunOutput(rc=rc, stdout=stdout, stderr="\n".join(stderr), duration_s=round(duration, 3), timed_out=timed_out)

    # ------------------------------------------------------------------ main loop
    def _wait_some(self, active: Dict[str, _Active]) -> Dict[str, Tuple[Dict[str, Any], bool]]:
        """Block until at least one active Job finished or timed out; return {job name: (job, timed_out)}."""
        done: Dict[str, Tuple[Dict[str, Any], bool]] = {}
        while not done:
            now = self.clock()
            for name, act in active.items():
                if now - act.started >= self.opts.timeout_s:
                    done[name] = ({}, True)
            if done:
                return done
            items, version = self._list_jobs()
            for job in items:
                name = (job.get("metadata") or {}).get("name")
                if name in active and _job_finished(job):
                    done[name] = (job, _deadline_exceeded(job))
            if done:
                return done
            deadline = min(act.started + self.opts.timeout_s for act in active.values())
            slice_s = max(0.05, min(self.opts.poll_s, deadline - self.clock()))
            try:
                for event in self.client.watch("jobs", self.batch.list_namespaced_job, self.opts.namespace,
                                               label_selector="%s=%s" % (LABEL_RUN, self.opts.run_id),
                                               resource_version=version or None, timeout_s=slice_s):
                    obj = event.get("raw_object") or {}
                    name = (obj.get("metadata") or {}).get("name")
                    if name in active and _job_finished(obj):
                        done[name] = (obj, _deadline_exceeded(obj))
                        break
                    if self.clock() >= deadline:
                        break
            except K8sApiError as err:
                if err.status != 410:
                    raise
        return done

    def run_tests(self, tests: Sequence[Any], collective: str) -> Dict[str, RunOutput]:
        """Run every test of one round as a Job and return its output (see the module docstring)."""
        queue = list(tests)
        active: Dict[str, _Active] = {}
        outputs: Dict[str, RunOutput] = {}
        limit = self.opts.max_parallel if self.opts.max_parallel > 0 else max(1, len(queue))
        try:
            while queue or active:
                while queue and len(active) < limit:
                    test = queue.pop(0)
                    job = build_job(self.opts, test.id, list(test.nodes), collective)
                    name = job["metadata"]["name"]
                    try:
                        self._create(job)
                    except K8sError as err:
                        outputs[test.id] = RunOutput(rc=-1, stderr="cannot create job %s: %s" % (name, err))
                        continue
                    active[name] = _Active(test.id, name, tuple(test.nodes), self.clock())
                if not active:
                    continue
                for name, (job, timed_out) in self._wait_some(active).items():
                    act = active.pop(name)
                    if timed_out:
                        self._delete(name)
                    try:
                        outputs[act.test_id] = self._collect(act, job, timed_out)
                    except K8sError as err:
                        outputs[act.test_id] = RunOutput(rc=-1, stderr="cannot read the result of job %s: %s" % (name, err),
                                                         timed_out=timed_out, duration_s=self.clock() - act.started)
                    if not timed_out and not self.opts.keep_jobs:
                        self._delete(name)
        finally:
            for name in list(active):
                self._delete(name)  # an exception left Jobs behind: never leave GPU pods running
        return outputs


def k8s_nodes(client: KubeApi, selector: Optional[str]) -> List[CertifyNode]:
    """Kubernetes nodes matching ``selector`` as :class:`CertifyNode` (labels, cordon and readiness from the API)."""
    kwargs: Dict[str, Any] = {"_preload_content": False}
    if selector:
        kwargs["label_selector"] = validate_label_selector(selector, "node_selector")
    items: List[Dict[str, Any]] = []
    token = None
    while True:
        if token:
            kwargs["_continue"] = token
        resp = client.call("list", "nodes", client.core.list_node, limit=500, **kwargs)
        data = json.loads(resp.data)
        items.extend(data.get("items") or [])
        token = (data.get("metadata") or {}).get("continue")
        if not token:
            break
    out = []
    for item in items:
        info = node_info_from_k8s(item)
        out.append(CertifyNode(name=info.name, labels=dict(info.labels), cordoned=info.cordoned, ready=info.ready))
    return sorted(out, key=lambda n: natural_key(n.name))
