"""NumPy's polynomial helpers (``np.vander``, ``np.polyder``, ``np.polyint``, ``np.polymul``,
``np.polyadd``, ``np.polysub``, ``np.polydiv``, ``np.roots``), written in NumPy terms like
:mod:`srcjax.composites` (which merges :data:`POLY_IMPLEMENTS` into its table): transpiled like the
user's own helpers, differentiated and batched through the primitives they use. Coefficients are
highest power first, as NumPy's ``poly*`` functions take them; their numbers are static (shapes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .core import ShapeError

__all__ = ["POLY_IMPLEMENTS", "polyadd", "polyder", "polydiv", "polyint", "polymul", "polysub", "roots", "vander"]

POLY_IMPLEMENTS: dict[Any, Callable[..., Any]] = {}


def _implements(target: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        POLY_IMPLEMENTS[target] = fn
        return fn
    return register


@_implements(np.vander)
def vander(x: Any, N: Any = None, increasing: bool = False) -> Any:
    """The Vandermonde matrix of a 1-D ``x``: columns ``x ** (N - 1) .. x ** 0`` (``increasing``: the
    other way), built by repeated products, so its derivative at ``x == 0`` is finite (``x ** 0``'s is 0)."""
    n = np.shape(x)[0] if N is None else N
    cols = [np.ones_like(x)]
    for _ in range(1, n):
        cols.append(cols[-1] * x)
    if not increasing:
        cols = cols[::-1]
    if n == 0:
        return np.zeros((np.shape(x)[0], 0), dtype=np.result_type(x))
    return np.stack(cols, axis=-1)


@_implements(np.polyder)
def polyder(p: Any, m: int = 1) -> Any:
    """The ``m``-th derivative's coefficients: each coefficient times its power, the constant dropped."""
    out = p
    for _ in range(m):
        n = np.shape(out)[0] - 1
        out = out[:-1] * np.arange(n, 0, -1)  # (empty past the constant, as NumPy's)
    return out


@_implements(np.polyint)
def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    """The ``m``-th antiderivative's coefficients, integration constants ``k`` (default 0)."""
    ks = [0.0] * m if k is None else (list(k) if isinstance(k, (list, tuple)) else [k] * m)
    out = p * 1.0
    for j in range(m):
        n = np.shape(out)[0]
        out = np.concatenate([out / np.arange(n, 0, -1), np.zeros((1,), dtype=np.result_type(out)) + ks[j]])
    return out


@_implements(np.polymul)
def polymul(a1: Any, a2: Any) -> Any:
    """The product's coefficients: the full convolution of the two coefficient vectors (leading zeros
    are kept, as ``jnp.polymul``'s default: NumPy trims them, a size that depends on the data)."""
    return np.convolve(a1, a2)


def _aligned(a1: Any, a2: Any) -> tuple[Any, Any]:
    """Both coefficient vectors padded at the front (the high powers) to the longer one's length."""
    n1, n2 = np.shape(a1)[0], np.shape(a2)[0]
    if n1 < n2:
        a1 = np.concatenate([np.zeros((n2 - n1,), dtype=np.result_type(a1)), a1])
    elif n2 < n1:
        a2 = np.concatenate([np.zeros((n1 - n2,), dtype=np.result_type(a2)), a2])
    return a1, a2


@_implements(np.polyadd)
def polyadd(a1: Any, a2: Any) -> Any:
    a, b = _aligned(a1, a2)
    return a + b


@_implements(np.polysub)
def polysub(a1: Any, a2: Any) -> Any:
    a, b = _aligned(a1, a2)
    return a - b


@_implements(np.polydiv)
def polydiv(u: Any, v: Any) -> Any:
    """The quotient and remainder of ``u / v`` (coefficients, highest power first): long division, each step
    taking out the leading coefficient. The remainder has ``len(v) - 1`` coefficients (``u`` itself when it is
    the shorter), its leading zeros kept: NumPy trims them, a size that depends on the data (so does
    ``jnp.polydiv``'s ``trim_leading_zeros=True``); the length is NumPy's wherever the remainder's leading
    coefficient is not zero."""
    if np.ndim(u) > 1 or np.ndim(v) > 1:
        raise ShapeError("np.polydiv takes 1-D coefficient arrays (highest power first)",
                         hint="divide one polynomial at a time, or vmap over the rows")
    dt = np.result_type(u, v, 1.0)
    num = np.atleast_1d(np.asarray(u).astype(dt))
    den = np.atleast_1d(np.asarray(v).astype(dt))
    m, n = np.shape(num)[0] - 1, np.shape(den)[0] - 1
    if m < n:
        return np.zeros((1,), dtype=dt), num
    scale = 1.0 / den[0]
    r = num
    qs = []
    for k in range(m - n + 1):
        d = scale * r[k]
        qs.append(d)
        r = np.concatenate((r[:k], np.zeros((1,), dtype=dt), r[k + 1:k + n + 1] - d * den[1:], r[k + n + 1:]))
    return np.stack(qs), r[min(m - n + 1, m):]


@_implements(np.roots)
def roots(p: Any) -> Any:
    """The roots of the polynomial with coefficients ``p`` (highest power first): the eigenvalues of its
    companion matrix, complex. ``len(p) - 1`` of them: a leading zero coefficient gives NaN roots where NumPy
    drops it (a size that depends on the data; ``jnp.roots(p, strip_zeros=False)``, which jit needs, does
    the same); a trailing zero gives a zero root, as NumPy's."""
    if np.ndim(p) != 1:
        raise ShapeError("np.roots takes a 1-D array of coefficients (highest power first)",
                         hint="find the roots of one polynomial at a time, or vmap over the rows")
    c = np.asarray(p) * 1.0
    n = np.shape(c)[0]
    if n < 2:
        return np.zeros((0,), dtype=np.result_type(c, 1j))
    top = np.reshape(-c[1:] / c[0], (1, n - 1))
    companion = np.concatenate((top, np.eye(n - 2, n - 1, dtype=c.dtype)), axis=0)
    return np.linalg.eigvals(companion).astype(np.result_type(c, 1j))
