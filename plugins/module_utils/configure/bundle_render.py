# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Render a bundle: pick the deployer, check its options, add the files every bundle has.

Every bundle gets ``recipe.yaml`` (the :class:`RecipeResult` it was rendered from, less the local paths of
:data:`LOCAL_METADATA`, so a bundle is the same bytes wherever it is built) and
``checksums.txt`` (``<sha256>  <relpath>`` for every other file, sorted by path, the format
``sha256sum -c`` reads).  Output is byte-for-byte deterministic, so re-rendering and
re-writing an unchanged bundle reports no change.
"""
from __future__ import annotations

import dataclasses
import hashlib
import typing
from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.dsxos.cluster.plugins.module_utils.configure import deployer_argocd

from ansible_collections.dsxos.cluster.plugins.module_utils.configure import deployer_flux

from ansible_collections.dsxos.cluster.plugins.module_utils.configure import deployer_helm
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_writer import BundleFile, check_relpath
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import ComponentBundle, RecipeResult
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import dump_yaml

DEPLOYERS = {"helm": deployer_helm, "argocd": deployer_argocd, "flux": deployer_flux}
RECIPE_FILE = "recipe.yaml"
CHECKSUMS_FILE = "checksums.txt"
#: RecipeResult metadata that describes the machine that resolved it (local paths): never written into a bundle, so
#: the same inputs give the same bytes on any machine, from any working directory or install location
LOCAL_METADATA = ("recipeDirs",)
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def option_spec(deployer: str) -> Dict[str, Any]:
    """``{option: default}`` of one deployer (for module docs and argument specs)."""
    module = _deployer_module(deployer)
    return {f.name: f.default for f in dataclasses.fields(module.DeployerOptions)}


def _deployer_module(deployer: Any) -> Any:
    if not isinstance(deployer, str) or deployer not in DEPLOYERS:
        raise RenderError("unknown deployer; allowed: %s" % ", ".join(sorted(DEPLOYERS)), field="deployer",
                          value=deployer)
    return DEPLOYERS[deployer]


def _coerce(deployer: str, key: str, value: Any, kind: Any) -> Any:
    where = "options.%s" % key
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            return value.strip().lower() in _TRUE
        raise RenderError("option of deployer %s must be a boolean" % deployer, field=where, value=value)
    if kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value.strip())
        raise RenderError("option of deployer %s must be an integer" % deployer, field=where, value=value)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise RenderError("option of deployer %s must be a string" % deployer, field=where, value=value)
    return str(value)


def build_options(deployer: str, options: Optional[Mapping[str, Any]]) -> Any:
    """Check option keys and types of ``deployer`` and return its ``DeployerOptions``.

    ``None`` values mean "use the default" (what Ansible passes for unset suboptions)."""
    module = _deployer_module(deployer)
    options = dict(options or {})
    fields = {f.name: f for f in dataclasses.fields(module.DeployerOptions)}
    unknown = sorted(str(k) for k in options if k not in fields)
    if unknown:
        raise RenderError("unknown option(s) %s for deployer %s; allowed: %s" % (
            ", ".join(unknown), deployer, ", ".join(sorted(fields))), field="options", value=unknown)
    hints = typing.get_type_hints(module.DeployerOptions)
    kwargs = {key: _coerce(deployer, key, value, hints[key]) for key, value in options.items() if value is not None}
    opts = module.DeployerOptions(**kwargs)
    opts.validate()
    return opts


def _check_components(result: RecipeResult, components: List[ComponentBundle]) -> None:
    seen = set()
    for comp in components:
        if not isinstance(comp, ComponentBundle):
            raise RenderError("components must be ComponentBundle objects", field="components",
                              value=type(comp).__name__)
        if comp.name in seen:
            raise RenderError("component appears twice", field="components[].name", value=comp.name)
        seen.add(comp.name)
    if not isinstance(result, RecipeResult):
        raise RenderError("result must be a RecipeResult", field="result", value=type(result).__name__)


def checksums(files: Mapping[str, BundleFile]) -> str:
    """``sha256sum`` format, sorted by path, excluding ``checksums.txt`` itself."""
    lines = ["%s  %s\n" % (hashlib.sha256(files[path].content).hexdigest(), path)
             for path in sorted(files) if path != CHECKSUMS_FILE]
    return "".join(lines)


def bundle_recipe(result: RecipeResult) -> Dict[str, Any]:
    """The ``recipe.yaml`` document of a bundle: ``result`` without :data:`LOCAL_METADATA`."""
    data = result.to_dict()
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        for key in LOCAL_METADATA:
            metadata.pop(key, None)
    return data


def render_bundle(result: RecipeResult, components: List[ComponentBundle], deployer: str,
                  options: Optional[Mapping[str, Any]] = None) -> Dict[str, BundleFile]:
    """Render the complete bundle for ``deployer`` (helm | argocd | flux), sorted by path."""
    module = _deployer_module(deployer)
    opts = build_options(deployer, options)
    _check_components(result, components)
    files = module.render(result, list(components), opts)
    for path in files:
        check_relpath(path)
        if path in (RECIPE_FILE, CHECKSUMS_FILE):
            raise RenderError("deployer %s produced a reserved file" % deployer, field="path", value=path)
    out = dict(files)
    out[RECIPE_FILE] = BundleFile.text(dump_yaml(bundle_recipe(result)))
    out[CHECKSUMS_FILE] = BundleFile.text(checksums(out))
    return dict(sorted(out.items()))
