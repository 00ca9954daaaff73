"""Reverse mode of a vmap through branches on batched data (issue #15): no NaN from the untaken branch.

A batched ``if`` (or ``lax.cond``) runs both branches for every example and selects; a batched
``while`` runs extra steps for the examples already finished and keeps their carry. Reverse mode
sends those computations a zero cotangent, and where they are singular for an example (``np.sqrt``
of a negative, ``1 / 0``) ``0 * inf`` was NaN in that example's gradient. The batcher marks what a
branch reads with ``taken(x, test)`` (srcjax/branch_guard.py), whose cotangent is a select. Every
form is checked against the per-example loop (``srcjax.grad`` of the function, whose branches are
real branches) and against jax (``lax.cond`` per example, ``jax.grad``).
"""

from __future__ import annotations

import importlib.util
import itertools
import os
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import srcjax

jax = pytest.importorskip("jax")

from tests.twins import JAX, jitted  # noqa: E402

jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

THOROUGH = os.environ.get("SRCJAX_HYPOTHESIS") == "thorough"


# -- the programs (each with its jax twin, a lax.cond per example) --------------------------------------

def sqrt_or_square(x):  # the example
    if x > 0:
        y = np.sqrt(x)
    else:
        y = -x * x
    return y


def sqrt_or_square_jax(x):
    return jax.lax.cond(x > 0, jnp.sqrt, lambda v: -v * v, x)


def log_else(x):
    if x < 1.0:
        y = x * 3.0
    else:
        y = np.log(x - 1.0) + x
    return y


def log_else_jax(x):
    return jax.lax.cond(x < 1.0, lambda v: v * 3.0, lambda v: jnp.log(v - 1.0) + v, x)


def reciprocal(x):  # an example exactly at the pole runs the other branch
    if x != 2.0:
        y = 1.0 / (x - 2.0)
    else:
        y = x * x
    return y


def reciprocal_jax(x):
    return jax.lax.cond(x != 2.0, lambda v: 1.0 / (v - 2.0), lambda v: v * v, x)


def half_power(x):
    if x >= 0.5:
        y = (x - 0.5) ** 0.5 * 2.0
    else:
        y = np.sin(x)
    return y


def half_power_jax(x):
    return jax.lax.cond(x >= 0.5, lambda v: (v - 0.5) ** 0.5 * 2.0, jnp.sin, x)


def arcsin_inside(x):
    if np.abs(x) < 1.0:
        y = np.arcsin(x)
    else:
        y = x * 0.5
    return y


def arcsin_inside_jax(x):
    return jax.lax.cond(jnp.abs(x) < 1.0, jnp.arcsin, lambda v: v * 0.5, x)


def divide_by_batched(x, s):  # a division by the other batched argument
    if s > 0.0:
        y = x / s + np.sqrt(s)
    else:
        y = x * s
    return y


def divide_by_batched_jax(x, s):
    return jax.lax.cond(s > 0.0, lambda a, b: a / b + jnp.sqrt(b), lambda a, b: a * b, x, s)


def nested_ifs(x):
    if x > 0.0:
        if x < 4.0:
            y = np.sqrt(x) * np.log(4.0 - x)
        else:
            y = np.sqrt(x - 4.0)
    else:
        y = np.log(-x + 1.0)
    return y


def nested_ifs_jax(x):
    def pos(v):
        return jax.lax.cond(v < 4.0, lambda u: jnp.sqrt(u) * jnp.log(4.0 - u), lambda u: jnp.sqrt(u - 4.0), v)
    return jax.lax.cond(x > 0.0, pos, lambda v: jnp.log(-v + 1.0), x)


def vector_branch(x):  # per-example vectors: the test's axes lead the value's
    if np.sum(x) > 0.0:
        y = np.sqrt(x)
    else:
        y = x * x
    return np.sum(y * np.array([1.0, 2.0, 3.0]))


def vector_branch_jax(x):
    return jnp.sum(jax.lax.cond(jnp.sum(x) > 0.0, jnp.sqrt, lambda v: v * v, x) * jnp.array([1.0, 2.0, 3.0]))


def lax_cond(x):
    return srcjax.lax.cond(x > 0.0, lambda v: np.sqrt(v), lambda v: np.log(-v), x)


def lax_cond_jax(x):
    return jax.lax.cond(x > 0.0, jnp.sqrt, lambda v: jnp.log(-v), x)


def shrink_while(x):  # a finished example's extra steps take the square root of a negative
    while x > 0.0:
        x = np.sqrt(x) - 1.0
    return x


def shrink_while_jax(x):  # (jax has no reverse mode of while_loop: its 8 steps, each a cond)
    return jax.lax.fori_loop(0, 8, lambda _, v: jax.lax.cond(v > 0.0, lambda u: jnp.sqrt(u) - 1.0, lambda u: u, v), x)


def break_loop(x):  # a break (its flag's `if` on batched data)
    for _ in range(4):
        if x < 0.0:
            break
        x = np.sqrt(x) - 0.5
    return x


def continue_loop(x):  # a continue (its flag's `if` on batched data)
    for _ in range(3):
        if x < 0.0:
            continue
        x = np.log(x) - 0.5
    return x


def continue_loop_jax(x):
    def body(_, v):
        return jax.lax.cond(v < 0.0, lambda u: u, lambda u: jnp.log(u) - 0.5, v)
    return jax.lax.fori_loop(0, 3, body, x)


def break_loop_jax(x):
    def body(_, v):
        return jax.lax.cond(v < 0.0, lambda u: u, lambda u: jnp.sqrt(u) - 0.5, v)
    return jax.lax.fori_loop(0, 4, body, x)


@srcjax.custom_vjp
def safe_sqrt(x):
    return np.sqrt(x)


def _safe_sqrt_fwd(x):
    y = np.sqrt(x)
    return y, y


def _safe_sqrt_bwd(y, g):
    return (g * 0.5 / y,)


safe_sqrt.defvjp(_safe_sqrt_fwd, _safe_sqrt_bwd)


def custom_in_branch(x):
    if x > 0.0:
        y = safe_sqrt(x)
    else:
        y = -x * x
    return y


CASES = {
    "sqrt_or_square": (sqrt_or_square, sqrt_or_square_jax, [4.0, -2.0, 0.25, -0.5]),
    "log_else": (log_else, log_else_jax, [0.5, 3.0, -1.0, 1.5]),
    "reciprocal": (reciprocal, reciprocal_jax, [2.0, 3.0, -1.0, 2.5]),
    "half_power": (half_power, half_power_jax, [0.25, 2.5, -1.0, 0.75]),
    "arcsin_inside": (arcsin_inside, arcsin_inside_jax, [0.5, 3.0, -2.0, -0.25]),
    "nested_ifs": (nested_ifs, nested_ifs_jax, [1.0, 5.0, -2.0, 4.5, 3.5]),
    "lax_cond": (lax_cond, lax_cond_jax, [1.0, -2.0, 0.5, -0.25]),
    "shrink_while": (shrink_while, shrink_while_jax, [9.0, 0.25, 30.0, -1.0]),
    "break_loop": (break_loop, break_loop_jax, [9.0, 0.3, 30.0, -1.0]),
    "continue_loop": (continue_loop, continue_loop_jax, [9.0, 0.3, 30.0, -1.0]),
    "custom_in_branch": (custom_in_branch, sqrt_or_square_jax, [4.0, -2.0, 0.25, -0.5]),
}
MAX_ITERS = {"shrink_while": 8}


def _loop_grads(f: Any, xs: np.ndarray, **kw: Any) -> np.ndarray:
    """The per-example loop: srcjax.grad of ``f`` itself (its branches stay real branches)."""
    return np.array([float(srcjax.grad(f, **kw)(x)) for x in xs])


_BY_DEFAULT = {"sqrt_or_square", "reciprocal", "arcsin_inside", "nested_ifs", "lax_cond", "shrink_while", "break_loop",
               "custom_in_branch"}  # (the same mechanism: the others when thorough)


@pytest.mark.parametrize("name", sorted(CASES if THOROUGH else _BY_DEFAULT))
def test_grad_of_vmap_is_the_per_example_loop(name: str) -> None:
    f, fj, points = CASES[name]
    xs = np.array(points)
    kw = {"max_iters": MAX_ITERS[name]} if name in MAX_ITERS else {}
    got = np.asarray(srcjax.grad(lambda v: np.sum(srcjax.vmap(f)(v)), **kw)(xs))
    assert np.all(np.isfinite(got)), got
    gj, fjj = JAX.grad(fj), jitted(fj)  # (jax, one example at a time: compiled once, not per example)
    want = np.array([float(gj(x)) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    if THOROUGH:  # (the random programs below check against srcjax's own loop by default)
        np.testing.assert_allclose(got, _loop_grads(f, xs, **kw), rtol=1e-12, atol=1e-12)
    # forward values unchanged (the marks are the identity)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(f)(xs)), [float(fjj(x)) for x in xs], rtol=1e-12)


def test_jax_agrees_on_the_batched_cond() -> None:
    """jax's own vmap of a lax.cond with a batched predicate gives the loop's answer too (jax 0.10)."""
    xs = jnp.array([4.0, -2.0])
    got = JAX.grad(lambda v: jnp.sum(jax.vmap(sqrt_or_square_jax)(v)))(xs)
    np.testing.assert_allclose(np.asarray(got), [0.25, 4.0])


def test_vjp_and_jacrev_of_vmap() -> None:
    xs = np.array([4.0, -2.0, 9.0])
    want = np.array([0.25, 4.0, 1.0 / 6.0])
    out, pullback = srcjax.vjp(srcjax.vmap(sqrt_or_square), xs)
    np.testing.assert_allclose(np.asarray(out), [2.0, -4.0, 3.0])
    np.testing.assert_allclose(np.asarray(pullback(np.ones(3))[0]), want)
    jac = np.asarray(srcjax.jacrev(srcjax.vmap(sqrt_or_square))(xs))
    np.testing.assert_allclose(jac, np.diag(want))


def test_hessian_of_a_vmapped_sum() -> None:
    xs = np.array([4.0, -2.0, 9.0])
    hess = np.asarray(srcjax.hessian(lambda v: np.sum(srcjax.vmap(sqrt_or_square)(v)))(xs))
    want = np.diag([-0.25 * 4.0 ** -1.5, -2.0, -0.25 * 9.0 ** -1.5])
    np.testing.assert_allclose(hess, want, rtol=1e-12, atol=1e-12)


def test_two_batched_arguments() -> None:
    xs, ss = np.array([1.0, 2.0, 3.0]), np.array([4.0, -1.0, 0.0])
    gx, gs = srcjax.grad(lambda a, b: np.sum(srcjax.vmap(divide_by_batched)(a, b)), argnums=(0, 1))(xs, ss)
    gj = JAX.grad(divide_by_batched_jax, argnums=(0, 1))
    want = [gj(a, b) for a, b in zip(xs, ss)]
    np.testing.assert_allclose(np.asarray(gx), [float(w[0]) for w in want])
    np.testing.assert_allclose(np.asarray(gs), [float(w[1]) for w in want])


def test_vector_examples() -> None:
    xs = np.array([[1.0, 4.0, 9.0], [-1.0, -2.0, 0.5], [0.25, -0.1, 1.0]])
    got = np.asarray(srcjax.grad(lambda v: np.sum(srcjax.vmap(vector_branch)(v)))(xs))
    gj = JAX.grad(vector_branch_jax)
    want = np.stack([np.asarray(gj(x)) for x in xs])
    np.testing.assert_allclose(got, want)


def test_nested_vmaps() -> None:
    """grad(vmap(vmap(f))) and vmap(grad(vmap(f))): the marks batched again (both operands batched)."""
    xs = np.array([[4.0, -2.0, 1.0], [-1.0, 9.0, -3.0]])
    want = np.where(xs > 0, 0.5 / np.sqrt(np.abs(xs)), -2.0 * xs)
    inner = srcjax.vmap(sqrt_or_square)
    np.testing.assert_allclose(np.asarray(srcjax.grad(lambda v: np.sum(srcjax.vmap(inner)(v)))(xs)), want)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(lambda v: np.sum(inner(v))))(xs)), want)


def test_vmap_inside_a_differentiated_function() -> None:
    def loss(v):
        return np.sum(srcjax.vmap(sqrt_or_square)(v * 2.0) ** 2)

    xs = np.array([2.0, -1.0])
    got = np.asarray(srcjax.grad(loss)(xs))
    want = np.asarray(jax.grad(lambda v: jnp.sum(jnp.stack([sqrt_or_square_jax(a) for a in v * 2.0]) ** 2))(xs))
    np.testing.assert_allclose(got, want)


def test_the_marks_in_generated_source() -> None:
    """Each batched name a branch reads is bound once to ``taken(x, test)``; a test that is not
    batched stays a real branch, without marks; plain vmap's values are the same."""
    text = srcjax.source(srcjax.vmap(sqrt_or_square))
    assert "taken(x, gt, False)" in text and "taken(x, gt)" in text, text
    text = srcjax.source(srcjax.grad(lambda v: np.sum(srcjax.vmap(sqrt_or_square)(v))))
    assert "taken_bar(" in text and ", gt, False)" in text, text
    unbatched = srcjax.source(srcjax.vmap(divide_by_batched, in_axes=(0, None)))
    assert "taken(" not in unbatched and "if gt:" in unbatched, unbatched


# -- random branchy programs with a branch singular where it is not taken ---------------------------------

SINGULAR = ["np.sqrt({d})", "np.log({d})", "{d} ** 0.5", "1.0 / np.sqrt({d})", "np.arcsin({d} / (1.0 + {d}))",
            "{x} / {d}"]
SAFE = ["x * x", "np.sin(x) * 2.0", "x * 3.0 + 1.0", "np.exp(-x)"]


def _program(k: int, singular: str, other: str, c: float, flip: bool, nested: bool, looped: bool,
             shared: bool = False) -> str:
    """``if x > c`` (``x < c`` when ``flip``) with a branch singular where it is not taken; nested in
    another ``if``, or the step of a ``while`` that runs on for finished examples; ``shared``: the
    singular term scaled by a second parameter ``w`` (a shared weight: ``in_axes=(0, None)``)."""
    def term(v: str) -> str:
        d = f"({v} - c)" if not flip else f"(c - {v})"
        return singular.format(d=f"(w * {d})" if shared else d, x=v)

    test = "x > c" if not flip else "x < c"
    if looped:
        body = ["    y = x", "    n = 0", f"    while n < 3 and {test.replace('x', 'y')}:",
                f"        y = y - 0.25 * {term('y')}", "        n = n + 1"]
    elif nested:
        body = [f"    if {test}:", "        if x > c + 1.0:", f"            y = {term('x')}", "        else:",
                f"            y = {other} + {term('x')}", "    else:", f"        y = {other}"]
    else:
        body = [f"    if {test}:", f"        y = {term('x')}", "    else:", f"        y = {other}"]
    params = "x, w" if shared else "x"
    return "\n".join([f"def prog_{k}({params}):", f"    c = {c!r}", *body, "    return y", ""])


_CHOICES = list(itertools.product(range(len(SINGULAR)), range(len(SAFE)), (0.5, 1.0), (False, True),
                                  (False, True), (False, True)))
_SEEN: list[int] = []


def _load(tmp_path_factory: Any, text: str, k: int) -> Any:
    path = tmp_path_factory.mktemp("untaken") / f"untaken_prog_{k}.py"
    path.write_text("import numpy as np\n\n\n" + text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, f"prog_{k}")


@settings(max_examples=24 if THOROUGH else 3, deadline=None, derandomize=not THOROUGH,
          suppress_health_check=list(HealthCheck))
@given(st.sampled_from(range(len(_CHOICES))))
def test_random_branchy_programs(tmp_path_factory: Any, pick: int) -> None:
    """Random programs: grad of their vmap is the per-example loop's, and finite; their values too."""
    si, oi, c, flip, nested, looped = _CHOICES[pick]
    k = len(_SEEN)
    _SEEN.append(pick)
    text = _program(k, SINGULAR[si], SAFE[oi], c, flip, nested, looped)
    f = _load(tmp_path_factory, text, k)
    xs = np.array([c + 2.0, c - 2.0, c + 0.5, c - 0.5, c + 3.0])
    kw = {"max_iters": 4} if looped else {}
    want = _loop_grads(f, xs, **kw)
    got = np.asarray(srcjax.grad(lambda v: np.sum(srcjax.vmap(f)(v)), **kw)(xs))
    assert np.all(np.isfinite(want)), (text, want)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=text)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(f)(xs)), [float(f(x)) for x in xs], rtol=1e-12, err_msg=text)


# -- an unmapped argument (in_axes=None: a shared weight) read in a batched branch ----------------------
# Its cotangent was summed over the examples inside the op that reads it, the untaken examples' NaN
# included; the batcher now broadcasts it and marks it `taken` like a batched value.

def shared_sqrt(w, x):  # the example
    if x > 0:
        y = np.sqrt(w * x)
    else:
        y = -w * x * x
    return y


def shared_sqrt_jax(w, x):
    return jax.lax.cond(x > 0, lambda: jnp.sqrt(w * x), lambda: -w * x * x)


def shared_closure(w, x):  # a value computed before the branch from the unmapped input only
    h = w * 3.0
    if x > 0:
        y = np.sqrt(h * x)
    else:
        y = -h * x * x
    return y


def shared_closure_jax(w, x):
    h = w * 3.0
    return jax.lax.cond(x > 0, lambda: jnp.sqrt(h * x), lambda: -h * x * x)


def shared_lax_cond(w, x):  # the weight passed as an operand
    return srcjax.lax.cond(x > 0, lambda a, b: np.sqrt(a * b), lambda a, b: -a * b * b, w, x)


def shared_nested(w, x):
    if x > 0:
        if x < 1.0:
            y = np.sqrt(w * x) * np.log(1.0 - x)
        else:
            y = np.sqrt(w * (x - 1.0))
    else:
        y = np.log(-w * x + 1.0)
    return y


def shared_nested_jax(w, x):
    def pos() -> Any:
        return jax.lax.cond(x < 1.0, lambda: jnp.sqrt(w * x) * jnp.log(1.0 - x), lambda: jnp.sqrt(w * (x - 1.0)))
    return jax.lax.cond(x > 0, pos, lambda: jnp.log(-w * x + 1.0))


def shared_while(w, x):  # a finished example's extra steps
    while x > 0.0:
        x = np.sqrt(w * x) - 1.0
    return x


def shared_while_jax(w, x):
    return jax.lax.fori_loop(0, 8, lambda _, v: jax.lax.cond(v > 0.0, lambda u: jnp.sqrt(w * u) - 1.0,
                                                             lambda u: u, v), x)


def shared_break(w, x):
    for _ in range(4):
        if x < 0.0:
            break
        x = np.sqrt(w * x) - 0.5
    return x


def shared_break_jax(w, x):
    return jax.lax.fori_loop(0, 4, lambda _, v: jax.lax.cond(v < 0.0, lambda u: u, lambda u: jnp.sqrt(w * u) - 0.5,
                                                             v), x)


def shared_matrix(m, x):  # a weight matrix in a product (plain vmap: still one product, see below)
    if np.sum(x) > 0:
        y = np.sqrt(x @ m)
    else:
        y = np.tanh(x @ m)
    return np.sum(y)


def shared_matrix_jax(m, x):
    return jax.lax.cond(jnp.sum(x) > 0, lambda: jnp.sum(jnp.sqrt(x @ m)), lambda: jnp.sum(jnp.tanh(x @ m)))


def _root(w, x):  # a helper: its argument read as an array operand only (marked at the call too)
    return np.sqrt(w * x)


def shared_helper(w, x):
    if x > 0:
        y = _root(w, x)
    else:
        y = -w * x * x
    return y


def shared_helper_while(w, x):
    while x > 0.0:
        x = _root(w, x) - 1.0
    return x


def shared_lax_cond_helper(w, x):
    return srcjax.lax.cond(x > 0, _root, lambda a, b: -a * b * b, w, x)


def shared_loop_carry(w, x):  # the branch reads a loop's carry computed from the unmapped input only
    h = w
    y = x
    for _ in range(3):
        h = h * 0.5
        if x > 0:
            y = y + np.sqrt(h * x)
        else:
            y = y - h * x
    return y


def shared_loop_carry_jax(w, x):
    def body(_, c):  # type: ignore[no-untyped-def]
        h, y = c
        h = h * 0.5
        return h, jax.lax.cond(x > 0, lambda: y + jnp.sqrt(h * x), lambda: y - h * x)
    return jax.lax.fori_loop(0, 3, body, (w, x))[1]


def shared_loop_local(w, x):  # ... a value the loop's body computes from the unmapped input only
    y = x
    for i in range(2):
        h = w * 0.5 + i
        if x > 0:
            y = y + np.sqrt(h * x)
        else:
            y = y - h * x
    return y


def shared_loop_local_jax(w, x):
    def body(i, y):  # type: ignore[no-untyped-def]
        h = w * 0.5 + i
        return jax.lax.cond(x > 0, lambda: y + jnp.sqrt(h * x), lambda: y - h * x)
    return jax.lax.fori_loop(0, 2, body, x)


SHARED = {
    "helper": (shared_helper, shared_sqrt_jax, [4.0, -2.0, 0.5, -0.25]),
    "helper_while": (shared_helper_while, shared_while_jax, [9.0, 0.25, 30.0, -1.0]),
    "lax_cond_helper": (shared_lax_cond_helper, shared_sqrt_jax, [4.0, -2.0, 0.5, -0.25]),
    "loop_carry": (shared_loop_carry, shared_loop_carry_jax, [4.0, -2.0, 0.5, -0.25]),
    "loop_local": (shared_loop_local, shared_loop_local_jax, [4.0, -2.0, 0.5, -0.25]),
    "sqrt": (shared_sqrt, shared_sqrt_jax, [4.0, -2.0, 0.5, -0.25]),
    "closure": (shared_closure, shared_closure_jax, [4.0, -2.0, 0.5, -0.25]),
    "lax_cond": (shared_lax_cond, shared_sqrt_jax, [4.0, -2.0, 0.5, -0.25]),
    "nested": (shared_nested, shared_nested_jax, [4.0, -2.0, 0.5, -0.25, 1.5]),
    "while": (shared_while, shared_while_jax, [9.0, 0.25, 30.0, -1.0]),
    "break": (shared_break, shared_break_jax, [9.0, 0.3, 30.0, -1.0]),
}


@pytest.mark.parametrize("name", sorted(SHARED))
def test_grad_of_an_unmapped_argument(name: str) -> None:
    """The shared weight's gradient is the per-example loop's, summed (jax, one example at a time); read
    through a helper or computed from it by a loop (NaN before: not marked), too."""
    f, fj, points = SHARED[name]
    xs, w = np.array(points), 1.5
    kw = {"max_iters": 8} if "while" in name else {}
    vf = srcjax.vmap(f, in_axes=(None, 0))
    gw, gx = srcjax.grad(lambda a, v: np.sum(vf(a, v)), argnums=(0, 1), **kw)(w, xs)
    gj, fjj = JAX.grad(fj, argnums=(0, 1)), jitted(fj)  # (compiled once, not per example)
    want = [gj(w, x) for x in xs]
    assert np.isfinite(float(gw)), gw
    np.testing.assert_allclose(float(gw), sum(float(g[0]) for g in want), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gx), [float(g[1]) for g in want], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(vf(w, xs)), [float(fjj(w, x)) for x in xs], rtol=1e-12)  # values unchanged


def test_unmapped_argument_under_other_transformations() -> None:
    """jacrev, hessian, a vmap inside the differentiated function, and vmap(grad) (per-example grads
    of the shared weight: right before, and still)."""
    xs, w = np.array([4.0, -2.0, 0.5, -0.25]), 2.0
    vf = srcjax.vmap(shared_sqrt, in_axes=(None, 0))
    gj, hj = JAX.grad(shared_sqrt_jax), JAX.hessian(shared_sqrt_jax)  # (compiled once, not per example)
    per = np.array([float(gj(w, x)) for x in xs])
    np.testing.assert_allclose(np.asarray(srcjax.jacrev(lambda a: vf(a, xs))(w)), per, rtol=1e-12)
    hess = sum(float(hj(w, x)) for x in xs)
    np.testing.assert_allclose(float(srcjax.hessian(lambda a: np.sum(vf(a, xs)))(w)), hess, rtol=1e-12)
    inside = jax.grad(lambda a: sum(shared_sqrt_jax(a * 2.0, x) ** 2 for x in xs))(w)
    np.testing.assert_allclose(float(srcjax.grad(lambda a: np.sum(vf(a * 2.0, xs) ** 2))(w)), float(inside))
    got = srcjax.vmap(srcjax.grad(shared_sqrt), in_axes=(None, 0))(w, xs)
    np.testing.assert_allclose(np.asarray(got), per, rtol=1e-12)


def test_unmapped_weight_matrix() -> None:
    rng = np.random.default_rng(0)
    m, xs = np.abs(rng.standard_normal((3, 2))), rng.standard_normal((5, 3))
    xs[0] = np.abs(xs[0])
    got = srcjax.grad(lambda a, v: np.sum(srcjax.vmap(shared_matrix, in_axes=(None, 0))(a, v)))(m, xs)
    gj = JAX.grad(shared_matrix_jax)
    want = sum(np.asarray(gj(m, x)) for x in xs)
    assert np.all(np.isfinite(np.asarray(got)))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


def test_plain_vmap_keeps_one_product() -> None:
    """The weight broadcast and marked in the branch costs plain vmap nothing: its optimized HLO has
    one product of the batch with the unrepeated matrix (no product per example, no broadcast)."""
    def branchy(m, x):
        if np.sum(x) > 0:
            y = np.tanh(x @ m)
        else:
            y = np.sqrt(x @ m)
        return y

    vf = srcjax.vmap(branchy, in_axes=(None, 0))
    text = srcjax.source(vf)
    assert text.count("batch_broadcast(m,") == 1 and "taken(m_1, gt)" in text and "taken(m_1, gt, False)" in text, \
        text  # (broadcast once, read by both branches)
    hlo = srcjax.jit(vf).lower(np.ones((8, 8), np.float32), np.ones((16, 8), np.float32)).compile().as_text()
    dots = [ln for ln in hlo.splitlines() if " dot(" in ln]
    assert len(dots) == 1 and "f32[16,8]" in dots[0] and "batch_dims" not in dots[0], hlo
    assert "f32[16,8,8]" not in hlo, hlo  # (no matrix per example)


def test_static_unmapped_values_are_not_marked() -> None:
    """A constant, a loop counter, or an unmapped value read other than as an array operand (a shape)
    stays as it is."""
    def counted(w, x):
        c = 0.5
        for i in range(2):
            if x > c:
                x = x * w + 0.1 * i
        return x

    text = srcjax.source(srcjax.vmap(counted, in_axes=(None, 0)))
    assert "batch_broadcast(w, batch_size)" in text, text
    assert "batch_broadcast(c" not in text and "batch_broadcast(i" not in text, text
    xs = np.array([1.0, 0.2, -1.0])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(counted, in_axes=(None, 0))(2.0, xs)),
                               [counted(2.0, x) for x in xs])


@settings(max_examples=24 if THOROUGH else 3, deadline=None, derandomize=not THOROUGH,
          suppress_health_check=list(HealthCheck))
@given(st.sampled_from(range(len(_CHOICES))), st.sampled_from([0.5, 2.0]))
def test_random_branchy_programs_with_a_shared_weight(tmp_path_factory: Any, pick: int, w: float) -> None:
    """Random programs reading an unmapped weight in the singular branch: the weight's gradient is the
    per-example loop's summed, the batched argument's the loop's, both finite; the values unchanged."""
    si, oi, c, flip, nested, looped = _CHOICES[pick]
    k = len(_SEEN)
    _SEEN.append(pick)
    text = _program(k, SINGULAR[si], SAFE[oi], c, flip, nested, looped, shared=True)
    f = _load(tmp_path_factory, text, k)
    xs = np.array([c + 2.0, c - 2.0, c + 0.5, c - 0.5, c + 3.0])
    kw = {"max_iters": 4} if looped else {}
    loop = [srcjax.grad(f, argnums=(0, 1), **kw)(x, w) for x in xs]
    want_x, want_w = np.array([float(g[0]) for g in loop]), sum(float(g[1]) for g in loop)
    vf = srcjax.vmap(f, in_axes=(0, None))
    gx, gw = srcjax.grad(lambda v, a: np.sum(vf(v, a)), argnums=(0, 1), **kw)(xs, w)
    assert np.all(np.isfinite(want_x)) and np.isfinite(want_w), (text, want_x, want_w)
    np.testing.assert_allclose(np.asarray(gx), want_x, rtol=1e-10, atol=1e-12, err_msg=text)
    np.testing.assert_allclose(float(gw), want_w, rtol=1e-10, atol=1e-12, err_msg=text)
    np.testing.assert_allclose(np.asarray(vf(xs, w)), [float(f(x, w)) for x in xs], rtol=1e-12, err_msg=text)


def test_nested_vmaps_of_an_unmapped_argument() -> None:
    """Unmapped at both levels, or mapped by the outer vmap only (the inner marks batched again)."""
    xs, ws = np.array([[4.0, -2.0], [0.5, -0.25], [1.0, -3.0]]), np.array([1.0, 2.0, 3.0])
    inner = srcjax.vmap(shared_sqrt, in_axes=(None, 0))
    both = srcjax.grad(lambda a, v: np.sum(srcjax.vmap(inner, in_axes=(None, 0))(a, v)))(2.0, xs)
    np.testing.assert_allclose(float(both), sum(float(jax.grad(shared_sqrt_jax)(2.0, x)) for x in xs.ravel()))
    outer = srcjax.grad(lambda a, v: np.sum(srcjax.vmap(inner)(a, v)))(ws, xs)
    want = [sum(float(jax.grad(shared_sqrt_jax)(w, x)) for x in row) for w, row in zip(ws, xs)]
    np.testing.assert_allclose(np.asarray(outer), want)


def solve_or_tensordot(a, x):
    if np.sum(x) > 0:
        y = np.linalg.solve(a, x)
    else:
        y = np.tensordot(a, x, axes=1) + np.einsum("ji,j->i", a, x)
    return y


def test_plain_vmap_of_other_products_reads_the_unrepeated_matrix() -> None:
    """A solve, a tensordot, an einsum of the unmapped matrix in a branch on batched data: one
    factorization of it and products with it, no copy of it per example (issue #15: one product or
    factorization per example made plain vmap slower than before the mark); values the loop's."""
    rng = np.random.default_rng(1)
    a, xs = rng.standard_normal((8, 8)) + 8.0 * np.eye(8), rng.standard_normal((16, 8))
    vf = srcjax.vmap(solve_or_tensordot, in_axes=(None, 0))
    np.testing.assert_allclose(np.asarray(vf(a, xs)), [solve_or_tensordot(a, x) for x in xs], rtol=1e-12)
    hlo = srcjax.jit(vf).lower(a, xs).compile().as_text()
    assert "f64[16,8,8]" not in hlo, hlo
    assert hlo.count("getrf") == 1 and "f64[8,8]" in [ln for ln in hlo.splitlines() if "getrf" in ln][0], hlo

    def twin(a, x):  # type: ignore[no-untyped-def]
        return jax.lax.cond(jnp.sum(x) > 0, lambda: jnp.linalg.solve(a, x),
                            lambda: jnp.tensordot(a, x, axes=1) + jnp.einsum("ji,j->i", a, x))

    got = srcjax.grad(lambda m, v: np.sum(vf(m, v) ** 2))(a, xs)  # (reverse mode reads the repeat too)
    pulled = JAX.grad(lambda m, v: jnp.sum(twin(m, v) ** 2))  # (jitted, built once: one compile, not 16 eager runs)
    want = sum(np.asarray(pulled(a, x)) for x in xs)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)
