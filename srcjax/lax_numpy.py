"""JAX's ``lax`` functions written in NumPy terms: ``clamp``, ``rsqrt``, ``integer_pow``, ``logistic``,
``round``, ``div``, ``rem``, ``broadcast_in_dim``, ``dot_general``, ``pad`` (interior padding, negative
edges), ``sort`` (several operands, ``num_keys``), ``top_k``, ``cumsum``/``cumprod``/``cummax``/
``cummin``/``cumlogsumexp`` (``reverse``), ``argmax``/``argmin`` (``index_dtype``), ``reduce_sum``/... and
the shape functions.

Transpiled like the user's own helpers (``frontend/resolve.LIBRARY_MODULES``; ``srcjax.source`` shows them
imported from ``srcjax.lax``, which re-exports them), so they lower, differentiate and batch through the
NumPy primitives they use, and each *is* its NumPy reference. Their semantics are JAX's where JAX's
differ from NumPy's: ``round`` rounds halves away from zero (``rounding_method=0``), ``div`` of integers
truncates toward zero and ``rem`` takes the dividend's sign (C's), ``clamp``'s derivative is zero at its
bounds, reductions and cumulative sums keep an integer operand's dtype, ``top_k`` gives int32 indices
(ties: the lowest index first). The lax functions that are NumPy's as they are (``exp``, ``sin``,
``square``, ``sub``, comparisons, ...) are ``srcjax.lax`` names for the NumPy functions themselves.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .lax_stop import stop_gradient

__all__ = ["argmax", "argmin", "batch_matmul", "broadcast", "broadcast_in_dim", "clamp", "collapse", "concatenate",
           "convert_element_type", "cumlogsumexp", "cummax", "cummin", "cumprod", "cumsum", "div", "dot",
           "dot_general", "expand_dims", "full", "full_like", "index_in_dim", "integer_pow", "iota", "lax_round",
           "lax_slice", "logistic", "pad", "reduce_and", "reduce_max", "reduce_min", "reduce_or", "reduce_prod",
           "reduce_sum", "rem", "reshape", "rev", "rsqrt", "slice_in_dim", "sort", "sort_key_val", "squeeze", "top_k",
           "transpose"]


# -- elementwise -------------------------------------------------------------------------------------

def clamp(min: Any, x: Any, max: Any) -> Any:  # noqa: A002  (JAX's names)
    """JAX's ``lax.clamp(min, x, max)``: ``x`` clipped into ``[min, max]``; the derivative is zero at the
    bounds (x's inside, min's below, max's above: JAX's)."""
    inside = np.logical_and(x > min, x < max)
    edge = stop_gradient(np.clip(x, min, max))
    return np.where(x < min, min, np.where(x > max, max, np.where(inside, x, edge)))


def rsqrt(x: Any, *, accuracy: Any = None) -> Any:
    """JAX's ``lax.rsqrt``: ``1 / sqrt(x)``."""
    return 1.0 / np.sqrt(x)


def logistic(x: Any, *, accuracy: Any = None) -> Any:
    """JAX's ``lax.logistic``: ``1 / (1 + exp(-x))``, written ``exp(x) / (1 + exp(x))`` below 0 so that
    no ``exp`` overflows (``1 / (1 + exp(1000))``'s derivative was NaN: ``0 * inf``; JAX's is 0)."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0, e) / (1.0 + e)


def integer_pow(x: Any, y: int) -> Any:
    """JAX's ``lax.integer_pow``: ``x ** y`` for a static integer ``y`` (negative: ``1 / x ** -y``)."""
    if y < 0:
        return 1 / x ** (-y)
    return x ** y


def lax_round(x: Any, rounding_method: Any = 0) -> Any:
    """JAX's ``lax.round`` (``srcjax.lax.round``; named apart from the builtin): halves away from zero
    (``rounding_method=0``, JAX's default; NumPy's ``np.round`` rounds them to even), or to even
    (``rounding_method=1``)."""
    if int(rounding_method) == 1:
        return np.round(x)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def div(x: Any, y: Any) -> Any:
    """JAX's ``lax.div``: ``x / y``; of integers, the quotient truncated toward zero (C's, not ``//``)."""
    if np.result_type(x).kind in "iu":
        return np.sign(x) * np.sign(y) * (np.abs(x) // np.abs(y))
    return x / y


def rem(x: Any, y: Any) -> Any:
    """JAX's ``lax.rem``: the remainder of ``div``, with the sign of ``x`` (C's ``fmod``, not ``%``)."""
    return np.sign(x) * (np.abs(x) % np.abs(y))


def convert_element_type(operand: Any, new_dtype: Any) -> Any:
    """JAX's ``lax.convert_element_type``: ``operand`` as ``new_dtype``."""
    return np.asarray(operand).astype(new_dtype)


# -- shapes -----------------------------------------------------------------------------------------

def broadcast_in_dim(operand: Any, shape: Any, broadcast_dimensions: Any, *, out_sharding: Any = None) -> Any:
    """JAX's ``lax.broadcast_in_dim``: ``operand``'s axis ``k`` becomes axis ``broadcast_dimensions[k]`` of
    a result of ``shape``; the others are new."""
    dims = tuple(broadcast_dimensions)
    placed: tuple[Any, ...] = ()
    for k in range(len(shape)):
        placed = placed + ((np.shape(operand)[dims.index(k)] if k in dims else 1),)
    return np.broadcast_to(np.reshape(operand, placed), tuple(shape))


def broadcast(operand: Any, sizes: Any, *, out_sharding: Any = None) -> Any:
    """JAX's ``lax.broadcast``: new leading axes of ``sizes``."""
    return np.broadcast_to(operand, tuple(sizes) + np.shape(operand))


def expand_dims(array: Any, dimensions: Any) -> Any:
    """JAX's ``lax.expand_dims``: new axes of length 1 at ``dimensions``."""
    return np.expand_dims(array, tuple(dimensions))


def squeeze(array: Any, dimensions: Any) -> Any:
    """JAX's ``lax.squeeze``: the axes ``dimensions`` (of length 1) removed."""
    return np.squeeze(array, axis=tuple(dimensions))


def concatenate(operands: Any, dimension: int) -> Any:
    """JAX's ``lax.concatenate``: along ``dimension``."""
    return np.concatenate(operands, axis=dimension)


def transpose(operand: Any, permutation: Any) -> Any:
    """JAX's ``lax.transpose``."""
    return np.transpose(operand, tuple(permutation))


def reshape(operand: Any, new_sizes: Any, dimensions: Any = None, *, out_sharding: Any = None) -> Any:
    """JAX's ``lax.reshape``: of ``operand`` transposed by ``dimensions`` first when given."""
    if dimensions is not None:
        operand = np.transpose(operand, tuple(dimensions))
    return np.reshape(operand, tuple(new_sizes))


def collapse(operand: Any, start_dimension: int, stop_dimension: Any = None) -> Any:
    """JAX's ``lax.collapse``: axes ``start_dimension`` to ``stop_dimension`` (exclusive) made one."""
    shape = np.shape(operand)
    stop = len(shape) if stop_dimension is None else stop_dimension
    size = 1
    for d in shape[start_dimension:stop]:
        size = size * d
    return np.reshape(operand, shape[:start_dimension] + (size,) + shape[stop:])


def rev(operand: Any, dimensions: Any) -> Any:
    """JAX's ``lax.rev``: reversed along ``dimensions``."""
    return np.flip(operand, axis=tuple(dimensions))


def lax_slice(operand: Any, start_indices: Any, limit_indices: Any, strides: Any = None) -> Any:
    """JAX's ``lax.slice`` (``srcjax.lax.slice``; named apart from the builtin ``slice``, which generated code
    in this module calls): static starts, limits and strides per axis (``operand[a:b:c, ...]``)."""
    key: tuple[Any, ...] = ()
    for k in range(np.ndim(operand)):
        key = key + (np.s_[start_indices[k]:limit_indices[k]:(1 if strides is None else strides[k])],)
    return operand[key]


def slice_in_dim(operand: Any, start_index: Any, limit_index: Any, stride: int = 1, axis: int = 0) -> Any:
    """JAX's ``lax.slice_in_dim``: ``operand[start:limit:stride]`` along ``axis`` (None: the axis' end;
    negative: from the end)."""
    along = axis % np.ndim(operand)
    return operand[(np.s_[:],) * along + (np.s_[start_index:limit_index:stride],)]


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    """JAX's ``lax.index_in_dim``: the slice at static ``index`` (negative: from the end) along ``axis``."""
    along = axis % np.ndim(operand)
    at = index % np.shape(operand)[along]
    out = operand[(np.s_[:],) * along + (np.s_[at:at + 1],)]
    if keepdims:
        return out
    return np.squeeze(out, axis=along)


def iota(dtype: Any, size: int) -> Any:
    """JAX's ``lax.iota``: ``0, 1, ..., size - 1`` of ``dtype``."""
    return np.arange(size, dtype=dtype)


def full(shape: Any, fill_value: Any, dtype: Any = None, *, sharding: Any = None) -> Any:
    """JAX's ``lax.full``."""
    return np.full(tuple(shape), fill_value, dtype=dtype)


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Any = None, sharding: Any = None) -> Any:
    """JAX's ``lax.full_like``."""
    return np.full_like(x, fill_value, dtype=dtype, shape=shape)


def pad(operand: Any, padding_value: Any, padding_config: Any) -> Any:
    """JAX's ``lax.pad``: per axis ``(low, high, interior)``: ``interior`` fill values between elements,
    ``low``/``high`` at the ends (negative ones crop)."""
    shape = np.shape(operand)
    grown: tuple[Any, ...] = ()
    placed: tuple[Any, ...] = ()
    for k in range(len(shape)):
        low, high, interior = padding_config[k]
        d = shape[k]
        inner = d + max(d - 1, 0) * interior
        grown = grown + (max(low, 0) + inner + max(high, 0),)
        placed = placed + (np.s_[max(low, 0):max(low, 0) + inner:interior + 1],)
    out = np.full(grown, padding_value, dtype=np.result_type(operand))
    out[placed] = operand
    cropped: tuple[Any, ...] = ()
    for k in range(len(shape)):
        low, high, _ = padding_config[k]
        cropped = cropped + (np.s_[max(-low, 0):grown[k] - max(-high, 0)],)
    return out[cropped]


# -- contractions ---------------------------------------------------------------------------------------

def _size(shape: Any) -> int:
    n = 1
    for d in shape:
        n = n * d
    return n


def dot_general(lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any = None,
                preferred_element_type: Any = None, *, out_sharding: Any = None) -> Any:
    """JAX's ``lax.dot_general``: ``dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch,
    rhs_batch))``; the result's axes are the batch axes, then ``lhs``'s free axes, then ``rhs``'s. One
    matmul of the operands transposed to (batch, free, contracted) and (batch, contracted, free)."""
    (lc, rc), (lb, rb) = dimension_numbers
    lc, rc, lb, rb = tuple(lc), tuple(rc), tuple(lb), tuple(rb)
    if preferred_element_type is not None:
        lhs = np.asarray(lhs).astype(preferred_element_type)
        rhs = np.asarray(rhs).astype(preferred_element_type)
    lshape, rshape = np.shape(lhs), np.shape(rhs)
    lf = tuple(k for k in range(len(lshape)) if k not in lc and k not in lb)
    rf = tuple(k for k in range(len(rshape)) if k not in rc and k not in rb)
    batch = tuple(lshape[k] for k in lb)
    lfree, rfree = tuple(lshape[k] for k in lf), tuple(rshape[k] for k in rf)
    inner = _size(tuple(lshape[k] for k in lc))
    a = np.reshape(np.transpose(lhs, lb + lf + lc), batch + (_size(lfree), inner))
    b = np.reshape(np.transpose(rhs, rb + rc + rf), batch + (inner, _size(rfree)))
    return np.reshape(a @ b, batch + lfree + rfree)


def dot(lhs: Any, rhs: Any, precision: Any = None, preferred_element_type: Any = None, *,
        dimension_numbers: Any = None, out_sharding: Any = None) -> Any:
    """JAX's ``lax.dot``: vector-vector, matrix-vector or matrix-matrix product (``dimension_numbers``:
    ``dot_general``'s)."""
    if dimension_numbers is not None:
        return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)
    if preferred_element_type is not None:
        lhs = np.asarray(lhs).astype(preferred_element_type)
        rhs = np.asarray(rhs).astype(preferred_element_type)
    return np.dot(lhs, rhs)


def batch_matmul(lhs: Any, rhs: Any, precision: Any = None) -> Any:
    """JAX's ``lax.batch_matmul``: matrix products over matching leading axes."""
    return np.matmul(lhs, rhs)


# -- reductions, cumulative reductions, order ---------------------------------------------------------------

def reduce_sum(operand: Any, axes: Any, *, out_sharding: Any = None) -> Any:
    """JAX's ``lax.reduce_sum`` over ``axes``: the operand's dtype kept (an int8 sum wraps, as JAX's)."""
    return np.sum(operand, axis=tuple(axes), dtype=np.result_type(operand))


def reduce_prod(operand: Any, axes: Any) -> Any:
    return np.prod(operand, axis=tuple(axes), dtype=np.result_type(operand))


def reduce_max(operand: Any, axes: Any) -> Any:
    return np.max(operand, axis=tuple(axes))


def reduce_min(operand: Any, axes: Any) -> Any:
    return np.min(operand, axis=tuple(axes))


def reduce_and(operand: Any, axes: Any) -> Any:
    """JAX's ``lax.reduce_and`` of a boolean operand."""
    return np.all(operand, axis=tuple(axes))


def reduce_or(operand: Any, axes: Any) -> Any:
    """JAX's ``lax.reduce_or`` of a boolean operand."""
    return np.any(operand, axis=tuple(axes))


def argmax(operand: Any, axis: int, index_dtype: Any) -> Any:
    """JAX's ``lax.argmax``: the first maximal element's index along ``axis``, of ``index_dtype``."""
    return np.argmax(operand, axis=axis).astype(index_dtype)


def argmin(operand: Any, axis: int, index_dtype: Any) -> Any:
    return np.argmin(operand, axis=axis).astype(index_dtype)


def cumsum(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """JAX's ``lax.cumsum`` along ``axis`` (``reverse``: from the end), the operand's dtype kept."""
    if reverse:
        return np.flip(np.cumsum(np.flip(operand, axis), axis=axis, dtype=np.result_type(operand)), axis)
    return np.cumsum(operand, axis=axis, dtype=np.result_type(operand))


def cumprod(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    if reverse:
        return np.flip(np.cumprod(np.flip(operand, axis), axis=axis, dtype=np.result_type(operand)), axis)
    return np.cumprod(operand, axis=axis, dtype=np.result_type(operand))


def cummax(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    if reverse:
        return np.flip(np.maximum.accumulate(np.flip(operand, axis), axis=axis), axis)
    return np.maximum.accumulate(operand, axis=axis)


def cummin(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    if reverse:
        return np.flip(np.minimum.accumulate(np.flip(operand, axis), axis=axis), axis)
    return np.minimum.accumulate(operand, axis=axis)


def cumlogsumexp(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
    """JAX's ``lax.cumlogsumexp``: ``log(cumsum(exp(x)))`` without overflow: a prefix scan of the stable
    ``np.logaddexp`` in ``ceil(log2 n)`` steps (each adds the value ``2**k`` places before)."""
    x = np.moveaxis(operand, axis, 0)
    if reverse:
        x = np.flip(x, 0)
    n = np.shape(x)[0]
    shift = 1
    while shift < n:
        before = np.concatenate([np.full((shift,) + np.shape(x)[1:], -np.inf, dtype=np.result_type(x)), x[:n - shift]])
        x = np.logaddexp(x, before)
        shift = shift * 2
    if reverse:
        x = np.flip(x, 0)
    return np.moveaxis(x, 0, axis)


def sort(operand: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """JAX's ``lax.sort``: one array sorted along ``dimension``, or a tuple of arrays sorted together by
    their first ``num_keys`` (lexicographically; stable)."""
    if not isinstance(operand, (tuple, list)):
        return np.sort(operand, axis=dimension, stable=True)
    order = np.argsort(operand[num_keys - 1], axis=dimension, stable=True)
    for k in range(num_keys - 2, -1, -1):
        within = np.argsort(np.take_along_axis(operand[k], order, axis=dimension), axis=dimension, stable=True)
        order = np.take_along_axis(order, within, axis=dimension)
    out = []
    for x in operand:
        out.append(np.take_along_axis(x, order, axis=dimension))
    return tuple(out)


def sort_key_val(keys: Any, values: Any, dimension: int = -1, is_stable: bool = True) -> Any:
    """JAX's ``lax.sort_key_val``: ``values`` in the order that sorts ``keys``, and the sorted keys."""
    return sort((keys, values), dimension, is_stable, 1)


def top_k(operand: Any, k: int, *, axis: int = -1) -> Any:
    """JAX's ``lax.top_k``: the ``k`` largest elements along ``axis`` in decreasing order and their int32
    indices (ties: the lowest index first; NaN counts as the largest)."""
    n = np.shape(operand)[axis]
    ascending = np.argsort(np.flip(operand, axis), axis=axis, stable=True)  # (ties: the last index first)
    order = (n - 1) - np.flip(ascending, axis)
    first = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(operand, first, axis=axis), first.astype(np.int32)
