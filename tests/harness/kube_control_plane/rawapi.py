# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Raw JSON calls through the official client's ``ApiClient`` (its configuration, auth and connection pool), without
model (de)serialisation: fast for bulk work, and usable for API versions the client has no classes for
(``policy/v1beta1`` on Kubernetes 1.20).
"""
from __future__ import annotations

import json
from typing import Any, Optional, Sequence, Tuple

JSON = "application/json"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


def call(api_client: Any, method: str, path: str, body: Any = None, query: Optional[Sequence[Tuple[str, Any]]] = None,
         content_type: str = JSON, timeout: Optional[float] = 30.0) -> Any:
    """The decoded JSON answer of one call; raises ``kubernetes.client.rest.ApiException`` (status, body) on >= 400."""
    status, data = call_status(api_client, method, path, body, query, content_type, timeout)
    if status >= 400:
        from kubernetes.client.rest import ApiException  # pylint: disable=import-outside-toplevel

        raise ApiException(status=status, reason=str(data.get("reason") or ""), body=json.dumps(data))
    return data


def call_status(api_client: Any, method: str, path: str, body: Any = None, query: Optional[Sequence[Tuple[str, Any]]] = None,
                content_type: str = JSON, timeout: Optional[float] = 30.0) -> Tuple[int, Any]:
    """``(status, decoded JSON body)`` of one call, error answers included (a non-JSON body comes back as text)."""
    resp = stream(api_client, method, path, body, query, content_type, timeout)
    raw = resp.read()
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw or "")
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        data = {"message": text}
    return int(resp.status), data


def stream(api_client: Any, method: str, path: str, body: Any = None, query: Optional[Sequence[Tuple[str, Any]]] = None,
           content_type: str = JSON, timeout: Optional[float] = 30.0) -> Any:
    """The unread ``RESTResponse`` (``.status``, ``.response`` is the urllib3 response to stream from)."""
    headers = {"Accept": JSON, "Content-Type": content_type}
    method, url, headers, body, _post = api_client.param_serialize(method, path, query_params=list(query or []), header_params=headers,
                                                                   body=body, auth_settings=["BearerToken"])
    return api_client.call_api(method, url, header_params=headers, body=body, _request_timeout=timeout)
