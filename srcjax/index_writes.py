"""Which writes of an assignment land: through repeated indices (:func:`winning_writes`), and at indices out of
range (:func:`dropping`).

**Writes out of range are dropped, reads clamp** (JAX's rule for ``x.at[i].set/add/multiply/min/max(v)``: a
scatter's ``FILL_OR_DROP``). A write (``x[i] = v``, ``x[i] += v``, ``x.at[i].op(v)``) at an index known only at
run time that lies outside ``[-d, d)`` of its axis (a number or an entry of an index array) changes nothing; an
index in range, negative ones too, writes as NumPy does. A read at such an index clamps to the nearest element
(XLA's gather), and a slice's start known only at run time clamps so the slice fits (``dynamic_update_slice``);
a read's transpose adds at the clamped place (``index_add(..., "clip")``: :func:`clamped`).
One rule for every path: the NumPy reference here (an out-of-range index moved to a scratch element one past the
end of its axis: :func:`dropping`), the lowering (``primitives/ad_prims.py``: a ``select`` on whether each run-time
integer lands, a scatter for index arrays) and vmap's writes (``batched.py``: indices per example left as they are).

``y[idx] = v`` with an index repeated in ``idx`` writes one element several times, and one write
wins (NumPy: the last; XLA's scatter: the one the scatter keeps). The cotangent of ``v`` reads
``y``'s cotangent at every write that landed and zero at the overwritten ones, as JAX's scatter
JVP does: each write gets an id, the ids are scattered with the same assignment, read back at
``idx`` and compared with the ids. Derivative code calls it only where a key is not a literal (a
slice, an integer); keys that cannot repeat (integers, slices, boolean masks) take a fast path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .pytree import is_tree

__all__ = ["can_repeat", "clamped", "cut", "dropping", "index_lands", "padded", "winning_writes", "written_once"]


def dropping(shape: tuple[int, ...], key: Any) -> tuple[tuple[int, ...], Any]:
    """``(padded, key2)`` for a write ``x[key] = v`` into an array of ``shape``: the axes whose integer index (a
    number or an array, not a boolean mask) is out of range somewhere, and ``key`` with each such index moved to
    the axis' length (negative ones in range made positive): written into ``x`` padded by one element along those
    axes, an out-of-range write lands in the padding, which is then cut off (the write dropped, as JAX's scatter
    drops it; repeated and broadcast indices keep NumPy's meaning). ``((), key)`` where every index lands."""
    padded: list[int] = []

    def moved(a: Any, d: int, axis: int) -> Any:
        outside = (a < -d) | (a >= d)
        if not np.any(outside):
            return None
        padded.append(axis)
        return np.where(outside, d, np.where(a < 0, a + d, a))

    moved_key = _remapped(shape, key, moved)  # (`moved` fills `padded` as the key is walked)
    return tuple(padded), moved_key


def clamped(shape: tuple[int, ...], key: Any) -> Any:
    """``key`` with each integer index (a number or an array's entries) out of range of its axis clamped to the
    nearest element, as a read's (XLA's gather and ``dynamic_slice``): ``index_add(..., mode="clip")``."""
    def clamp(a: Any, d: int, axis: int) -> Any:
        return None if not np.any((a < -d) | (a >= d)) else np.clip(a, -d, d - 1)

    return _remapped(shape, key, clamp)


def _remapped(shape: tuple[int, ...], key: Any, remap: Any) -> Any:
    """``key`` with each integer index ``a`` on an axis of length ``d`` replaced by ``remap(a, d, axis)`` (an array)
    unless that is None; slices, None, ``...`` and boolean masks kept."""
    parts = key if isinstance(key, tuple) else (key,)
    used = sum(np.ndim(p) if _is_mask(p) else 0 if p is None or p is Ellipsis else 1 for p in parts)
    out: list[Any] = []
    axis = 0
    for p in parts:
        if p is Ellipsis:
            axis += len(shape) - used
        elif _is_mask(p):
            axis += np.ndim(p)
        elif p is not None and not isinstance(p, slice) and axis < len(shape):
            a = np.asarray(p)
            if a.dtype.kind in "iu" and (q := remap(a, shape[axis], axis)) is not None:
                p = q
            axis += 1
        elif p is not None:
            axis += 1
        out.append(p)
    return tuple(out) if isinstance(key, tuple) else out[0]


def _is_mask(p: Any) -> bool:
    return isinstance(p, np.ndarray) and p.dtype == np.bool_ or isinstance(p, list) and bool(p) and \
        all(type(e) is bool for e in p)


def padded(x: Any, axes: tuple[int, ...]) -> Any:
    """``x`` with one more element (zero, False) at the end of each of ``axes`` (:func:`dropping`'s scratch)."""
    return np.pad(x, [(0, 1 if a in axes else 0) for a in range(np.ndim(x))])


def cut(x: Any, shape: tuple[int, ...]) -> Any:
    """``x`` without :func:`padded`'s scratch: its first ``shape`` elements."""
    return x[tuple(slice(0, d) for d in shape)]


def can_repeat(key: Any) -> bool:
    """Whether an index ``key`` may name one element twice: it holds an integer array (or a list),
    not only integers, slices, None, ``...`` and boolean masks."""
    for k in key if isinstance(key, tuple) else (key,):
        if isinstance(k, list) or isinstance(k, np.ndarray) and k.ndim > 0 and k.dtype.kind in "iu":
            return True
    return False


def winning_writes(x: Any, key: Any) -> Any:
    """For ``x[key] = v`` (``v`` broadcast to the selection ``x[key]``): a boolean array shaped like the
    selection, False at the writes a later write to the same element of ``x`` overwrote (a repeated
    index), True at those that landed. True for a container ``x`` (an item is written once)."""
    if is_tree(x) or type(x) is dict or type(x) is list:
        return True
    shape = np.shape(x)
    axes, key = dropping(shape, key)  # (an index out of range: its write is dropped, it lands nowhere)
    selection = np.shape(padded(np.empty(shape, dtype=np.int8), axes)[key])
    if not can_repeat(key):
        return np.full(selection, not axes, dtype=bool)
    ids = np.reshape(np.arange(int(np.prod(selection)), dtype=np.int64), selection)
    landed = padded(np.full(shape, -1, dtype=np.int64), axes)
    inside = padded(np.ones(shape, dtype=bool), axes)  # (False in the scratch)
    landed[key] = ids  # the same assignment: the same write wins
    return (landed[key] == ids) & inside[key]


def index_lands(x: Any, key: Any) -> Any:
    """For ``index_add(x, key, g)`` (``x[key] += g``, repeated indices accumulating): a boolean array shaped like
    the selection, False at the writes an index out of range drops (:func:`dropping`), True at the others (all
    of a repeated index's). Its cotangent of ``g`` is zero where False, as JAX's scatter-add's (its transpose, a
    gather, fills them with zeros). True for a container ``x``. A primitive (``primitives/ad_prims.py``)."""
    if is_tree(x) or type(x) is dict or type(x) is list:
        return True
    shape = np.shape(x)
    axes, key = dropping(shape, key)
    return padded(np.ones(shape, dtype=bool), axes)[key]


def written_once(x: Any, key: Any) -> bool:
    """:func:`winning_writes` of a container ``x`` (a dict's or list's item is written once): True.
    Transpiled like the user's code (``frontend.resolve.LIBRARY_MODULES``)."""
    return True
