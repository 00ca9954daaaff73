"""``has_aux`` for vjp, jvp, jacfwd and jacrev (JAX's semantics) against jax: the derivative is of the
first of ``f``'s pair, the aux (any pytree) comes back undifferentiated; a function not returning a
pair is refused at its ``return``; a jacrev with ``has_aux`` under vmap and jit, and called inside
compiled code."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest

import srcjax
from tests.twins import JAX, jax_twin


def dict_aux(x, y):
    h = np.tanh(x) * y
    return h * 2.0, {"h": h, "s": (np.sum(y), x * 3.0)}


def tuple_aux(x, y):
    out = np.sin(x) * np.exp(y)
    return out, (out + 1.0, np.sum(x))


def not_a_pair(x, y):
    r = np.stack([x, y])
    return r


def _close(a: Any, b: Any) -> None:
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    assert ta == tb
    for u, v in zip(la, lb):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-6, atol=1e-9)


X = np.array([0.3, -1.2, 2.0])
Y = np.array([1.5, 0.2, -0.7])


@pytest.mark.parametrize("f", [dict_aux, tuple_aux])
def test_vjp_has_aux(f: Any) -> None:
    out, vjp_fn, aux = srcjax.vjp(f, X, Y, has_aux=True)
    jout, jvjp, jaux = jax.vjp(jax_twin(f), X, Y, has_aux=True)
    ct = np.array([1.0, -2.0, 0.5])
    _close((out, aux, vjp_fn(ct)), (jout, jaux, jvjp(ct)))


@pytest.mark.parametrize("f", [dict_aux, tuple_aux])
def test_jvp_has_aux(f: Any) -> None:
    t = (np.array([1.0, 0.5, -1.0]), np.array([0.0, 2.0, 1.0]))
    _close(srcjax.jvp(f, (X, Y), t, has_aux=True), jax.jvp(jax_twin(f), (X, Y), t, has_aux=True))


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
@pytest.mark.parametrize("kind", ["jacfwd", "jacrev"])
def test_jacobian_has_aux(kind: str, argnums: Any) -> None:
    got = getattr(srcjax, kind)(dict_aux, argnums, has_aux=True)(X, Y)
    _close(got, getattr(jax, kind)(jax_twin(dict_aux), argnums, has_aux=True)(X, Y))


def test_jacrev_has_aux_under_vmap_and_jit_and_inside_compiled_code() -> None:
    xs, ys = np.stack([X, X * 2.0]), np.stack([Y, -Y])
    want = JAX.vmap(jax.jacrev(jax_twin(tuple_aux), (0, 1), has_aux=True))(xs, ys)
    _close(srcjax.vmap(srcjax.jacrev(tuple_aux, (0, 1), has_aux=True))(xs, ys), want)
    _close(srcjax.jit(srcjax.jacfwd(dict_aux, has_aux=True))(X, Y),
           JAX.jacfwd(jax_twin(dict_aux), has_aux=True)(X, Y))

    @srcjax.jit
    def inside(x, y):
        j, aux = srcjax.jacrev(dict_aux, has_aux=True)(x, y)
        return j, aux["h"]

    jj, jaux = JAX.jacrev(jax_twin(dict_aux), has_aux=True)(X, Y)
    _close(inside(X, Y), (jj, jaux["h"]))


@pytest.mark.parametrize("call", [
    lambda: srcjax.vjp(not_a_pair, X, Y, has_aux=True),
    lambda: srcjax.jvp(not_a_pair, (X, Y), (X, Y), has_aux=True),
    lambda: srcjax.jacrev(not_a_pair, has_aux=True)(X, Y),
    lambda: srcjax.jacfwd(not_a_pair, 1, has_aux=True)(X, Y),
    lambda: srcjax.grad(not_a_pair, has_aux=True)(X, Y),  # (was unlocated: no file, no line)
    lambda: srcjax.value_and_grad(not_a_pair, has_aux=True)(X, Y),
    # (under vmap the pair cannot be checked: an array's [1] would be read as aux, a silent wrong answer)
    lambda: srcjax.vmap(srcjax.jacrev(not_a_pair, has_aux=True))(np.stack([X, X]), np.stack([Y, Y])),
])
def test_not_a_pair_is_refused_at_the_return(call: Any) -> None:
    with pytest.raises(srcjax.TranspileError) as info:
        call()
    e = info.value
    assert "pair" in str(e)
    assert e.span is not None and e.span.filename == __file__ and e.span.line == not_a_pair.__code__.co_firstlineno + 2


def inside_vjp(x, y):
    out, vjp_fn, aux = srcjax.vjp(tuple_aux, x, y, has_aux=True)
    gx, gy = vjp_fn(np.ones_like(out))
    return out, gx, gy, aux


def inside_vjp_expression(x, y):
    res = srcjax.vjp(dict_aux, x, y, has_aux=True)
    return res[0], res[1](res[0])[0], res[2]["h"]


def inside_jvp(x, y):
    out, t, aux = srcjax.jvp(dict_aux, (x, y), (np.ones_like(x), y), has_aux=True)
    return np.sum(out * t) + np.sum(aux["s"][1])


@pytest.mark.parametrize("f", [inside_vjp, inside_vjp_expression, inside_jvp])
def test_vjp_and_jvp_has_aux_inside_compiled_code(f: Any) -> None:
    twin = jax_twin(f, helpers=[tuple_aux, dict_aux], srcjax=jax)
    _close(srcjax.jit(f)(X, Y), twin(X, Y))
    if f is inside_jvp:  # differentiated and batched again
        _close(srcjax.grad(f)(X, Y), JAX.grad(twin)(X, Y))
        xs, ys = np.stack([X, -X]), np.stack([Y, Y * 0.5])
        _close(srcjax.vmap(f)(xs, ys), JAX.vmap(twin)(xs, ys))


def inside_not_a_pair(x, y):
    out, t, aux = srcjax.jvp(not_a_pair, (x, y), (x, y), has_aux=True)
    return out


def test_has_aux_inside_compiled_code_needs_a_literal_pair() -> None:
    with pytest.raises(srcjax.TranspileError, match="literal pair") as info:
        srcjax.jit(inside_not_a_pair)(X, Y)
    assert info.value.span is not None and info.value.span.line == not_a_pair.__code__.co_firstlineno + 2
