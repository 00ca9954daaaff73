"""jvp/jacfwd of a loop over an array's rows with a ``continue`` (or ``break``) on data (issue #15).

Forward mode walks the rows with their tangents' (``for v, v_dot in zip(x, x_dot)``); a loop with an exit on data
is rewritten as a loop over an index, which took only ``range(...)`` or one array's rows and refused the zip ("in a
loop srcjax cannot rewrite: it does not loop over range(...) or the rows of an array"). A zip of arrays is walked
by index now, each name its array's row. Oracles: jax (a loop over indices, jax's own twin cannot branch on data),
finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


def skip_negative(x):
    acc = 0.0
    for v in x:
        if v < 0:
            continue
        acc = acc + v ** 2
    return acc


def skip_negative_rows(x):
    acc = np.zeros(3)
    for v in x:
        if np.sum(v) < 0:
            continue
        acc = acc + np.sin(v) * v[0]
    return acc


def stop_at_large(x):
    acc = 0.0
    for v in x:
        if v > 1.8:
            break
        acc = acc + np.exp(v)
    return acc


def _twin(fn):
    """jax's version, written with the rows' masks (jax cannot branch on a traced value)."""
    if fn is skip_negative:
        return lambda x: jnp.sum(jnp.where(x < 0, 0.0, x ** 2))
    if fn is skip_negative_rows:
        return lambda x: jnp.sum(jnp.where((jnp.sum(x, axis=1) < 0)[:, None], 0.0, jnp.sin(x) * x[:, :1]), axis=0)
    return lambda x: jnp.sum(jnp.where(jnp.cumsum(x > 1.8) > 0, 0.0, jnp.exp(x)))


CASES = [(skip_negative, np.array([0.5, -1.0, 2.0, -0.3, 1.5])),
         (skip_negative_rows, np.random.default_rng(0).normal(size=(5, 3))),
         (stop_at_large, np.array([0.5, -1.0, 2.0, -0.3, 1.5]))]


@pytest.mark.parametrize(("fn", "x"), CASES, ids=[c[0].__name__ for c in CASES])
def test_forward_mode_of_a_rows_loop_with_an_exit_on_data(fn, x):
    t = np.random.default_rng(1).normal(size=x.shape)
    out, out_dot = srcjax.jvp(fn, (x,), (t,))
    want, want_dot = jax.jvp(_twin(fn), (x,), (t,))
    np.testing.assert_allclose(np.asarray(out), fn(x), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(out_dot), np.asarray(want_dot), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.jacfwd(fn)(x)), np.asarray(jax.jacfwd(_twin(fn))(x)),
                               rtol=1e-10, atol=1e-12)
    eps = 1e-6  # (central differences of the user's function run by NumPy)
    fd = (np.asarray(fn(x + eps * t)) - np.asarray(fn(x - eps * t))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(out_dot), fd, rtol=1e-6, atol=1e-8)


def test_vmap_of_jacfwd_of_a_rows_loop_with_a_continue_on_data():
    """vmap of the forward derivative walks ``zip(x, batch_rows(x_dot))``, a zip the test of an exit sees whole."""
    xb = np.random.default_rng(2).normal(size=(3, 5))
    got = srcjax.vmap(srcjax.jacfwd(skip_negative))(xb)
    np.testing.assert_allclose(np.asarray(got), np.asarray(jax.vmap(jax.jacfwd(_twin(skip_negative)))(xb)),
                               rtol=1e-10, atol=1e-12)


_FRESH = """
import sys, numpy as np, srcjax
sys.path.insert(0, {tests!r})
from test_jvp_rows_continue import skip_negative
x = np.array([0.5, -1.0, 2.0, -0.3, 1.5])
if {before}:
    srcjax.jvp(skip_negative, (x,), (x,))
print(np.asarray(srcjax.vmap(srcjax.jacfwd(skip_negative))(np.stack([x, 2 * x]))).tolist())
"""


@pytest.mark.parametrize("before", [False, True], ids=["fresh", "after_jvp"])
def test_vmap_of_jacfwd_does_not_depend_on_what_ran_before(before):
    """(session 44) In a fresh process the rows loop's rewrite ``range(min(len(x), len(x_dot)))`` reached vmap,
    which refused the builtin min() of two batched sizes; after a ``jvp`` of the same function (whose lowering had
    rewritten the loop in the shared program) it ran. Sizes of batched values are each example's: static."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    script = _FRESH.format(tests=str(Path(__file__).parent), before=before)
    env = dict(os.environ, SRCJAX_CACHE="0")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    x = np.array([0.5, -1.0, 2.0, -0.3, 1.5])
    want = np.asarray(jax.vmap(jax.jacfwd(_twin(skip_negative)))(np.stack([x, 2 * x])))
    np.testing.assert_allclose(np.array(eval(out.stdout.strip().splitlines()[-1])), want, rtol=1e-12)


@pytest.mark.parametrize("fn, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_printed_jacfwd_for_the_arguments_runs_under_numpy(fn, x):
    """(session 44) The source printed for example arguments called ``srcjax.lax.fori_loop`` (the rows loop with an
    exit on data, rewritten by the lowering) without ``import srcjax``: a NameError when run."""
    text = srcjax.source(srcjax.jacfwd(fn), x)
    ns: dict = {}
    exec(compile(text, "<printed>", "exec"), ns)
    got = ns[f"{fn.__name__}_jacfwd"](x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(srcjax.jacfwd(fn)(x)), rtol=1e-12, atol=1e-14)
