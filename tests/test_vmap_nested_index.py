"""vmap of batched source whose indexing key is batched again (transforms/batch_nested.py).

``vmap(vmap(f))`` of a gather or scatter by a mapped index: the inner vmap writes ``batch_index``/
``batch_getitem``/``batch_index_update``/``batch_index_add``, and the outer one batches their key again;
the two batch axes are merged, the helper runs once, and the result is split. Checked against a double
loop over examples and ``jax.vmap(jax.vmap(...))`` for every combination of mapped arguments."""

from __future__ import annotations

import itertools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax

jax.config.update("jax_enable_x64", True)


def gather(x, i):
    return x[i] * 2.0


def gather_rows(m, i):
    return m[i, 1:] + m[0, i]


def scatter(x, i, v):
    return srcjax.lax.index_update(x, i, v)


def j_scatter(x, i, v):
    return x.at[i].set(v)


def add_at(x, i, v):
    y = x * 1.0
    y[i] += v
    return y


def j_add_at(x, i, v):
    return (x * 1.0).at[i].add(v)


B1, B2 = 3, 2
CASES = [(gather, gather, ((5,), ()), np.float64), (gather_rows, gather_rows, ((4, 4), ()), np.float64),
         (scatter, j_scatter, ((5,), (), ()), np.float64), (add_at, j_add_at, ((5,), (), ()), np.float64)]


def _arg(r: np.random.Generator, shape: tuple[int, ...], lead: tuple[int, ...], index: bool) -> np.ndarray:
    if index:
        return r.integers(0, 4, size=lead + shape)
    return r.standard_normal(lead + shape)


@pytest.mark.parametrize(("fn", "jfn", "shapes", "dt"), CASES, ids=[c[0].__name__ for c in CASES])
def test_vmap_of_vmap_with_a_mapped_index(fn: Any, jfn: Any, shapes: Any, dt: Any) -> None:
    r = np.random.default_rng(3)
    n = len(shapes)
    for outer, inner in itertools.product(itertools.product([0, None], repeat=n), repeat=2):
        if 0 not in outer or 0 not in inner or outer[1] is None:  # (the index mapped by the outer vmap)
            continue
        args = []
        for k, s in enumerate(shapes):
            lead = ((B1,) if outer[k] == 0 else ()) + ((B2,) if inner[k] == 0 else ())
            args.append(_arg(r, s, lead, index=(k == 1)))
        got = srcjax.vmap(srcjax.vmap(fn, in_axes=inner), in_axes=outer)(*args)
        want = jax.vmap(jax.vmap(jfn, in_axes=inner), in_axes=outer)(*map(jnp.asarray, args))
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, err_msg=f"{outer} {inner}")


def test_vmap_of_jacfwd_of_a_gather_by_a_mapped_index() -> None:
    def f(x, i):
        return np.sin(x[i]) * x

    x = np.random.default_rng(1).standard_normal((4, 5))
    i = np.array([0, 3, 1, 4])
    got = srcjax.vmap(srcjax.jacfwd(f))(x, i)
    want = jax.vmap(jax.jacfwd(lambda x, i: jnp.sin(x[i]) * x))(x, i)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)
