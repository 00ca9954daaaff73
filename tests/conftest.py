"""Test-session settings: the persistent compilation cache lives in a directory of this session's
(so runs do not share compiled programs with each other or with the user's cache); each test starts
with transformed objects of its own (``srcjax.jit(f)`` in one test is not the object another test made
and called with other signatures: tests count their executables; ``srcjax/reuse.py``)."""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator

import pytest

from tests import optimized_xla
from tests.cpu_durations import (  # noqa: F401 - hooks: pytest --cpu-durations=N
    pytest_addoption,
    pytest_runtest_call,
    pytest_runtest_logreport,
    pytest_runtest_setup,
    pytest_runtest_teardown,
    pytest_terminal_summary,
)

# XLA compiles the tests' programs (srcjax's and the jax oracles') fast, not into fast code (tests/optimized_xla.py:
# LLVM at optimization level 0, the LLVM-IR fusion emitters, one LLVM module per program; ~6x less CPU per
# compile): the suite is mostly XLA compiling small programs, and what the tests check (the StableHLO srcjax
# writes, its values to the tests' tolerances) does not depend on the machine code's speed.
# SRCJAX_TEST_XLA_OPTIMIZED=1, or an optimization level in XLA_FLAGS, keeps XLA's defaults; the checks bit for
# bit against jax's numbers run at XLA's defaults in a process of their own.
_flags = optimized_xla.fast_flags(dict(os.environ))
if _flags is not None:
    os.environ["XLA_FLAGS"] = _flags

if "SRCJAX_CACHE_DIR" not in os.environ:
    _dir = tempfile.mkdtemp(prefix="srcjax-test-cache-")
    os.environ["SRCJAX_CACHE_DIR"] = _dir
    atexit.register(shutil.rmtree, _dir, True)


def pytest_configure(config: pytest.Config) -> None:
    """srcjax's bytecode written once, before the tests start (in xdist's controller, before its workers): the
    interpreters the tests start (``python -m srcjax``, warm-cache runs, several devices or processes: dozens)
    then read it instead of each compiling srcjax's source (~0.7-1.5 CPU s a process), as they did under
    PYTHONDONTWRITEBYTECODE=1 only once some test's child started without that variable had written it.
    ``py_compile`` writes whatever that variable says; a read-only install is left as it is."""
    if hasattr(config, "workerinput"):
        return
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("srcjax")
    if spec is not None and spec.submodule_search_locations:
        compileall.compile_dir(list(spec.submodule_search_locations)[0], quiet=2)


@pytest.fixture(autouse=True)
def _own_transformed_objects() -> None:
    from srcjax import reuse

    reuse.forget()


@pytest.fixture(autouse=True, scope="module")
def _jax_oracles_released() -> Iterator[None]:
    """jax's compiled oracles released after each test module (``jax.clear_caches``): jax keeps every
    executable of a function that lives on (a test module's functions live until the process ends), and an
    xdist worker grew to ~5 GB by the end of the suite, nearly all jax's executables (639 jax executables
    against srcjax's 31 after four test files). The first 22 test files in one process: peak RSS 1974 ->
    980 MB, CPU 117.5 -> 112.1 s (nice'd, load ~16, 2026-12-07). srcjax itself is untouched."""
    yield
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.clear_caches()


def pytest_collection_finish(session: pytest.Session) -> None:
    """The objects alive once the tests are collected (imported modules: jax, srcjax, libcst, hypothesis;
    the test modules' globals) left out of the garbage collector's later passes (``gc.freeze``): its
    full collections scan what the tests made, not the whole import graph (test_vmap + test_custom in
    one process: 38.3 -> 36.7 CPU s). Nothing a test makes is frozen (tests/test_lifetimes.py)."""
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The default tier leaves the slowest cases of a few tests to the thorough tier (tests/tiers.py)."""
    from tests import tiers

    tiers.apply(items)
