# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations


class ModuleDocFragment:
    """Connection options of every Kubernetes-facing module (module_utils/kube/connection_options.py K8S_AUTH_SPEC)."""

    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path of a kubeconfig file.
      - Without O(kubeconfig), O(host) and O(in_cluster), the C(KUBECONFIG) environment variable or C(~/.kube/config) is used;
        when neither exists and the module runs in a pod, the in-cluster service account is used.
    type: path
  context:
    description: Context of the kubeconfig to use; default is its current context.
    type: str
  host:
    description:
      - URL of the API server, for example C(https://api.example.com:6443).
      - Alone (with O(api_key)) it replaces the kubeconfig; with O(kubeconfig) it overrides the kubeconfig's server.
    type: str
  api_key:
    description: Bearer token (for example a service account token). Overrides the kubeconfig's credentials. Never logged.
    type: str
  ca_cert:
    description: Path of the CA bundle that signs the API server certificate.
    type: path
  validate_certs:
    description: Whether to verify the API server's TLS certificate. Unset keeps the kubeconfig's setting (verify by default).
    type: bool
  in_cluster:
    description: Use the service account mounted into the pod this module runs in.
    type: bool
    default: false
  qps:
    description: Client-side rate limit in requests per second (token bucket, shared by all threads of the task). V(0) disables it.
    type: float
    default: 50.0
  burst:
    description: Requests that may be sent at once before O(qps) applies.
    type: int
    default: 100
  retries:
    description:
      - How often a request is retried after HTTP 429, 500, 502, 503, 504 or a connection error before the task fails
        (fewer when O(deadline_s) passes first).
      - The wait doubles from O(retry_backoff_s), is capped at 5 seconds and is at least the server's C(Retry-After).
    type: int
    default: 8
  retry_backoff_s:
    description: First retry delay in seconds.
    type: float
    default: 0.2
  request_timeout_s:
    description: Timeout of one HTTP request in seconds (clipped to what is left of O(deadline_s)).
    type: float
    default: 30.0
  deadline_s:
    description:
      - Overall deadline in seconds of one API call with all its retries and retry waits; V(0) disables it.
      - Each attempt's timeout is clipped to the time left, and no retry starts after the deadline, so a server that
        accepts connections and never answers fails the call after at most this long, with an error naming the server,
        the verb and resource, the attempts and the elapsed time.
      - Long waits of a module (a drain's C(timeout_s), a lock's C(wait_timeout_s), watches) are separate and not bounded by it.
    type: float
    default: 120.0
requirements:
  - kubernetes (the official Python client) on the host that runs the module
"""
