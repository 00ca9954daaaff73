"""Collectives over a vmap's ``axis_name`` (``srcjax.lax.psum``, ``pmean``, ``pmax``, ``pmin``,
``all_gather``, ``axis_index``) against ``jax.vmap(..., axis_name=...)`` and a Python loop over
examples; nested names, in_axes/out_axes, derivatives both ways round, the unbound-name errors, and
the batched source."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from srcjax import lax
from tests.twins import JAX

jax.config.update("jax_enable_x64", True)
rng = np.random.default_rng(0)
X = rng.normal(size=(4, 3))
Y = rng.normal(size=(4, 5, 3))


def check(fn: Any, fj: Any, *args: Any, loop: Any = None, **kw: Any) -> None:
    """``srcjax.vmap(fn)`` compiled and as NumPy source, against ``jax.vmap(fj)`` (and ``loop``)."""
    v = srcjax.vmap(fn, **kw)
    got = np.asarray(v(*args))
    want = np.asarray(JAX.vmap(fj, **kw)(*args))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(srcjax.numpy_function(v)(*args), want, rtol=1e-12, atol=1e-12)
    if loop is not None:
        np.testing.assert_allclose(got, loop, rtol=1e-12, atol=1e-12)


REDUCTIONS = [("psum", np.sum), ("pmean", np.mean), ("pmax", np.max), ("pmin", np.min)]


@pytest.mark.parametrize("name,np_fn", REDUCTIONS)
def test_reduction(name: str, np_fn: Any) -> None:
    op, op_j = getattr(lax, name), getattr(jax.lax, name)

    def f(x):  # type: ignore[no-untyped-def]
        return x * op(x, "i")

    def fj(x):  # type: ignore[no-untyped-def]
        return x * op_j(x, "i")

    loop = np.stack([X[k] * np_fn(X, axis=0) for k in range(len(X))])
    check(f, fj, X, loop=loop, axis_name="i")


def test_axis_index() -> None:
    def f(x):  # type: ignore[no-untyped-def]
        return x + lax.axis_index("i")

    def fj(x):  # type: ignore[no-untyped-def]
        return x + jax.lax.axis_index("i")

    check(f, fj, X, loop=np.stack([X[k] + k for k in range(4)]), axis_name="i")


@pytest.mark.parametrize("axis,tiled", [(0, False), (1, False), (0, True), (1, True)])
def test_all_gather(axis: int, tiled: bool) -> None:
    def f(x):  # type: ignore[no-untyped-def]
        return lax.all_gather(x, "i", axis=axis, tiled=tiled) * 2.0

    def fj(x):  # type: ignore[no-untyped-def]
        return jax.lax.all_gather(x, "i", axis=axis, tiled=tiled) * 2.0

    check(f, fj, Y, axis_name="i")


def test_unbatched_operand() -> None:
    """JAX's semantics: psum of a value every example shares is ``n * x``; all_gather repeats it."""
    w = rng.normal(size=3)

    def f(x, w):  # type: ignore[no-untyped-def]
        return x + lax.psum(w, "i") + lax.pmean(w, "i") + lax.all_gather(w, "i")[1]

    def fj(x, w):  # type: ignore[no-untyped-def]
        return x + jax.lax.psum(w, "i") + jax.lax.pmean(w, "i") + jax.lax.all_gather(w, "i")[1]

    check(f, fj, X, w, loop=X + 4 * w + w + w, in_axes=(0, None), axis_name="i")


def test_in_axes_out_axes() -> None:
    def f(x):  # type: ignore[no-untyped-def]
        return x - lax.pmean(x, "b")

    def fj(x):  # type: ignore[no-untyped-def]
        return x - jax.lax.pmean(x, "b")

    check(f, fj, Y, in_axes=1, out_axes=2, axis_name="b")

    def g(x):  # type: ignore[no-untyped-def]
        return lax.psum(x, "b")

    np.testing.assert_allclose(srcjax.vmap(g, out_axes=None, axis_name="b")(X), X.sum(0))


def test_nested_names() -> None:
    def f(x):  # type: ignore[no-untyped-def]
        return (x - 2 * lax.psum(x, "i") + lax.pmax(x, "j") + lax.axis_index("i") + 10 * lax.axis_index("j")
                + lax.psum(x, ("i", "j")) + lax.all_gather(x, "i", axis=1)[:, 0])

    def fj(x):  # type: ignore[no-untyped-def]
        return (x - 2 * jax.lax.psum(x, "i") + jax.lax.pmax(x, "j") + jax.lax.axis_index("i")
                + 10 * jax.lax.axis_index("j") + jax.lax.psum(x, ("i", "j")) + jax.lax.all_gather(x, "i", axis=1)[:, 0])

    got = srcjax.vmap(srcjax.vmap(f, axis_name="j"), axis_name="i")(Y)
    want = JAX.vmap(jax.vmap(fj, axis_name="j"), axis_name="i")(Y)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_helper_function() -> None:
    def centered(v):  # type: ignore[no-untyped-def]
        return v - lax.pmean(v, "i")

    def f(x):  # type: ignore[no-untyped-def]
        return centered(x) ** 2

    check(f, lambda x: (x - jax.lax.pmean(x, "i")) ** 2, X, loop=(X - X.mean(0)) ** 2, axis_name="i")


def test_vmap_of_grad() -> None:
    """psum's JVP is psum of the tangent and its transpose is psum (JAX's rule)."""
    def f(x):  # type: ignore[no-untyped-def]
        return np.sum(np.sin(x) * lax.psum(x, "i")) + np.sum(lax.pmean(x * x, "i"))

    def fj(x):  # type: ignore[no-untyped-def]
        return jnp.sum(jnp.sin(x) * jax.lax.psum(x, "i")) + jnp.sum(jax.lax.pmean(x * x, "i"))

    got = srcjax.vmap(srcjax.grad(f), axis_name="i")(X)
    np.testing.assert_allclose(got, JAX.vmap(jax.grad(fj), axis_name="i")(X), rtol=1e-12)


def test_grad_of_vmap() -> None:
    def f(x):  # type: ignore[no-untyped-def]
        return np.sum(np.sin(x) * lax.psum(x, "i") / lax.pmean(x * x, "i"))

    def fj(x):  # type: ignore[no-untyped-def]
        return jnp.sum(jnp.sin(x) * jax.lax.psum(x, "i") / jax.lax.pmean(x * x, "i"))

    def h(x):  # type: ignore[no-untyped-def]
        return np.sum(srcjax.vmap(f, axis_name="i")(x))

    got = srcjax.grad(h)(X)
    np.testing.assert_allclose(got, JAX.grad(lambda x: jnp.sum(jax.vmap(fj, axis_name="i")(x)))(X), rtol=1e-12)


def f_psum(x):  # type: ignore[no-untyped-def]
    return x / lax.psum(x, "i")


def test_eager_call_is_unbound() -> None:
    with pytest.raises(srcjax.UnboundAxisNameError, match="unbound axis name") as e:
        lax.psum(X, "i")
    assert e.value.span is not None and e.value.span.filename == __file__ and e.value.hint


@pytest.mark.parametrize("how", ["jit", "vmap without a name", "vmap of another name"])
def test_compiled_without_binding_is_unbound(how: str) -> None:
    run = {"jit": srcjax.jit(f_psum), "vmap without a name": srcjax.vmap(f_psum),
           "vmap of another name": srcjax.vmap(f_psum, axis_name="j")}[how]
    with pytest.raises(srcjax.UnboundAxisNameError, match="unbound axis name: psum over 'i'") as e:
        run(X)
    assert isinstance(e.value, srcjax.TranspileError)
    assert "lax.psum(x, \"i\")" in str(e.value)  # located at the call
    assert "axis_name='i'" in (e.value.hint or "")


def test_source_is_readable() -> None:
    text = srcjax.source(srcjax.vmap(f_psum, axis_name="i"))
    assert "np.sum(x, axis=0)" in text and "psum" in text
    assert "srcjax.lax.psum" not in text


AXIS = "batch"


def test_axis_name_keyword_and_module_constant() -> None:
    def f(x):  # type: ignore[no-untyped-def]
        return lax.psum(x, axis_name=AXIS) - lax.pmin(x, AXIS)

    check(f, lambda x: jax.lax.psum(x, axis_name=AXIS) - jax.lax.pmin(x, AXIS), X,
          loop=np.broadcast_to(X.sum(0) - X.min(0), X.shape), axis_name=AXIS)


def test_axis_name_must_be_a_string() -> None:
    with pytest.raises(srcjax.ArgumentError, match="axis_name must be a string"):
        srcjax.vmap(f_psum, axis_name=1)


def _offset():  # type: ignore[no-untyped-def]
    return lax.axis_index("i")


def test_helper_without_a_batched_argument_is_refused() -> None:
    def f(x):  # type: ignore[no-untyped-def]
        return x + _offset()

    with pytest.raises(srcjax.TranspileError, match="_offset reaches a collective over 'i'") as e:
        srcjax.vmap(f, axis_name="i")(np.ones(3))  # (written at the first call, where jax traces it)
    assert "_offset()" in str(e.value)


def test_grad_alone_is_unbound() -> None:
    def f(x):  # type: ignore[no-untyped-def]
        return np.sum(lax.psum(x, "i") * x)

    with pytest.raises(srcjax.UnboundAxisNameError, match="psum over 'i'"):
        srcjax.grad(f)(X[0])


def test_inside_cond_and_jacfwd() -> None:
    def f(x):  # type: ignore[no-untyped-def]
        return srcjax.lax.cond(np.sum(x) > 0, lambda v: v - lax.pmean(v, "i"), lambda v: v + lax.psum(v, "i"), x)

    def fj(x):  # type: ignore[no-untyped-def]
        return jax.lax.cond(jnp.sum(x) > 0, lambda v: v - jax.lax.pmean(v, "i"), lambda v: v + jax.lax.psum(v, "i"), x)

    check(f, fj, X, axis_name="i")

    def g(x):  # type: ignore[no-untyped-def]
        return lax.psum(x, "i") * np.sin(x)

    got = srcjax.vmap(srcjax.jacfwd(g), axis_name="i")(X)
    want = JAX.vmap(jax.jacfwd(lambda x: jax.lax.psum(x, "i") * jnp.sin(x)), axis_name="i")(X)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("d,tiled", [(0, False), (1, False), (0, True), (1, True)])
def test_psum_scatter_and_all_gather_derivative(d: int, tiled: bool) -> None:
    """psum_scatter keeps each example's slice of the psum; it and all_gather transpose each other."""
    z = rng.normal(size=(4, 8, 8, 3) if tiled else (4, 4, 4, 3))

    def g(x):  # type: ignore[no-untyped-def]
        return lax.psum_scatter(x, "i", scatter_dimension=d, tiled=tiled)

    check(g, lambda x: jax.lax.psum_scatter(x, "i", scatter_dimension=d, tiled=tiled), z, axis_name="i")

    def f(x):  # type: ignore[no-untyped-def]
        return np.sum(np.sin(lax.all_gather(x, "i", axis=d, tiled=tiled)) ** 2 * lax.axis_index("i"))

    def fj(x):  # type: ignore[no-untyped-def]
        return jnp.sum(jnp.sin(jax.lax.all_gather(x, "i", axis=d, tiled=tiled)) ** 2 * jax.lax.axis_index("i"))

    got = srcjax.vmap(srcjax.grad(f), axis_name="i")(Y)
    np.testing.assert_allclose(got, JAX.vmap(jax.grad(fj), axis_name="i")(Y), rtol=1e-12)


def test_nested_psum_scatter() -> None:
    def f(x):  # type: ignore[no-untyped-def]
        return lax.psum_scatter(x, "i", scatter_dimension=1) + lax.psum(x, "j")[:, 0]

    def fj(x):  # type: ignore[no-untyped-def]
        return jax.lax.psum_scatter(x, "i", scatter_dimension=1) + jax.lax.psum(x, "j")[:, 0]

    z = rng.normal(size=(4, 3, 5, 4))
    got = srcjax.vmap(srcjax.vmap(f, axis_name="j"), axis_name="i")(z)
    np.testing.assert_allclose(got, JAX.vmap(jax.vmap(fj, axis_name="j"), axis_name="i")(z), rtol=1e-12)


def test_pmax_has_no_derivative_as_in_jax() -> None:
    def f(x):  # type: ignore[no-untyped-def]
        return np.sum(lax.pmax(x, "i") * x)

    with pytest.raises(srcjax.TranspileError, match="no derivative rule for srcjax.lax.pmax") as e:
        srcjax.vmap(srcjax.grad(f), axis_name="i")(X)
    assert "all_gather" in (e.value.hint or "")

    def g(x):  # type: ignore[no-untyped-def]
        return np.sum(np.max(lax.all_gather(x, "i"), axis=0) * x)

    def gj(x):  # type: ignore[no-untyped-def]
        return jnp.sum(jnp.max(jax.lax.all_gather(x, "i"), axis=0) * x)

    np.testing.assert_allclose(srcjax.vmap(srcjax.grad(g), axis_name="i")(X),
                               JAX.vmap(jax.grad(gj), axis_name="i")(X), rtol=1e-12)


def test_vmap_with_a_name_inside_a_compiled_function() -> None:
    def outer(xs):  # type: ignore[no-untyped-def]
        return srcjax.vmap(f_psum, axis_name="i")(xs) * 2

    np.testing.assert_allclose(srcjax.jit(outer)(X), 2 * X / X.sum(0), rtol=1e-12)

    def g(p):  # type: ignore[no-untyped-def]
        return lax.pmean(p["a"], "i") + p["b"]

    got = srcjax.vmap(g, in_axes=({"a": 0, "b": None},), axis_name="i")({"a": X, "b": np.ones(3)})
    np.testing.assert_allclose(got, np.broadcast_to(X.mean(0) + 1, X.shape), rtol=1e-12)


CYCLE = ((0, 1), (1, 2), (2, 3), (3, 0))


def test_ppermute_cycle() -> None:
    """ppermute under vmap: a static gather along the batch axis (jax.vmap needs a whole permutation)."""
    def f(x):  # type: ignore[no-untyped-def]
        return lax.ppermute(x, "i", ((0, 1), (1, 2), (2, 3), (3, 0))) * 2 + x

    def fj(x):  # type: ignore[no-untyped-def]
        return jax.lax.ppermute(x, "i", CYCLE) * 2 + x

    check(f, fj, X, loop=np.stack([X[(k - 1) % 4] * 2 + X[k] for k in range(4)]), axis_name="i")


@pytest.mark.parametrize("perm", [[(0, 2)], [], [(3, 0), (0, 3)], [(1, 1), (2, 0)]])
def test_ppermute_partial_against_a_loop(perm: list[tuple[int, int]]) -> None:
    """Examples no pair sends to get zeros (JAX's semantics), also for an unbatched operand."""
    def f(x, w):  # type: ignore[no-untyped-def]
        return lax.ppermute(x, "i", perm) + lax.ppermute(w, "i", perm)

    got = srcjax.vmap(f, in_axes=(0, None), axis_name="i")(X, X[0])
    want = np.zeros_like(X)
    for s, d in perm:
        want[d] = X[s] + X[0]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(srcjax.numpy_function(srcjax.vmap(f, in_axes=(0, None), axis_name="i"))(X, X[0]),
                               want, rtol=1e-12)


def test_ppermute_derivatives() -> None:
    """JVP: the tangent permuted alike; transpose: permuted by the pairs turned round (JAX's rules)."""
    def f(x):  # type: ignore[no-untyped-def]
        return np.sum(np.sin(lax.ppermute(x, "i", ((0, 1), (1, 2), (2, 3), (3, 0)))) * x)

    def fj(x):  # type: ignore[no-untyped-def]
        return jnp.sum(jnp.sin(jax.lax.ppermute(x, "i", CYCLE)) * x)

    got = srcjax.vmap(srcjax.grad(f), axis_name="i")(X)
    np.testing.assert_allclose(got, JAX.vmap(jax.grad(fj), axis_name="i")(X), rtol=1e-12)
    t = rng.normal(size=X.shape)
    _, tan = srcjax.jvp(srcjax.vmap(f, axis_name="i"), (X,), (t,))
    _, tan_j = JAX.jvp(jax.vmap(fj, axis_name="i"), (X,), (t,))
    np.testing.assert_allclose(tan, tan_j, rtol=1e-12)
    text = srcjax.source(srcjax.vmap(srcjax.grad(f), axis_name="i"))
    assert "batch_ppermute(x, ((0, 1), (1, 2), (2, 3), (3, 0)))" in text
    assert "((1, 0), (2, 1), (3, 2), (0, 3))" in text


def test_ppermute_errors() -> None:
    with pytest.raises(srcjax.TranspileError, match="has a destination twice"):
        srcjax.vmap(lambda x: lax.ppermute(x, "i", [(0, 1), (2, 1)]), axis_name="i")(X)
    with pytest.raises(srcjax.UnboundAxisNameError, match="ppermute over 'j'"):
        srcjax.vmap(lambda x: lax.ppermute(x, "j", [(0, 1)]), axis_name="i")(X)
