"""The jax twins of tests/unseen_programs.py and per-example loops (oracles of tests/test_vmap_unseen.py)."""

from __future__ import annotations

import pathlib
import types
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .twins import SRCJAX_AS_JAX

jax.config.update("jax_enable_x64", True)

_HERE = pathlib.Path(__file__).parent


def _strip_imports(text: str) -> str:
    keep = [ln for ln in text.splitlines()
            if not (ln.startswith("import numpy") or ln.startswith("import srcjax") or ln.startswith("from ."))]
    return "\n".join(keep)


def _load(name: str, ns: dict[str, Any]) -> dict[str, Any]:
    path = _HERE / name
    exec(compile(_strip_imports(path.read_text()), str(path), "exec"), ns)
    return ns


_H = types.SimpleNamespace(**{k: v for k, v in _load("unseen_helpers.py", {"np": jnp}).items() if callable(v)})
_SRCJAX = types.SimpleNamespace(**vars(SRCJAX_AS_JAX), jvp=jax.jvp, hessian=jax.hessian,
                                value_and_grad=jax.value_and_grad)
J = types.SimpleNamespace(**_load("unseen_programs.py", {"np": jnp, "srcjax": _SRCJAX, "H": _H,
                                                         "softplus": _H.softplus}))


def take(tree: Any, axes: Any, k: int) -> Any:
    """Example ``k`` of ``tree`` batched along ``axes`` (a pytree prefix of ints and Nones)."""
    if axes is None:
        return tree
    if isinstance(axes, int):
        return jax.tree_util.tree_map(lambda a: np.take(np.asarray(a), k, axis=axes), tree)
    if isinstance(axes, dict):
        return {key: take(tree[key], axes[key], k) for key in tree}
    if hasattr(axes, "_fields"):
        return type(tree)(*(take(getattr(tree, f), getattr(axes, f), k) for f in axes._fields))
    return type(tree)(take(t, a, k) for t, a in zip(tree, axes))


def stack(outs: list[Any], out_axes: Any = 0) -> Any:
    """Per-example results stacked along ``out_axes`` (a pytree prefix)."""
    if isinstance(out_axes, int):
        return jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs], axis=out_axes), *outs)
    if out_axes is None:
        return outs[0]
    if isinstance(out_axes, dict):
        return {key: stack([o[key] for o in outs], out_axes[key]) for key in outs[0]}
    return type(outs[0])(*(stack([o[i] for o in outs], a) for i, a in enumerate(out_axes))) \
        if hasattr(outs[0], "_fields") else type(outs[0])(stack([o[i] for o in outs], a)
                                                          for i, a in enumerate(out_axes))


def loop(fn: Any, args: tuple[Any, ...], in_axes: Any, n: int, out_axes: Any = 0) -> Any:
    """``fn`` called on each of ``n`` examples, results stacked along ``out_axes``."""
    axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
    return stack([fn(*(take(a, ax, k) for a, ax in zip(args, axes))) for k in range(n)], out_axes)


def agree(got: Any, want: Any, rtol: float = 1e-7, what: str = "") -> None:
    """Same pytree structure, shapes, and values (dtypes: float kind)."""
    gl, gt = jax.tree_util.tree_flatten(got, is_leaf=lambda v: v is None)
    wl, wt = jax.tree_util.tree_flatten(want, is_leaf=lambda v: v is None)
    assert len(gl) == len(wl), f"{what}: structure {gt} != {wt}"
    for i, (g, w) in enumerate(zip(gl, wl)):
        if w is None:
            assert g is None, f"{what}: leaf {i} is {g!r}, want None"
            continue
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{what}: leaf {i} shape {g.shape} != {w.shape}"
        assert g.dtype.kind == w.dtype.kind, f"{what}: leaf {i} dtype {g.dtype} != {w.dtype}"
        scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale, err_msg=f"{what} leaf {i}")
