"""Sorting and order statistics: sort, argsort, partition, argpartition, lexsort, searchsorted,
median, quantile, percentile.

Everything lowers to one ``stablehlo.sort`` (``FuncBuilder.sort``): stable, ascending, in NumPy's
order (NaNs last, -0.0 equal to 0.0). So ``np.argsort`` is stable whatever ``kind=`` says, as JAX's
(NumPy's default quicksort may order equal keys differently), and ``np.partition`` /
``np.argpartition`` return a full sort, which is one of the arrangements NumPy allows (the order
on either side of the k-th element is unspecified): the k-th elements agree with NumPy, the others
may be arranged differently. ``np.searchsorted`` compares each value with every element of the
sorted ``a`` (O(len(a)) work per value; fine for the lookup tables it is used with).

Quantiles read one or two elements of the sorted axis at static positions
(:func:`srcjax.order_stats.quantile_points`: NumPy's methods ``linear`` (the default), ``lower``,
``higher``, ``midpoint``, ``nearest``); ``q`` is static (a number or a 1-D sequence). A slice
holding a NaN gives NaN, as NumPy. Result dtypes are NumPy's (found by running NumPy on a
two-element array of the operand's dtype).

Derivatives are JAX's: a sort permutes the tangent like the values, a quantile's gradient goes to
the elements it reads; argsort, argpartition, lexsort and searchsorted have none (integers).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..core import DTypeError, ShapedArray, ShapeError
from ..lower.hlo import FuncBuilder, HloValue, is_float
from ..quantile_plan import order_stat_shape, reduced_perm, stat_points
from . import batch_rules
from .common import fmt_shape, normalize_axis
from .registry import LowerCtx, defprim, set_fields

_I64 = np.dtype(np.int64)
_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def _sort_axis(a: ShapedArray, axis: Any, kind: Any, order: Any, name: str) -> int | None:
    """The sorted axis (None: the flattened array); ``kind`` accepted, ``order`` refused."""
    if order is not None:
        raise DTypeError(f"np.{name}: order= sorts structured arrays by field, which srcjax does not have",
                         hint="sort plain arrays (np.lexsort sorts by several keys)")
    if kind not in _KINDS:
        raise ShapeError(f"np.{name}: sort kind must be one of 'quicksort', 'mergesort', 'heapsort' or 'stable', "
                         f"not {kind!r}")
    if axis is None:
        return None
    return normalize_axis(axis, a.ndim)


def _flat_or(b: FuncBuilder, a: HloValue, axis: int | None) -> tuple[HloValue, int]:
    """``a`` flattened for ``axis=None`` (then axis 0), else as it is."""
    if axis is None:
        return b.reshape(a, (a.aval.size,)), 0
    return a, axis


# -- sort / argsort -----------------------------------------------------------------------------------
def _sort_stub(a, axis=-1, kind=None, order=None, *, stable=None):  # type: ignore[no-untyped-def]
    ...


def _sort_shape(a: ShapedArray, axis: int | None) -> tuple[int, ...]:
    return (a.size,) if axis is None else a.shape


def _sort_abstract(a: ShapedArray, axis: Any = -1, kind: Any = None, order: Any = None,
                   stable: Any = None) -> ShapedArray:
    return ShapedArray(_sort_shape(a, _sort_axis(a, axis, kind, order, "sort")), a.dtype)


def _sort_lower(ctx: LowerCtx, a: HloValue, axis: Any = -1, kind: Any = None, order: Any = None,
                stable: Any = None) -> HloValue:
    x, ax = _flat_or(ctx.b, a, _sort_axis(a.aval, axis, kind, order, "sort"))
    if x.aval.size == 0:
        return x
    return ctx.b.sort([x], ax)[0]


def _argsort_abstract(a: ShapedArray, axis: Any = -1, kind: Any = None, order: Any = None,
                      stable: Any = None) -> ShapedArray:
    return ShapedArray(_sort_shape(a, _sort_axis(a, axis, kind, order, "argsort")), _I64)


def argsort_hlo(b: FuncBuilder, x: HloValue, axis: int) -> HloValue:
    """The stable ascending order of ``x`` along ``axis`` (int64 indices)."""
    idx = b.iota(ShapedArray(x.shape, _I64), axis)
    if x.aval.size == 0:
        return idx
    return b.sort([x, idx], axis)[1]


def _argsort_lower(ctx: LowerCtx, a: HloValue, axis: Any = -1, kind: Any = None, order: Any = None,
                   stable: Any = None) -> HloValue:
    x, ax = _flat_or(ctx.b, a, _sort_axis(a.aval, axis, kind, order, "argsort"))
    return argsort_hlo(ctx.b, x, ax)


defprim("sort", np.sort, _sort_stub, abstract_eval=_sort_abstract, lower=_sort_lower, arrays=("a",),
        jvp={"a": "sort_jvp(a_dot, a, axis)"}, vjp={"a": "sort_bar(out_bar, a, axis)"})
defprim("argsort", np.argsort, _sort_stub, abstract_eval=_argsort_abstract, lower=_argsort_lower, arrays=("a",),
        nondiff=True)


# -- partition / argpartition: a full (stable) sort ------------------------------------------------------
def _partition_stub(a, kth, axis=-1, kind="introselect", order=None):  # type: ignore[no-untyped-def]
    ...


def _partition_axis(a: ShapedArray, kth: Any, axis: Any, kind: Any, order: Any, name: str) -> int | None:
    if kind != "introselect":
        raise ShapeError(f"np.{name}: kind must be 'introselect', not {kind!r}")
    ax = _sort_axis(a, axis, None, order, name)
    n = a.size if ax is None else a.shape[ax]
    ks = kth if isinstance(kth, (tuple, list)) else [kth]
    for k in ks:
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
            raise DTypeError(f"np.{name}: kth must be a static int or a sequence of them, got {kth!r}")
        if not -n <= k < n:
            raise ShapeError(f"np.{name}: kth(={k}) out of bounds ({n})",
                             hint=f"kth indexes the partitioned axis, of length {n}")
    return ax


def _partition_abstract(a: ShapedArray, kth: Any, axis: Any = -1, kind: Any = "introselect",
                        order: Any = None) -> ShapedArray:
    return ShapedArray(_sort_shape(a, _partition_axis(a, kth, axis, kind, order, "partition")), a.dtype)


def _argpartition_abstract(a: ShapedArray, kth: Any, axis: Any = -1, kind: Any = "introselect",
                           order: Any = None) -> ShapedArray:
    return ShapedArray(_sort_shape(a, _partition_axis(a, kth, axis, kind, order, "argpartition")), _I64)


def _partition_lower(ctx: LowerCtx, a: HloValue, kth: Any, axis: Any = -1, kind: Any = "introselect",
                     order: Any = None) -> HloValue:
    x, ax = _flat_or(ctx.b, a, _partition_axis(a.aval, kth, axis, kind, order, "partition"))
    return ctx.b.sort([x], ax)[0] if x.aval.size else x


def _argpartition_lower(ctx: LowerCtx, a: HloValue, kth: Any, axis: Any = -1, kind: Any = "introselect",
                        order: Any = None) -> HloValue:
    x, ax = _flat_or(ctx.b, a, _partition_axis(a.aval, kth, axis, kind, order, "argpartition"))
    return argsort_hlo(ctx.b, x, ax)


defprim("partition", np.partition, _partition_stub, abstract_eval=_partition_abstract, lower=_partition_lower,
        arrays=("a",), positional=2,
        jvp={"a": "partition_jvp(a_dot, a, kth, axis)"}, vjp={"a": "partition_bar(out_bar, a, kth, axis)"})
defprim("argpartition", np.argpartition, _partition_stub, abstract_eval=_argpartition_abstract,
        lower=_argpartition_lower, arrays=("a",), positional=2, nondiff=True)


# -- lexsort ---------------------------------------------------------------------------------------
def _lexsort_stub(keys, axis=-1):  # type: ignore[no-untyped-def]
    ...


def _lexsort_plan(keys: list[ShapedArray], axis: Any) -> int:
    if not keys:
        raise DTypeError("np.lexsort: need sequence of keys with len > 0")
    shape = keys[0].shape
    for k in keys:
        if k.shape != shape:
            raise ShapeError(f"np.lexsort: all keys need to be the same shape, got {fmt_shape(shape)} and "
                             f"{fmt_shape(k.shape)}")
    if not shape:
        raise ShapeError("np.lexsort: keys must be at least 1-D", hint="give each key an axis: k[None]")
    return normalize_axis(axis, len(shape))


def _lexsort_abstract(keys: list[ShapedArray], axis: Any = -1) -> ShapedArray:
    _lexsort_plan(keys, axis)
    return ShapedArray(keys[0].shape, _I64)


def _lexsort_lower(ctx: LowerCtx, keys: list[HloValue], axis: Any = -1) -> HloValue:
    """One sort by every key, the last one first (NumPy's lexsort), carrying the indices."""
    b = ctx.b
    ax = _lexsort_plan([k.aval for k in keys], axis)
    idx = b.iota(ShapedArray(keys[0].shape, _I64), ax)
    if idx.aval.size == 0:
        return idx
    return b.sort(list(reversed(keys)) + [idx], ax, num_keys=len(keys))[-1]


defprim("lexsort", np.lexsort, _lexsort_stub, abstract_eval=_lexsort_abstract, lower=_lexsort_lower, arrays=(),
        array_seqs=("keys",), nondiff=True)


# -- searchsorted -------------------------------------------------------------------------------------
def _searchsorted_stub(a, v, side="left", sorter=None):  # type: ignore[no-untyped-def]
    ...


def _searchsorted_abstract(a: ShapedArray, v: ShapedArray, side: Any = "left", sorter: Any = None) -> ShapedArray:
    if sorter is not None:
        raise DTypeError("np.searchsorted: sorter= is not supported",
                         hint="search the sorted array itself: np.searchsorted(a[sorter], v)")
    if side not in ("left", "right"):
        raise ShapeError(f"np.searchsorted: side must be 'left' or 'right', got {side!r}")
    if a.ndim != 1:
        raise ShapeError(f"np.searchsorted: a must be 1-D, got shape {fmt_shape(a.shape)}",
                         hint="search each row separately, or flatten a sorted array")
    return ShapedArray(v.shape, _I64)


def _searchsorted_lower(ctx: LowerCtx, a: HloValue, v: HloValue, side: Any = "left", sorter: Any = None) -> HloValue:
    """For each value, how many elements of ``a`` come before it (``left``) or not after it (``right``),
    in NumPy's order (NaNs last): a compare with every element, then a sum."""
    b = ctx.b
    d = np.result_type(a.dtype, v.dtype if not v.aval.weak_type else v.dtype.type(0))
    shape = v.shape + a.shape
    rows = b.broadcast_in_dim(b.convert(a, d), shape, [len(shape) - 1])
    vals = b.broadcast_in_dim(b.convert(v, d), shape, list(range(v.ndim)))
    first, second = (rows, vals) if side == "left" else (vals, rows)
    before = b.compare("LT", first, second)
    if is_float(d):  # a number comes before a NaN
        nan_second = b.compare("NE", second, second)
        num_first = b.compare("EQ", first, first)
        before = b.binary("or", before, b.binary("and", nan_second, num_first))
    if side == "right":  # not after: not (v before a[i])
        before = b.unary("not", before)
    return b.reduce(b.convert(before, _I64), "add", 0, [len(shape) - 1])


defprim("searchsorted", np.searchsorted, _searchsorted_stub, abstract_eval=_searchsorted_abstract,
        lower=_searchsorted_lower, arrays=("a", "v"), nondiff=True)


# -- median / quantile / percentile --------------------------------------------------------------------
def _median_stub(a, axis=None, out=None, overwrite_input=False, keepdims=False):  # type: ignore[no-untyped-def]
    ...


def _quantile_stub(a, q, axis=None, out=None, overwrite_input=False, method="linear",  # type: ignore[no-untyped-def]
                   keepdims=False, *, weights=None, interpolation=None):
    ...


_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _stat_plan(a: ShapedArray, q: Any, axis: Any, out: Any, method: str, weights: Any, name: str,
               percent: bool) -> tuple[np.dtype, int]:
    """(result dtype, length of the reduced axes), validated as NumPy does."""
    if out is not None:
        raise DTypeError(f"np.{name}: out= is not supported", hint="use the returned array")
    if weights is not None:
        raise DTypeError(f"np.{name}: weights= is not supported")
    if method not in _METHODS + ("median",):
        raise ShapeError(f"np.{name}: method={method!r} is not supported (srcjax has {', '.join(_METHODS)})")
    qs = np.asarray(q)
    if isinstance(q, ShapedArray) or qs.dtype.kind not in "iuf":
        raise DTypeError(f"np.{name}: q must be a static number or a static 1-D sequence of numbers",
                         hint="q decides which sorted elements are read: it must be known while compiling")
    if qs.ndim > 1:
        raise ShapeError(f"np.{name}: q must be a scalar or 1d")
    hi = 100 if percent else 1
    if qs.size and not (np.all(qs >= 0) and np.all(qs <= hi)):
        raise ShapeError(f"np.{name}: {'Percentiles' if percent else 'Quantiles'} must be in the range [0, {hi}]")
    keep, red = reduced_perm(a.ndim, axis if axis is None else _axes_tuple(axis, a.ndim))
    n = int(np.prod([a.shape[i] for i in red], dtype=np.int64))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            zeros = np.zeros(2, a.dtype)
            probe = np.median(zeros) if method == "median" else \
                (np.percentile if percent else np.quantile)(zeros, q, method=method)  # type: ignore[call-overload]
    except TypeError as e:
        raise DTypeError(f"np.{name} of {a.dtype.name}: {e}") from None
    if n == 0 and method != "median":
        raise ShapeError(f"np.{name} of an empty array (shape {fmt_shape(a.shape)}, axis {axis})",
                         hint="make sure the reduced axes are not empty")
    return np.dtype(np.asarray(probe).dtype), n


def _axes_tuple(axis: Any, ndim: int) -> tuple[int, ...]:
    axes = [normalize_axis(x, ndim) for x in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    if len(set(axes)) != len(axes):
        raise ShapeError(f"repeated axis in {axis!r}")
    return tuple(axes)


def _stat_abstract(a: ShapedArray, q: Any, axis: Any, out: Any, method: str, keepdims: Any, weights: Any,
                   name: str, percent: bool) -> ShapedArray:
    d, _ = _stat_plan(a, q, axis, out, method, weights, name, percent)
    axis = axis if axis is None else _axes_tuple(axis, a.ndim)
    return ShapedArray(order_stat_shape(a.shape, q, axis, bool(keepdims)), d)


def _stat_lower(ctx: LowerCtx, a: HloValue, q: Any, axis: Any, method: str, keepdims: Any, name: str,
                percent: bool) -> HloValue:
    """Sort the reduced axes (moved last, merged), read the elements of each quantile, interpolate."""
    b = ctx.b
    out = ctx.avals_out[0]
    d = out.dtype
    axis = axis if axis is None else _axes_tuple(axis, a.ndim)
    keep, red = reduced_perm(a.ndim, axis)
    batch = tuple(a.shape[i] for i in keep)
    n = int(np.prod([a.shape[i] for i in red], dtype=np.int64))
    if n == 0:  # (median only) NumPy: the mean of nothing
        return b.full(np.nan, out.shape, d)
    x = b.reshape(b.transpose(a, keep + red), batch + (n,))
    s = b.sort([x], len(batch))[0]
    acc = np.dtype(np.float32) if method == "median" and d.itemsize < 4 else d  # NumPy's mean of float16

    def element(k: int) -> HloValue:  # (in a's dtype)
        starts = [0] * len(batch) + [k]
        return b.reshape(b.slice(s, starts, list(batch) + [k + 1]), batch)

    results = []
    for lo, hi, gamma in stat_points(n, q, method, percent):
        low = b.convert(element(lo), acc)
        if gamma is None:
            r = low
        elif method == "median":  # NumPy: the mean of the two middle elements
            r = b.binary("divide", b.binary("add", low, b.convert(element(hi), acc)), b.full(2, batch, acc))
        else:  # NumPy's _lerp: the difference in a's dtype, then the result's
            high = b.convert(element(hi), acc)
            diff = b.convert(b.binary("subtract", element(hi), element(lo)), acc)
            if gamma >= 0.5:
                r = b.binary("subtract", high, b.binary("multiply", diff, b.full(1 - gamma, batch, acc)))
            else:
                r = b.binary("add", low, b.binary("multiply", diff, b.full(gamma, batch, acc)))
        results.append(b.reshape(b.convert(r, d), (1,) + batch))
    r = b.concatenate(results, 0) if len(results) > 1 else results[0]
    if is_float(a.dtype):  # a slice holding a NaN (sorted last) gives NaN
        last = b.reshape(b.slice(s, [0] * len(batch) + [n - 1], list(batch) + [n]), (1,) + batch)
        nan = b.broadcast_to(b.compare("NE", last, last), r.shape)
        r = b.select(nan, b.full(np.nan, r.shape, d), r)
    return b.reshape(r, out.shape)


def _median_abstract(a: ShapedArray, axis: Any = None, out: Any = None, overwrite_input: Any = False,
                     keepdims: Any = False) -> ShapedArray:
    return _stat_abstract(a, 0.5, axis, out, "median", keepdims, None, "median", False)


def _median_lower(ctx: LowerCtx, a: HloValue, axis: Any = None, out: Any = None, overwrite_input: Any = False,
                  keepdims: Any = False) -> HloValue:
    return _stat_lower(ctx, a, 0.5, axis, "median", keepdims, "median", False)


def _quantile_rule(name: str, percent: bool) -> tuple[Any, Any]:
    def abstract(a: ShapedArray, q: Any, axis: Any = None, out: Any = None, overwrite_input: Any = False,
                 method: Any = "linear", keepdims: Any = False, weights: Any = None,
                 interpolation: Any = None) -> ShapedArray:
        if interpolation is not None:
            raise DTypeError(f"np.{name}: interpolation= is deprecated; use method=")
        return _stat_abstract(a, q, axis, out, method, keepdims, weights, name, percent)

    def lower(ctx: LowerCtx, a: HloValue, q: Any, axis: Any = None, out: Any = None, overwrite_input: Any = False,
              method: Any = "linear", keepdims: Any = False, weights: Any = None,
              interpolation: Any = None) -> HloValue:
        return _stat_lower(ctx, a, q, axis, method, keepdims, name, percent)

    return abstract, lower


defprim("median", np.median, _median_stub, abstract_eval=_median_abstract, lower=_median_lower, arrays=("a",),
        jvp={"a": "order_stat_jvp(a_dot, a, 0.5, axis, keepdims, 'median', False)"},
        vjp={"a": "order_stat_bar(out_bar, a, 0.5, axis, keepdims, 'median', False)"})
# (a list q makes NumPy's float32 quantile float64: the templates end in a dtype-keeping shape move)
for _name, _percent in (("quantile", False), ("percentile", True)):
    _abstract, _lower = _quantile_rule(_name, _percent)
    defprim(_name, getattr(np, _name), _quantile_stub, abstract_eval=_abstract, lower=_lower, arrays=("a",),
            positional=2,
            jvp={"a": f"broadcast_like(order_stat_jvp(a_dot, a, q, axis, keepdims, method, {_percent}), out)"},
            vjp={"a": f"unbroadcast(order_stat_bar(out_bar, a, q, axis, keepdims, method, {_percent}), a)"})


# -- batching (vmap) -----------------------------------------------------------------------------------
def _lexsort_batch(c: batch_rules.BatchCall) -> str:
    """``np.lexsort(keys)`` per example: every key batched, the axis shifted past the batch axis."""
    if not isinstance(c.args["keys"], list):
        return c.per_example()
    keys = [k if b else f"batch_broadcast({k}, {c.size})" for k, b in zip(c.args["keys"], c.seq_batched("keys"))]
    axis = c.args["axis"]
    try:
        v = int(axis)
        axis = repr(v + 1 if v >= 0 else v)
    except ValueError:  # a name: read while specializing
        axis = f"batch_axis({axis}, {keys[0]})"
    return f"np.lexsort([{', '.join(keys)}], axis={axis})"


def _quantile_batch(helper: str) -> batch_rules.Rule:
    """A number ``q``: the axes shifted; a sequence (whose axis NumPy puts first): ``helper``."""
    shifted = batch_rules.axes("axis")
    by_helper = batch_rules.helper_batched_only(helper, "a", "q", "axis", "method", "keepdims")

    def rule(c: batch_rules.BatchCall) -> str:
        try:
            number = isinstance(float(c.args["q"]), float)
        except ValueError:
            number = False
        return shifted(c) if number else by_helper(c)

    return rule


for _name, _rule in [
        ("sort", batch_rules.flattening("batch_sort", "a", "axis", "kind")),
        ("argsort", batch_rules.flattening("batch_argsort", "a", "axis", "kind")),
        ("partition", batch_rules.flattening("batch_partition", "a", "kth", "axis")),
        ("argpartition", batch_rules.flattening("batch_argpartition", "a", "kth", "axis")),
        ("lexsort", _lexsort_batch),
        ("searchsorted", batch_rules.helper("batch_searchsorted", "a", "v", "side")),
        ("median", batch_rules.axes("axis")),
        ("quantile", _quantile_batch("batch_quantile")),
        ("percentile", _quantile_batch("batch_percentile"))]:
    set_fields(_name, batch=_rule)
