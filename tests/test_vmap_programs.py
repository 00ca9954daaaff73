"""``srcjax.vmap`` of random programs, against the user's function called on each example by NumPy.

Two generators: the data programs of ``tests/written.py`` (``if``/``while`` on data, names rebound
from themselves, reductions, slices: under vmap an ``if`` on batched data selects per example and a
``while`` runs until every example is done) and the static programs of ``tests/test_properties.py``
(helpers, loops, slices, matmuls, stacks, two outputs). Each argument is mapped along a random axis
or not at all; the batched program runs compiled by XLA and as generated source by NumPy, and the
batched gradient (``vmap(grad(f))``) is checked against jax's gradient of each example, eagerly (so
Python control flow on data runs as it is). ``SRCJAX_HYPOTHESIS=thorough``: ten times the examples.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import Phase, given, note
from hypothesis import strategies as st

import srcjax
from tests.twins import JAX

from . import written
from .test_properties import load, module_dir, random_program  # noqa: F401  (module_dir: a fixture)

# no shrinking in CI (a failing example prints its program and in_axes as drawn)
_NO_SHRINK = {} if written.THOROUGH or written.EXAMPLES else {"phases": [Phase.explicit, Phase.reuse, Phase.generate]}


def _axes(draw: Any, shapes: list[tuple[int, ...]]) -> tuple[Any, ...]:
    """An in_axes entry per argument: None or an axis the batch can be put at (at least one mapped)."""
    axes = tuple(draw(st.sampled_from([None, *range(len(s) + 1)])) for s in shapes)
    if all(a is None for a in axes):
        axes = (0,) + axes[1:]
    return axes


def _batched_args(rng: np.random.Generator, shapes: list[tuple[int, ...]], axes: tuple[Any, ...],
                  n: int) -> tuple[tuple[np.ndarray, ...], list[tuple[np.ndarray, ...]]]:
    """The batched arguments, and the arguments of each example."""
    per = [[rng.standard_normal(s) for s in shapes] for _ in range(n)]
    shared = [rng.standard_normal(s) for s in shapes]
    batched = tuple(shared[i] if a is None else np.stack([per[k][i] for k in range(n)], axis=a)
                    for i, a in enumerate(axes))
    examples = [tuple(shared[i] if a is None else per[k][i] for i, a in enumerate(axes)) for k in range(n)]
    return batched, examples


def _drawn(data: Any, shapes: list[tuple[int, ...]], n: int, seed: int) -> tuple[Any, Any, Any]:
    """Random in_axes for arguments of ``shapes`` (noted), the batched arguments, each example's."""
    axes = _axes(data.draw, shapes)
    note(f"in_axes={axes}, batch {n}")
    return (axes, *_batched_args(np.random.default_rng(seed), shapes, axes, n))


def _copies(args: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    """Fresh copies of arguments (the programs update arrays in place: ``x -= ...``)."""
    return [np.array(a) for a in args]


def _stack(outs: list[Any]) -> Any:
    if isinstance(outs[0], (tuple, list)):
        return tuple(_stack([o[i] for o in outs]) for i in range(len(outs[0])))
    return np.stack([np.asarray(o) for o in outs])


def _finite(x: Any) -> bool:
    if isinstance(x, (tuple, list)):
        return all(_finite(v) for v in x)
    return bool(np.all(np.isfinite(np.asarray(x))))


def _check_vmap(f: Any, batched: tuple[np.ndarray, ...], examples: list[tuple[np.ndarray, ...]],
                axes: tuple[Any, ...], rtol: float) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = _stack([f(*_copies(ex)) for ex in examples])
    if not _finite(want):
        return  # an overflow per example: nothing to compare
    v = srcjax.vmap(f, in_axes=axes)
    written.compare("vmap, XLA", v(*batched), want, rtol=rtol)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        via_numpy = srcjax.numpy_function(v)(*batched)
    written.compare("vmap, generated source run by NumPy", via_numpy, want, rtol=rtol)


@written.examples(10, **_NO_SHRINK)
@given(prog=written.data_programs(), n=st.integers(1, 3), seed=st.integers(0, 2 ** 16), data=st.data())
def test_vmap_of_random_programs_with_control_flow_on_data(module_dir, prog, n, seed, data) -> None:  # noqa: F811
    text, shapes = prog
    note(text)
    f, _ = written.numpy_and_jax(module_dir, text, "vmap_data")
    shape_list = list(shapes.values())
    axes, batched, examples = _drawn(data, shape_list, n, seed)
    _check_vmap(f, batched, examples, axes, rtol=1e-9)


@written.examples(3, scale=20, **_NO_SHRINK)  # (thorough: 60, as before)
@given(prog=written.data_programs(max_steps=6), n=st.integers(1, 3), seed=st.integers(0, 2 ** 16),
       data=st.data())
def test_vmap_of_the_gradient_of_random_programs(module_dir, prog, n, seed, data) -> None:  # noqa: F811
    """``vmap(grad(f))``: per-example gradients through batched ``if``/``while`` on data."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    text, shapes = prog
    note(text)
    f, jf = written.numpy_and_jax(module_dir, text, "vmap_grad")
    shape_list = list(shapes.values())
    axes, batched, examples = _drawn(data, shape_list, n, seed)
    nums = tuple(range(len(shape_list)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if not all(np.isfinite(f(*_copies(ex))) for ex in examples):
            return
    jg = JAX.grad(jf, argnums=nums)
    want = _stack([tuple(np.asarray(g) for g in jg(*ex)) for ex in examples])
    got = srcjax.vmap(srcjax.grad(f, argnums=nums), in_axes=axes)(*batched)
    # an unmapped argument's gradient is still one per example (it depends on the mapped ones)
    written.compare("vmap(grad)", tuple(got), want, rtol=1e-8)


@written.examples(10, **_NO_SHRINK)
@given(prog=random_program(), n=st.integers(1, 3), seed=st.integers(0, 2 ** 16), data=st.data())
def test_vmap_of_random_static_programs(module_dir, prog, n, seed, data) -> None:  # noqa: F811
    text, sx, sy, sw = prog
    note(text)
    mod = load(module_dir, text)
    axes, batched, examples = _drawn(data, [sx, sy, sw], n, seed)
    _check_vmap(mod.prog, batched, examples, axes, rtol=1e-9)
