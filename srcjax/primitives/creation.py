"""Array creation: zeros, ones, full, eye, identity, arange, linspace, and the ``*_like`` forms.

Shapes, counts and bounds are static; only ``fill_value`` (and the ``*_like``
operand, which gives a shape and dtype) may be an array. These primitives are
never evaluated at transpile time (``static_eval=False``): ``np.zeros((1000,
1000))`` becomes one program op rather than a megabyte of embedded constant.
Default dtypes are NumPy's: float64 for zeros/ones/eye/linspace, the fill
value's own dtype for ``full`` (``np.full(3, 2)`` is int64), and for
``arange`` int64 unless an argument is a float.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from ..core import DTypeError, ShapedArray, ShapeError
from ..lower.hlo import FuncBuilder, HloValue, is_float
from . import batch_rules
from .common import as_dtype, broadcast_shapes, fmt_shape, normalize_axis, static_dims, weak_key
from .registry import LowerCtx, deflinear, defprim, set_fields

_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)


def _shape(shape: Any, what: str) -> tuple[int, ...]:
    """An int or a sequence of ints -> a shape; negative sizes refused."""
    dims = static_dims(shape, what)
    if any(d < 0 for d in dims):
        raise ShapeError(f"{what}: negative dimensions are not allowed, got shape {fmt_shape(dims)}")
    return dims


def _fill(b: FuncBuilder, value: HloValue, shape: tuple[int, ...], dtype: np.dtype) -> HloValue:
    """``value`` cast to ``dtype`` (unsafe, as ``np.copyto``) and broadcast to ``shape``."""
    if value.literal is not None:
        v = value.literal
        if dtype.kind in "iu" and isinstance(v, int) and not isinstance(v, bool):
            info = np.iinfo(dtype)
            if not info.min <= v <= info.max:
                raise DTypeError(f"Python integer {v} out of bounds for {dtype.name}")
        return b.full(v, shape, dtype)
    return b.broadcast_to(b.convert(value, dtype), shape)


def _check_fill(fill: ShapedArray, shape: tuple[int, ...], what: str) -> None:
    lead = len(shape) - fill.ndim
    if lead < 0 or any(d not in (1, s) for d, s in zip(fill.shape, shape[lead:])):
        raise ShapeError(f"{what}: fill_value of shape {fmt_shape(fill.shape)} cannot be broadcast to the "
                         f"shape {fmt_shape(shape)}")


# -- zeros / ones / full -------------------------------------------------------------
def _const_stub(shape, dtype=None):  # type: ignore[no-untyped-def]
    ...


def _constant(name: str, value: int) -> None:
    def abstract(shape: Any, dtype: Any = None) -> ShapedArray:
        return ShapedArray(_shape(shape, f"np.{name}"), as_dtype(dtype) or _F64)

    def lower(ctx: LowerCtx, shape: Any, dtype: Any = None) -> HloValue:
        out = ctx.avals_out[0]
        return ctx.b.full(value, out.shape, out.dtype)

    defprim(name, getattr(np, name), _const_stub, abstract_eval=abstract, lower=lower, arrays=(),
            static_eval=False, positional=1, nondiff=True)


_constant("zeros", 0)
_constant("ones", 1)


def _full_stub(shape, fill_value, dtype=None):  # type: ignore[no-untyped-def]
    ...


def _full_abstract(shape: Any, fill_value: ShapedArray, dtype: Any = None) -> ShapedArray:
    dims = _shape(shape, "np.full")
    _check_fill(fill_value, dims, "np.full")
    return ShapedArray(dims, as_dtype(dtype) or fill_value.dtype)


def _full_lower(ctx: LowerCtx, shape: Any, fill_value: HloValue, dtype: Any = None) -> HloValue:
    out = ctx.avals_out[0]
    return _fill(ctx.b, fill_value, out.shape, out.dtype)


defprim("full", np.full, _full_stub, abstract_eval=_full_abstract, lower=_full_lower, arrays=("fill_value",),
        static_eval=False, positional=2)


# -- zeros_like / ones_like / full_like ------------------------------------------------
def _like_stub(a, dtype=None, shape=None):  # type: ignore[no-untyped-def]
    ...


def _like_aval(a: ShapedArray, dtype: Any, shape: Any, what: str) -> ShapedArray:
    dims = a.shape if shape is None else _shape(shape, what)
    return ShapedArray(dims, as_dtype(dtype) or a.dtype)


def _constant_like(name: str, value: int) -> None:
    def abstract(a: ShapedArray, dtype: Any = None, shape: Any = None) -> ShapedArray:
        return _like_aval(a, dtype, shape, f"np.{name}")

    def lower(ctx: LowerCtx, a: HloValue, dtype: Any = None, shape: Any = None) -> HloValue:
        out = ctx.avals_out[0]
        return ctx.b.full(value, out.shape, out.dtype)

    defprim(name, getattr(np, name), _like_stub, abstract_eval=abstract, lower=lower, arrays=("a",),
            static_eval=False, nondiff=True)


_constant_like("zeros_like", 0)
_constant_like("ones_like", 1)


def _full_like_stub(a, fill_value, dtype=None, shape=None):  # type: ignore[no-untyped-def]
    ...


def _full_like_abstract(a: ShapedArray, fill_value: ShapedArray, dtype: Any = None, shape: Any = None) -> ShapedArray:
    out = _like_aval(a, dtype, shape, "np.full_like")
    _check_fill(fill_value, out.shape, "np.full_like")
    return out


def _full_like_lower(ctx: LowerCtx, a: HloValue, fill_value: HloValue, dtype: Any = None,
                     shape: Any = None) -> HloValue:
    out = ctx.avals_out[0]
    return _fill(ctx.b, fill_value, out.shape, out.dtype)


defprim("full_like", np.full_like, _full_like_stub, abstract_eval=_full_like_abstract, lower=_full_like_lower,
        arrays=("a", "fill_value"), static_eval=False, nondiff_args=("a",))  # (only a's shape and dtype are read)


# -- eye / identity ------------------------------------------------------------------
def _eye_stub(N, M=None, k=0, dtype=None):  # type: ignore[no-untyped-def]
    ...


def _eye_abstract(N: Any, M: Any = None, k: Any = 0, dtype: Any = None) -> ShapedArray:
    dims = _shape((N, N if M is None else M), "np.eye")
    try:
        operator.index(k)
    except TypeError:
        raise DTypeError(f"np.eye: k must be a static int, got {k!r}") from None
    return ShapedArray(dims, as_dtype(dtype) or _F64)


def eye_hlo(b: FuncBuilder, out: ShapedArray, k: int) -> HloValue:
    """Ones where column - row == k, zeros elsewhere."""
    rows = b.iota(ShapedArray(out.shape, _I64), 0)
    cols = b.iota(ShapedArray(out.shape, _I64), 1)
    on = b.compare("EQ", cols, b.binary("add", rows, b.full(k, out.shape, _I64)) if k else rows)
    return b.convert(on, out.dtype)


defprim("eye", np.eye, _eye_stub, abstract_eval=_eye_abstract,
        lower=lambda ctx, N, M=None, k=0, dtype=None: eye_hlo(ctx.b, ctx.avals_out[0], operator.index(k)),
        arrays=(), static_eval=False, positional=1, nondiff=True)


def _identity_stub(n, dtype=None):  # type: ignore[no-untyped-def]
    ...


defprim("identity", np.identity, _identity_stub,
        abstract_eval=lambda n, dtype=None: _eye_abstract(n, None, 0, dtype),
        lower=lambda ctx, n, dtype=None: eye_hlo(ctx.b, ctx.avals_out[0], 0),
        arrays=(), static_eval=False, positional=1, nondiff=True)


# -- arange --------------------------------------------------------------------------
def _arange_stub(start, stop=None, step=None, dtype=None):  # type: ignore[no-untyped-def]
    ...


def _arange_plan(start: Any, stop: Any, step: Any, dtype: Any) -> tuple[int, np.dtype, Any, Any]:
    """(length, dtype, first value, increment), computed as NumPy's ``arange`` does."""
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    for v in (start, stop, step):
        if not isinstance(v, (int, float, np.integer, np.floating)):
            raise DTypeError(f"np.arange: start, stop and step must be static numbers, got {v!r}")
    if step == 0:
        raise ShapeError("np.arange: step must not be zero")
    d = as_dtype(dtype)
    if d is None:  # NumPy: at least int64, promoted with each argument's dtype
        d = _I64
        for v in (start, stop, step):
            d = np.promote_types(d, np.asarray(v).dtype)
    if d == np.bool_:
        raise DTypeError("np.arange: dtype=bool is not supported")
    length = max(0, math.ceil((stop - start) / step))
    # NumPy fills a[0] = start, a[1] = start + step (both cast), then a[i] = a[0] + i * (a[1] - a[0]).
    with np.errstate(all="ignore"):
        first = np.asarray(start).astype(d)
        delta = np.asarray(start + step).astype(d) - first
    return length, d, first, delta


def _arange_abstract(start: Any, stop: Any = None, step: Any = None, dtype: Any = None) -> ShapedArray:
    length, d, _, _ = _arange_plan(start, stop, step, dtype)
    return ShapedArray((length,), d)


def _arange_lower(ctx: LowerCtx, start: Any, stop: Any = None, step: Any = None, dtype: Any = None) -> HloValue:
    b = ctx.b
    length, d, first, delta = _arange_plan(start, stop, step, dtype)
    acc = np.dtype(np.float32) if is_float(d) and d.itemsize < 4 else d  # NumPy's float16 fill uses float
    i = b.iota(ShapedArray((length,), acc), 0)
    y = b.binary("add", b.binary("multiply", i, b.full(delta, (length,), acc)), b.full(first, (length,), acc))
    return b.convert(y, d)


defprim("arange", np.arange, _arange_stub, abstract_eval=_arange_abstract, lower=_arange_lower,
        arrays=(), static_eval=False, positional=1, nondiff=True)


# -- linspace ------------------------------------------------------------------------
# Endpoints are array operands (numbers written in place, or data: jnp.linspace takes traced endpoints too); the
# result is linear in them together, so its rules are linspaces of the tangents (the other endpoint's zeros: its
# shape is the result's) and weighted sums of the cotangent.
def _linspace_stub(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):  # type: ignore[no-untyped-def]
    ...


def _linspace_plan(start: ShapedArray, stop: ShapedArray, num: Any, retstep: Any, dtype: Any, axis: Any
                   ) -> tuple[int, np.dtype, np.dtype, tuple[int, ...], int]:
    """(num, computation dtype, result dtype, result shape, the samples' axis)."""
    if retstep is not False:
        raise DTypeError("np.linspace: retstep=True is not supported", hint="compute the step as (stop - start) / "
                         "(num - 1) beside np.linspace(start, stop, num)")
    for v in (start, stop):
        if v.dtype.kind not in "biuf":
            raise DTypeError(f"np.linspace: start and stop must be real numbers, got {v.dtype.name}")
    try:
        n = operator.index(num)
    except TypeError:
        raise DTypeError(f"np.linspace: num must be a static int, got {num!r}") from None
    if n < 0:
        raise ShapeError(f"np.linspace: number of samples, {n}, must be non-negative")
    # NumPy: the operands' type made inexact (`start * 1.0`: a float32 array stays float32, NEP 50)
    dt = np.multiply.resolve_dtypes((np.add.resolve_dtypes((weak_key(start), weak_key(stop), None))[2],
                                     float, None))[2]
    ends = broadcast_shapes(start.shape, stop.shape, what="np.linspace: start and stop")
    ax = normalize_axis(axis, len(ends) + 1, "np.linspace: axis")
    return n, dt, as_dtype(dtype) or dt, ends[:ax] + (n,) + ends[ax:], ax


def _linspace_abstract(start: ShapedArray, stop: ShapedArray, num: Any = 50, endpoint: Any = True,
                       retstep: Any = False, dtype: Any = None, axis: Any = 0) -> ShapedArray:
    _, _, d, shape, _ = _linspace_plan(start, stop, num, retstep, dtype, axis)
    return ShapedArray(shape, d)


def _linspace_lower(ctx: LowerCtx, start: HloValue, stop: HloValue, num: Any = 50, endpoint: Any = True,
                    retstep: Any = False, dtype: Any = None, axis: Any = 0) -> HloValue:
    """NumPy's algorithm: ``arange(num) * step + start``, the last element set to ``stop`` (numbers written in
    place: the step computed now, exactly as NumPy; a step that underflows to 0 is NumPy's ``/ div * delta``)."""
    b = ctx.b
    n, dt, d, shape, ax = _linspace_plan(start.aval, stop.aval, num, retstep, dtype, axis)
    div = n - 1 if endpoint else n
    rest = [i for i in range(len(shape)) if i != ax]
    if start.literal is not None and stop.literal is not None:
        with np.errstate(all="ignore"):
            delta = np.subtract(stop.literal, start.literal, dtype=dt)
            step = delta / div if div > 0 else None
        y = b.iota(ShapedArray(shape, dt), ax)
        if step is not None and step != 0:
            y = b.binary("multiply", y, b.full(step, shape, dt))
        else:  # an undefined step (div <= 0), or a step that underflows to 0 (denormals)
            if div > 0:
                y = b.binary("divide", y, b.full(div, shape, dt))
            y = b.binary("multiply", y, b.full(delta, shape, dt))
        lo, hi = b.full(start.literal, shape, dt), b.full(stop.literal, shape, dt)
    else:  # (endpoints from data: the same operations in the program)
        lo = b.broadcast_in_dim(b.convert(start, dt), shape, rest[len(rest) - start.ndim:])
        hi = b.broadcast_in_dim(b.convert(stop, dt), shape, rest[len(rest) - stop.ndim:])
        y = b.iota(ShapedArray(shape, dt), ax)
        delta = b.binary("subtract", hi, lo)
        y = b.binary("multiply", y, b.binary("divide", delta, b.full(div, shape, dt)) if div > 0 else delta)
    y = b.binary("add", y, lo)
    if endpoint and n > 1:
        last = b.compare("EQ", b.iota(ShapedArray(shape, _I64), ax), b.full(n - 1, shape, _I64))
        y = b.select(last, hi, y)
    if d.kind in "iu":
        y = b.unary("floor", y)
    return b.convert(y, d)


def _linspace_integers(args: Any) -> bool:
    """``np.linspace(a, b, n, dtype=int)`` (the call's arguments as source text): no derivative."""
    return any(t in args.get("dtype", "") for t in ("int", "bool", "uint"))


defprim("linspace", np.linspace, _linspace_stub, abstract_eval=_linspace_abstract, lower=_linspace_lower,
        arrays=("start", "stop"), static_eval=False, positional=2, nondiff_when=_linspace_integers,
        jvp={"start": "broadcast_like(np.linspace(start_dot, 0.0 * stop, num, endpoint, dtype=dtype, axis=axis), out)",
             "stop": "broadcast_like(np.linspace(0.0 * start, stop_dot, num, endpoint, dtype=dtype, axis=axis), out)"},
        vjp={"start": "unbroadcast(linspace_bar(out_bar, num, endpoint, axis, True), start)",
             "stop": "unbroadcast(linspace_bar(out_bar, num, endpoint, axis, False), stop)"})


# -- creation: linear in the fill value ---------------------------------------------------------------
deflinear("full", {"fill_value": "np.full(shape, fill_value_dot, dtype)"},
          {"fill_value": "unbroadcast(out_bar, fill_value)"})
deflinear("full_like", {"fill_value": "np.full_like(out, fill_value_dot)"},
          {"fill_value": "unbroadcast(out_bar, fill_value)"})


# -- batching (vmap): only a batched template or fill value makes a batched array ----------------------

for _name in ("zeros", "ones", "eye", "identity", "arange"):
    set_fields(_name, batch=batch_rules.per_example)  # (no array operand: never batched)
set_fields("linspace", batch=batch_rules.linspace)
set_fields("full", batch=batch_rules.full)
set_fields("zeros_like", batch=batch_rules.like)
set_fields("ones_like", batch=batch_rules.like)
set_fields("full_like", batch=batch_rules.full_like)
