# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""One ansible-playbook run against 75 separate processes doing the same Configure work.

The work: 25 recipes (the leaf overlays of ``recipes/``, repeated when there are fewer) are resolved
(25 ``recipe_resolve``) and rendered with the helm and argocd deployers (50 ``bundle_render``, 50 bundles):
75 operations.

* ``playbook``: ONE ``ansible-playbook`` run of a generated play doing the 75 operations through the collection's
  modules (controller-side action plugins), from the installed collection (``.build/installed``, ``make
  install-private``; ``DSXOS_INSTALLED_COLLECTIONS`` overrides).
* ``processes``: 75 separate ``python -c`` processes, each importing our module_utils and doing ONE operation
  (25 resolve; 50 resolve + render + write, since a render needs the resolved recipe). This is our stand-in for
  a comparable CLI: the upstream ``aicr`` CLI is not available here. Its published anchor is about 2.9 s for the
  75 processes on this machine; the ratio printed is ours / 2.9 s.
* ``breakdown``: where the time goes. ansible-playbook startup (a run of an empty play), per-module time reported
  by the modules (``elapsed_ms``) and the rest (task dispatch, templating, callbacks), then a cProfile of the 75
  operations in one process split into recipe store load, resolve, values/manifests, render, bundle writes and
  the fsyncs inside them.

Usage: python bench/configure_playbook_bench.py [--json FILE] [--recipes 25]
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
import conftest  # noqa: E402,F401  # pylint: disable=unused-import,wrong-import-position

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import (  # noqa: E402
    BUNDLE_RENDER, run_render, run_resolve)
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore  # noqa: E402

ANCHOR_S = 2.9  # published: the upstream aicr CLI, 75 processes, this machine
DEPLOYERS = {"helm": {}, "argocd": {"repo_url": "https://git.example.com/gitops.git", "revision": "main"}}

PLAY = """
- name: Configure benchmark (resolve and render {count} recipes x {deployers} deployers)
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Resolve
      dsxos.cluster.recipe_resolve:
        criteria: "{{{{ item }}}}"
      loop: "{{{{ bench_criteria }}}}"
      register: resolved
    - name: Render
      dsxos.cluster.bundle_render:
        recipe: "{{{{ item.0.recipe }}}}"
        dest: "{{{{ bench_out }}}}/{{{{ idx }}}}-{{{{ item.1.name }}}}"
        deployer: "{{{{ item.1.name }}}}"
        deployer_options: "{{{{ item.1.options }}}}"
      loop: "{{{{ resolved.results | product(bench_deployers) | list }}}}"
      loop_control:
        index_var: idx
        label: "{{{{ idx }}}}"
      register: rendered
    - name: Module time
      ansible.builtin.debug:
        msg: "RESOLVE_MS={{{{ resolved.results | map(attribute='elapsed_ms') | sum }}}}
              RENDER_MS={{{{ rendered.results | map(attribute='elapsed_ms') | sum }}}}
              BUNDLES={{{{ rendered.results | length }}}}"
"""

EMPTY_PLAY = """
- name: Empty
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Nothing
      ansible.builtin.meta: noop
"""

RESOLVE_SNIPPET = """
import sys, json
sys.path.insert(0, {root!r})
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import resolve_recipe
resolve_recipe(json.loads({criteria!r}))
"""

RENDER_SNIPPET = """
import sys, json
sys.path.insert(0, {root!r})
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.entry import resolve_recipe, render_recipe_bundle
recipe = resolve_recipe(json.loads({criteria!r}))["recipe"]
render_recipe_bundle(recipe, {dest!r}, {deployer!r}, json.loads({options!r}))
"""


def recipes(count: int) -> list:
    store = RecipeStore.load([], include_builtin=True)
    bases = {doc.base for doc in store.overlays.values() if doc.base}
    leaves = sorted(n for n, d in store.overlays.items() if n not in bases and n != "base" and d.criteria is not None)
    picked = [leaves[i % len(leaves)] for i in range(count)]
    out = []
    for name in picked:
        crit = store.overlays[name].criteria.to_dict()
        out.append({k: v for k, v in crit.items() if v not in ("any", 0)})
    return out


def installed() -> str:
    path = os.environ.get("DSXOS_INSTALLED_COLLECTIONS", os.path.join(REPO, ".build", "installed"))
    if not os.path.isdir(os.path.join(path, "ansible_collections", "dsxos", "cluster")):
        raise SystemExit("collection not installed at %s: run make install-private" % path)
    return path


def run_playbook(tmp: str, text: str, extra: dict, collections: str) -> tuple:
    play = os.path.join(tmp, "play-%d.yml" % len(os.listdir(tmp)))
    with open(play, "w", encoding="utf-8") as handle:
        handle.write(text)
    extra_file = play + ".json"
    with open(extra_file, "w", encoding="utf-8") as handle:
        json.dump(extra, handle)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="False",
               ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
               ANSIBLE_HOME=os.path.join(tmp, "home"),
               ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", play, "-e", "@" + extra_file]
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit("ansible-playbook failed:\n" + proc.stdout[-3000:] + proc.stderr[-2000:])
    return wall, proc.stdout


def bench_playbook(tmp: str, criteria: list, collections: str) -> dict:
    startup, dummy = run_playbook(tmp, EMPTY_PLAY, {}, collections)
    extra = {"bench_criteria": criteria, "bench_out": os.path.join(tmp, "pb"),
             "bench_deployers": [{"name": k, "options": v} for k, v in DEPLOYERS.items()]}
    wall, out = run_playbook(tmp, PLAY.format(count=len(criteria), deployers=len(DEPLOYERS)), extra, collections)
    figures = {}
    for key in ("RESOLVE_MS", "RENDER_MS", "BUNDLES"):
        figures[key] = float(out.split(key + "=", 1)[1].split()[0].strip('",'))
    return {"wall_s": wall, "startup_s": startup, "resolve_module_s": figures["RESOLVE_MS"] / 1000.0,
            "render_module_s": figures["RENDER_MS"] / 1000.0, "bundles": int(figures["BUNDLES"])}


def bench_processes(tmp: str, criteria: list) -> dict:
    root = os.path.join(REPO, ".build", "collections")
    commands = []
    for index, crit in enumerate(criteria):
        commands.append(RESOLVE_SNIPPET.format(root=root, criteria=json.dumps(crit)))
        for deployer, options in DEPLOYERS.items():
            commands.append(RENDER_SNIPPET.format(root=root, criteria=json.dumps(crit), deployer=deployer,
                                                  options=json.dumps(options),
                                                  dest=os.path.join(tmp, "proc", "%d-%s" % (index, deployer))))
    start = time.perf_counter()
    for code in commands:
        subprocess.run([sys.executable, "-c", code], check=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    start = time.perf_counter()
    for dummy in range(10):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    bare = (time.perf_counter() - start) / 10
    return {"wall_s": wall, "processes": len(commands), "python_startup_s": bare * len(commands)}


def profile_in_process(tmp: str, criteria: list) -> dict:
    """The 75 operations in one process under cProfile (cumulative seconds per stage)."""
    def work():
        for index, crit in enumerate(criteria):
            recipe = run_resolve({"criteria": crit, "recipe_dirs": [], "include_builtin": True,
                                  "disabled_components": [], "snapshot": None, "infer": False})["recipe"]
            for deployer, options in DEPLOYERS.items():
                params = {name: option.get("default") for name, option in BUNDLE_RENDER.spec.items()}
                params.update(recipe=recipe, dest=os.path.join(tmp, "prof", "%d-%s" % (index, deployer)), deployer=deployer,
                              deployer_options=options)
                run_render(params)
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    work()
    profiler.disable()
    total = time.perf_counter() - start
    stats = pstats.Stats(profiler)
    wanted = {"recipe store load": ("recipe_store.py", "load"), "resolve": ("recipe_resolver.py", "resolve"),
              "values + manifests": ("component_values.py", "build_component_bundles"),
              "render (deployers, recipe.yaml, checksums)": ("bundle_render.py", "render_bundle"),
              "write_bundle (scan, compare, write, swap)": ("bundle_writer.py", "write_bundle"),
              "  of which fsync": ("~", "<built-in method posix.fsync>")}
    out = {"total_s": total}
    for label, (filename, func) in wanted.items():
        cum = 0.0
        for (fname, dummy, fn), row in stats.stats.items():  # type: ignore[attr-defined]
            if fn == func and (filename == "~" or fname.endswith(filename)):
                cum += row[3]
        out[label] = cum
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--recipes", type=int, default=25)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    collections = installed()
    criteria = recipes(args.recipes)
    with tempfile.TemporaryDirectory() as tmp:
        playbook = bench_playbook(tmp, criteria, collections)
        processes = bench_processes(tmp, criteria)
        profile = profile_in_process(tmp, criteria)
    ops = len(criteria) * (1 + len(DEPLOYERS))
    module_s = playbook["resolve_module_s"] + playbook["render_module_s"]
    print("Configure: %d recipes x %d deployers = %d bundles, %d operations" % (
        len(criteria), len(DEPLOYERS), playbook["bundles"], ops))
    print("  one ansible-playbook run          %6.2f s   (%.2f x the 2.9 s anchor)" % (playbook["wall_s"], playbook["wall_s"] / ANCHOR_S))
    print("  %d python -c processes            %6.2f s   (%.2f x the 2.9 s anchor)" % (
        processes["processes"], processes["wall_s"], processes["wall_s"] / ANCHOR_S))
    print("  upstream aicr CLI, 75 processes    %6.2f s   (published anchor, not measured here)" % ANCHOR_S)
    print("Where the playbook's time goes:")
    print("  ansible-playbook startup (empty play)   %6.2f s" % playbook["startup_s"])
    print("  inside recipe_resolve (25 x elapsed_ms) %6.2f s" % playbook["resolve_module_s"])
    print("  inside bundle_render (50 x elapsed_ms)  %6.2f s" % playbook["render_module_s"])
    print("  task dispatch, templating, callbacks    %6.2f s" % max(0.0, playbook["wall_s"] - playbook["startup_s"] - module_s))
    print("Where the module time goes (the %d operations in one process, cProfile, cumulative):" % ops)
    for key, value in profile.items():
        print("  %-42s %6.2f s" % (key, value))
    print("  (processes: %.2f s of the %.2f s is bare interpreter startup)" % (processes["python_startup_s"], processes["wall_s"]))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"playbook": playbook, "processes": processes, "profile": profile, "anchor_s": ANCHOR_S}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
