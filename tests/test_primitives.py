"""Registry-driven primitive tests: every entry of the primitive table, three oracles.

Each case is a small function in NumPy spelling (``np.swapaxes(x, 0, 2)``) with
its arguments. For every case:

(a) ``srcjax.compile(f)(*args)`` (XLA) equals ``f(*args)`` run by NumPy: same
    structure, shape and dtype exactly, values equal (integers, booleans) or
    close to a tight, dtype-dependent tolerance (floats);
(b) ``srcjax.numpy_function(f)(*args)`` (the generated source run by NumPy)
    equals it exactly;
(c) ``srcjax.eval_shape(f, *args)`` predicts every shape and dtype.

Cases of one function or one family are grouped into one program (``add_group``). When
NumPy refuses a call, srcjax must refuse it too, at transpile time, with a
``TranspileError`` of the matching kind (ShapeError is a ValueError,
DTypeError a TypeError). ``test_every_primitive_has_a_case`` fails when a
primitive is registered without a case here. Hypothesis checks broadcasting of
the binary ufuncs and reductions over random shapes and axes.
"""

from __future__ import annotations

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
    in_place,
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
    conv,
    conv_general_dilated,
    digamma,
    dynamic_slice,
    dynamic_update_slice,
    erf,
    erf_inv,
    erfc,
    index_update,
    lgamma,
    polygamma,
    reduce_window,
    stop_gradient,
    with_sharding_constraint,
)
from srcjax.lax_slicing import window_gather, window_scatter_add
from srcjax.primitives.collectives import NAMES as COLLECTIVE_PRIMS
from srcjax.primitives.elementwise import UFUNCS
from srcjax.primitives.registry import PRIMITIVES
from srcjax.sharding import NamedSharding, P

TOL = {  # output dtype -> (rtol, atol) for XLA against NumPy
    "float16": (1e-3, 1e-3),
    "float32": (2e-6, 2e-6),
    "float64": (1e-13, 1e-13),
    "complex64": (2e-6, 2e-6),
    "complex128": (1e-13, 1e-13),
}
HYPOTHESIS = settings(max_examples=25, deadline=None, derandomize=True, database=None)


# -- the three oracles ---------------------------------------------------------------
def run_numpy(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of an empty slice, ddof >= n, ...
        return fn(*args)


def assert_same(actual: Any, expected: Any, who: str, tol: tuple[float, float] | None = None,
                exact: bool = False, path: str = "out") -> None:
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)), f"{who}: {path} is a {type(actual).__name__}, expected a sequence"
        assert len(actual) == len(expected), f"{who}: {path} has {len(actual)} items, expected {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, who, tol, exact, f"{path}[{i}]")
        return
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.shape == e.shape, f"{who}: {path} has shape {a.shape}, expected {e.shape}"
    assert a.dtype == e.dtype, f"{who}: {path} has dtype {a.dtype}, expected {e.dtype}"
    if exact or e.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e, err_msg=f"{who}: {path}")
    else:
        rtol, atol = tol or TOL[e.dtype.name]
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{who}: {path}")


def assert_shapes(shapes: Any, expected: Any, path: str = "out") -> None:
    if isinstance(expected, (tuple, list)):
        assert isinstance(shapes, (tuple, list)) and len(shapes) == len(expected), path
        for i, (s, e) in enumerate(zip(shapes, expected)):
            assert_shapes(s, e, f"{path}[{i}]")
        return
    e = np.asarray(expected)
    if not isinstance(shapes, srcjax.ShapeDtypeStruct):  # a static output (NumPy ran it at transpile time)
        assert_same(shapes, expected, "eval_shape (a static output)", exact=True, path=path)
        return
    assert (shapes.shape, shapes.dtype) == (e.shape, e.dtype), f"eval_shape: {path}: {shapes} vs {e.shape} {e.dtype}"


def check(fn: Callable[..., Any], *args: Any, tol: tuple[float, float] | None = None,
          compiled: srcjax.Compiled | None = None) -> None:
    """The three oracles and eval_shape agree on ``fn(*args)`` (or all refuse it)."""
    compiled = compiled or srcjax.compile(fn)  # one program (read, normalized once) for every oracle
    try:
        expected = run_numpy(fn, args)
    except Exception as e:  # NumPy refuses: srcjax must refuse too, before running anything
        kind = ValueError if isinstance(e, ValueError) else TypeError if isinstance(e, TypeError) else Exception
        with pytest.raises(srcjax.TranspileError) as ei:
            srcjax.eval_shape(compiled, *args)
        assert isinstance(ei.value, kind), f"NumPy raised {type(e).__name__}: {e}; srcjax raised {ei.value!r}"
        with pytest.raises(srcjax.TranspileError):
            compiled(*args)
        return
    assert_same(compiled(*args), expected, "XLA", tol)
    assert_same(run_numpy(srcjax.numpy_function(compiled), args), expected, "generated source", exact=True)
    assert_shapes(srcjax.eval_shape(compiled, *args), expected)


# -- the table of cases ------------------------------------------------------------------
@dataclass
class Case:
    prim: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    id: str
    tol: tuple[float, float] | None = None
    spelled: str | None = None  # how the generated source shows the primitive, if not by its path
    labels: tuple[str, ...] = ()  # a grouped case: what each of its calls is (for failure messages)
    xfail: str | None = None  # a known bug outside the primitive table, with where it is


CASES: list[Case] = []


def case(prim: str, *arg_sets: tuple[Any, ...], tol: tuple[float, float] | None = None,
         spelled: str | None = None, xfail: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as a case of ``prim``: one program calling it on each
    argument tuple NumPy accepts (see ``add_group``), one case per tuple NumPy refuses."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if len(arg_sets) <= 1:
            CASES.append(Case(prim, fn, arg_sets[0] if arg_sets else (), f"{prim}-{fn.__name__}", tol=tol,
                              spelled=spelled, xfail=xfail))
        else:
            add_group(prim, fn.__name__, _over_calls(fn, len(arg_sets[0])), [(None, a) for a in arg_sets],
                      tol=tol, spelled=spelled, xfail=xfail)
        return fn

    return register


_rng = np.random.default_rng(0)


def arr(shape: tuple[int, ...] | int, dtype: Any = np.float64, lo: float | None = None,
        hi: float | None = None, rng: np.random.Generator | None = None) -> np.ndarray:
    """Random test data: floats uniform in [lo, hi), ints in [lo, hi], bools half true."""
    rng = rng or _rng
    shape = (shape,) if isinstance(shape, int) else shape
    d = np.dtype(dtype)
    if d == np.bool_:
        return rng.random(shape) < 0.5
    if d.kind in "iu":
        lo = (0 if d.kind == "u" else -5) if lo is None else lo
        return rng.integers(int(lo), int(5 if hi is None else hi) + 1, size=shape).astype(d)
    return rng.uniform(-3 if lo is None else lo, 3 if hi is None else hi, size=shape).astype(d)


F32, F64, I32, I64, U8, BOOL = (np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.uint8,
                                                      np.bool_))
FLOAT_SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-300, -7.0])


# -- elementwise: every ufunc, generated from the table ------------------------------------
DOMAIN = {  # ufunc -> (lo, hi) of its test data
    "log": (0.1, 5), "log2": (0.1, 5), "log10": (0.1, 5), "sqrt": (0, 5), "reciprocal": (1, 5),
    "log1p": (-0.9, 3), "arcsin": (-0.95, 0.95), "arccos": (-0.95, 0.95), "arctanh": (-0.95, 0.95),
    "arccosh": (1, 4), "power": (0.1, 3),
}
INT_DOMAIN = {"reciprocal": (1, 5), "power": (0, 3), "floor_divide": (1, 5), "remainder": (1, 5), "fmod": (1, 5),
              "log": (1, 9), "log2": (1, 9), "log10": (1, 9), "sqrt": (0, 9), "arccosh": (1, 4)}


# Calls are grouped into one program, ``f(calls)``, which applies the primitive to every argument
# tuple of the list ``calls``: one test and one XLA compile per group rather than per call. A call
# that NumPy refuses gets a case of its own; srcjax must refuse it before compiling anything.
Maker = Callable[[list[Any]], Callable[..., Any]]


def _numpy_accepts(fn: Callable[..., Any], args: tuple[Any, ...]) -> bool:
    try:
        run_numpy(fn, args)
        return True
    except Exception:
        return False


def add_group(prim: str, name: str, make: Maker, calls: list[tuple[Any, tuple[Any, ...]]], **kw: Any) -> None:
    """One case for the calls ``(static spec, argument tuple)`` NumPy accepts, one per call it refuses."""
    accepted = [_numpy_accepts(make([spec]), ([a],)) for spec, a in calls]
    good = [c for c, ok in zip(calls, accepted) if ok]
    bad = [c for c, ok in zip(calls, accepted) if not ok]
    if good:
        labels = tuple(_label(spec, a) for spec, a in good)
        CASES.append(Case(prim, make([spec for spec, _ in good]), ([a for _, a in good],), f"{prim}-{name}",
                          labels=labels, **kw))
    for k, (spec, a) in enumerate(bad):
        CASES.append(Case(prim, make([spec]), ([a],), f"{prim}-{name}-refused{k}-{_label(spec, a)}", **kw))


def _label(spec: Any, args: tuple[Any, ...]) -> str:
    """``f32[2,3],i64[3]`` (and the static spec, if any)."""
    from srcjax.core import dtype_short_name

    parts = [f"{dtype_short_name(np.asarray(x).dtype)}[{','.join(map(str, np.shape(x)))}]"
             if isinstance(x, (np.ndarray, np.generic)) else repr(x) for x in args]
    return ",".join(parts) + (f",{spec}" if spec is not None else "")


def _over_calls(fn: Callable[..., Any], arity: int) -> Maker:
    """``fn`` (a user function: srcjax inlines it) applied to each argument tuple of ``calls``."""

    def make(specs: list[Any]) -> Callable[..., Any]:
        def many1(calls):
            return [fn(c[0]) for c in calls]

        def many2(calls):
            return [fn(c[0], c[1]) for c in calls]

        def many3(calls):
            return [fn(c[0], c[1], c[2]) for c in calls]

        return {1: many1, 2: many2, 3: many3}[arity]

    return make


def _unary(uf: np.ufunc) -> Maker:
    def make(specs: list[Any]) -> Callable[..., Any]:
        def f(calls):
            return [uf(c[0]) for c in calls]

        return f

    return make


def _binary(uf: np.ufunc) -> Maker:
    def make(specs: list[Any]) -> Callable[..., Any]:
        def f(calls):
            return [uf(c[0], c[1]) for c in calls]

        return f

    return make


def _with_scalar(uf: np.ufunc) -> Maker:
    """``spec`` is ("left" | "right", a Python scalar)."""

    def make(specs: list[Any]) -> Callable[..., Any]:
        def f(calls):
            return [uf(s[1], c[0]) if s[0] == "left" else uf(c[0], s[1]) for c, s in zip(calls, specs)]

        return f

    return make


def _data(name: str, dtype: np.dtype, shape: tuple[int, ...], operand: int = 0,
          rng: np.random.Generator | None = None) -> np.ndarray:
    """Data in the domain of ufunc ``name`` (``operand`` 1: a divisor or an exponent)."""
    if dtype.kind in "iu":
        divisor_like = name in ("floor_divide", "remainder", "fmod", "power")
        lo, hi = INT_DOMAIN.get(name, (None, None)) if operand == 1 or not divisor_like else (None, None)
        if name == "power" and operand == 0:
            lo, hi = -3, 3
        return arr(shape, dtype, lo, hi, rng)
    lo, hi = DOMAIN.get(name, (None, None))
    if name == "power" and operand == 1:
        lo, hi = -2, 2
    return arr(shape, dtype, lo, hi, rng)


I8, I16 = np.dtype(np.int8), np.dtype(np.int16)
_SPECIAL_GRID = np.meshgrid(FLOAT_SPECIALS, FLOAT_SPECIALS)
for _name, (_uf, _) in UFUNCS.items():
    if _uf.nin == 1:
        # np.reciprocal(bool) is int8(1.0 / 0) for False: undefined in C, platform-dependent
        _dts = [F32, F64, I32, U8] + [BOOL] * (_name != "reciprocal")
        add_group(_name, "dtypes", _unary(_uf),
                  [(None, (_data(_name, d, (2, 3)),)) for d in _dts] + [(None, (FLOAT_SPECIALS,))])
    else:
        _pairs = [(_data(_name, d, (2, 3)), _data(_name, d, (3,), 1)) for d in (F32, F64, I64, BOOL)]
        _pairs += [(_data(_name, I32, (3, 1)), _data(_name, F32, (1, 4), 1)),
                   (_data(_name, I8, (4,)), _data(_name, U8, (4,), 1)), tuple(_SPECIAL_GRID)]
        add_group(_name, "dtypes", _binary(_uf), [(None, p) for p in _pairs])
        add_group(_name, "python-scalars", _with_scalar(_uf),
                  [(("right", 2), (_data(_name, F32, (5,)),)), (("right", 1.5), (_data(_name, I16, (5,)),)),
                   (("left", 3), (_data(_name, I8, (5,), 1),)), (("right", True), (_data(_name, I32, (5,)),))])

_INT_EDGES = np.meshgrid(*[np.array([-7, -6, -1, 0, 1, 5, 6, 7], np.int32)] * 2)
for _name in ("floor_divide", "remainder", "fmod"):  # division by zero, signs, exact multiples
    add_group(_name, "int-edges", _binary(UFUNCS[_name][0]),
              [(None, tuple(_INT_EDGES)), (None, tuple(g.astype(np.uint8) for g in _INT_EDGES))])


def add_operator(x, y):
    return x + y * 2 - (x ** 2) / 3


case("add", (arr((2, 3)), arr(3, F32)), spelled="+")(add_operator)


@case("greater", (2, 3), (2.5, True), (np.float32(1.5), 2), (True, False))
def python_scalar_arguments(a, b):
    """Both operands weak: NumPy gives each its default dtype (int64, float64, bool)."""
    return np.greater(a, b), np.add(a, b), np.true_divide(a, b), np.maximum(a, b), np.equal(a, b)


# -- where / clip / round --------------------------------------------------------------
@case("where", (arr((2, 3)) > 0, arr((2, 3), F32), arr(3, F32)), (arr(3, BOOL), arr((2, 3), I32), arr((2, 1))),
      (arr((4,), I32), arr(4, U8), arr(4, BOOL)))
def where3(c, x, y):
    return np.where(c, x, y)


@case("where", (arr((2, 3), F32),), (arr(4, I32),))
def where_scalar(x):
    return np.where(x > 0, x, 0.5)


@case("clip", (arr((3, 4)),), (arr((3, 4), F32),), (arr(5, I32),))
def clip_scalars(x):
    return np.clip(x, -1, 2)


@case("clip", (arr((3, 4), F32), arr(4, F32) - 1, arr((3, 1), F64) + 1), (arr(6, I32), arr(6, I32), arr(6, I64)))
def clip_arrays(x, lo, hi):
    return np.clip(x, lo, hi)


@case("clip", (arr((3, 4), F32),), (FLOAT_SPECIALS,))
def clip_upper_only(x):
    return np.clip(x, None, 0.5), np.clip(x, 1, -1), np.clip(x, -0.5, 0.5)


@case("round", (arr((3, 4)) * 10,), (arr(6, F32) * 10,), (np.array([0.5, 1.5, 2.5, -0.5, -1.5, np.nan]),),
      (arr(6, I32),))
def round_default(x):
    return np.round(x)


@case("round", (arr((3, 4)) * 10,), (arr(6, F32) * 10,))
def round_decimals(x):
    return np.round(x, 2)


@case("round", (np.array([5, 15, 25, -15, -25, 14, 16, 0], np.int64),), (arr(8, F64) * 100,))
def round_negative_decimals(x):
    return np.round(x, -1)


@case("sinc", (arr((2, 3)),), (arr(5, F32),), (arr(4, I32),), (arr(3, BOOL),), (FLOAT_SPECIALS,),
      (np.array([0.0, 1.0, -2.0, 0.5]),), (arr((), F64),))
def sinc(x):
    return np.sinc(x)


@case("logaddexp", (arr(4), arr((3, 1), F32)), (np.array([-np.inf, np.inf, 1e300, -1e300, 0.0]),
                                              np.array([-np.inf, np.inf, 1e300, 1e300, 800.0])))
def logaddexp_stable(x, y):
    """No overflow for large operands; infinities of one sign give that infinity (x + y)."""
    return np.logaddexp(x, y), np.logaddexp2(x, y), np.logaddexp(x, 0.0)


@case("deg2rad", (arr((2, 3)),), (arr(3, I32),))
def degrees_radians(x):
    return np.radians(x), np.degrees(x), np.deg2rad(x), np.rad2deg(x)


# -- reductions -------------------------------------------------------------------------
def _reduction(fn: Callable[..., Any], axis: Any, keepdims: bool) -> Callable[..., Any]:
    def f(x):
        return fn(x, axis=axis, keepdims=keepdims)

    return f


def _reductions(fn: Callable[..., Any]) -> Maker:
    """``spec`` is (axis, keepdims)."""

    def make(specs: list[Any]) -> Callable[..., Any]:
        def f(calls):
            return [fn(c[0], axis=s[0], keepdims=s[1]) for c, s in zip(calls, specs)]

        return f

    return make


REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std", "all", "any", "argmax", "argmin"]
_NAN_INF = np.array([[1.0, np.nan, 3.0], [np.inf, -np.inf, 2.0], [0.0, -0.0, 5.0]])
for _name in REDUCTIONS:
    _small = (-2, 2) if _name == "prod" else (None, None)
    _calls: list[tuple[Any, tuple[Any, ...]]] = [((-1, False), (arr((2, 3, 4), d, *_small),))
                                                 for d in (F32, F64, I32, BOOL)]
    _x = arr((2, 3, 4), F32)
    _axes = [(None, False), (0, True), (None, True)]
    if _name not in ("argmax", "argmin"):
        _axes += [((0, -1), False), ((1, 2), True), ((), False)]
    _calls += [(spec, (_x,)) for spec in _axes]
    _calls += [((0, False), (arr((3, 2), U8),)), ((1, False), (_NAN_INF,)), ((1, False), (np.zeros((0, 3)),)),
               ((0, False), (np.zeros((0, 3)),)), ((None, False), (np.zeros((2, 0), np.int32),)),
               ((0, False), (arr((), F64),)), ((None, False), (arr((), I32),))]
    add_group(_name, "axes-dtypes", _reductions(getattr(np, _name)), _calls)


@case("sum", (arr((3, 4), I32),), (arr((3, 4), BOOL),))
def sum_dtype(x):
    return np.sum(x, axis=0, dtype=np.float32)


@case("cumsum", (arr((3, 4)),), (arr((3, 4), I32),), (arr((3, 4), BOOL),), (arr((2, 3, 4), F32),),
      (np.zeros((0, 4)),), (arr((), F64),))
def cumsum_axes(x):
    return np.cumsum(x), np.cumsum(x, axis=-1) if x.ndim else x, np.cumsum(x, axis=0, dtype=np.float32) if x.ndim \
        else x


@case("sum", (arr((3, 4)),), (arr((0, 4)),))
def sum_initial(x):
    return np.sum(x, axis=0, initial=10.0)


@case("max", (arr((3, 4), I32),), (np.zeros((0, 4), np.float32),))
def max_initial(x):
    return np.max(x, axis=0, initial=3)


@case("min", (arr((3, 4)),), spelled="np.min(")
def min_method(x):
    return x.min(axis=1)


@case("prod", (arr((3, 4), I64),))
def prod_dtype(x):
    return np.prod(x, axis=1, dtype=np.int32)


@case("mean", (arr((3, 4), I32),), (arr((3, 4), np.float16),))
def mean_dtype(x):
    return np.mean(x, axis=-1, dtype=np.float32)


@case("mean", (arr((3, 4), np.float16),), tol=(2e-3, 2e-3))
def mean_f16(x):
    return np.mean(x, axis=0)


@case("var", (arr((3, 4)),), (arr((3, 4), I32),), (arr((2, 4), F32),))
def var_ddof(x):
    return np.var(x, axis=0, ddof=1)


@case("std", (arr((3, 4)),), (arr((1, 4), F32),))
def std_ddof_keepdims(x):
    return np.std(x, axis=0, ddof=1, keepdims=True)


@case("argmax", (np.array([[1, 3, 3, 2], [7, 7, 7, 7]], np.int64),), (np.array([[True, False, True], [False] * 3]),),
      (np.array([[np.nan, 1.0, np.nan], [2.0, 2.0, np.nan], [-np.inf, -np.inf, -np.inf]]),))
def argmax_ties(x):
    return np.argmax(x, axis=1)


@case("argmin", (np.array([[1, 0, 0, 2], [7, 7, 7, 7]], np.uint8),), (np.array([[True, False, False], [True] * 3]),),
      (np.array([[np.nan, 1.0, np.nan], [2.0, 2.0, np.nan], [np.inf, np.inf, np.inf]]),))
def argmin_ties(x):
    return np.argmin(x, axis=1)


@case("argmax", (np.tile(np.array([0.5, 2.0, 2.0, -1.0, np.nan, 2.0]), 1000),),
      (np.repeat(np.arange(3000, dtype=np.int32) % 7, 3),))
def argmax_long(x):
    return np.argmax(x)


@case("argmin", (np.tile(np.array([0.5, -2.0, -2.0, 1.0]), 3000)[::-1].copy(),),
      (np.repeat(np.arange(3000, dtype=np.int32) % 7, 3)[::-1].copy(),))
def argmin_long(x):
    return np.argmin(x)


@case("cumprod", (arr((3, 4), lo=-2, hi=2),), (arr((3, 4), I32, -2, 2),), (arr((3, 4), BOOL),),
      (arr((2, 3, 4), F32, -2, 2),), (np.zeros((0, 4)),), (arr((), F64),))
def cumprod_axes(x):
    return np.cumprod(x), np.cumprod(x, axis=-1) if x.ndim else x, x.cumprod(axis=0, dtype=np.float32) if x.ndim \
        else x


@case("diff", (arr((3, 5)),), (arr((3, 5), I32),), (arr((3, 5), BOOL),), (arr((3, 5), U8),), (arr((2, 3, 4), F32),))
def diff_orders(x):
    return np.diff(x), np.diff(x, 2, axis=0), np.diff(x, n=0), np.diff(x, 4, axis=0), np.diff(x, axis=-2)


@case("diff", (arr(()),), (arr(3),))
def diff_bad(x):
    return np.diff(x, -1)


@case("trace", (arr((3, 4)),), (arr((4, 3), I32),), (arr((3, 3), BOOL),), (arr((2, 3, 4), F32),), (arr(3),))
def trace_offsets(x):
    return np.trace(x), np.trace(x, 1), np.trace(x, -2), x.trace(offset=5), np.trace(x, dtype=np.float32)


@case("trace", (arr((2, 3, 4)),))
def trace_axes(x):
    return np.trace(x, 0, 2, 0), np.trace(x, 1, axis1=-1, axis2=1)


@case("trace", (arr((2, 3)),))
def trace_same_axes(x):
    return np.trace(x, 0, 1, 1)


@case("diag", (arr(3),), (arr(4, I32),), (arr(2, BOOL),), (arr((3, 4)),), (arr((4, 3), I32),), (arr((3, 3), BOOL),),
      (arr((2, 3, 4)),), (arr(()),))
def diag(x):
    return np.diag(x), np.diag(x, 1), np.diag(x, -2), np.diag(x, k=7)


@case("triu", (arr((3, 4)),), (arr((4, 3), I32),), (arr((2, 3, 3), BOOL),), (arr(3, F32),), (arr(()),))
def triangles(x):
    return np.triu(x), np.triu(x, 1), np.triu(x, -5), np.triu(x, k=9)


@case("tril", (arr((3, 4)),), (arr((4, 3), I32),), (arr((2, 3, 3), BOOL),), (arr(3, F32),), (arr(()),))
def tril(x):
    return np.tril(x), np.tril(x, k=-1), np.tril(x, 2), np.tril(x, -9)


@case("roll", (arr((3, 4)),), (arr((3, 4), I32),), (arr(5, BOOL),), (np.zeros((0, 3)),))
def roll(x):
    return np.roll(x, 1), np.roll(x, -7), np.roll(x, 2, axis=-1), np.roll(x, (1, 2), axis=(0, -1)), \
        np.roll(x, (1, -3), axis=(0, 0)), np.roll(x, 0)


@case("roll", (arr((3, 4)),))
def roll_bad(x):
    return np.roll(x, (1, 2, 3), axis=(0, 1))


# -- linalg -------------------------------------------------------------------------------
MATMUL_SHAPES = [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 5)),
                 ((4,), (2, 4, 5)), ((2, 3, 4), (4,)), ((2, 1, 3, 4), (5, 4, 2)), ((0, 4), (4, 2)), ((3, 0), (0, 2))]


@case("matmul", *[(arr(a, F32), arr(b, F32)) for a, b in MATMUL_SHAPES], (arr((2, 3), I32), arr((3, 2), I32)),
      (arr((2, 3), I32), arr((3,), F32)), (arr((2, 3)), arr((3, 2), F32)), (arr((2, 3), BOOL), arr((3, 2), BOOL)),
      (arr((2, 3)), arr((2, 3))), (arr((2, 3)), arr(())))
def matmul(x, y):
    return np.matmul(x, y)


@case("matmul", (arr((2, 3, 4)), arr((2, 4, 3))), spelled="@")
def matmul_operator(x, y):
    return x @ y


@case("dot", *[(arr(a), arr(b)) for a, b in [((3, 4), (4, 5)), ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 2)),
                                            ((2, 3, 4), (4,)), ((2, 3, 4), (5, 4, 2)), ((4,), (2, 4, 3)), ((), (2, 3)),
                                            ((2, 3), ())]],
      (arr((2, 3), I32), arr(3, I64)), (arr((2, 3), BOOL), arr(3, BOOL)), (arr((2, 3)), arr((2, 3))))
def dot(a, b):
    return np.dot(a, b)


@case("inner", (arr(4), arr(4)), (arr((2, 4), F32), arr((3, 4), F32)), (arr((2, 3, 4)), arr(4)), (arr(()), arr((2, 3))),
      (arr(3, I32), arr(3, I32)), (arr(3, BOOL), arr(3, BOOL)), (arr(3), arr(4)))
def inner(a, b):
    return np.inner(a, b)


@case("outer", (arr(3), arr(4)), (arr((2, 2), F32), arr(3, I32)), (arr(3, BOOL), arr(2, BOOL)), (arr(()), arr(3)))
def outer(a, b):
    return np.outer(a, b)


@case("tensordot", (arr((2, 3, 4)), arr((3, 4, 5))), (arr((2, 3), I32), arr((2, 3), I32)), (arr(3), arr(4)),
      (arr((2, 3), BOOL), arr((3, 2), BOOL)))
def tensordot_default(a, b):
    return np.tensordot(a, b)


@case("tensordot", (arr((2, 3, 4)), arr((4, 3, 5))), (arr((2, 3, 4)), arr((4, 2, 5))))
def tensordot_pairs(a, b):
    return np.tensordot(a, b, axes=([1, -1], [1, 0]))


@case("tensordot", (arr((2, 3)), arr((3, 4))), (arr((2, 3)), arr((2, 4))))
def tensordot_one(a, b):
    return np.tensordot(a, b, axes=1)


@case("tensordot", (arr((2, 3)), arr((4,))))
def tensordot_outer(a, b):
    return np.tensordot(a, b, axes=0)


@case("einsum", (arr((2, 3)), arr((3, 4))), (arr((2, 3), I32), arr((3, 4), I32)), (arr((2, 3)), arr((4, 4))))
def einsum_matmul(a, b):
    return np.einsum("ij,jk->ik", a, b)


@case("einsum", (arr((5, 2, 3), F32), arr((5, 3, 4), F32)))
def einsum_batched(a, b):
    return np.einsum("bij,bjk->bik", a, b)


@case("einsum", (arr((2, 3, 4)),), (arr((2, 3, 4), I32),), (arr((2, 3, 4), BOOL),))
def einsum_unary(a):
    return np.einsum("ijk->ki", a)


@case("einsum", (arr(3), arr(3)), (arr(3, BOOL), arr(3, BOOL)))
def einsum_inner(a, b):
    return np.einsum("i,i->", a, b)


@case("einsum", (arr((2, 3)), arr(4)))
def einsum_outer_sum(a, b):
    return np.einsum("ij,k->kj", a, b)


@case("einsum", (arr((2, 3)), arr((3, 4))))
def einsum_implicit(a, b):
    return np.einsum("ij,jk", a, b), np.einsum("ji,jk", a, a), np.einsum("ij", a), np.einsum("ba", a)


@case("einsum", (arr((3, 3)),))
def einsum_trace(a):
    return np.einsum("ii->", a)


@case("einsum", (arr((2, 3)), arr((3, 4)), arr((4, 2))), (arr((2, 3), I32), arr((3, 4), I32), arr((4, 2), BOOL)))
def einsum_three(a, b, c):
    return np.einsum("ij,jk,kl->il", a, b, c), np.einsum("ij,jk,kl->jl", a, b, c), np.einsum("ij,jk,kl", a, b, c)


@case("einsum", (arr((3, 3)), arr((2, 3, 3))))
def einsum_diagonals(a, b):
    return np.einsum("ii->i", a), np.einsum("bii->b", b), np.einsum("ii,bjj->b", a, b), np.einsum("iij", b.T)


@case("einsum", (arr((4, 2, 3)), arr((4, 3, 5))), (arr((2, 3)), arr((3, 5))))
def einsum_ellipsis(a, b):
    return np.einsum("...ij,...jk->...ik", a, b), np.einsum("...ij,...jk", a, b), np.einsum("i...->...", a), \
        np.einsum("...j,j...->...", a, b.T)


@case("einsum", (arr((2, 3)), arr((4, 3))), (arr((2, 3)), arr(3)))
def einsum_bad(a, b):
    return np.einsum("ij,jk->ik", a, b)


@case("norm", (arr(5),), (arr((3, 4), F32),), (arr((2, 3), I32),), (np.zeros(0),), (arr(4, np.float16),))
def norm_default(x):
    return np.linalg.norm(x)


@case("norm", (arr((3, 4)),), (arr((3, 4), F32),))
def norm_axis_keepdims(x):
    return np.linalg.norm(x, axis=-1, keepdims=True)


@case("norm", (arr((2, 3, 4)),))
def norm_fro_axes(x):
    return np.linalg.norm(x, "fro", axis=(0, 2))


@case("norm", (arr(5),), (arr((2, 5)),))
def norm_ord2_vector(x):
    return np.linalg.norm(x, 2, axis=-1)


@case("norm", (arr(5),), (arr(5, I32),), (np.array([0.0, 3.0, -4.0, 0.0]),))
def norm_vector_ords(x):
    return (np.linalg.norm(x, 1), np.linalg.norm(x, np.inf), np.linalg.norm(x, -np.inf),
            np.linalg.norm(x, 0), np.linalg.norm(x, 3), np.linalg.norm(x, 0.5))


@case("norm", (arr((3, 4)),), (arr((3, 4), I32),))
def norm_matrix_ords(x):
    return (np.linalg.norm(x, 1), np.linalg.norm(x, -1), np.linalg.norm(x, np.inf), np.linalg.norm(x, -np.inf),
            np.linalg.norm(x, "fro"))


# -- shape (shape.py) ----------------------------------------------------------------------
@case("transpose", (arr((2, 3, 4)),), (arr((2, 3), BOOL),), (arr(()),))
def transpose_default(x):
    return np.transpose(x)


@case("transpose", (arr((2, 3, 4), I32),))
def transpose_axes(x):
    return np.transpose(x, (1, -1, 0))


@case("transpose", (arr((2, 3), F32),), spelled=".T")
def transpose_attr(x):
    return x.T


@case("transpose", (arr((2, 3, 4), F32),))
def transpose_bad_axes(x):
    return np.transpose(x, (0, 1, 1))


@case("reshape", (arr((2, 3, 4)),), (arr(24, I32),))
def reshape_infer(x):
    return np.reshape(x, (4, -1))


@case("reshape", (arr((2, 3, 4)),), (arr((0, 4)),))
def reshape_method(x):
    return x.reshape(-1, 2)


@case("reshape", (arr((2, 3)),))
def reshape_bad(x):
    return np.reshape(x, (4, 2))


@case("astype", *[(arr((2, 3), d),) for d in (F32, F64, I32, BOOL, U8)])
def astype_all(x):
    return x.astype(np.float32), x.astype(np.int32), x.astype(bool), x.astype(np.float16), x.astype(np.int8)


@case("astype", (np.array([-2.7, -0.5, 0.5, 2.7, 1e3, -0.0]),), (np.array([-2.5, 0.0, 3.9], np.float32),))
def astype_truncates(x):
    return np.astype(x, np.int64), np.astype(x, np.int16), np.astype(x, bool)


@case("astype", (arr((2, 3), I32),), (arr((2, 3), BOOL),), (arr((2, 3), F64, 0, 300),), (arr(3, np.int8),))
def astype_unsigned(x):
    return x.astype(np.uint8), x.astype(np.uint32), x.astype(np.uint64)


@case("copy", (arr((2, 3)),), (arr(3, BOOL),))
def copy_(x):
    return np.copy(x)


@case("getitem", (arr((4, 5, 6)),), (arr((4, 5, 6), I32),), spelled="[")
def getitem_basic(x):
    return x[1], x[-1, 2], x[1:3], x[::-1], x[::2, ::-2, 1:-1], x[..., None, 0], x[None, :, 0], x[:, 5:1:-2], \
        x[10:], x[2, ..., ::-3]


@case("getitem", (arr((4, 5)), np.int64(2)), (arr((4, 5)), np.int64(-1)), (arr((4, 5), I32), np.int32(3)),
      spelled="[")
def getitem_dynamic(x, i):
    return x[i], x[1:, i], x[i, ::-1]


@case("getitem", (arr((4, 5)),), spelled="[")
def getitem_out_of_bounds(x):
    return x[4]


@case("getitem", (arr((4, 5)),), spelled="[")
def getitem_too_many(x):
    return x[1, 2, 3]


@case("getitem", (arr((4, 5)),), spelled="[")
def getitem_zero_step(x):
    return x[::0]


@case("getitem", (arr((4, 5)),), spelled="[")
def getitem_float_slice(x):
    return x[1.0:]


@case("index_add", (arr((4, 5)), arr(5), np.int64(2)), (arr((4, 5), F32), arr(5, F64), np.int64(-1)),
      (arr((4, 5), I32), arr(5, I32), np.int32(0)))
def index_add_keys(z, g, i):
    return (index_add(z, 1, g), index_add(z, (slice(1, 3),), g), index_add(z, (Ellipsis, slice(None, None, -2)), 1.5),
            index_add(z, (None, 2, slice(1, 4)), g[:3]), index_add(z, i, g), index_add(z, (slice(None), i), 2))


@case("index_add", (arr((4, 5)), arr(3)))
def index_add_bad(z, g):
    return index_add(z, 1, g)


@case("unbroadcast", (arr((2, 3, 4)), arr((3, 1))), (arr((3, 4), F32), arr(4)), (arr(3), arr(3)))
def unbroadcast_shapes(g, x):
    return unbroadcast(g, x)


@case("unbroadcast", (arr(3), arr(4)))
def unbroadcast_bad(g, x):
    return unbroadcast(g, x)


@case("broadcast_like", (arr((3, 1)), arr((2, 3, 4))), (arr(4, F32), arr((3, 4))), (arr(3), arr(3)))
def broadcast_like_shapes(t, y):
    return broadcast_like(t, y)


@case("expand_reduced", (arr((2, 4)), arr((2, 3, 4))), (arr((2, 4), F32), arr((2, 3, 4))))
def expand_reduced_axes(g, a):
    return (expand_reduced(g, a, 1, False), expand_reduced(g[:, None, :1], a, (1, -1), True),
            expand_reduced(g[0, 0], a, None, False))


@case("index_update", (arr((4, 5)), arr(5), np.int64(2)), (arr((4, 5), F32), arr(5, F64), np.int64(-1)),
      (arr((4, 5), I32), arr(5, I32), np.int32(0)))
def index_update_keys(x, v, i):
    return (index_update(x, 1, v), index_update(x, (slice(1, 3),), v), index_update(x, (Ellipsis, slice(None, None, -2)), 7),
            index_update(x, (None, 2, slice(1, 4)), v[:3]), index_update(x, i, v), index_update(x, (slice(None), i), 2),
            index_update(x, (slice(3, 0, -2), i), v[:2]), index_update(x, (i, slice(5, 5)), v[:0]))


@case("in_place", (arr((2, 3), F32), arr(3, F64)), (arr(3, I64), arr(3, I32)), (arr(3, I64), arr(3, F64)),
      (arr(3), arr((2, 3))), (arr(3, np.complex128), arr(3, F32)))
def in_place_updates(w, m):
    """``w op= m`` (``in_place(w, w op m)``): cast into an array ``w`` (same_kind), a 0-d one bound again."""
    return in_place(w, w * m), in_place(np.sum(w), np.sum(w) * m)


@case("taken", (arr((4, 5)), np.array([True, False, True, True])), (arr(3, F32), np.array([False, True, True])))
def takens(x, p):
    """A value a branch on batched data reads (its value: ``x`` itself)."""
    return taken(x, p), taken(x, p, False), taken(x[0], p[0])


@case("taken_bar", (arr((4, 5)), np.array([True, False, True, True])), (arr(3, F32), np.array([False, True, True])))
def taken_bars(g, p):
    """``taken``'s cotangent: ``g`` where the test is ``keep``, exactly zero elsewhere (the test's axes lead)."""
    return taken_bar(g, p), taken_bar(g, p, False), taken_bar(g[0], p[0])


@case("index_cleared", (arr((4, 5)), np.int64(2)), (arr((4, 5), F32), np.int64(-1)))
def index_cleared_keys(g, i):
    """``index_update``'s cotangent for ``x`` (derivative code): ``g`` with the item zero."""
    return index_cleared(g, g, 1), index_cleared(g, g, (slice(1, 3),)), index_cleared(g, g, (slice(None), i))


@case("winning_writes", (arr((4, 5)), np.array([1, 3, 1, 1]), np.int64(2)), (arr((4, 5), F32), np.array([0, 2, 1, 3]),
                                                                             np.int64(-1)))
def winning_writes_keys(x, i, k):
    """Which writes of ``x[key] = v`` land (``index_update``'s cotangent of ``v``): the last of a repeated index."""
    return (winning_writes(x, i), winning_writes(x, (i, i[::-1] + 1)), winning_writes(x, (np.array([[1], [1]]), i)),
            winning_writes(x, k), winning_writes(x, (slice(1, 3), k)), winning_writes(x, (Ellipsis, slice(None, None, 2))))


@case("index_lands", (arr((4, 5)), np.array([1, 7, -1, -9]), np.int64(2)), (arr((4, 5), F32), np.array([0, 4, 3, 3]),
                                                                            np.int64(-7)))
def index_lands_keys(x, i, k):
    """Which writes of ``index_add(x, key, g)`` land (its cotangent of ``g``): False where an index is out of range
    (the write dropped, JAX's ``.at[].add``), repeated ones each True (they accumulate)."""
    return (index_lands(x, i), index_lands(x, (slice(1, 3), i)), index_lands(x, k), index_lands(x, (k, slice(None))),
            index_lands(x, (slice(None), k)), index_lands(x, (Ellipsis, slice(None, None, 2))))


@case("erf", (arr((2, 3)),), (arr(5, F32),), (arr(4, I32),), (arr(3, BOOL),), (FLOAT_SPECIALS,), (arr((), F64),),
      tol=(2e-7, 2e-7))
def erf_values(x):
    """``srcjax.lax.erf`` (NumPy has none): math.erf per element, XLA's ``chlo.erf`` compiled."""
    return erf(x), erf(x * 3)


_SPECIAL_ARGS = ((arr((2, 3)),), (arr(5, F32),), (arr(4, I32),), (FLOAT_SPECIALS,))


@case("lgamma", *_SPECIAL_ARGS, tol=(2e-6, 2e-6))
def lgamma_values(x):
    """``srcjax.lax``'s special functions (NumPy has none): the standard library per element, or a series
    (``srcjax/lax_special.py``); XLA's CHLO ops compiled. Poles, infinities and NaN included."""
    return lgamma(x), lgamma(x * 3)


@case("digamma", *_SPECIAL_ARGS, tol=(2e-6, 2e-6))
def digamma_values(x):
    return digamma(x), digamma(x * 3)


@case("polygamma", *_SPECIAL_ARGS, tol=(2e-6, 2e-6))
def polygamma_values(x):
    """Down to -9 (XLA's chlo.polygamma, jax's too, loses every digit below -5: the lowering reflects there)."""
    return polygamma(1, x), polygamma(2, x * 3), polygamma(0, x), polygamma(3, x * 3 - 1.5)


@case("erfc", *_SPECIAL_ARGS, tol=(2e-6, 2e-6))
def erfc_values(x):
    return erfc(x), erfc(x * 3)


@case("erf_inv", *_SPECIAL_ARGS, tol=(2e-6, 2e-6))
def erf_inv_values(x):
    return erf_inv(x), erf_inv(np.tanh(x))


@case("conv_general_dilated", (arr((2, 3, 6, 5)), arr((4, 3, 3, 2))), (arr((2, 3, 6, 5), F32), arr((4, 3, 3, 2), F32)),
      (arr((2, 3, 6, 5), I32), arr((4, 3, 3, 2), I32)))
def conv_(x, w):
    """``srcjax.lax.conv_general_dilated`` (JAX's): strides, string and explicit (negative) padding, both
    dilations, another layout, feature groups, a 1-D convolution; more in tests/test_windows.py."""
    nhwc = conv_general_dilated(np.transpose(x, (0, 2, 3, 1)), np.transpose(w, (2, 3, 1, 0)), (1, 1), "SAME_LOWER",
                                dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return (conv_general_dilated(x, w, (1, 1), "SAME"), conv_general_dilated(x, w, (2, 1), "VALID", rhs_dilation=(2, 1)),
            conv_general_dilated(x, w, (1, 2), [(1, 0), (2, -1)], (2, 1)), conv(x, w, (1, 1), "VALID"), nhwc,
            conv_general_dilated(x[:, :2], w[:2, :1], (1, 1), "SAME", feature_group_count=2),
            conv_general_dilated(x[:, :, 0], w[:, :, 0], (2,), "SAME"))


@case("conv_general_dilated", (arr((2, 3, 6, 5)), arr((4, 2, 3, 2))), (arr((2, 3, 6, 5)), arr((4, 3, 3, 2), F32)),
      (arr((2, 3, 6, 5)), arr((4, 3, 2)),))
def conv_checked(x, w):
    """A kernel whose input features do not fit (refused), two dtypes (promoted, as NumPy), a kernel of
    another rank (refused)."""
    return conv_general_dilated(x, w, (1, 1), "SAME")


@case("reduce_window", (arr((2, 6, 5)),), (arr((2, 6, 5), F32),), (arr((2, 6, 5), I32),), (arr((2, 6, 5), BOOL),))
def reduce_window_(x):
    """``srcjax.lax.reduce_window`` with each monoid, padding, strides and both dilations."""
    return (reduce_window(x, 0, np.add, (1, 2, 2), (1, 2, 2), "VALID"),
            reduce_window(x, -np.inf if x.dtype.kind == "f" else 0, np.maximum, (1, 3, 3), (1, 1, 1), "SAME"),
            reduce_window(x, 1, np.multiply, (2, 2, 1), padding=[(0, 1), (1, 0), (0, 0)], window_dilation=(1, 2, 1)),
            reduce_window(x, 5, np.minimum, (1, 2, 2), (1, 2, 1), "SAME_LOWER", base_dilation=(1, 2, 1)))


@case("reduce_window", (arr((2, 6, 5)),))
def reduce_window_refused(x):
    return reduce_window(x, 0.0, np.subtract, (1, 2, 2))


@case("bitcast_convert_type", (arr((2, 3), F32),), (arr((2, 3)),), (np.array([0, 1, 0x3F800000, 0xFFFFFFFF], np.uint32),))
def bitcast_round_trip(x):
    """The bits of a float as an integer of its width, and back (JAX's ``lax.bitcast_convert_type``)."""
    as_int = bitcast_convert_type(x, np.uint32 if x.dtype.itemsize == 4 else np.uint64)
    as_signed = bitcast_convert_type(x, np.int32 if x.dtype.itemsize == 4 else np.int64)
    back = bitcast_convert_type(as_int, np.float32 if x.dtype.itemsize == 4 else np.float64)
    return as_int, as_signed, back


@case("bitcast_convert_type", (arr(3, F32),))
def bitcast_other_width(x):
    return bitcast_convert_type(x, np.float64)


@case("index_update", (arr((4, 5)), arr(3)))
def index_update_bad(x, v):
    return index_update(x, 1, v)


ONE_DEVICE = NamedSharding(srcjax.make_mesh((1,), ("x",)), P("x"))  # (tests/test_spmd.py: on 4 devices)


@case("with_sharding_constraint", (arr((2, 3)),), (arr(4, F32),))
def sharding_constraint(x):
    """On one device the identity (``sdy.sharding_constraint`` on a mesh of several)."""
    return with_sharding_constraint(np.sin(x), ONE_DEVICE) * 2.0


@case("dynamic_slice", (arr((3, 4)), np.int64(2)), (arr((3, 4), I32), np.int32(-9)), (arr((3, 4), F32), np.uint8(7)))
def dynamic_slice_(x, i):
    """JAX's ``lax.dynamic_slice``: each start clamped so that the window fits (tests/test_lax_dynamic.py)."""
    return dynamic_slice(x, (i, 1), (2, 3)), dynamic_slice(x, (0, i), (3, 2)), dynamic_slice(x, (1, 2), (1, 1))


@case("dynamic_update_slice", (arr((3, 4)), arr((2, 2)), np.int64(2)), (arr((3, 4), I32), arr((2, 2), I32), np.int32(-1)))
def dynamic_update_slice_(x, u, i):
    return dynamic_update_slice(x, u, (i, i)), dynamic_update_slice(x, u[:1], (1, i)), dynamic_update_slice(x, x, (i, 0))


@case("window_gather", (arr((5, 4)), np.array([[0, 1], [4, -1], [-7, 9], [2, 2]])),
      (arr((5, 4), I32), np.array([[1, 0], [3, 3]], np.int32)))
def window_gather_(x, s):
    """vmap of dynamic_slice over start rows: every window in one gather (clamped as dynamic_slice's)."""
    return window_gather(x, s, (2, 3)), window_gather(x, s, (5, 1), False)


@case("window_scatter_add", (arr((4, 2, 3)), np.array([[0, 1], [4, -1], [-7, 9], [1, 1]])))
def window_scatter_add_(g, s):
    """window_gather's transpose: the windows added into zeros (overlapping ones summed)."""
    return window_scatter_add(g, s, (5, 4)), window_scatter_add(g[:, :1], s, (3, 3), False)


@case("stop_gradient", (arr((2, 3)),), (arr(4, I32),))
def stop_gradient_(x):
    """The identity, with a zero derivative."""
    return stop_gradient(x * 2), stop_gradient(x)


@case("take", (arr((3, 4)), np.array([0, 2, 2, -1])), (arr((3, 4), I32), np.array([[1, 0], [3, 3]], np.int32)),
      (arr(5, BOOL), np.array([4, 0], np.uint8)))
def take(x, i):
    return np.take(x, i), np.take(x, i % 3, axis=0), np.take(x, i, axis=-1), np.take(x, 1)


@case("take", (arr((3, 4)), np.array([0.0, 1.0])))
def take_float_indices(x, i):
    return np.take(x, i)


@case("take_along_axis", (arr((3, 4)), np.array([[0, 3], [1, 1], [2, -1]])), (arr((3, 4), I32), np.array([[1], [0], [3]])),
      (arr((3, 4), BOOL), np.array([[0, 1, 2, 3, 3]])))
def take_along_axis(x, i):
    return np.take_along_axis(x, i, axis=1), np.take_along_axis(x, i % 3, axis=-1), \
        np.take_along_axis(x, np.argmax(x, axis=0, keepdims=True), axis=0), np.take_along_axis(x.ravel(), i[0], None)


@case("take_along_axis", (arr((3, 4)), np.array([0, 1])), (arr((3, 4)), np.array([[0, 1]], np.float64)))
def take_along_axis_bad(x, i):
    return np.take_along_axis(x, i, axis=1)


# -- shape_ops -----------------------------------------------------------------------------
@case("ravel", (arr((2, 3, 4)),), (arr((), I32),), (arr((2, 0)),))
def ravel(x):
    return np.ravel(x)


@case("ravel", (arr((2, 3, 4), I32),))
def ravel_order_f(x):
    return np.ravel(x, order="F"), x.ravel(), x.flatten()


@case("expand_dims", (arr((2, 3)),), (arr((), BOOL),))
def expand_dims(x):
    return np.expand_dims(x, 0), np.expand_dims(x, -1), np.expand_dims(x, (0, -1)), np.expand_dims(x, (2, 0))


@case("expand_dims", (arr((2, 3)),))
def expand_dims_bad(x):
    return np.expand_dims(x, (0, 0))


@case("squeeze", (arr((1, 3, 1, 2)),), (arr((1, 1), I32),))
def squeeze_all(x):
    return np.squeeze(x), x.squeeze()


@case("squeeze", (arr((1, 3, 1, 2)),))
def squeeze_axes(x):
    return np.squeeze(x, axis=-2), np.squeeze(x, axis=(0, 2))


@case("squeeze", (arr((1, 3, 1, 2)),))
def squeeze_not_one(x):
    return np.squeeze(x, axis=1)


@case("atleast_1d", (arr(()),), (arr(3, I32),), (arr((2, 3)),))
def atleast_1d(x):
    return np.atleast_1d(x)


@case("atleast_2d", (arr(()),), (arr(3, I32),), (arr((2, 3, 4)),))
def atleast_2d(x):
    return np.atleast_2d(x)


@case("atleast_3d", (arr(()),), (arr(3, I32),), (arr((2, 3)),), (arr((2, 3, 4, 5)),))
def atleast_3d(x):
    return np.atleast_3d(x)


@case("atleast_2d", (arr(3), arr((2, 2), I32)))
def atleast_2d_many(x, y):
    return list(np.atleast_2d(x, y))


@case("broadcast_to", (arr((3, 1)),), (arr(1, BOOL),))
def broadcast_to(x):
    return np.broadcast_to(x, (2, 3, 4))


@case("broadcast_to", (arr(()),))
def broadcast_to_int(x):
    return np.broadcast_to(x, 5)


@case("broadcast_to", (arr(3),), (arr((2, 4)),))
def broadcast_to_bad(x):
    return np.broadcast_to(x, (2, 2))


@case("swapaxes", (arr((2, 3, 4)),), (arr((2, 3), I32),))
def swapaxes(x):
    return np.swapaxes(x, 0, -1), x.swapaxes(1, 0), np.swapaxes(x, 1, 1)


@case("moveaxis", (arr((2, 3, 4, 5)),))
def moveaxis(x):
    return np.moveaxis(x, 0, -1), np.moveaxis(x, -1, 1), np.moveaxis(x, (0, 1), (-1, 0)), np.moveaxis(x, [3, 1], [0, 2])


@case("moveaxis", (arr((2, 3, 4)),))
def moveaxis_bad(x):
    return np.moveaxis(x, (0, 1), 0)


@case("flip", (arr((2, 3, 4)),), (arr(5, I32),), (arr((), BOOL),))
def flip_all(x):
    return np.flip(x)


@case("flip", (arr((2, 3, 4)),))
def flip_axes(x):
    return np.flip(x, 0), np.flip(x, -1), np.flip(x, (0, 2))


@case("tile", (arr(3),), (arr((2, 3), I32),), (arr((), BOOL),))
def tile(x):
    return np.tile(x, 2), np.tile(x, (2, 1, 3)), np.tile(x, (0, 2)), np.tile(x, 1)


@case("repeat", (arr(3),), (arr((2, 3), I32),), (arr((), BOOL),))
def repeat_flat(x):
    return np.repeat(x, 3), np.repeat(x, 0), x.repeat(2)


@case("repeat", (arr((2, 3)),))
def repeat_axis(x):
    return np.repeat(x, 2, axis=0), np.repeat(x, 3, axis=-1), np.repeat(x, [2], axis=1)


@case("repeat", (arr(3),))
def repeat_negative(x):
    return np.repeat(x, -1)


@case("concatenate", (arr((2, 3)), arr((4, 3), F32)), (arr((2, 3), I32), arr((4, 3), BOOL)))
def concatenate(x, y):
    return np.concatenate([x, y]), np.concatenate((x, x, y), axis=0), np.concatenate([x], axis=-1)


@case("concatenate", (arr((2, 3)), arr((2, 1), I32)), (arr((2, 3)), arr((2, 0))))
def concatenate_last(x, y):
    return np.concatenate([x, y], axis=-1)


@case("concatenate", (arr((2, 3)), arr(4, I32)), (arr(()), arr(2)))
def concatenate_flat(x, y):
    return np.concatenate([x, y], axis=None)


@case("concatenate", (arr((2, 3), I32), arr((1, 3), I64)), (arr((2, 3)), arr((1, 3))))
def concatenate_dtype(x, y):
    return np.concatenate([x, y], dtype=np.int32)


@case("concatenate", (arr((2, 3)), arr((2, 2))), (arr((2, 3)), arr(3)), (arr(()), arr(())))
def concatenate_bad(x, y):
    return np.concatenate([x, y])


@case("concatenate", (arr(3, F32),))
def concatenate_python_scalars(x):
    return np.concatenate([x, [1.5]]), np.concatenate([x, x * 2])


@case("stack", (arr((2, 3)), arr((2, 3), F32)), (arr((), I32), arr((), BOOL)))
def stack(x, y):
    return np.stack([x, y]), np.stack((x, y, x), axis=-1), np.stack([x], axis=1 if x.ndim else 0)


@case("stack", (arr(3, F32),), (arr((), I32),))
def stack_python_scalar(x):
    return np.stack([x, x + 1, x * 2.5])


@case("stack", (arr((), F32),), (arr((), BOOL),))
def stack_literals(x):
    """In a sequence, a Python scalar is converted as NumPy does (float64, int64): not weak."""
    return np.stack([x, 1.5]), np.stack([x, 2, x]), np.hstack([x, 2]), np.vstack([x, True])


@case("stack", (arr((2, 3)), arr((3, 2))))
def stack_bad(x, y):
    return np.stack([x, y])


@case("stack", (arr((2, 3)), arr((2, 3), F32)))
def stack_dtype(x, y):
    return np.stack([x, y], dtype=np.float32)


@case("hstack", (arr(3), arr(2, I32)), (arr((2, 3)), arr((2, 1), F32)), (arr(()), arr(2)))
def hstack(x, y):
    return np.hstack([x, y])


@case("vstack", (arr(3), arr(3, I32)), (arr((2, 3)), arr(3, F32)), (arr(()), arr(())), (arr((2, 3, 4)), arr((1, 3, 4))))
def vstack(x, y):
    return np.vstack((x, y))


@case("vstack", (arr(3), arr(2)))
def vstack_bad(x, y):
    return np.vstack((x, y))


@case("split", (arr((4, 6)),), (arr((4, 6), I32),))
def split_sections(x):
    return np.split(x, 2), np.split(x, 3, axis=-1), np.split(x, 1)


@case("split", (arr((4, 6)),))
def split_indices(x):
    return np.split(x, [1, 4], axis=1), np.split(x, [3, 1]), np.split(x, [-2, 10], axis=1), np.split(x, [])


@case("split", (arr((4, 6)),))
def split_unpack(x):
    a, b = np.split(x, 2, axis=1)
    return a * b


@case("split", (arr((4, 6)),), (arr(()),))
def split_uneven(x):
    return np.split(x, 4, axis=-1)


@case("array_split", (arr(7),), (arr((3, 5), I32),))
def array_split(x):
    return np.array_split(x, 3, axis=-1), np.array_split(x, [2, 3], axis=-1), np.array_split(x, 9, axis=-1)


# -- complex numbers and np.fft (more in tests/test_complex.py and tests/test_fft.py) ----------------------
def carr(shape: tuple[int, ...] | int, dtype: Any = np.complex128) -> np.ndarray:
    return (arr(shape) + 1j * arr(shape)).astype(dtype)


@case("real", (carr((2, 3)),), (carr(4, np.complex64),), (arr(3),), (arr(3, F32),), (arr(4, I32),))
@case("imag", (carr((2, 3)),), (carr(4, np.complex64),), (arr(3),), (arr(4, I32),))
@case("conjugate", (carr((2, 3)),), (arr(3, F32),))
@case("angle", (carr((2, 3)),), (arr(3),))
def complex_parts(z):
    return np.real(z), np.imag(z), np.conj(z), np.conjugate(z), np.angle(z), np.angle(z, deg=True), z.real, z.imag


FFT_TOL = (1e-5, 1e-5)  # float32 transforms: XLA's and pocketfft's roundings differ


@case("fft", (arr((3, 8)),), (carr((2, 5), np.complex64),), (arr(6, F32),), tol=FFT_TOL)
@case("ifft", (carr((3, 8)),), tol=FFT_TOL)
@case("rfft", (arr((3, 8)),), tol=FFT_TOL)
@case("irfft", (carr((3, 8)),), tol=FFT_TOL)
def fft_1d(x):
    return (np.fft.fft(x), np.fft.fft(x, n=5), np.fft.ifft(x, n=11, axis=0, norm="ortho"), np.fft.rfft(np.real(x)),
            np.fft.rfft(np.real(x), n=7, norm="forward"), np.fft.irfft(x), np.fft.irfft(x, n=9, axis=0))


@case("fft2", (arr((3, 4, 6)),), (carr((2, 3, 4), np.complex64),), tol=FFT_TOL)
@case("ifft2", (carr((3, 4, 6)),), tol=FFT_TOL)
@case("rfft2", (arr((3, 4, 6)),), tol=FFT_TOL)
@case("irfft2", (carr((3, 4, 6)),), tol=FFT_TOL)
@case("fftn", (arr((3, 4, 6)),), tol=FFT_TOL)
@case("ifftn", (carr((3, 4, 6)),), tol=FFT_TOL)
@case("rfftn", (arr((3, 4, 6)),), tol=FFT_TOL)
@case("irfftn", (carr((3, 4, 6)),), tol=FFT_TOL)
def fft_nd(x):
    return (np.fft.fft2(x), np.fft.ifft2(x, s=(5, 3)), np.fft.rfft2(np.real(x)), np.fft.irfft2(x, norm="ortho"),
            np.fft.fftn(x), np.fft.ifftn(x, axes=(0, 2)), np.fft.rfftn(np.real(x), s=(2, 3, 4)),
            np.fft.irfftn(x, axes=(0, 1)), np.fft.fftn(x, s=(2, 2), axes=(2, 0), norm="forward"))


# -- np.linalg: solvers and decompositions (well-conditioned: m + 4 I; positive definite: m m^T + I) ----
def _wc(shape: tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
    return (arr(shape, np.float64, -1, 1) + 4 * np.eye(shape[-1])).astype(dtype)


def _spd(shape: tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
    m = arr(shape, np.float64, -1, 1)
    return (m @ np.swapaxes(m, -1, -2) + np.eye(shape[-1])).astype(dtype)


LINALG_TOL = (1e-5, 1e-5)  # float32 LU/Cholesky/eigh against NumPy's LAPACK: rounding of n = 4 factorizations


@case("solve", (_wc((4, 4)), arr((4, 2))), (_wc((4, 4)), arr(4)), (_wc((2, 3, 3)), arr((3, 2))),
      (_wc((3, 3)), arr((2, 3, 1))), (_wc((2, 3, 3)), arr(3)), (_wc((3, 3), F32), arr((3, 2), F32)),
      (_wc((3, 3), F32), arr(3)), (arr((3, 3), I32, -3, 3) + 9 * np.eye(3, dtype=np.int32), arr(3, I32)),
      (arr((3, 4)), arr(3)), (_wc((3, 3)), arr(4)), (_wc((3, 3)), arr((4, 2))),
      (_wc((3, 3), np.float16), arr(3, np.float16)), tol=LINALG_TOL)
def solve(a, b):
    return np.linalg.solve(a, b)


@case("inv", (_wc((3, 3)),), (_wc((2, 4, 4), F32),), (arr((2, 2), I32, 1, 5) + 9 * np.eye(2, dtype=np.int32),),
      (arr((3, 4)),), (arr(3),), tol=LINALG_TOL)
def inv(a):
    return np.linalg.inv(a)


@case("det", (_wc((3, 3)),), (_wc((2, 4, 4), F32),), (np.ones((3, 3)),), (arr((3, 4)),), tol=LINALG_TOL)
def det(a):
    return np.linalg.det(a)


@case("slogdet", (arr((3, 3)),), (_wc((2, 4, 4), F32),), (np.ones((3, 3)),), (arr((2, 3)),), tol=LINALG_TOL)
def slogdet(a):
    sign, logabsdet = np.linalg.slogdet(a)
    return sign, logabsdet


@case("cholesky", (_spd((3, 3)),), (_spd((2, 4, 4), F32),), (arr((3, 4)),), (_spd((3, 3), np.float16),),
      tol=LINALG_TOL)
def cholesky(a):
    return np.linalg.cholesky(a)


@case("eigh", (_spd((3, 3)),), (_spd((2, 4, 4), F32),), (arr((4, 3)),), tol=LINALG_TOL)
def eigh(a):
    w, v = np.linalg.eigh(a)
    return w, np.abs(v), np.linalg.eigh(a, "U")[0]  # (|v|: each column's sign is LAPACK's choice)


@case("eigvalsh", (_spd((3, 3)),), (_spd((2, 4, 4), F32),), (arr((2, 3, 3)),), tol=LINALG_TOL)
def eigvalsh(a):
    return np.linalg.eigvalsh(a), np.linalg.eigvalsh(a, UPLO="U")


_ROTATING = np.array([[0.0, -2.0, 0.5], [1.5, 0.3, 0.0], [0.2, 0.1, 1.0]])  # a complex pair of eigenvalues


@case("eig", (_ROTATING,), (arr((2, 4, 4)) + 1j * arr((2, 4, 4)),), (arr((3, 3), F32) + 1j,), (arr((4, 3)),),
      tol=LINALG_TOL)
def eig(a):  # complex results always (NumPy's are real for a real matrix with a real spectrum: not here)
    w, v = np.linalg.eig(a)
    return w, np.abs(v)  # (|v|: each column's phase is LAPACK's choice)


@case("eigvals", (_ROTATING,), (arr((2, 3, 3)) + 1j * arr((2, 3, 3)),), (arr((2, 3)),), tol=LINALG_TOL)
def eigvals(a):
    return np.linalg.eigvals(a)


@case("norm", (arr((4, 3)),), (arr((2, 3, 4), F32),), (arr((3, 3), I32),), (arr((3, 3), np.float16),), tol=LINALG_TOL)
def norm_singular_values(x):
    return (np.linalg.norm(x, 2, axis=(-2, -1)), np.linalg.norm(x, -2, axis=(-1, -2)),
            np.linalg.norm(x, "nuc", axis=(0, -1), keepdims=True))


@case("cond", (arr((4, 3)),), (arr((2, 3, 4), F32),), (arr((3, 3), I32, -3, 3) + 9 * np.eye(3, dtype=np.int32),),
      (arr(3),), tol=LINALG_TOL)
def cond(x):
    return np.linalg.cond(x), np.linalg.cond(x, 2), np.linalg.cond(x, -2)


@case("pinv", (arr((4, 3)),), (arr((3, 4), F32),), (arr((2, 3, 3)),), (np.array([[1.0, 2.0], [2.0, 4.0]]),),
      (arr((2, 2), I32, 1, 4),), (arr(3),), tol=LINALG_TOL)
def pinv(a):
    return np.linalg.pinv(a), np.linalg.pinv(a, 0.3), np.linalg.pinv(a, rtol=1e-2)


@case("matrix_power", (_wc((3, 3)),), (_wc((2, 3, 3), F32),), (arr((2, 2), I32, -3, 3),), (arr((2, 3)),),
      tol=LINALG_TOL)
def matrix_power(a):
    return (np.linalg.matrix_power(a, 0), np.linalg.matrix_power(a, 1), np.linalg.matrix_power(a, 4),
            np.linalg.matrix_power(a, 7))


@case("matrix_power", (_wc((3, 3)),), (_wc((2, 3, 3), F32),), tol=LINALG_TOL)
def matrix_power_negative(a):
    return np.linalg.matrix_power(a, -1), np.linalg.matrix_power(a, -3)


@case("multi_dot", (arr((3, 4)), arr((4, 2)), arr(3)), (arr((3, 4), F32), arr((4, 2), I32), arr(3, I32)),
      (arr((3, 4)), arr((5, 2)), arr(3)), tol=LINALG_TOL)
def multi_dot(a, b, v):
    return (np.linalg.multi_dot([a, b]), np.linalg.multi_dot([v, a, b]), np.linalg.multi_dot([a.T, a, b, b.T]),
            np.linalg.multi_dot([v, a, b, b[0]]), np.linalg.multi_dot((v, v)))


@case("lstsq", (arr((5, 3)), arr(5)), (arr((5, 3), F32), arr((5, 2), F32)), (arr((3, 5)), arr((3, 2))),
      (arr((3, 3), I32, 1, 5) + 9 * np.eye(3, dtype=np.int32), arr(3)), (arr((2, 3, 3)), arr(3)), (arr((5, 3)), arr(4)),
      tol=LINALG_TOL)
def lstsq(a, b):
    x, residuals, rank, s = np.linalg.lstsq(a, b)
    return x, residuals, rank, s, np.linalg.lstsq(a, b, rcond=0.5)[0]


@case("svd", (arr((4, 3)),), (arr((3, 4), F32),), (arr((2, 3, 3)),), (arr(3),), tol=LINALG_TOL)
def svd(a):
    u, s, vh = np.linalg.svd(a)
    u1, s1, vh1 = np.linalg.svd(a, full_matrices=False)
    # (|u|, |vh|: the signs of singular vectors are LAPACK's choice; full_matrices=True's extra columns
    # of u or rows of vh are any orthonormal completion, so only their shape is compared)
    return u.shape, s, vh.shape, np.abs(u1), s1, np.abs(vh1), np.linalg.svd(a, compute_uv=False)


@case("qr", (arr((4, 3)),), (arr((3, 4), F32),), (arr((2, 3, 3)),), (arr(3),), tol=LINALG_TOL)
def qr(a):
    q, r = np.linalg.qr(a)
    return np.abs(q), np.abs(r)


# -- creation ------------------------------------------------------------------------------
@case("zeros")
def zeros():
    return np.zeros((2, 3)), np.zeros(4, dtype=np.int32), np.zeros((0, 2), np.float32)


@case("zeros")
def zeros_empty_shape():
    return np.zeros((), bool), np.ones(()), np.full((), 2.5), np.broadcast_to(1, ())


@case("zeros", (arr((2, 3)),))
def zeros_from_shape(x):
    return np.zeros(x.shape[1:]) + x[0], np.zeros([x.shape[0], 2], dtype=x.dtype)


@case("zeros")
def zeros_negative():
    return np.zeros((2, -1))


@case("ones")
def ones():
    return np.ones((2, 3)), np.ones(4, dtype=np.uint8), np.ones([1, 2], "float32")


@case("full", (arr(()),), (arr((), I32),), (arr(3, F32),))
def full(x):
    return np.full((2, 3), x), np.full((2, 3), x, dtype=np.float32), np.full((2, 3), x, dtype=bool)


@case("full")
def full_static():
    return (np.full((2, 3), 1.5), np.full(3, 2), np.full(3, True), np.full((2,), np.float32(2)),
            np.full(3, 7, dtype=np.int8), np.full(2, 2.7, dtype=np.int32), np.full(2, -1.5, dtype=bool))


@case("full")
def full_overflow():
    return np.full(3, 300, dtype=np.int8)


@case("full", (arr(3),))
def full_bad_broadcast(x):
    return np.full((2, 2), x)


@case("zeros_like", (arr((2, 3)),), (arr((), I32),), (arr(3, BOOL),))
def zeros_like(x):
    return np.zeros_like(x), np.zeros_like(x, dtype=np.float32), np.zeros_like(x, shape=(2, 1))


@case("ones_like", (arr((2, 3)),), (arr((), I32),), (arr(3, BOOL),))
def ones_like(x):
    return np.ones_like(x), np.ones_like(x, dtype=np.int8), np.ones_like(x, shape=4)


@case("full_like", (arr((2, 3)),), (arr(3, I32),), (arr(3, BOOL),))
def full_like(x):
    return (np.full_like(x, 7), np.full_like(x, 2.5), np.full_like(x, x[0]), np.full_like(x, 3, dtype=np.float32),
            np.full_like(x, 1, shape=(2, 2)))


@case("full_like", (arr(3, np.int8),))
def full_like_overflow(x):
    return np.full_like(x, 300)


@case("eye")
def eye():
    return (np.eye(3), np.eye(2, 4), np.eye(4, 3, k=1), np.eye(3, k=-2, dtype=np.int32), np.eye(3, dtype=bool),
            np.eye(0), np.eye(2, k=5))


@case("identity")
def identity():
    return np.identity(3), np.identity(2, dtype=np.int64), np.identity(1, bool)


@case("arange")
def arange_ints():
    return (np.arange(5), np.arange(2, 9), np.arange(10, 1, -3), np.arange(0), np.arange(5, 2),
            np.arange(5, dtype=np.float32), np.arange(-3, 4, 2, dtype=np.int8), np.arange(5, step=2))


@case("arange")
def arange_floats():
    return (np.arange(0.5, 3.3, 0.7), np.arange(1.0), np.arange(0, 1, 0.1), np.arange(0, 1, 0.1, dtype=np.float32),
            np.arange(3, 0, -0.5), np.arange(0.5, 5.5, 1, dtype=np.int32), np.arange(np.float32(0.5), 3))


@case("arange")
def arange_zero_step():
    return np.arange(0, 5, 0)


@case("arange", (arr((3, 4)),))
def arange_shape(x):
    return np.arange(x.shape[1]) * x


@case("linspace")
def linspace():
    return (np.linspace(0, 1, 7), np.linspace(-2.5, 3, 4, endpoint=False), np.linspace(0, 1, 1),
            np.linspace(0, 1, 0), np.linspace(2, 2, 3), np.linspace(0, 10, 4, dtype=np.int32),
            np.linspace(np.float32(0), 1, 5), np.linspace(0, 1), np.linspace(1, 0, 6, dtype=np.float32))


@case("linspace", (arr(()), arr((3,))))
def linspace_data(a, b):
    """Endpoints from data (jnp.linspace takes traced endpoints): NumPy's algorithm in the program."""
    return (np.linspace(a, b, 5), np.linspace(b, a, 4, endpoint=False, axis=-1), np.linspace(a, 2.0, 3),
            np.linspace(b.astype(np.float32), 1.0, 6), np.linspace(-a, b, 1), np.linspace(a, b, 0),
            np.linspace(a, b, 4, dtype=np.float32), np.linspace(b, b * 3.0, 4, dtype=np.int32))


@case("linspace")
def linspace_negative():
    return np.linspace(0, 1, -1)


# -- sorting and order statistics ------------------------------------------------------------------
_TIES = np.array([[2.0, -1.0, 2.0, np.nan, 0.0, -0.0], [1.5, 1.5, -3.0, 1.5, 4.0, -3.0]])


@case("sort", (arr((3, 4)),), (arr((2, 3), I32),), (arr(5, BOOL),), (arr((2, 3), F32),), (_TIES,))
def sort_(x):
    return np.sort(x), np.sort(x, axis=0), np.sort(x, axis=None), np.sort(x, -1, kind="stable")


@case("sort", (arr(()),))
def sort_0d(x):
    return np.sort(x)


@case("argsort", (arr((3, 4)),), (arr((2, 6), I32, 0, 2),), (arr(5, BOOL),), (_TIES,))
def argsort_(x):
    return np.argsort(x, kind="stable"), np.argsort(x, axis=0, kind="stable"), np.argsort(x, axis=None, kind="stable")


@case("partition", (arr((3, 5)),), (arr((2, 4), I32),))
def partition_(x):
    return np.partition(x, 2)[..., 2], np.partition(x, -1, axis=0)[-1], np.sort(np.partition(x, (0, 1)), axis=-1)


@case("partition", (arr(4),))
def partition_out_of_bounds(x):
    return np.partition(x, 4)


@case("argpartition", (arr((3, 5)),), (arr(4, F32),))
def argpartition_(x):
    return np.take_along_axis(x, np.argpartition(x, 1, axis=-1), axis=-1)[..., 1], np.argpartition(x, 0, axis=None)[0]


@case("lexsort", (arr(6, I32, 0, 2), arr(6)), (arr((2, 4), I32, 0, 1), arr((2, 4), I32, 0, 1)))
def lexsort_(a, b):
    return np.lexsort([a, b]), np.lexsort((b, a), axis=0), np.lexsort([a])


@case("searchsorted", (np.sort(arr(6)), arr((2, 3))), (np.array([1, 2, 2, 3]), np.array([[0, 2], [3, 5]])),
      (np.array([-1.0, 0.5, np.nan]), np.array([np.nan, 0.5, -2.0, np.inf])))
def searchsorted_(a, v):
    return np.searchsorted(a, v), np.searchsorted(a, v, side="right"), np.searchsorted(a, 0.5)


@case("searchsorted", (arr((2, 3)), arr(2)))
def searchsorted_2d(a, v):
    return np.searchsorted(a, v)


@case("median", (arr((3, 4)),), (arr((3, 5), I32),), (arr((2, 3), F32),), (_TIES,), (arr((2, 3), np.float16),))
def median_(x):
    return (np.median(x), np.median(x, axis=0), np.median(x, axis=-1, keepdims=True), np.median(x, axis=(0, 1)),
            np.median(x[:, :0], axis=1))


@case("quantile", (arr((3, 4)),), (arr((3, 5), I32),), (arr((2, 3), F32),), (_TIES,), (arr(7, BOOL),))
def quantile_(x):
    return (np.quantile(x, 0.3), np.quantile(x, [0.0, 0.25, 1.0], axis=0), np.quantile(x, 0.5, axis=-1, keepdims=True),
            np.quantile(x, (0.1, 0.9), axis=(0, 1)), np.quantile(x, 1), np.quantile(x, 0.4, method="lower"),
            np.quantile(x, 0.4, method="higher"), np.quantile(x, [0.4, 0.5], method="midpoint"),
            np.quantile(x, [0.25, 0.5, 0.7], method="nearest"))


@case("quantile", (arr(4),))
def quantile_out_of_range(x):
    return np.quantile(x, 1.5)


@case("percentile", (arr((3, 4)),), (arr((3, 5), I32),), (arr((2, 3), F32),))
def percentile_(x):
    return np.percentile(x, 30), np.percentile(x, [10.0, 50.0, 100.0], axis=1), np.percentile(x, 75, keepdims=True)


@case("percentile", (arr(4),))
def percentile_out_of_range(x):
    return np.percentile(x, [-1, 50])


# -- construction -------------------------------------------------------------------------------------
@case("array", (arr(()), arr((2, 3), F32)), (arr((), I32), arr((), BOOL)), (arr(3), arr(3, I32)))
def array_(x, y):
    return (np.array([x, y]), np.array((x, y), dtype=np.float32), np.array([[x, 1.0], [y, 2]]),
            np.array(x, ndmin=2), np.array([0.0, -9.81]) + x, np.array(y, dtype=np.int32), np.array([x]))


@case("array", (arr(3), arr(2)), spelled="np.stack(")  # (the literal list is np.stack of its elements)
def array_ragged(x, y):
    return np.array([x, y])


@case("asarray", (arr((2, 3)), arr((2, 3), I32)), (arr(()), arr((), F32)))
def asarray_(x, y):
    return np.asarray(x), np.asarray([x, y]), np.asarray(y, dtype=np.float64), np.asarray(((x,), (y,)))


@case("diagonal", (arr((3, 4)),), (arr((2, 3, 4), I32),), (arr((4, 3), BOOL),), (arr((5, 2)),))
def diagonal_(x):
    return (np.diagonal(x), np.diagonal(x, 1), np.diagonal(x, -2), x.diagonal(offset=-1, axis1=-1, axis2=0),
            np.diagonal(x, 7), np.diagonal(x, -9))


@case("diagonal", (arr(3),))
def diagonal_1d(x):
    return np.diagonal(x)


@case("insert", (arr((3, 4)), arr(4)), (arr((3, 4), I32), arr(4)), (arr((2, 4), BOOL), arr(4, BOOL)))
def insert_(x, v):
    return (np.insert(x, 1, v, axis=0), np.insert(x, [0, 2, 2], 5, axis=1), np.insert(x, 3, v[:3]),
            np.insert(x, slice(1, 3), v[0], axis=-1), np.insert(x, -1, v[:1], axis=0))


@case("insert", (arr((3, 4)), arr(3)))
def insert_mismatch(x, v):
    return np.insert(x, 1, v, axis=0)


@case("delete", (arr((3, 4)),), (arr(5, I32),))
def delete_(x):
    return np.delete(x, 1, axis=0), np.delete(x, [0, -1]), np.delete(x, slice(None, None, 2), axis=-1)


@case("delete", (arr((3, 4)),))
def delete_out_of_bounds(x):
    return np.delete(x, 7, axis=1)


@case("append", (arr((3, 4)), arr(4)), (arr((2, 4), I32), arr(4, F32)))
def append_(x, v):
    return np.append(x, v), np.append(x, x[:1], axis=0), np.append(v, 2.5), np.append(x, v[None] * 2, axis=0)


@case("pad", (arr((3, 4)),), (arr(5, I32),), (arr((2, 3), F32),))
def pad_(x):
    return (np.pad(x, 2), np.pad(x, 1, mode="reflect"), np.pad(x, (2, 1), mode="edge"), np.pad(x, (5, 6), mode="wrap"),
            np.pad(x, 1, constant_values=3), np.pad(x, 4, mode="symmetric"), np.pad(x, (0, 2), mode="reflect"))


@case("pad", (arr((2, 3)),))
def pad_2d_widths(x):
    return np.pad(x, ((1, 0), (2, 3))), np.pad(x, ((1, 2),), mode="edge"), np.pad(x, [[0, 1], [1, 0]], mode="wrap")


@case("pad", (arr((2, 3)),))
def pad_negative(x):
    return np.pad(x, -1)


@case("resize", (arr((3, 4)),), (arr(5, I32),))
def resize_(x):
    return np.resize(x, (5, 3)), np.resize(x, 10), np.resize(x, (2,)), np.resize(x, (0, 2))


@case("kron", (arr((2, 3)), arr(3)), (arr((2, 2), I32), arr((3, 1, 2), F32)), (arr(2, BOOL), arr((2, 2), BOOL)))
def kron_(a, b):
    return np.kron(a, b), np.kron(b, a), np.kron(a, 2), np.kron(a[0], b)


@case("cross", (arr((2, 3)), arr(3)), (arr((4, 2), I32), arr(2)), (arr((3, 2)), arr((4, 1, 3), F32)))
def cross_(a, b):
    return np.cross(a, b), np.cross(b, a), np.cross(a, a[::-1]), np.cross(a.T, b, axisa=0), np.cross(a, b, axisc=0)


@case("cross", (arr((2, 4)), arr(3)))
def cross_bad_size(a, b):
    return np.cross(a, b)


@case("meshgrid", (arr(3), arr((2, 2), I32)), (arr(4, F32), arr(1)))
def meshgrid_(x, y):
    return (np.meshgrid(x, y), np.meshgrid(x, y, indexing="ij"), np.meshgrid(y, x, x, sparse=True),
            np.meshgrid(x), np.meshgrid(x, y, x, indexing="xy"))


@case("meshgrid", (arr(3),))
def meshgrid_bad_indexing(x):
    return np.meshgrid(x, x, indexing="yx")


# -- the tests ---------------------------------------------------------------------------
def test_every_primitive_has_a_case() -> None:
    missing = sorted(set(PRIMITIVES) - {c.prim for c in CASES} - COLLECTIVE_PRIMS)
    assert not missing, f"primitives without a case in tests/test_primitives.py: {missing}"
    unknown = sorted({c.prim for c in CASES} - set(PRIMITIVES))
    assert not unknown, f"cases for unregistered primitives: {unknown}"
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"


def _params(cases: list[Case]) -> list[Any]:
    """Known bugs outside the table are strict xfails: fixing one makes the test say so."""
    return [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(reason=c.xfail, strict=True)] if c.xfail else [])
            for c in cases]


@pytest.mark.parametrize("c", _params(CASES))
def test_primitive(c: Case) -> None:
    # the case exercises the primitive it is filed under
    spelled = c.spelled or PRIMITIVES[c.prim].path + "("
    compiled = srcjax.compile(c.fn)
    assert spelled in srcjax.source(compiled), f"{c.id}: the generated source does not call {spelled}"
    try:
        check(c.fn, *c.args, tol=c.tol, compiled=compiled)
    except AssertionError as e:
        if not c.labels:
            raise
        calls = "\n".join(f"  out[{k}]: {label}" for k, label in enumerate(c.labels))
        raise AssertionError(f"{e}\nthe calls of this case (out[k] is call k):\n{calls}") from None


# -- hypothesis: broadcasting of binary ufuncs ---------------------------------------------
BINARY = sorted(n for n, (uf, _) in UFUNCS.items() if uf.nin == 2)
DTYPES = [F32, F64, I32, I64, BOOL]


@st.composite
def binary_calls(draw: Any) -> tuple[str, np.ndarray, np.ndarray]:
    name = draw(st.sampled_from(BINARY))
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, min_side=0, max_side=3))
    d1, d2 = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    x = _data(name, d1, shapes.input_shapes[0], 0, rng)
    y = _data(name, d2, shapes.input_shapes[1], 1, rng)
    return name, x, y


@HYPOTHESIS
@given(binary_calls())
def test_binary_broadcasting(call: tuple[str, np.ndarray, np.ndarray]) -> None:
    name, x, y = call
    check(_binary(UFUNCS[name][0])([None]), [(x, y)])


# -- hypothesis: reductions over random shapes and axes --------------------------------------
@st.composite
def reduction_calls(draw: Any) -> tuple[str, np.ndarray, Any, bool]:
    name = draw(st.sampled_from(REDUCTIONS))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    dtype = draw(st.sampled_from(DTYPES))
    nd = len(shape)
    if name in ("argmax", "argmin"):
        axis = draw(st.none() | st.integers(-nd, nd - 1)) if nd else None
    else:
        axes = draw(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd)) if nd else []
        axes = [a - nd if draw(st.booleans()) else a for a in axes]
        axis = draw(st.sampled_from([None, tuple(axes)] + ([axes[0]] if axes else [])))
    keepdims = draw(st.booleans())
    x = np.random.default_rng(zlib.crc32(repr((name, shape)).encode())).uniform(-2, 2, shape)
    if dtype.kind == "f" and x.size and draw(st.booleans()):  # NaNs, and ties from rounding
        x = x.round()
        x.flat[draw(st.integers(0, x.size - 1))] = np.nan
    x = (x > 0) if dtype == BOOL else x.round().astype(dtype) if dtype.kind == "i" else x.astype(dtype)
    return name, x, axis, keepdims


@HYPOTHESIS
@given(reduction_calls())
def test_reductions_random_axes(call: tuple[str, np.ndarray, Any, bool]) -> None:
    name, x, axis, keepdims = call
    check(_reduction(getattr(np, name), axis, keepdims), x)
