"""Reductions: sum, prod, max, min, mean, var, std, all, any, argmax, argmin; and cumsum.

``axis`` is None, an int (negative allowed) or a tuple; ``keepdims`` keeps the
reduced axes with size 1. Result dtypes follow NumPy: sum/prod of small ints
and bools accumulate in int64 (uint64 for unsigned), mean/var/std of integers
are float64, argmax/argmin give int64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import DTypeError, ShapedArray, ShapeError
from ..lower.hlo import HloValue, aval_type, elem_type, is_float, real_dtype
from . import batch_rules
from .common import as_dtype, fmt_shape, normalize_axes, normalize_axis
from .registry import PRIMITIVES, LowerCtx, alias, defjvp, deflinear, defprim, defvjp, set_fields


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """``normalize_axes``, and NumPy's legacy leniency: an int axis 0 or -1 of a 0-d array
    reduces nothing (``np.sum(np.float64(1), axis=0)`` works; ``np.mean`` refuses it)."""
    if ndim == 0 and isinstance(axis, (int, np.integer)) and not isinstance(axis, bool) and axis in (0, -1):
        return ()
    return normalize_axes(axis, ndim)


def _reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _accumulate_dtype(d: np.dtype) -> np.dtype:
    if d == np.bool_ or (d.kind == "i" and d.itemsize < 8):
        return np.dtype(np.int64)
    if d.kind == "u" and d.itemsize < 8:
        return np.dtype(np.uint64)
    return d


def _mean_dtype(d: np.dtype) -> np.dtype:
    return d if is_float(d) or d.kind == "c" else np.dtype(np.float64)


def _keep(b: Any, r: HloValue, out: ShapedArray) -> HloValue:
    return b.reshape(r, out.shape)


# -- sum / prod / max / min / all / any -----------------------------------------
def _sum_stub(a, axis=None, dtype=None, keepdims=False, initial=None):  # type: ignore[no-untyped-def]
    ...


def _minmax_stub(a, axis=None, keepdims=False, initial=None):  # type: ignore[no-untyped-def]
    ...


def _bool_stub(a, axis=None, keepdims=False):  # type: ignore[no-untyped-def]
    ...


def _monoid(name: str, kind: str) -> None:
    """Register a reduction by a binary op: ``kind`` in sum/prod/max/min/all/any."""

    def out_dtype(a: ShapedArray, dtype: Any) -> np.dtype:
        if kind in ("all", "any"):
            return np.dtype(np.bool_)
        if kind in ("sum", "prod"):
            return as_dtype(dtype) or _accumulate_dtype(a.dtype)
        return a.dtype

    def abstract(a: ShapedArray, axis: Any = None, *rest: Any) -> ShapedArray:
        dtype, keepdims, initial = _unpack(rest)
        axes = _axes(axis, a.ndim)
        if kind in ("max", "min") and initial is None and any(a.shape[i] == 0 for i in axes):
            raise ShapeError(f"np.{name}: zero-size array to reduction operation which has no identity",
                             hint="pass initial=... or make sure the reduced axis is not empty")
        return ShapedArray(_reduced_shape(a.shape, axes, keepdims), out_dtype(a, dtype))

    def lower(ctx: LowerCtx, a: HloValue, axis: Any = None, *rest: Any) -> HloValue:
        dtype, keepdims, initial = _unpack(rest)
        b = ctx.b
        out = ctx.avals_out[0]
        axes = _axes(axis, a.ndim)
        x = b.convert(a, out.dtype)
        d = out.dtype
        init: Any
        if d == np.bool_:  # sum and max are `or`, prod and min are `and`
            op, init = ("or", False) if kind in ("sum", "max", "any") else ("and", True)
        else:
            op, init = {"sum": ("add", 0), "prod": ("multiply", 1), "max": ("maximum", None),
                        "min": ("minimum", None)}[kind]
            if kind == "max":
                init = -np.inf if is_float(d) else np.iinfo(d).min
            elif kind == "min":
                init = np.inf if is_float(d) else np.iinfo(d).max
        r = b.reduce(x, op, init, axes)
        if initial is not None:
            r = b.binary(op, r, b.full(initial, r.shape, d))
        return _keep(b, r, out)

    def _unpack(rest: tuple[Any, ...]) -> tuple[Any, bool, Any]:
        if kind in ("sum", "prod"):
            dtype, keepdims, initial = (list(rest) + [None, False, None])[:3]
        elif kind in ("max", "min"):
            dtype = None
            keepdims, initial = (list(rest) + [False, None])[:2]
        else:
            dtype, initial = None, None
            keepdims = rest[0] if rest else False
        return dtype, bool(keepdims), initial

    stub = _sum_stub if kind in ("sum", "prod") else _minmax_stub if kind in ("max", "min") else _bool_stub
    defprim(name, getattr(np, name), stub, abstract_eval=abstract, lower=lower, arrays=("a",),
            nondiff=kind in ("all", "any"), simplify={"sum": "reduce", "prod": "reduce", "max": "reduce_keep",
                                                      "min": "reduce_keep"}.get(kind))


for _name, _kind in [("sum", "sum"), ("prod", "prod"), ("max", "max"), ("min", "min"),
                     ("all", "all"), ("any", "any")]:
    _monoid(_name, _kind)

alias(np.amax, "max")
alias(np.amin, "min")


# -- mean / var / std ------------------------------------------------------------
def _mean_stub(a, axis=None, dtype=None, keepdims=False):  # type: ignore[no-untyped-def]
    ...


def _var_stub(a, axis=None, dtype=None, ddof=0, keepdims=False):  # type: ignore[no-untyped-def]
    ...


def _mean_abstract(a: ShapedArray, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> ShapedArray:
    axes = normalize_axes(axis, a.ndim)
    return ShapedArray(_reduced_shape(a.shape, axes, bool(keepdims)), as_dtype(dtype) or _mean_dtype(a.dtype))


def _mean_hlo(b: Any, a: HloValue, axes: tuple[int, ...], out_dtype: np.dtype, keepdims: bool) -> HloValue:
    # float16/bfloat16 accumulate in float32, as NumPy does for float16.
    acc = np.dtype(np.float32) if is_float(out_dtype) and out_dtype.itemsize < 4 else out_dtype
    x = b.convert(a, acc)
    s = b.reduce(x, "add", 0, axes)
    n = int(np.prod([a.shape[i] for i in axes], dtype=np.int64))
    m = b.binary("divide", s, b.full(n if n else np.nan, s.shape, acc)) if n else \
        b.binary("divide", s, b.full(0, s.shape, acc))
    m = b.convert(m, out_dtype)
    if keepdims:
        m = b.reshape(m, _reduced_shape(a.shape, axes, True))
    return m


def _mean_lower(ctx: LowerCtx, a: HloValue, axis: Any = None, dtype: Any = None,
                keepdims: bool = False) -> HloValue:
    out = ctx.avals_out[0]
    return _mean_hlo(ctx.b, a, normalize_axes(axis, a.ndim), out.dtype, bool(keepdims))


defprim("mean", np.mean, _mean_stub, abstract_eval=_mean_abstract, lower=_mean_lower, arrays=("a",),
        simplify="reduce_float")


def _var_abstract(a: ShapedArray, axis: Any = None, dtype: Any = None, ddof: Any = 0,
                  keepdims: bool = False) -> ShapedArray:
    if not isinstance(ddof, (int, float)):
        raise DTypeError("ddof must be a static number")
    m = _mean_abstract(a, axis, dtype, keepdims)  # a complex operand: real, NumPy's mean of |a - mean|**2
    return m.update(dtype=real_dtype(m.dtype))


def _var_hlo(ctx: LowerCtx, a: HloValue, axis: Any, ddof: Any, keepdims: bool, sqrt: bool) -> HloValue:
    b = ctx.b
    out = ctx.avals_out[0]
    axes = normalize_axes(axis, a.ndim)
    acc = np.dtype(np.float32) if out.dtype.itemsize < 4 else out.dtype
    x = b.convert(a, acc if a.dtype.kind != "c" else np.result_type(a.dtype, acc))
    mu = _mean_hlo(b, x, axes, x.dtype, True)
    centered = b.binary("subtract", x, b.broadcast_to(mu, x.shape))
    s = b.reduce(b.abs2(centered), "add", 0, axes)
    n = int(np.prod([a.shape[i] for i in axes], dtype=np.int64)) - ddof
    v = b.binary("divide", s, b.full(max(n, 0), s.shape, acc))
    if sqrt:
        v = b.unary("sqrt", v)
    return b.reshape(b.convert(v, out.dtype), out.shape)


defprim("var", np.var, _var_stub, abstract_eval=_var_abstract, arrays=("a",), simplify="reduce_real",
        lower=lambda ctx, a, axis=None, dtype=None, ddof=0, keepdims=False:
        _var_hlo(ctx, a, axis, ddof, bool(keepdims), sqrt=False))
defprim("std", np.std, _var_stub, abstract_eval=_var_abstract, arrays=("a",), simplify="reduce_real",
        lower=lambda ctx, a, axis=None, dtype=None, ddof=0, keepdims=False:
        _var_hlo(ctx, a, axis, ddof, bool(keepdims), sqrt=True))


# -- argmax / argmin -------------------------------------------------------------
def _arg_stub(a, axis=None, keepdims=False):  # type: ignore[no-untyped-def]
    ...


def _arg_axis(axis: Any, ndim: int) -> int | None:
    """The axis of argmax/argmin (None: the flattened array); 0 and -1 are accepted for 0-d."""
    if axis is None or ndim == 0 and not isinstance(axis, bool) and axis in (0, -1):
        return None
    return normalize_axis(axis, ndim)


def _arg_abstract(a: ShapedArray, axis: Any = None, keepdims: bool = False) -> ShapedArray:
    axis = _arg_axis(axis, a.ndim)
    if axis is None:
        empty = a.size == 0
        shape: tuple[int, ...] = (1,) * a.ndim if keepdims else ()
    else:
        ax = normalize_axis(axis, a.ndim)
        empty = a.shape[ax] == 0
        shape = _reduced_shape(a.shape, (ax,), bool(keepdims))
    if empty:
        raise ShapeError(f"attempt to get argmax/argmin of an empty sequence (shape {fmt_shape(a.shape)}, "
                         f"axis {axis})")
    return ShapedArray(shape, np.dtype(np.int64))


def _arg_lower(largest: bool) -> Any:
    def lower(ctx: LowerCtx, a: HloValue, axis: Any = None, keepdims: bool = False) -> HloValue:
        b = ctx.b
        out = ctx.avals_out[0]
        ax = _arg_axis(axis, a.ndim)
        if ax is None:
            a = b.reshape(a, (a.aval.size,))
            ax = 0
        r = b.arg_reduce(a, ax, np.dtype(np.int64), largest)
        return b.reshape(r, out.shape)

    return lower


defprim("argmax", np.argmax, _arg_stub, abstract_eval=_arg_abstract, lower=_arg_lower(True), arrays=("a",),
        nondiff=True)
defprim("argmin", np.argmin, _arg_stub, abstract_eval=_arg_abstract, lower=_arg_lower(False), arrays=("a",),
        nondiff=True)


# -- cumsum ----------------------------------------------------------------------
def _cumsum_stub(a, axis=None, dtype=None):  # type: ignore[no-untyped-def]
    ...


def _cumsum_abstract(a: ShapedArray, axis: Any = None, dtype: Any = None) -> ShapedArray:
    d = as_dtype(dtype) or _accumulate_dtype(a.dtype)
    if axis is None:
        return ShapedArray((a.size,), d)
    normalize_axis(axis, a.ndim)
    return ShapedArray(a.shape, d)


def _cumulative(kind: str) -> Any:
    """The lowering of ``cumsum`` (``kind`` 'sum') or ``cumprod`` ('prod')."""

    def lower(ctx: LowerCtx, a: HloValue, axis: Any = None, dtype: Any = None) -> HloValue:
        """A ``reduce_window`` whose window covers everything up to each element (XLA picks the scan)."""
        b = ctx.b
        out = ctx.avals_out[0]
        x = b.convert(b.reshape(a, out.shape), out.dtype)
        if out.size == 0:
            return x
        ax = 0 if axis is None else normalize_axis(axis, a.ndim)
        n = out.shape[ax]
        window = [n if i == ax else 1 for i in range(out.ndim)]
        pads = ", ".join(f"[{n - 1 if i == ax else 0}, 0]" for i in range(out.ndim))
        init_value: Any
        if out.dtype == np.bool_:
            op, init_value = ("or", False) if kind == "sum" else ("and", True)
        else:
            op, init_value = ("add", 0) if kind == "sum" else ("multiply", 1)
        init = b.full(init_value, (), out.dtype)
        scalar = f"tensor<{elem_type(out.dtype)}>"
        acc, el, res, name = b.fresh(), b.fresh(), b.fresh(), b.fresh()
        ones = ", ".join("1" for _ in window)
        b.lines += [
            f'{b.indent}{name} = "stablehlo.reduce_window"({x.name}, {init.name}) ({{',
            f"{b.indent}  ^bb0({acc}: {scalar}, {el}: {scalar}):",
            f"{b.indent}    {res} = stablehlo.{op} {acc}, {el} : {scalar}",
            f"{b.indent}    stablehlo.return {res} : {scalar}",
            f"{b.indent}}}) {{padding = dense<[{pads}]> : tensor<{out.ndim}x2xi64>, "
            f"window_dimensions = array<i64: {', '.join(map(str, window))}>, window_strides = array<i64: {ones}>}} : "
            f"({aval_type(x.aval)}, {scalar}) -> {aval_type(out)}"]
        return HloValue(name, out)

    return lower


defprim("cumsum", np.cumsum, _cumsum_stub, abstract_eval=_cumsum_abstract, lower=_cumulative("sum"), arrays=("a",))
defprim("cumprod", np.cumprod, _cumsum_stub, abstract_eval=_cumsum_abstract, lower=_cumulative("prod"),
        arrays=("a",))


# -- diff --------------------------------------------------------------------------
def _diff_stub(a, n=1, axis=-1):  # type: ignore[no-untyped-def]
    ...


def _diff_plan(a: ShapedArray, n: Any, axis: Any) -> tuple[int, int]:
    """(order, axis), validated."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise DTypeError(f"np.diff: n must be a static int, got {n!r}")
    if n < 0:
        raise ShapeError(f"np.diff: order must be non-negative but got {n}")
    if a.ndim == 0:
        raise ShapeError("np.diff requires input that is at least one dimensional",
                         hint="give it an axis: np.atleast_1d(x), or x[None]")
    return int(n), normalize_axis(axis, a.ndim)


def _diff_abstract(a: ShapedArray, n: Any = 1, axis: Any = -1) -> ShapedArray:
    order, ax = _diff_plan(a, n, axis)
    return ShapedArray(tuple(max(d - order, 0) if i == ax else d for i, d in enumerate(a.shape)), a.dtype)


def _diff_lower(ctx: LowerCtx, a: HloValue, n: Any = 1, axis: Any = -1) -> HloValue:
    """``n`` times ``x[1:] - x[:-1]`` along the axis (booleans: ``!=``, as NumPy)."""
    b = ctx.b
    order, ax = _diff_plan(a.aval, n, axis)
    x = a
    for _ in range(order):
        d = x.shape[ax]
        if d == 0:
            break
        lo = b.slice(x, [1 if i == ax else 0 for i in range(x.ndim)], list(x.shape))
        hi = b.slice(x, [0] * x.ndim, [d - 1 if i == ax else s for i, s in enumerate(x.shape)])
        x = b.compare("NE", lo, hi) if x.dtype == np.bool_ else b.binary("subtract", lo, hi)
    return x


defprim("diff", np.diff, _diff_stub, abstract_eval=_diff_abstract, lower=_diff_lower, arrays=("a",))


# -- trace -------------------------------------------------------------------------
def _trace_stub(a, offset=0, axis1=0, axis2=1, dtype=None):  # type: ignore[no-untyped-def]
    ...


def _trace_plan(a: ShapedArray, offset: Any, axis1: Any, axis2: Any) -> tuple[int, int, int]:
    if a.ndim < 2:
        raise ShapeError(f"np.trace: diag requires an array of at least two dimensions, got shape "
                         f"{fmt_shape(a.shape)}", hint="np.trace takes a matrix (or a stack of them)")
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise DTypeError(f"np.trace: offset must be a static int, got {offset!r}")
    i, j = normalize_axis(axis1, a.ndim, "axis1"), normalize_axis(axis2, a.ndim, "axis2")
    if i == j:
        raise ShapeError("np.trace: axis1 and axis2 cannot be the same", hint="pass two different axes")
    return int(offset), i, j


def _trace_abstract(a: ShapedArray, offset: Any = 0, axis1: Any = 0, axis2: Any = 1, dtype: Any = None) -> ShapedArray:
    _, i, j = _trace_plan(a, offset, axis1, axis2)
    return ShapedArray(tuple(d for k, d in enumerate(a.shape) if k not in (i, j)),
                       as_dtype(dtype) or _accumulate_dtype(a.dtype))


def _diagonal_mask(b: Any, shape: tuple[int, ...], i: int, j: int, offset: int) -> HloValue:
    """``col - row == offset`` over ``shape``, with rows along axis ``i`` and columns along ``j``."""
    i64 = np.dtype(np.int64)
    rows = b.iota(ShapedArray(shape, i64), i)
    cols = b.iota(ShapedArray(shape, i64), j)
    return b.compare("EQ", b.binary("subtract", cols, rows), b.full(offset, shape, i64))


def _trace_lower(ctx: LowerCtx, a: HloValue, offset: Any = 0, axis1: Any = 0, axis2: Any = 1,
                 dtype: Any = None) -> HloValue:
    """The elements off the diagonal replaced by 0, then a sum over both axes."""
    b = ctx.b
    out = ctx.avals_out[0]
    off, i, j = _trace_plan(a.aval, offset, axis1, axis2)
    x = b.convert(a, out.dtype)
    x = b.select(_diagonal_mask(b, x.shape, i, j, off), x, b.full(0, x.shape, out.dtype))
    return b.reduce(x, "or" if out.dtype == np.bool_ else "add", False if out.dtype == np.bool_ else 0, (i, j))


defprim("trace", np.trace, _trace_stub, abstract_eval=_trace_abstract, lower=_trace_lower, arrays=("a",))


# -- reductions --------------------------------------------------------------------------
deflinear("sum", {"a": "np.sum(a_dot, axis=axis, dtype=dtype, keepdims=keepdims)"},
          {"a": "expand_reduced(out_bar, a, axis, keepdims)"})
deflinear("mean", {"a": "np.mean(a_dot, axis=axis, dtype=dtype, keepdims=keepdims)"},
          {"a": "expand_reduced(out_bar, a, axis, keepdims) / reduced_size(a, axis)"})
deflinear("cumsum", {"a": "np.cumsum(a_dot, axis=axis, dtype=dtype)"}, {"a": "cumsum_bar(out_bar, a, axis)"})
deflinear("diff", {"a": "np.diff(a_dot, n, axis)"}, {"a": "diff_bar(out_bar, a, n, axis)"})
deflinear("trace", {"a": "np.trace(a_dot, offset, axis1, axis2, dtype)"},
          {"a": "trace_bar(out_bar, a, offset, axis1, axis2)"})
# d out_i / d a_j is the product of a_0..a_i without a_j: exact with zeros (no division), as JAX
defjvp("cumprod", a="broadcast_like(cumprod_jvp(a_dot, a, axis), out)")
defvjp("cumprod", a="cumprod_bar(out_bar, a, axis)")
# d prod / d a_i is the product of the others, computed without dividing by a (exact with zeros,
# as JAX). Ties in max/min: the gradient is split equally among the maxima (JAX).
defjvp("prod", a="np.sum(a_dot * prod_others(a, axis, initial), axis=axis, dtype=dtype, keepdims=keepdims)")
defvjp("prod", a="expand_reduced(out_bar, a, axis, keepdims) * prod_others(a, axis, initial)")
defjvp("max", a="np.sum(a_dot * max_bar(ones_like(out), a, out, axis, keepdims, initial), axis=axis, "
                 "keepdims=keepdims)")
defvjp("max", a="max_bar(out_bar, a, out, axis, keepdims, initial)")
defjvp("min", **PRIMITIVES["max"].jvp)  # (max_bar reads which entries equal out: min's extrema too)
defvjp("min", **PRIMITIVES["max"].vjp)
defjvp("var", a="np.real(np.sum(a_dot * var_bar(ones_like(out), a, axis, ddof, keepdims), axis=axis, dtype=dtype, "
                 "keepdims=keepdims))")  # (np.real: a complex a)
defvjp("var", a="var_bar(out_bar, a, axis, ddof, keepdims)")
defjvp("std", a="np.real(np.sum(a_dot * std_bar(ones_like(out), a, out, axis, ddof, keepdims), axis=axis, "
                 "dtype=dtype, keepdims=keepdims))")
defvjp("std", a="std_bar(out_bar, a, out, axis, ddof, keepdims)")


# -- batching (vmap): axes count per-example axes ----------------------------------------------------
for _name in ("sum", "prod", "max", "min", "all", "any", "mean", "var", "std", "diff"):
    set_fields(_name, batch=batch_rules.axes("axis"))
for _name in ("argmax", "argmin"):
    set_fields(_name, batch=batch_rules.flattening(f"batch_{_name}", "a", "axis", "keepdims"))
for _name in ("cumsum", "cumprod"):
    set_fields(_name, batch=batch_rules.flattening(f"batch_{_name}", "a", "axis", "dtype"))
set_fields("trace", batch=batch_rules.axes("axis1", "axis2"))
