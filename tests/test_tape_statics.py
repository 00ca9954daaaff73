"""A derivative's tape batched as a whole by a second ``vmap`` keeps its static values unbatched (issue #15).

``vmap`` of a ``vjp``/``jacrev``/``hessian`` whose tape vmap cannot follow push by push (a helper called
twice with different static arguments, a static ``if`` whose branches push different counts) batches the
tape as a whole; the flags, integers and unmapped weights saved there stay as they were pushed, slot by
slot (srcjax/transforms/batch_tapes.py). Each case is checked against jax and against a Python loop over
the examples (a value wrongly kept unbatched would give every example the first one's answer).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, note, reject, settings
from hypothesis import strategies as st

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402

import srcjax  # noqa: E402
from srcjax import autodiff  # noqa: E402

from . import written  # noqa: E402
from .corpus_programs import mlp_two_layers  # noqa: E402
from .twins import JAX  # noqa: E402
from .unseen_oracle import agree  # noqa: E402

jax.config.update("jax_enable_x64", True)
RNG = np.random.default_rng(1515)


def _loop(fn: Any, in_axes: tuple[Any, ...], *args: Any) -> Any:
    """``vmap(fn, in_axes)`` as a Python loop over the examples (the oracle a wrong unbatched value fails)."""
    n = next(np.shape(a)[0] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [fn(*(a if ax is None else a[k] for a, ax in zip(args, in_axes))) for k in range(n)]
    return jax.tree_util.tree_map(lambda *o: np.stack(o), *outs)


# -- 1: a helper called twice with different static arguments ---------------------------------------

def _jgelu(x: Any) -> Any:
    return 0.5 * x * (1.0 + jnp.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def _jmlp(x: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
    return _jgelu(x @ w1 + b1) @ w2 + b2


def _mlp_args(batched: tuple[bool, ...]) -> tuple[np.ndarray, ...]:
    shapes = [(6, 4), (4, 8), (8,), (8, 3), (3,), (6, 3)]
    return tuple(RNG.standard_normal(((3,) + s) if b else s) for s, b in zip(shapes, batched))


@pytest.mark.parametrize("in_axes", [(0, None, None, None, None, 0), (None, 0, None, None, None, 0),
                                     (0, 0, 0, 0, 0, 0), (None, None, None, 0, None, None)])
def test_vmap_of_vjp_of_a_helper_called_with_two_static_arguments(in_axes: tuple[Any, ...]) -> None:
    """``dense(..., activation="gelu")`` then ``"none"``: "a list holding batched and unbatched values is
    used as a whole" before."""
    args = _mlp_args(tuple(a is not None for a in in_axes))
    ours = srcjax.vmap(autodiff._wrap(mlp_two_layers, "vjp", (0,), False), in_axes=in_axes)(*args)

    def theirs(x: Any, w1: Any, b1: Any, w2: Any, b2: Any, ct: Any) -> Any:
        out, f = jax.vjp(_jmlp, x, w1, b1, w2, b2)
        return out, (f(ct)[0],)
    agree(ours, JAX.vmap(theirs, in_axes=in_axes)(*args), rtol=1e-9, what=f"vmap(vjp) {in_axes}")
    one = autodiff._wrap(mlp_two_layers, "vjp", (0,), False)
    agree(ours, _loop(one, in_axes, *args), rtol=1e-9, what=f"loop {in_axes}")


def test_the_static_values_stay_unbatched_on_the_tape() -> None:
    """The flags (``activation == "gelu"``) and the unmapped weight are pushed as they are: no
    ``batch_broadcast`` of them, and the backward half's ``if`` on the flag is a plain ``if``."""
    text = srcjax.source(srcjax.vmap(autodiff._wrap(mlp_two_layers, "vjp", (0,), False),
                                     in_axes=(0, None, None, None, None, 0)))
    assert "batch_broadcast(w" not in text and "batch_broadcast(eq" not in text, text
    assert "batch_select(eq" not in text and "taken(" not in text, text


# -- 2: np.diff with prepend= / append= (srcjax's diff_operand saves the join's axis) -----------------

def diff_append(x):
    return np.sin(np.diff(x, append=x[:1]))


def diff_prepend_sum(x):
    return np.sum(np.sin(np.diff(x, prepend=np.zeros(1))) ** 2)


def diff_both(x):
    return np.tanh(np.diff(x, prepend=x[-1:], append=np.ones(1)) * x[0])


TWINS = {
    diff_append: lambda x: jnp.sin(jnp.diff(x, append=x[:1])),
    diff_prepend_sum: lambda x: jnp.sum(jnp.sin(jnp.diff(x, prepend=jnp.zeros(1))) ** 2),
    diff_both: lambda x: jnp.tanh(jnp.diff(x, prepend=x[-1:], append=jnp.ones(1)) * x[0]),
}


@pytest.mark.parametrize("batch", [3, 5])
@pytest.mark.parametrize("f", [diff_append, diff_both, diff_prepend_sum], ids=lambda f: f.__name__)
def test_vmap_of_jacrev_of_diff_with_prepend_or_append(f: Any, batch: int) -> None:
    """"cannot batch '[sh[ax] for sh in shapes]'" before: the join's axis was broadcast with the tape. (A batch
    of 5 over 5 elements: the cotangents ``tree_add`` sums, one batched over the basis too, would broadcast
    right-aligned across the batch axis without an error: batch_tree_add.)"""
    x = RNG.standard_normal((batch, 5))
    got = srcjax.vmap(srcjax.jacrev(f))(x)
    agree(got, JAX.vmap(jax.jacrev(TWINS[f]))(x), rtol=1e-9, what="vmap(jacrev)")
    agree(got, _loop(srcjax.jacrev(f), (0,), x), rtol=1e-9, what="loop")


def diff_ends_sum(x):
    return np.sum(np.diff(x, prepend=x[:1] * 2.0) ** 2) + np.sum(np.diff(x, append=0.5) ** 3)


def _jdiff_ends_sum(x: Any) -> Any:
    return jnp.sum(jnp.diff(x, prepend=x[:1] * 2.0) ** 2) + jnp.sum(jnp.diff(x, append=0.5) ** 3)


@pytest.mark.parametrize("how", ["grad", "jvp", "jacfwd", "jacrev", "hessian", "vmap_grad", "vmap_jacfwd",
                                 "vmap_jacrev", "vmap_hessian", "vmap_jvp"])
def test_every_transformation_of_diff_with_prepend_and_append(how: str) -> None:
    """hessian and vmap(hessian) were refused: "cannot differentiate through `[sh[ax] for sh in shapes]`" in
    srcjax's own seq_piece (the join's axis, popped from the tape with the arrays, read as active), then
    "cannot batch '[sh[ax] for sh in shapes]'" (jacfwd's `batch_rows(_tape_dot.pop())`, a name bound to a
    pop once written in ANF, turned the tape-slot rule off)."""
    x = RNG.standard_normal(5)
    xs = RNG.standard_normal((3, 5))
    one = {"grad": (srcjax.grad, jax.grad), "jacfwd": (srcjax.jacfwd, jax.jacfwd),
           "jacrev": (srcjax.jacrev, jax.jacrev), "hessian": (srcjax.hessian, jax.hessian)}
    base = how.removeprefix("vmap_")
    if base == "jvp":
        got_f: Any = lambda v: srcjax.jvp(diff_ends_sum, (v,), (v * 0.5,))[1]  # noqa: E731
        want_f: Any = lambda v: jax.jvp(_jdiff_ends_sum, (v,), (v * 0.5,))[1]  # noqa: E731
    else:
        got_f, want_f = one[base][0](diff_ends_sum), one[base][1](_jdiff_ends_sum)
    if how.startswith("vmap_"):
        agree(srcjax.vmap(got_f)(xs), JAX.vmap(want_f)(xs), rtol=1e-9, what=how)
    else:
        agree(got_f(x), want_f(x), rtol=1e-9, what=how)


# -- random programs: a helper called with random static arguments, through vmap(vjp/jacrev/hessian) ----

HELPER = """
def h(x, w, mode, k):
    y = x * w
    if mode == "sin":
        y = np.sin(y) + x
    elif mode == "tanh":
        y = np.tanh(y) * w
    for i in range(k):
        y = y * 0.9 + np.cos(x) * (i + 1)
    return y
"""

ENDS = {  # the last step (some through np.diff with prepend=/append=, srcjax's diff_operand)
    "plain": "b",
    "diff_append": "np.diff(b, append=b[:1]) * x",
    "diff_prepend": "np.diff(b, prepend=np.zeros(1)) + w",
}


@st.composite
def tape_programs(draw: Any) -> tuple[str, str, str, tuple[Any, Any]]:
    """(module text, how, end, in_axes): ``f`` calls ``h`` twice with random static arguments."""
    calls = [(draw(st.sampled_from(["sin", "tanh", "none"])), draw(st.integers(0, 2))) for _ in range(2)]
    end = draw(st.sampled_from(sorted(ENDS)))
    how = draw(st.sampled_from(["vjp", "jacrev", "hessian"]))
    in_axes = draw(st.sampled_from([(0, None), (None, 0), (0, 0)]))
    out = f"np.sum(np.sin({ENDS[end]}))" if how == "hessian" else ENDS[end]
    text = "import numpy as np\n" + HELPER + f"""

def f(x, w):
    a = h(x, w, "{calls[0][0]}", {calls[0][1]})
    b = h(a, w, "{calls[1][0]}", {calls[1][1]})
    return {out}
"""
    return text, how, end, in_axes


@settings(max_examples=written.example_count(2, scale=20), deadline=None, derandomize=not written.THOROUGH,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(prog=tape_programs(), seed=st.integers(0, 2 ** 16))
def test_random_helpers_with_static_arguments_under_vmap(tmp_path: Any, prog: Any, seed: int) -> None:
    text, how, end, in_axes = prog
    note(text)
    note(f"{how}, in_axes={in_axes}")
    f, jf = written.numpy_and_jax(tmp_path, text, "tape_statics")
    try:
        _check(f, jf, how, in_axes, seed)
    except srcjax.TranspileError as e:  # a located refusal, never a wrong answer (some are known on main too:
        note(f"refused: {e}")  # vmap(jacrev) of `np.cos(x) * (i + 1)` in a loop, in_axes=(0, None): "np.broadcast_to:
        reject()  # shape must be a static int, got None")


def _check(f: Any, jf: Any, how: str, in_axes: tuple[Any, Any], seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 4
    x, w = (rng.standard_normal((3, n) if ax is not None else (n,)) * 0.8 for ax in in_axes)
    if how == "vjp":
        ct = rng.standard_normal((3, n))
        axes = (*in_axes, 0)
        one = autodiff._wrap(f, "vjp", (0, 1), False)
        got = srcjax.vmap(one, in_axes=axes)(x, w, ct)

        def theirs(x: Any, w: Any, ct: Any) -> Any:
            out, back = jax.vjp(jf, x, w)
            return out, back(ct)
        want = JAX.vmap(theirs, in_axes=axes)(x, w, ct)
        loop = _loop(one, axes, x, w, ct)
    else:
        ours, jaxs = {"jacrev": (srcjax.jacrev, jax.jacrev), "hessian": (srcjax.hessian, jax.hessian)}[how]
        got = srcjax.vmap(ours(f), in_axes=in_axes)(x, w)
        want = JAX.vmap(jaxs(jf), in_axes=in_axes)(x, w)
        loop = _loop(ours(f), in_axes, x, w)
    agree(got, want, rtol=1e-9, what=f"vmap({how}) vs jax")
    agree(got, loop, rtol=1e-9, what=f"vmap({how}) vs the loop")


def _layer_norm(v: Any) -> Any:
    mu = np.mean(v, axis=-1, keepdims=True)
    return (v - mu) / np.sqrt(np.mean((v - mu) ** 2, axis=-1, keepdims=True) + 1e-5)


def _residual_when_shapes_agree(p: Any, x: Any) -> Any:
    h = x
    for layer in p["layers"]:
        z = h @ layer["w"] + layer["b"]
        h = h + np.tanh(z) if h.shape == z.shape else np.tanh(z)
    h = _layer_norm(h) if False else h
    it = 0
    while it < 3 and np.sum(h * h) < 3.0:
        h = h * 1.4 + 0.1
        it += 1
    return np.sum(h ** 3)


def test_a_static_shape_test_saved_on_a_batched_tape_stays_a_python_if() -> None:
    """``h.shape == z.shape`` is static; vmap of a hessian saves it on a tape it batches, broadcast per example,
    and reads it back with ``batch_static``: the broadcast of a static flag must stay static, or the ``if`` is
    lowered as an ``if`` on data and its other branch (``h + tanh(z)`` of (3, 4) and (3, 3)) is refused
    (test_hunt_random's thorough seed 1112: the batch size, 3, equal to the hidden width)."""
    rng = np.random.default_rng(1112)
    p = {"layers": [{"w": 0.7 * rng.standard_normal((4, 3)), "b": 0.2 * rng.standard_normal(3)},
                    {"w": 0.7 * rng.standard_normal((3, 3)), "b": 0.2 * rng.standard_normal(3)}]}
    xs = 0.3 * rng.standard_normal((3, 4))
    got = srcjax.vmap(srcjax.hessian(_residual_when_shapes_agree, argnums=1, max_iters=8), in_axes=(None, 0))(p, xs)

    def twin(p: Any, x: Any) -> Any:
        h = x
        for layer in p["layers"]:
            z = h @ layer["w"] + layer["b"]
            h = h + jnp.tanh(z) if h.shape == z.shape else jnp.tanh(z)
        h = jax.lax.fori_loop(0, 3, lambda i, h: jnp.where(jnp.sum(h * h) < 3.0, h * 1.4 + 0.1, h), h)
        return jnp.sum(h ** 3)

    agree(got, JAX.vmap(jax.hessian(twin, argnums=1), in_axes=(None, 0))(p, xs), what="vmap(hessian) vs jax")
