"""Test-session settings: the persistent compilation cache lives in a directory of this session's
(so runs do not share compiled programs with each other or with the user's cache)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

if "SRCJAX_CACHE_DIR" not in os.environ:
    _dir = tempfile.mkdtemp(prefix="srcjax-test-cache-")
    os.environ["SRCJAX_CACHE_DIR"] = _dir
    atexit.register(shutil.rmtree, _dir, True)
