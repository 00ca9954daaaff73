"""Nested vmap over random ``in_axes``/``out_axes`` and ranks (issue #15), and the batched helpers' own rules.

A vmap of batched source calls the rank helpers of :mod:`srcjax.batched` (``batch_align``, ``batch_axes``,
``batch_axis``, ``batch_squeeze``: their leading forms ``batch_align_at``, ...; ``batch_size_of``) and a
Jacobian's reshapes again with one more batch axis in front
(``transforms/batch_leading.py``) instead of batching their bodies. Every program here is checked against a Python
loop over the examples running the user's function with NumPy and against ``jax.vmap``; the source of a vmap of a
vmap calls the helpers, with no batched copy of one (``batch_align_vmap``).

``SRCJAX_HYPOTHESIS=thorough`` draws more compositions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import srcjax

from . import written

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

BASE = (2, 3)  # an argument of rank r has the last r of these axes: ranks broadcast against each other
SIZES = (4, 5, 2)  # the batch of the innermost vmap, the next, the outermost


def dist(x, y):
    return np.sqrt(np.sum((x - y) ** 2))


def mixed(x, y):
    return np.tanh(x) * y - np.mean(x)


def row_sums(x, y):
    return np.sum(x * y, axis=-1) + np.max(y)


def products(x, y):
    return np.tanh(x @ y.T)


def jdist(x, y):
    return jnp.sqrt(jnp.sum((x - y) ** 2))


def jmixed(x, y):
    return jnp.tanh(x) * y - jnp.mean(x)


def jrow_sums(x, y):
    return jnp.sum(x * y, axis=-1) + jnp.max(y)


def jproducts(x, y):
    return jnp.tanh(x @ y.T)


PROGRAMS: dict[str, tuple[Callable[..., Any], Callable[..., Any], int, Callable[[int, int], int]]] = {
    # name: (program, jax twin, least rank of each argument, the result's rank from theirs)
    "dist": (dist, jdist, 0, lambda r, s: 0),
    "mixed": (mixed, jmixed, 0, max),
    "row_sums": (row_sums, jrow_sums, 0, lambda r, s: max(r, s) - 1),
    "products": (products, jproducts, 1, lambda r, s: r + s - 2),  # (batch_matmul: its operands' batch axes merged)
}


def loop_vmap(f: Callable[..., Any], in_axes: tuple[int | None, ...], out_axes: int) -> Callable[..., Any]:
    """vmap as a Python loop over the examples (NumPy running ``f``)."""
    def g(*args: Any) -> Any:
        n = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
        outs = [np.asarray(f(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)]))
                for i in range(n)]
        return np.stack(outs, axis=out_axes)
    return g


@st.composite
def nestings(draw: Any) -> tuple[str, tuple[int, int], list[tuple[tuple[int | None, int | None], int]]]:
    name = draw(st.sampled_from(sorted(PROGRAMS)))
    _, _, least, result_rank = PROGRAMS[name]
    ranks = (draw(st.integers(least, 2)), draw(st.integers(least, 2)))
    if name == "row_sums" and max(ranks) == 0:
        ranks = (1, ranks[1])
    depth = draw(st.integers(2, 3))
    levels = []
    cur = list(ranks)
    out_rank = result_rank(*ranks)
    for _ in range(depth):
        axes: list[int | None] = []
        for r in cur:
            axes.append(draw(st.one_of(st.none(), st.integers(-(r + 1), r))))
        if all(a is None for a in axes):
            k = draw(st.integers(0, 1))
            axes[k] = draw(st.integers(-(cur[k] + 1), cur[k]))
        out = draw(st.integers(-(out_rank + 1), out_rank))
        levels.append(((axes[0], axes[1]), out))
        cur = [r + (a is not None) for r, a in zip(cur, axes)]
        out_rank += 1
    return name, ranks, levels


def _arguments(ranks: tuple[int, int], levels: list[tuple[tuple[int | None, int | None], int]],
               rng: np.random.Generator) -> list[np.ndarray]:
    args = []
    for j, r in enumerate(ranks):
        shape = list(BASE[len(BASE) - r:])
        for (axes, _), n in zip(levels, SIZES):
            a = axes[j]
            if a is not None:
                shape.insert(a % (len(shape) + 1), n)
        args.append(rng.standard_normal(tuple(shape)))
    return args


def _nest(f: Callable[..., Any], vmap: Callable[..., Any],
          levels: list[tuple[tuple[int | None, int | None], int]]) -> Callable[..., Any]:
    for axes, out in levels:
        f = vmap(f, in_axes=axes, out_axes=out)
    return f


@written.examples(8, scale=12)
@given(nestings())
def test_nested_vmap_over_random_axes_and_ranks_matches_a_loop_and_jax(case: Any) -> None:
    name, ranks, levels = case
    f, jf, _, _ = PROGRAMS[name]
    args = _arguments(ranks, levels, np.random.default_rng(0))
    got = np.asarray(_nest(f, srcjax.vmap, levels)(*args))
    want = _nest(f, loop_vmap, levels)(*args)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, np.asarray(_nest(jf, jax.vmap, levels)(*args)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("in_axes", [((None, 0), (0, None)), ((0, 0), (0, 0)), ((0, None), (None, 0))])
def test_a_vmap_of_a_vmap_calls_the_rank_helpers_not_batched_copies_of_them(in_axes: Any) -> None:
    inner, outer = in_axes
    f = srcjax.vmap(srcjax.vmap(dist, in_axes=inner), in_axes=outer)
    x, y = _arguments((1, 1), [(inner, 0), (outer, 0)], np.random.default_rng(1))
    np.testing.assert_allclose(np.asarray(f(x, y)), loop_vmap(loop_vmap(dist, inner, 0), outer, 0)(x, y), rtol=1e-12)
    text = srcjax.source(f)
    assert re.findall(r"^def (\w+)", text, re.M) == ["dist_vmap_vmap"], text
    assert "batch_axes_at(pow_1, 1)" in text, text


def test_a_third_vmap_grows_the_leading_axes_again() -> None:
    f = dist
    for _ in range(3):
        f = srcjax.vmap(f, in_axes=(0, None))
    x, y = np.random.default_rng(2).standard_normal((2, 5, 4, 3)), np.random.default_rng(3).standard_normal(3)
    want = np.sqrt(np.sum((x - y) ** 2, axis=-1))
    np.testing.assert_allclose(np.asarray(f(x, y)), want, rtol=1e-12)
    text = srcjax.source(f)
    assert "batch_align_at(x, y, 2, 0)" in text and "batch_axes_at(pow_1, 2)" in text, text


def _loss(x):
    return np.sum(np.tanh(x) * x)


def _jloss(x):
    return jnp.sum(jnp.tanh(x) * x)


def _layer(x, w):
    return np.tanh(x @ w).sum(axis=0)


def _jlayer(x, w):
    return jnp.tanh(x @ w).sum(axis=0)


@pytest.mark.parametrize("which", ["vmap_vmap_grad", "vmap_jacfwd", "vmap_jacrev", "vmap_hessian", "vmap_vmap_jacrev"])
def test_vmap_of_derivatives_whose_programs_call_the_rank_helpers_match_jax(which: str) -> None:
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((5, 4, 3)), rng.standard_normal((3, 2))
    if which == "vmap_vmap_grad":
        got = srcjax.vmap(srcjax.vmap(srcjax.grad(_loss)))(x)
        want = jax.vmap(jax.vmap(jax.grad(_jloss)))(x)
    elif which == "vmap_hessian":
        got = srcjax.vmap(srcjax.hessian(_loss))(x[0])
        want = jax.vmap(jax.hessian(_jloss))(x[0])
    elif which == "vmap_vmap_jacrev":
        got = srcjax.vmap(srcjax.vmap(srcjax.jacrev(_loss)))(x)
        want = jax.vmap(jax.vmap(jax.jacrev(_jloss)))(x)
    else:
        sj, jj = (srcjax.jacfwd, jax.jacfwd) if which == "vmap_jacfwd" else (srcjax.jacrev, jax.jacrev)
        got = srcjax.vmap(sj(_layer), in_axes=(0, None))(x, w)
        want = jax.vmap(jj(_jlayer), in_axes=(0, None))(x, w)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)


def _pairwise_total(x, y):
    d = srcjax.vmap(srcjax.vmap(dist, in_axes=(None, 0)), in_axes=(0, None))(x, y)
    return np.sum(d * d)


def _jpairwise_total(x, y):
    d = jax.vmap(jax.vmap(jdist, in_axes=(None, 0)), in_axes=(0, None))(x, y)
    return jnp.sum(d * d)


@pytest.mark.parametrize("which", ["grad", "jacfwd", "jacrev"])
def test_derivatives_of_a_nested_vmap_through_the_helpers_with_leading_axes_match_jax(which: str) -> None:
    """The derivative of a program calling ``batch_align(y, x, 0, 1)``: its JVP is the helper again on the tangent,
    its transpose a reshape (the leads are indices)."""
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((3, 2)), rng.standard_normal((4, 2))
    got = getattr(srcjax, which)(_pairwise_total, argnums=1)(x, y)
    want = getattr(jax, which)(_jpairwise_total, argnums=1)(x, y)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)


def test_the_print_for_given_shapes_drops_the_aligns_with_leading_axes_that_change_nothing() -> None:
    f = srcjax.vmap(srcjax.vmap(dist))
    x, y = np.random.default_rng(6).standard_normal((2, 5, 4, 3))
    text = srcjax.source(f, x, y)
    assert "pow_1 = (x - y) ** 2" in text and "batch_align" not in text, text
    np.testing.assert_allclose(np.asarray(f(x, y)), np.sqrt(np.sum((x - y) ** 2, axis=-1)), rtol=1e-12)
