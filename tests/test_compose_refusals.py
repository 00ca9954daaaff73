"""Compositions srcjax refused or crashed on while jax does them (issue #15): each agrees with jax now.

Programs come from the corpus (tests/corpus_programs.py) and tests/vmap_nested_programs.py; their jax twins
are written here (the corpus's decorators keep tests/twins.py from reading them).
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402

import srcjax  # noqa: E402
from srcjax import autodiff  # noqa: E402
from srcjax.batched import batch_static  # noqa: E402

from .corpus_programs import break_and_continue_static  # noqa: E402
from .unseen_oracle import agree  # noqa: E402

RNG = np.random.default_rng(1516)


def test_vmap_of_jacrev_of_a_loop_with_break_and_continue() -> None:
    """The second vmap level broadcast the tape's static flags (``k % 2 == 1``) and wrote a plain ``if`` on
    them: "truth value of array([True, True])". The ``if`` now reads one row of the broadcast flag."""
    x = RNG.standard_normal((3, 5))
    agree(srcjax.vmap(srcjax.jacrev(break_and_continue_static))(x),
          jax.vmap(jax.jacrev(break_and_continue_static))(x), rtol=1e-9, what="vmap(jacrev)")
    text = srcjax.source(srcjax.vmap(srcjax.jacrev(break_and_continue_static)))
    assert "if batch_static(eq):" in text, text


def test_vmap_of_the_vjp_of_a_loop_with_break_and_continue() -> None:
    """``python -m tests.test_printed_modules_run`` shard: corpus.break_and_continue_static.vjp.vmap."""
    x = RNG.standard_normal((3, 5))
    ct = RNG.standard_normal((3, 5))
    ours = srcjax.vmap(autodiff._wrap(break_and_continue_static, "vjp", (0,), False))(x, ct)

    def theirs(x, ct):
        out, f = jax.vjp(break_and_continue_static, x)  # (jax traces the same source)
        return out, f(ct)
    agree(ours, jax.vmap(theirs)(x, ct), rtol=1e-9, what="vmap(vjp)")


def test_batch_static_reads_one_row() -> None:
    assert batch_static(True) is True
    assert bool(batch_static(np.array([False, False]))) is False
    assert bool(batch_static(np.ones((2, 3), dtype=bool))) is True


def test_a_python_test_on_a_shape_stays_plain() -> None:
    """A test on a per-example shape (``x.ndim == 2``: a Python bool) is not wrapped."""
    from .corpus_programs import static_if_on_ndim_2d
    assert "batch_static" not in srcjax.source(srcjax.vmap(static_if_on_ndim_2d))
    x = RNG.standard_normal((2, 3, 4))
    agree(srcjax.vmap(static_if_on_ndim_2d)(x), jax.vmap(lambda v: jnp.reshape(v, -1) * 2)(x), what="vmap")


def tanh_times_norm(x):
    return np.tanh(x) * np.sum(x ** 2)


def test_vmap_of_hessian_of_an_output_that_is_not_a_scalar() -> None:
    """vmap(hessian(f)) of a vector output was refused with grad's message ("grad requires a real scalar
    output"): it is JAX's hessian there, jacfwd(jacrev(f)), batched."""
    x = RNG.standard_normal((3, 4))
    got = srcjax.vmap(srcjax.hessian(tanh_times_norm))(x)
    want = jax.vmap(jax.hessian(lambda v: jnp.tanh(v) * jnp.sum(v ** 2)))(x)
    assert np.shape(got) == (3, 4, 4, 4)
    agree(got, want, rtol=1e-9, what="vmap(hessian)")


def poly_loop(x):
    s = 0.0
    for k in range(3):
        s = s + np.sum(x ** (k + 1)) / (k + 1)
    return s


def loop_in_helper(x):
    return poly_loop(x) * np.sum(np.tanh(x))


def loop_in_helper_twin(x):
    s = 0.0
    for k in range(3):
        s = s + jnp.sum(x ** (k + 1)) / (k + 1)
    return s * jnp.sum(jnp.tanh(x))


@pytest.mark.parametrize("how", ["vjp(hessian)", "vjp(grad)"])
def test_vjp_of_a_derivative_whose_helper_has_a_loop(how) -> None:
    """Reverse mode over a derivative whose helper hands saved values through the tape was refused ("reverse
    mode does not follow derivatives through them yet"): it is forward mode there, as jacrev of it is."""
    x = RNG.standard_normal(3)  # (x < 0 too: see the next test)
    ours_d, theirs_d = (srcjax.hessian, jax.hessian) if how == "vjp(hessian)" else (srcjax.grad, jax.grad)
    out, f = srcjax.vjp(ours_d(loop_in_helper), x)
    want_out, g = jax.vjp(theirs_d(loop_in_helper_twin), x)
    ct = RNG.standard_normal(np.shape(want_out))
    agree(out, want_out, rtol=1e-9, what=how)
    agree(f(ct), g(ct), rtol=1e-9, what=how)


def test_hessian_of_an_integer_power_in_a_helpers_loop_has_no_nan() -> None:
    """hessian(loop_in_helper) had NaN rows where x < 0: the integer exponent ``k + 1`` saved on the tape
    got float-zero tangents, and the power's exponent term was ``0 * log(x) * out``: 0 * nan (JAX has no
    tangent for an integer). The backward half pops constants through ``index_key``: no tangent."""
    x = np.array([0.7, -1.3, 0.4])
    agree(srcjax.hessian(loop_in_helper)(x), jax.hessian(loop_in_helper_twin)(x), rtol=1e-9, what="hessian")


def diff_sq(x):
    return np.sum(np.diff(x) ** 2) + np.sum(x[1:] * x[:-1])


def test_jacfwd_of_jacrev_of_np_diff() -> None:
    """Refused inside srcjax's own helper ("cannot differentiate through `[1 if k == ax else d for ...]`"):
    diff_bar built its zero slice's shape from a list comprehension over g's shape."""
    x = RNG.standard_normal(5)
    twin = lambda v: jnp.sum(jnp.diff(v) ** 2) + jnp.sum(v[1:] * v[:-1])  # noqa: E731
    agree(srcjax.jacfwd(srcjax.jacrev(diff_sq))(x), jax.jacfwd(jax.jacrev(twin))(x), rtol=1e-9, what="jacfwd(jacrev)")
