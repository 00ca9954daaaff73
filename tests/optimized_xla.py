"""XLA's LLVM optimization level in the tests. ``tests/conftest.py`` compiles at level 0 (``LEVEL_0`` appended
to XLA_FLAGS; ``SRCJAX_TEST_XLA_OPTIMIZED=1`` keeps XLA's default): the suite is mostly XLA compiling small
programs, and what it checks does not depend on LLVM's optimizations, except bit-for-bit comparisons with
jax's numbers (``tests/test_random.py``), whose last ulp can differ at level 0. Those run in a process of
their own at XLA's default level (:func:`run_optimized`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LEVEL_0 = "--xla_backend_optimization_level=0"


def level_0_flags(environ: dict[str, str]) -> str | None:
    """The XLA_FLAGS the tests compile with, or None to leave XLA_FLAGS as it is (optimized: asked for,
    or a level already there)."""
    flags = environ.get("XLA_FLAGS", "")
    if environ.get("SRCJAX_TEST_XLA_OPTIMIZED") == "1" or "xla_backend_optimization_level" in flags:
        return None
    return (flags + " " + LEVEL_0).strip()


def optimized() -> bool:
    """Whether this process compiles at XLA's default optimization level (XLA reads XLA_FLAGS once)."""
    return LEVEL_0 not in os.environ.get("XLA_FLAGS", "").split()


def run_optimized(module: str, statements: str, timeout: float = 300) -> None:
    """Run ``statements`` in the namespace of the test module ``module`` (``from module import *``) in a
    fresh process at XLA's default optimization level, without the persistent compilation cache (the
    suite's entries were compiled at level 0); its failure fails the caller with its output."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = " ".join(f for f in env.get("XLA_FLAGS", "").split() if f != LEVEL_0)
    env["SRCJAX_TEST_XLA_OPTIMIZED"] = "1"
    env["SRCJAX_CACHE"] = "0"
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    code = f"from {module} import *\n{statements}\n"
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"at XLA's default optimization level:\n{done.stdout}\n{done.stderr}"
