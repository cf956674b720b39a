# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Configure-phase benchmark: resolve + render every leaf recipe of the catalog with every deployer.

Prints figures against the targets of the foundation issue:
  * single resolve+render in-process   < 50 ms median
  * whole catalog x 3 deployers         < 5 s
  * peak RSS                            < 150 MB
  * one ansible-playbook run of playbooks/configure.yml < 3 s wall

Usage: python bench/configure_bench.py [--repeat N] [--no-playbook] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
import conftest  # noqa: E402,F401  # pylint: disable=unused-import,wrong-import-position

from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_render import render_bundle  # noqa: E402
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.bundle_writer import write_bundle  # noqa: E402
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.component_values import build_component_bundles  # noqa: E402
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_resolver import resolve  # noqa: E402
from ansible_collections.dsxos.cluster.plugins.module_utils.configure.recipe_store import RecipeStore  # noqa: E402

DEPLOYER_OPTIONS = {
    "helm": {},
    "argocd": {"repo_url": "https://git.example.com/gitops.git", "revision": "main"},
    "flux": {},
}


def leaf_overlays(store: RecipeStore) -> list:
    bases = {doc.base for doc in store.overlays.values() if getattr(doc, "base", None)}
    return sorted(name for name, doc in store.overlays.items()
                  if name not in bases and name != "base")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def bench_in_process(repeat: int) -> dict:
    t0 = time.perf_counter()
    store = RecipeStore.load([], include_builtin=True)
    load_s = time.perf_counter() - t0
    leaves = leaf_overlays(store)
    per_bundle = []
    per_bundle_written = []
    total_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for dummy in range(repeat):
            for name in leaves:
                criteria = store.overlays[name].criteria
                for deployer, options in DEPLOYER_OPTIONS.items():
                    start = time.perf_counter()
                    result = resolve(store, criteria)
                    components = build_component_bundles(store, result)
                    files = render_bundle(result, components, deployer, dict(options))
                    rendered = time.perf_counter()
                    write_bundle(os.path.join(tmp, name, deployer), files)
                    done = time.perf_counter()
                    per_bundle.append(rendered - start)
                    per_bundle_written.append(done - start)
    total_s = time.perf_counter() - total_start
    bundles = len(per_bundle)
    return {
        "leaves": len(leaves),
        "deployers": len(DEPLOYER_OPTIONS),
        "bundles": bundles,
        "store_load_ms": load_s * 1000,
        "catalog_total_s": total_s / repeat,
        "median_ms": statistics.median(per_bundle) * 1000,
        "p90_ms": sorted(per_bundle)[int(0.9 * (bundles - 1))] * 1000,
        "median_with_write_ms": statistics.median(per_bundle_written) * 1000,
        "peak_rss_mb": peak_rss_mb(),
    }


def bench_playbook(runs: int = 3) -> dict:
    venv_bin = os.path.dirname(sys.executable)
    playbook = os.path.join(venv_bin, "ansible-playbook")
    collections = os.environ.get("DSXOS_INSTALLED_COLLECTIONS", os.path.join(REPO, ".build", "installed"))
    if not os.path.isdir(os.path.join(collections, "ansible_collections", "dsxos", "cluster")):
        return {"skipped": "collection not installed at %s (run make install)" % collections}
    walls = []
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_LOCALHOST_WARNING="False",
                   ANSIBLE_INVENTORY_UNPARSED_WARNING="False", ANSIBLE_HOME=os.path.join(tmp, "home"))
        for i in range(runs):
            start = time.perf_counter()
            proc = subprocess.run(
                [playbook, "-i", "localhost,", "dsxos.cluster.configure",
                 "-e", json.dumps({"configure_output_dir": os.path.join(tmp, "out%d" % i),
                                   "ansible_python_interpreter": sys.executable})],
                env=env, capture_output=True, text=True, check=False)
            walls.append(time.perf_counter() - start)
            if proc.returncode != 0:
                return {"error": proc.stdout[-2000:] + proc.stderr[-2000:]}
    return {"runs": runs, "median_wall_s": statistics.median(walls), "min_wall_s": min(walls)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="passes over the catalog (default 3)")
    parser.add_argument("--no-playbook", action="store_true", help="skip the ansible-playbook wall-time run")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    figures = {"in_process": bench_in_process(args.repeat)}
    if not args.no_playbook:
        figures["playbook"] = bench_playbook()
    ip = figures["in_process"]
    rows = [
        ("catalog", "%d leaves x %d deployers = %d bundles/pass" % (ip["leaves"], ip["deployers"], ip["bundles"] // args.repeat), ""),
        ("store load (once)", "%.1f ms" % ip["store_load_ms"], ""),
        ("resolve+render median", "%.2f ms (p90 %.2f ms)" % (ip["median_ms"], ip["p90_ms"]),
         "target < 50 ms  -> %.0fx under" % (50.0 / max(ip["median_ms"], 1e-6))),
        ("  ... incl. atomic write", "%.2f ms" % ip["median_with_write_ms"], ""),
        ("whole catalog x 3 deployers", "%.3f s" % ip["catalog_total_s"],
         "target < 5 s    -> %.1fx under" % (5.0 / max(ip["catalog_total_s"], 1e-6))),
        ("peak RSS", "%.1f MB" % ip["peak_rss_mb"], "target < 150 MB -> ratio %.2f" % (ip["peak_rss_mb"] / 150.0)),
    ]
    pb = figures.get("playbook")
    if pb:
        if "median_wall_s" in pb:
            rows.append(("ansible-playbook configure.yml", "%.2f s median of %d (min %.2f s)" % (pb["median_wall_s"], pb["runs"], pb["min_wall_s"]),
                         "target < 3 s    -> ratio %.2f" % (pb["median_wall_s"] / 3.0)))
        else:
            rows.append(("ansible-playbook configure.yml", pb.get("skipped") or "FAILED", ""))
    width = max(len(r[0]) for r in rows)
    print("Configure benchmark (%s, libyaml=%s)" % (sys.version.split()[0], __import__("yaml").__with_libyaml__))
    for name, value, target in rows:
        print("  %-*s  %-42s %s" % (width, name, value, target))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(figures, handle, indent=2)
    return 0 if not (pb and "error" in pb) else 1


if __name__ == "__main__":
    sys.exit(main())
