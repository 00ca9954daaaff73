"""``srcjax.lax.scan`` / ``map`` / ``fori_loop`` whose carry, rows and stacked results are containers (an
LSTM's ``(h, c)`` carry with several stacked outputs, a dict of rows, a tuple of sequences as ``xs``) under
``jit``, ``grad``, ``jacfwd``, ``vmap`` and ``vmap(grad)``, against jax.

Reverse and forward mode write a scan out as a Python ``for`` (transforms/inline_lax.py); its stacked
results were one buffer, so a tuple of rows was refused ("a tuple of traced values where an array goes")
and a dict of rows was an internal error.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax
from srcjax import lax
from tests import twins

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)


def lstm_like(w, xs):
    def step(carry, x):
        h, c = carry
        h2 = np.tanh(h * w + x)
        c2 = c + h2
        return (h2, c2), (h2 * 2.0, c2)
    (h, c), (ys, zs) = lax.scan(step, (np.zeros(3), np.ones(3)), xs)
    return np.sum(h) + np.sum(c) + np.sum(ys) + np.sum(zs ** 2)


def dict_rows(w, xs):
    def step(carry, x):
        h2 = np.tanh(carry["h"] * w + x)
        out = {"y": h2, "pair": (h2 * w, carry["c"])}
        return {"h": h2, "c": carry["c"] + h2}, out
    last, ys = lax.scan(step, {"h": np.zeros(3), "c": np.ones(3)}, xs, reverse=True)
    return np.sum(last["c"]) + np.sum(ys["y"] ** 2) + np.sum(ys["pair"][0] * ys["pair"][1])


def tuple_xs(w, xs):
    def step(h, x):
        u, v = x
        h2 = np.tanh(h * w + u * v)
        return h2, (h2, u)
    h, (ys, us) = lax.scan(step, np.zeros(3), (xs, np.cos(xs)))
    return np.sum(h) + np.sum(ys * us)


def mapped_pair(w, xs):
    ys, zs = lax.map(lambda x: (np.tanh(x * w), x * w * w), xs)
    return np.sum(ys) + np.sum(zs ** 2)


def fori_pair(w, xs):
    def body(i, carry):
        h, c = carry
        h2 = np.tanh(h * w + xs[i])
        return h2, c + h2
    h, c = lax.fori_loop(0, 4, body, (np.zeros(3), np.ones(3)))
    return np.sum(h) + np.sum(c * c)


def _close(actual: Any, expected: Any, who: str) -> None:
    for a, e in zip(jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-9, atol=1e-12, err_msg=who)


@pytest.mark.parametrize("f", [lstm_like, dict_rows, tuple_xs, mapped_pair, fori_pair], ids=lambda f: f.__name__)
def test_tree_scan_against_jax(f):
    rng = np.random.default_rng(0)
    w, xs = rng.normal(size=3), rng.normal(size=(4, 3))
    batch = rng.normal(size=(2, 4, 3))
    twin = twins.jax_twin(f, lax=jax.lax)
    _close(srcjax.jit(f)(w, xs), jax.jit(twin)(w, xs), "jit")
    _close(srcjax.grad(f)(w, xs), twins.JAX.grad(twin)(w, xs), "grad")
    _close(srcjax.grad(f, argnums=1)(w, xs), twins.JAX.grad(twin, argnums=1)(w, xs), "grad xs")
    _close(srcjax.jacfwd(f)(w, xs), twins.JAX.jacfwd(twin)(w, xs), "jacfwd")
    _close(srcjax.vmap(f, in_axes=(None, 0))(w, batch), twins.JAX.vmap(twin, in_axes=(None, 0))(w, batch), "vmap")
    _close(srcjax.vmap(srcjax.grad(f), in_axes=(None, 0))(w, batch),
           twins.JAX.vmap(jax.grad(twin), in_axes=(None, 0))(w, batch), "vmap(grad)")


def test_tree_rows_stay_one_buffer_per_array():
    """The generated derivative writes each stacked output into its own buffer (no list of rows
    saved on the tape: memory stays linear in the sequence's length)."""
    text = srcjax.source(srcjax.grad(lstm_like))
    assert text.count("np.zeros((n,) + np.shape(") == 2, text
    assert "_tape.append(ys" not in text, text


def xs_by_name(w, ab):
    def step(h, x):
        h2 = np.tanh(h * w + x[0] * x[1])
        return h2, None
    h, _ = lax.scan(step, np.zeros(3), ab)
    return np.sum(h)


def test_container_xs_by_name_is_differentiated_not_wrong():
    """A container ``xs`` passed by name was indexed as a sequence under grad (``xs[i]`` the i-th array,
    ``len(xs)`` its number of arrays): a silent wrong gradient. Its rows are now every leaf's rows
    (tree_leaves/from_leaves), as jax scans a pytree."""
    rng = np.random.default_rng(1)
    w, a, b = rng.normal(size=3), rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    twin = twins.jax_twin(xs_by_name, lax=jax.lax)
    _close(srcjax.jit(xs_by_name)(w, (a, b)), xs_by_name(w, (a, b)), "jit")
    _close(srcjax.grad(xs_by_name)(w, (a, b)), jax.grad(twin)(w, (a, b)), "grad of a container xs")
    _close(srcjax.grad(xs_by_name, argnums=1)(w, (a, b)), jax.grad(twin, argnums=1)(w, (a, b)), "grad by xs")
    _close(srcjax.grad(xs_by_name)(w, np.stack([a, b], axis=1)),
           jax.grad(twin)(w, np.stack([a, b], axis=1)), "grad of an array xs")
