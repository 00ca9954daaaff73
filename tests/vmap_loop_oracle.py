"""The loop oracle of vmap tests: a function run on each example (NumPy, or whatever the function is) and the
results stacked along ``out_axes``; and the comparison of two pytrees of arrays (structure, shapes, values and,
on request, dtypes). Shared by tests/test_vmap_audit.py and tests/test_vmap_hunt46.py."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")


def leaves(tree: Any) -> tuple[list[Any], Any]:
    return jax.tree_util.tree_flatten(tree, is_leaf=lambda v: v is None)


def agree(got: Any, want: Any, *, what: str, rtol: float = 1e-6, dtypes: bool = False) -> None:
    """Same pytree structure, shapes and values; with ``dtypes``, the same dtypes (the NumPy oracle's)."""
    gl, gt = leaves(got)
    wl, wt = leaves(want)
    assert len(gl) == len(wl), f"{what}: structure {gt} != {wt}"
    for i, (g, w) in enumerate(zip(gl, wl)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{what}: leaf {i} shape {g.shape} != {w.shape}"
        if dtypes:
            assert g.dtype == w.dtype, f"{what}: leaf {i} dtype {g.dtype} != {w.dtype}"
        if w.dtype == bool or g.dtype == bool:
            np.testing.assert_array_equal(g, w, err_msg=f"{what} leaf {i}")
            continue
        finite = np.abs(w[np.isfinite(w)]) if np.issubdtype(w.dtype, np.inexact) else np.abs(w)
        scale = max(1.0, float(np.max(finite, initial=0.0)))  # (an infinite leaf: atol inf compared nothing)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale, err_msg=f"{what} leaf {i}")


def take(tree: Any, axes: Any, k: int) -> Any:
    """Example ``k`` of ``tree`` batched along ``axes`` (a pytree prefix of ints and Nones)."""
    if axes is None:
        return tree
    if isinstance(axes, int):
        return jax.tree_util.tree_map(lambda a: np.take(np.asarray(a), k, axis=axes), tree)
    if isinstance(axes, dict):
        return {key: take(tree[key], axes[key], k) for key in tree}
    if dataclasses.is_dataclass(axes):
        return type(tree)(**{f.name: take(getattr(tree, f.name), getattr(axes, f.name), k)
                             for f in dataclasses.fields(axes)})
    if hasattr(axes, "_fields"):
        return type(tree)(*(take(getattr(tree, f), getattr(axes, f), k) for f in axes._fields))
    return type(tree)(take(t, a, k) for t, a in zip(tree, axes))


def stack(outs: list[Any], out_axes: Any) -> Any:
    if out_axes is None:
        return outs[0]
    if isinstance(out_axes, int):
        return jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs], axis=out_axes), *outs)
    if isinstance(out_axes, dict):
        return {key: stack([o[key] for o in outs], out_axes[key]) for key in outs[0]}
    parts = [stack([o[i] for o in outs], a) for i, a in enumerate(out_axes)]
    return type(outs[0])(*parts) if hasattr(outs[0], "_fields") else type(outs[0])(parts)


def loop(fn: Callable[..., Any], args: tuple[Any, ...], in_axes: Any, n: int, out_axes: Any = 0) -> Any:
    """``fn`` run on each of ``n`` examples (NumPy, or whatever ``fn`` is), stacked along ``out_axes``."""
    axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
    return stack([fn(*(take(a, ax, k) for a, ax in zip(args, axes))) for k in range(n)], out_axes)
