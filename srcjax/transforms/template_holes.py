"""Derivative templates with holes for names, kept for later processes (:func:`.templates.instantiate`).

A template (``"out_bar * (1 - np.tanh(x) ** 2)"``) instantiated with names (``x`` -> ``matmul``) is its text
with each name's hole filled (:func:`.templates._named`): the holed text and the template's names are a
function of the template's text and srcjax's code alone (never of the user's program: the names given are
not part of it). So is the template folded with the texts given that are not names (``2``, ``None``,
``np.s_[1:]``: :func:`.templates._partly_named`), a hole for each name given. A new process found them again
for every template it instantiated (a libcst parse, a rename and a print each: ~50 in a first ``hessian``);
this module keeps them in the persistent cache
(``runtime/disk_cache.py``, JSON) under srcjax's own fingerprint (``warm_cache.fingerprint``: an edited
srcjax is another key), libcst's and Python's versions, as srcjax's own library helpers are kept
(``frontend/library_cache.py``). Read once per process, on the first template instantiated; written on
srcjax's writer thread when this process found new ones. A missing, corrupt or foreign entry: the
templates are read as before.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from typing import Any

from .. import warm_cache

_VERSION = "srcjax-template-holes-2"
_LOCK = threading.Lock()
_STATE = {"loaded": False, "pending": False}


def key() -> str:
    from libcst import _version

    h = hashlib.sha256()
    for part in (_VERSION, warm_cache.fingerprint(), _version.__version__, sys.version):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def load(names: dict[str, tuple[str, ...]], holes: dict[tuple[str, tuple[bool, ...]], str | None],
         literals: dict[tuple[str, tuple[str | bool | None, ...]], str | None]) -> None:
    """Fill ``names`` (template -> its names), ``holes`` ((template, names given) -> holed text or None) and
    ``literals`` ((template, each name's text or hole) -> folded holed text or None) from the cache, once per
    process; never raises."""
    if _STATE["loaded"]:
        return
    _STATE["loaded"] = True
    from ..runtime import disk_cache

    try:
        if disk_cache.cache_dir() is None:
            return
        blob = disk_cache.load(key(), count=False, kind="templates")
        if blob is None:
            return
        record = json.loads(blob.decode())
        if record.get("version") != _VERSION:
            return
        found_names = {str(t): tuple(str(n) for n in ns) for t, ns in record["names"]}
        found_holes = {(str(t), tuple(bool(c == "1") for c in mask)): (None if h is None else str(h))
                       for t, mask, h in record["holes"]}
        found_literals = {(str(t), tuple(p for p in pattern)): (None if h is None else str(h))
                          for t, pattern, h in record["literals"]}
        if not all(len(mask) == len(found_names.get(t, ())) for t, mask in [*found_holes, *found_literals]) or \
                not all(p is None or p is True or type(p) is str for _, pattern in found_literals for p in pattern):
            return  # (an entry not written by this module)
        with _LOCK:
            for t, ns in found_names.items():
                names.setdefault(t, ns)
            for k, h in found_holes.items():
                holes.setdefault(k, h)
            for lk, h in found_literals.items():
                literals.setdefault(lk, h)
    except Exception:  # noqa: BLE001 - the cache is an optimization
        return


def found_new(names: dict[str, tuple[str, ...]], holes: dict[tuple[str, tuple[bool, ...]], str | None],
              literals: dict[tuple[str, tuple[str | bool | None, ...]], str | None]) -> None:
    """This process found a template's holes: write the tables on srcjax's writer thread (once for the
    templates found until it runs); never raises."""
    if _STATE["pending"]:
        return
    from ..runtime import disk_cache

    try:
        if disk_cache.cache_dir() is None:
            return
        _STATE["pending"] = True

        def blob() -> bytes:
            _STATE["pending"] = False
            with _LOCK:
                ns = [[t, list(v)] for t, v in names.items()]
                hs = [[t, "".join("1" if c else "0" for c in mask), h] for (t, mask), h in holes.items()]
                ls = [[t, list(pattern), h] for (t, pattern), h in literals.items()]
            return json.dumps({"version": _VERSION, "names": ns, "holes": hs, "literals": ls}).encode()

        disk_cache.store_later(key(), blob, kind="templates")
    except Exception:  # noqa: BLE001
        _STATE["pending"] = False


def locked() -> Any:
    """The lock held while the tables change (the writer thread reads them)."""
    return _LOCK
