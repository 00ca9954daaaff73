"""``x.at[key].add/multiply/divide/power/min/max(v)`` (and NumPy's ``np.multiply.at``, ``np.maximum.at``,
``np.minimum.at``): every value at a repeated index combines, as in JAX's scatters and NumPy's unbuffered
``ufunc.at``. Written in NumPy terms over srcjax's primitives, transpiled like the user's helpers
(``composites`` re-exports them; the normalizer calls them through ``AT_COMBINE``).

A 1-D integer array on the leading axis selects rows; any other key holding an integer array (a tuple of index
arrays ``x.at[i, j]``, a 2-D index array, an index array after a slice) works on ``x`` flattened, at the flat
positions ``x[key]`` selects (was: written as ``x[key] = op(x[key], v)``, where the last value at a repeated
position won: ``x.at[i, j].max(v)`` with a repeated ``(i, j)`` silently dropped all but one value). Keys of
ints, slices and masks select each position at most once: ``x[key] = op(x[key], v)``.

An index out of range (known only at run time) writes nothing, as JAX's scatters (srcjax/index_writes.py): an
entry of an index array matches no row here, an integer's write is dropped by ``index_update`` (``add``'s by
``index_add`` itself, whose lowering is a scatter that skips it)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .adjoint import index_add
from .lax import index_update as srcjax_index_update

__all__ = ["AT_COMBINE", "at_add", "at_divide", "at_max", "at_min", "at_multiply", "at_power"]


def _int_array_key(key: Any) -> bool:
    """A 1-D integer array indexing the leading axis (where indices may repeat)."""
    if isinstance(key, (int, slice, tuple)) or key is None:
        return False
    return np.ndim(key) == 1 and np.issubdtype(np.result_type(key), np.integer)


def _holds_index_array(key: Any) -> bool:
    """Any other key with an integer array in it (where positions may repeat)."""
    parts = key if isinstance(key, tuple) else (key,)
    for p in parts:
        if not (isinstance(p, (int, slice)) or p is None or p is Ellipsis) and np.ndim(p) >= 1 and \
                np.issubdtype(np.result_type(p), np.integer):
            return True
    return False


def _positions(x: Any, key: Any) -> Any:
    """The flat positions of ``x`` that ``x[key]`` selects (in its shape; repeated where the key repeats); ``x``'s
    size (no position: the write dropped) where a tuple of integers and index arrays has one out of range."""
    pos = np.reshape(np.arange(np.size(x)), np.shape(x))[key]
    parts = key if isinstance(key, tuple) else (key,)
    if len(parts) != np.ndim(x) or not all(isinstance(p, int) or np.ndim(p) >= 0 and not isinstance(p, slice) and
                                           p is not None and p is not Ellipsis for p in parts):
        return pos  # (slices beside index arrays: each index array's entries in range by the caller's reading)
    inside = True
    for p, d in zip(parts, np.shape(x)):
        inside = inside & (np.asarray(p) >= -d) & (np.asarray(p) < d)
    return np.where(inside, pos, np.size(x))


def _read(x: Any, key: Any) -> Any:
    """``x[key]`` of a key that selects each element once, each integer index clamped into its axis (as XLA's gather
    reads; the write there is dropped: a NumPy run gives the compiled program's answer, not NumPy's IndexError)."""
    parts = key if isinstance(key, tuple) else (key,)
    if len(parts) > np.ndim(x) or any(p is None or p is Ellipsis or isinstance(p, slice) or np.ndim(p) > 0
                                      for p in parts):
        return x[key]  # (a slice or a mask: in range by construction, as NumPy's)
    clamped = []
    for j in range(len(parts)):  # (a loop, not a generator: vmap batches it)
        clamped.append(np.clip(parts[j], -np.shape(x)[j], np.shape(x)[j] - 1))
    return x[tuple(clamped)]


def _flat_values(v: Any, pos: Any) -> Any:
    return np.reshape(np.broadcast_to(v, np.shape(pos)), (-1,))


def _segments(x: Any, key: Any, v: Any, fill: Any) -> Any:
    """``out[j, i, ...] = v[j, ...]`` where ``key[j] == i`` (i indexing ``x``'s leading axis), else ``fill``."""
    n = np.shape(x)[0]
    rest = np.shape(x)[1:]
    k = np.shape(key)[0]
    hit = np.expand_dims(np.where(key < 0, key + n, key), 1) == np.arange(n)  # (out of range: no row; was `% n`)
    hit = np.reshape(hit, (k, n) + (1,) * len(rest))
    vb = np.broadcast_to(v, (k,) + rest)
    return np.where(hit, np.expand_dims(vb, 1), fill), np.any(hit, axis=0)


def _factors(x: Any, key: Any, v: Any) -> Any:
    """The product of the values at each row ``key`` selects (1 elsewhere)."""
    factors, _ = _segments(x, key, v, 1)
    return np.prod(factors, axis=0)


def _flat_factors(x: Any, key: Any, v: Any) -> Any:
    """:func:`_factors` at the flat positions ``key`` selects, in ``x``'s shape."""
    pos = _positions(x, key)
    return np.reshape(_factors(np.reshape(x, (-1,)), np.reshape(pos, (-1,)), _flat_values(v, pos)), np.shape(x))


def at_add(x: Any, key: Any, v: Any) -> Any:
    """``x.at[key].add(v)``: one scatter-add (``index_add``: every value at a repeated index adds in, one at an index
    out of range is dropped, with a zero cotangent, as JAX's), in ``x``'s dtype. The front end writes it itself
    (``frontend/jax_spellings.py``); kept for ``AT_COMBINE``'s callers."""
    return index_add(x, key, v).astype(x.dtype)


def at_multiply(x: Any, key: Any, v: Any) -> Any:
    """``x.at[key].multiply(v)``: every value at a repeated index multiplies in (JAX's scatter_mul)."""
    if _int_array_key(key):
        return x * _factors(x, key, v)
    if _holds_index_array(key):
        return x * _flat_factors(x, key, v)
    return srcjax_index_update(x, key, _read(x, key) * v)


def at_divide(x: Any, key: Any, v: Any) -> Any:
    if _int_array_key(key):
        return x / _factors(x, key, v)
    if _holds_index_array(key):
        return x / _flat_factors(x, key, v)
    return srcjax_index_update(x, key, _read(x, key) / v)


def at_power(x: Any, key: Any, v: Any) -> Any:
    if _int_array_key(key):
        return x ** _factors(x, key, v)
    if _holds_index_array(key):
        return x ** _flat_factors(x, key, v)
    return srcjax_index_update(x, key, _read(x, key) ** v)


def _max_rows(x: Any, key: Any, v: Any) -> Any:
    lowest = -np.inf if np.issubdtype(np.result_type(x), np.floating) else np.iinfo(np.result_type(x)).min
    values, hit = _segments(x, key, v, lowest)
    return np.where(hit, np.maximum(x, np.max(values, axis=0)), x)


def _min_rows(x: Any, key: Any, v: Any) -> Any:
    highest = np.inf if np.issubdtype(np.result_type(x), np.floating) else np.iinfo(np.result_type(x)).max
    values, hit = _segments(x, key, v, highest)
    return np.where(hit, np.minimum(x, np.min(values, axis=0)), x)


def at_max(x: Any, key: Any, v: Any) -> Any:
    if _int_array_key(key):
        return _max_rows(x, key, v)
    if _holds_index_array(key):
        pos = _positions(x, key)
        flat = _max_rows(np.reshape(x, (-1,)), np.reshape(pos, (-1,)), _flat_values(v, pos))
        return np.reshape(flat, np.shape(x))
    return srcjax_index_update(x, key, np.maximum(_read(x, key), v))


def at_min(x: Any, key: Any, v: Any) -> Any:
    if _int_array_key(key):
        return _min_rows(x, key, v)
    if _holds_index_array(key):
        pos = _positions(x, key)
        flat = _min_rows(np.reshape(x, (-1,)), np.reshape(pos, (-1,)), _flat_values(v, pos))
        return np.reshape(flat, np.shape(x))
    return srcjax_index_update(x, key, np.minimum(_read(x, key), v))


AT_COMBINE = {"add": at_add, "multiply": at_multiply, "mul": at_multiply, "divide": at_divide, "power": at_power,
              "max": at_max, "min": at_min}
