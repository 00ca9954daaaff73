"""JAX's ``lax.reduce(operands, init_values, computation, dimensions)`` and ``lax.associative_scan(fn, elems,
reverse=False, axis=0)``, written in NumPy terms.

Transpiled like the user's own helpers (``frontend/resolve.LIBRARY_MODULES``; ``srcjax.source`` shows it
imported from ``srcjax.lax``). A monoid ``computation`` (``lax.add``/``mul``/``max``/``min``, which are
NumPy's ufuncs in ``srcjax.lax``) is NumPy's reduction of the
``dimensions`` combined with ``init_values`` (XLA's ``reduce``: differentiated and batched as ``np.sum``,
``np.max``, ...). Any other ``computation`` (a lambda, a user's two-argument function) is refused at the
call for now: a helper's derivative is written once for every ``computation`` it may be given.
``associative_scan`` is jax's recursive algorithm over slices (compiled, differentiated, batched; ``vmap``
of its derivative is refused for now: its recursion saves values batched at some depths only).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["associative_scan", "reduce"]


def reduce(operands: Any, init_values: Any, computation: Any, dimensions: Any) -> Any:  # noqa: A001 (jax's name)
    """``operands`` (one array) reduced over the axes ``dimensions`` by ``computation``, starting from
    ``init_values`` (a scalar), as ``jax.lax.reduce``."""
    ndim = np.ndim(operands)
    dims = tuple(sorted(d % ndim for d in dimensions))
    if computation is np.add:
        return init_values + np.sum(operands, axis=dims)
    if computation is np.multiply:
        return init_values * np.prod(operands, axis=dims)
    if computation is np.maximum:
        return np.maximum(init_values, np.max(operands, axis=dims))
    assert computation is np.minimum, ("srcjax.lax.reduce: the computation must be lax.add, lax.mul, lax.max or "
                                       "lax.min; hint: write the reduction with NumPy (np.sum, ...) or srcjax.lax.scan")
    return np.minimum(init_values, np.min(operands, axis=dims))


def associative_scan(fn: Any, elems: Any, reverse: bool = False, axis: int = 0) -> Any:
    """The inclusive scan of ``elems`` (one array) along ``axis`` with the associative ``fn`` (``fn(a, b)`` of
    two equally shaped slices), as ``jax.lax.associative_scan``: jax's algorithm (Blelloch's: ``fn`` on the
    pairs, the scan of those recursively, then the even positions), ``2 log2(n)`` calls of ``fn`` on slices."""
    assert not isinstance(elems, (tuple, list, dict)), ("srcjax.lax.associative_scan: elems is a container; hint: "
                                                       "scan one array (np.stack its arrays) for now")
    x = np.moveaxis(elems, axis, 0)
    if reverse:
        x = np.flip(x, axis=0)
    out = _associative(fn, x)
    if reverse:
        out = np.flip(out, axis=0)
    return np.moveaxis(out, 0, axis)


def _associative(fn: Any, x: Any) -> Any:
    n = np.shape(x)[0]
    if n < 2:
        return x
    odd = _associative(fn, fn(x[0:n - 1:2], x[1::2]))  # (the scan of the pairs: every odd position's)
    if n % 2 == 0:
        even = fn(odd[:-1], x[2::2])
    else:
        even = fn(odd, x[2::2])
    return _interleave(np.concatenate([x[0:1], even], axis=0), odd)


def _interleave(a: Any, b: Any) -> Any:
    """``a[0], b[0], a[1], b[1], ...`` along axis 0 (``a`` as long as ``b`` or one longer)."""
    n, m = np.shape(a)[0], np.shape(b)[0]
    pairs = np.reshape(np.stack([a[:m], b], axis=1), (2 * m,) + np.shape(a)[1:])
    if n == m:
        return pairs
    return np.concatenate([pairs, a[m:]], axis=0)
