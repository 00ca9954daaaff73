"""How XLA compiles in the tests. ``tests/conftest.py`` appends ``FAST`` to XLA_FLAGS (``SRCJAX_TEST_XLA_OPTIMIZED=1``,
or an optimization level already in XLA_FLAGS, keeps XLA's defaults): the suite is mostly XLA compiling small
programs, and what it checks (the StableHLO srcjax writes, its values to the tests' tolerances) does not
depend on how fast XLA's machine code runs. The exception is a comparison bit for bit with jax's numbers
(``tests/test_random.py``), whose last ulp can differ there: it runs in a process of its own at XLA's
defaults (:func:`run_optimized`).

``FAST``, measured on 150 of test_vmap_primitives' programs compiled in one process (CPU s, loaded
machine): XLA's defaults 27.5 (100 programs) ; LLVM at optimization level 0: 30.6 -> with XLA's older
LLVM-IR fusion emitters in place of the MLIR ones (``xla_cpu_use_fusion_emitters=false``) and one LLVM
module per program (``xla_cpu_parallel_codegen_split_count=1``): 5.2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LEVEL_0 = "--xla_backend_optimization_level=0"
FAST = (LEVEL_0, "--xla_cpu_use_fusion_emitters=false", "--xla_cpu_parallel_codegen_split_count=1")
# XLA aborts the process on a flag it does not know: the two emitter flags only with the jaxlib series they
# were measured with (the test extras pin it; a GPU machine may have another); LEVEL_0 is long-standing
_FAST_JAXLIB = ("0.10.",)


def _fast_for_this_jaxlib() -> tuple[str, ...]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("jaxlib")
    except PackageNotFoundError:
        return (LEVEL_0,)
    return FAST if v.startswith(_FAST_JAXLIB) else (LEVEL_0,)


def fast_flags(environ: dict[str, str]) -> str | None:
    """The XLA_FLAGS the tests compile with, or None to leave XLA_FLAGS as it is (XLA's defaults asked
    for, or an optimization level already there)."""
    flags = environ.get("XLA_FLAGS", "")
    if environ.get("SRCJAX_TEST_XLA_OPTIMIZED") == "1" or "xla_backend_optimization_level" in flags:
        return None
    return " ".join([flags, *_fast_for_this_jaxlib()]).strip()


def optimized() -> bool:
    """Whether this process compiles at XLA's default optimization level (XLA reads XLA_FLAGS once)."""
    return LEVEL_0 not in os.environ.get("XLA_FLAGS", "").split()


def run_optimized(module: str, statements: str, timeout: float = 300) -> None:
    """Run ``statements`` in the namespace of the test module ``module`` (``from module import *``) in a
    fresh process at XLA's defaults, without the persistent compilation cache (nothing there was compiled
    under these flags); its failure fails the caller with its output."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = " ".join(f for f in env.get("XLA_FLAGS", "").split() if f not in FAST)
    env["SRCJAX_TEST_XLA_OPTIMIZED"] = "1"
    env["SRCJAX_CACHE"] = "0"
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    code = f"from {module} import *\n{statements}\n"
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"at XLA's default optimization level:\n{done.stdout}\n{done.stderr}"
