"""Issue #15 (vmap) audited requirement by requirement on programs srcjax had not seen (session 45, vaudit).

Each requirement of the issue has 2-4 new programs written as users write them. Every case returns what
srcjax gave and its oracles: ``jax.vmap`` of the program's jax twin (``tests/twins.py``: the same source with
``np`` bound to jax.numpy; a test oracle only) and a Python loop over examples running the user's function
with NumPy (or jax's transformation of one example, for derivatives). Values, shapes and pytree structure must
agree with both; dtypes must equal the NumPy loop's exactly (srcjax follows NumPy 2's promotion).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import srcjax  # noqa: E402

from . import tiers  # noqa: E402
from . import vmap_audit_helpers as H  # noqa: E402
from .twins import jax_twin  # noqa: E402
from .vmap_loop_oracle import agree, loop  # noqa: E402

jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(45)


def r(*s: int, dtype: Any = np.float64) -> np.ndarray:
    return RNG.standard_normal(s).astype(dtype)


def check_vmap(fn: Callable[..., Any], args: tuple[Any, ...], in_axes: Any = 0, out_axes: Any = 0, *,
               n: int, jax_fn: Callable[..., Any] | None = None, rtol: float = 1e-6, use_jax: bool = True,
               dtypes: bool = True) -> Any:
    """``srcjax.vmap(fn, in_axes, out_axes)(*args)`` vs the NumPy loop (values and dtypes) and jax.vmap."""
    got = srcjax.vmap(fn, in_axes=in_axes, out_axes=out_axes)(*args)
    agree(got, loop(fn, args, in_axes, n, out_axes), what="loop", rtol=rtol, dtypes=dtypes)
    if use_jax:
        twin = jax_fn if jax_fn is not None else jax_twin(fn, Particle=Particle, Dense=Dense)
        agree(got, jax.vmap(twin, in_axes=in_axes, out_axes=out_axes)(*args), what="jax.vmap", rtol=rtol)
    return got


# ---------------------------------------------------------------------------------------------------------------
# 1. in_axes / out_axes: int, None, negative, tuples, pytree prefixes, out_axes pytrees, axis_size
# ---------------------------------------------------------------------------------------------------------------

def column_range(m):
    spread = np.max(m) - np.min(m)
    return spread, np.argmax(m)


def stable_softmax(z):
    e = np.exp(z - np.max(z))
    return e / np.sum(e)


def affine(w, b, x):
    return w @ x + b


class Particle(NamedTuple):
    pos: Any
    vel: Any


def drift(p, dt):
    return Particle(p.pos + dt * p.vel, p.vel * 0.99)


@dataclasses.dataclass
class Dense:
    w: Any
    b: Any


srcjax.tree_util.register_dataclass(Dense, data_fields=["w", "b"], meta_fields=[])
jax.tree_util.register_dataclass(Dense, data_fields=["w", "b"], meta_fields=[])


def dense_apply(layer, x):
    return np.tanh(x @ layer.w + layer.b)


def scaled_proj(params, x):
    return np.tanh(x @ params["w"]) * params["scale"]


def two_layer(layers, x):
    for w, b in layers:
        x = np.maximum(x @ w + b, 0.0)
    return x


def proj_and_norm(x, w):
    return {"proj": x @ w, "wnorm": np.sum(w * w)}


def spread_out(w):
    return w * 2.0, np.sum(w)


def test_in_axes_int_and_negative() -> None:
    m = r(4, 5)
    check_vmap(column_range, (m,), 1, n=5)
    check_vmap(column_range, (m,), -1, n=5)
    z = r(3, 6)
    check_vmap(stable_softmax, (z,), -2, -1, n=3)
    check_vmap(stable_softmax, (z.T,), -1, 0, n=3)


def test_in_axes_tuple_with_none() -> None:
    w, b, xs = r(2, 3), r(2), r(4, 3)
    check_vmap(affine, (w, b, xs), (None, None, 0), n=4)
    bs = r(4, 2)
    check_vmap(affine, (w, bs, xs.T), (None, 0, 1), 1, n=4)


def test_in_axes_namedtuple_dataclass_dict_list_prefixes() -> None:
    p = Particle(r(5, 3), r(3))
    check_vmap(drift, (p, 0.1), (Particle(0, None), None), n=5)
    check_vmap(drift, (p, 0.1), (Particle(0, None), None), Particle(1, None), n=5)
    layer = Dense(r(3, 2), r(4, 2))
    check_vmap(dense_apply, (layer, r(4, 3)), (Dense(None, 0), 0), n=4)
    params = {"w": r(3, 2), "scale": r(4, 2)}
    check_vmap(scaled_proj, (params, r(4, 3)), ({"w": None, "scale": 0}, 0), n=4)
    layers = [(r(3, 4), r(4)), (r(4, 2), r(5, 2))]
    check_vmap(two_layer, (layers, r(5, 3)), ([None, (None, 0)], 0), n=5)


def test_out_axes_pytree_and_none() -> None:
    check_vmap(proj_and_norm, (r(4, 3), r(3, 2)), (0, None), {"proj": 1, "wnorm": None}, n=4)
    check_vmap(proj_and_norm, (r(3, 4), r(3, 2)), (-1, None), {"proj": -1, "wnorm": None}, n=4)


class Stats(NamedTuple):
    mean: Any
    spread: Any


def centered(x):
    m = np.mean(x)
    return Stats(m, x - m)


def named_parts(x):
    return {"a": x, "b": x + 1}


def two_parts(x):
    return x, x * 2


def test_out_axes_records_and_sequences() -> None:
    x = r(4, 3)
    got = srcjax.vmap(centered, out_axes=Stats(0, 1))(x)
    agree(got, jax.vmap(jax_twin(centered, Stats=Stats), out_axes=Stats(0, 1))(x), what="jax.vmap", dtypes=True)
    assert type(got) is Stats
    got = srcjax.vmap(two_parts, out_axes=[0, 1])(x)  # (jax wants a tuple: srcjax keeps the output's own kind)
    assert type(got) is tuple
    agree(got, (x, 2 * x.T), what="out_axes list")


@pytest.mark.parametrize("fn, out_axes, says", [
    (named_parts, {"a": 0}, "out_axes is a dict with keys ['a'], but the output is a dict with keys ['a', 'b']"),
    (named_parts, {"a": 0, "c": 1}, "out_axes is a dict with keys ['a', 'c'], but the output is a dict with keys"),
    (centered, (0, 0, 0), "out_axes is a tuple of 3, but the output is a record with fields ['mean', 'spread']"),
    (centered, (0, 1), "out_axes is a tuple of 2, but the output is a record"),
    (two_parts, Stats(0, 1), "out_axes is Stats with fields ['mean', 'spread'], but the output is a tuple of 2"),
    (two_parts, (0, 0, 0), "out_axes has 3 entries but the output is a tuple of 2"),
], ids=["dict_fewer_keys", "dict_other_key", "record_tuple_3", "record_tuple_2", "tuple_record", "tuple_3"])
def test_out_axes_not_the_outputs_structure_is_refused(fn: Callable[..., Any], out_axes: Any, says: str) -> None:
    # (a dict's keys out_axes did not name were silently dropped from the result; a record gave an internal
    # IndexError, a dict's unknown key a KeyError; jax: "out_axes specification must be a tree prefix")
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.vmap(fn, out_axes=out_axes)(r(4, 3))
    assert says in str(e.value), str(e.value)
    assert "test_vmap_audit.py" in str(e.value) and "hint:" in str(e.value), str(e.value)


def test_axis_size_with_nothing_mapped() -> None:
    w = r(3)
    got = srcjax.vmap(spread_out, in_axes=None, axis_size=4)(w)
    want = jax.vmap(jax_twin(spread_out), in_axes=None, axis_size=4)(w)
    agree(got, want, what="jax.vmap", dtypes=True)
    got = srcjax.vmap(spread_out, in_axes=(None,), out_axes=(1, None), axis_size=2)(w)
    want = jax.vmap(jax_twin(spread_out), in_axes=(None,), out_axes=(1, None), axis_size=2)(w)
    agree(got, want, what="jax.vmap", dtypes=True)


def test_inconsistent_sizes_name_both_arguments_and_sizes() -> None:
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.vmap(affine, in_axes=(None, 0, 0))(r(2, 3), r(5, 2), r(4, 3))
    msg = str(e.value)
    assert "b" in msg and "x" in msg and "5" in msg and "4" in msg, msg
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.vmap(scaled_proj, in_axes=({"w": None, "scale": 0}, 1))({"w": r(3, 2), "scale": r(4, 2)}, r(3, 6))
    msg = str(e.value)
    assert "scale" in msg and "4" in msg and "6" in msg, msg


def drift_in_jit(p, dt):
    return srcjax.vmap(drift, in_axes=((0, None), None))(p, dt)


def test_a_plain_tuple_of_in_axes_for_a_namedtuple_is_refused() -> None:
    # (was silently wrong: `p.vel`, unmapped by in_axes=(0, None), was read as mapped, each example taking
    # one of its elements; jax refuses a tuple for a NamedTuple too)
    p = Particle(r(3, 3), np.arange(3.0))
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.vmap(drift, in_axes=((0, None), None))(p, 0.1)
    assert "`.pos` reads a field of `p`, whose in_axes is a tuple" in str(e.value) or \
        "in_axes for p is a tuple, but the argument is a Particle" in str(e.value), str(e.value)
    with pytest.raises(srcjax.TranspileError) as e:  # (called inside a compiled function: the batcher's check)
        srcjax.jit(drift_in_jit)(p, 0.1)
    assert "`.pos` reads a field of `p`, whose in_axes is a tuple" in str(e.value), str(e.value)
    assert "test_vmap_audit.py" in str(e.value), str(e.value)
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.vmap(dense_apply, in_axes=((None, 0), 0))(Dense(r(3, 2), r(4, 2)), r(4, 3))
    assert "whose in_axes is a tuple" in str(e.value) or \
        "in_axes for layer is a tuple, but the argument is a Dense" in str(e.value), str(e.value)


def test_inconsistent_structures_are_argument_errors() -> None:
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.vmap(affine, in_axes=(None, 0))(r(2, 3), r(4, 2), r(4, 3))
    assert "in_axes" in str(e.value), str(e.value)
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.vmap(scaled_proj, in_axes=({"w": None, "bias": 0}, 0))({"w": r(3, 2), "scale": r(4, 2)}, r(4, 3))
    assert "in_axes" in str(e.value), str(e.value)
    with pytest.raises(srcjax.TranspileError) as e:  # nothing mapped and no axis_size
        srcjax.vmap(spread_out, in_axes=None)(r(3))
    assert "axis_size" in str(e.value), str(e.value)


# ---------------------------------------------------------------------------------------------------------------
# 2. composition
# ---------------------------------------------------------------------------------------------------------------

def logistic_loss(w, x, y):
    z = x @ w
    return np.log1p(np.exp(-y * z)) + 0.01 * np.sum(w * w)


def loss_with_aux(w, x):
    h = np.tanh(x * w)
    return np.sum(h ** 2), {"h": h, "peak": np.max(h)}


def cubic(x):
    return np.sum(x ** 3) - x[0] * x[-1]


def vec_map(x):
    return np.sin(x) * np.roll(x, 1)


def pair_dist(a, b):
    d = a - b
    return np.sqrt(np.sum(d * d) + 1e-12)


def module_helper_block(x, w):
    return H.gelu(H.rms_norm(x) @ w)


@srcjax.custom_vjp
def soft_clip(x):
    return np.tanh(x)


def soft_clip_fwd(x):
    t = np.tanh(x)
    return t, t


def soft_clip_bwd(t, g):
    return (g * (1 - t * t) * 0.5,)  # deliberately half the true derivative: the rule must be used


soft_clip.defvjp(soft_clip_fwd, soft_clip_bwd)


@srcjax.custom_jvp
def safe_log1pexp(x):
    return np.log1p(np.exp(x))


@safe_log1pexp.defjvp
def safe_log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return safe_log1pexp(x), t * 2.0  # deliberately not the true derivative: the rule must be used


def power_sum(x, p):
    acc = 0.0
    for k in range(p):
        acc = acc + x ** (k + 1)
    return acc


def with_act(x, w, act=np.tanh):
    return act(x @ w)


def make_model(w):
    def model(x):
        return np.sum(np.cos(x @ w))
    return model


def test_compile_around_and_inside() -> None:
    w, xs, ys = r(3), r(4, 3), np.sign(r(4))
    want = jax.vmap(jax_twin(logistic_loss), in_axes=(None, 0, 0))(w, xs, ys)
    agree(srcjax.jit(srcjax.vmap(logistic_loss, in_axes=(None, 0, 0)))(w, xs, ys), want, what="jit(vmap)")
    agree(srcjax.vmap(srcjax.jit(logistic_loss), in_axes=(None, 0, 0))(w, xs, ys), want, what="vmap(jit)")


def test_per_example_grad_and_grad_of_vmap() -> None:
    w, xs, ys = r(3), r(4, 3), np.sign(r(4))
    jl = jax_twin(logistic_loss)
    agree(srcjax.vmap(srcjax.grad(logistic_loss), in_axes=(None, 0, 0))(w, xs, ys),
          jax.vmap(jax.grad(jl), in_axes=(None, 0, 0))(w, xs, ys), what="vmap(grad)", dtypes=True)
    total = lambda w, xs, ys: np.mean(srcjax.vmap(logistic_loss, in_axes=(None, 0, 0))(w, xs, ys))
    jtotal = lambda w, xs, ys: jnp.mean(jax.vmap(jl, in_axes=(None, 0, 0))(w, xs, ys))
    agree(srcjax.grad(total)(w, xs, ys), jax.grad(jtotal)(w, xs, ys), what="grad(vmap)")


def test_value_and_grad_has_aux_under_vmap() -> None:
    w, xs = r(3), r(5, 3)
    got = srcjax.vmap(srcjax.value_and_grad(loss_with_aux, has_aux=True), in_axes=(None, 0))(w, xs)
    want = jax.vmap(jax.value_and_grad(jax_twin(loss_with_aux), has_aux=True), in_axes=(None, 0))(w, xs)
    agree(got, want, what="vmap(value_and_grad(has_aux))")


def test_jvp_vjp_under_vmap() -> None:
    xs, ts = r(4, 3), r(4, 3)
    jv = jax_twin(vec_map)
    got = srcjax.vmap(lambda x, t: srcjax.jvp(vec_map, (x,), (t,)))(xs, ts)
    agree(got, jax.vmap(lambda x, t: jax.jvp(jv, (x,), (t,)))(xs, ts), what="vmap(jvp)")
    got = srcjax.vmap(lambda x, g: srcjax.vjp(vec_map, x)[1](g)[0])(xs, ts)
    agree(got, jax.vmap(lambda x, g: jax.vjp(jv, x)[1](g)[0])(xs, ts), what="vmap(vjp)")
    # vmap as the inner transformation
    out, tan = srcjax.jvp(srcjax.vmap(vec_map), (xs,), (ts,))
    agree((out, tan), jax.jvp(jax.vmap(jv), (xs,), (ts,)), what="jvp(vmap)")


def test_jacobians_and_vmap_in_both_orders() -> None:
    xs = r(3, 4)
    jc = jax_twin(cubic)
    agree(srcjax.vmap(srcjax.jacfwd(cubic))(xs), jax.vmap(jax.jacfwd(jc))(xs), what="vmap(jacfwd)")
    agree(srcjax.vmap(srcjax.hessian(cubic))(xs), jax.vmap(jax.hessian(jc))(xs), what="vmap(hessian)")
    agree(srcjax.jacrev(srcjax.vmap(vec_map))(xs), jax.jacrev(jax.vmap(jax_twin(vec_map)))(xs),
          what="jacrev(vmap)")


def test_vmap_three_levels() -> None:
    a, b, s = r(3, 2), r(4, 2), r(5)
    jd = jax_twin(pair_dist)
    f = srcjax.vmap(srcjax.vmap(srcjax.vmap(lambda a, b, s: s * pair_dist(a, b), in_axes=(None, None, 0)),
                                in_axes=(None, 0, None)), in_axes=(0, None, None))
    jf = jax.vmap(jax.vmap(jax.vmap(lambda a, b, s: s * jd(a, b), in_axes=(None, None, 0)),
                           in_axes=(None, 0, None)), in_axes=(0, None, None))
    agree(f(a, b, s), jf(a, b, s), what="vmap^3")
    assert np.asarray(f(a, b, s)).shape == (3, 4, 5)


def test_custom_vjp_and_custom_jvp_rules_are_batched() -> None:
    xs = r(4, 3)
    # the custom VJP's rule (half the true derivative) under vmap(grad) and grad(vmap)
    got = srcjax.vmap(srcjax.grad(lambda x: np.sum(soft_clip(x))))(xs)
    agree(got, 0.5 * (1 - np.tanh(xs) ** 2), what="vmap(grad(custom_vjp))")
    got = srcjax.grad(lambda x: np.sum(srcjax.vmap(soft_clip)(x)))(xs)
    agree(got, 0.5 * (1 - np.tanh(xs) ** 2), what="grad(vmap(custom_vjp))")
    agree(srcjax.vmap(soft_clip)(xs), np.tanh(xs), what="vmap(custom_vjp)")
    got = srcjax.vmap(srcjax.grad(lambda x: np.sum(safe_log1pexp(x))))(xs)
    agree(got, np.full_like(xs, 2.0), what="vmap(grad(custom_jvp))")
    out, tan = srcjax.jvp(srcjax.vmap(safe_log1pexp), (xs,), (xs,))
    agree((out, tan), (np.log1p(np.exp(xs)), 2.0 * xs), what="jvp(vmap(custom_jvp))")


def test_helpers_in_another_module_lambdas_partial_closures() -> None:
    xs, w = r(4, 3), r(3, 2)
    jtw = jax_twin(module_helper_block, H=type("JH", (), {
        "gelu": staticmethod(jax_twin(H.gelu, np_module=jnp, onp=jnp)),
        "rms_norm": staticmethod(jax_twin(H.rms_norm, onp=jnp))}))
    check_vmap(module_helper_block, (xs, w), (0, None), n=4, jax_fn=jtw)
    check_vmap(lambda x, w: H.clipped_step(x, 0.1) @ w, (xs * 3, w), (0, None), n=4,
               jax_fn=lambda x, w: (x - 0.1 * jnp.clip(x, -1.0, 1.0)) @ w)
    part = functools.partial(with_act, w=w)
    agree(srcjax.vmap(part)(xs), loop(part, (xs,), 0, 4), what="partial", dtypes=True)
    part_sin = functools.partial(with_act, w=w, act=np.sin)
    agree(srcjax.vmap(part_sin)(xs), np.sin(xs @ w), what="partial(act=np.sin)")
    model = make_model(w)
    agree(srcjax.vmap(model)(xs), loop(model, (xs,), 0, 4), what="closure", dtypes=True)
    agree(srcjax.vmap(srcjax.grad(model))(xs), -np.sin(xs @ w) @ w.T, what="vmap(grad(closure))")


def test_static_arguments_and_function_arguments() -> None:
    xs = r(4, 3)
    f = srcjax.jit(srcjax.vmap(power_sum, in_axes=(0, None)), static_argnums=1)
    agree(f(xs, 3), xs + xs ** 2 + xs ** 3, what="jit(vmap, static_argnums)")
    agree(f(xs, 2), xs + xs ** 2, what="jit(vmap, static_argnums) again")
    g = srcjax.jit(srcjax.vmap(power_sum, in_axes=(0, None)), static_argnames="p")
    agree(g(xs, p=2), xs + xs ** 2, what="jit(vmap, static_argnames)")
    w = r(3, 2)
    agree(srcjax.vmap(with_act, in_axes=(0, None))(xs, w), np.tanh(xs @ w), what="default function argument")
    with pytest.raises(srcjax.TranspileError):  # jax: a function is not a valid vmap argument either
        srcjax.vmap(with_act, in_axes=(0, None, None))(xs, w, np.sin)


def per_row_norms(m):
    return np.sum(srcjax.vmap(lambda row: np.sqrt(np.sum(row * row)))(m))


def per_row_grads(w, xs, ys):
    g = srcjax.vmap(srcjax.grad(logistic_loss), in_axes=(None, 0, 0))(w, xs, ys)
    return np.sum(g * g)


def test_vmap_called_inside_compiled_and_differentiated_functions() -> None:
    m = r(4, 3)
    want = np.sum(np.sqrt(np.sum(m * m, axis=1)))
    agree(srcjax.jit(per_row_norms)(m), want, what="jit(f calling vmap)")
    agree(srcjax.grad(per_row_norms)(m), m / np.sqrt(np.sum(m * m, axis=1, keepdims=True)), what="grad")
    w, xs, ys = r(3), r(4, 3), np.sign(r(4))
    jl = jax_twin(logistic_loss)
    jf = lambda w: jnp.sum(jax.vmap(jax.grad(jl), in_axes=(None, 0, 0))(w, xs, ys) ** 2)
    agree(srcjax.grad(per_row_grads)(w, xs, ys), jax.grad(jf)(w), what="grad(f calling vmap(grad))")
    agree(srcjax.jit(per_row_grads)(w, xs, ys), jf(w), what="jit(f calling vmap(grad))")


# ---------------------------------------------------------------------------------------------------------------
# 3. control flow under vmap
# ---------------------------------------------------------------------------------------------------------------

def piecewise(x, k):
    if np.sum(x) > 0:
        y = x * 2.0 + k
    else:
        y = np.abs(x) - k
    return y


def flagged(x, use_sq):
    if use_sq:
        return x * x
    return -x


def flagged_data(x, w):
    if np.sum(w) > 0:
        return x * w
    return x - w


def newton_sqrt(a):
    x = a
    n = 0
    while np.abs(x * x - a) > 1e-9:
        x = 0.5 * (x + a / x)
        n += 1
    return x, n


def first_over(x, thresh):
    idx = -1
    for i in range(x.shape[0]):
        if x[i] > thresh:
            idx = i
            break
    return idx


def sum_positive(x):
    total = 0.0
    for v in x:
        if v < 0:
            continue
        total = total + v
    return total


def repeat_sum(x, n):
    s = 0.0
    for _ in range(n):
        s = s + x
    return s


def running_max(x):
    out = np.zeros_like(x)
    best = x[0]
    for i in range(x.shape[0]):
        best = np.maximum(best, x[i])
        out[i] = best
    return out


def set_at(x, i, v):
    y = x.copy()
    y[i] = v
    return y


def bump_at(x, i, v):
    y = x.copy()
    y[i] += v
    return y


def zero_small(x):
    y = x.copy()
    y[np.abs(y) < 0.5] = 0.0
    return y


def histogram(idx, weights):
    h = np.zeros(5)
    np.add.at(h, idx, weights)
    return h


def lax_cond_step(x, p):
    return srcjax.lax.cond(p > 0, lambda v: np.sin(v), lambda v: np.cos(v) * 2.0, x)


def lax_while_halve(x):
    return srcjax.lax.while_loop(lambda c: c[0] > 1.0, lambda c: (c[0] / 2.0, c[1] + 1), (x, 0))


def lax_fori_poly(x, n):
    return srcjax.lax.fori_loop(0, n, lambda i, acc: acc * x + i, 0.0 * x)


def lax_scan_cumsum(xs):
    def step(carry, v):
        carry = carry + v
        return carry, carry * 2.0
    return srcjax.lax.scan(step, 0.0, xs)


def lax_switch_act(k, x):
    return srcjax.lax.switch(k, [np.tanh, np.sin, lambda v: v * v], x)


def test_if_on_batched_data_selects_per_example() -> None:
    xs = r(6, 3)
    check_vmap(piecewise, (xs, 0.5), (0, None), n=6, use_jax=False)
    check_vmap(piecewise, (xs, np.linspace(-1, 1, 6)), (0, 0), n=6, use_jax=False)


def test_if_on_unbatched_test_stays_a_branch() -> None:
    xs = r(4, 3)
    agree(srcjax.vmap(flagged, in_axes=(0, None))(xs, True), xs * xs, what="flag True")
    agree(srcjax.vmap(flagged, in_axes=(0, None))(xs, False), -xs, what="flag False")
    flags = np.array([True, False, True, False])
    check_vmap(flagged, (xs, flags), (0, 0), n=4, use_jax=False)
    w = r(3)
    check_vmap(flagged_data, (xs, w), (0, None), n=4, use_jax=False)
    check_vmap(flagged_data, (xs, -np.abs(w)), (0, None), n=4, use_jax=False)
    text = srcjax.source(srcjax.vmap(flagged_data, in_axes=(0, None)))
    assert "srcjax.lax.cond(" in text and "batch_select" not in text, text  # one branch runs, for all examples
    text = srcjax.source(srcjax.vmap(piecewise, in_axes=(0, None)))
    assert "batch_select(" in text and "lax.cond" not in text, text  # both run, each example selects


def test_while_on_batched_data_freezes_finished_examples() -> None:
    a = np.array([0.5, 2.0, 9.0, 100.0])
    got = check_vmap(newton_sqrt, (a,), n=4, use_jax=False)
    assert len(set(np.asarray(got[1]).tolist())) > 1  # per-example trip counts differ


def test_break_and_continue_on_batched_data() -> None:
    xs = r(5, 6)
    check_vmap(first_over, (xs, 0.8), (0, None), n=5, use_jax=False)
    check_vmap(first_over, (xs, np.linspace(-0.5, 1.5, 5)), (0, 0), n=5, use_jax=False)
    check_vmap(sum_positive, (xs,), n=5, use_jax=False)


def test_for_over_a_range_with_a_mapped_bound_runs_per_example() -> None:
    # (jax refuses a Python range over a traced bound; srcjax runs each example's own trip count)
    check_vmap(repeat_sum, (r(3), np.array([1, 2, 0])), n=3, use_jax=False)


def test_for_over_range_and_in_place_updates() -> None:
    xs = r(4, 5)
    check_vmap(running_max, (xs,), n=4, jax_fn=lambda x: jax.lax.cummax(x))
    idx = np.array([0, 3, 1, 1])
    jset = lambda x, i, v: jnp.asarray(x).at[i].set(v)
    jbump = lambda x, i, v: jnp.asarray(x).at[i].add(v)
    check_vmap(set_at, (xs, idx, r(4)), (0, 0, 0), n=4, jax_fn=jset)
    check_vmap(set_at, (xs, idx, 7.0), (0, 0, None), n=4, jax_fn=jset)
    check_vmap(bump_at, (xs, idx, r(4)), (0, 0, 0), n=4, jax_fn=jbump)
    check_vmap(bump_at, (xs[0], idx, r(4)), (None, 0, 0), n=4, jax_fn=jbump)
    check_vmap(zero_small, (xs,), n=4, use_jax=False)
    idx2 = np.array([[0, 1, 1], [4, 4, 4], [2, 0, 2], [3, 3, 0]])
    check_vmap(histogram, (idx2, r(4, 3)), (0, 0), n=4, use_jax=False)
    check_vmap(histogram, (idx2, r(3)), (0, None), n=4, use_jax=False)


def test_lax_control_flow_with_batched_operands_and_predicates() -> None:
    xs, ps = r(5, 3), r(5)
    check_vmap(lax_cond_step, (xs, ps), (0, 0), n=5)
    check_vmap(lax_cond_step, (xs, 1.0), (0, None), n=5)
    check_vmap(lax_while_halve, (np.array([0.5, 3.0, 40.0]),), n=3)
    check_vmap(lax_fori_poly, (r(4), 3), (0, None), n=4)
    check_vmap(lax_scan_cumsum, (r(3, 4),), n=3)
    check_vmap(lax_switch_act, (np.array([0, 2, 1, 5]), r(4, 2)), (0, 0), n=4,
               jax_fn=lambda k, x: jax.lax.switch(k, [jnp.tanh, jnp.sin, lambda v: v * v], x))


# ---------------------------------------------------------------------------------------------------------------
# 4. a batched value where a static one is needed
# ---------------------------------------------------------------------------------------------------------------

def zeros_of(x, n):
    return np.zeros(n) + x


def ramp(x, n):
    return np.arange(n) * x


SCALES = [0.5, 1.0, 2.0]


def scale_by(x, k):
    return x * SCALES[k]


def collect_steps(x, n):
    out = []
    for i in range(n):
        out.append(x * i)
    return sum(out)


def make_picker(levels):
    def pick(x, k):
        return x + levels[k]
    return pick


@pytest.mark.parametrize("fn, bad", [(zeros_of, "n"), (ramp, "n"), (scale_by, "k"),
                                     (make_picker((1.0, -1.0, 3.0)), "k"), (collect_steps, "n")])
def test_batched_value_where_static_needed_names_the_argument(fn: Callable[..., Any], bad: str) -> None:
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.vmap(fn)(r(3), np.array([1, 2, 0]))
    msg = str(e.value)
    assert f"`{bad}`" in msg and "in_axes" in msg and "None" in msg, msg
    assert "test_vmap_audit.py" in msg, msg  # at the user's line
    # with in_axes=None for it, it runs
    got = srcjax.vmap(fn, in_axes=(0, None))(r(3), 2)
    assert np.asarray(got).shape[0] == 3


# ---------------------------------------------------------------------------------------------------------------
# 5. source and CLI
# ---------------------------------------------------------------------------------------------------------------

def test_source_of_a_vmap_is_readable_numpy() -> None:
    text = srcjax.source(srcjax.vmap(affine, in_axes=(None, None, 0)))
    assert "def affine_vmap" in text, text
    assert "import jax" not in text
    w, b, xs = r(2, 3), r(2), r(4, 3)
    ns: dict[str, Any] = {}
    exec(compile(text, "<vmap source>", "exec"), vars(srcjax.batched).copy() | {"np": np, "srcjax": srcjax}, ns)
    fn = next(v for k, v in ns.items() if k == "affine_vmap")
    agree(fn(w, b, xs), xs @ w.T + b, what="generated source under NumPy")


def test_cli_vmap_prints_batched_source_and_hlo(tmp_path: Any) -> None:
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent("""
        import numpy as np

        def predict(x: "f32[3]", w: "f32[3, 2]"):
            return np.tanh(x @ w)
    """))
    env = dict(os.environ)
    cmd = [sys.executable, "-m", "srcjax", f"{path}::predict", "--vmap", "--in-axes", "0,None"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "def predict_vmap" in out.stdout, out.stdout
    out = subprocess.run([*cmd, "--emit", "hlo", "--arg", "x=f32[8,3]"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "func.func" in out.stdout and "tensor<8x2xf32>" in out.stdout, out.stdout


# ---------------------------------------------------------------------------------------------------------------
# 6. dtypes
# ---------------------------------------------------------------------------------------------------------------

def mixed_arith(x, s):
    return x * s + 1


def count_pos(x):
    return np.sum(x > 0), np.any(x > 1.0)


def masked_mean(x, mask):
    return np.sum(np.where(mask, x, 0)) / np.maximum(np.sum(mask), 1)


def rotate(z, theta):
    return z * np.exp(1j * theta)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_dtypes_follow_numpy(dtype: Any) -> None:
    xs = (r(4, 3) * 3).astype(dtype)
    check_vmap(mixed_arith, (xs, 2), (0, None), n=4, use_jax=False)
    check_vmap(mixed_arith, (xs, 0.5), (0, None), n=4, use_jax=False)
    check_vmap(mixed_arith, (xs, np.arange(4).astype(dtype)), (0, 0), n=4, use_jax=False)
    check_vmap(count_pos, (xs,), n=4, use_jax=False)
    mask = r(4, 3) > 0
    check_vmap(masked_mean, (xs, mask), n=4, use_jax=False)


def test_complex64_and_bool_inputs() -> None:
    z = (r(4, 3) + 1j * r(4, 3)).astype(np.complex64)
    th = r(4).astype(np.float32)
    check_vmap(rotate, (z, th), (0, 0), n=4, rtol=1e-5, use_jax=False)
    check_vmap(rotate, (z, 0.3), (0, None), n=4, rtol=1e-5, use_jax=False)
    m = r(4, 3) > 0
    check_vmap(lambda b: np.logical_not(b) & b[::-1], (m,), n=4, use_jax=False)


# ---------------------------------------------------------------------------------------------------------------
# 7. more programs in users' styles, one check each (session 45's second and third rounds)
# ---------------------------------------------------------------------------------------------------------------

def kw_model(x, w, b):
    return np.tanh(x @ w) + b


def nested_out(x, w):
    h = x @ w
    return h, (np.sum(h), h * 2)


def const_out(x):
    return x * 2, 3.0


def inner_def(x, s):
    def sq(v):
        return v * v * s
    return sq(x) + sq(x[::-1])


def chain(x):
    if x[0] > 1:
        return x * 3
    elif x[0] > 0:
        return x - 1
    else:
        return -x


def early(x):
    for i in range(x.shape[0]):
        if x[i] < 0:
            return i, x[i]
    return -1, 0.0


def while_break(x):
    k = 0
    s = 0.0
    while k < 10:
        s = s + x[k % x.shape[0]]
        if s > 2.0:
            break
        k += 1
    return s, k


def while_continue(x):
    i = 0
    s = 0.0
    while i < x.shape[0]:
        i += 1
        if x[i - 1] < 0:
            continue
        s = s + x[i - 1]
    return s


def set2d(x, i, j, v):
    y = x.copy()
    y[i, j] = v
    return y


def mask_copy(x, o):
    y = x.copy()
    m = o > x
    y[m] = o[m]
    return y


def scan_rev(xs, c0):
    def step(c, v):
        c = 0.5 * c + v
        return c, (c, v * c)
    return srcjax.lax.scan(step, c0, xs, reverse=True)


def fori_batched_hi(x, n):
    return srcjax.lax.fori_loop(0, n, lambda i, acc: acc + x * i, np.zeros_like(x))


def cond_tuple(p, a, b):
    return srcjax.lax.cond(p, lambda ab: (ab[0] + ab[1], ab[0]), lambda ab: (ab[0] - ab[1], ab[1]), (a, b))


def intdiv(x, d):
    return x // d, x % d, x / d


def uint_ops(x):
    return x + 250, x * 2


class Model:
    def __init__(self, w):
        self.w = w

    def apply(self, x):
        return np.tanh(x @ self.w)


MORE: dict[str, Callable[[], None]] = {
    "keyword_argument_mapped": lambda: agree(
        srcjax.vmap(kw_model, in_axes=(0, None))(X43, W32, b=B42),
        jax.vmap(jax_twin(kw_model), in_axes=(0, None))(X43, W32, b=B42), what="kw"),
    "nested_out_axes": lambda: agree(
        srcjax.vmap(nested_out, in_axes=(0, None), out_axes=(0, (0, 1)))(X43, W32),
        jax.vmap(jax_twin(nested_out), in_axes=(0, None), out_axes=(0, (0, 1)))(X43, W32), what="nested"),
    "constant_output_broadcast": lambda: check_vmap(const_out, (r(4),), n=4),
    "nested_def": lambda: check_vmap(inner_def, (X43, 2.0), (0, None), n=4),
    "if_elif_return": lambda: check_vmap(chain, (r(6, 3) * 1.5,), n=6, use_jax=False),
    "return_in_loop": lambda: check_vmap(early, (r(6, 4),), n=6, use_jax=False),
    "while_break": lambda: check_vmap(while_break, (np.abs(r(5, 3)),), n=5, use_jax=False),
    "while_continue": lambda: check_vmap(while_continue, (r(4, 5),), n=4, use_jax=False),
    "set_2d_batched_indices": lambda: check_vmap(
        set2d, (r(4, 3, 3), np.array([0, 1, 2, 2]), np.array([2, 2, 0, 1]), r(4)), n=4,
        jax_fn=lambda x, i, j, v: x.at[i, j].set(v)),
    "mask_copy_shared": lambda: check_vmap(mask_copy, (r(4, 5), r(5)), (0, None), n=4, use_jax=False),
    "scan_reverse_shared_init": lambda: check_vmap(scan_rev, (r(5, 3), 0.5), (1, None), n=3),
    "fori_mapped_bound": lambda: check_vmap(fori_batched_hi, (r(4), np.array([0, 1, 3, 2])), n=4),
    "cond_tuple_operands": lambda: check_vmap(cond_tuple, (np.array([True, False, True]), r(3, 2), r(2)),
                                              (0, 0, None), n=3),
    "int32_floor_div_mod": lambda: check_vmap(intdiv, (IX, np.array([3, -2], dtype=np.int32)), (0, 0), n=2,
                                              use_jax=False),
    "uint8_wraps": lambda: check_vmap(uint_ops, (np.array([[1, 10], [200, 3]], dtype=np.uint8),), n=2,
                                      use_jax=False),
    "bound_method": lambda: agree(srcjax.vmap(Model(W32).apply)(X43), np.tanh(X43 @ W32), what="method"),
    "jvp_of_vmap_grad": lambda: agree(
        srcjax.jvp(srcjax.vmap(srcjax.grad(module_helper_loss), in_axes=(None, 0)), (W32, X43), (W32, X43)),
        jax.jvp(jax.vmap(jax.grad(lambda w, x: jnp.sum(jnp.sin(x @ w) ** 2)), in_axes=(None, 0)),
                (W32, X43), (W32, X43)), what="jvp(vmap(grad))"),
}
X43, W32, B42 = r(4, 3), r(3, 2), r(4, 2)
IX = np.array([[7, -7, 5], [9, 2, -3]], dtype=np.int32)


def module_helper_loss(w, x):
    return np.sum(np.sin(x @ w) ** 2)


@pytest.mark.parametrize("name", list(MORE))
def test_more_programs(name: str) -> None:
    MORE[name]()


# ---------------------------------------------------------------------------------------------------------------
# 8. what jax runs and srcjax refuses (found by this audit; not vmap's own: jit refuses them too)
# ---------------------------------------------------------------------------------------------------------------

class Body(NamedTuple):
    pos: Any
    vel: Any

    @property
    def energy(self):
        return np.sum(self.vel ** 2)


def weighted_by_energy(b):
    return b.pos * b.energy


def lambda_with_default(x):
    f = lambda v, k=3: v ** k  # noqa: E731
    return f(x)


def test_property_of_a_namedtuple_argument() -> None:
    b = Body(r(3, 2), r(3, 2))
    agree(srcjax.vmap(weighted_by_energy)(b), loop(weighted_by_energy, (b,), Body(0, 0), 3), what="property")


def test_nested_lambda_with_a_default() -> None:
    check_vmap(lambda_with_default, (r(3, 2),), n=3)


# ---------------------------------------------------------------------------------------------------------------
# 9. random in_axes / out_axes / shapes / dtypes (thorough tier; one seed in the default tier)
# ---------------------------------------------------------------------------------------------------------------

def rnd_blend(a, b):
    return np.tanh(a) * b + np.sum(a) * 0.5


def rnd_norm(a, b):
    return (a - np.mean(a)) / (np.std(b) + 1.0)


def rnd_pick(a, b):
    return np.where(a > b, a - b, b * 2), np.max(a * b)


RANDOM_PROGRAMS = [rnd_blend, rnd_norm, rnd_pick]


def _random_case(seed: int) -> None:
    rng = np.random.default_rng(seed)
    fn = RANDOM_PROGRAMS[seed % len(RANDOM_PROGRAMS)]
    dtype = [np.float64, np.float32][int(rng.integers(2))]
    shape = tuple(int(d) for d in rng.integers(1, 4, size=int(rng.integers(1, 3))))
    n = int(rng.integers(1, 4))
    args, axes = [], []
    mapped_any = False
    for k in range(2):
        if k == 1 and not mapped_any or rng.random() < 0.7:
            ax = int(rng.integers(-len(shape) - 1, len(shape) + 1))
            full = list(shape)
            full.insert(ax if ax >= 0 else len(shape) + 1 + ax, n)
            args.append(rng.standard_normal(full).astype(dtype))
            axes.append(ax)
            mapped_any = True
        else:
            args.append(rng.standard_normal(shape).astype(dtype))
            axes.append(None)
    out_ndim = len(shape) + 1
    out_axis = int(rng.integers(-out_ndim, out_ndim)) if fn is not rnd_pick else 0
    check_vmap(fn, tuple(args), tuple(axes), out_axis, n=n, rtol=1e-4 if dtype == np.float32 else 1e-9)


def test_random_axes_default_seed() -> None:
    _random_case(3)


@pytest.mark.parametrize("seed", tiers.thorough_cases(range(100, 160)))
def test_random_axes_thorough(seed: int) -> None:
    _random_case(seed)
