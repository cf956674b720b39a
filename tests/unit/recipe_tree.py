# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Test helper: write small AICR-style recipe trees (registry, overlays, mixins,
components) into a temporary directory."""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

import yaml

API = "aicr.run/v1beta1"


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


class RecipeTree:
    """A recipe directory under construction; every method writes files immediately."""

    def __init__(self, root: Any, api_version: str = API) -> None:
        self.root = str(root)
        self.api_version = api_version
        os.makedirs(self.root, exist_ok=True)

    def path(self, relpath: str) -> str:
        return os.path.join(self.root, relpath)

    def file(self, relpath: str, text: str) -> str:
        path = self.path(relpath)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        return path

    def yaml(self, relpath: str, data: Any) -> str:
        return self.file(relpath, _dump(data))

    def registry(self, components: List[Dict[str, Any]]) -> str:
        return self.yaml("registry.yaml", {"apiVersion": self.api_version, "kind": "ComponentRegistry",
                                           "components": components})

    def overlay(self, name: str, criteria: Optional[Dict[str, Any]] = None, base: Optional[str] = None,
                mixins: Optional[List[str]] = None, constraints: Optional[List[Dict[str, Any]]] = None,
                component_refs: Optional[List[Dict[str, Any]]] = None,
                validation: Optional[Dict[str, Any]] = None, filename: Optional[str] = None) -> str:
        spec: Dict[str, Any] = {}
        if base is not None:
            spec["base"] = base
        if criteria is not None:
            spec["criteria"] = criteria
        if mixins is not None:
            spec["mixins"] = mixins
        if constraints is not None:
            spec["constraints"] = constraints
        if component_refs is not None:
            spec["componentRefs"] = component_refs
        if validation is not None:
            spec["validation"] = validation
        return self.yaml("overlays/%s" % (filename or name + ".yaml"),
                         {"kind": "RecipeMetadata", "apiVersion": self.api_version, "metadata": {"name": name},
                          "spec": spec})

    def base(self, **kwargs: Any) -> str:
        return self.overlay("base", **kwargs)

    def mixin(self, name: str, constraints: Optional[List[Dict[str, Any]]] = None,
              component_refs: Optional[List[Dict[str, Any]]] = None) -> str:
        spec: Dict[str, Any] = {}
        if constraints is not None:
            spec["constraints"] = constraints
        if component_refs is not None:
            spec["componentRefs"] = component_refs
        doc = {"kind": "RecipeMixin", "apiVersion": self.api_version, "metadata": {"name": name}, "spec": spec}
        return self.yaml("mixins/%s.yaml" % name, doc)

    def values(self, component: str, data: Any, filename: str = "values.yaml") -> str:
        return self.yaml("components/%s/%s" % (component, filename), data)

    def manifest(self, component: str, filename: str, text: str) -> str:
        return self.file("components/%s/manifests/%s" % (component, filename), text)


def helm_entry(name: str, repo: str = "https://charts.example.com", chart: Optional[str] = None,
               version: str = "1.0.0", namespace: Optional[str] = None) -> Dict[str, Any]:
    helm: Dict[str, Any] = {"defaultRepository": repo, "defaultChart": chart or name, "defaultVersion": version}
    if namespace is not None:
        helm["defaultNamespace"] = namespace
    return {"name": name, "displayName": name, "helm": helm}


def standard_tree(root: Any) -> RecipeTree:
    """A small tree shaped like AICR's: base, eks, eks-training, h100-eks-training, a mixin."""
    tree = RecipeTree(root)
    tree.registry([
        helm_entry("cert-manager", repo="https://charts.jetstack.io", chart="jetstack/cert-manager",
                   version="v1.20.2", namespace="cert-manager"),
        helm_entry("gpu-operator", repo="https://helm.ngc.nvidia.com/nvidia", chart="nvidia/gpu-operator",
                   version="v26.7.0", namespace="gpu-operator"),
        helm_entry("nfd", repo="https://kubernetes-sigs.github.io/node-feature-discovery/charts",
                   chart="node-feature-discovery", version="0.19.0", namespace="node-feature-discovery"),
        {"name": "tuning", "displayName": "tuning", "helm": {"defaultRepository": "", "defaultNamespace": "skyhook"}},
    ])
    tree.base(
        constraints=[{"name": "K8s.server.version", "value": ">= 1.25"}],
        component_refs=[
            {"name": "nfd", "type": "Helm", "version": "0.18.3", "valuesFile": "components/nfd/values.yaml"},
            {"name": "gpu-operator", "type": "Helm", "valuesFile": "components/gpu-operator/values.yaml",
             "dependencyRefs": ["nfd"], "overrides": {"driver": {"enabled": True, "version": "580"}}},
        ])
    tree.overlay("eks", criteria={"service": "eks"},
                 component_refs=[{"name": "gpu-operator", "valuesFile": "components/gpu-operator/values-eks.yaml",
                                  "overrides": {"driver": {"rdma": True}}}],
                 constraints=[{"name": "K8s.server.version", "value": ">= 1.30"}])
    tree.overlay("eks-training", base="eks", criteria={"service": "eks", "intent": "training"},
                 component_refs=[{"name": "cert-manager", "type": "Helm"},
                                 {"name": "gpu-operator", "dependencyRefs": ["nfd", "cert-manager"]}],
                 validation={"deployment": {"checks": ["operator-health"]}})
    tree.overlay("h100-eks-training", base="eks-training",
                 criteria={"service": "eks", "accelerator": "h100", "intent": "training"},
                 mixins=["os-ubuntu"],
                 component_refs=[{"name": "gpu-operator", "overrides": {"cdi": {"enabled": True}}},
                                 {"name": "tuning", "type": "Helm", "dependencyRefs": ["gpu-operator"],
                                  "manifestFiles": ["components/tuning/manifests/tuning.yaml"],
                                  "overrides": {"profile": "h100"}}],
                 validation={"performance": {"checks": ["nccl-all-reduce-bw"],
                                             "constraints": [{"name": "nccl-all-reduce-bw", "value": ">= 300"}]}})
    tree.overlay("gke", criteria={"service": "gke"})
    tree.mixin("os-ubuntu", constraints=[{"name": "OS.release.ID", "value": "ubuntu"}])
    tree.values("nfd", {"master": {"replicas": 1}, "worker": {"enabled": True}})
    tree.values("gpu-operator", {"driver": {"enabled": False, "repository": "nvcr.io/nvidia"},
                                 "toolkit": {"enabled": True}, "list": [1, 2]})
    tree.values("gpu-operator", {"driver": {"usePrecompiled": False}, "list": [3]}, filename="values-eks.yaml")
    tree.manifest("tuning", "tuning.yaml",
                  "# tuning for {{ .Release.Name }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                  "  name: tuning-{{ .Values.tuning.profile }}\n  namespace: {{ .Release.Namespace }}\n")
    return tree
