# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Build the CPU nccl-tests stand-in with ``mpicc`` into a cache directory under ``.build/``.

``build_standin()`` returns the directory holding ``all_reduce_perf``, ``all_gather_perf``,
``alltoall_perf``, ``reduce_scatter_perf``, ``broadcast_perf`` and ``sendrecv_perf`` (hard links to
one binary, which picks its collective from ``argv[0]``). The cache key is the hash of the C source,
the compiler command line and ``mpicc --showme`` output, so an edited source or another MPI gets a
fresh build; concurrent builders serialise on a lock file and the finished directory appears
atomically (temp dir + rename). Run ``python -m tests.harness.nccl_standin.build`` (from the
collection root on ``sys.path``) to print the directory.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

SOURCE = Path(__file__).resolve().parent / "nccl_standin.c"
REPO = Path(__file__).resolve().parents[3]
DEFAULT_CACHE = REPO / ".build" / "nccl_standin"
#: The molecule scenarios' build (tests/harness/service_keeper.py): binaries of their own, so the integration tests'
#: "no stand-in process is left" checks (by the realpath of DEFAULT_CACHE's binaries) never see the molecule runs.
KEEPER_CACHE = REPO / ".build" / "nccl_standin_keeper"
BINARIES = ("all_reduce_perf", "all_gather_perf", "alltoall_perf", "reduce_scatter_perf", "broadcast_perf", "sendrecv_perf")
CFLAGS = ("-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror")


class StandinBuildError(RuntimeError):
    """The stand-in could not be built (mpicc missing or the compile failed)."""


def _mpicc(mpicc: Optional[str]) -> str:
    found = mpicc or shutil.which("mpicc")
    if not found:
        raise StandinBuildError("mpicc not found on PATH: install openmpi-bin and libopenmpi-dev "
                                "(apt-get install openmpi-bin libopenmpi-dev) to build the nccl-tests CPU stand-in")
    return found


def _cache_key(mpicc: str) -> str:
    digest = hashlib.sha256(SOURCE.read_bytes())
    digest.update(" ".join(CFLAGS).encode())
    try:
        showme = subprocess.run([mpicc, "--showme"], capture_output=True, text=True, check=False, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise StandinBuildError("cannot run %s --showme: %s" % (mpicc, exc)) from exc
    digest.update(showme.encode())
    return digest.hexdigest()[:16]


def is_built(bin_dir: Path) -> bool:
    """True when ``bin_dir`` holds every stand-in binary, executable."""
    return all(os.access(bin_dir / name, os.X_OK) for name in BINARIES)


def build_standin(cache_dir: Optional[os.PathLike] = None, mpicc: Optional[str] = None) -> Path:
    """Build (once per source/MPI version) and return the directory of the stand-in binaries."""
    compiler = _mpicc(mpicc)
    root = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE
    root.mkdir(parents=True, exist_ok=True)
    target = root / _cache_key(compiler)
    if is_built(target):
        return target
    with open(root / ".lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_built(target):
            return target
        work = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
        try:
            first = work / BINARIES[0]
            command: List[str] = [compiler, *CFLAGS, "-o", str(first), str(SOURCE)]
            proc = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)
            if proc.returncode != 0:
                raise StandinBuildError("building the nccl-tests CPU stand-in failed (rc=%d): %s\n%s\n%s"
                                        % (proc.returncode, " ".join(command), proc.stdout, proc.stderr))
            for name in BINARIES[1:]:
                os.link(first, work / name)
            if target.exists():
                shutil.rmtree(target)
            os.rename(work, target)
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)
    return target


def main(argv: Optional[List[str]] = None) -> int:
    """Print the stand-in directory (building it if needed)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        path = build_standin(args[0] if args else None)
    except StandinBuildError as exc:
        sys.stderr.write("%s\n" % exc)
        return 1
    sys.stdout.write("%s\n" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
