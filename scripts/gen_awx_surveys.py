# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Generate the AWX survey specs of the job templates from the roles' ``meta/argument_specs.yml`` (docs/awx.md).

    scripts/gen_awx_surveys.py            # write extensions/awx/surveys/<job template>.json
    scripts/gen_awx_surveys.py --check    # exit 1 (naming the stale files) when they are not up to date

One survey per job template (``configure``, ``certify``, ``remediate``, ``release``, ``recertify``, ``status``); the
sentinel templates ask only the options of their mode (``SURVEYS``). Type mapping (AWX survey question types):

* ``bool`` -> ``multiplechoice`` ``["true", "false"]`` (the role's argument spec turns the string into a bool);
* ``str``/``path`` with ``choices`` -> ``multiplechoice``; without -> ``text`` (``password`` when ``no_log``);
* ``int`` -> ``integer`` (``multiplechoice`` of the numbers when it has ``choices``); ``float`` -> ``float``;
* ``list`` of ``str`` with ``choices`` -> ``multiselect``; of ``str``/``path`` without -> ``text``, comma-separated
  (Ansible's ``list`` type splits a string on commas);
* ``dict``, ``raw`` and lists of them cannot be asked in a survey: they are skipped and named in the survey's
  description (pass them as extra variables: every template prompts for variables on launch).

Defaults and ``required`` come from the spec (an empty default is left out: AWX then passes nothing and the role's
own default applies; ``""`` would reach a ``list`` option as ``[""]``); markup (``O(x)``, ``C(x)``, ``M(x)``) becomes plain text.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import yaml

REPO = Path(__file__).resolve().parents[1]
OUT_DIR = REPO / "extensions" / "awx" / "surveys"
TEXT_MAX = 1024
DESCRIPTION_MAX = 500

#: job template -> (role, options asked; None = every option of the role's main entry point that a survey can ask)
SURVEYS: Dict[str, Tuple[str, Optional[Sequence[str]]]] = {
    "configure": ("configure", None),
    "certify": ("certify", None),
    "remediate": ("sentinel", ("sentinel_nodes", "sentinel_reason", "sentinel_manual_action", "sentinel_destructive", "sentinel_dry_run",
                               "sentinel_attempt_cap", "sentinel_attempt_window_s", "sentinel_taint", "sentinel_circuit_breaker_enabled",
                               "sentinel_lock_wait_s", "sentinel_run_id", "sentinel_actor", "sentinel_fail_on_error")),
    "release": ("sentinel", ("sentinel_nodes", "sentinel_incident", "sentinel_dry_run", "sentinel_run_id", "sentinel_actor",
                             "sentinel_fail_on_error")),
    "recertify": ("sentinel", ("sentinel_nodes", "sentinel_dry_run", "sentinel_lock_wait_s", "sentinel_run_id", "sentinel_actor",
                               "sentinel_fail_on_error")),
    "status": ("sentinel", ("sentinel_status_dir", "sentinel_status_window_s")),
}
TITLES = {"configure": "dsxos configure", "certify": "dsxos certify", "remediate": "dsxos GPU sentinel remediate",
          "release": "dsxos GPU sentinel release", "recertify": "dsxos GPU sentinel recertify", "status": "dsxos GPU sentinel status"}

_MARKUP = re.compile(r"\b[OVCMIBLUE]\(([^)]*)\)")


def plain(text: Any) -> str:
    """Ansible doc markup -> plain text (``O(a=b)`` -> ``a=b``), lists joined, whitespace collapsed, bounded."""
    if isinstance(text, (list, tuple)):
        text = " ".join(str(t) for t in text)
    out = " ".join(_MARKUP.sub(r"\1", str(text or "")).split())
    return out if len(out) <= DESCRIPTION_MAX else out[:DESCRIPTION_MAX - 1] + "\u2026"


def load_spec(role: str, repo: Path = REPO) -> Dict[str, Any]:
    """The options of a role's ``main`` entry point."""
    data = yaml.safe_load((repo / "roles" / role / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
    return dict(data["argument_specs"]["main"].get("options") or {})


def question(name: str, option: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """One survey question for an argument-spec option, or None when a survey cannot ask it (dict, raw)."""
    kind = option.get("type", "str")
    elements = option.get("elements", "str")
    choices = option.get("choices")
    default = option.get("default")
    out: Dict[str, Any] = {"variable": name, "question_name": name, "question_description": plain(option.get("description")),
                           "required": bool(option.get("required", False))}
    if kind == "bool":
        out.update(type="multiplechoice", choices=["true", "false"], default=None if default is None else ("true" if default else "false"))
    elif kind in ("str", "path", "int") and choices:
        out.update(type="multiplechoice", choices=[str(c) for c in choices], default=None if default is None else str(default))
    elif kind in ("str", "path"):
        out.update(type="password" if option.get("no_log") else "text", min=0, max=TEXT_MAX, default=None if default is None else str(default))
    elif kind == "int":
        out.update(type="integer", default=None if default is None else int(default))
    elif kind == "float":
        out.update(type="float", default=None if default is None else float(default))
    elif kind == "list" and elements in ("str", "path"):
        if choices:
            out.update(type="multiselect", choices=[str(c) for c in choices], default="\n".join(str(d) for d in default or []))
        else:
            out["question_description"] = plain(f"{out['question_description']} (comma-separated)")
            out.update(type="text", min=0, max=TEXT_MAX, default=",".join(str(d) for d in default or []))
    else:
        return None
    if out["default"] is None or out["default"] == "":
        # AWX applies a survey default only when it is set and valid; without one the role's own default applies
        # (an empty string would reach a list option as [""])
        del out["default"]
    return out


def survey(template: str, repo: Path = REPO) -> Dict[str, Any]:
    """The survey spec of one job template (``{name, description, spec}``, as AWX's ``survey_spec``)."""
    role, wanted = SURVEYS[template]
    options = load_spec(role, repo)
    names = list(options) if wanted is None else list(wanted)
    missing = [n for n in names if n not in options]
    if missing:
        raise KeyError(f"survey {template}: role {role} has no option(s) {', '.join(missing)}")
    spec, skipped = [], []
    for name in names:
        item = question(name, options[name])
        if item is None:
            skipped.append(name)
        else:
            spec.append(item)
    description = f"Generated from roles/{role}/meta/argument_specs.yml by scripts/gen_awx_surveys.py."
    if skipped:
        description += " Not asked (pass as extra variables): " + ", ".join(skipped) + "."
    return {"name": TITLES[template], "description": description, "spec": spec}


def render(template: str, repo: Path = REPO) -> str:
    """The file text of one survey (stable JSON)."""
    return json.dumps(survey(template, repo), indent=2, sort_keys=True) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="only report stale files (exit 1), write nothing")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output directory (default extensions/awx/surveys)")
    args = parser.parse_args(argv)
    stale = []
    for template in SURVEYS:
        path = args.out / f"{template}.json"
        text = render(template)
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(str(path))
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".json.tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
    if args.check and stale:
        print("stale AWX surveys (run scripts/gen_awx_surveys.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    print(("up to date" if not stale else "written: " + ", ".join(stale)) if not args.check else "up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
