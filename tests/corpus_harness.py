"""What the program corpora's tests share (test_field_programs, test_jax_style_programs,
test_container_programs): a case's arguments, stacked for a vmap's batch, and one example taken back out."""

from __future__ import annotations

from typing import Any

import numpy as np

import srcjax

B = 3  # examples in a vmap's batch


def _stack(xs: Any, ax: int) -> Any:
    if isinstance(xs[0], (int, float)):
        return np.asarray(xs)
    return np.stack(xs, axis=ax)


def arguments(c: Any, seed: int, dt: Any, in_axes: Any) -> tuple[Any, ...]:
    """``c.args``'s arguments; with ``in_axes``, ``B`` draws stacked along each mapped argument's axis."""
    if in_axes is None:
        return c.args(np.random.default_rng(seed), dt)  # type: ignore[no-any-return]
    draws = [c.args(np.random.default_rng(seed + k), dt) for k in range(B)]
    return tuple(d if ax is None else srcjax.tree_util.tree_map(lambda *xs, ax=ax: _stack(xs, ax), *ds)
                 for ax, d, ds in zip(in_axes, draws[0], zip(*draws)))


def take(x: Any, ax: Any, k: int) -> Any:
    """Example ``k`` of ``x`` mapped along ``ax`` (``x`` itself where it is not mapped)."""
    return x if ax is None else srcjax.tree_util.tree_map(lambda a: np.take(np.asarray(a), k, axis=ax), x)
