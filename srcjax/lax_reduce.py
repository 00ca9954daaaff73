"""JAX's ``lax.reduce(operands, init_values, computation, dimensions)`` and ``lax.associative_scan(fn, elems,
reverse=False, axis=0)``, written in NumPy terms.

Transpiled like the user's own helpers (``frontend/resolve.LIBRARY_MODULES``; ``srcjax.source`` shows it
imported from ``srcjax.lax``). A monoid ``computation`` (``lax.add``/``mul``/``max``/``min``, which are
NumPy's ufuncs in ``srcjax.lax``) is NumPy's reduction of the
``dimensions`` combined with ``init_values`` (XLA's ``reduce``: differentiated and batched as ``np.sum``,
``np.max``, ...). Any other ``computation`` (a lambda, a user's two-argument function) is refused at the
call for now: a helper's derivative is written once for every ``computation`` it may be given.
``associative_scan`` is jax's algorithm over slices (Blelloch's), written as loops over its levels (compiled,
differentiated, batched, and ``vmap`` of its derivative).
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
    """jax's recursion written as two loops (a recursion's derivative tape held values batched at some depths and
    not at others, which ``vmap`` of the derivative refused): up, ``fn`` on the pairs of each level until one
    element is left; down, each level's even positions from the scan of its pairs, interleaved with them. The same
    calls of ``fn`` on the same slices as jax's (so the same rounding)."""
    levels = []
    for _ in range(np.shape(x)[0].bit_length() - 1):  # (n, n // 2, ... down to 1 element; none for n < 2)
        n = np.shape(x)[0]
        levels.append(x)
        x = fn(x[0:n - 1:2], x[1::2])
    out = x  # (the scan of the pairs: every odd position's)
    for k in range(len(levels) - 1, -1, -1):  # (a loop by index: vmap batches no reversed() of a list)
        level = levels[k]
        n = np.shape(level)[0]
        even = fn(out[:(n - 1) // 2], level[2::2])  # (n even: out[:-1]; n odd: all of out)
        out = _interleave(np.concatenate([level[0:1], even], axis=0), out)
    return out


def _interleave(a: Any, b: Any) -> Any:
    """``a[0], b[0], a[1], b[1], ...`` along axis 0 (``a`` as long as ``b`` or one longer: its last then)."""
    m = np.shape(b)[0]
    pairs = np.reshape(np.stack([a[:m], b], axis=1), (2 * m,) + np.shape(a)[1:])
    return np.concatenate([pairs, a[m:]], axis=0)
