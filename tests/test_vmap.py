"""srcjax.vmap: batched programs against a Python loop over examples, jax.vmap, and NumPy.

Every case runs the batched program compiled (XLA) and its generated source under NumPy
(``srcjax.numpy_function``), and compares both with ``fn`` called per example by NumPy and
stacked. Programs cover the control flow a batched program changes: an ``if`` on batched data
(both branches, selected per example), a ``while`` on batched data (per-example trip counts,
finished examples frozen), ``break`` on batched data, static loops carrying batched values,
helpers, containers, lists; and the transformations vmap composes with.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from srcjax import lax as jl
from tests.twins import JAX

jax.config.update("jax_enable_x64", True)
rng = np.random.default_rng(0)


def per_example(fn: Any, args: tuple[Any, ...], in_axes: Any, out_axes: Any = 0) -> Any:
    """``fn`` called on each example by NumPy; results stacked along ``out_axes``."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    n = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = [fn(*[a if ax is None else np.take(a, k, axis=ax) for a, ax in zip(args, axes)]) for k in range(n)]

    def stack(*leaves: Any, axis: Any = 0) -> Any:
        return np.stack([np.asarray(v) for v in leaves], axis=axis)

    if isinstance(out_axes, int):
        return jax.tree_util.tree_map(lambda *xs: stack(*xs, axis=out_axes), *outs)
    return jax.tree_util.tree_map(lambda ax, *xs: stack(*xs, axis=ax), out_axes, *outs)


def agree(actual: Any, expected: Any, rtol: float = 1e-10, atol: float = 1e-12) -> None:
    al, at = jax.tree_util.tree_flatten(actual)
    el, et = jax.tree_util.tree_flatten(expected)
    assert at == et, f"structure {at} != {et}"
    for a, e in zip(al, el):
        assert np.shape(a) == np.shape(e), f"shape {np.shape(a)} != {np.shape(e)}"
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=rtol, atol=atol)


def check(fn: Any, args: tuple[Any, ...], in_axes: Any = 0, out_axes: Any = 0, **kw: Any) -> Any:
    v = srcjax.vmap(fn, in_axes=in_axes, out_axes=out_axes)
    want = per_example(fn, args, in_axes, out_axes)
    agree(v(*args), want, **kw)
    agree(srcjax.numpy_function(v)(*args), want, **kw)  # the generated source, run by NumPy
    return v


# -- programs -----------------------------------------------------------------------------------

def mlp(params, x):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    return h @ w2 + b2


def loss(params, x, y):
    return np.mean((mlp(params, x) - y) ** 2)


PARAMS = (rng.normal(size=(5, 8)), rng.normal(size=8), rng.normal(size=(8, 3)), rng.normal(size=3))
XS, YS = rng.normal(size=(7, 5)), rng.normal(size=(7, 3))


def branchy(x, t):
    if np.sum(x) > t:
        y = np.sin(x) * 2.0
        z = y + 1.0
    else:
        y = x * x
        z = y - 1.0
    return y * z


def newton_sqrt(a):
    x = a
    while np.abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


def counted(a):
    x = a
    k = 0
    while np.abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
        k = k + 1
    return x, k


def with_break(x):
    y = x
    for _ in range(8):
        y = np.sin(y) * 1.5 + x
        if np.max(y) > 2.0:
            break
    return y


def accumulate(x, w):
    total = np.zeros_like(w)
    rows = []
    for i in range(3):
        total = total + x[i] * w
        rows.append(total * 2.0)
    return np.stack(rows), total


def helper_scale(a, s):
    return np.tanh(a) * s


def calls_helper(x, s):
    return helper_scale(x, s) + helper_scale(x * 2.0, 1.5)


def shapes(x):
    n = x.shape[0]
    m = len(x)
    return np.reshape(x, (x.size,)) * n + m + x.ndim


def containers(p, x):
    h = np.tanh(x @ p["w"] + p["b"])
    return {"h": h, "s": np.sum(h)}, (h[0], p["b"] * 2.0)


def test_mlp_per_example():
    check(mlp, (PARAMS, XS), in_axes=(None, 0))
    check(loss, (PARAMS, XS, YS), in_axes=(None, 0, 0))


def test_if_on_batched_data_selects_per_example():
    x = rng.normal(size=(9, 3))
    v = check(branchy, (x, 0.0), in_axes=(0, None))
    text = srcjax.source(v)
    assert "batch_select(" in text and "lax.cond" not in text  # both branches, selected


def test_if_on_unbatched_data_stays_a_branch():
    x = rng.normal(size=(9, 3))
    ts = np.array([0.5, -0.5])

    def by_threshold(x, t):
        return branchy(x, t)

    check(by_threshold, (x[0], ts), in_axes=(None, 0))


def test_while_on_batched_data_runs_per_example_trip_counts():
    a = rng.uniform(0.5, 1e4, size=33)
    v = check(newton_sqrt, (a,))
    text = srcjax.source(v)
    assert "np.any(" in text  # runs while any example runs
    x, k = srcjax.vmap(counted)(a)
    xs, ks = per_example(counted, (a,), 0)
    np.testing.assert_array_equal(np.asarray(k), ks)  # finished examples are frozen
    assert len(set(ks.tolist())) > 1
    np.testing.assert_allclose(np.asarray(x), np.sqrt(a), rtol=1e-12)


def test_break_on_batched_data_is_a_mask():
    check(with_break, (rng.normal(size=(6, 4)),))


def test_static_loops_carry_batched_values_and_lists():
    check(accumulate, (rng.normal(size=(5, 3)), rng.normal(size=4)), in_axes=(0, None))
    check(accumulate, (rng.normal(size=(3,)), rng.normal(size=(5, 4))), in_axes=(None, 0))


def test_helpers_and_shape_queries():
    check(calls_helper, (rng.normal(size=(4, 3)), rng.normal(size=4)), in_axes=(0, 0))
    check(shapes, (rng.normal(size=(5, 2, 3)),))


def test_containers_in_and_out():
    p = {"w": rng.normal(size=(3, 4)), "b": rng.normal(size=4)}
    check(containers, (p, rng.normal(size=(6, 3))), in_axes=(None, 0))
    # a dict prefix: the bias per example, the weights shared
    pb = {"w": p["w"], "b": rng.normal(size=(6, 4))}
    x = rng.normal(size=(6, 3))
    out = srcjax.vmap(containers, in_axes=({"w": None, "b": 0}, 0))(pb, x)
    want = per_example(lambda b, x: containers({"w": p["w"], "b": b}, x), (pb["b"], x), 0)
    agree(out, want)


def test_in_axes_out_axes_and_axis_size():
    x = rng.normal(size=(3, 5, 2))

    def f(x, y):
        return np.sum(x * 2.0, axis=0) + y

    y = rng.normal(size=(2, 5))
    check(f, (x, y), in_axes=(1, -1))
    check(f, (x, y), in_axes=(1, 1), out_axes=1)

    def pair(x, w):
        return x * w, w * 2.0

    w = rng.normal(size=2)
    out = srcjax.vmap(pair, in_axes=(0, None), out_axes=(0, None))(x[0], w)
    agree(out, (x[0] * w, w * 2.0))

    def const(w):
        return w * 3.0

    out = srcjax.vmap(const, in_axes=None, axis_size=4)(w)
    agree(out, np.broadcast_to(w * 3.0, (4, 2)))


def test_unbatched_values_stay_unbatched():
    def f(w, x):
        h = np.tanh(w * 2.0)
        return x @ h

    v = check(f, (rng.normal(size=(3, 3)), rng.normal(size=(5, 3))), in_axes=(None, 0))
    text = srcjax.source(v)
    assert "h = np.tanh(" in text and "batch_broadcast(" not in text


def dist(a, b):
    return np.sqrt(np.sum((a - b) ** 2))


def test_nested_vmap_is_a_pairwise_distance():
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    pw = srcjax.vmap(srcjax.vmap(dist, in_axes=(None, 0)), in_axes=(0, None))
    want = np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1))
    agree(pw(a, b), want)
    agree(srcjax.numpy_function(pw)(a, b), want)


# -- composition -----------------------------------------------------------------------------------

def jloss(params, x, y):
    w1, b1, w2, b2 = params
    h = jnp.tanh(x @ w1 + b1)
    return jnp.mean((h @ w2 + b2 - y) ** 2)


def test_vmap_of_grad_is_per_example_gradients():
    pe = srcjax.vmap(srcjax.grad(loss), in_axes=(None, 0, 0))
    want = JAX.vmap(jax.grad(jloss), in_axes=(None, 0, 0))(PARAMS, XS, YS)
    agree(pe(PARAMS, XS, YS), tuple(np.asarray(w) for w in want))


def test_grad_of_vmap():
    batched = srcjax.vmap(loss, in_axes=(None, 0, 0))

    def total(params, xs, ys):
        return np.sum(batched(params, xs, ys))

    want = JAX.grad(lambda p: jnp.sum(jax.vmap(jloss, in_axes=(None, 0, 0))(p, XS, YS)))(PARAMS)
    agree(srcjax.grad(total)(PARAMS, XS, YS), tuple(np.asarray(w) for w in want))


def test_grad_of_vmap_through_a_batched_while():
    batched = srcjax.vmap(newton_sqrt)

    def total(a):
        return np.sum(batched(a))

    a = rng.uniform(0.5, 50.0, size=5)
    agree(srcjax.grad(total, max_iters=100)(a), 0.5 / np.sqrt(a), rtol=1e-8)


def test_vmap_of_jvp_and_jacobians():
    def f(x):
        return np.sin(x) * np.sum(x ** 2)

    def jf(x):
        return jnp.sin(x) * jnp.sum(x ** 2)

    x = rng.normal(size=(4, 3))
    agree(srcjax.vmap(srcjax.jacfwd(f))(x), JAX.vmap(jax.jacfwd(jf))(x))
    agree(srcjax.vmap(srcjax.jacrev(f))(x), JAX.vmap(jax.jacrev(jf))(x))
    agree(srcjax.vmap(srcjax.hessian(lambda v: np.sum(f(v))))(x), JAX.vmap(jax.hessian(lambda v: jnp.sum(jf(v))))(x))


# -- errors ----------------------------------------------------------------------------------------

def test_mapped_sizes_must_agree():
    with pytest.raises(srcjax.ArgumentError) as ei:
        srcjax.vmap(branchy, in_axes=(0, 0))(rng.normal(size=(4, 3)), rng.normal(size=5))
    assert "4" in ei.value.message and "5" in ei.value.message and "t" in ei.value.message


def test_in_axes_must_match_the_arguments():
    with pytest.raises(srcjax.ArgumentError):
        srcjax.vmap(branchy, in_axes=(0, 0, 0))
    with pytest.raises(srcjax.ArgumentError) as ei:
        srcjax.vmap(newton_sqrt, in_axes=2)(np.ones(3))
    assert "dimension" in ei.value.message


def test_out_axes_none_for_a_batched_output_is_refused():
    with pytest.raises(srcjax.TranspileError) as ei:
        srcjax.vmap(newton_sqrt, out_axes=None)(np.ones(3))  # (written at the first call, as jax traces)
    assert "out_axes=None" in ei.value.message


def reshape_by_data(x, k):
    return np.reshape(x, (k, -1))


def test_batched_value_where_a_static_one_is_needed():
    with pytest.raises(srcjax.TranspileError) as ei:
        srcjax.vmap(reshape_by_data, in_axes=(0, 0))(np.ones((2, 6)), np.array([2, 3]))  # (at the first call)
    e = ei.value
    assert e.span is not None and e.span.line == reshape_by_data.__code__.co_firstlineno + 1
    assert "in_axes=(0, None)" in (e.hint or "") and "`k`" in e.message  # (the argument, and how to leave it unmapped)


# -- custom rules ----------------------------------------------------------------------------------

@srcjax.custom_vjp
def clipped_sin(x):
    return np.sin(x)


def _clipped_fwd(x):
    return np.sin(x), (x,)


def _clipped_bwd(res, g):
    x, = res
    return (np.clip(g * np.cos(x), -0.1, 0.1),)


clipped_sin.defvjp(_clipped_fwd, _clipped_bwd)


@srcjax.custom_jvp
def steep_tanh(x):
    return np.tanh(x)


@steep_tanh.defjvp
def _steep_tanh_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return np.tanh(x), 3.0 * t


def uses_rules(w, x):
    return np.sum(clipped_sin(x * w)) + np.sum(steep_tanh(x) * w)


@jax.custom_vjp
def j_clipped_sin(x):
    return jnp.sin(x)


j_clipped_sin.defvjp(lambda x: (jnp.sin(x), (x,)), lambda res, g: (jnp.clip(g * jnp.cos(res[0]), -0.1, 0.1),))


@jax.custom_jvp
def j_steep_tanh(x):
    return jnp.tanh(x)


@j_steep_tanh.defjvp
def _j_steep_tanh_jvp(primals, tangents):
    return jnp.tanh(primals[0]), 3.0 * tangents[0]


def j_uses_rules(w, x):
    return jnp.sum(j_clipped_sin(x * w)) + jnp.sum(j_steep_tanh(x) * w)


BATCHED_RULES = srcjax.vmap(uses_rules, in_axes=(None, 0))


def total_with_rules(w, xs):
    return np.sum(BATCHED_RULES(w, xs))


def test_custom_rules_are_batched_not_dropped():
    w, xs = np.array([0.5, 2.0, -1.0]), rng.normal(size=(4, 3))
    check(uses_rules, (w, xs), in_axes=(None, 0))
    # grad of the batched program uses the (batched) rules: the clipped gradient, the steep tangent
    want = JAX.grad(lambda w: jnp.sum(jax.vmap(j_uses_rules, in_axes=(None, 0))(w, xs)))(w)
    agree(srcjax.grad(total_with_rules)(w, xs), want)
    agree(srcjax.vmap(srcjax.grad(uses_rules), in_axes=(None, 0))(w, xs),
          JAX.vmap(jax.grad(j_uses_rules), in_axes=(None, 0))(w, xs))


def test_vmap_of_a_custom_function_itself_keeps_its_rules():
    # vmap(clipped_sin) (the custom function is the entry, not a call inside it): derivatives of the
    # batched program use the batched rules (they silently differentiated the primal: sin's cos)
    xs = rng.normal(size=(2, 3))
    want = JAX.grad(lambda x: jnp.sum(jax.vmap(j_clipped_sin)(x) * 3.0))(xs)
    agree(srcjax.grad(lambda x: np.sum(srcjax.vmap(clipped_sin)(x) * 3.0))(xs), want)
    agree(srcjax.vjp(srcjax.vmap(clipped_sin, in_axes=1, out_axes=1), xs)[1](np.full((2, 3), 3.0))[0], want)
    agree(srcjax.jvp(srcjax.vmap(steep_tanh), (xs,), (np.ones_like(xs),))[1], np.full((2, 3), 3.0))


# -- NamedTuple and dataclass in_axes/out_axes ------------------------------------------------------

class Layer(NamedTuple):
    w: Any
    b: Any


@dataclasses.dataclass
class DLayer:
    w: Any
    b: Any


def layer_out(p, x):
    return np.tanh(x @ p.w + p.b)


def layer_pair(p, x):
    h = x @ p.w
    return Layer(h, p.b * 2.0)


def test_named_tuple_in_axes_per_field():
    w, bs, xs = rng.normal(size=(3, 2)), rng.normal(size=(5, 2)), rng.normal(size=(5, 3))
    v = srcjax.vmap(layer_out, in_axes=(Layer(None, 0), 0))
    want = np.stack([layer_out(Layer(w, bs[k]), xs[k]) for k in range(5)])
    agree(v(Layer(w, bs), xs), want)
    agree(srcjax.numpy_function(v)(Layer(w, bs), xs), want)
    # the shared field stays unbatched in the source: one matrix product for every example
    assert "batch_broadcast" not in srcjax.source(v)
    # against jax (NamedTuples are pytrees there too)
    jv = JAX.vmap(lambda p, x: jnp.tanh(x @ p.w + p.b), in_axes=(Layer(None, 0), 0))(Layer(w, bs), xs)
    agree(v(Layer(w, bs), xs), np.asarray(jv))
    # the field mapped along another axis, the other one shared
    v1 = srcjax.vmap(layer_out, in_axes=(Layer(None, 1), 0))
    agree(v1(Layer(w, bs.T.copy()), xs), want)
    # per-example gradients with respect to the record
    g = srcjax.vmap(srcjax.grad(lambda p, x: np.sum(layer_out(p, x))), in_axes=(Layer(None, 0), 0))(Layer(w, bs), xs)
    jg = JAX.vmap(jax.grad(lambda p, x: jnp.sum(jnp.tanh(x @ p.w + p.b))), in_axes=(Layer(None, 0), 0))(
        Layer(w, bs), xs)
    assert isinstance(g, Layer)
    agree(tuple(g), tuple(np.asarray(t) for t in jg))


def test_dataclass_in_axes_and_record_out_axes():
    w, bs, xs = rng.normal(size=(3, 2)), rng.normal(size=(5, 2)), rng.normal(size=(5, 3))
    v = srcjax.vmap(layer_out, in_axes=(DLayer(None, 0), 0))
    want = np.stack([layer_out(DLayer(w, bs[k]), xs[k]) for k in range(5)])
    agree(v(DLayer(w, bs), xs), want)
    # out_axes as a NamedTuple prefix: the batch axis last in one field, the other unbatched
    p = Layer(w, rng.normal(size=2))
    out = srcjax.vmap(layer_pair, in_axes=(None, 0), out_axes=Layer(1, None))(p, xs)
    assert isinstance(out, Layer)
    agree(out.w, (xs @ w).T)
    agree(out.b, p.b * 2.0)


@dataclasses.dataclass
class RLayer:  # registered with register_dataclass (a static field besides the arrays)
    w: Any
    b: Any
    name: str = "layer"


srcjax.tree_util.register_dataclass(RLayer, data_fields=["w", "b"], meta_fields=["name"])


def test_whole_dataclass_mapped_and_registered_dataclass_in_axes():
    w, bs, xs = rng.normal(size=(3, 2)), rng.normal(size=(5, 2)), rng.normal(size=(5, 3))
    ws = rng.normal(size=(5, 3, 2))
    want = np.stack([layer_out(DLayer(ws[k], bs[k]), xs[k]) for k in range(5)])
    # in_axes=0 for a whole dataclass (plain or registered): it was 'static while loop ran more than
    # 10000 iterations' (the batch size read from a dataclass)
    for p in (DLayer(ws, bs), RLayer(ws, bs)):
        agree(srcjax.vmap(layer_out)(p, xs), want)
        agree(srcjax.numpy_function(srcjax.vmap(layer_out))(p, xs), want)
    # a registered dataclass as an in_axes prefix (it was refused: 'must be an int, None, or ...')
    v = srcjax.vmap(layer_out, in_axes=(RLayer(None, 0), 0))
    agree(v(RLayer(w, bs), xs), np.stack([layer_out(DLayer(w, bs[k]), xs[k]) for k in range(5)]))
    agree(srcjax.vmap(layer_out, in_axes=(RLayer(2, 1), 1))(RLayer(np.moveaxis(ws, 0, 2), bs.T), xs.T), want)


def test_record_in_axes_must_match_the_argument():
    w, bs, xs = rng.normal(size=(3, 2)), rng.normal(size=(5, 2)), rng.normal(size=(5, 3))
    v = srcjax.vmap(layer_out, in_axes=(Layer(None, 0), 0))
    with pytest.raises(srcjax.ArgumentError, match="Layer"):
        v(DLayer(w, bs), xs)
    with pytest.raises(srcjax.ArgumentError, match=r"p\.b has 4, x has 5|different sizes"):
        v(Layer(w, rng.normal(size=(4, 2))), xs)


# -- srcjax.vmap (and grad) called inside a function that is differentiated or batched ------------------

def inline_pairwise(a, b):
    d = srcjax.vmap(dist, in_axes=(0, None))(a, b)
    return np.sum(d ** 2)


def named_per_example(a, b):
    per_row = srcjax.vmap(dist, in_axes=(0, None))
    g = srcjax.grad(lambda_free_sq)(b)
    return np.sum(per_row(a, b)) + np.sum(g * b)


def lambda_free_sq(b):
    return np.sum(b ** 3)


def j_inline_pairwise(a, b):
    d = JAX.vmap(lambda a, b: jnp.sqrt(jnp.sum((a - b) ** 2)), in_axes=(0, None))(a, b)
    return jnp.sum(d ** 2)


def j_named_per_example(a, b):
    per_row = JAX.vmap(lambda a, b: jnp.sqrt(jnp.sum((a - b) ** 2)), in_axes=(0, None))
    g = JAX.grad(lambda b: jnp.sum(b ** 3))(b)
    return jnp.sum(per_row(a, b)) + jnp.sum(g * b)


@pytest.mark.parametrize("f, jf", [(inline_pairwise, j_inline_pairwise), (named_per_example, j_named_per_example)])
def test_inline_vmap_composes_with_every_transformation(f, jf):
    a, b = rng.normal(size=(4, 3)), rng.normal(size=3)
    agree(srcjax.compile(f)(a, b), jf(a, b))
    for sj, jx in [(srcjax.grad, jax.grad), (srcjax.jacfwd, jax.jacfwd), (srcjax.jacrev, jax.jacrev)]:
        agree(sj(f, argnums=1)(a, b), np.asarray(jx(jf, argnums=1)(a, b)))
    agree(srcjax.hessian(f, argnums=1)(a, b), np.asarray(JAX.hessian(jf, argnums=1)(a, b)), rtol=1e-8)
    bs = rng.normal(size=(5, 3))
    agree(srcjax.vmap(f, in_axes=(None, 0))(a, bs), np.asarray(JAX.vmap(jf, in_axes=(None, 0))(a, bs)))
    agree(srcjax.vmap(srcjax.grad(f), in_axes=(None, 0))(a, bs),
          np.asarray(JAX.vmap(jax.grad(jf), in_axes=(None, 0))(a, bs)))
    # the derivative calls the generated batched function by name: readable, no opaque call
    assert "dist_vmap" in srcjax.source(srcjax.grad(f))


def bad_inline(a, b):
    return srcjax.vmap(dist, in_axes=(0, None, 0))(a, b)


def test_inline_vmap_errors_are_at_the_users_line():
    with pytest.raises(srcjax.ArgumentError) as e:
        srcjax.compile(bad_inline)(rng.normal(size=(4, 3)), rng.normal(size=3))
    assert "in_axes has 3 entries" in str(e.value)
    assert "test_vmap.py" in str(e.value) and "srcjax.vmap(dist, in_axes=(0, None, 0))" in str(e.value)


def one_branch_binds(x, y, z):
    if np.mean(z) < 0.5:
        y = np.exp(-y * y)  # `-y` is a temporary only this branch binds
    x = np.tanh(x)
    return np.sum(x) + 0.1 * np.sum(np.tanh(np.tanh(x) @ y))


def j_one_branch_binds(x, y, z):
    y = jnp.where(jnp.mean(z) < 0.5, jnp.exp(-y * y), y)
    x = jnp.tanh(x)
    return jnp.sum(x) + 0.1 * jnp.sum(jnp.tanh(jnp.tanh(x) @ y))


def test_grad_of_an_if_on_batched_data_that_binds_a_name_in_one_branch():
    # regression: the gradient's tape held UNSET for the other branch, and batch_select refused it
    x, y, zs = rng.normal(size=(1, 3)), rng.normal(size=3), rng.normal(size=(4, 1, 3)) + 0.5
    g = srcjax.vmap(srcjax.grad(one_branch_binds, argnums=(0, 1, 2)), in_axes=(None, None, 0))(x, y, zs)
    want = JAX.vmap(jax.grad(j_one_branch_binds, argnums=(0, 1, 2)), in_axes=(None, None, 0))(x, y, zs)
    agree(g, tuple(np.asarray(w) for w in want))


def test_grad_of_an_if_on_batched_data_rebinding_a_parameter_is_selected_per_example():
    # regression (silent wrong answer, session 27): the parameter `y` the taken branch rebinds was read as
    # "UNSET on the other path" (batch_lax._unset_at: a parameter is never UNSET), so every example got the
    # true branch's `y` in the gradient; the data above reached it only when all examples took one branch
    x, y = np.array([[0.3, -0.7, 1.1]]), np.array([0.5, -1.2, 0.8])
    zs = np.array([[[0.0, 0.1, 0.2]], [[1.0, 1.1, 1.2]], [[0.9, 0.8, 0.7]], [[-1.0, 0.0, 0.4]]])  # means < / > 0.5
    g = srcjax.vmap(srcjax.grad(one_branch_binds, argnums=(0, 1, 2)), in_axes=(None, None, 0))(x, y, zs)
    want = JAX.vmap(jax.grad(j_one_branch_binds, argnums=(0, 1, 2)), in_axes=(None, None, 0))(x, y, zs)
    agree(g, tuple(np.asarray(w) for w in want))
    loop = [srcjax.grad(one_branch_binds, argnums=(0, 1))(x, y, z) for z in zs]
    for k in range(2):
        np.testing.assert_allclose(np.asarray(g[k]), np.stack([np.asarray(one[k]) for one in loop]), rtol=1e-12)


def test_a_branch_join_of_copies_of_one_operand_is_that_operand():
    """Generated source: the join of a batched ``if``'s ``y_before`` (the value of ``y`` before the branch rebinds
    it, a copy of the parameter in both branches) is ``y_before = y``: was ``batch_select(lt, batch_broadcast(
    y_before_1, n), batch_broadcast(y_3, n))``, two broadcasts and a select of equal values."""
    text = srcjax.source(srcjax.vmap(srcjax.grad(one_branch_binds, argnums=(0, 1, 2)), in_axes=(None, None, 0)))
    assert "    y_before = y\n" in text and "y_before = batch_select" not in text, text
    x, y = np.array([[0.3, -0.7, 1.1]]), np.array([0.5, -1.2, 0.8])
    zs = np.array([[[0.0, 0.1, 0.2]], [[1.0, 1.1, 1.2]], [[0.9, 0.8, 0.7]], [[-1.0, 0.0, 0.4]]])
    g = srcjax.vmap(srcjax.grad(one_branch_binds, argnums=(0, 1, 2)), in_axes=(None, None, 0))
    agree(srcjax.numpy_function(g)(x, y, zs), tuple(np.asarray(v) for v in g(x, y, zs)))


# -- lists of batched and unbatched values, builtins -----------------------------------------------

def stack_of_mixed(x, w):
    outs = []
    outs.append(w)  # shared
    outs.append(x * w)  # per example
    return np.stack(outs)


def builtins_on_batched(x, w):
    return abs(x - w) + round(2.345, 2) * np.sum(abs(w))


def list_of_a_tuple(x, w):
    t = (x, w)
    items = list(t)
    return items[0] * items[1]


def comprehension_and_concatenation(x, w):
    ys = [x * i for i in range(3)] + [w]
    return np.concatenate(ys)


def loop_over_a_mixed_literal(x, w):
    s = 0.0
    for v in [x, w, x * w]:
        s = s + np.sum(v)
    return s


@pytest.mark.parametrize("fn", [stack_of_mixed, builtins_on_batched, list_of_a_tuple, comprehension_and_concatenation,
                                loop_over_a_mixed_literal])
def test_lists_mixing_batched_and_unbatched_values(fn):
    # regression: wrong shapes (a shared value treated as batched) or "cannot batch"
    check(fn, (rng.normal(size=(4, 3)), rng.normal(size=3)), in_axes=(0, None))
    check(fn, (rng.normal(size=3), rng.normal(size=(4, 3))), in_axes=(None, 0))


def break_in_a_rolled_loop(x, y, z):
    v1 = np.tanh(x)
    v2 = z[::-1, :2]
    for _ in range(3):
        v1 = y * v1
        if np.max(v1) > 0.5:
            break
    return np.sum(v2) + 0.6 * np.sum(v1 * v1)


def j_break_in_a_rolled_loop(x, y, z):
    v1 = jnp.tanh(x)
    stop = False
    for _ in range(3):
        new = jnp.where(stop, v1, y * v1)
        stop = jnp.logical_or(stop, jnp.max(new) > 0.5)
        v1 = new
    return jnp.sum(z[::-1, :2]) + 0.6 * jnp.sum(v1 * v1)


def test_grad_of_a_break_on_batched_data_in_a_rolled_loop():
    # regression: a constant made while the loop was traced once (thrown away) was used after it
    # (XLA: "use of undeclared SSA value")
    x, y, z = rng.normal(size=(2, 4)), rng.normal(size=(4, 2)) * 2.0, rng.normal(size=(3, 4))
    g = srcjax.vmap(srcjax.grad(break_in_a_rolled_loop, argnums=(0, 1, 2)), in_axes=(0, 1, None))(x, y, z)
    want = JAX.vmap(jax.grad(j_break_in_a_rolled_loop, argnums=(0, 1, 2)), in_axes=(0, 1, None))(x, y, z)
    agree(g, tuple(np.asarray(w) for w in want))


def size_of_data(x, w):
    return np.sum(x * w) * np.ones(int(np.sum(w)))


def test_errors_in_the_batched_program_are_at_the_users_line():
    # regression: the error was placed in the generated source (`<srcjax.vmap of g #0>:11:15`)
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.vmap(size_of_data, in_axes=(0, None))(rng.normal(size=(4, 3)), rng.normal(size=3))
    first = str(e.value).splitlines()[0]
    assert "test_vmap.py:" in first and "<srcjax." not in str(e.value), str(e.value)
    assert "np.ones(int(np.sum(w)))" in str(e.value)


def stack_of_a_list(x, w):
    items = [x * w, np.sin(x)]
    return np.sum(np.stack(items) ** 2)


def test_vmap_of_grad_through_a_stack_of_a_list():
    # regression: the batched cotangent helper read the list's length as a batched array's (IndexError)
    x, w = rng.normal(size=(4, 3)), rng.normal(size=3)
    got = srcjax.vmap(srcjax.grad(stack_of_a_list), in_axes=(0, None))(x, w)
    want = JAX.vmap(jax.grad(lambda x, w: jnp.sum(jnp.stack([x * w, jnp.sin(x)]) ** 2)), in_axes=(0, None))(x, w)
    agree(got, np.asarray(want))



def cond_via_module_alias(x):
    return jl.cond(np.sum(x) > 0, lambda v: v * 2.0, lambda v: -v, x)  # (jl: srcjax.lax, imported at the top)


def test_vmap_of_lax_cond_under_a_module_alias():
    """Regression: `lax.cond` after `from srcjax import lax` was "cannot batch" (only `srcjax.lax.cond` was)."""
    xs = np.array([[1.0, 2.0], [-3.0, 1.0], [-1.0, -1.0]])
    want = np.stack([x * 2.0 if np.sum(x) > 0 else -x for x in xs])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(cond_via_module_alias)(xs)), want)
