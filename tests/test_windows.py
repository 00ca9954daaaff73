"""``srcjax.lax.conv_general_dilated`` (with ``conv`` and ``conv_transpose``) and ``srcjax.lax.reduce_window``
against jax (forward, ``jax.grad``, ``jax.jvp``, ``jax.vmap``) and finite differences, run by XLA and as
generated source by NumPy; pooling idioms; a small CNN loss (its gradient's source, per-example gradients,
a second derivative); hypothesis over shapes, strides, padding and dilations; located errors.
The registry-driven cases are in test_primitives.py, test_ad_rules.py and test_vmap_primitives.py.

Tier rule: the default run checks every case of the tables and 6 drawn convolutions and window reductions, 4
complex convolutions (one and two images, one and two feature groups); ``SRCJAX_HYPOTHESIS=thorough``
draws 60 of each and 80 complex ones. Oracles cost XLA compilations: a convolution's JVP is checked by
bilinearity against the NumPy run, jax's pullbacks run jitted (one compilation for several values)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import srcjax
from tests import written
from tests.fd import central_fd
from tests.twins import JAX, jitted

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

_SCALE = 10 if os.environ.get("SRCJAX_HYPOTHESIS") == "thorough" else 1
rng = np.random.default_rng(0)


def define(body: str, params: str = "x, w", jax_twin: bool = False) -> Any:
    """``def f(params): return body``; ``lax.`` in ``body`` is srcjax.lax (jax.lax in the jax twin)."""
    if jax_twin:
        f = written.define(body.replace("lax.", "jax.lax."), params, jnp, tag="test_windows")
        f.__globals__["jax"] = jax
    else:
        f = written.define(body.replace("lax.", "srcjax.lax."), params, np, tag="test_windows")
        f.__globals__["srcjax"] = srcjax
    return f


def pair(body: str, params: str = "x, w") -> tuple[Any, Any]:
    return define(body, params), define(body, params, jax_twin=True)


def close(got: Any, want: Any, rtol: float = 1e-10) -> None:
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    finite = np.abs(w[np.isfinite(w)])
    scale = max(1.0, float(np.max(finite))) if finite.size else 1.0
    np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale)


def three_ways(body: str, *args: Any, rtol: float = 1e-10) -> None:
    """XLA, the generated source run by NumPy and the user's function run by NumPy agree with jax."""
    f, fj = pair(body, ", ".join("xwvu"[: len(args)]))
    want = jax.jit(fj)(*args)
    for got in (srcjax.compile(f)(*args), srcjax.compile(f, device="numpy")(*args), f(*args)):
        close(got, want, rtol)


# -- forward, against jax -------------------------------------------------------------------------------
CONVS = [  # (call, lhs shape, rhs shape)
    ("lax.conv_general_dilated(x, w, (1, 1), 'VALID')", (2, 3, 7, 6), (4, 3, 3, 2)),
    ("lax.conv_general_dilated(x, w, (2, 1), 'SAME')", (2, 3, 7, 6), (4, 3, 3, 2)),
    ("lax.conv_general_dilated(x, w, (2, 3), 'SAME_LOWER', rhs_dilation=(2, 1))", (2, 3, 7, 6), (4, 3, 3, 2)),
    ("lax.conv_general_dilated(x, w, (1, 2), [(1, -1), (2, 0)], (2, 3), (1, 2))", (2, 3, 7, 6), (4, 3, 3, 2)),
    ("lax.conv_general_dilated(x, w, (1, 1), 'VALID', feature_group_count=2)", (2, 6, 7, 6), (4, 3, 3, 2)),
    ("lax.conv_general_dilated(x, w, (1, 1), 'SAME', feature_group_count=3)", (1, 3, 5, 5), (6, 1, 3, 3)),
    ("lax.conv_general_dilated(x, w, (1, 1), 'VALID', batch_group_count=2)", (4, 3, 7, 6), (4, 3, 3, 2)),
    ("lax.conv_general_dilated(x, w, (1, 1), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'))",
     (2, 7, 6, 3), (3, 2, 3, 4)),
    ("lax.conv_general_dilated(x, w, (2, 1), 'SAME', dimension_numbers=('NHWC', 'WHIO', 'NCHW'))",
     (2, 7, 6, 3), (3, 2, 3, 4)),
    ("lax.conv_general_dilated(x, w, (2,), 'SAME')", (2, 3, 9), (4, 3, 3)),
    ("lax.conv_general_dilated(x, w, (1,), 'VALID', dimension_numbers=('NWC', 'WIO', 'NWC'))", (2, 9, 3), (3, 3, 5)),
    ("lax.conv_general_dilated(x, w, (1, 2, 1), 'SAME')", (2, 3, 5, 4, 4), (4, 3, 3, 2, 2)),
    ("lax.conv_general_dilated(x, w, (1,), 'VALID')", (2, 3, 2), (4, 3, 5)),  # (an empty output)
    ("lax.conv(x, w, (1, 2), 'SAME')", (2, 3, 6, 5), (4, 3, 3, 3)),
    ("lax.conv_transpose(x, w, (2, 1), 'SAME')", (2, 5, 6, 3), (3, 3, 3, 4)),
    ("lax.conv_transpose(x, w, (2, 2), 'VALID', rhs_dilation=(1, 2))", (2, 5, 6, 3), (3, 3, 3, 4)),
    ("lax.conv_transpose(x, w, (1, 2), [(1, 2), (0, 1)], transpose_kernel=True)", (2, 5, 6, 3), (3, 3, 5, 3)),
]


@pytest.mark.parametrize("body, ls, rs", CONVS)
def test_convolutions_against_jax(body: str, ls: Any, rs: Any) -> None:
    three_ways(body, rng.normal(size=ls), rng.normal(size=rs))


def test_float32_and_integers() -> None:
    """float32; integers; operands of two dtypes are promoted as NumPy promotes (JAX refuses them)."""
    x, w = rng.normal(size=(2, 3, 6, 5)), rng.normal(size=(4, 3, 3, 3))
    f = define("lax.conv_general_dilated(x, w, (1, 1), 'SAME')")
    got = srcjax.compile(f)(x.astype(np.float32), w)
    assert np.asarray(got).dtype == np.float64 == f(x.astype(np.float32), w).dtype
    close(got, jax.lax.conv_general_dilated(x.astype(np.float32).astype(np.float64), w, (1, 1), "SAME"), 1e-6)
    three_ways("lax.conv_general_dilated(x, w, (1, 1), 'SAME')", x.astype(np.float32), w.astype(np.float32),
               rtol=2e-6)
    xi, wi = rng.integers(-4, 5, size=(2, 3, 6, 5)), rng.integers(-4, 5, size=(4, 3, 3, 3))
    f = define("lax.conv_general_dilated(x, w, (2, 1), 'SAME')")
    got = srcjax.compile(f)(xi, wi)
    assert np.asarray(got).dtype == np.int64
    np.testing.assert_array_equal(got, jax.lax.conv_general_dilated(xi, wi, (2, 1), "SAME"))


WINDOWS = [  # (call, operand shape)
    ("lax.reduce_window(x, 0.0, lax.add, (2, 2), (2, 2), 'VALID')", (5, 6)),
    ("lax.reduce_window(x, -np.inf, lax.max, (2, 3), (1, 2), 'SAME')", (5, 6)),
    ("lax.reduce_window(x, np.inf, lax.min, (3, 2), (2, 1), [(1, 0), (2, -1)], (2, 1), (1, 2))", (5, 6)),
    ("lax.reduce_window(x, 1.0, lax.mul, (1, 3, 3), (1, 2, 2), 'SAME_LOWER', None, (1, 2, 1))", (2, 5, 6)),
    ("lax.reduce_window(x, 1.5, lax.add, (2, 3), (1, 2), 'SAME')", (5, 6)),  # (init once; padding skipped)
    ("lax.reduce_window(x, 0.0, np.add, (1, 1, 3, 3), (1, 1, 1, 1), 'SAME')", (2, 3, 5, 4)),
    ("lax.reduce_window(x, -np.inf, np.maximum, (1, 2, 2, 1), (1, 2, 2, 1), 'VALID')", (2, 6, 4, 3)),
]


@pytest.mark.parametrize("body, shape", WINDOWS)
def test_window_reductions_against_jax(body: str, shape: Any) -> None:
    three_ways(body, rng.normal(size=shape))


# -- pooling idioms (docs/numpy.md shows these) -----------------------------------------------------------
def avg_pool(x: Any) -> Any:
    """2x2 average pooling of NHWC images."""
    return srcjax.lax.reduce_window(x, 0.0, srcjax.lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0


def max_pool(x: Any) -> Any:
    """3x3 max pooling with stride 2, 'SAME' padding, of NHWC images."""
    return srcjax.lax.reduce_window(x, -np.inf, srcjax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")


def test_pooling_idioms() -> None:
    x = rng.normal(size=(2, 6, 7, 3))
    want_avg = jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0
    want_max = jax.lax.reduce_window(x, -np.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
    close(srcjax.compile(avg_pool)(x), want_avg)
    close(srcjax.compile(max_pool)(x), want_max)
    close(avg_pool(x), want_avg)
    g = srcjax.grad(lambda x: np.sum(max_pool(x) ** 2) + np.sum(np.sin(avg_pool(x))))(x)
    gj = JAX.grad(lambda x: jnp.sum(jax.lax.reduce_window(x, -np.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1),
                                                            "SAME") ** 2)
                  + jnp.sum(jnp.sin(want_avg_fn(x))))(x)
    close(g, gj)


def want_avg_fn(x: Any) -> Any:
    return jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0


def test_max_pool_ties_go_to_the_first_maximum() -> None:
    """As JAX (select_and_scatter_add): a window's cotangent goes to its first maximal element only."""
    x = np.array([[1.0, 3.0, 3.0, 0.0], [3.0, 2.0, -np.inf, -np.inf]])
    f, fj = pair("np.sum(lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1), 'VALID') * w)", "x, w")
    w = np.array([[1.0, 10.0, 100.0]])
    want = JAX.grad(fj)(x, w)
    close(srcjax.grad(f)(x, w), want)
    close(srcjax.compile(srcjax.grad(f), device="numpy")(x, w), want)


# -- derivatives: a small CNN, against jax and finite differences -----------------------------------------
def cnn(x: Any, w1: Any, w2: Any, v: Any) -> Any:
    """Two NHWC convolutions with a max pool and a global average pool, a linear head, a squared loss."""
    h = srcjax.lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    h = np.tanh(h)
    h = srcjax.lax.reduce_window(h, -np.inf, srcjax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    h = srcjax.lax.conv_general_dilated(h, w2, (2, 2), [(1, 1), (0, 1)], rhs_dilation=(1, 2),
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
    h = np.maximum(h, 0.1 * h)
    feats = np.mean(h, axis=(1, 2))
    return np.sum((feats @ v) ** 2)


def cnn_jax(x: Any, w1: Any, w2: Any, v: Any) -> Any:
    h = jax.lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    h = jnp.tanh(h)
    h = jax.lax.reduce_window(h, -np.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    h = jax.lax.conv_general_dilated(h, w2, (2, 2), [(1, 1), (0, 1)], rhs_dilation=(1, 2),
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    h = jnp.maximum(h, 0.1 * h)
    feats = jnp.mean(h, axis=(1, 2))
    return jnp.sum((feats @ v) ** 2)


def cnn_args() -> tuple[np.ndarray, ...]:
    r = np.random.default_rng(1)
    return (r.normal(size=(2, 8, 8, 2)), r.normal(size=(3, 3, 2, 4)) * 0.5, r.normal(size=(2, 2, 4, 3)) * 0.5,
            r.normal(size=(3, 2)))


def test_cnn_gradient_against_jax_and_finite_differences() -> None:
    args = cnn_args()
    nums = (0, 1, 2, 3)
    ours = srcjax.grad(cnn, argnums=nums)(*args)
    theirs = JAX.grad(cnn_jax, argnums=nums)(*args)
    via_numpy = srcjax.compile(srcjax.grad(cnn, argnums=nums), device="numpy")(*args)
    for a, b, c in zip(ours, theirs, via_numpy):
        close(a, b)
        close(c, b)
    for i in (1, 2):
        close(ours[i], central_fd(cnn, args, i), 1e-5)


def test_cnn_gradient_source_is_readable() -> None:
    text = srcjax.source(srcjax.grad(cnn, argnums=(1, 2)))
    assert "conv_lhs_bar(" in text and "conv_rhs_bar(" in text and "window_bar(" in text, text
    assert "srcjax.lax.conv_general_dilated(x, w1, " in text, text
    assert len(text.splitlines()) < 60, text


def test_second_derivatives_through_the_helpers() -> None:
    """jvp of grad: the transposes are convolutions, differentiated again (hessian-vector products)."""
    args = cnn_args()
    t = tuple(np.random.default_rng(2).normal(size=np.shape(a)) for a in args)
    ours = srcjax.jvp(srcjax.grad(cnn, argnums=(0, 1, 2, 3)), args, t)[1]
    theirs = JAX.jvp(jax.grad(cnn_jax, argnums=(0, 1, 2, 3)), args, t)[1]
    for a, b in zip(ours, theirs):
        close(a, b, 1e-9)


@pytest.mark.parametrize("body, ls, rs", [c for c in CONVS if "conv_transpose" not in c[0] and "(1,), 'VALID')" not in c[0]])
def test_conv_jvp_and_vjp_against_jax(body: str, ls: Any, rs: Any) -> None:
    x, w = rng.normal(size=ls), rng.normal(size=rs)
    f, fj = pair(body)
    tx, tw = rng.normal(size=ls), rng.normal(size=rs)
    out, back = srcjax.vjp(f, x, w)
    g = rng.normal(size=np.shape(out))
    # (a convolution is bilinear: its JVP is f(tx, w) + f(x, tw), f run by NumPy, which
    # test_convolutions_against_jax checks against jax on these cases; jax's pullback: one jitted oracle)
    want_vjp = jitted(lambda x, w, g: jax.vjp(fj, x, w)[1](g))(x, w, g)
    close(srcjax.jvp(f, (x, w), (tx, tw))[1], f(tx, w) + f(x, tw))
    for a, b in zip(back(g), want_vjp):
        close(a, b)


# -- batching, against jax.vmap and a loop of examples ------------------------------------------------------
@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (1, 2)])
@pytest.mark.parametrize("body, ls, rs", [CONVS[1], CONVS[4], CONVS[6], CONVS[8]])
def test_vmap_against_jax(body: str, ls: Any, rs: Any, in_axes: Any) -> None:
    f, fj = pair(body)
    x = np.stack([rng.normal(size=ls) for _ in range(3)], axis=in_axes[0]) if in_axes[0] is not None \
        else rng.normal(size=ls)
    w = np.stack([rng.normal(size=rs) for _ in range(3)], axis=in_axes[1]) if in_axes[1] is not None \
        else rng.normal(size=rs)
    want = JAX.vmap(fj, in_axes=in_axes)(x, w)
    close(srcjax.vmap(f, in_axes=in_axes)(x, w), want)
    close(srcjax.compile(srcjax.vmap(f, in_axes=in_axes), device="numpy")(x, w), want)


def test_per_example_gradients_of_the_cnn() -> None:
    x, w1, w2, v = cnn_args()
    xs = np.stack([x, x[::-1], 2 * x])
    g = srcjax.vmap(srcjax.grad(cnn, argnums=1), in_axes=(0, None, None, None))(xs, w1, w2, v)
    gj = JAX.vmap(jax.grad(cnn_jax, argnums=1), in_axes=(0, None, None, None))(xs, w1, w2, v)
    close(g, gj)
    one = JAX.grad(cnn_jax, argnums=1)
    for k in range(3):
        close(g[k], one(xs[k], w1, w2, v))


@pytest.mark.parametrize("body, shape", [WINDOWS[1], WINDOWS[2], WINDOWS[3]])
def test_vmap_windows_against_jax(body: str, shape: Any) -> None:
    f, fj = pair(body, "x")
    x = rng.normal(size=(3, *shape))
    want = JAX.vmap(fj)(x)
    close(srcjax.vmap(f)(x), want)
    close(srcjax.vmap(f, in_axes=1)(np.moveaxis(x, 0, 1)), want)


# -- hypothesis: shapes, strides, padding, dilations, groups ------------------------------------------------
@settings(max_examples=6 * _SCALE, deadline=None, derandomize=_SCALE == 1, database=None)
@given(data=st.data(), ns=st.integers(1, 2), groups=st.integers(1, 2), batch_groups=st.sampled_from([1, 1, 2]))
def test_hypothesis_conv(data: Any, ns: int, groups: int, batch_groups: int) -> None:
    if groups > 1 and batch_groups > 1:
        batch_groups = 1
    spatial = [data.draw(st.integers(1, 6)) for _ in range(ns)]
    kernel = [data.draw(st.integers(1, 3)) for _ in range(ns)]
    strides = tuple(data.draw(st.integers(1, 3)) for _ in range(ns))
    ldil = tuple(data.draw(st.integers(1, 2)) for _ in range(ns))
    rdil = tuple(data.draw(st.integers(1, 2)) for _ in range(ns))
    padding: Any = data.draw(st.sampled_from(["SAME", "VALID", "explicit"]))
    if padding == "explicit":
        padding = [(data.draw(st.integers(-1, 2)), data.draw(st.integers(-1, 2))) for _ in range(ns)]
    elif any(d > 1 for d in ldil):
        ldil = (1,) * ns
    cin, cout = 2 * groups, 2 * max(groups, batch_groups)
    x = rng.normal(size=(2 * batch_groups, cin, *spatial))
    w = rng.normal(size=(cout, cin // groups, *kernel))
    kw = dict(window_strides=strides, padding=padding, lhs_dilation=ldil, rhs_dilation=rdil,
              feature_group_count=groups, batch_group_count=batch_groups)
    def fj(x: Any, w: Any) -> Any:
        return jax.lax.conv_general_dilated(x, w, **kw)

    try:
        shape = jax.eval_shape(fj, x, w).shape
    except (ValueError, TypeError):  # (negative padding past the input: refused by both)
        with pytest.raises(srcjax.TranspileError):
            srcjax.eval_shape(lambda x, w: srcjax.lax.conv_general_dilated(x, w, **kw), x, w)
        return
    g = rng.normal(size=shape)  # (the value and the pullback: one jitted oracle, one XLA compilation)
    want, want_back = jitted(lambda x, w, g: (fj(x, w), jax.vjp(fj, x, w)[1](g)))(x, w, g)
    f = define(f"lax.conv_general_dilated(x, w, {strides}, {padding!r}, {ldil}, {rdil}, None, {groups}, "
               f"{batch_groups})")
    close(srcjax.compile(f)(x, w), want)
    close(f(x, w), want)
    if want.size:
        _, back = srcjax.vjp(f, x, w)
        for a, b in zip(back(g), want_back):
            close(a, b)


@settings(max_examples=6 * _SCALE, deadline=None, derandomize=_SCALE == 1, database=None)
@given(data=st.data(), nd=st.integers(1, 3), kind=st.sampled_from(["add", "max", "min"]))
def test_hypothesis_reduce_window(data: Any, nd: int, kind: str) -> None:
    shape = tuple(data.draw(st.integers(1, 5)) for _ in range(nd))
    window = tuple(data.draw(st.integers(1, 3)) for _ in range(nd))
    strides = tuple(data.draw(st.integers(1, 2)) for _ in range(nd))
    bdil = tuple(data.draw(st.integers(1, 2)) for _ in range(nd))
    padding: Any = data.draw(st.sampled_from(["SAME", "VALID", "explicit"]))
    if padding == "explicit":
        padding = [(data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))) for _ in range(nd)]
    init = {"add": 0.0, "max": -np.inf, "min": np.inf}[kind]
    x = rng.normal(size=shape)

    def fj(x: Any) -> Any:
        return jax.lax.reduce_window(x, init, getattr(jax.lax, kind), window, strides, padding, bdil)

    f = define(f"lax.reduce_window(x, {init!r}, lax.{kind}, {window}, {strides}, {padding!r}, {bdil})"
               .replace("inf", "np.inf"), "x")
    if all(b == 1 for b in bdil) or kind == "add":  # (jax: no VJP of max with base dilation)
        g = rng.normal(size=jax.eval_shape(fj, x).shape)  # (the value and the pullback: one jitted oracle)
        want, want_back = jitted(lambda x, g: (fj(x), jax.vjp(fj, x)[1](g)[0]))(x, g)
        if want.size:
            close(srcjax.vjp(f, x)[1](g)[0], want_back)
    else:
        want = jitted(fj)(x)
    close(srcjax.compile(f)(x), want)
    close(f(x), want)


# -- errors: located at the user's call, with a hint ---------------------------------------------------------
ERRORS = [
    ("lax.conv_general_dilated(x, w[:, :2], (1, 1), 'SAME')", srcjax.ShapeError, "input features"),
    ("lax.conv_general_dilated(x > 0, w, (1, 1), 'SAME')", srcjax.DTypeError, "does not support bool"),
    ("lax.conv_general_dilated(x, w, (1,), 'SAME')", srcjax.ShapeError, "one entry per spatial dimension"),
    ("lax.conv_general_dilated(x, w, (1, 1), 'FULL')", srcjax.DTypeError, "unknown padding"),
    ("lax.conv_general_dilated(x, w, (1, 1), 'SAME', (2, 1))", srcjax.ShapeError, "transposed convolution"),
    ("lax.conv_general_dilated(x, w, (1, 1), 'SAME', dimension_numbers=('NCHW', 'OIHW'))", srcjax.DTypeError,
     "three specs"),
    ("lax.conv_general_dilated(x, w, (1, 1), 'SAME', dimension_numbers=('NCHW', 'OIHW', 'NCXY'))", srcjax.ShapeError,
     "different spatial"),
    ("lax.conv_general_dilated(x, w, (1, 1), [(-9, 0), (0, 0)])", srcjax.ShapeError, "negative padding"),
    ("lax.conv_general_dilated(x, w, (1, 1), 'SAME', feature_group_count=2)", srcjax.ShapeError, "features"),
    ("lax.reduce_window(x, 0.0, np.subtract, (1, 1, 2, 2))", srcjax.DTypeError, "unsupported computation"),
    ("lax.reduce_window(x, 0.0, np.add, (2, 2))", srcjax.ShapeError, "one entry per spatial dimension"),
    ("lax.reduce_window(x, np.sum(w), np.add, (1, 1, 2, 2))", srcjax.StaticValueError, "init_value"),
]


@pytest.mark.parametrize("body, kind, message", ERRORS)
def test_errors_are_located(body: str, kind: Any, message: str) -> None:
    x, w = rng.normal(size=(2, 3, 6, 5)), rng.normal(size=(4, 3, 3, 3))
    with pytest.raises(kind, match=message) as e:
        srcjax.compile(define(body))(x, w)
    assert e.value.span is not None and e.value.span.line == 2
    if kind is not srcjax.StaticValueError:
        with pytest.raises(kind):  # the same check runs under NumPy
            define(body)(x, w)


def test_lax_monoid_names_are_numpy_ufuncs() -> None:
    """``srcjax.lax.add/max/min/mul`` (what ``reduce_window`` takes) also work as elementwise functions."""
    three_ways("lax.add(x, w) * lax.mul(x, 2.0) + lax.max(x, w) - lax.min(x, 0.5)", rng.normal(size=(2, 3)),
               rng.normal(size=(2, 3)))
    assert srcjax.lax.max is np.maximum and srcjax.lax.switch(7, [lambda: 0, lambda: 1]) == 1


def test_edge_cases() -> None:
    """No spatial dimensions (a matmul), a 0-d window reduction, preferred_element_type through the
    transposes (jax's dtypes), an empty output."""
    x, w = rng.normal(size=(3, 4)), rng.normal(size=(5, 4))
    three_ways("lax.conv_general_dilated(x, w, (), 'VALID')", x, w)
    f, fj = pair("np.sum(lax.conv_general_dilated(x, w, (), 'VALID') ** 2)")
    for a, b in zip(srcjax.grad(f, argnums=(0, 1))(x, w), JAX.grad(fj, argnums=(0, 1))(x, w)):
        close(a, b)
    three_ways("lax.reduce_window(x, 0.0, lax.add, (), (), 'VALID')", np.float64(3.0))
    x32, w32 = rng.normal(size=(2, 2, 5)).astype(np.float32), rng.normal(size=(3, 2, 3)).astype(np.float32)
    f, fj = pair("np.sum(lax.conv_general_dilated(x, w, (1,), 'SAME', preferred_element_type=np.float64) ** 2)")
    for a, b in zip(srcjax.grad(f, argnums=(0, 1))(x32, w32), JAX.grad(fj, argnums=(0, 1))(x32, w32)):
        assert np.asarray(a).dtype == b.dtype == np.float32
        close(a, b, 1e-5)
    f, fj = pair("np.sum(lax.conv_general_dilated(x, w, (1,), 'VALID') * 2.0)")
    xs, ws = rng.normal(size=(2, 3, 2)), rng.normal(size=(4, 3, 5))
    for a, b in zip(srcjax.grad(f, argnums=(0, 1))(xs, ws), JAX.grad(fj, argnums=(0, 1))(xs, ws)):
        close(a, b)


# -- complex convolutions -------------------------------------------------------------------------------
def complex_conv(x, w, groups):
    return srcjax.lax.conv_general_dilated(x, w, (1, 2), "SAME", rhs_dilation=(2, 1), feature_group_count=groups)


def complex_conv_energy(x, w):
    return np.sum(np.abs(srcjax.lax.conv_general_dilated(x, w * (1 - 0.5j), (1, 1), "VALID")) ** 2)


def _complex(r: Any, shape: tuple[int, ...]) -> np.ndarray:
    return r.normal(size=shape) + 1j * r.normal(size=shape)


# (default: one or two images, one or two feature groups (the two examples), 2 drawn cases; thorough: 80 drawn)
@settings(max_examples=80 if _SCALE > 1 else 2, deadline=None, derandomize=True)
@given(n=st.integers(1, 2), groups=st.integers(1, 2), hw=st.tuples(st.integers(3, 6), st.integers(3, 6)),
       seed=st.integers(0, 2 ** 16))
@example(n=1, groups=1, hw=(4, 3), seed=5).via("the default run's fixed cases")
@example(n=2, groups=2, hw=(5, 6), seed=11).via("the default run's fixed cases")
def test_complex_conv_against_jax(n: int, groups: int, hw: tuple[int, int], seed: int) -> None:
    """Complex operands (JAX has them; they were refused): one stablehlo.convolution of complex tensors;
    the JVP and VJP (a transpose, no conjugation) and grad of a real loss (JAX's convention) agree with jax."""
    r = np.random.default_rng(seed)
    x, w = _complex(r, (n, 2 * groups, *hw)), _complex(r, (2 * groups, 2, 3, 2))

    def jf(x, w, groups):
        return jax.lax.conv_general_dilated(x, w, (1, 2), "SAME", rhs_dilation=(2, 1), feature_group_count=groups,
                                            precision="highest")

    def oracle(x: Any, w: Any, tx: Any, tw: Any, ct: Any) -> Any:
        """jax's value, JVP, VJP and the value at 2x: one jitted program, one XLA compilation."""
        def f(a: Any, b: Any) -> Any:
            return jf(a, b, groups)

        return f(x, w), jax.jvp(f, (x, w), (tx, tw))[1], jax.vjp(f, x, w)[1](ct), f(2 * x, w)

    tx, tw = _complex(r, x.shape), _complex(r, w.shape)
    ct = _complex(r, jax.eval_shape(lambda a, b: jf(a, b, groups), x, w).shape)
    want, want_jvp, jgot, want_2x = jitted(oracle)(x, w, tx, tw, ct)
    close(srcjax.compile(complex_conv)(x, w, groups), want)
    close(srcjax.compile(complex_conv, device="numpy")(x, w, groups), want)
    close(srcjax.jvp(complex_conv, (x, w, groups), (tx, tw, None))[1], want_jvp)
    out, pullback = srcjax.vjp(complex_conv, x, w, groups)
    assert np.shape(out) == ct.shape
    got = pullback(ct)
    close(got[0], jgot[0])
    close(got[1], jgot[1])
    xs = np.stack([x, 2 * x])
    close(srcjax.vmap(complex_conv, in_axes=(0, None, None))(xs, w, groups), np.stack([want, want_2x]))


def test_complex_conv_grad_of_a_real_loss() -> None:
    r = np.random.default_rng(3)
    x, w = _complex(r, (1, 2, 5, 6)), _complex(r, (3, 2, 2, 3))

    def jloss(x, w):
        return jnp.sum(jnp.abs(jax.lax.conv_general_dilated(x, w * (1 - 0.5j), (1, 1), "VALID",
                                                            precision="highest")) ** 2)

    got, want = srcjax.grad(complex_conv_energy, argnums=(0, 1))(x, w), JAX.grad(jloss, argnums=(0, 1))(x, w)
    close(got[0], want[0])
    close(got[1], want[1])
    xr = x.real.copy()
    np.testing.assert_allclose(srcjax.grad(complex_conv_energy)(xr + 0j, w).real,
                               central_fd(lambda v: complex_conv_energy(v + 0j, w), (xr,), 0), rtol=1e-6)


def _rw_sum(x):
    return srcjax.lax.reduce_window(x, 0.0, lambda a, b: a + b, (2, 2), (1, 1), "VALID")


def _rw_max(x):
    return srcjax.lax.reduce_window(x, -np.inf, lambda a, b: np.maximum(b, a), (2, 2), (2, 2), "SAME")


def _rw_prod_loss(x):
    return np.sum(srcjax.lax.reduce_window(x, 1.0, lambda a, b: a * b, (2,), (1,), "VALID") ** 2)


def test_reduce_window_with_a_lambda_monoid_against_jax() -> None:
    """JAX code passes the computation as a lambda (`lambda a, b: a + b`): read as the monoid it is,
    for the values, derivatives and batching (was "unsupported computation LocalFunction(...)")."""
    r = np.random.default_rng(7)
    x = r.normal(size=(5, 6))
    want_sum = jax.lax.reduce_window(x, 0.0, jax.lax.add, (2, 2), (1, 1), "VALID")
    want_max = jax.lax.reduce_window(x, -np.inf, jax.lax.max, (2, 2), (2, 2), "SAME")
    np.testing.assert_allclose(np.asarray(srcjax.jit(_rw_sum)(x)), np.asarray(want_sum), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.jit(_rw_max)(x)), np.asarray(want_max), rtol=1e-12)
    v = r.normal(size=7)  # (jax does not differentiate a product window: central differences)
    np.testing.assert_allclose(np.asarray(srcjax.grad(_rw_prod_loss)(v)),
                               central_fd(lambda u: float(np.sum((u[:-1] * u[1:]) ** 2)), (v,), 0), rtol=1e-6)
    xs = r.normal(size=(3, 5, 6))
    np.testing.assert_allclose(np.asarray(srcjax.vmap(_rw_sum)(xs)),
                               np.stack([np.asarray(srcjax.jit(_rw_sum)(a)) for a in xs]), rtol=1e-12)


def test_reduce_window_with_another_lambda_is_a_located_error() -> None:
    def f(x):
        return srcjax.lax.reduce_window(x, 0.0, lambda a, b: a - b, (2,), (1,), "VALID")

    with pytest.raises(srcjax.TranspileError, match="unsupported computation this lambda") as e:
        srcjax.jit(f)(np.arange(4.0))
    assert __file__ in str(e.value) and "lambda a, b: a + b" in (e.value.hint or "")
