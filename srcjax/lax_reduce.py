"""JAX's ``lax.reduce(operands, init_values, computation, dimensions)``, written in NumPy terms.

Transpiled like the user's own helpers (``frontend/resolve.LIBRARY_MODULES``; ``srcjax.source`` shows it
imported from ``srcjax.lax``). A monoid ``computation`` (``lax.add``/``mul``/``max``/``min``, which are
NumPy's ufuncs in ``srcjax.lax``) is NumPy's reduction of the
``dimensions`` combined with ``init_values`` (XLA's ``reduce``: differentiated and batched as ``np.sum``,
``np.max``, ...). Any other ``computation`` (a lambda, a user's two-argument function) is refused at the
call for now: a helper's derivative is written once for every ``computation`` it may be given.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["reduce"]


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
