"""Integer-array indexing (``x[idx]``, ``x[rows, cols]``, ``x[:, idx]``): gather, and its transpose.

NumPy's "advanced" indexing, for integer arrays (dynamic or constant) mixed with
integers, slices and ``...``:

- the index arrays (and integers among them) broadcast together to a shape ``B``;
- when they are adjacent (``x[:, i, j]``) ``B`` replaces them in place, otherwise
  it comes first (``x[i, :, j]``), as in NumPy;
- negative indices count from the end; an index out of bounds is clamped into
  range (XLA's gather, as in JAX: NumPy would raise, which compiled code cannot).
  Constant indices are checked when the program is specialized.

Lowering: the slices first (``slice``/``reverse``), then one ``stablehlo.gather``
whose batch dimensions are ``B``. ``index_add`` with such a key (the gradient of
``x[idx]``) is a ``stablehlo.scatter`` that adds, so repeated indices accumulate
(``np.add.at``); ``index_update`` (``x[idx] = v``) scatters by replacement.
Boolean masks have a data-dependent shape and are refused with a hint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import DTypeError, ShapedArray, ShapeError
from ..lower.hlo import FuncBuilder as Builder
from ..lower.hlo import HloValue, aval_type, elem_type
from .common import broadcast_shapes

_I64 = np.dtype(np.int64)


def _index_aval(k: Any) -> ShapedArray | None:
    """The aval of an index array (dynamic or constant), else None."""
    if isinstance(k, HloValue):
        return k.aval
    if isinstance(k, ShapedArray):
        return k
    if isinstance(k, np.ndarray):
        return ShapedArray(k.shape, k.dtype)
    if isinstance(k, list):
        if any(isinstance(e, (HloValue, ShapedArray)) for e in k):  # [i, 0] with i a run-time int
            ok = all(_is_index_scalar(e) for e in k)
            return ShapedArray((len(k),), _I64 if ok else np.dtype(object))
        a = np.asarray(k)
        return ShapedArray(a.shape, a.dtype if a.size else _I64)
    return None


def _is_index_scalar(e: Any) -> bool:
    if isinstance(e, (HloValue, ShapedArray)):
        a = e.aval if isinstance(e, HloValue) else e
        return a.ndim == 0 and a.dtype.kind in "iu"
    return isinstance(e, (int, np.integer)) and not isinstance(e, (bool, np.bool_))


def _dynamic_list(k: Any) -> bool:
    return isinstance(k, list) and any(isinstance(e, (HloValue, ShapedArray)) for e in k)


def is_advanced(key: Any) -> bool:
    """Does ``key`` index with an array (not a 0-d integer)?"""
    keys = key if isinstance(key, tuple) else (key,)
    for k in keys:
        a = _index_aval(k)
        if a is not None and (a.ndim > 0 or a.dtype == np.bool_):
            return True
    return False


def can_repeat(key: Any) -> bool:
    """Whether ``key`` may name one element twice: it holds an integer index array (not only
    integers, slices and boolean masks)."""
    keys = key if isinstance(key, tuple) else (key,)
    avals = [_index_aval(k) for k in keys]
    return any(a is not None and a.ndim > 0 and a.dtype != np.bool_ for a in avals)


@dataclass
class Plan:
    """One entry per input axis: ``("slice", original slice, (start, stop, step))`` or ``("index", k)``."""

    entries: list[tuple[str, Any, Any]]
    batch: tuple[int, ...]  # B, the broadcast shape of the index arrays
    adjacent: bool

    @property
    def axes(self) -> list[int]:
        return [a for a, e in enumerate(self.entries) if e[0] == "index"]

    def sliced_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(len(range(*e[2])) if e[0] == "slice" else d for e, d in zip(self.entries, shape))

    def out_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        rest = [len(range(*e[2])) for e in self.entries if e[0] == "slice"]
        if self.adjacent:
            p = self.axes[0]
            return tuple(rest[:p]) + self.batch + tuple(rest[p:])
        return self.batch + tuple(rest)

    def offset_dims(self) -> list[int]:
        """Output positions of the sliced (kept) axes."""
        n_rest, nb = len(self.entries) - len(self.axes), len(self.batch)
        if self.adjacent:
            p = self.axes[0]
            return [j if j < p else j + nb for j in range(n_rest)]
        return [nb + j for j in range(n_rest)]


def plan(shape: tuple[int, ...], key: Any) -> Plan:
    keys = key if isinstance(key, tuple) else (key,)
    hint = "index with integer arrays, integers, slices and ...; for None, add axes after indexing (np.expand_dims)"
    for k in keys:
        if k is None:
            raise ShapeError("new axes (None) mixed with integer-array indexing are not supported", hint=hint)
        a = _index_aval(k)
        if a is not None and a.dtype == np.bool_:
            raise ShapeError(f"indexing with a boolean mask ({a.str_short()}) gives a result whose shape depends "
                             "on the data, which compiled code cannot have",
                             hint="use np.where(mask, x, 0) (or np.sum(np.where(mask, x, 0))) instead")
        if a is not None and a.dtype.kind not in "iu":
            raise DTypeError(f"arrays used as indices must be of integer type, not {a.dtype}",
                             hint="convert them: idx.astype(np.int64)")
        if a is None and not (isinstance(k, (int, np.integer, slice)) or k is Ellipsis) or \
                isinstance(k, (bool, np.bool_)):
            raise ShapeError(f"unsupported index {k!r}: only integer arrays, integers, slices and ... are supported")
        if isinstance(k, slice) and not all(p is None or isinstance(p, (int, np.integer)) for p in
                                            (k.start, k.stop, k.step)):
            raise DTypeError(f"slice indices must be integers or None, got {k}")
        if isinstance(k, slice) and k.step == 0:
            raise ShapeError("slice step cannot be zero")
    if sum(1 for k in keys if k is Ellipsis) > 1:
        raise ShapeError("an index can only have a single ellipsis ('...')")
    used = sum(1 for k in keys if k is not Ellipsis)
    if used > len(shape):
        raise ShapeError(f"too many indices for array: array is {len(shape)}-dimensional, but {used} were indexed",
                         hint="index each dimension at most once (x.shape says how many it has)")
    full: list[Any] = []
    for k in keys:
        full += [slice(None)] * (len(shape) - used) if k is Ellipsis else [k]
    full += [slice(None)] * (len(shape) - len(full))
    entries: list[tuple[str, Any, Any]] = []
    shapes = []
    for axis, (k, d) in enumerate(zip(full, shape)):
        if isinstance(k, slice):
            entries.append(("slice", k, k.indices(d)))
            continue
        if isinstance(k, (int, np.integer)) and not -d <= int(k) < d:
            raise ShapeError(f"index {int(k)} is out of bounds for axis {axis} with size {d}",
                             hint=f"an index into a dimension of size {d} is {-d} to {d - 1}")
        if isinstance(k, (list, np.ndarray)) and not _dynamic_list(k):
            arr = np.asarray(k)
            if arr.size and (arr.min() < -d or arr.max() >= d):
                bad = int(arr.min()) if arr.min() < -d else int(arr.max())
                raise ShapeError(f"index {bad} is out of bounds for axis {axis} with size {d}",
                                 hint=f"an index into a dimension of size {d} is {-d} to {d - 1}")
        a = _index_aval(k)
        shapes.append(a.shape if a is not None else ())
        entries.append(("index", k, None))
    batch = broadcast_shapes(*shapes, what="index arrays")
    axes = [a for a, e in enumerate(entries) if e[0] == "index"]
    return Plan(entries, tuple(batch), axes == list(range(axes[0], axes[-1] + 1)))


def abstract(x: ShapedArray, key: Any) -> ShapedArray:
    return ShapedArray(plan(x.shape, key).out_shape(x.shape), x.dtype, weak_type=x.weak_type and x.ndim > 0)


def _sliced(b: Builder, x: HloValue, p: Plan) -> HloValue:
    """``x`` with the slices of the key applied (index axes kept whole)."""
    starts, limits, strides, rev = [], [], [], []
    for axis, (kind, _, v) in enumerate(p.entries):
        d = x.shape[axis]
        if kind == "index":
            starts.append(0)
            limits.append(d)
            strides.append(1)
            continue
        start, stop, step = v
        n = len(range(start, stop, step))
        if step < 0:
            rev.append(axis)
            start, step = d - 1 - start, -step
        starts.append(start)
        limits.append(start + max(n - 1, 0) * step + 1 if n else start)
        strides.append(step)
    return b.slice(b.reverse(x, rev), starts, limits, strides)


def _index_values(b: Builder, k: Any) -> HloValue:
    """An index entry of the key (a run-time integer or array, a list, a constant) as i64, as written."""
    if isinstance(k, HloValue):
        return b.convert(k, _I64)
    if _dynamic_list(k):
        return b.concatenate([b.reshape(b.convert(e, _I64) if isinstance(e, HloValue) else b.full(int(e), (), _I64),
                                        (1,)) for e in k], 0)
    arr = np.asarray(k, dtype=_I64)
    return b.constant(arr, ShapedArray(arr.shape, _I64))


def _indices(b: Builder, shape: tuple[int, ...], p: Plan, clip: bool = False) -> HloValue:
    """The start indices, ``B + (number of index axes,)``, negatives wrapped, as i64; ``clip``: clamped into range
    too (as a gather clamps them itself; a scatter skips an update out of range)."""
    parts = []
    for axis in p.axes:
        v = _index_values(b, p.entries[axis][1])
        d = b.full(shape[axis], (), _I64)
        v = b.select(b.compare("LT", v, b.full(0, v.shape, _I64)), b.binary("add", v, b.broadcast_to(d, v.shape)), v)
        if clip:
            v = b.clamp(b.full(0, v.shape, _I64), v, b.full(shape[axis] - 1, v.shape, _I64))
        parts.append(b.reshape(b.broadcast_to(v, p.batch), p.batch + (1,)))
    return b.concatenate(parts, len(p.batch))


def lower_gather(b: Builder, x: HloValue, key: Any, out: ShapedArray) -> HloValue:
    p = plan(x.shape, key)
    y = _sliced(b, x, p)
    idx = _indices(b, x.shape, p)
    axes = p.axes
    sizes = [1 if a in axes else d for a, d in enumerate(y.shape)]
    return b.emit(
        f'"stablehlo.gather"({y.name}, {idx.name}) {{dimension_numbers = #stablehlo.gather<'
        f"offset_dims = {p.offset_dims()}, collapsed_slice_dims = {axes}, start_index_map = {axes}, "
        f"index_vector_dim = {len(p.batch)}>, indices_are_sorted = false, "
        f"slice_sizes = array<i64: {', '.join(map(str, sizes))}>}} : "
        f"({aval_type(y.aval)}, {aval_type(idx.aval)}) -> {aval_type(out)}", out)


def lower_scatter(b: Builder, z: HloValue, key: Any, g: HloValue, add: bool, clip: bool = False) -> HloValue:
    """``z`` with ``g`` added at (``add``) or written to ``z[key]``; ``z`` already has the result dtype.

    Scatters into the sliced view's shape; the caller places that back when the key has slices.
    A write through indices that may repeat is NumPy's (the last write in the key's C order lands)
    on every device: XLA leaves the order of a scatter's updates to one element unspecified (the
    GPU's differ from run to run), so each update is first replaced by the value of the write
    that lands there (:func:`_landing_values`) and the scatter no longer depends on the order. ``clip``: an index
    out of range is clamped into it (a read's transpose), not skipped."""
    p = plan(z.shape, key)
    sub = p.out_shape(z.shape)
    g = b.broadcast_to(b.convert(g, z.dtype), sub)
    idx = _indices(b, z.shape, p, clip)
    if not add and _may_collide(z.shape, p):
        g = _landing_values(b, z.shape, key, idx, p, g)
    return _scatter(b, z, idx, g, p, "add" if add else "replace")


def lower_in_range(b: Builder, shape: tuple[int, ...], key: Any, out: ShapedArray) -> HloValue:
    """For ``z[key] += g`` into an array of ``shape``: whether each element of the selection is written, a boolean
    array shaped like it: False where an index array's entry (or an integer beside it) is out of range of its axis
    (``[-d, d)``), whose update the scatter skips (:func:`lower_scatter`); the same along the slices' axes."""
    p = plan(shape, key)
    ok = None
    for axis in p.axes:
        v = _index_values(b, p.entries[axis][1])
        d = shape[axis]
        inside = b.binary("and", b.compare("GE", v, b.full(-d, v.shape, _I64)),
                          b.compare("LT", v, b.full(d, v.shape, _I64)))
        inside = b.broadcast_to(inside, p.batch)
        ok = inside if ok is None else b.binary("and", ok, inside)
    assert ok is not None
    first = p.axes[0] if p.adjacent else 0
    return b.broadcast_in_dim(ok, out.shape, list(range(first, first + len(p.batch))))


def landed_ids(b: Builder, shape: tuple[int, ...], key: Any) -> HloValue:
    """For ``x[key] = v`` into an array of ``shape``: at each element of the selection, the C-order id of
    the write that lands where it writes (the last one there, as NumPy's); int32, shaped like the selection."""
    p = plan(shape, key)
    return _landed(b, shape, key, _indices(b, shape, p), p)


def _landed(b: Builder, shape: tuple[int, ...], key: Any, idx: HloValue, p: Plan) -> HloValue:
    i32 = np.dtype(np.int32)
    sub = p.out_shape(shape)
    ids = b.reshape(b.iota(ShapedArray((int(np.prod(sub)),), i32), 0), sub)
    last = _scatter(b, b.full(-1, shape, i32), idx, ids, p, "max")  # order-free: the largest id wins
    return lower_gather(b, last, key, ShapedArray(sub, i32))


def _landing_values(b: Builder, shape: tuple[int, ...], key: Any, idx: HloValue, p: Plan,
                    g: HloValue) -> HloValue:
    """``g`` (the selection's values) with each value replaced by that of the write landing at its element."""
    sub = g.shape
    size = int(np.prod(sub))
    flat = b.reshape(g, (size,))
    return lower_gather(b, flat, (_landed(b, shape, key, idx, p),), ShapedArray(sub, g.dtype))


def _may_collide(shape: tuple[int, ...], p: Plan) -> bool:
    """Whether two writes of the key may land on one element: a run-time index array, or constant
    index arrays that name an element twice (negatives wrapped)."""
    parts = []
    for axis in p.axes:
        k = p.entries[axis][1]
        if isinstance(k, (HloValue, ShapedArray)) or _dynamic_list(k):
            return True
        arr = np.asarray(k, dtype=_I64)
        parts.append(np.broadcast_to(np.where(arr < 0, arr + shape[axis], arr), p.batch).ravel())
    if not parts or not p.batch or int(np.prod(p.batch)) <= 1:
        return False
    return len(set(zip(*parts))) < len(parts[0])


def _scatter(b: Builder, z: HloValue, idx: HloValue, g: HloValue, p: Plan, combine: str) -> HloValue:
    """One ``stablehlo.scatter`` of ``g`` into ``z`` at the start indices ``idx``: ``combine`` is
    "replace", "add" (``or`` for booleans) or "max"."""
    axes = p.axes
    scalar = f"tensor<{elem_type(z.dtype)}>"
    old, new, res = b.fresh(), b.fresh(), b.fresh()
    body = new if combine == "replace" else res
    name = b.fresh()
    lines = [f'{b.indent}{name} = "stablehlo.scatter"({z.name}, {idx.name}, {g.name}) ({{',
             f"{b.indent}  ^bb0({old}: {scalar}, {new}: {scalar}):"]
    if combine != "replace":
        op = "maximum" if combine == "max" else "or" if z.dtype == np.bool_ else "add"
        lines.append(f"{b.indent}    {res} = stablehlo.{op} {old}, {new} : {scalar}")
    lines += [f"{b.indent}    stablehlo.return {body} : {scalar}",
              f"{b.indent}}}) {{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<"
              f"update_window_dims = {p.offset_dims()}, inserted_window_dims = {axes}, "
              f"scatter_dims_to_operand_dims = {axes}, index_vector_dim = {len(p.batch)}>, "
              f"unique_indices = false}} : ({aval_type(z.aval)}, {aval_type(idx.aval)}, {aval_type(g.aval)}) "
              f"-> {aval_type(z.aval)}"]
    b.lines += lines
    return HloValue(name, z.aval)


def basic_part(key: Any, shape: tuple[int, ...]) -> tuple[tuple[Any, ...], bool]:
    """The key with its index entries made whole slices, and whether that is all of ``x``."""
    p = plan(shape, key)
    basic = tuple(slice(None) if e[0] == "index" else e[1] for e in p.entries)
    whole = all(e[0] == "index" or e[2] == slice(None).indices(d) for e, d in zip(p.entries, shape))
    return basic, whole
