"""Helpers shared by the primitive families: broadcasting, promotion, axes."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import DTypeError, ShapedArray, ShapeError, canonical_dtype


def fmt_shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def broadcast_shapes(*shapes: Sequence[int], what: str = "operands") -> tuple[int, ...]:
    """NumPy broadcasting; a ShapeError names every operand shape."""
    nd = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(nd):
        dims = {s[len(s) - nd + i] for s in shapes if len(s) - nd + i >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise ShapeError(
                f"{what} could not be broadcast together with shapes "
                + " and ".join(fmt_shape(s) for s in shapes),
                hint="align the trailing dimensions, or insert an axis with x[:, None] / np.expand_dims")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def weak_key(a: ShapedArray) -> Any:
    """What NumPy's dtype resolution takes for an operand: a dtype, or the
    Python type of a weak scalar (NEP 50). A Python bool is just the bool dtype:
    it is already the lowest kind (and ``ufunc.resolve_dtypes`` refuses ``bool``)."""
    if a.weak_type:
        return {"i": int, "u": int, "f": float, "c": complex}.get(a.dtype.kind, a.dtype)
    return a.dtype


def normalize_axis(axis: int, ndim: int, what: str = "axis") -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise DTypeError(f"{what} must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{what} {axis} is out of bounds for an array of dimension {ndim}",
                         hint=f"an array of {ndim} dimension{'s' * (ndim != 1)} has axes {-ndim} to {ndim - 1}" if ndim
                         else "a 0-d array has no axes: leave axis out")
    return int(axis) % ndim if ndim else 0


def normalize_axes(axis: Any, ndim: int, what: str = "axis") -> tuple[int, ...]:
    """``None`` -> all axes; int or tuple -> sorted, de-duplicated, non-negative."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = [normalize_axis(a, ndim, what) for a in axis]
        if len(set(axes)) != len(axes):
            raise ShapeError(f"repeated {what} in {tuple(axis)}")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim, what),)


def as_dtype(dtype: Any) -> np.dtype | None:
    if dtype is None:
        return None
    try:
        return canonical_dtype(dtype)
    except DTypeError:
        raise
    except TypeError as e:
        raise DTypeError(f"not a dtype: {dtype!r}", hint="spell a NumPy dtype: np.float32, 'float64', 'int32', "
                         "'complex64', bool") from e


def is_float_dtype(d: np.dtype) -> bool:
    return d.kind == "f" or d.name == "bfloat16"


def scalar_aval(value: Any) -> ShapedArray:
    """Abstract value of a static Python scalar used as an operand (weak)."""
    from ..core import PYTHON_SCALAR_DTYPES

    if isinstance(value, (bool, int, float, complex)):
        return ShapedArray((), PYTHON_SCALAR_DTYPES[type(value) if type(value) in PYTHON_SCALAR_DTYPES
                                                    else (bool if isinstance(value, bool) else
                                                          int if isinstance(value, int) else
                                                          float if isinstance(value, float) else complex)],
                           weak_type=True)
    arr = np.asarray(value)
    return ShapedArray(arr.shape, canonical_dtype(arr.dtype))


def static_dims(shape: Any, what: str) -> tuple[int, ...]:
    """NumPy's shape argument (an int or a sequence of ints) as a tuple; a bool is refused, as NumPy
    refuses it ("an integer is required"), though Python counts it an int."""
    items = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    try:
        if any(isinstance(d, (bool, np.bool_)) for d in items):
            raise TypeError
        return tuple(operator.index(d) for d in items)
    except TypeError:
        raise DTypeError(f"{what}: shape must be a static int or tuple of ints, got {shape!r}") from None
