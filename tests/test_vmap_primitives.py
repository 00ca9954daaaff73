"""Registry-driven vmap tests: the batching rule of every primitive (its record's ``batch`` field).

Each case is a small function in NumPy spelling with per-example arguments, grouped by family
(one program calls many primitives: compiling dominates the cost). For every case and each of
its batching configurations ``(in_axes, out_axes)``:

(a) ``srcjax.vmap(f, in_axes, out_axes)(*batched)`` (XLA) equals the loop oracle: ``f`` run by
    NumPy on each example, the results ``np.stack``-ed along ``out_axes``; same structure, shape
    and dtype exactly, values close (floats) or equal;
(b) the written batched function (``v.fn``, the batched source with the helpers of
    :mod:`srcjax.batched` run by NumPy) and ``srcjax.numpy_function(v)`` (the generated program
    run by NumPy) equal it too;
(c) where the case has a jax twin (the same code with ``np`` bound to ``jax.numpy``), ``jax.vmap``
    of the twin gives the same values and shapes (once per case; by default for a representative
    set: elementwise, reductions, contractions, reshapes, indexing; every twin when thorough).

The default configurations batch each operand alone (``in_axes`` 0, the others unbatched: the
case arguments are chosen so that some unbatched operand has a higher rank than the batched
one, which is what ``batch_align`` handles), then every operand together with mapped axes
other than 0 (1 and -1) and ``out_axes=-1``. Examples differ: example ``k`` of an argument is a
permutation of its values (so index arrays stay in range and domains are kept).

``test_every_primitive_has_a_batching_rule`` fails when a primitive has no ``batch`` rule or no
case here. Hypothesis checks the binary ufuncs, reductions and matmul over random shapes,
``in_axes`` and ``out_axes`` (``SRCJAX_HYPOTHESIS=thorough``: ten times as many examples).
"""

from __future__ import annotations

import itertools
import linecache
import os
import types
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import srcjax
from srcjax.adjoint import (
    broadcast_like,
    expand_reduced,
    index_add,
    index_cleared,
    index_lands,
    taken,
    taken_bar,
    unbroadcast,
    winning_writes,
)
from srcjax.lax import (
    bitcast_convert_type,
    conv_general_dilated,
    digamma,
    erf,
    erf_inv,
    erfc,
    index_update,
    lgamma,
    polygamma,
    reduce_window,
    with_sharding_constraint,
)
from srcjax.lax_slicing import window_gather, window_scatter_add
from srcjax.primitives.collectives import NAMES as COLLECTIVE_PRIMS
from srcjax.primitives.elementwise import UFUNCS
from srcjax.primitives.registry import PRIMITIVES
from srcjax.sharding import NamedSharding, P

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

B = 5  # the batch size of every case
TOL = {"float16": (1e-3, 1e-3), "float32": (2e-6, 2e-6), "float64": (1e-12, 1e-12)}
NUMPY_TOL = {"float16": (1e-3, 1e-3), "float32": (1e-6, 1e-6), "float64": (1e-13, 1e-13)}
JAX_TOL = (1e-6, 1e-6)
THOROUGH = os.environ.get("SRCJAX_HYPOTHESIS") == "thorough"
_SCALE = 10 if THOROUGH else 1
HYPOTHESIS = settings(max_examples=6 * _SCALE, deadline=None, derandomize=_SCALE == 1, database=None)

Axes = Any  # an in_axes / out_axes spec


# -- oracles -----------------------------------------------------------------------------------
def run_numpy(fn: Callable[..., Any], *args: Any) -> Any:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args)


def assert_same(actual: Any, expected: Any, who: str, tol: dict[str, tuple[float, float]],
                path: str = "out", dtypes: bool = True) -> None:
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)), f"{who}: {path} is a {type(actual).__name__}, expected a sequence"
        assert len(actual) == len(expected), f"{who}: {path} has {len(actual)} items, expected {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, who, tol, f"{path}[{i}]", dtypes)
        return
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.shape == e.shape, f"{who}: {path} has shape {a.shape}, expected {e.shape}"
    if dtypes:
        assert a.dtype == e.dtype, f"{who}: {path} has dtype {a.dtype}, expected {e.dtype}"
    if e.dtype.kind in "biu" and a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e, err_msg=f"{who}: {path}")
    else:
        rtol, atol = tol.get(e.dtype.name, (1e-6, 1e-6))
        np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=f"{who}: {path}")


def examples(x: Any, seed: int) -> list[Any]:
    """``B`` examples of the argument ``x``: ``x`` itself, then permutations of its values (0-d
    floats: scaled copies). An :class:`Ex` gives its examples explicitly."""
    if isinstance(x, Ex):
        return list(x.values)
    x = np.asarray(x)
    rng = np.random.default_rng(seed)
    out = [x]
    for k in range(1, B):
        if x.ndim == 0:
            out.append(x * (1 + k / 7) if x.dtype.kind == "f" else x)
        else:
            out.append(rng.permutation(x.ravel()).reshape(x.shape))
    return out


@dataclass
class Ex:
    """An argument given by its ``B`` examples (an index that should differ between examples)."""

    values: tuple[Any, ...]


def first(x: Any) -> Any:
    return x.values[0] if isinstance(x, Ex) else x


def _leaves(tree: Any) -> list[Any]:
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in _leaves(t)]
    return [tree]


def _stack(outs: list[Any], out_axes: Axes) -> Any:
    """The per-example results stacked along ``out_axes`` (an int, or a tuple prefix)."""
    o = outs[0]
    if isinstance(o, (tuple, list)):
        specs = out_axes if isinstance(out_axes, (tuple, list)) else [out_axes] * len(o)
        return type(o)(_stack([r[i] for r in outs], specs[i]) for i in range(len(o)))
    return np.stack([np.asarray(r) for r in outs], axis=out_axes)


def batched_args(args: tuple[Any, ...], in_axes: Axes, seed: int) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]]:
    """The batched arguments for ``in_axes`` and the ``B`` per-example argument tuples."""
    specs = in_axes if isinstance(in_axes, (tuple, list)) else [in_axes] * len(args)
    per: list[list[Any]] = [[] for _ in range(B)]
    out = []
    for i, (a, ax) in enumerate(zip(args, specs)):
        if ax is None:
            out.append(first(a))
            for k in range(B):
                per[k].append(first(a))
            continue
        exs = examples(a, seed + i)
        out.append(np.stack([np.asarray(e) for e in exs], axis=ax))
        for k in range(B):
            per[k].append(exs[k])
    return tuple(out), [tuple(p) for p in per]


def jax_twin(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with ``np`` bound to ``jax.numpy`` (the case functions use only ``np.`` calls)."""
    return types.FunctionType(fn.__code__, {**fn.__globals__, "np": jnp}, fn.__name__, fn.__defaults__,
                              fn.__closure__)


def check_vmap(fn: Callable[..., Any], args: tuple[Any, ...], in_axes: Axes, out_axes: Axes = 0, *,
               twin: Callable[..., Any] | None = None, tol: dict[str, tuple[float, float]] | None = None,
               loops: bool = True, seed: int = 0) -> str:
    """(a), (b) and (c) of the module docstring for one configuration; returns the batched source."""
    bargs, per = batched_args(args, in_axes, seed)
    expected = _stack([run_numpy(fn, *p) for p in per], out_axes)
    v = srcjax.vmap(fn, in_axes=in_axes, out_axes=out_axes)
    text = srcjax.source(v)
    where = f"in_axes={in_axes!r}, out_axes={out_axes!r}\n{text}"
    if not loops:  # (a per-example loop, rolled: srcjax.lax.fori_loop in the program's source)
        assert "fori_loop(" not in text and "for " not in text, \
            f"a per-example loop where a vectorized rule was expected: {where}"
    try:
        assert_same(v(*bargs), expected, "XLA", tol or TOL)
        assert_same(run_numpy(v.fn, *bargs), expected, "batched source (NumPy)", NUMPY_TOL)
        assert_same(run_numpy(srcjax.numpy_function(v), *bargs), expected, "generated program (NumPy)", NUMPY_TOL)
        if twin is not None:
            ref = jax.jit(jax.vmap(twin, in_axes=in_axes, out_axes=out_axes))(*bargs)
            assert_same(ref, expected, "jax.vmap (the loop oracle against jax)", {"": JAX_TOL}, dtypes=False)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{where}") from None
    return text


# -- the table of cases ------------------------------------------------------------------------
@dataclass
class Case:
    prims: tuple[str, ...]  # the primitives it batches
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    configs: list[tuple[Axes, Axes]]
    jax: bool
    loops: bool  # a per-example loop in the batched source is expected (no vectorized rule)
    tol: dict[str, tuple[float, float]] | None

    @property
    def id(self) -> str:
        return self.fn.__name__


CASES: list[Case] = []


def keyed_configs(args: tuple[Any, ...]) -> list[tuple[Axes, Axes]]:
    """For ``f(x, *indices)``: ``x`` batched alone, the indices batched alone (with an unbatched ``x``),
    ``x`` and every other index batched, then everything with moved axes."""
    n = len(args)
    some = tuple(0 if j == 0 or j % 2 == 0 else None for j in range(n))
    return [((0,) + (None,) * (n - 1), 0), ((None,) + (0,) * (n - 1), 0), (some, 0), default_configs(args)[-1]]


def default_configs(args: tuple[Any, ...]) -> list[tuple[Axes, Axes]]:
    """Each operand batched alone (axis 0), then all of them with axes 1 / -1 and ``out_axes=-1`` (one
    operand: that last configuration only)."""
    n = len(args)
    moved = tuple((1 if np.ndim(first(a)) >= 1 and i % 2 == 0 else -1) for i, a in enumerate(args))
    if n == 1:
        return [(moved, -1)]
    alone = [(tuple(0 if j == i else None for j in range(n)), 0) for i in range(n)]
    return alone + [(moved, -1)]


def case(*prims: str, args: tuple[Any, ...], configs: list[tuple[Axes, Axes]] | None = None, jax: bool = False,
         loops: bool = False, tol: dict[str, tuple[float, float]] | None = None, keyed: bool = False
         ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as a case of ``prims`` (``keyed``: configurations of
    :func:`keyed_configs`, else :func:`default_configs`)."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        CASES.append(Case(prims, fn, args, configs or (keyed_configs if keyed else default_configs)(args), jax,
                          loops, tol))
        return fn

    return register


_rng = np.random.default_rng(0)


def arr(shape: tuple[int, ...] | int, dtype: Any = np.float64, lo: float = -3, hi: float = 3) -> np.ndarray:
    """Random data: floats uniform in [lo, hi), ints in [lo, hi], bools half true."""
    shape = (shape,) if isinstance(shape, int) else shape
    d = np.dtype(dtype)
    if d == np.bool_:
        return _rng.random(shape) < 0.5
    if d.kind in "iu":
        return _rng.integers(int(lo), int(hi) + 1, size=shape).astype(d)
    return _rng.uniform(lo, hi, size=shape).astype(d)


F32, F64, I32, I64, BOOL = (np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.bool_))


# -- elementwise ---------------------------------------------------------------------------------
UNARY_FLOAT = ("negative", "positive", "absolute", "sign", "square", "reciprocal", "exp", "exp2", "expm1", "log",
               "log2", "log10", "log1p", "sqrt", "cbrt", "sin", "cos", "tan", "tanh", "arcsin", "arccos", "arctan",
               "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg", "floor", "ceil", "rint", "trunc",
               "isfinite", "isnan", "isinf", "logical_not", "sinc", "round", "subtract", "add")


@case(*UNARY_FLOAT, args=(arr((2, 3), lo=0.1, hi=0.9),), jax=True)
def unary_floats(x):
    return (np.negative(x), np.positive(x), np.absolute(x - 0.5), np.sign(x - 0.5), np.square(x), np.reciprocal(x),
            np.exp(x), np.exp2(x), np.expm1(x), np.log(x), np.log2(x), np.log10(x), np.log1p(x), np.sqrt(x),
            np.cbrt(x - 0.5), np.sin(x), np.cos(x), np.tan(x), np.tanh(x), np.arcsin(x), np.arccos(x), np.arctan(x),
            np.sinh(x), np.cosh(x), np.arcsinh(x), np.arccosh(x + 1), np.arctanh(x), np.deg2rad(x), np.rad2deg(x),
            np.floor(x * 4), np.ceil(x * 4), np.rint(x * 4), np.trunc(x * 4 - 2), np.isfinite(x), np.isnan(x),
            np.isinf(x), np.logical_not(x > 0.5), np.sinc(x), np.round(x, 2), -x, np.abs(x - 0.5))


@case("isnan", "isinf", "isfinite", "sign", args=(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.0]),),
      configs=[(0, 0)])
def unary_specials(x):
    return np.isnan(x), np.isinf(x), np.isfinite(x), np.sign(x), np.maximum(x, 0.5), np.fmax(x, 0.5)


BINARY_FLOAT = ("add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "power", "maximum",
                "minimum", "arctan2", "float_power", "fmax", "fmin", "hypot", "logaddexp", "logaddexp2", "heaviside",
                "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
                "logical_xor", "fmod")


@case(*BINARY_FLOAT, args=(arr(3, lo=0.5, hi=2), arr((2, 3), lo=0.5, hi=2)), jax=True,
      configs=[((0, None), 0), ((-1, 1), -1)])
def binary_floats(x, y):
    """``x`` has a lower rank than ``y``: batching ``x`` alone needs ``batch_align`` (``y`` alone:
    ``binary_operators``)."""
    return (np.add(x, y), np.subtract(x, y), np.multiply(x, y), np.true_divide(x, y), np.floor_divide(x, y),
            np.remainder(x, y), np.power(x, y), np.maximum(x, y), np.minimum(x, y), np.arctan2(x, y),
            np.float_power(x, y), np.fmax(x, y), np.fmin(x, y), np.hypot(x, y), np.logaddexp(x, y),
            np.logaddexp2(x, y), np.heaviside(x - 1, y), np.equal(x, y), np.not_equal(x, y), np.less(x, y),
            np.less_equal(x, y), np.greater(x, y), np.greater_equal(x, y), np.logical_and(x > 1, y > 1),
            np.logical_or(x > 1, y > 1), np.logical_xor(x > 1, y > 1), np.fmod(x - 1, y))


@case("add", "subtract", "multiply", "true_divide", "power", "floor_divide", "remainder", "matmul", "less",
      args=(arr((2, 3), lo=0.5, hi=2), arr(3, lo=0.5, hi=2)), jax=True)
def binary_operators(x, y):
    """Operators (``x + y``), Python scalars on either side, and a chain of batched and unbatched values."""
    return (x + y, x - y * 2, 2 * x / y, x ** 2 + y ** x, x // y, x % 0.7, 1.5 - x, x @ y, x < y, (x + 1) * (y - 1) / x)


@case("bitwise_and", "bitwise_or", "bitwise_xor", "invert", "floor_divide", "remainder", "logical_and", "equal",
      args=(arr(4, I32, 1, 9), arr((2, 4), I64, 1, 5)), jax=True, configs=[((0, None), 0), ((-1, 1), -1)])
def integer_ufuncs(i, j):
    return (np.bitwise_and(i, j), np.bitwise_or(i, j), np.bitwise_xor(i, j), np.invert(i), i & j, i | j, i ^ j, ~j,
            np.floor_divide(i, j), np.remainder(i, j), i // j, i % j, i ** 2, np.logical_and(i > 3, j > 2),
            np.equal(i, j), i * j + 1, np.negative(i), np.absolute(i - j))


@case("left_shift", "right_shift", "bitcast_convert_type",
      args=(np.array([1, 0x80000001, 0xFFFFFFFF, 12345], np.uint32), arr((2, 4), I64, 0, 40)),
      configs=[((0, None), 0), ((None, 0), 0), ((-1, 1), -1)])
def shifts_and_bits(u, n):
    """uint32 words shifted (by amounts past the width too), a signed right shift, and their bits read as
    floats: the integer operations of srcjax.random's Threefry."""
    rot = (u << 13) | (u >> 19)
    return (rot, np.left_shift(u, n.astype(np.uint32)), np.right_shift(n, 2), -n >> 3, u >> n.astype(np.uint32),
            bitcast_convert_type((u >> 9) | 0x3F800000, np.float32) - 1.0, bitcast_convert_type(n, np.float64))


ONE_DEVICE = NamedSharding(srcjax.make_mesh((1,), ("x",)), P("x"))  # (tests/test_spmd.py: on 4 devices)


@case("dynamic_slice", "dynamic_update_slice", "stop_gradient",
      args=(arr((2, 3, 4)), np.array([-1, 3]), np.array([5, 1]), arr((2, 3, 1))), keyed=True, jax=True)
def dynamic_windows(x, i, j, u):
    """JAX's dynamic slicing at starts clamped so that the window fits: the operand, the starts and the
    update batched in every mix (one start per example, or the sum of all: rank-generic programs)."""
    s, t = np.sum(i), np.sum(j)
    lead = (0,) * (np.ndim(x) - 1)
    a = srcjax.lax.dynamic_slice(x, lead + (s,), np.shape(x)[:-1] + (2,))
    b = srcjax.lax.dynamic_update_slice(x, srcjax.lax.stop_gradient(u) * 2.0, lead + (t,))
    c = srcjax.lax.dynamic_slice(x, (t,) + (0,) * (np.ndim(x) - 1), (1,) + np.shape(x)[1:])
    return a, b, c


@case("window_gather", "window_scatter_add",
      args=(arr((2, 5, 4)), np.array([[[0, 1], [4, -1]], [[-7, 9], [2, 2]]])), loops=True,
      configs=[((0, None), 0), ((None, 0), 0), ((0, 0), 0)])
def windows_of_rows(x, s):
    """vmap of the gather vmap of dynamic_slice writes (and of its transpose): per example."""
    rows, starts = np.reshape(x, (-1, 4)), np.reshape(s, (-1, 2))  # (the whole arrays where not mapped)
    w = window_gather(rows, starts, (2, 3))
    return w, window_scatter_add(w * 2.0, starts, np.shape(rows))


@case("with_sharding_constraint", args=(arr((2, 3)),), loops=True)
def sharding_constraint(x):
    return with_sharding_constraint(np.sin(x), ONE_DEVICE) * 2.0


@case("conv_general_dilated", args=(arr((2, 4, 6, 5)), arr((4, 2, 3, 2))))
def conv_batched(x, w):
    """An input and/or a kernel batched: into the batch dimension, or the output features with feature groups
    (also with feature and batch groups in the call, and another layout)."""
    return (conv_general_dilated(x, w, (1, 2), "SAME", rhs_dilation=(2, 1), feature_group_count=2),
            conv_general_dilated(x[:, :2], w, (2, 1), [(1, 0), (0, -1)], (1, 2)),
            conv_general_dilated(x[:, :2], w, (1, 1), "VALID", batch_group_count=2),
            conv_general_dilated(np.transpose(x[:, :2], (0, 2, 3, 1)), np.transpose(w, (2, 3, 1, 0)), (1, 1), "SAME",
                                 dimension_numbers=("NHWC", "HWIO", "NHWC")))


@case("reduce_window", args=(arr((2, 6, 5)),))
def reduce_window_batched(x):
    return (reduce_window(x, 0.0, np.add, (1, 2, 2), (1, 2, 1), "SAME"),
            reduce_window(x, -np.inf, np.maximum, (2, 2, 3), (1, 1, 2), [(0, 1), (1, 0), (1, 1)], (1, 2, 1)))


@case("erf", args=(arr((2, 3)), arr(3, F32)))
def erf_batched(x, y):
    return erf(x), erf(y), erf(2.0 * y) + y, erf(x * 0.5) * x


@case("lgamma", "digamma", "polygamma", "erfc", "erf_inv", args=(arr((2, 3), lo=0.2, hi=4), arr(3, F32, 0.2, 4)),
      tol={"float32": (2e-6, 2e-6), "float64": (1e-6, 1e-12)})  # (XLA's float32 digamma times a float64: ~4e-7)
def special_batched(x, y):
    return (lgamma(x), digamma(y) * x, polygamma(1, x), polygamma(2.0, y), erfc(x - y), erf_inv(np.tanh(x)),
            erf_inv(y / 5) + y)


@case("where", "clip", args=(arr((2, 3), BOOL), arr(3), arr((2, 1))), jax=True)
def where_clip(c, x, y):
    return (np.where(c, x, y), np.where(c, x, 0.5), np.where(x > 0, x, y), np.where(c, 1.0, y), np.clip(y, x, x + 1),
            np.clip(x, -1, 2), np.clip(x, None, 0.5), np.clip(x, y, None), np.clip(y, -0.5, x))


@case("round", "sinc", "deg2rad", "rad2deg", args=(arr((3, 4)) * 10,), jax=True)
def round_family(x):
    return np.round(x), np.round(x, 2), np.round(x, -1), np.sinc(x), np.radians(x), np.degrees(x)


# -- reductions ---------------------------------------------------------------------------------
REDUCTIONS = ("sum", "prod", "max", "min", "mean", "var", "std", "all", "any", "argmax", "argmin")


@case(*REDUCTIONS, args=(arr((2, 3, 4)),), jax=True)
def reductions_axes(x):
    """axis=None, negative and tuple axes, keepdims."""
    return (np.sum(x), np.sum(x, axis=-1), np.sum(x, axis=(0, 2), keepdims=True), np.prod(x, axis=1),
            np.max(x, axis=(-1, 0)), np.min(x, keepdims=True), x.min(axis=1), np.max(x, axis=None), np.mean(x),
            np.mean(x, axis=-2), np.var(x, axis=0), np.std(x, axis=(1, -1), keepdims=True), np.all(x > -2, axis=1),
            np.any(x > 2), np.all(x > -3, axis=(0, -1), keepdims=True), np.argmax(x), np.argmax(x, axis=-1),
            np.argmin(x, axis=0, keepdims=True), np.argmin(x), x.sum(axis=(-2, -1)), x.max())


@case("sum", "max", "var", "std", "mean", "prod", args=(arr((3, 4), I32),))
def reductions_options(x):
    """dtype=, initial=, ddof=."""
    return (np.sum(x, axis=0, dtype=np.float32), np.sum(x, initial=10), np.max(x, axis=0, initial=3),
            np.var(x, axis=0, ddof=1), np.std(x, ddof=1, keepdims=True), np.mean(x, axis=-1, dtype=np.float32),
            np.prod(x, axis=1, dtype=np.int32), np.min(x, axis=1, initial=-1))


@case("argmax", "argmin", args=(arr((2, 3, 4)),))
def arg_reductions_flat_keepdims(x):
    """``axis=None`` with ``keepdims=True`` flattens then keeps every axis."""
    return np.argmax(x, keepdims=True), np.argmin(x, axis=None, keepdims=True)


@case("cumsum", "cumprod", "diff", "trace", args=(arr((2, 3, 4), lo=-2, hi=2),), jax=True)
def scans_and_traces(x):
    return (np.cumsum(x), np.cumsum(x, axis=-1), np.cumsum(x, axis=0), np.cumprod(x, axis=1), np.cumprod(x),
            np.diff(x), np.diff(x, 2, axis=1), np.diff(x, axis=0), np.diff(x, n=0), np.trace(x), np.trace(x, 1),
            np.trace(x, 0, 2, 0), np.trace(x, -1, axis1=-1, axis2=1))


@case("trace", "diff", "cumsum", args=(arr((3, 4), I32),))
def scans_dtypes(x):
    return np.trace(x, dtype=np.float32), np.cumsum(x, axis=0, dtype=np.float32), x.cumprod(axis=-1), np.diff(x > 0)


# -- linalg ---------------------------------------------------------------------------------------
@case("matmul", "dot", "inner", "outer", "tensordot",
      args=(arr((3, 4)), arr((4, 3)), arr((2, 4, 3))), jax=True)
def contractions(a, b, t):
    """Every rank pairing of matmul/dot/inner/outer/tensordot (``t`` is 3-D: unbatched, it has a higher
    rank than a batched ``a``)."""
    return (a @ b, a[0] @ b, a @ b[:, 0], a[0] @ b[:, 0], t @ a, b.T @ t, t @ b[0], a[0] @ t, np.matmul(a, b),
            np.dot(a, b), np.dot(a[0], b), np.dot(a, b[:, 0]), np.dot(a[0], a[1]), np.dot(t, b.T), np.dot(a, t),
            np.dot(a[0, 0], b), np.dot(t, b[0]), np.dot(b[:, 0], t.T),
            np.inner(a, b.T), np.inner(a[0], a[1]), np.inner(t, b), np.inner(a[0, 0], t), np.inner(b[0], t),
            np.outer(a[0], b[:, 0]), np.outer(a, b), np.outer(t, a[0]),
            np.tensordot(a, b.T), np.tensordot(t, b, axes=([1, 2], [0, 1])), np.tensordot(a, b, axes=1),
            np.tensordot(t, a, axes=([-1], [0])), np.tensordot(a[0], b[0], axes=0), np.tensordot(t, t, axes=([0], [0])))


@case("einsum", args=(arr((3, 4)), arr((4, 3)), arr((2, 4, 3))), jax=True,
      configs=[((0, None, 0), 0), ((None, 0, None), 0), ((1, -1, 1), -1)])
def einsums(a, b, t):
    return (np.einsum("ij,jk->ik", a, b), np.einsum("ij,jk", a, b), np.einsum("bij,jk->bik", t, a),
            np.einsum("ii->i", a @ b), np.einsum("...j,jk->...k", t, a), np.einsum("ij->", a), np.einsum("ij", a),
            np.einsum("ij,ij,ji->i", a, a, b), np.einsum("ij->ji", a), np.einsum("i,i->", a[0], b[:, 0]),
            np.einsum("bij,bjk->bik", t, t.transpose((0, 2, 1))), np.einsum("i...->...", t), np.einsum("ii", a @ b))


@case("matmul", "dot", args=(arr((2, 3), I32, -3, 3), arr((3,), F32)), jax=True)
def contractions_dtypes(a, b):
    return a @ b, np.dot(a, b), np.matmul(a > 0, b > 0), a @ a.T


@case("norm", args=(arr((3, 4)),), jax=True)
def norms(x):
    return (np.linalg.norm(x), np.linalg.norm(x, axis=-1, keepdims=True), np.linalg.norm(x, "fro"),
            np.linalg.norm(x[0]), np.linalg.norm(x[0], 1), np.linalg.norm(x, 1), np.linalg.norm(x, np.inf),
            np.linalg.norm(x[0], np.inf), np.linalg.norm(x, axis=0), np.linalg.norm(x[0], 3),
            np.linalg.norm(x, -np.inf), np.linalg.norm(x, keepdims=True), np.linalg.norm(x[1], 2, axis=-1),
            np.linalg.norm(x, "fro", axis=(1, 0)))


def _spd(m):  # positive definite and well-conditioned, whatever the (random) example
    return m @ np.swapaxes(m, -1, -2) + 3.0 * np.eye(3)


@case("solve", args=(arr((3, 3)), arr((3, 2)), arr(3)), jax=True)
def solves(a, b, v):
    """``b`` a matrix or one vector per example (the vector case must not become a matrix when batched)."""
    s = _spd(a)
    return np.linalg.solve(s, b), np.linalg.solve(s, v), np.linalg.solve(s[None], b)


@case("inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh", args=(arr((3, 3)), arr((2, 3, 3))), jax=True)
def decompositions(a, t):
    s, st = _spd(a), _spd(t)
    w, v = np.linalg.eigh(s)
    return (np.linalg.inv(s), np.linalg.inv(st), np.linalg.det(s), np.linalg.slogdet(st)[1], np.linalg.cholesky(s),
            np.linalg.cholesky(st), w, np.abs(v), np.linalg.eigvalsh(st))


@case("eig", "eigvals", args=(arr((3, 3)) + 1j * arr((3, 3)), arr((2, 3, 3)) + 1j * arr((2, 3, 3))), jax=True)
def general_eigen(a, t):
    return np.linalg.eigvals(a), np.abs(np.linalg.eig(t)[1]), np.linalg.eig(a)[0]


@case("matrix_power", "multi_dot", args=(arr((3, 3)), arr((3, 4)), arr(3)), jax=True)
def products(a, b, v):
    s = _spd(a)
    return (np.linalg.matrix_power(a, 3), np.linalg.matrix_power(s, -2), np.linalg.multi_dot([a, b, b.T]),
            np.linalg.multi_dot([v, a, b]), np.linalg.multi_dot([a, a, v]))


@case("lstsq", args=(arr((5, 3)), arr(5), arr((3, 4)), arr((3, 2))), jax=True)
def least_squares(a, b, w, c):
    x, residuals, rank, s = np.linalg.lstsq(a, b)
    return x, residuals, rank, s, np.linalg.lstsq(w, c)[0], np.linalg.lstsq(a, b[:, None] * 2.0)[1]


@case("svd", "qr", "norm", "cond", "pinv", args=(arr((4, 3)), arr((2, 3, 4))), jax=True)
def orthogonal_decompositions(a, t):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    q, r = np.linalg.qr(t)
    return (np.abs(u), s, np.abs(vh), np.linalg.svd(t, compute_uv=False), np.abs(q), np.abs(r), np.linalg.norm(a, 2),
            np.linalg.norm(t, "nuc", axis=(0, 2)), np.linalg.norm(t, -2, axis=(-1, -2), keepdims=True),
            np.linalg.cond(a), np.linalg.cond(t, -2), np.linalg.pinv(a), np.linalg.pinv(t, 0.2))


# -- shapes -----------------------------------------------------------------------------------------
@case("transpose", "reshape", "astype", "copy", "ravel", args=(arr((2, 3, 4)),), jax=True)
def reshapes(x):
    return (np.transpose(x), np.transpose(x, (1, -1, 0)), x.T, np.reshape(x, (4, -1)), x.reshape(-1, 2),
            x.reshape(24), np.reshape(x, 24), x.astype(np.float32), x.astype(np.int32), np.astype(x, bool),
            np.copy(x), x.ravel(), np.ravel(x), x.flatten(), x.transpose(2, 0, 1), np.reshape(x, (3, 2, 4)))


@case("ravel", args=(arr((2, 3, 4)),), jax=True)
def ravel_fortran(x):
    return np.ravel(x, order="F"), x.ravel(order="C")


@case("expand_dims", "squeeze", "swapaxes", "moveaxis", "flip", args=(arr((1, 3, 1, 2)),), jax=True)
def axes_moves(x):
    return (np.expand_dims(x, 0), np.expand_dims(x, -1), np.expand_dims(x, (0, -1)), np.expand_dims(x, (2, 0)),
            np.squeeze(x), x.squeeze(), np.squeeze(x, axis=-2), np.squeeze(x, axis=(0, 2)), np.swapaxes(x, 0, -1),
            x.swapaxes(1, 0), np.moveaxis(x, 0, -1), np.moveaxis(x, (0, 1), (-1, 0)), np.moveaxis(x, [3, 1], [0, 2]),
            np.flip(x), np.flip(x, 1), np.flip(x, (1, -1)), np.flip(x, -1))


@case("broadcast_to", "tile", "repeat", args=(arr((3, 1)), arr((2, 3), I32)), jax=True)
def broadcasts_tiles(y, x):
    return (np.broadcast_to(y, (2, 3, 4)), np.broadcast_to(y[0, 0], 5), np.broadcast_to(x[0], (2, 3)),
            np.tile(x, 2), np.tile(y, (2, 1, 3)), np.tile(x, (0, 2)), np.tile(x[0], 1), np.tile(y[0, 0], 3),
            np.repeat(x, 3), np.repeat(x, 2, axis=0), np.repeat(y, 3, axis=-1), x.repeat(2))


@case("repeat", args=(arr((2, 3)),))
def repeat_list(x):
    """(jax refuses a list of repeats)"""
    return np.repeat(x, [2], axis=1), np.repeat(x, [3], axis=-2), np.repeat(x, [2])


@case("real", "imag", "conjugate", "angle", args=(arr((3, 4)) + 1j * arr((3, 4)), arr(4)), jax=True)
def complex_parts(z, x):
    return np.real(z), np.imag(z), np.conj(z) * x, np.angle(z), z.real + x.imag, np.angle(x, deg=True)


@case("fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn",
      args=(arr((3, 4)), arr((3, 4)) + 1j * arr((3, 4))), jax=True)
def ffts(x, z):
    return (np.fft.fft(x), np.fft.ifft(z, n=5, axis=0), np.fft.rfft(x, norm="ortho"), np.fft.irfft(z),
            np.fft.fft2(z), np.fft.ifft2(x), np.fft.rfft2(x), np.fft.irfft2(z, s=(3, 4)), np.fft.fftn(z, axes=(1,)),
            np.fft.ifftn(z), np.fft.rfftn(x), np.fft.irfftn(z, norm="forward"))


@case("roll", args=(arr((3, 4)),), jax=True)
def rolls(x):
    return np.roll(x, 2, axis=-1), np.roll(x, (1, 2), axis=(0, -1)), np.roll(x, (1, -3), axis=(0, 0)), np.roll(x, -1, 0)


@case("roll", args=(arr((3, 4)),), jax=True)
def roll_flat(x):
    """``axis=None`` rolls the flattened example."""
    return np.roll(x, 1), np.roll(x, -7), np.roll(x, 0)


@case("diag", "triu", "tril", args=(arr(3), arr((3, 4))), jax=True)
def diagonals(v, m):
    return (np.diag(v), np.diag(v, 1), np.diag(v, -2), np.diag(m), np.diag(m, 1), np.diag(m, k=-2), np.triu(m),
            np.triu(m, 1), np.tril(m, -1), np.tril(m, k=2), np.diag(v) @ m, np.diag(m, 5), np.triu(m[None] * m[:, None, :]))


@case("diag", "triu", "tril", args=(arr(3, I32), arr((4, 3), BOOL)))
def diagonals_vectors_dtypes(v, m):
    """(jax refuses ``np.triu`` of a vector: NumPy makes it a matrix of rows)"""
    return np.triu(v), np.tril(v, 1), np.diag(v, -1), np.diag(m), np.diag(m, -1), np.tril(m), np.diag(m[0])


@case("concatenate", "stack", "hstack", "vstack", args=(arr((2, 3)), arr((4, 3), F32)), jax=True)
def joins(x, y):
    return (np.concatenate([x, y]), np.concatenate((x, x, y), axis=0), np.concatenate([x, y[:2]], axis=-1),
            np.concatenate([x, y], axis=None), np.concatenate([x[0], y[0]]), np.stack([x, y[:2]]),
            np.stack((x, y[1:3], x), axis=-1), np.stack([x], axis=1), np.stack([x[0, 0], y[0, 0]]),
            np.hstack([x, y[:2]]), np.hstack([x[0], y[0]]), np.hstack([x[0, 0], y[0, 0]]), np.vstack((x, y)),
            np.vstack([x[0], y[0]]), np.vstack([x[0, 0], y[0, 0]]))


@case("concatenate", "stack", args=(arr((2, 3)), arr((4, 3))), jax=True)
def joins_of_lists(x, y):
    """A list variable (every element batched)."""
    parts = [x + y[:2], x * y[1:3]]
    parts.append(x - y[2:])
    return (np.concatenate(parts), np.stack(parts, axis=1), np.concatenate(parts, axis=-1),
            np.concatenate(parts, axis=None), np.hstack(parts), np.vstack(parts), np.vstack(parts, dtype=np.float32),
            np.hstack([x[0], y[0]], dtype=np.float32))


@case("atleast_1d", "atleast_2d", "atleast_3d", args=(arr((2, 3)), arr((), F32)), jax=True)
def atleasts(x, s):
    a, b = np.atleast_2d(x[0], s)
    return (np.atleast_1d(s), np.atleast_1d(x), np.atleast_2d(s), np.atleast_2d(x[0]), np.atleast_2d(x),
            np.atleast_3d(s), np.atleast_3d(x[0]), np.atleast_3d(x), np.atleast_3d(x[None]), a, b,
            np.atleast_1d(s, x), np.atleast_3d(x[0], s, x))


@case("split", "array_split", args=(arr((4, 6)),), jax=True)
def splits(x):
    a, b = np.split(x, 2, axis=1)
    return (np.split(x, 2), np.split(x, 3, axis=-1), np.split(x, [1, 4], axis=1), a * b,
            np.array_split(x, 3, axis=-1), np.array_split(x, [2, 3]), np.array_split(x, 5))


@case("split", "array_split", args=(arr((4, 6), I32),))
def splits_decreasing(x):
    """(jax refuses decreasing split indices)"""
    return np.split(x, [3, 1]), np.split(x, [-2, 10], axis=1), np.split(x, []), np.array_split(x, [3, 1], axis=-1)


@case("sum", "mean", "argmax", "cumsum", "transpose", "reshape", "expand_dims", "atleast_1d", "broadcast_to", "tile",
      "repeat", "stack", "hstack", "vstack", "getitem", "ravel", "squeeze", "flip", "astype", args=(arr((), F32),),
      configs=[(0, 0), (0, -1)])
def scalars(x):
    """0-d examples (Python scalars in sequences are converted as NumPy does: float64, int64)."""
    return (np.sum(x), np.mean(x, keepdims=True), np.argmax(x), np.cumsum(x), np.transpose(x), np.reshape(x, (1, 1)),
            np.expand_dims(x, 0), np.atleast_1d(x), np.broadcast_to(x, (2,)), np.tile(x, 2), np.repeat(x, 3), x[None],
            x[...], np.stack([x, 1.5]), np.stack([x, 2, x]), np.hstack([x, 2]), np.vstack([x, True]), np.ravel(x),
            np.squeeze(x), np.flip(x), x.astype(np.int32), np.max(x, axis=None, keepdims=True))


# -- indexing ------------------------------------------------------------------------------------
@case("take", "take_along_axis", args=(arr((3, 4)), np.array([0, 2, 2, 1]), np.array([[0, 3], [1, 1], [2, 0]])),
      jax=True)
def takes(x, i, j):
    return (np.take(x, i), np.take(x, i, axis=0), np.take(x, i, axis=-1), np.take(x, 1), np.take(x, j, axis=1),
            np.take(x, i[:2], axis=0), np.take_along_axis(x, j, axis=1), np.take_along_axis(x, j % 3, axis=-1),
            np.take_along_axis(x, np.argmax(x, axis=0, keepdims=True), axis=0), np.take_along_axis(x.ravel(), i, None),
            np.take(x[0], j))


@case("getitem", args=(arr((4, 5, 6)),), jax=True)
def getitem_static(x):
    return (x[1], x[-1, 2], x[1:3], x[::-1], x[::2, ::-2, 1:-1], x[..., None, 0], x[None, :, 0], x[:, 5:1:-2], x[10:],
            x[2, ..., ::-3], x[:, :, -1], x[..., 1:3])


@case("getitem", args=(arr((4, 5)), Ex(tuple(np.int64(k) for k in (2, -1, 0, 3, 1)))), jax=True)
def getitem_dynamic(x, i):
    return x[i], x[1:, i], x[i, ::-1], x[i, 2], x[0, i]


_INDEX = Ex(tuple(np.int64(k) for k in (2, -1, 0, 3, 1)))


@case("getitem", args=(arr((4, 5, 6)), np.array([3, 0, 2]), np.array([[1, 3, 2], [0, 2, 3]]), _INDEX), jax=True,
      keyed=True)
def getitem_gather(x, i, j, k):
    """Integer arrays (batched or not, of different ranks), side by side or separated (their axes go
    first), with slices, ``...``, and run-time integers."""
    return (x[i], x[j], x[i, j], x[:, i], x[:, :, j], x[i, :, i], x[0, :, j], x[..., i], x[i, ...], x[k], x[k, i],
            x[:, k, j], x[j, k], x[1:3, i], x[i, 1:, k], x[::-1, j, ::2], x[i][:, j], x[k, ::-1], x[2, j, k])


@case("getitem", args=(arr((4, 5, 6)), np.array([3, 0, 2]), _INDEX))
def getitem_lists(x, i, k):
    """Lists of indices holding run-time integers (jax refuses a list as an index)."""
    return x[[k, 0]], x[:, [1, k], 0], x[[k, 1], :, [2, 0]], x[[1, 0]], x[[1, 2], :, [0, 3]], x[[k]], x[i, [k]]


# -- creation -------------------------------------------------------------------------------------
@case("zeros", "ones", "eye", "identity", "arange", "linspace", "full", "zeros_like", "ones_like", "full_like",
      args=(arr((2, 3)), arr((), F64)), jax=True)
def creation(x, s):
    return (np.zeros((2, 3)) + x, np.ones(3) * x, np.eye(3) @ x.T, np.identity(2) @ x, np.arange(3) * x,
            np.linspace(0, 1, 3) * x, np.full((2, 3), s), np.full((4, 2, 3), x), np.full(3, 2.0) + x,
            np.full((2, 3), s, dtype=np.float32), np.full((2, 3), s, dtype=bool), np.zeros_like(x),
            np.ones_like(x, dtype=np.int8), np.zeros_like(x, shape=(2, 1)), np.ones_like(x, shape=4),
            np.full_like(x, 7), np.full_like(x, s), np.full_like(x, x[0]), np.full_like(x, 3, dtype=np.float32),
            np.full_like(x, 1, shape=(2, 2)), np.zeros(x.shape[1:]) + x[0], np.zeros([x.shape[0], 2], dtype=x.dtype),
            np.full_like(s, 2.5), np.zeros_like(s), np.eye(x.shape[1], dtype=x.dtype), np.full(x.shape, s) * x,
            np.broadcast_to(s, x.shape), np.reshape(x * s, x.shape[::-1]))


@case("linspace", args=(arr(()), arr((3,))), jax=True)
def linspace_endpoints(a, b):
    """Batched endpoints: the samples' axis one further along (``axis=1``)."""
    return (np.linspace(a, b, 5), np.linspace(b, a, 4, endpoint=False, axis=-1), np.linspace(a, 2.0, 3),
            np.linspace(0.0, b, 3, axis=1), np.linspace(b, a, 2, dtype=np.float32))


@case("full_like", "full", args=(arr(3, I32), arr((2, 3))), jax=True)
def creation_fill_arrays(i, x):
    return (np.full_like(x, i), np.full_like(i, x[1]), np.full((4, 3), i), np.full((2, 3), i, dtype=np.float32),
            np.full_like(x, i, shape=(4, 3)), np.full_like(i, x[0], shape=(2, 3), dtype=np.float32))


_NONE = None
_SHAPE = (2, 3)
_LAST = -1
_TRUE = True


@case("zeros_like", "full_like", "argmax", "cumsum", "roll", "concatenate", "repeat", args=(arr((2, 3)),), jax=True)
def static_arguments_by_name(x):
    """Static arguments a rule cannot read (names of module constants): helpers decide while specializing."""
    return (np.zeros_like(x, shape=_NONE), np.full_like(x, 2.0, shape=_SHAPE), np.ones_like(x, shape=_SHAPE),
            np.argmax(x, axis=_NONE), np.cumsum(x, axis=_NONE), np.roll(x, 1, axis=_NONE), np.repeat(x, 2, axis=_NONE),
            np.concatenate([x, x + 1], axis=_NONE), np.sum(x, axis=_NONE), np.flip(x, axis=_NONE),
            np.argmin(x, axis=_NONE, keepdims=_TRUE), np.argmax(x, axis=_LAST, keepdims=_TRUE), np.cumsum(x, axis=_LAST),
            np.concatenate([x, x], axis=_LAST), np.sum(x, axis=_LAST, keepdims=_TRUE), np.roll(x, 2, axis=_LAST))


# -- AD primitives (in derivative source) ------------------------------------------------------------
@case("index_cleared", args=(arr((4, 5)), Ex(tuple(np.int64(k) for k in (2, -1, 0, 3, 1)))))
def index_cleared_keys(g, i):
    return index_cleared(g, g, 1), index_cleared(g, g, (slice(1, 3),)), index_cleared(g, g, (slice(None), i))


@case("taken", args=(arr((4, 5)), np.array([True, False, True, True])))
def takens(x, p):
    """A value a batched branch reads (vmap(grad(vmap(f)))): the test batched or not, the value batched or not."""
    return taken(x, p), taken(x[:, 0], p, False), taken(x, x[:, 0] > 0.5), taken(np.sum(x), np.any(p))


@case("taken_bar", args=(arr((4, 5)), np.array([True, False, True, True])))
def taken_bars(g, p):
    """``taken``'s cotangent batched (jacrev(vmap(f)) through a branch on batched data): either operand batched."""
    return taken_bar(g, p), taken_bar(g[:, 0], p, False), taken_bar(g, g[:, 0] > 0.5), taken_bar(np.sum(g), np.any(p))


@case("winning_writes", args=(arr((4, 5)), np.array([1, 3, 1, 1]), np.array([[1, 3, 1], [1, 0, 1]])), keyed=True)
def winning_writes_keys(x, i, j):
    """Which writes of ``x[key] = v`` land, per example: repeated rows and pairs, batched or not."""
    return winning_writes(x, i), winning_writes(x, (j, j)), winning_writes(x, (i, 2)), winning_writes(x, (slice(1, 3),))


@case("index_lands", args=(arr((4, 5)), np.array([1, 7, -1, -9]), np.array([[1, 6, 1], [-5, 0, 1]])), keyed=True)
def index_lands_keys(x, i, j):
    """Which writes of ``index_add(x, key, g)`` land (in range), per example: rows, pairs, a row beside a column."""
    return index_lands(x, i), index_lands(x, (j, j)), index_lands(x, (i, 2)), index_lands(x, (slice(1, 3),))


@case("in_place", args=(arr((2, 3), F32), arr(3), arr(3, F32)))
def in_place_updates(w, m, v):
    """``w op= v``: an array target keeps its dtype per example (float32 here), a 0-d one is bound again."""
    w = w * 1.0
    w *= m
    s = np.sum(v)
    s += m
    u = v * 2
    u -= m * w[0]
    return w, s, u


@case("index_update", "index_add", args=(arr((4, 5)), arr(5), Ex(tuple(np.int64(k) for k in (2, -1, 0, 3, 1)))))
def index_updates(x, v, i):
    return (index_update(x, 1, v), index_update(x, (slice(1, 3),), v), index_update(x, (Ellipsis, slice(None, None, -2)), 7),
            index_update(x, (None, 2, slice(1, 4)), v[:3]), index_update(x, (slice(3, 0, -2), 1), v[:2]),
            index_add(x, 1, v), index_add(x, (slice(1, 3),), v), index_add(x, (Ellipsis, slice(None, None, -2)), 1.5),
            index_add(x, (None, 2, slice(1, 4)), v[:3]))


@case("index_update", "index_add", args=(arr((4, 5)), arr(5), Ex(tuple(np.int64(k) for k in (2, -1, 0, 3, 1)))))
def index_updates_dynamic(x, v, i):
    """A batched key updates example by example."""
    return index_update(x, i, v), index_update(x, (slice(None), i), 2), index_add(x, i, v), index_add(x, (i, 1), 1.5)


@case("index_update", "index_add", args=(arr((4, 5, 6)), arr((3, 6)), np.array([3, 0, 2]), _INDEX),
      configs=[((0, None, None, None), 0), ((None, 0, 0, 0), 0), ((0, 0, None, None), 0), ((1, -1, 1, -1), -1)])
def index_updates_gather(x, v, i, k):
    """Integer-array keys (batched or not; side by side or separated) and repeated indices (index_add)."""
    return (index_update(x, (i, 0), v), index_update(x, (i, slice(None), i), v[:, :5]),
            index_update(x, (slice(None), i, 0), v[:, :4].T), index_update(x, (k, i), v), index_update(x, i, 1.5),
            index_add(x, (i, i % 5), v), index_add(x, ([1, 1, 2],), v[:, None, :]), index_add(x, (slice(None), k), v[0]),
            index_add(x, (i, slice(None), k), 2.0), index_add(x, (Ellipsis, i), v[:, :1].T))


@case("index_update", "getitem", "copy", args=(arr((4, 5)), arr(5), np.array([3, 1]), _INDEX))
def assignments(x, v, i, k):
    """``y[key] = v`` and ``y[key] += v`` in user code (functional updates)."""
    y = x.copy()
    y[k] = v
    y[:, 0] += 1.0
    y[i, k] = 2 * v[:2]
    y[1:3] += v
    return y


# -- sorting and order statistics ---------------------------------------------------------------
@case("sort", "argsort", "partition", "argpartition", "median", "quantile", "percentile", args=(arr((3, 4)),),
      jax=True)
def sorts(x):
    return (np.sort(x), np.sort(x, axis=0), np.argsort(x, axis=0), np.partition(x, 1)[..., 1],
            np.take_along_axis(x, np.argpartition(x, 2, axis=0), axis=0)[2], np.median(x, axis=1),
            np.median(x), np.quantile(x, 0.25, axis=0), np.percentile(x, 60, keepdims=True))


@case("sort", "argsort", "median", "quantile", "percentile", args=(arr((2, 3, 4)),))
def sorts_flat(x):
    return (np.sort(x, axis=None), np.argsort(x, axis=None), np.median(x, axis=(0, 2)),
            np.quantile(x, [0.1, 0.5], axis=1), np.percentile(x, (20, 80), axis=(-1, 0), keepdims=True))


@case("searchsorted", "lexsort", args=(np.sort(arr(6)), arr((2, 3)), arr(3, I32, 0, 2)), jax=True)
def searches(a, v, k):
    a = np.sort(a)  # (the examples of a are permutations)
    return (np.searchsorted(a, v), np.searchsorted(a, v[0], side="right"), np.searchsorted(a, 0.5),
            np.lexsort([v[0], k]), np.lexsort((k, v[1], v[0])))


# -- construction ---------------------------------------------------------------------------------
@case("array", "asarray", "diagonal", args=(arr((3, 4)), arr(4, F32)), jax=True)
def constructions(x, y):
    return (np.array([x[0], y]), np.array([[y[0], 1.0], [x[1, 2], 2.0]]), np.array(y, ndmin=3),
            np.asarray(x, dtype=np.float32), np.diagonal(x), np.diagonal(x, -1), x.diagonal(1))


@case("insert", "delete", "append", "pad", "resize", args=(arr((3, 4)), arr(4, F32)), jax=True)
def moves(x, v):
    return (np.insert(x, 1, v, axis=0), np.insert(x, 3, v[:3]), np.delete(x, 1, axis=1), np.append(x, v),
            np.append(x, x[:1], axis=0), np.pad(x, 2), np.pad(x, ((1, 0), (2, 3)), mode="reflect"),
            np.pad(x, 1, mode="edge"), np.pad(x, (2, 1), mode="wrap"), np.pad(v, 1, constant_values=-2.5),
            np.resize(x, (5, 3)), np.resize(v, 10))


@case("kron", "cross", args=(arr((2, 3)), arr(3, F32)), jax=True)
def kron_cross(a, b):
    return (np.kron(a, b), np.kron(b, a), np.cross(a, b), np.cross(b, a[:, ::-1]), np.cross(a.T, b, axisa=0),
            np.cross(a, b, axisc=0), np.cross(a[:, :2], b[:2]))


@case("meshgrid", args=(arr(3), arr(4, F32)), jax=True)
def meshgrids(x, y):
    a, b = np.meshgrid(x, y)
    c, d, e = np.meshgrid(y, x, y, indexing="ij")
    s, t = np.meshgrid(x, y, sparse=True)
    return a, b, c, d, e, s, t


@case("unbroadcast", "broadcast_like", args=(arr((2, 3, 4)), arr((3, 1))))
def unbroadcasts(g, x):
    return unbroadcast(g, x), broadcast_like(x, g), unbroadcast(g[0], x), broadcast_like(x[0], g), unbroadcast(g, g)


@case("expand_reduced", args=(arr((2, 4)), arr((2, 3, 4))))
def expand_reduceds(g, a):
    return (expand_reduced(g, a, 1, False), expand_reduced(g[:, None, :1], a, (1, -1), True),
            expand_reduced(g[0, 0], a, None, False), expand_reduced(g[None, :1, :1], a, None, True),
            expand_reduced(g[0], a, (0, -2), False))


# -- the tests ------------------------------------------------------------------------------------
# jax by default (every twin when thorough); the hypothesis tests check binary ufuncs, reductions, matmul and
# index keys against jax too
JAX_REPRESENTATIVE = {"unary_floats", "contractions", "einsums", "reshapes", "getitem_static", "takes"}
SPELLED = {"getitem": "[", "transpose": ".T", "matmul": " @ ", "index_update": "index_update(", "index_add": "index_add(",
           "unbroadcast": "unbroadcast(", "broadcast_like": "broadcast_like(", "expand_reduced": "expand_reduced(",
           "add": " + ", "subtract": " - ", "multiply": " * ", "true_divide": " / ", "floor_divide": " // ",
           "remainder": " % ", "power": " ** ", "less": " < ", "negative": "-"}  # (other than its path)


def test_every_primitive_has_a_batching_rule() -> None:
    """Every record has a ``batch`` rule, and a case here whose program calls it."""
    lacking = sorted(n for n, p in PRIMITIVES.items() if p.batch is None)
    assert not lacking, f"primitives without a batching rule: {lacking}"
    assert len({id(p) for p in PRIMITIVES.values()}) == len(PRIMITIVES)
    covered = {p for c in CASES for p in c.prims}
    missing = sorted(set(PRIMITIVES) - covered - COLLECTIVE_PRIMS)
    assert not missing, f"primitives without a vmap case in tests/test_vmap_primitives.py: {missing}"
    unknown = sorted(covered - set(PRIMITIVES))
    assert not unknown, f"cases for unregistered primitives: {unknown}"
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    for c in CASES:  # the case's program calls each primitive it is filed under
        text = srcjax.source(srcjax.compile(c.fn))
        for p in c.prims:
            spelled = [PRIMITIVES[p].path + "("] + ([SPELLED[p]] if p in SPELLED else [])
            assert any(t in text for t in spelled), f"{c.id}: the program does not call {p} ({spelled})"


def _configs() -> list[Any]:
    return [pytest.param(c, k, id=f"{c.id}-{k}") for c in CASES for k in range(len(c.configs))]


@pytest.mark.parametrize(("c", "k"), _configs())
def test_vmap_primitive(c: Case, k: int) -> None:
    in_axes, out_axes = c.configs[k]
    # jax once per case, on the configuration that batches every operand; by default only for a
    # representative set (each jax.jit costs as much as srcjax's compile), every twin when thorough
    last = k == len(c.configs) - 1
    twin = c.jax and last and (THOROUGH or c.id in JAX_REPRESENTATIVE)
    check_vmap(c.fn, c.args, in_axes, out_axes, twin=jax_twin(c.fn) if twin else None, tol=c.tol,
               loops=c.loops, seed=zlib.crc32(c.id.encode()))


# -- hypothesis: random shapes, in_axes and out_axes -------------------------------------------------
def _axis_spec(draw: Any, ndim: int, none: bool) -> Any:
    """A mapped axis for a per-example rank ``ndim`` (negative ones too), or None."""
    options = st.integers(-(ndim + 1), ndim)
    return draw(st.none() | options) if none else draw(options)


def _out_axes(draw: Any, fn: Callable[..., Any], args: tuple[Any, ...]) -> int:
    """An ``out_axes`` valid for every output of ``fn(*args)``."""
    return _axis_spec(draw, min(np.ndim(leaf) for leaf in _leaves(run_numpy(fn, *args))), False)


def _binary_fn(uf: Any) -> Callable[..., Any]:
    def binary(x, y):
        return uf(x, y)

    return binary


BINARY = sorted(n for n, (uf, _) in UFUNCS.items() if uf.nin == 2)


@st.composite
def binary_vmaps(draw: Any) -> tuple[Any, ...]:
    name = draw(st.sampled_from(BINARY))
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, min_side=1, max_side=3))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if name.startswith("bitwise") or name.endswith("_shift"):  # integer ufuncs
        x, y = (rng.integers(0, 9, size=s) for s in shapes.input_shapes)
    else:
        x, y = (rng.uniform(0.5, 2, size=s) for s in shapes.input_shapes)
    in_axes = (_axis_spec(draw, x.ndim, True), _axis_spec(draw, y.ndim, True))
    if in_axes == (None, None):
        in_axes = (None, 0)
    uf = UFUNCS[name][0]
    return _binary_fn(uf), _binary_fn(getattr(jnp, uf.__name__)), (x, y), in_axes, _out_axes(draw, uf, (x, y))


@HYPOTHESIS
@given(binary_vmaps())
def test_binary_ufuncs_random_axes(call: tuple[Any, ...]) -> None:
    fn, twin, args, in_axes, out_axes = call
    check_vmap(fn, args, in_axes, out_axes, twin=twin)


def _reduction_fn(fn: Any, axis: Any, keepdims: bool) -> Callable[..., Any]:
    def reduction(x):
        return fn(x, axis=axis, keepdims=keepdims)

    return reduction


@st.composite
def reduction_vmaps(draw: Any) -> tuple[Any, ...]:
    name = draw(st.sampled_from(REDUCTIONS))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3))
    nd = len(shape)
    if name in ("argmax", "argmin"):
        axis = draw(st.none() | st.integers(-nd, nd - 1)) if nd else None
    else:
        axes = draw(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd)) if nd else []
        axes = [a - nd if draw(st.booleans()) else a for a in axes]
        axis = draw(st.sampled_from([None, tuple(axes)] + ([axes[0]] if axes else [])))
    keepdims = draw(st.booleans())
    x = np.random.default_rng(draw(st.integers(0, 2**16))).uniform(-2, 2, shape)
    if name in ("all", "any"):
        x = x > 0
    fn = _reduction_fn(getattr(np, name), axis, keepdims)
    twin = _reduction_fn(getattr(jnp, name), axis, keepdims)
    return fn, twin, (x,), _axis_spec(draw, nd, False), _out_axes(draw, fn, (x,))


@HYPOTHESIS
@given(reduction_vmaps())
def test_reductions_random_axes(call: tuple[Any, ...]) -> None:
    fn, twin, args, in_axes, out_axes = call
    check_vmap(fn, args, in_axes, out_axes, twin=twin)


def matmul(a, b):
    return np.matmul(a, b)


@st.composite
def matmul_vmaps(draw: Any) -> tuple[Any, ...]:
    n, k, m = (draw(st.integers(1, 3)) for _ in range(3))
    lead = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=1, min_side=1, max_side=3))
    ra, rb = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sa = (k,) if ra == 1 else lead.input_shapes[0][:ra - 2] + (n, k)
    sb = (k,) if rb == 1 else lead.input_shapes[1][:rb - 2] + (k, m)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    a, b = rng.normal(size=sa), rng.normal(size=sb)
    in_axes = (_axis_spec(draw, a.ndim, True), _axis_spec(draw, b.ndim, True))
    if in_axes == (None, None):
        in_axes = (0, None)
    return (a, b), in_axes, _out_axes(draw, matmul, (a, b))


@HYPOTHESIS
@given(matmul_vmaps())
def test_matmul_random_axes(call: tuple[Any, ...]) -> None:
    args, in_axes, out_axes = call
    check_vmap(matmul, args, in_axes, out_axes, twin=jax_twin(matmul), tol={"float64": (1e-10, 1e-10)})


# -- hypothesis: random index keys (getitem and index_add), written as source -------------------------
_COUNTER = itertools.count()


def define(src: str, name: str, namespace: dict[str, Any]) -> Any:
    """Exec ``src`` (registered with linecache, so srcjax can read it) and return ``name``."""
    filename = f"<test_vmap_primitives #{next(_COUNTER)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), namespace)
    return namespace[name]


_SLICES = {":": "slice(None)", "1:": "slice(1, None)", "::-1": "slice(None, None, -1)", ":-1": "slice(None, -1)",
           "::2": "slice(None, None, 2)"}


@st.composite
def index_vmaps(draw: Any) -> tuple[Any, ...]:
    """``x[key]`` and ``index_add(x, key, v)`` for a random key of integers, slices, ``...``, None and
    integer arrays / run-time integers (arguments, batched or not)."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    n_arrays = draw(st.integers(0, 2))
    index_shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, min_side=1, max_side=3))
    kinds = draw(st.lists(st.sampled_from(["int", "slice", "array", "ellipsis", "none"]), min_size=1,
                          max_size=len(shape)))
    arrays = 0
    for j, k in enumerate(kinds):  # the first n_arrays slots that may hold an index become arguments
        if k in ("int", "slice") and arrays < n_arrays:
            kinds[j] = "array"
        arrays += kinds[j] == "array"
    if "array" in kinds:
        kinds = [k for k in kinds if k != "none"]  # (srcjax refuses None beside integer arrays)
    if kinds.count("ellipsis") > 1:
        kinds = [k for j, k in enumerate(kinds) if k != "ellipsis" or j == kinds.index("ellipsis")]
    elems, args, names = [], [], []
    axis = 0
    for k in kinds:
        if k == "ellipsis":
            elems.append("...")
            axis = len(shape) - len([q for q in kinds[kinds.index(k) + 1:] if q not in ("none", "ellipsis")])
            continue
        if k == "none":
            elems.append("None")
            continue
        size = shape[axis]
        if k == "int":
            elems.append(str(draw(st.integers(-size, size - 1))))
        elif k == "slice":
            elems.append(draw(st.sampled_from(list(_SLICES))))
        else:
            ishape = index_shapes.input_shapes[len(args) % 2] if draw(st.booleans()) else ()
            names.append(f"i{len(args)}")
            elems.append(names[-1])
            args.append(rng.integers(-size, size, size=ishape) if ishape else np.int64(rng.integers(-size, size)))
        axis += 1
    key = ", ".join(elems) if len(elems) > 1 else elems[0] + ("," if elems[0] == "..." else "")
    key_tuple = "(" + ", ".join(_SLICES.get(e, "Ellipsis" if e == "..." else e) for e in elems) + ",)"
    x = rng.normal(size=shape)
    target = np.shape(x[eval(f"np.s_[{key}]", {"np": np, **dict(zip(names, args))})])
    v = rng.normal(size=target[draw(st.integers(0, len(target))):])
    params = ", ".join(["x", "v"] + names)
    fn = define(f"def index_case({params}):\n    return x[{key}], index_add(x, {key_tuple}, v)\n", "index_case",
                {"np": np, "index_add": index_add})
    twin = define(f"def index_twin({params}):\n    return x[{key}], x.at[{key}].add(v)\n", "index_twin", {"np": jnp})
    all_args = (x, v, *args)
    in_axes = tuple(_axis_spec(draw, np.ndim(a), True) for a in all_args)
    if all(a is None for a in in_axes):
        in_axes = (0,) + in_axes[1:]
    return fn, twin, all_args, in_axes, _out_axes(draw, fn, all_args)


@HYPOTHESIS
@given(index_vmaps())
def test_index_keys_random_axes(call: tuple[Any, ...]) -> None:
    fn, twin, args, in_axes, out_axes = call
    check_vmap(fn, args, in_axes, out_axes, twin=twin)


# -- composition: vmap of a gradient (derivative source: unbroadcast, expand_reduced, index_add, ...) -----
def mlp_loss(w, x):
    h = np.tanh(x @ w[:, :3])
    s = np.sum(h * w[0, :3], axis=-1)
    return np.sum(s ** 2) + np.max(w[1:, 1]) + np.sum(np.cumsum(h, axis=0)[-1] * w[2, 1:4])


@pytest.mark.parametrize("in_axes", [(None, 0), (0, 0)])
def test_vmap_of_grad(in_axes: Axes) -> None:
    rng = np.random.default_rng(1)
    args = (rng.normal(size=(4, 5)), rng.normal(size=(2, 4)))
    bargs, per = batched_args(args, in_axes, 7)
    g = srcjax.grad(mlp_loss)
    expected = _stack([np.asarray(srcjax.numpy_function(g)(*p)) for p in per], 0)
    v = srcjax.vmap(g, in_axes=in_axes)
    assert_same(v(*bargs), expected, "XLA", {"float64": (1e-10, 1e-10)})
    assert_same(run_numpy(srcjax.numpy_function(v), *bargs), expected, "generated program (NumPy)", NUMPY_TOL)
    ref = jax.jit(jax.vmap(jax.grad(jax_twin(mlp_loss)), in_axes=in_axes))(*bargs)
    assert_same(ref, expected, "jax.vmap(jax.grad)", {"": JAX_TOL}, dtypes=False)


def sliding(x, i):
    return x[i:i + 2]


def test_batched_slice_bound_is_refused() -> None:
    """A slice bound that differs between examples has no static length: refused with a clear message."""
    with pytest.raises(srcjax.TranspileError, match="slice bound .* depends on a mapped argument"):
        srcjax.vmap(sliding, in_axes=(None, 0))(np.arange(5.0), np.array([0, 1]))
