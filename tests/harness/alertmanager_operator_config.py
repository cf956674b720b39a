# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The Alertmanager configuration kube-prometheus-stack and prometheus-operator give Alertmanager, from a rendered bundle.

* The base is the chart's ``alertmanager.config`` (:data:`KPS_DEFAULT_CONFIG`, kube-prometheus-stack's values.yaml)
  with the bundle's ``alertmanager.config`` merged over it as Helm merges values (maps merge, lists and scalars replace).
* Every ``AlertmanagerConfig`` object of the bundle is added as prometheus-operator's config builder does
  (``pkg/alertmanager/amcfg.go``, ``AddAlertmanagerConfigs``): its inhibit rules appended, its route converted (names
  prefixed ``<namespace>/<object>/``, matchers as Alertmanager >= 0.22 matcher strings, ``continue: true`` on the
  top-level route) and put BEFORE the base's routes, its receivers appended (a webhook's ``httpConfig.authorization``
  credentials read from the given Secrets and written inline, as the operator does). The namespace matcher the
  operator adds depends on ``alertmanagerConfigMatcherStrategy``: ``None`` never, ``OnNamespace`` (default) always,
  ``OnNamespaceExceptForAlertmanagerNamespace`` unless the object lives in Alertmanager's namespace.

Fields this translation does not know are refused (ValueError naming them), never dropped.
"""
from __future__ import annotations

import copy
import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

#: kube-prometheus-stack's default ``alertmanager.config`` (charts/kube-prometheus-stack/values.yaml)
KPS_DEFAULT_CONFIG: Dict[str, Any] = {
    "global": {"resolve_timeout": "5m"},
    "inhibit_rules": [
        {"source_matchers": ["severity = critical"], "target_matchers": ["severity =~ warning|info"], "equal": ["namespace", "alertname"]},
        {"source_matchers": ["severity = warning"], "target_matchers": ["severity = info"], "equal": ["namespace", "alertname"]},
        {"source_matchers": ["alertname = InfoInhibitor"], "target_matchers": ["severity = info"], "equal": ["namespace"]},
        {"target_matchers": ["alertname = InfoInhibitor"]},
    ],
    "route": {"group_by": ["namespace"], "group_wait": "30s", "group_interval": "5m", "repeat_interval": "12h", "receiver": "null",
              "routes": [{"receiver": "null", "matchers": ['alertname = "Watchdog"']}]},
    "receivers": [{"name": "null"}],
    "templates": ["/etc/alertmanager/config/*.tmpl"],
}
ROUTE_FIELDS = frozenset({"receiver", "groupBy", "groupWait", "groupInterval", "repeatInterval", "matchers", "continue", "routes"})
RECEIVER_FIELDS = frozenset({"name", "webhookConfigs"})
WEBHOOK_FIELDS = frozenset({"url", "sendResolved", "maxAlerts", "httpConfig", "timeout"})
INHIBIT_FIELDS = frozenset({"sourceMatch", "targetMatch", "equal"})


def helm_merge(base: Any, override: Any) -> Any:
    """Helm's merge of values: maps merge recursively, anything else replaces (``null`` removes the key)."""
    if isinstance(base, Mapping) and isinstance(override, Mapping):
        out = dict(base)
        for key, value in override.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = helm_merge(base.get(key), value)
        return out
    return copy.deepcopy(override)


def base_config(stack_values: Mapping[str, Any]) -> Dict[str, Any]:
    """The chart's ``alertmanager.config`` with the bundle's kube-prometheus-stack values merged over it."""
    return helm_merge(copy.deepcopy(KPS_DEFAULT_CONFIG), ((stack_values.get("alertmanager") or {}).get("config")) or {})


def matcher(raw: Mapping[str, Any], where: str) -> str:
    """An AlertmanagerConfig matcher as Alertmanager's matcher string (``name=~"value"``)."""
    unknown = sorted(set(raw) - {"name", "value", "matchType", "regex"})
    if unknown:
        raise ValueError("%s: unknown matcher field(s) %s" % (where, ", ".join(unknown)))
    match_type = raw.get("matchType") or ("=~" if raw.get("regex") else "=")
    if match_type not in ("=", "!=", "=~", "!~"):
        raise ValueError("%s: unknown matchType %r" % (where, match_type))
    return "%s%s%s" % (raw["name"], match_type, json.dumps(str(raw.get("value", ""))))


def _check(raw: Mapping[str, Any], known: frozenset, where: str) -> None:
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError("%s: field(s) %s not translated" % (where, ", ".join(unknown)))


def _prefixed(name: str, namespace: str, obj: str) -> str:
    return "%s/%s/%s" % (namespace, obj, name)


def convert_route(raw: Mapping[str, Any], namespace: str, obj: str, where: str = "route") -> Dict[str, Any]:
    _check(raw, ROUTE_FIELDS, where)
    out: Dict[str, Any] = {"receiver": _prefixed(raw["receiver"], namespace, obj)}
    if raw.get("groupBy"):
        out["group_by"] = list(raw["groupBy"])
    for camel, snake in (("groupWait", "group_wait"), ("groupInterval", "group_interval"), ("repeatInterval", "repeat_interval")):
        if raw.get(camel):
            out[snake] = str(raw[camel])
    matchers = [matcher(m, "%s.matchers[%d]" % (where, i)) for i, m in enumerate(raw.get("matchers") or [])]
    if matchers:
        out["matchers"] = matchers
    if raw.get("continue"):
        out["continue"] = True
    children = [convert_route(child, namespace, obj, "%s.routes[%d]" % (where, i)) for i, child in enumerate(raw.get("routes") or [])]
    if children:
        out["routes"] = children
    return out


def convert_receiver(raw: Mapping[str, Any], namespace: str, obj: str, secrets: Mapping[Tuple[str, str], Mapping[str, str]],
                     where: str = "receiver") -> Dict[str, Any]:
    _check(raw, RECEIVER_FIELDS, where)
    out: Dict[str, Any] = {"name": _prefixed(raw["name"], namespace, obj)}
    webhooks = []
    for index, hook in enumerate(raw.get("webhookConfigs") or []):
        here = "%s.webhookConfigs[%d]" % (where, index)
        _check(hook, WEBHOOK_FIELDS, here)
        item: Dict[str, Any] = {}
        if hook.get("sendResolved") is not None:
            item["send_resolved"] = bool(hook["sendResolved"])
        item["url"] = hook["url"]
        http = hook.get("httpConfig") or {}
        _check(http, frozenset({"authorization"}), here + ".httpConfig")
        if http.get("authorization"):
            auth = http["authorization"]
            _check(auth, frozenset({"type", "credentials"}), here + ".httpConfig.authorization")
            ref = auth["credentials"]
            try:
                token = secrets[(namespace, ref["name"])][ref["key"]]
            except KeyError:
                raise ValueError("%s: Secret %s/%s key %s not found (the operator would refuse the object)"
                                 % (here, namespace, ref.get("name"), ref.get("key"))) from None
            item["http_config"] = {"authorization": {"type": auth.get("type") or "Bearer", "credentials": token}}
        if int(hook.get("maxAlerts") or 0) > 0:
            item["max_alerts"] = int(hook["maxAlerts"])
        if hook.get("timeout"):
            item["timeout"] = hook["timeout"]
        webhooks.append(item)
    if webhooks:
        out["webhook_configs"] = webhooks
    return out


def convert_inhibit_rule(raw: Mapping[str, Any], where: str) -> Dict[str, Any]:
    _check(raw, INHIBIT_FIELDS, where)
    out: Dict[str, Any] = {}
    source = [matcher(m, "%s.sourceMatch[%d]" % (where, i)) for i, m in enumerate(raw.get("sourceMatch") or [])]
    target = [matcher(m, "%s.targetMatch[%d]" % (where, i)) for i, m in enumerate(raw.get("targetMatch") or [])]
    if source:
        out["source_matchers"] = source
    if target:
        out["target_matchers"] = target
    if raw.get("equal"):
        out["equal"] = list(raw["equal"])
    return out


def _enforce_namespace(strategy: str, cr_namespace: str, am_namespace: str) -> bool:
    if strategy == "None":
        return False
    if strategy == "OnNamespaceExceptForAlertmanagerNamespace":
        return cr_namespace != am_namespace
    if strategy in ("", "OnNamespace"):
        return True
    raise ValueError("unknown alertmanagerConfigMatcherStrategy type %r" % strategy)


def operator_config(base: Mapping[str, Any], objects: Sequence[Mapping[str, Any]], secrets: Mapping[Tuple[str, str], Mapping[str, str]],
                    am_namespace: str, strategy: str = "") -> Dict[str, Any]:
    """``base`` with the AlertmanagerConfig ``objects`` added as prometheus-operator adds them (see the module doc)."""
    config = copy.deepcopy(dict(base))
    sub_routes: List[Dict[str, Any]] = []
    for obj in sorted(objects, key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"])):
        namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
        spec = obj.get("spec") or {}
        _check(spec, frozenset({"route", "receivers", "inhibitRules"}), "AlertmanagerConfig %s/%s spec" % (namespace, name))
        enforce = _enforce_namespace(strategy, namespace, am_namespace)
        ns_matcher = 'namespace="%s"' % namespace
        for index, rule in enumerate(spec.get("inhibitRules") or []):
            converted = convert_inhibit_rule(rule, "%s/%s inhibitRules[%d]" % (namespace, name, index))
            if enforce:
                for key in ("source_matchers", "target_matchers"):
                    if ns_matcher not in converted.setdefault(key, []):
                        converted[key].append(ns_matcher)
            config.setdefault("inhibit_rules", []).append(converted)
        if not spec.get("route"):
            continue
        route = convert_route(spec["route"], namespace, name, "%s/%s route" % (namespace, name))
        if enforce:
            route.setdefault("matchers", []).append(ns_matcher)
        route["continue"] = True
        sub_routes.append(route)
        for index, receiver in enumerate(spec.get("receivers") or []):
            config.setdefault("receivers", []).append(convert_receiver(receiver, namespace, name, secrets,
                                                                       "%s/%s receivers[%d]" % (namespace, name, index)))
    config["route"] = dict(config["route"])
    config["route"]["routes"] = sub_routes + list(config["route"].get("routes") or [])
    return config


def find_route(config: Mapping[str, Any], receiver: str) -> Optional[Dict[str, Any]]:
    """The first top-level route of ``config`` sending to ``receiver``."""
    for route in (config.get("route") or {}).get("routes") or []:
        if route.get("receiver") == receiver:
            return dict(route)
    return None
