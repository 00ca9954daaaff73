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

from . import twins  # noqa: E402
from .corpus_programs import break_and_continue_static  # noqa: E402
from .twins import JAX  # noqa: E402
from .unseen_oracle import agree  # noqa: E402

RNG = np.random.default_rng(1516)


def test_vmap_of_jacrev_of_a_loop_with_break_and_continue() -> None:
    """The second vmap level broadcast the tape's static flags (``k % 2 == 1``) and wrote a plain ``if`` on
    them: "truth value of array([True, True])". The ``if`` read one row of the broadcast flag
    (``batch_static(eq)``); since the tape keeps its static slots (batch_tapes: rows keyed by their
    helper, values saved whole a slot of their own) the flag is pushed and popped as the Python bool it is."""
    x = RNG.standard_normal((3, 5))
    agree(srcjax.vmap(srcjax.jacrev(break_and_continue_static))(x),
          JAX.vmap(jax.jacrev(break_and_continue_static))(x), rtol=1e-9, what="vmap(jacrev)")
    text = srcjax.source(srcjax.vmap(srcjax.jacrev(break_and_continue_static)))
    # (the static flags first; since fix8's binding times the value `acc` had before the branch follows them)
    assert "_tape.append((eq, gt, not_skip, not_stop, not_stop_1, pow_1, acc_before,))" in text, text
    assert "batch_static(eq)" not in text, text


def test_vmap_of_the_vjp_of_a_loop_with_break_and_continue() -> None:
    """``python -m tests.test_printed_modules_run`` shard: corpus.break_and_continue_static.vjp.vmap."""
    x = RNG.standard_normal((3, 5))
    ct = RNG.standard_normal((3, 5))
    ours = srcjax.vmap(autodiff._wrap(break_and_continue_static, "vjp", (0,), False))(x, ct)

    def theirs(x, ct):
        out, f = jax.vjp(break_and_continue_static, x)  # (jax traces the same source)
        return out, f(ct)
    agree(ours, JAX.vmap(theirs)(x, ct), rtol=1e-9, what="vmap(vjp)")


def test_batch_static_reads_one_row() -> None:
    assert batch_static(True) is True
    assert bool(batch_static(np.array([False, False]))) is False
    assert bool(batch_static(np.ones((2, 3), dtype=bool))) is True


def test_a_python_test_on_a_shape_stays_plain() -> None:
    """A test on a per-example shape (``x.ndim == 2``: a Python bool) is not wrapped."""
    from .corpus_programs import static_if_on_ndim_2d
    assert "batch_static" not in srcjax.source(srcjax.vmap(static_if_on_ndim_2d))
    x = RNG.standard_normal((2, 3, 4))
    agree(srcjax.vmap(static_if_on_ndim_2d)(x), JAX.vmap(lambda v: jnp.reshape(v, -1) * 2)(x), what="vmap")


def tanh_times_norm(x):
    return np.tanh(x) * np.sum(x ** 2)


def test_vmap_of_hessian_of_an_output_that_is_not_a_scalar() -> None:
    """vmap(hessian(f)) of a vector output was refused with grad's message ("grad requires a real scalar
    output"): it is JAX's hessian there, jacfwd(jacrev(f)), batched."""
    x = RNG.standard_normal((3, 4))
    got = srcjax.vmap(srcjax.hessian(tanh_times_norm))(x)
    want = JAX.vmap(jax.hessian(lambda v: jnp.tanh(v) * jnp.sum(v ** 2)))(x)
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
    agree(srcjax.hessian(loop_in_helper)(x), JAX.hessian(loop_in_helper_twin)(x), rtol=1e-9, what="hessian")


def diff_sq(x):
    return np.sum(np.diff(x) ** 2) + np.sum(x[1:] * x[:-1])


def test_jacfwd_of_jacrev_of_np_diff() -> None:
    """Refused inside srcjax's own helper ("cannot differentiate through `[1 if k == ax else d for ...]`"):
    diff_bar built its zero slice's shape from a list comprehension over g's shape."""
    x = RNG.standard_normal(5)
    twin = lambda v: jnp.sum(jnp.diff(v) ** 2) + jnp.sum(v[1:] * v[:-1])  # noqa: E731
    agree(srcjax.jacfwd(srcjax.jacrev(diff_sq))(x), JAX.jacfwd(jax.jacrev(twin))(x), rtol=1e-9, what="jacfwd(jacrev)")


def tanh_times_norm_twin(x):
    return jnp.tanh(x) * jnp.sum(x ** 2)


HESSIAN_OF_A_VECTOR = {  # how -> (the composition of a module's transformations, argument shape)
    "jit(hessian)": (lambda s, f: s.jit(s.hessian(f)), (4,)),
    "jit(vmap(hessian))": (lambda s, f: s.jit(s.vmap(s.hessian(f))), (2, 4)),
    "vmap(jit(hessian))": (lambda s, f: s.vmap(s.jit(s.hessian(f))), (2, 4)),
    "jacfwd(hessian)": (lambda s, f: s.jacfwd(s.hessian(f)), (3,)),
    "jacrev(hessian)": (lambda s, f: s.jacrev(s.hessian(f)), (3,)),
    "jit(jacfwd(hessian))": (lambda s, f: s.jit(s.jacfwd(s.hessian(f))), (3,)),
}


@pytest.mark.parametrize("how", sorted(HESSIAN_OF_A_VECTOR))
def test_transformations_of_a_hessian_of_a_vector_output(how) -> None:
    """jit(hessian(f)) of a vector output was refused with grad's message (the transformation reads the
    hessian's gradient source): it is the same transformation of JAX's hessian there, jacfwd(jacrev(f))."""
    make, shape = HESSIAN_OF_A_VECTOR[how]
    x = RNG.standard_normal(shape)
    ours = make(srcjax, tanh_times_norm)(x)
    agree(ours, twins.jitted(make(jax, tanh_times_norm_twin))(x), rtol=1e-9, what=how)
    if x.ndim == 2:  # (and a Python loop of jax's hessian)
        one = JAX.hessian(tanh_times_norm_twin)
        agree(ours, np.stack([one(v) for v in x]), rtol=1e-9, what=how)


@pytest.mark.parametrize("how", ["jvp", "vjp"])
def test_jvp_vjp_eval_shape_lower_of_a_hessian_of_a_vector_output(how) -> None:
    """(~3 and ~7 CPU s: the default tier runs vjp; forward mode over this hessian is jacfwd(hessian) above)"""
    x, t = RNG.standard_normal(3), RNG.standard_normal(3)  # (the default tier draws what it drew before the split)
    h, hj = srcjax.hessian(tanh_times_norm), jax.hessian(tanh_times_norm_twin)
    if how == "jvp":
        agree(srcjax.jvp(h, (x,), (t,)), twins.jvp(hj, (x,), (t,)), rtol=1e-9, what="jvp(hessian)")
        return
    ct = RNG.standard_normal((3, 3, 3))
    agree(srcjax.vjp(h, x)[1](ct), twins.jitted(lambda x, ct: jax.vjp(hj, x)[1](ct))(x, ct), rtol=1e-9,
          what="vjp(hessian)")
    assert srcjax.eval_shape(h, x).shape == (3, 3, 3)
    assert "stablehlo" in srcjax.lower(h, x).as_text()


def test_a_hessian_of_a_scalar_output_keeps_the_gradients_source() -> None:
    """Where the output is a scalar nothing changes: jit(hessian(f)) runs forward mode over the gradient."""
    f = lambda v: np.sum(np.tanh(v) * v)  # noqa: E731
    x = RNG.standard_normal(3)
    j = srcjax.jit(srcjax.hessian(f))
    agree(j(x), JAX.hessian(lambda v: jnp.sum(jnp.tanh(v) * v))(x), rtol=1e-9, what="jit(hessian)")
    assert j._or_general is not None and not j._or_general.__closure__[1].cell_contents  # (general never made)


def dict_of_matvec(p, x):
    return {"a": np.sin(p["w"] @ x), "b": np.sum(x * p["b"])}


def dict_of_matvec_twin(p, x):
    return {"a": jnp.sin(p["w"] @ x), "b": jnp.sum(x * p["b"])}


@pytest.mark.parametrize("kind", ["jacfwd", "jacrev"])
def test_vmap_of_a_jacobian_of_a_dict_output_by_an_array_argument(kind) -> None:
    """vmap(jacfwd(f, argnums=1), in_axes=(None, 0)) of a dict output: "source 1 is out of bounds". The
    Jacobian's blocks loop ``for t in ts`` over tangents whose leaves are batched and not (``b``'s tangent
    reads the unbatched basis only): ``tree_leaves(t)`` needs ``t`` batched throughout, which was
    broadcast after the loop; it is broadcast at the top of the loop's body now."""
    p = {"w": RNG.standard_normal((3, 4)), "b": RNG.standard_normal(4)}
    x = RNG.standard_normal((2, 4))
    ours = srcjax.vmap(getattr(srcjax, kind)(dict_of_matvec, argnums=1), in_axes=(None, 0))(p, x)
    theirs = JAX.vmap(getattr(jax, kind)(dict_of_matvec_twin, argnums=1), in_axes=(None, 0))(p, x)
    agree(ours, theirs, rtol=1e-9, what=f"vmap({kind})")
    for i in range(2):  # (and a Python loop)
        one = getattr(jax, kind)(dict_of_matvec_twin, argnums=1)(p, x[i])
        agree({k: np.asarray(v)[i] for k, v in ours.items()}, one, rtol=1e-9, what=f"{kind} of example {i}")


def count_then_scale_twin(x):
    def body(c):
        return c[0] * 1.5, c[1] + 1

    def loop(v):
        return jax.lax.while_loop(lambda c: (jnp.sum(c[0]) < 8.0) & (c[1] < 6), body, (v, 0))

    x, n = jax.lax.cond(jnp.sum(x) > 0.0, loop, lambda v: (-v, 0), x)
    return jnp.sum(x) * (n + 1)


@pytest.mark.parametrize("how", ["grad", "jacrev", "hessian"])
def test_reverse_mode_through_a_loop_inside_an_if_on_data(how) -> None:
    """grad(count_then_scale) (a `while` inside an `if` on array data): the loop's tape would be written in a
    branch, and this was refused at the user's `if`. Reverse mode now runs the loop outside the `if`, each step
    under its test (srcjax/transforms/branch_loops.py; tests/test_branch_loops.py). jax.grad refuses the
    while_loop; its forward mode is the oracle."""
    from .vmap_nested_programs import count_then_scale
    want = {"grad": JAX.jacfwd(count_then_scale_twin), "jacrev": JAX.jacfwd(count_then_scale_twin),
            "hessian": JAX.jacfwd(JAX.jacfwd(count_then_scale_twin))}[how]
    for x in (np.array([0.5, 0.3, 1.0]), np.array([-0.5, 0.3, -1.0])):
        agree(getattr(srcjax, how)(count_then_scale, max_iters=10)(x), want(x), rtol=1e-12, what=how)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        jax.grad(count_then_scale_twin)(np.array([0.5, 0.3, 1.0]))


def test_forward_mode_through_a_loop_inside_an_if_on_data() -> None:
    from .vmap_nested_programs import count_then_scale
    want = JAX.jacfwd(count_then_scale_twin)
    for x in (np.array([0.5, 0.3, 1.0]), np.array([-0.5, 0.3, -1.0]), np.array([3.0, 2.0, 2.5])):
        agree(srcjax.jacfwd(count_then_scale)(x), want(x), rtol=1e-12, what="jacfwd")
