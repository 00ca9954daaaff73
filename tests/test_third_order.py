"""Derivatives of derivatives of programs with loops in helpers, against jax.

Regressions for three failures that ``tests/test_printed_modules_run.py`` had been skipping as
"does not apply" (it took every TranspileError for a transformation that does not apply):

- ``hessian`` of a function that calls a helper with a ``for`` loop: forward mode over the helper's
  backward half gave the saved ``range`` a tangent (``reversed(None)``); now the backward half gets
  the range back as a constant (``index_key``);
- a rolled loop popping saved values (``vjp(jacfwd(f))``, ``f`` with a loop, 8 basis vectors):
  a traced iteration that was thrown away (an inner loop that could not be rolled) left the saved
  values' segment half consumed;
- reverse mode over a ``hessian`` of a ``while`` counter loop: the bare ``_tape_dot.pop()`` of a
  counter's (absent) tangent got no cotangent entry, so later pops read the wrong ones; forward mode
  over it (``jacfwd(hessian(f))``) did not pop the tangent list in step.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax
from tests.written import numpy_and_jax

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

from tests.twins import JAX, jitted  # noqa: E402  (the oracle compiled once, not per primitive)

HELPER_LOOP = """
import numpy as np


def _sim(x, k):
    for _ in range(STEPS):
        x = x + 0.1 * np.sin(k * x)
    return x


def f(x, k):
    return np.sum(_sim(x, k) ** 2)
"""

SERIES = """
import math

import numpy as np


def f(x):
    return sum(x ** k / math.factorial(k) for k in range(5))
"""

WHILE_COUNTER = """
import numpy as np


def f(x):
    n = x.shape[0]
    total = x[0]
    i = 1
    while i < n:
        total = total + np.sin(x[i]) * x[i - 1] * i
        i += 1
    return total
"""


def _close(a: Any, b: Any) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("steps", [3, 40])  # unrolled, rolled
def test_hessian_and_third_derivatives_through_a_helper_loop(tmp_path: Any, steps: int) -> None:
    f, jf = numpy_and_jax(tmp_path, HELPER_LOOP.replace("STEPS", str(steps)), "helper_loop")
    x, k = np.linspace(0.1, 1.0, 3), np.float64(1.3)
    jx = JAX if steps < 10 else jax  # (40 unrolled steps: eager jax reuses one step's compiled primitives)
    _close(srcjax.hessian(f)(x, k), jx.hessian(jf)(x, k))
    _close(srcjax.jacfwd(srcjax.hessian(f))(x, k), jx.jacfwd(jax.hessian(jf))(x, k))


@pytest.mark.parametrize("n", [2, 8])
def test_vjp_of_jacfwd_of_a_loop(tmp_path: Any, n: int) -> None:
    f, jf = numpy_and_jax(tmp_path, SERIES, "series")
    x = np.linspace(0.1, 1.0, n)
    ct = np.arange(n * n, dtype=np.float64).reshape(n, n) / 7
    _, back = srcjax.vjp(srcjax.jacfwd(f), x)
    _close(back(ct)[0], jitted(lambda x, ct: jax.vjp(jax.jacfwd(jf), x)[1](ct)[0])(x, ct))


def test_reverse_over_a_hessian_of_a_while_counter_loop(tmp_path: Any) -> None:
    f, jf = numpy_and_jax(tmp_path, WHILE_COUNTER, "while_counter")
    x = np.linspace(0.1, 1.0, 4)
    ct = np.arange(16.0).reshape(4, 4) / 7
    _, back = srcjax.vjp(srcjax.hessian(f), x)
    _close(back(ct)[0], jitted(lambda x, ct: jax.vjp(jax.hessian(jf), x)[1](ct)[0])(x, ct))
    # forward mode over the discarded pop: its tangent list is popped in step (was: cannot unpack 4 values)
    _close(srcjax.jacfwd(srcjax.hessian(f))(x), JAX.jacfwd(jax.hessian(jf))(x))


HELPER_WHILE = """
import numpy as np


def _inner(v):
    s = v
    k = 0
    while k < 3:
        s = s * np.sin(s) + 0.5
        k += 1
    return s


def f(x):
    return np.sum(_inner(x) ** 2)
"""


def test_vmap_of_a_hessian_through_a_helper_loop(tmp_path: Any) -> None:
    """A batched helper's copy read the batch size of a saved value not bound yet (UNSET): IndexError."""
    f, jf = numpy_and_jax(tmp_path, HELPER_WHILE, "helper_while")
    xs = np.linspace(0.1, 0.9, 6).reshape(2, 3)
    _close(srcjax.vmap(srcjax.hessian(f))(xs), JAX.vmap(jax.hessian(jf))(xs))
