"""Shape primitives: transpose, reshape, astype, copy, and basic indexing (``x[...]``).

Further shape and creation primitives live in ``shape_ops.py`` and ``creation.py``.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import lax
from ..core import DTypeError, ShapedArray, ShapeError
from ..lower.hlo import HloValue, aval_type
from . import batch_rules, gather
from .common import as_dtype, fmt_shape, normalize_axis, static_dims
from .registry import LowerCtx, deflinear, defprim

_RESHAPE_HINT = "the new shape must hold as many elements as the array (-1: the one size computed from the others)"


# -- transpose -------------------------------------------------------------------
def _transpose_stub(a, axes=None):  # type: ignore[no-untyped-def]
    ...


def _perm(ndim: int, axes: Any) -> list[int]:
    if axes is None:
        return list(range(ndim))[::-1]
    if isinstance(axes, int):
        axes = (axes,)
    perm = [normalize_axis(a, ndim) for a in axes]
    if sorted(perm) != list(range(ndim)):
        raise ShapeError(f"transpose: axes {tuple(axes)} are not a permutation of the {ndim} axes")
    return perm


def _transpose_abstract(a: ShapedArray, axes: Any = None) -> ShapedArray:
    perm = _perm(a.ndim, axes)
    # (a weak array, rows of a Python number, moved stays weak: reshape's rule; a 0-d one has no axes to move)
    return ShapedArray(tuple(a.shape[p] for p in perm), a.dtype, weak_type=a.weak_type and a.ndim > 0)


defprim("transpose", np.transpose, _transpose_stub, abstract_eval=_transpose_abstract,
        lower=lambda ctx, a, axes=None: ctx.b.transpose(a, _perm(a.ndim, axes)), arrays=("a",))


# -- reshape -----------------------------------------------------------------------
def _reshape_stub(a, /, shape, order="C"):  # type: ignore[no-untyped-def]
    ...


def reshape_target(in_shape: tuple[int, ...], shape: Any) -> tuple[int, ...]:
    shape = static_dims(shape, "reshape")
    size = int(np.prod(in_shape, dtype=np.int64))
    if shape.count(-1) > 1:
        raise ShapeError(f"reshape: can only specify one unknown dimension (-1), got {shape}")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise ShapeError(f"cannot reshape array of shape {fmt_shape(in_shape)} (size {size}) into "
                             f"shape {fmt_shape(shape)}", hint=_RESHAPE_HINT)
        shape = tuple(size // known if d == -1 else d for d in shape)
    if any(d < 0 for d in shape) or int(np.prod(shape, dtype=np.int64)) != size:
        raise ShapeError(f"cannot reshape array of shape {fmt_shape(in_shape)} (size {size}) into "
                         f"shape {fmt_shape(shape)}", hint=_RESHAPE_HINT)
    return shape


def _reshape_abstract(a: ShapedArray, shape: Any, order: str = "C") -> ShapedArray:
    if order != "C":
        raise DTypeError("reshape: only order='C' is supported")
    # a weak array of one axis or more is a Python number per example (``batch_broadcast`` of it): it stays
    # weak, as the number does in each example; a Python number itself reshaped is a NumPy array (strong)
    return ShapedArray(reshape_target(a.shape, shape), a.dtype, weak_type=a.weak_type and a.ndim > 0)


defprim("reshape", np.reshape, _reshape_stub, abstract_eval=_reshape_abstract,
        lower=lambda ctx, a, shape, order="C": ctx.b.reshape(a, ctx.avals_out[0].shape), arrays=("a",))


# -- astype / copy -----------------------------------------------------------------
def _astype_stub(x, dtype, /):  # type: ignore[no-untyped-def]
    ...


def _astype_abstract(x: ShapedArray, dtype: Any) -> ShapedArray:
    d = as_dtype(dtype)
    if d is None:
        raise DTypeError("astype: dtype must be given")
    return ShapedArray(x.shape, d)


def _astype_lower(ctx: LowerCtx, x: HloValue, dtype: Any) -> HloValue:
    out = ctx.avals_out[0]
    b = ctx.b
    if x.dtype.kind == "f" and out.dtype.kind in "iu":
        # NumPy truncates toward zero; so does stablehlo.convert. Nothing else to do.
        pass
    return b.convert(x, out.dtype)


def _to_integers(args: Mapping[str, Any]) -> bool:
    """``x.astype(int)`` (the call's arguments as source text): an integer or boolean result has no derivative."""
    return any(t in args.get("dtype", "") for t in ("int", "bool", "uint"))


defprim("astype", np.astype, _astype_stub, abstract_eval=_astype_abstract, lower=_astype_lower,
        arrays=("x",), positional=2, static_eval=False, nondiff_when=_to_integers)


def _bitcast_stub(operand, new_dtype, /):  # type: ignore[no-untyped-def]
    ...


def _bitcast_abstract(operand: ShapedArray, new_dtype: Any) -> ShapedArray:
    d = as_dtype(new_dtype)
    if d is None or d.kind not in "iuf" or operand.dtype.kind not in "iuf" or operand.weak_type \
            or d.itemsize != operand.dtype.itemsize:
        raise DTypeError(f"srcjax.lax.bitcast_convert_type: cannot reinterpret the bits of a {operand.str_short()} "
                         f"value as {new_dtype!r}", hint="give an integer or float array and a dtype of the same "
                         "width (uint32 <-> float32, uint64 <-> float64)")
    return ShapedArray(operand.shape, d)


def _bitcast_lower(ctx: LowerCtx, operand: HloValue, new_dtype: Any) -> HloValue:
    out = ctx.avals_out[0]
    x = ctx.b.full(operand.literal, operand.shape, operand.dtype) if operand.literal is not None else operand
    return ctx.b.emit(f"stablehlo.bitcast_convert {x.name} : ({aval_type(x.aval)}) -> {aval_type(out)}", out)


# integer bits: no derivative
defprim("bitcast_convert_type", lax.bitcast_convert_type, _bitcast_stub, abstract_eval=_bitcast_abstract,
        lower=_bitcast_lower, arrays=("operand",), path="srcjax.lax.bitcast_convert_type", positional=2,
        static_eval=False, nondiff=True)


def _constraint_stub(x, shardings, /):  # type: ignore[no-untyped-def]
    ...


def _constraint_lower(ctx: LowerCtx, x: HloValue, shardings: Any) -> HloValue:
    from ..lower import shardy

    return shardy.constraint(ctx.b, x, shardings)  # type: ignore[no-any-return]


# (on one device: the identity)
defprim("with_sharding_constraint", lax.with_sharding_constraint, _constraint_stub,
        abstract_eval=lambda x, shardings: x, lower=_constraint_lower, path="srcjax.lax.with_sharding_constraint",
        positional=2, static_eval=False)


def _copy_stub(a, /):  # type: ignore[no-untyped-def]
    ...


defprim("copy", np.copy, _copy_stub, abstract_eval=lambda a: ShapedArray(a.shape, a.dtype),
        lower=lambda ctx, a: a, arrays=("a",), static_eval=False)


# -- basic indexing ----------------------------------------------------------------
def _getitem_stub(x, key, /):  # type: ignore[no-untyped-def]
    ...


def _is_int(k: Any) -> bool:
    return isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))


def index_plan(shape: tuple[int, ...], key: tuple[Any, ...]) -> list[tuple[str, Any]]:
    """Expand ``key`` into one entry per input axis or new axis.

    Entries: ("int", i) static index, ("dyn", None) dynamic scalar index,
    ("slice", (start, stop, step)), ("new", None).
    """
    for k in key:
        if isinstance(k, HloValue) or isinstance(k, ShapedArray):
            aval = k.aval if isinstance(k, HloValue) else k
            if aval.ndim != 0 or aval.dtype.kind not in "iu":
                raise ShapeError(
                    f"indexing with a {aval.str_short()} value: indices must be integers",
                    hint="convert it: idx.astype(np.int64)")
        elif not (_is_int(k) or isinstance(k, slice) or k is None or k is Ellipsis):
            raise ShapeError(f"unsupported index {k!r}: only integers, slices, None and ... are supported")
        elif isinstance(k, slice) and not all(p is None or _is_int(p) for p in (k.start, k.stop, k.step)):
            raise DTypeError(f"slice indices must be integers or None, got {k}")
        elif isinstance(k, slice) and k.step == 0:
            raise ShapeError("slice step cannot be zero")
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise ShapeError("an index can only have a single ellipsis ('...')")
    n_used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if n_used > len(shape):
        raise ShapeError(f"too many indices for array: array is {len(shape)}-dimensional, "
                         f"but {n_used} were indexed", hint="index each dimension at most once (x.shape says how "
                                                             "many it has)")
    full: list[Any] = []
    for k in key:
        if k is Ellipsis:
            full += [slice(None)] * (len(shape) - n_used)
        else:
            full.append(k)
    full += [slice(None)] * (len(shape) - sum(1 for k in full if k is not None))
    plan: list[tuple[str, Any]] = []
    axis = 0
    for k in full:
        if k is None:
            plan.append(("new", None))
            continue
        d = shape[axis]
        if isinstance(k, (HloValue, ShapedArray)):
            plan.append(("dyn", None))
        elif _is_int(k):
            if not -d <= int(k) < d:
                raise ShapeError(f"index {int(k)} is out of bounds for axis {axis} with size {d}",
                                 hint=f"an index into a dimension of size {d} is {-d} to {d - 1}")
            plan.append(("int", int(k) % d))
        else:
            plan.append(("slice", k.indices(d)))
        axis += 1
    return plan


def array_keys(key: Any) -> tuple[Any, ...]:
    """``key`` as a tuple whose tuples and ranges of integers are lists: NumPy's integer arrays (``X[:, (0, 2)]``,
    ``X[:, ()]``, ``X[idx, range(n)]``)."""
    return tuple(list(k) if isinstance(k, (tuple, range)) else k for k in (key if isinstance(key, tuple) else (key,)))


def getitem_abstract(x: ShapedArray, key: Any) -> ShapedArray:
    key = array_keys(key)
    if gather.is_advanced(key):
        return gather.abstract(x, key)
    out: list[int] = []
    for kind, v in index_plan(x.shape, key):
        if kind == "new":
            out.append(1)
        elif kind == "slice":
            out.append(len(range(*v)))
    # (an item of a weak array, rows of a Python number, is weak, as in jax and NumPy's WeakArray: `ys[-1] * x32`)
    return ShapedArray(tuple(out), x.dtype, weak_type=x.weak_type and x.ndim > 0)


def _getitem_lower(ctx: LowerCtx, x: HloValue, key: Any) -> HloValue:
    b = ctx.b
    key = array_keys(key)
    if gather.is_advanced(key):
        return gather.lower_gather(b, x, key, ctx.avals_out[0])
    plan = index_plan(x.shape, key)
    dyn = [k for k in key if isinstance(k, HloValue)]
    starts, limits, strides, rev = [], [], [], []
    axis = 0
    for kind, v in plan:
        if kind == "new":
            continue
        if kind == "int":
            starts.append(v)
            limits.append(v + 1)
            strides.append(1)
        elif kind == "dyn":
            starts.append(0)
            limits.append(x.shape[axis])
            strides.append(1)
        else:
            start, stop, step = v
            n = len(range(start, stop, step))
            if step > 0:
                starts.append(start)
                limits.append(start + max(n - 1, 0) * step + 1 if n else start)
                strides.append(step)
            else:
                # reverse then slice forward
                d = x.shape[axis]
                rev.append(axis)
                s2 = d - 1 - start
                starts.append(s2)
                limits.append(s2 + max(n - 1, 0) * (-step) + 1 if n else s2)
                strides.append(-step)
        axis += 1
    y = b.reverse(x, rev)
    y = b.slice(y, starts, limits, strides)
    if dyn:
        # dynamic scalar indices: one dynamic_slice over the already sliced array
        it = iter(dyn)
        idx: list[HloValue] = []
        sizes = list(y.shape)
        axis = 0
        for kind, _ in plan:
            if kind == "new":
                continue
            if kind == "dyn":
                k = next(it)
                k64 = b.convert(k, np.dtype(np.int64))
                d = b.full(y.shape[axis], (), np.dtype(np.int64))
                neg = b.compare("LT", k64, b.full(0, (), np.dtype(np.int64)))
                k64 = b.select(neg, b.binary("add", k64, d), k64)
                idx.append(k64)
                sizes[axis] = 1
            else:
                idx.append(b.full(0, (), np.dtype(np.int64)))
            axis += 1
        y = b.dynamic_slice(y, idx, sizes)
    return b.reshape(y, ctx.avals_out[0].shape)


defprim("getitem", operator.getitem, _getitem_stub, abstract_eval=getitem_abstract, lower=_getitem_lower,
        arrays=("x",), path="operator.getitem", static_eval=False, mixed=("key",), origin_from=("x",),
        results="any")  # (an element of a tuple or dict may be anything)


# -- derivatives: linear; the VJP undoes the data movement --------------------------------------
deflinear("transpose", {"a": "np.transpose(a_dot, axes)"},
          {"a": "np.transpose(out_bar, inverse_perm(np.ndim(a), axes))"})
deflinear("reshape", {"a": "np.reshape(a_dot, shape)"}, {"a": "np.reshape(out_bar, np.shape(a))"})
deflinear("copy", {"a": "a_dot"}, {"a": "out_bar"})
deflinear("with_sharding_constraint", {"x": "with_sharding_constraint(x_dot, shardings)"},
          {"x": "with_sharding_constraint(out_bar, shardings)"})
# (the read clamps an index out of range, so its transpose adds at the clamped place: index_add's "clip" mode)
deflinear("getitem", {"x": "x_dot[key]"}, {"x": 'index_add(zeros_like(x), key, out_bar, "clip")'})
deflinear("astype", {"x": "x_dot.astype(dtype)"}, {"x": "out_bar.astype(np.result_type(x))"})


# -- batching (vmap) ------------------------------------------------------------------------------
from .registry import set_fields  # noqa: E402

set_fields("transpose", batch=batch_rules.helper_batched_only("batch_transpose", "a", "axes"))
set_fields("reshape", batch=batch_rules.reshape)
set_fields("astype", batch=batch_rules.unary)
set_fields("copy", batch=batch_rules.unary)
# (a constraint names the layout of one example's value: batched, it is kept per example, in a loop)
set_fields("with_sharding_constraint", batch=lambda c: c.per_example())
set_fields("bitcast_convert_type", batch=batch_rules.unary)
set_fields("getitem", batch=batch_rules.getitem)
