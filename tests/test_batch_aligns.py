"""``transforms/batch_aligns.py``: vmap's ``batch_align_b(x, y)``/``batch_align(x, y)`` calls that change nothing
(``x`` computed elementwise from ``y``, or from a value of ``y``'s rank) are written ``x``. The pass on text
(what it drops, what it keeps: a name bound again, a loop), and vmapped programs against jax with their
printed source."""

from __future__ import annotations

import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from srcjax.transforms.batch_aligns import drop_trivial_aligns

jax.config.update("jax_enable_x64", True)


def _pass(text: str) -> str:
    return drop_trivial_aligns(textwrap.dedent(text))


def test_an_elementwise_result_has_its_operands_axes():
    got = _pass("""
        def f_vmap(a, b):
            sin = np.sin(a)
            mul = batch_align_b(a, b) * batch_align_b(b, a)
            add = batch_align_b(mul, sin) + batch_align_b(sin, mul)
            sub = batch_align(add, b) - b
            return batch_align_b(a, a)
        """)
    assert "add = mul + batch_align_b(sin, mul)" in got  # (sin has a's rank, mul at least a's)
    assert "sub = add - b" in got
    assert "mul = batch_align_b(a, b) * batch_align_b(b, a)" in got  # (two parameters: ranks unknown)
    assert "return a" in got


def test_a_name_bound_again_or_in_a_loop_forgets_its_facts():
    text = """
        def f_vmap(a, b):
            c = a * 2.0
            a = batch_moveaxis(b, 1, 0)
            d = batch_align_b(c, a) + batch_align_b(a, c)
            e = np.sin(b)
            for i in range(3):
                e = batch_align_b(e, a) * batch_align_b(a, e)
            return batch_align_b(e, b)
        """
    got = _pass(text)
    assert "d = batch_align_b(c, a) + batch_align_b(a, c)" in got  # (c had the old a's rank)
    assert "e = batch_align_b(e, a) * batch_align_b(a, e)" in got  # (inside a loop: kept)
    assert "return batch_align_b(e, b)" in got  # (e bound in the loop: forgotten)
    assert _pass("def g(x):\n    return x + 1\n") == "def g(x):\n    return x + 1\n"


def binary(a, b):
    return a * b + np.sin(a) - b


def where_chain(x, y):
    m = x > 0.5
    z = np.where(m, x * y, -x)
    return z + np.tanh(z) * x


@pytest.mark.parametrize("fn, in_axes, gone", [
    (binary, (None, 0), ["batch_align(mul, sin)", "batch_align_b(add, b)"]),
    (binary, (0, 0), ["batch_align_b(mul, sin)", "batch_align_b(add, b)"]),
    (where_chain, (0, None), []),
    (where_chain, (0, 0), ["batch_align_b(batch_align_b(gt, x)"]),
])
def test_vmapped_programs_agree_with_jax_and_read_shorter(fn, in_axes, gone):
    rng = np.random.default_rng(1)
    shapes = {None: (3,), 0: (4, 3)}
    a, b = (rng.uniform(size=shapes[ax]) for ax in in_axes)
    jf = jax.vmap(lambda u, v: fn.__code__.co_name and _jax(fn)(u, v), in_axes=in_axes)
    vf = srcjax.vmap(fn, in_axes=in_axes)
    np.testing.assert_allclose(np.asarray(vf(a, b)), jf(a, b), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.compile(vf, device="numpy")(a, b)), jf(a, b), rtol=1e-12)
    text = srcjax.source(vf)
    for g in gone:
        assert g not in text, text
    if in_axes == (None, 0) and fn is binary:
        assert "batch_align_b(b, add)" in text  # (b may have fewer axes than add: kept)
    g = srcjax.vmap(srcjax.grad(lambda u, v: np.sum(fn(u, v) ** 2)), in_axes=in_axes)
    jg = jax.vmap(jax.grad(lambda u, v: jnp.sum(_jax(fn)(u, v) ** 2)), in_axes=in_axes)
    np.testing.assert_allclose(np.asarray(g(a, b)), jg(a, b), rtol=1e-10)


def _jax(fn):
    import types
    return types.FunctionType(fn.__code__, {**fn.__globals__, "np": jnp}, fn.__name__)


def test_a_full_reduction_has_no_axes_and_a_like_helpers_alignments_are_kept():
    got = _pass("""
        def f_vmap(logits, y, b):
            max_1 = np.max(logits, axis=batch_axes(logits))
            z = batch_align_b(logits, max_1) - batch_align_b(max_1, logits)
            log = np.log(max_1)
            logp = batch_align_b(z, log) - batch_align_b(log, z)
            mul = batch_align_b(y, logp) * batch_align_b(logp, y)
            neg = ones_like(mul)
            g = batch_unbroadcast(neg, logp, True, True)
            k = np.max(logits, axis=batch_axes(logits), keepdims=True)
            s = np.sum(y, axis=batch_axes(logits))
            u = batch_align(b, max_1) + max_1
            return (batch_align_b(neg, y), batch_align_b(g, z), batch_align_b(z, g), batch_align_b(b, k),
                    batch_align_b(b, s))
        """)
    # (an unbatched max_1 may be a reduction of an outer vmap's values, its batch axis left: kept)
    assert "u = batch_align(b, max_1) + max_1" in got
    assert "z = logits - batch_align_b(max_1, logits)" in got  # (max_1: no per-example axis)
    assert "logp = z - batch_align_b(log, z)" in got  # (log of a scalar: a scalar)
    # (a `*_like` helper's result is not taken to have its operand's axes: that fact dropped the alignment a
    # vmapped gradient's scalar check needs, and hessian of a vector-valued function answered a matrix)
    assert "batch_align_b(neg, y)" in got and "batch_align_b(g, z)" in got
    assert "batch_align_b(b, k)," in got  # (keepdims keeps axes)
    assert "batch_align_b(b, s))" in got  # (a reduction over another value's axes: kept)


def test_hessian_of_a_vector_valued_function_is_jax_layout_not_a_matrix():
    """Regression (merge of vprint47): a rule that `ones_like(mul)` has `mul`'s axes made the batched gradient's
    check of a scalar output pass for a vector output: hessian returned f64[4, 4] where jax gives f64[4, 4, 4]."""
    import srcjax
    x = np.array([0.3, -1.2, 0.7, 2.0])

    def f(v):
        return np.sin(v) * 2.0

    want = np.zeros((4, 4, 4))
    want[np.arange(4), np.arange(4), np.arange(4)] = -2.0 * np.sin(x)
    got = np.asarray(srcjax.hessian(f)(x))
    assert got.shape == (4, 4, 4)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(jax.hessian(lambda v: jnp.sin(v) * 2.0)(x)), want, rtol=1e-12, atol=1e-12)


def test_a_copied_line_of_batched_source_keeps_its_alignments():
    """The mechanism of the hessian regression above: jacfwd batches jacrev's batched VJP again, and the line
    ``batch_unbroadcast(mul, sin, True, False)`` it leaves as it is (not batched there) gives a value with
    jacrev's basis axis in front of sin's: rank 2, not sin's 1. ``batch_align(mul_1, unbroadcast_1)`` must stay."""
    got = _pass("""
        def f_vjp_vmap_jvp_vmap(v, out_bar, v_dot):
            sin = np.sin(v)
            mul = 2.0 * out_bar
            unbroadcast_1 = batch_unbroadcast(mul, sin, True, False)
            neg = -sin
            ones = ones_like(sin)
            mul_1 = batch_align(v_dot, neg) * neg
            v_bar_dot = unbroadcast_1 * batch_align(mul_1, unbroadcast_1)
            return v_bar_dot, batch_align(mul_1, ones)
        """)
    assert "unbroadcast_1 * batch_align(mul_1, unbroadcast_1)" in got
    x = np.array([0.3, -1.2, 0.7, 2.0])
    got_j = np.asarray(srcjax.jacfwd(srcjax.jacrev(lambda v: np.sin(v) * 2.0))(x))
    want = jax.jacfwd(jax.jacrev(lambda v: jnp.sin(v) * 2.0))(x)
    assert got_j.shape == (4, 4, 4)
    np.testing.assert_allclose(got_j, want, rtol=1e-12, atol=1e-12)


def test_names_a_comprehension_or_a_walrus_binds_are_not_the_facts_names():
    got = _pass("""
        def f_vmap(a, xs):
            m = np.max(a, axis=batch_axes(a))
            s = np.sin(a)
            out = [batch_align_b(b, m) + batch_align(s, a) for m in xs]
            t = (m := batch_moveaxis(a, 1, 0)) * 2.0
            return batch_align_b(a, m), t
        """)
    assert "[batch_align_b(b, m) + batch_align(s, a) for m in xs]" in got  # (the comprehension's own m)
    assert "return batch_align_b(a, m), t" in got  # (m bound again by the walrus: no longer a reduction)
