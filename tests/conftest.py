"""Test-session settings: the persistent compilation cache lives in a directory of this session's
(so runs do not share compiled programs with each other or with the user's cache); each test starts
with transformed objects of its own (``srcjax.jit(f)`` in one test is not the object another test made
and called with other signatures: tests count their executables; ``srcjax/reuse.py``)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest

if "SRCJAX_CACHE_DIR" not in os.environ:
    _dir = tempfile.mkdtemp(prefix="srcjax-test-cache-")
    os.environ["SRCJAX_CACHE_DIR"] = _dir
    atexit.register(shutil.rmtree, _dir, True)


@pytest.fixture(autouse=True)
def _own_transformed_objects() -> None:
    from srcjax import reuse

    reuse.forget()
