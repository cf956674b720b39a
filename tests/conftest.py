"""Make the working tree importable as ``ansible_collections.dsxos.cluster``.

A symlink ``.build/collections/ansible_collections/dsxos/cluster -> <repo>`` is created
(once) and put on ``sys.path``, so unit tests import exactly the files being edited.
"""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.join(REPO, ".build", "collections")
LINK = os.path.join(ROOT, "ansible_collections", "dsxos", "cluster")

if not os.path.islink(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    try:
        os.symlink(REPO, LINK)
    except FileExistsError:
        pass
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

#: Where shared data (CRDs, DCGM field lists) lives; override with DSXOS_SHARED_DIR.
SHARED_DIR = os.environ.get("DSXOS_SHARED_DIR", os.path.join(os.path.dirname(REPO), "shared"))
