# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Helm deployer: a self-contained bundle of per-component values and two bash scripts.

Layout (AICR's ``helm`` bundle layout)::

    README.md                 components table, order, how to deploy
    deploy.sh / undeploy.sh   bash, mode 0755, retrying, --dry-run / --only / --skip
    <component>/values.yaml   Helm values (not for Kustomize components)
    <component>/README.md     install / upgrade / uninstall commands for that component
    <component>/namespace.yaml  Namespace object, only for components that are not Helm charts but carry manifests
                              and have a namespace
    <component>/manifests/*   rendered manifests, applied after the chart with ``kubectl apply -n <ns>``, or
                              without ``-n`` when the component has no namespace or a manifest declares another

Every value that comes from a recipe is quoted with :func:`shlex.quote` in the scripts.
"""
from __future__ import annotations

import hashlib
import re
import shlex
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Protocol, Set, Tuple, TypeVar

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_writer import BundleFile
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.errors import RenderError
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_model import COMPONENT_TYPES, ComponentBundle, RecipeResult
from ansible_collections.dsxos.cluster.plugins.module_utils.common.safe_yaml import dump_yaml, load_yaml_text

NAME = "helm"
DEFAULT_NAMESPACE = "default"
_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")
_FILE_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass
class DeployerOptions:
    """Options of the helm deployer (``bundle_render`` checks keys and types)."""

    timeout: str = "10m"  # helm --timeout (Go duration)
    wait: bool = True  # helm --wait
    retries: int = 5  # attempts per command (DSXOS_RETRY_ATTEMPTS overrides at run time)
    retry_delay: int = 2  # first backoff delay in seconds, doubled per attempt (DSXOS_RETRY_DELAY)

    def validate(self) -> None:
        if not _DURATION.match(str(self.timeout)):
            raise RenderError("timeout must be a Go duration such as 10m or 1h30m", field="options.timeout",
                              value=self.timeout)
        if self.retries < 1:
            raise RenderError("retries must be at least 1", field="options.retries", value=self.retries)
        if self.retry_delay < 0:
            raise RenderError("retry_delay must not be negative", field="options.retry_delay", value=self.retry_delay)


def check_component_dir_name(component: ComponentBundle) -> str:
    """A component name must be usable as one directory name; returns it."""
    name = component.name
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name \
            or any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        raise RenderError("component name cannot be used as a bundle directory name", field="components[].name",
                          value=name)
    return name


def check_manifest_name(component: ComponentBundle, file_name: str) -> str:
    """Manifest keys are plain file names (``tuning.yaml``), never paths."""
    if not _FILE_NAME.match(file_name) or file_name in (".", ".."):
        raise RenderError("manifest file name must be a plain file name ([A-Za-z0-9._-])",
                          field="components[%s].manifests" % component.name, value=file_name)
    return file_name


class _Validated(Protocol):
    def validate(self) -> None: ...


#: the options type of one deployer (each deployer module has its own ``DeployerOptions`` with ``validate()``)
OptionsT = TypeVar("OptionsT", bound=_Validated)


def begin_render(options: Optional[OptionsT], default: Callable[[], OptionsT], components: List[ComponentBundle],
                 check_name: Callable[[ComponentBundle], str]) -> Tuple[OptionsT, List[ComponentBundle]]:
    """The opening every deployer's ``render`` shares: the options (``default()`` when None) validated, and the
    components in deployment order (``order``, then name), each with a name ``check_name`` accepts and a known type."""
    opts = options if options is not None else default()
    opts.validate()
    ordered = sorted(components, key=lambda c: (c.order, c.name))
    for c in ordered:
        name = check_name(c)
        if c.type not in COMPONENT_TYPES:
            raise RenderError("unknown component type", field="components[%s].type" % name, value=c.type)
    return opts, ordered


def namespace_of(component: ComponentBundle) -> str:
    """The namespace of a Helm release or Kustomize component (``default`` when it has none)."""
    return component.namespace or DEFAULT_NAMESPACE


#: ``(source, sha256 of the text) -> namespaces`` of manifests already parsed in this process (a bundle asks for
#: each component several times, a batch for the same manifests in many bundles); bounded, cleared when full.
_DECLARED: Dict[Tuple[str, bytes], frozenset] = {}


def declared_namespaces(component: ComponentBundle) -> Set[str]:
    """The ``metadata.namespace`` values the component's rendered manifests declare themselves."""
    found: Set[str] = set()
    for file_name in sorted(component.manifests):
        source = "%s/manifests/%s" % (component.name, file_name)
        key = (source, hashlib.sha256(component.manifests[file_name].encode("utf-8")).digest())
        if key not in _DECLARED:
            names = set()
            for doc in load_yaml_text(component.manifests[file_name], source=source, multi=True, error=RenderError):
                meta = doc.get("metadata") if isinstance(doc, dict) else None
                if isinstance(meta, dict) and isinstance(meta.get("namespace"), str) and meta["namespace"]:
                    names.add(meta["namespace"])
            if len(_DECLARED) >= 512:
                _DECLARED.clear()
            _DECLARED[key] = frozenset(names)
        found.update(_DECLARED[key])
    return found


def shown_namespace(component: ComponentBundle) -> str:
    """The namespace a README shows: a manifest-only component without one shows where its objects go."""
    if component.namespace or is_chart(component) or component.type == "Kustomize":
        return namespace_of(component)
    return "(as the manifests declare)"


def manifest_namespace(component: ComponentBundle) -> str:
    """The namespace the component's manifests are applied to, or "" for none: a component without a namespace
    (a manifest-only one whose recipe and registry name none) applies its manifests as they are, and so does one
    whose manifests declare another namespace (``kubectl apply -n X`` refuses an object of namespace Y)."""
    ns = component.namespace or (DEFAULT_NAMESPACE if is_chart(component) else "")
    if not ns or declared_namespaces(component) - {ns}:
        return ""
    return ns


def oci_chart_ref(component: ComponentBundle) -> str:
    """``oci://registry/path/chart`` (the repository already names the chart when ``chart`` is empty)."""
    base = component.repository.rstrip("/")
    return "%s/%s" % (base, component.chart) if component.chart else base


def repo_alias(url: str) -> str:
    """A stable ``helm repo add`` alias derived from the repository URL."""
    stem = re.sub(r"^[a-z]+://", "", url.strip().lower())
    stem = re.sub(r"[^a-z0-9]+", "-", stem).strip("-") or "repo"
    if len(stem) > 40:
        stem = stem[:31].rstrip("-") + "-" + hashlib.sha256(url.encode("utf-8")).hexdigest()[:8]
    return stem


def kustomize_target(component: ComponentBundle) -> str:
    """``<source>//<path>?ref=<tag>`` as understood by ``kubectl apply -k``."""
    target = component.repository.rstrip("/")
    if component.kustomize_path:
        target += "//" + component.kustomize_path.strip("/")
    if component.kustomize_tag:
        target += "?ref=" + component.kustomize_tag
    return target


class _ShellExpr(str):
    """A fixed shell expression written unquoted (e.g. ``"$HELM_TIMEOUT"``); never recipe data."""


TIMEOUT_EXPR = _ShellExpr('"$HELM_TIMEOUT"')


def _q(args: List[str]) -> str:
    return " ".join(a if isinstance(a, _ShellExpr) else shlex.quote(a) for a in args)


def is_chart(component: ComponentBundle) -> bool:
    return component.type == "Helm" and bool(component.repository)


def _install_steps(c: ComponentBundle, opts: DeployerOptions, timeout_expr: str) -> List[List[str]]:
    """Commands (argv lists) that install one component; ``timeout_expr`` is kept unquoted."""
    ns = namespace_of(c)
    steps: List[List[str]] = []
    if c.type == "Kustomize":
        if not c.repository:
            raise RenderError("Kustomize component has no source", field="components[%s].repository" % c.name, value="")
        steps.append(["kubectl", "apply", "-k", kustomize_target(c)])
    elif is_chart(c):
        if c.is_oci:
            ref = oci_chart_ref(c)
        else:
            if not c.chart:
                raise RenderError("Helm component from an https repository needs a chart name",
                                  field="components[%s].chart" % c.name, value=c.chart)
            alias = repo_alias(c.repository)
            steps.append(["helm", "repo", "add", alias, c.repository, "--force-update"])
            ref = "%s/%s" % (alias, c.chart)
        cmd = ["helm", "upgrade", "--install", c.name, ref]
        if c.version:
            cmd += ["--version", c.version]
        cmd += ["--namespace", ns, "--create-namespace", "-f", "%s/values.yaml" % c.name]
        if opts.wait:
            cmd.append("--wait")
        cmd += ["--timeout", timeout_expr]
        steps.append(cmd)
    if c.manifests:
        manifest_ns = manifest_namespace(c)
        if not is_chart(c) and c.namespace:
            steps.append(["kubectl", "apply", "-f", "%s/namespace.yaml" % c.name])
        steps.append(["kubectl", "apply"] + (["-n", manifest_ns] if manifest_ns else []) + ["-f", "%s/manifests/" % c.name])
    return steps


def _uninstall_steps(c: ComponentBundle, opts: DeployerOptions, timeout_expr: str) -> List[List[str]]:
    ns = namespace_of(c)
    steps: List[List[str]] = []
    if c.manifests:
        manifest_ns = manifest_namespace(c)
        steps.append(["kubectl", "delete"] + (["-n", manifest_ns] if manifest_ns else [])
                     + ["-f", "%s/manifests/" % c.name, "--ignore-not-found"])
    if c.type == "Kustomize":
        steps.append(["kubectl", "delete", "-k", kustomize_target(c), "--ignore-not-found"])
    elif is_chart(c):
        cmd = ["helm", "uninstall", c.name, "--namespace", ns]
        if opts.wait:
            cmd.append("--wait")
        cmd += ["--timeout", timeout_expr]
        steps.append(cmd)
    return steps


_SCRIPT_HEAD = r'''#!/usr/bin/env bash
# %(title)s
# Generated by dsxos.cluster (deployer: helm). Do not edit: re-render the bundle instead.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$SCRIPT_DIR"

RETRY_ATTEMPTS="${DSXOS_RETRY_ATTEMPTS:-%(retries)d}"
RETRY_DELAY="${DSXOS_RETRY_DELAY:-%(retry_delay)d}"
HELM_TIMEOUT="${DSXOS_HELM_TIMEOUT:-%(timeout)s}"
DRY_RUN=0
ONLY=()
SKIP=()
COMPONENTS=(%(components)s)

usage() {
  cat <<'USAGE'
Usage: %(script)s [--dry-run] [--only COMPONENT]... [--skip COMPONENT]...

  --dry-run          print the commands (one per line, shell-quoted, on stdout) instead of running them;
                     the last line (on stderr) says nothing was deployed
  --only COMPONENT   act on this component only (repeatable)
  --skip COMPONENT   leave this component out (repeatable)

Environment: DSXOS_RETRY_ATTEMPTS (attempts per command), DSXOS_RETRY_DELAY (first backoff
delay in seconds, doubled after each failure), DSXOS_HELM_TIMEOUT (helm --timeout).
USAGE
}

die() { echo "error: $*" >&2; exit 2; }

known_component() {
  local c
  for c in "${COMPONENTS[@]}"; do [ "$c" = "$1" ] && return 0; done
  return 1
}

while [ "$#" -gt 0 ]; do
  case "$1" in
    --dry-run) DRY_RUN=1 ;;
    --only|--skip)
      [ "$#" -ge 2 ] || die "$1 needs a component name"
      known_component "$2" || die "unknown component: $2"
      if [ "$1" = "--only" ]; then ONLY+=("$2"); else SKIP+=("$2"); fi
      shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  shift
done

case "$RETRY_ATTEMPTS" in ''|*[!0-9]*|0) die "DSXOS_RETRY_ATTEMPTS must be a positive integer" ;; esac
case "$RETRY_DELAY" in ''|*[!0-9]*) die "DSXOS_RETRY_DELAY must be a non-negative integer" ;; esac

selected() {
  local c
  if [ "${#ONLY[@]}" -gt 0 ]; then
    for c in "${ONLY[@]}"; do [ "$c" = "$1" ] && break; c=""; done
    [ -n "$c" ] || return 1
  fi
  if [ "${#SKIP[@]}" -gt 0 ]; then
    for c in "${SKIP[@]}"; do [ "$c" = "$1" ] && return 1; done
  fi
  return 0
}

quote_cmd() {
  local out="" arg
  for arg in "$@"; do out+="$(printf '%%q' "$arg") "; done
  printf '%%s' "${out%% }"
}

# retry CMD...: run CMD, retrying with exponential backoff.
retry() {
  local attempt=1 delay="$RETRY_DELAY" rc
  while :; do
    rc=0
    "$@" || rc=$?
    [ "$rc" -eq 0 ] && return 0
    if [ "$attempt" -ge "$RETRY_ATTEMPTS" ]; then
      echo "error: failed after $attempt attempt(s) (exit $rc): $(quote_cmd "$@")" >&2
      return "$rc"
    fi
    echo "warning: attempt $attempt/$RETRY_ATTEMPTS failed (exit $rc); retrying in ${delay}s" >&2
    sleep "$delay"
    attempt=$((attempt + 1))
    delay=$((delay * 2))
  done
}

run() {
  if [ "$DRY_RUN" -eq 1 ]; then
    quote_cmd "$@"
    printf '\n'
    return 0
  fi
  echo "+ $(quote_cmd "$@")" >&2
  retry "$@"
}

need() {
  [ "$DRY_RUN" -eq 1 ] && return 0
  command -v "$1" >/dev/null 2>&1 || die "$1 is required but not found in PATH"
}
'''

_SCRIPT_MAIN = r'''
total="${#COMPONENTS[@]}"
for idx in %(indices)s; do
  name="${COMPONENTS[$idx]}"
  if ! selected "$name"; then
    echo "--- skip $name" >&2
    continue
  fi
  echo "==> [$((idx + 1))/$total] %(verb)s $name" >&2
  "%(prefix)s_$idx"
done
if [ "$DRY_RUN" -eq 1 ]; then
  echo "dry run: nothing was %(dry_done)s" >&2
else
  echo "%(done)s" >&2
fi
'''


def _script(title: str, script: str, components: List[ComponentBundle], opts: DeployerOptions,
            bodies: List[List[str]], reverse: bool) -> str:
    head = _SCRIPT_HEAD % {
        "title": title, "script": script, "retries": opts.retries, "retry_delay": opts.retry_delay,
        "timeout": opts.timeout, "components": " ".join(shlex.quote(c.name) for c in components),
    }
    prefix = "undeploy_component" if reverse else "deploy_component"
    parts = [head]
    for idx, (comp, body) in enumerate(zip(components, bodies)):
        parts.append("\n# %d: %s (%s)\n%s_%d() {\n" % (idx, _comment(comp.name), comp.type, prefix, idx))
        parts.extend("  %s\n" % line for line in body)
        if not body:
            parts.append("  :\n")
        parts.append("}\n")
    indices = list(range(len(components)))
    if reverse:
        indices.reverse()
    parts.append(_SCRIPT_MAIN % {
        "indices": " ".join(str(i) for i in indices) if indices else "",
        "verb": "remove" if reverse else "deploy", "prefix": prefix,
        "done": "undeploy finished" if reverse else "deploy finished",
        "dry_done": "removed" if reverse else "deployed",
    })
    return "".join(parts)


def _comment(text: str) -> str:
    return re.sub(r"[^\x20-\x7e]", "?", text)


def _needs(steps: List[List[str]]) -> List[str]:
    tools = sorted({argv[0] for argv in steps})
    return ["need %s" % t for t in tools]


def _deploy_body(c: ComponentBundle, opts: DeployerOptions) -> List[str]:
    steps = _install_steps(c, opts, TIMEOUT_EXPR)
    return _needs(steps) + ["run " + _q(s) for s in steps]


def _undeploy_body(c: ComponentBundle, opts: DeployerOptions) -> List[str]:
    steps = _uninstall_steps(c, opts, TIMEOUT_EXPR)
    lines = _needs(steps)
    for argv in steps:
        if argv[:2] == ["helm", "uninstall"]:
            # only uninstall a release that exists, so undeploy is re-runnable on any helm 3 version
            status = ["helm", "status", argv[2], "--namespace", argv[4]]
            lines.append('if [ "$DRY_RUN" -eq 1 ] || %s >/dev/null 2>&1; then run %s; '
                         'else echo "    release not installed: $name" >&2; fi' % (_q(status), _q(argv)))
        else:
            lines.append("run " + _q(argv))
    return lines


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ") or "-"


def _source_of(c: ComponentBundle) -> str:
    if c.type == "Kustomize":
        return kustomize_target(c)
    if not c.repository:
        return "(manifests only)"
    return oci_chart_ref(c) if c.is_oci else "%s (chart %s)" % (c.repository, c.chart)


def _readme(result: RecipeResult, components: List[ComponentBundle]) -> str:
    crit = result.criteria.to_dict()
    lines = [
        "# Deployment bundle (Helm)",
        "",
        "Rendered by dsxos.cluster for criteria: %s." % ", ".join("%s=%s" % (k, v) for k, v in crit.items()),
        "",
        "## Components (deployment order)",
        "",
        "| # | component | type | chart / source | version | namespace | manifests |",
        "|---|---|---|---|---|---|---|",
    ]
    for idx, c in enumerate(components):
        lines.append("| %d | %s | %s | %s | %s | %s | %d |" % (
            idx + 1, _md(c.name), _md(c.type), _md(_source_of(c)), _md(c.version), _md(shown_namespace(c)),
            len(c.manifests)))
    lines += [
        "",
        "## Deploy",
        "",
        "Needs `helm` (3.8+, for OCI charts) and `kubectl` with a kubeconfig for the target cluster.",
        "",
        "```bash",
        "./deploy.sh --dry-run        # print every command, run nothing",
        "./deploy.sh                  # install / upgrade everything in the order above",
        "./deploy.sh --only NAME      # one component (repeatable); --skip NAME leaves one out",
        "./undeploy.sh                # remove everything, in reverse order",
        "```",
        "",
        "Each command is retried with exponential backoff: `DSXOS_RETRY_ATTEMPTS` (attempts),",
        "`DSXOS_RETRY_DELAY` (first delay in seconds, doubled each time) and `DSXOS_HELM_TIMEOUT`",
        "(helm `--timeout`) override the rendered defaults. Re-running `deploy.sh` is safe",
        "(`helm upgrade --install`, `kubectl apply`).",
        "",
        "`recipe.yaml` is the resolved recipe this bundle came from; `checksums.txt` holds the",
        "SHA-256 of every file (`sha256sum -c checksums.txt`).",
        "",
    ]
    return "\n".join(lines)


def _component_readme(c: ComponentBundle, opts: DeployerOptions) -> str:
    timeout = opts.timeout
    lines = ["# %s" % c.name, "", "- type: %s" % c.type, "- namespace: %s" % shown_namespace(c),
             "- source: %s" % _source_of(c)]
    if c.version:
        lines.append("- version: %s" % c.version)
    if c.dependency_refs:
        lines.append("- depends on: %s" % ", ".join(c.dependency_refs))
    lines += ["", "Run from the bundle root.", "", "## Install / upgrade", "", "```bash"]
    lines += [_q(s) for s in _install_steps(c, opts, timeout)] or ["# nothing to install"]
    lines += ["```", "", "## Uninstall", "", "```bash"]
    lines += [_q(s) for s in _uninstall_steps(c, opts, timeout)] or ["# nothing to uninstall"]
    lines += ["```", ""]
    if c.type != "Kustomize":
        lines += ["`values.yaml` holds the Helm values computed from the recipe%s." % (
            "" if is_chart(c) else " (used to render the manifests; there is no chart)"), ""]
    return "\n".join(lines)


def _namespace_doc(ns: str) -> str:
    return dump_yaml({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})


def render(result: RecipeResult, components: List[ComponentBundle],
           options: Optional[DeployerOptions] = None) -> Dict[str, BundleFile]:
    """Render the helm bundle files (without ``recipe.yaml``/``checksums.txt``)."""
    opts, ordered = begin_render(options, DeployerOptions, components, check_component_dir_name)
    files: Dict[str, BundleFile] = {}
    for c in ordered:
        name = c.name
        if c.type != "Kustomize":
            files["%s/values.yaml" % name] = BundleFile.text(dump_yaml(c.values or {}))
        files["%s/README.md" % name] = BundleFile.text(_component_readme(c, opts))
        for file_name in sorted(c.manifests):
            check_manifest_name(c, file_name)
            files["%s/manifests/%s" % (name, file_name)] = BundleFile.text(c.manifests[file_name])
        if c.manifests and not is_chart(c) and c.namespace:
            files["%s/namespace.yaml" % name] = BundleFile.text(_namespace_doc(c.namespace))
    files["README.md"] = BundleFile.text(_readme(result, ordered))
    files["deploy.sh"] = BundleFile.text(_script(
        "Install or upgrade every component of this bundle, in deployment order.", "deploy.sh", ordered, opts,
        [_deploy_body(c, opts) for c in ordered], reverse=False), mode=0o755)
    files["undeploy.sh"] = BundleFile.text(_script(
        "Remove every component of this bundle, in reverse deployment order.", "undeploy.sh", ordered, opts,
        [_undeploy_body(c, opts) for c in ordered], reverse=True), mode=0o755)
    return dict(sorted(files.items()))
