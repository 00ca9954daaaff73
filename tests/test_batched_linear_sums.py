"""The per-example sums and broadcasts of batched source as linear helpers (srcjax/batch_sums.py, core.linear_params).

Every batched derivative calls ``batch_unbroadcast``, ``batch_broadcast_like``, ``batch_expand_reduced``,
``batch_align(_b)``, and a vmap of batched source ``batch_merge``/``batch_split``. Their derivatives were written
from their bodies, every branch on their flags carried along, once per derivative level and per call site:
``jvp(vjp(hessian(f)))`` of a two-step loop was 22,393 generated lines, 9,000 of them ``batch_unbroadcast``'s. They
are linear: the JVP is the helper on the tangent, the cotangent a ``_bar`` helper from a rule
(transforms/linear_calls.py) whose own transpose is the helper again. Checked here: each pair's inner-product
identity <h(g), c> = <g, h_bar(c)> under NumPy for every flag, and derivatives through them against jax.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import srcjax
from srcjax.adjoint import (
    jacfwd_blocks,
    jacfwd_blocks_bar,
    jacobian_rows,
    jacrev_blocks,
    jacrev_blocks_bar,
    reshape_like,
)
from srcjax.batched import (
    batch_broadcast_like,
    batch_broadcast_like_bar,
    batch_expand_reduced,
    batch_expand_reduced_bar,
    batch_merge,
    batch_merge_bar,
    batch_unbroadcast,
    batch_unbroadcast_bar,
)
from srcjax.tree_util import tree_leaves

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

_R = np.random.default_rng(0)
N = 4


def _dot(a: Any, b: Any) -> float:
    return float(np.sum(np.asarray(a) * np.asarray(b)))


def _adjoint(h: Callable[[Any], Any], h_bar: Callable[[Any], Any], g: np.ndarray) -> None:
    """<h(g), c> == <g, h_bar(c)> for a random c shaped like h(g), and h_bar(c) shaped like g."""
    out = np.asarray(h(g))
    c = _R.standard_normal(out.shape)
    back = np.asarray(h_bar(c))
    assert back.shape == np.shape(g)
    np.testing.assert_allclose(_dot(out, c), _dot(g, back), rtol=1e-12)


# (g's per-example shape, x's per-example shape): g broadcast from x, x's shape what g is summed to
_SUMS = [((3,), (3,)), ((2, 3), (3,)), ((2, 3), (1, 3)), ((2, 3), (2, 1)), ((2, 3), ()), ((3,), (1,))]


@pytest.mark.parametrize("gs,xs", _SUMS)
@pytest.mark.parametrize("bg,bx", [(True, True), (True, False), (False, True)])
def test_unbroadcast_and_its_bar_are_each_others_transposes(gs: tuple[int, ...], xs: tuple[int, ...], bg: bool,
                                                            bx: bool) -> None:
    g = _R.standard_normal(((N,) if bg else ()) + gs)
    x = _R.standard_normal(((N,) if bx else ()) + xs)
    _adjoint(lambda v: batch_unbroadcast(v, x, bg, bx), lambda c: batch_unbroadcast_bar(c, g, bg), g)
    c = _R.standard_normal((N,) + xs)  # (the bar's transpose: batch_unbroadcast again, the bar's `c` its shape)
    _adjoint(lambda v: batch_unbroadcast_bar(v, g, bg), lambda b: batch_unbroadcast(b, v_ref(c), bg, True), c)


def v_ref(c: np.ndarray) -> np.ndarray:
    return np.zeros_like(c)


@pytest.mark.parametrize("ts,ys", [(xs, gs) for gs, xs in _SUMS])
@pytest.mark.parametrize("bt,by", [(True, True), (True, False), (False, True)])
def test_broadcast_like_and_its_bar_are_each_others_transposes(ts: tuple[int, ...], ys: tuple[int, ...], bt: bool,
                                                               by: bool) -> None:
    t = _R.standard_normal(((N,) if bt else ()) + ts)
    y = _R.standard_normal(((N,) if by else ()) + ys)
    _adjoint(lambda v: batch_broadcast_like(v, y, bt, by), lambda c: batch_broadcast_like_bar(c, t, bt), t)
    c = _R.standard_normal((N,) + ys)
    _adjoint(lambda v: batch_broadcast_like_bar(v, t, bt), lambda b: batch_broadcast_like(b, v_ref(c), bt, True), c)


@pytest.mark.parametrize("axis,keepdims", [(None, False), (None, True), (0, False), (1, True), (-1, False),
                                           ((0, 1), False)])
@pytest.mark.parametrize("bg,ba", [(True, True), (True, False), (False, True)])
def test_expand_reduced_and_its_bar_are_each_others_transposes(axis: Any, keepdims: bool, bg: bool,
                                                               ba: bool) -> None:
    a = _R.standard_normal(((N,) if ba else ()) + (2, 3))
    gs = np.shape(np.sum(np.zeros((2, 3)), axis=axis, keepdims=keepdims))
    g = _R.standard_normal(((N,) if bg else ()) + gs)
    _adjoint(lambda v: batch_expand_reduced(v, a, axis, keepdims, bg, ba),
             lambda c: batch_expand_reduced_bar(c, g, axis, keepdims, bg), g)
    c = _R.standard_normal((N, 2, 3))
    _adjoint(lambda v: batch_expand_reduced_bar(v, g, axis, keepdims, bg),
             lambda b: batch_expand_reduced(b, v_ref(c), axis, keepdims, bg, True), c)


@pytest.mark.parametrize("ob,ib", [(True, True), (True, False), (False, True)])
def test_merge_and_its_bar_are_each_others_transposes(ob: bool, ib: bool) -> None:
    outer, inner = 2, 3
    v = _R.standard_normal(((outer,) if ob else ()) + ((inner,) if ib else ()) + (5,))
    _adjoint(lambda u: batch_merge(u, ob, ib, outer, inner), lambda c: batch_merge_bar(c, v, ob, ib, outer, inner), v)
    tree = {"a": v, "b": (v * 2.0,)}  # (a container: item by item)
    c = batch_merge(tree, ob, ib, outer, inner)
    back = batch_merge_bar(c, tree, ob, ib, outer, inner)
    np.testing.assert_allclose(back["b"][0], batch_merge_bar(c["b"][0], v, ob, ib, outer, inner))


def _squash(x: Any) -> Any:
    s = x * 0.5
    for _ in range(2):
        s = np.tanh(s) * 0.3
    return np.sum(s * s)


def _broadcasting(x: Any, w: Any) -> Any:  # (sums to a shape with length-1 axes, a keepdims mean, a scalar)
    y = np.tanh(x[:, None] * w) + np.mean(x * w[:, 0], keepdims=True)
    return np.sum(y * y) + np.sum(w * 0.5) * np.sum(x)


def _jvp_of_hessian(f: Any) -> Any:
    h = srcjax.hessian(f)
    return lambda x, w: srcjax.jvp(lambda v: h(v, w), (x,), (np.ones_like(x),))[1]


@pytest.mark.parametrize("order", ["hessian", "jacrev(hessian)", "jvp(hessian)"])
def test_higher_derivatives_through_the_helpers_agree_with_jax(order: str) -> None:
    """Each order writes batch_unbroadcast/broadcast_like/expand_reduced (the hessian's jacfwd vmaps a VJP), the two
    last ones through them again (jacrev: a vmap of their cotangents, merged with the hessian's batch axis)."""
    x, w = np.array([0.3, -0.2, 0.5]), np.array([[0.7, 0.2], [0.1, -0.5], [-0.4, 0.3]])
    ours = {"hessian": srcjax.hessian(_broadcasting), "jacrev(hessian)": srcjax.jacrev(srcjax.hessian(_broadcasting)),
            "jvp(hessian)": _jvp_of_hessian(_broadcasting)}[order]
    twin = _jax_twin()
    jh = jax.hessian(twin)
    want = {"hessian": jh, "jacrev(hessian)": jax.jacrev(jh),
            "jvp(hessian)": lambda v, u: jax.jvp(lambda s: jh(s, u), (v,), (jnp.ones(3),))[1]}[order](x, w)
    np.testing.assert_allclose(np.asarray(ours(x, w)), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(ours)(x, w)), want, rtol=1e-10, atol=1e-12)


def _jax_twin() -> Any:
    def f(x: Any, w: Any) -> Any:
        y = jnp.tanh(x[:, None] * w) + jnp.mean(x * w[:, 0], keepdims=True)
        return jnp.sum(y * y) + jnp.sum(w * 0.5) * jnp.sum(x)
    return f


def test_no_derivative_of_the_helpers_bodies_is_written() -> None:
    """jvp(vjp(hessian(f))) of a loop: the helpers are called, never differentiated (was 22,393 lines, with
    ``batch_unbroadcast_jvp_vmap_fwd`` and a byte-identical ``batch_unbroadcast_jvp_vmap_fwd_1``, 1,024 lines each)."""
    def pulled(x: Any) -> Any:
        out, back = srcjax.vjp(srcjax.hessian(_squash), x)
        return back(np.ones_like(out))[0]

    text = srcjax.source(srcjax.jit(lambda x: srcjax.jvp(pulled, (x,), (np.ones_like(x),))[1]))
    for helper in ("batch_unbroadcast", "batch_broadcast_like", "batch_expand_reduced", "batch_align", "batch_merge",
                   "batch_split", "batch_broadcast", "batch_size_of", "leaf_bases"):
        assert f"def {helper}_" not in text, helper
    for helper in ("jacfwd_blocks", "jacrev_blocks", "jacobian_rows", "batch_getitem"):  # (linear in forward mode;
        assert f"def {helper}_jvp" not in text, helper  # reverse mode's cotangents from rules: no halves)
        assert f"def {helper}_fwd" not in text and f"def {helper}_bwd" not in text, helper
    # (the Jacobian's container branch, dead for an array, took a second copy of every derivative of its JVP)
    # (one copy, whatever its name: a backward half written for its call's zero cotangents is named `_fwd_1`)
    assert not ("def _squash_grad_jvp_vmap_fwd(" in text and "def _squash_grad_jvp_vmap_fwd_1(" in text)
    assert len(re.findall(r"def _squash_grad_jvp_vmap_fwd(_\d+)?\(", text)) == 1
    assert text.count("\n") < 3400  # (3,204; 3,948 before the Jacobian helpers' rules, 22,393 before big23)


def _of_a_dict(p: Any) -> Any:
    return np.sum(np.tanh(p["w"] * p["b"][0]) ** 2) + np.sum(p["b"] * p["w"][:2])


def _of_a_dict_twin(p: Any) -> Any:
    return jnp.sum(jnp.tanh(p["w"] * p["b"][0]) ** 2) + jnp.sum(p["b"] * p["w"][:2])


@pytest.mark.parametrize("kind", ["jacfwd", "jacrev"])
def test_derivatives_of_a_jacobian_by_a_container_agree_with_jax(kind: str) -> None:
    """The container branch of a Jacobian's source (``leaf_bases``, ``jacfwd_blocks``/``jacrev_blocks``) under
    reverse and forward mode: the bases constants, the blocks linear in the tangents."""
    p = {"w": np.array([0.3, -0.2, 0.5]), "b": np.array([0.7, -0.4])}
    ours_j, jax_j = getattr(srcjax, kind)(srcjax.grad(_of_a_dict)), getattr(jax, kind)(jax.grad(_of_a_dict_twin))

    def pulled(q: Any) -> Any:  # (a vjp of the Jacobian, its blocks weighted)
        out, back = srcjax.vjp(ours_j, q)
        return back({k: {j: np.ones_like(v) * 0.5 for j, v in out[k].items()} for k in out})[0]

    def pulled_jax(q: Any) -> Any:
        out, back = jax.vjp(jax_j, q)
        return back({k: {j: jnp.ones_like(v) * 0.5 for j, v in out[k].items()} for k in out})[0]

    got, want = pulled(p), jax.jit(pulled_jax)(p)
    for k in p:
        np.testing.assert_allclose(np.asarray(got[k]), want[k], rtol=1e-10, atol=1e-12)
    t = {"w": np.ones(3), "b": np.array([0.5, -1.0])}
    got_t = srcjax.jvp(ours_j, (p,), (t,))[1]
    want_t = jax.jvp(jax_j, (p,), (t,))[1]
    for k in p:
        for j in p:
            np.testing.assert_allclose(np.asarray(got_t[k][j]), want_t[k][j], rtol=1e-10, atol=1e-12)


def _tree_dot(a: Any, b: Any) -> float:
    return sum(_dot(u, v) for u, v in zip(tree_leaves(a), tree_leaves(b)))


def test_the_jacobians_reshapes_and_their_bars_are_each_others_transposes() -> None:
    """reshape_like, jacrev_blocks_bar and jacfwd_blocks_bar (reverse mode's rules for jacobian_rows, jacrev_blocks
    and jacfwd_blocks: transforms/linear_calls.py) by the inner-product identity, for arrays and containers."""
    out = {"p": np.zeros((2,)), "q": (np.zeros((3, 2)),)}  # (the output: a container of two leaves)
    x = {"a": np.zeros(3), "b": np.zeros((2, 2))}  # (the argument: a container of two leaves)
    bars = [{"a": _R.standard_normal((2, 3)), "b": _R.standard_normal((2, 2, 2))},
            {"a": _R.standard_normal((6, 3)), "b": _R.standard_normal((6, 2, 2))}]
    for b, o in zip(bars, [out["p"], out["q"][0]]):
        c = _R.standard_normal((*o.shape, 3)), _R.standard_normal((*o.shape, 2, 2))
        c_tree = {"a": c[0], "b": c[1]}
        assert np.isclose(_tree_dot(jacobian_rows(b, o), c_tree), _tree_dot(b, reshape_like(c_tree, b)), rtol=1e-12)
    _adjoint(lambda g: jacobian_rows(g, np.zeros((2, 3))), lambda c: reshape_like(c, np.zeros((6, 4))),
             _R.standard_normal((6, 4)))
    c = jacrev_blocks(bars, out)
    c = {"p": {k: _R.standard_normal(np.shape(v)) for k, v in c["p"].items()},
         "q": ({k: _R.standard_normal(np.shape(v)) for k, v in c["q"][0].items()},)}
    assert np.isclose(_tree_dot(jacrev_blocks(bars, out), c), _tree_dot(bars, jacrev_blocks_bar(c, bars, out)),
                      rtol=1e-12)
    ts = [{"p": _R.standard_normal((3, 2)), "q": (_R.standard_normal((3, 3, 2)),)},  # (per leaf of x: the tangents
          {"p": _R.standard_normal((4, 2)), "q": (_R.standard_normal((4, 3, 2)),)}]  # of out, the basis axis first)
    blocks = jacfwd_blocks(ts, out, x)
    c = {"p": {k: _R.standard_normal(np.shape(v)) for k, v in blocks["p"].items()},
         "q": ({k: _R.standard_normal(np.shape(v)) for k, v in blocks["q"][0].items()},)}
    back = jacfwd_blocks_bar(c, ts, out, x)
    assert [np.shape(v) for t in back for v in (t["p"], t["q"][0])] == [np.shape(v) for t in ts
                                                                          for v in (t["p"], t["q"][0])]
    assert np.isclose(_tree_dot(blocks, c), _tree_dot(ts, back), rtol=1e-12)
    t1 = _R.standard_normal((6, 2, 3))  # (arrays: one leaf each side)
    _adjoint(lambda t: jacfwd_blocks([t], np.zeros((2, 3)), np.zeros((3, 2))),
             lambda c: jacfwd_blocks_bar(c, [t1], np.zeros((2, 3)), np.zeros((3, 2)))[0], t1)


def _two_outputs(x: Any) -> Any:
    return {"s": np.sum(np.tanh(x[1:] * x[:-1])), "v": (np.sin(x[:2]) * x[-1],)}


def _two_outputs_twin(x: Any) -> Any:
    return {"s": jnp.sum(jnp.tanh(x[1:] * x[:-1])), "v": (jnp.sin(x[:2]) * x[-1],)}


@pytest.mark.parametrize("kind", ["jacfwd", "jacrev"])
def test_vjps_of_jacobians_of_a_container_output_agree_with_jax(kind: str) -> None:
    """A vjp of jacfwd/jacrev of a function returning a dict (jacfwd_blocks, jacrev_blocks and jacobian_rows under
    reverse mode: their rules, not derivatives of their bodies) and a vjp of a hessian of sliced data
    (batch_getitem's rule), against jax and the generated source under NumPy."""
    x = np.array([0.3, -0.2, 0.5, 0.9])
    ours_j, jax_j = getattr(srcjax, kind)(_two_outputs), jax.jit(getattr(jax, kind)(_two_outputs_twin))

    def pulled(v: Any) -> Any:
        out, back = srcjax.vjp(ours_j, v)
        return back({"s": np.ones_like(out["s"]) * 0.5, "v": (np.ones_like(out["v"][0]) * -1.5,)})[0]

    def pulled_jax(v: Any) -> Any:
        out, back = jax.vjp(jax_j, v)
        return back({"s": jnp.ones_like(out["s"]) * 0.5, "v": (jnp.ones_like(out["v"][0]) * -1.5,)})[0]

    want = jax.jit(pulled_jax)(x)
    np.testing.assert_allclose(np.asarray(pulled(x)), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(pulled)(x)), want, rtol=1e-10, atol=1e-12)
    text = srcjax.source(srcjax.jit(pulled), x)
    for helper in ("jacfwd_blocks", "jacrev_blocks", "jacobian_rows", "batch_getitem"):
        assert f"def {helper}_fwd" not in text and f"def {helper}_bwd" not in text, helper
