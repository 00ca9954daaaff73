"""Checks run in a child process with several CPU devices (``tests/spmd_checks.py``,
``tests/pmap_checks.py``, ``tests/multiprocess_checks.py``): the child records each check's outcome
with :func:`recorder`'s decorator and prints them as JSON; the parent test reads them once with
:func:`run_once` and asserts each by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def recorder(results: dict[str, str]) -> Callable[[Callable[[], None]], Callable[[], None]]:
    """A decorator that runs a check at once and records "ok" or its traceback in ``results``."""
    def check(fn: Callable[[], None]) -> Callable[[], None]:
        try:
            fn()
            results[fn.__name__] = "ok"
        except Exception:  # noqa: BLE001 - reported to the parent test
            results[fn.__name__] = traceback.format_exc()[-3000:]
        return fn
    return check


_RUN: dict[str, dict[str, str]] = {}


def run_once(script: str, devices: int = 4, timeout: float = 400) -> dict[str, str]:
    """The outcomes ``tests/<script>`` printed, run once per test session with ``devices`` CPU devices."""
    if script not in _RUN:
        env = dict(os.environ, PYTHONPATH=str(ROOT), SRCJAX_NUM_CPU_DEVICES=str(devices), TF_CPP_MIN_LOG_LEVEL="3")
        proc = subprocess.run([sys.executable, str(ROOT / "tests" / script)], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout)
        lines = proc.stdout.strip().splitlines()
        assert proc.returncode == 0 and lines, f"checks process failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
        _RUN[script] = json.loads(lines[-1])
    return _RUN[script]
