"""``srcjax.lax``'s functions that JAX users call besides control flow (``clamp``, ``rsqrt``, ``integer_pow``,
``exp``/``sin``/... , ``broadcast_in_dim``, ``dot_general``, ``pad``, ``sort``, ``top_k``, ``cumsum``/...,
``argmax``, ``reduce_sum``/..., ``convert_element_type``, the shape functions, ``map``) against jax's: each program
compiled, run as the NumPy reference and as its generated source, differentiated (grad where its output
is floating) and batched (vmap over its first argument; vmap of grad), each against jax.

Where JAX's semantics differ from NumPy's, the programs pin JAX's: ``round`` of halves (away from zero),
``div``/``rem`` of negative integers (truncation, the dividend's sign), ``clamp``'s zero derivative at a
bound, integer reductions keeping their dtype, ``top_k``'s ties and NaNs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax
from tests import twins, written

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

def elementwise(x, y):
    a = srcjax.lax.exp(x) + srcjax.lax.log(y) + srcjax.lax.tanh(x) * srcjax.lax.sin(x) - srcjax.lax.cos(y)
    b = srcjax.lax.rsqrt(y) + srcjax.lax.logistic(x) + srcjax.lax.integer_pow(x, 3) + srcjax.lax.integer_pow(y, -2)
    c = srcjax.lax.square(x) + srcjax.lax.sqrt(y) + srcjax.lax.atan2(x, y) + srcjax.lax.neg(srcjax.lax.abs(x))
    d = srcjax.lax.sub(srcjax.lax.expm1(x), srcjax.lax.log1p(y)) * srcjax.lax.sign(x) + srcjax.lax.pow(y, x)
    e = srcjax.lax.select(srcjax.lax.gt(x, y), srcjax.lax.asinh(x), srcjax.lax.atan(y)) + srcjax.lax.cbrt(x)
    return a + b + c + d + e


def clamped(x, lo, hi):
    return srcjax.lax.clamp(lo, x * 2.0, hi) ** 2


def rounding(x):
    return (srcjax.lax.round(x), srcjax.lax.round(x, 1), srcjax.lax.floor(x), srcjax.lax.ceil(x),
            srcjax.lax.is_finite(x), srcjax.lax.round(x, srcjax.lax.RoundingMethod.TO_NEAREST_EVEN),
            srcjax.lax.round(x, rounding_method=srcjax.lax.RoundingMethod.AWAY_FROM_ZERO))


def integer_division(i, j):
    return srcjax.lax.div(i, j), srcjax.lax.rem(i, j), srcjax.lax.rem(i * 1.5, j * 1.0), srcjax.lax.div(i * 1.0, j * 1.0)


def shapes(x):
    a = srcjax.lax.broadcast_in_dim(x, (2, 3, 4), (1, 2))
    b = srcjax.lax.expand_dims(x, (0, 2))
    c = srcjax.lax.squeeze(b, (0,))
    d = srcjax.lax.concatenate([x, x * 2.0], 1)
    e = srcjax.lax.transpose(x, (1, 0))
    f = srcjax.lax.reshape(x, (4, 3), (1, 0))
    g = srcjax.lax.rev(x, (0, 1))
    h = srcjax.lax.broadcast(x, (2,))
    k = srcjax.lax.collapse(a, 1)
    return a * 1.5, c, d, e, f * f, g, h, k


def static_slices(x):
    return (srcjax.lax.slice(x, (0, 1), (2, 4), (1, 2)), srcjax.lax.slice(x, (1, 0), (3, 4)),
            srcjax.lax.slice_in_dim(x, -3, None, axis=1), srcjax.lax.slice_in_dim(x, 0, -1, 2),
            srcjax.lax.index_in_dim(x, -1), srcjax.lax.index_in_dim(x, 2, axis=1, keepdims=False))


def static_slices_loss(x):
    a, b, c, d, e, f = static_slices(x)
    return np.sum(a ** 2) + np.sum(b[:, 1:] * c[:2]) + np.sum(np.sin(d)) + np.sum(e ** 3) + np.sum(f * f)


def padded(x):
    return (srcjax.lax.pad(x, 0.5, [(1, 2, 1), (0, -1, 0)]), srcjax.lax.pad(x, -1.0, [(-1, 0, 2), (2, 0, 1)]),
            srcjax.lax.pad(x * x, 0.0, [(0, 0, 0), (1, 1, 0)]))


def contractions(x, w):
    a = srcjax.lax.dot_general(x, w, (((1,), (0,)), ((), ())))
    b = srcjax.lax.dot_general(w, x, (((0,), (1,)), ((), ())))
    c = srcjax.lax.dot(x, w)
    d = srcjax.lax.dot(x[0], w[:, 0])
    p = x[None] * w.T[:, None]
    e = srcjax.lax.dot_general(p, p * 2.0, (((2,), (2,)), ((0,), (0,))))
    return a, b, c, d, e


def reductions(x):
    return (srcjax.lax.reduce_sum(x, (0,)), srcjax.lax.reduce_max(x, (1,)), srcjax.lax.reduce_min(x, (0, 1)),
            srcjax.lax.reduce_prod(x, (1,)), srcjax.lax.cumsum(x, 1), srcjax.lax.cumsum(x, 0, reverse=True),
            srcjax.lax.cumprod(x, 1), srcjax.lax.cummax(x, 0), srcjax.lax.cummin(x, 1, reverse=True))


def logsumexps(x):
    return srcjax.lax.cumlogsumexp(x * 300.0, 1), srcjax.lax.cumlogsumexp(x, 0, reverse=True)


def integer_reductions(i):
    return (srcjax.lax.reduce_sum(i, (0,)), srcjax.lax.cumsum(i, 0), srcjax.lax.argmax(i, 0, np.int32),
            srcjax.lax.argmin(i, 1, np.int64), srcjax.lax.reduce_and(i > 0, (0,)), srcjax.lax.reduce_or(i > 3, (1,)),
            srcjax.lax.convert_element_type(i, np.float32), srcjax.lax.iota(np.int32, 5),
            srcjax.lax.full((2, 3), 7, np.int8), srcjax.lax.full_like(i, 3))


def ordering(x, y):
    values, indices = srcjax.lax.top_k(x, 3)
    keys, vals = srcjax.lax.sort_key_val(x, y)
    a, b = srcjax.lax.sort((x, y), 0, True, 1)
    return srcjax.lax.sort(x), values * y[:, :3], indices, keys, vals, a, b, srcjax.lax.sort(x * y, 0)


def row_energy(r):
    return np.sum(np.tanh(r) ** 2)


def mapped(x, w):
    return srcjax.lax.map(row_energy, x * w), srcjax.lax.map(lambda r: np.sin(r) * w, x, batch_size=2)


def mapped_tree(x):
    return srcjax.lax.map(lambda p: (p["u"] * 2.0, np.sum(p["v"])), {"u": x, "v": x * x})


def mapped_loss(x, w):
    ys, zs = mapped(x, w)
    return np.sum(ys) + np.sum(zs ** 2)


def elementwise_loss(x, y):
    return np.sum(elementwise(x, y) ** 2)


def clamped_loss(x, lo, hi):
    return np.sum(clamped(x, lo, hi))


def shapes_loss(x):
    a, c, d, e, f, g, h, k = shapes(x)
    return np.sum(a * a) + np.sum(c ** 3) + np.sum(d * np.cos(d)) + np.sum(e[0]) + np.sum(f[1:]) + np.sum(g) * np.sum(k[0] ** 2)


def padded_loss(x):
    a, b, c = padded(x)
    return np.sum(a ** 2) + np.sum(b * np.arange(b.size).reshape(b.shape)) + np.sum(np.sin(c))


def contractions_loss(x, w):
    a, b, c, d, e = contractions(x, w)
    return np.sum(a * b.T) + np.sum(np.tanh(c)) + d ** 2 + np.sum(e ** 2)


def reductions_loss(x):
    a, b, c, d, e, f, g, h, k = reductions(x)
    return (np.sum(a ** 2) + np.sum(b * c) + np.sum(d) + np.sum(np.sin(e)) + np.sum(f * g) + np.sum(h ** 3)
            + np.sum(np.cos(k)))


def logsumexps_loss(x):
    m, n = logsumexps(x)
    return np.sum(m / 300.0) + np.sum(n * n)


def ordering_loss(x, y):
    s, values, indices, keys, vals, a, b, t = ordering(x, y)
    return np.sum(s * np.arange(4.0)) + np.sum(values ** 2) + np.sum(keys * vals) + np.sum(a * b) + np.sum(t ** 3)


rng = np.random.default_rng(0)
X34 = rng.uniform(-1.0, 1.0, (3, 4))
Y34 = rng.uniform(0.5, 2.0, (3, 4))
TIES = np.array([[1.0, np.nan, 1.0, 3.0], [2.0, 2.0, -1.0, 2.0], [0.5, -0.5, 0.5, 4.0]])
I34 = np.array([[-7, 3, 5, 0], [7, -3, -5, 2], [1, 4, -8, 6]])
J34 = np.array([[2, -2, 3, 1], [-2, 2, 2, -3], [3, 3, 3, 4]])

CASES = [  # (program, arguments, its scalar loss for grad (None: no grad), the arguments grad differentiates)
    (elementwise, (X34, Y34), elementwise_loss, (0, 1)),
    (clamped, (np.array([-1.0, -0.25, 0.0, 0.2, 0.5, 0.9]), np.full(6, -0.5), np.ones(6)), clamped_loss, (0, 1, 2)),
    (mapped, (X34, Y34[0]), mapped_loss, (0, 1)),
    (mapped_tree, (X34,), None, ()),
    (rounding, (np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.4, -2.7, np.inf]),), None, ()),
    (integer_division, (I34, J34), None, ()),
    (shapes, (X34,), shapes_loss, (0,)),
    (static_slices, (X34,), static_slices_loss, (0,)),
    (padded, (X34,), padded_loss, (0,)),
    (contractions, (X34, Y34.T), contractions_loss, (0, 1)),
    (reductions, (X34,), reductions_loss, (0,)),
    (logsumexps, (X34,), logsumexps_loss, (0,)),
    (integer_reductions, (I34,), None, ()),
    (ordering, (TIES, Y34), None, ()),
    (ordering, (X34, Y34), ordering_loss, (0, 1)),
]


VMAP_GRAD = {"clamped", "ordering", "mapped"}  # (the others' vmap(grad) with SRCJAX_HYPOTHESIS=thorough)


def _close(actual: Any, expected: Any, who: str) -> None:
    got, want = jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)
    assert len(got) == len(want), f"{who}: {len(got)} outputs, jax {len(want)}"
    for k, (a, e) in enumerate(zip(got, want)):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape, f"{who}[{k}]: shape {a.shape} != {e.shape}"
        if e.dtype.kind in "iub":
            assert a.dtype == e.dtype, f"{who}[{k}]: dtype {a.dtype} != jax's {e.dtype}"
            np.testing.assert_array_equal(a, e, err_msg=f"{who}[{k}]")
        else:
            np.testing.assert_allclose(a, e, rtol=1e-9, atol=1e-12, err_msg=f"{who}[{k}]")


@pytest.mark.parametrize("fn, args, loss, argnums", CASES, ids=[f"{c[0].__name__}-{k}" for k, c in enumerate(CASES)])
def test_lax_function_matches_jax(fn: Any, args: Any, loss: Any, argnums: Any) -> None:
    twin = twins.jax_twin(fn, helpers=[row_energy])
    want = jax.jit(twin)(*args)
    _close(fn(*args), want, "the NumPy reference")
    _close(srcjax.jit(fn)(*args), want, "compiled")
    _close(srcjax.numpy_function(fn)(*args), want, "generated source run by NumPy")
    batch = tuple(np.stack([a, a[::-1] * 2]) if k == 0 else a for k, a in enumerate(args))
    axes = (0,) + (None,) * (len(args) - 1)
    # (jax's oracles jitted: one compilation each, not one per primitive jax's eager mode dispatches)
    _close(srcjax.vmap(fn, in_axes=axes)(*batch), twins.JAX.vmap(twin, in_axes=axes)(*batch), "vmap")
    if loss is None:
        return
    grad = srcjax.grad(loss, argnums=argnums)
    jgrad = jax.grad(twins.jax_twin(loss, helpers=[row_energy, fn]), argnums=argnums)
    _close(grad(*args), twins.jitted(jgrad)(*args), "grad")
    if written.THOROUGH or fn.__name__ in VMAP_GRAD:
        _close(srcjax.vmap(grad, in_axes=axes)(*batch), twins.JAX.vmap(jgrad, in_axes=axes)(*batch), "vmap(grad)")


def test_library_modules_shadow_no_builtin():
    """Generated code in srcjax's transpiled modules calls builtins (``x[a:b]`` of a helper's derivative is
    written ``slice(a, b)``) and resolves them in that module: none may define a builtin's name
    (``srcjax.lax.slice`` and ``round`` are ``lax_numpy.lax_slice`` and ``lax_round``; a ``slice`` there
    made every derivative of a helper in it fail)."""
    import builtins
    import importlib

    from srcjax.frontend.resolve import LIBRARY_MODULES

    for name in LIBRARY_MODULES:
        names = vars(importlib.import_module(name))
        shadowing = sorted(n for n, v in names.items() if hasattr(builtins, n) and v is not getattr(builtins, n)
                           and not n.startswith("__"))
        assert not shadowing, f"{name} defines {shadowing}"
