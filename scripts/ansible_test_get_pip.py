# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dsxos.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Offline stand-in for the ``get-pip`` bootstrap script that ansible-test downloads.

ansible-test creates every sanity virtual environment *without* pip and then runs a
``get-pip-<version>.py`` script fetched from ci-files.testing.ansible.com, caching it as
``~/.ansible/test/cache/get_pip_<version>.py``. That host is unreachable here, so
``scripts/sanity.sh`` copies this file to that cache path instead. It is invoked exactly
like get-pip (``python get_pip.py [pip options] pip==X.Y [--no-setuptools] [--no-wheel]``)
and installs the requested pip from the package index, using the pip wheel that ships
with the interpreter's own ``ensurepip`` to run the first install.
"""
from __future__ import annotations

import glob
import os
import subprocess
import sys

MARKER = "dsxos.cluster offline get-pip stand-in"


def _bundled_pip_wheel() -> str | None:
    """Return the path of a pip wheel bundled with this interpreter, if any."""
    candidates = []
    try:
        import ensurepip  # pylint: disable=import-outside-toplevel

        candidates.extend(glob.glob(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled", "pip-*.whl")))
    except ImportError:
        pass
    candidates.extend(glob.glob("/usr/share/python-wheels/pip-*.whl"))  # Debian/Ubuntu strip ensurepip's copy
    return sorted(candidates)[-1] if candidates else None


def main(argv: list[str]) -> int:
    """Install the requested pip into the running interpreter; return an exit status."""
    no_setuptools = "--no-setuptools" in argv
    no_wheel = "--no-wheel" in argv
    pip_args = [arg for arg in argv if arg not in ("--no-setuptools", "--no-wheel")]
    wheel = _bundled_pip_wheel()
    if wheel:
        env = dict(os.environ, PYTHONPATH=wheel)
        # Run pip straight from its wheel (a zip is importable), the way get-pip does.
        command = [sys.executable, "-m", "pip", "install", "--no-cache-dir", "--ignore-installed"] + pip_args
        status = subprocess.run(command, env=env, check=False).returncode
    else:
        status = subprocess.run([sys.executable, "-m", "ensurepip", "--default-pip"], check=False).returncode
        if status == 0:
            status = subprocess.run([sys.executable, "-m", "pip", "install", "--upgrade"] + pip_args, check=False).returncode
        extras = [name for name, unwanted in (("setuptools", no_setuptools), ("wheel", no_wheel)) if unwanted]
        if status == 0 and extras:
            subprocess.run([sys.executable, "-m", "pip", "uninstall", "-y"] + extras, check=False)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
