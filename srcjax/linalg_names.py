"""``np.linalg``'s array-API names (NumPy 2: ``cross``, ``diagonal``, ``matmul``, ``matrix_norm``,
``matrix_transpose``, ``outer``, ``svdvals``, ``tensordot``, ``trace``, ``vecdot``, ``vector_norm``) and
``np.linalg.tensorinv``/``tensorsolve``, written in NumPy terms over the functions srcjax has (like
:mod:`srcjax.numpy_extras`; :mod:`srcjax.composites` merges :data:`LINALG_IMPLEMENTS` into its table):
transpiled like the user's own helpers, differentiated and batched through the primitives they use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .core import ShapeError

__all__ = ["LINALG_IMPLEMENTS", "linalg_cross", "linalg_diagonal", "linalg_matmul", "linalg_matrix_norm",
           "linalg_matrix_transpose", "linalg_outer", "linalg_svdvals", "linalg_tensordot", "linalg_trace",
           "linalg_vecdot", "linalg_vector_norm", "tensorinv", "tensorsolve"]

LINALG_IMPLEMENTS: dict[Any, Callable[..., Any]] = {}


def _implements(target: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        LINALG_IMPLEMENTS[target] = fn
        return fn
    return register


@_implements(np.linalg.cross)
def linalg_cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """The cross product of 3-vectors along ``axis`` (the array API's: 2-vectors refused, as NumPy)."""
    if np.shape(x1)[axis] != 3 or np.shape(x2)[axis] != 3:
        raise ShapeError("np.linalg.cross: both inputs must be 3-vectors along the axis",
                         hint="np.cross takes 2-vectors too")
    return np.cross(x1, x2, axis=axis)


@_implements(np.linalg.diagonal)
def linalg_diagonal(x: Any, /, *, offset: int = 0) -> Any:
    return np.diagonal(x, offset, axis1=-2, axis2=-1)


@_implements(np.linalg.matmul)
def linalg_matmul(x1: Any, x2: Any, /) -> Any:
    return np.matmul(x1, x2)


@_implements(np.linalg.matrix_norm)
def linalg_matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:  # noqa: A002
    return np.linalg.norm(x, ord, axis=(-2, -1), keepdims=keepdims)


@_implements(np.linalg.matrix_transpose)
def linalg_matrix_transpose(x: Any, /) -> Any:
    if np.ndim(x) < 2:
        raise ShapeError(f"np.linalg.matrix_transpose needs an array of at least 2 dimensions, got {np.ndim(x)}",
                         hint="a 1-D array is its own transpose; np.reshape(x, (-1, 1)) makes a column")
    return np.swapaxes(x, -1, -2)


@_implements(np.linalg.outer)
def linalg_outer(x1: Any, x2: Any, /) -> Any:
    if np.ndim(x1) != 1 or np.ndim(x2) != 1:
        raise ShapeError("np.linalg.outer takes two 1-D arrays", hint="np.outer flattens its inputs first")
    return np.outer(x1, x2)


@_implements(np.linalg.svdvals)
def linalg_svdvals(x: Any, /) -> Any:
    return np.linalg.svd(x, compute_uv=False)


@_implements(np.linalg.tensordot)
def linalg_tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
    return np.tensordot(x1, x2, axes=axes)


@_implements(np.linalg.trace)
def linalg_trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    return np.trace(x, offset, axis1=-2, axis2=-1, dtype=dtype)


@_implements(np.linalg.vecdot)
def linalg_vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    return np.sum(np.conjugate(x1) * x2, axis=axis)


@_implements(np.linalg.vector_norm)
def linalg_vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:  # noqa: A002
    """The vector ``ord``-norm over ``axis`` (None: every axis; a tuple: those axes taken as one vector)."""
    nd = np.ndim(x)
    axes = tuple(range(nd)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    axes = tuple(sorted(a % nd for a in axes))
    rest = tuple(d for d in range(nd) if d not in axes)
    v = np.transpose(x, rest + axes)
    v = np.reshape(v, tuple(np.shape(x)[d] for d in rest) + (-1,))
    r = np.linalg.norm(v, ord, axis=-1)
    if keepdims:
        r = np.reshape(r, tuple(1 if d in axes else np.shape(x)[d] for d in range(nd)))
    return r


@_implements(np.linalg.tensorinv)
def tensorinv(a: Any, ind: int = 2) -> Any:
    """The inverse of ``a`` read as a matrix (its first ``ind`` axes the rows), shaped back as NumPy's:
    ``a.shape[ind:] + a.shape[:ind]``."""
    shape = np.shape(a)
    rows = 1
    for k in shape[:ind]:
        rows *= k
    inv = np.linalg.inv(np.reshape(a, (rows, -1)))
    return np.reshape(inv, tuple(shape[ind:]) + tuple(shape[:ind]))


@_implements(np.linalg.tensorsolve)
def tensorsolve(a: Any, b: Any, axes: Any = None) -> Any:
    """The ``x`` with ``np.tensordot(a, x, x.ndim) == b``: ``a`` read as a square matrix (``axes`` of ``a``
    moved to the end first), as NumPy's."""
    an = np.ndim(a)
    if axes is not None:
        rest = tuple(d for d in range(an) if d not in tuple(k % an for k in axes))
        a = np.transpose(a, rest + tuple(k % an for k in axes))
    shape = np.shape(a)[an - (an - np.ndim(b)):]
    n = 1
    for k in shape:
        n *= k
    if n * n != np.size(a):
        raise ShapeError(f"np.linalg.tensorsolve: a of shape {np.shape(a)} is not square as a matrix of {n} columns",
                         hint="the product of b's axes must equal the product of a's remaining axes")
    return np.reshape(np.linalg.solve(np.reshape(a, (n, n)), np.ravel(b)), shape)
