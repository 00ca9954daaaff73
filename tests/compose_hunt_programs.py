"""Small realistic programs for the issue #15 hunt (tests/test_compose_hunt.py): loops in helpers, a while
on data, branches, dict/list/NamedTuple parameters, np.diff, cumsum, where, slicing updates, reductions with
axis/keepdims. jax's oracle runs each one's own source with ``np`` as jax.numpy (tests/twins.py
``jax_twin``); where jax cannot trace its Python control flow on data, a hand-written twin ``<name>_j``
(lax.cond, lax.while_loop)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover - the tests skip without jax
    jax = jnp = None


def _poly(x, k):
    s = 0.0
    for i in range(k):
        s = s + x ** (i + 1) / (i + 1)
    return s


def poly_helper(x):
    return np.sum(np.tanh(_poly(x, 3)) * x)




def branchy(x):
    if np.sum(x) > 0.0:
        y = np.sin(x) * x
    else:
        y = np.cos(x) - x
    return np.sum(y ** 2)


def branchy_j(x):
    y = jax.lax.cond(jnp.sum(x) > 0.0, lambda v: jnp.sin(v) * v, lambda v: jnp.cos(v) - v, x)
    return jnp.sum(y ** 2)


def dict_params(p, x):
    h = np.tanh(x @ p["w"] + p["b"])
    return np.sum(h * h, axis=-1, keepdims=True).sum() + np.mean(p["w"] ** 2)



def list_params(ws, x):
    h = x
    for w in ws:
        h = np.sin(h @ w)
    return np.sum(h)



class Layer(NamedTuple):
    w: np.ndarray
    b: np.ndarray


def tuple_params(p, x):
    return np.sum(np.exp(-(x * p.w + p.b) ** 2))



def diff_cumsum(x):
    d = np.diff(x)
    c = np.cumsum(x)
    return np.sum(d * d) + np.sum(np.sin(c)) * x[0]



def where_clip(x):
    y = np.where(x > 0.2, x ** 2, np.sin(x))
    return np.sum(y * np.max(x, axis=0, keepdims=True))



def slice_update(x):
    y = x.at[1:3].set(x[1:3] * 2.0)
    z = y.at[0].add(np.sum(x ** 2))
    return np.sum(np.tanh(z) * x)



def while_counted(x):
    it = 0
    while it < 5 and np.sum(x * x) < 10.0:
        x = x * 1.3 + 0.1
        it = it + 1
    return np.sum(np.sin(x))


def while_counted_j(x):
    def cond(c):
        return (c[1] < 5) & (jnp.sum(c[0] * c[0]) < 10.0)

    def body(c):
        return c[0] * 1.3 + 0.1, c[1] + 1
    x, _ = jax.lax.while_loop(cond, body, (x, 0))
    return jnp.sum(jnp.sin(x))


def vector_out(x):
    return np.cumsum(np.sin(x)) * np.sum(x ** 2, keepdims=True)



def aux_out(x):
    y = np.tanh(x)
    return np.sum(y * x), {"mean": np.mean(y)}



def two_args(x, y):
    return np.sum(np.sin(x) * np.cos(y) + x * y ** 2)
