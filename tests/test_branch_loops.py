"""Reverse mode through a loop inside an ``if`` on array data (srcjax/transforms/branch_loops.py).

It was refused ("reverse mode through a loop inside an `if` on array data": the loop's tape would be written in a
branch); the loop now runs its whole trip count outside the ``if``, each step under the ``if``'s test as a flag.
Oracles: jax running a twin written with ``lax.cond`` around ``lax.fori_loop``/``lax.while_loop`` (below), central
finite differences of the user's function run by NumPy, and the generated source run by NumPy
(``srcjax.numpy_function``). ``grad``, ``vjp``, ``jacrev``, ``hessian`` and ``vmap(grad)`` (a flag per example).
The random programs at the end draw loop kinds x branch kinds x transformations (default tier: a few; the
thorough tier: many).
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import srcjax

from . import branch_loops_programs as bp
from . import hunt23_programs
from .test_alias_random import load
from .written import examples

jax = pytest.importorskip("jax")
jnp = jax.numpy
lax = jax.lax
jax.config.update("jax_enable_x64", True)


# -- jax twins: lax.cond around the loops ------------------------------------------------------------------------
def _loop_in_if(x: Any, y: Any) -> Any:
    y = lax.cond(jnp.max(x) > 1, lambda y: lax.fori_loop(0, 3, lambda i, y: y * x + 1, y), lambda y: y, y)
    return jnp.sum(y * y)


def _loops_in_both(x: Any, y: Any) -> Any:
    def yes(y: Any) -> Any:
        t = x * 0.5
        y = lax.fori_loop(0, 3, lambda i, y: jnp.tanh(y * t) + t, 2.0 * y)
        return y + t

    def no(y: Any) -> Any:
        return lax.fori_loop(0, 2, lambda i, y: jnp.sin(y) * x, -y)

    return jnp.sum(lax.cond(jnp.sum(x) > 0, yes, no, y) ** 2)


def _nested_ifs(x: Any, y: Any) -> Any:
    def step(i: Any, y: Any) -> Any:
        return lax.cond(x[i] > 0.2, lambda y: lax.fori_loop(0, 2, lambda j, y: y * x + 0.1, y), lambda y: y + x, y)

    return jnp.sum(lax.cond(jnp.max(x) > 0.5, lambda y: lax.fori_loop(0, 2, step, y), lambda y: y, y))


def _while_in_if(x: Any, y: Any) -> Any:
    # (jax refuses reverse mode through lax.while_loop: its six steps at most, each done where the test holds)
    def step(i: Any, y: Any) -> Any:
        return jnp.where(jnp.max(jnp.abs(y)) < 4.0, y * 1.5 + x, y)

    return jnp.sum(lax.cond(jnp.sum(x) > 0, lambda y: lax.fori_loop(0, 6, step, y), lambda y: y, y))


def _break_in_if(x: Any, y: Any) -> Any:
    def step(i: Any, c: Any) -> Any:
        stop, y = c
        new = y * 1.3 + x * 0.1
        return jnp.where(stop, stop, jnp.max(new) > 3.0), jnp.where(stop, y, new)

    return jnp.sum(lax.cond(jnp.sum(x) > 0, lambda y: lax.fori_loop(0, 8, step, (False, y))[1], lambda y: y, y))


def _elif_chain(x: Any, y: Any) -> Any:
    s = jnp.sum(x)
    inner = lambda y: lax.cond(s > -1.0, lambda y: lax.fori_loop(0, 3, lambda i, y: jnp.sin(y) + x, y),  # noqa: E731
                               lambda y: y * 2.0, y)
    return jnp.sum(lax.cond(s > 1.0, lambda y: lax.fori_loop(0, 2, lambda i, y: y * x, y), inner, y))


def _static_range_in_if(x: Any, y: Any) -> Any:
    return jnp.sum(lax.cond(jnp.sum(x) > 0, lambda y: lax.fori_loop(0, x.shape[0], lambda i, y: y * 0.8 + x, y),
                            lambda y: y, y))


def _rows_in_if(x: Any, y: Any) -> Any:
    return jnp.sum(lax.cond(jnp.min(x) < 0.5, lambda x: lax.scan(lambda x, r: (jnp.tanh(x + r), None), x, y)[0],
                            lambda x: x, x))


def _tree_maps_in_both(x: Any, y: Any) -> Any:
    d = {"u": x * 1.5, "v": y}
    d = lax.cond(x[0] > 0, lambda d: jax.tree_util.tree_map(lambda v: v * 0.5, d),
                 lambda d: jax.tree_util.tree_map(lambda v: v * -1.0, d), d)
    return jnp.sum(d["u"] * d["v"])


def _range_in_a_tuple_loop(x: Any, y: Any) -> Any:
    def steps(y: Any) -> Any:
        for c in (0.5, 2.0):
            y = lax.fori_loop(0, 2, lambda i, y, c=c: jnp.sin(y * x) * c, y)
        return y

    return jnp.sum(lax.cond(jnp.sum(x) > 0, steps, lambda y: y, y))


TWINS: dict[str, Callable[..., Any]] = {
    "loop_in_if": _loop_in_if, "loops_in_both": _loops_in_both, "nested_ifs": _nested_ifs,
    "while_in_if": _while_in_if, "break_in_if": _break_in_if, "elif_chain": _elif_chain,
    "static_range_in_if": _static_range_in_if, "rows_in_if": _rows_in_if,
    "tree_maps_in_both": _tree_maps_in_both, "range_in_a_tuple_loop": _range_in_a_tuple_loop,
}

X = np.array([0.5, 1.5, 0.3])
Y = np.array([0.4, -0.3, 0.2])
# a point per path: the first takes every `if` (or the first branch), the second the other one
POINTS: dict[str, tuple[tuple[Any, Any], ...]] = {
    "loop_in_if": ((X, Y), (X / 2, Y)),
    "loops_in_both": ((X, Y), (-X, Y)),
    "nested_ifs": ((X, Y), (np.array([0.1, 0.7, 0.3]), Y), (X / 4, Y)),
    "while_in_if": ((X, Y), (-X, Y)),
    "break_in_if": ((X, Y), (-X, Y)),
    "elif_chain": ((X, Y), (X / 4, Y), (-X, Y)),
    "static_range_in_if": ((X, Y), (-X, Y)),
    "rows_in_if": ((X, np.array([[0.2, -0.1, 0.3], [0.5, 0.4, -0.6]])), (X + 1, np.array([[0.2, -0.1, 0.3]]))),
    "tree_maps_in_both": ((X, Y), (-X, Y)),
    "range_in_a_tuple_loop": ((X, Y), (-X, Y)),
}
MAX_ITERS = 10


def _fd(f: Callable[..., Any], args: tuple[Any, ...], k: int) -> np.ndarray:
    eps = 1e-6
    out = np.zeros_like(args[k])
    for idx in np.ndindex(args[k].shape):
        hi, lo = [np.array(a, dtype=float) for a in args], [np.array(a, dtype=float) for a in args]
        hi[k][idx] += eps
        lo[k][idx] -= eps
        out[idx] = (f(*hi) - f(*lo)) / (2 * eps)
    return out


@pytest.mark.parametrize("name", sorted(TWINS))
def test_grad_through_a_loop_inside_an_if_on_data(name: str) -> None:
    """Both arguments, every path: jax's twin, finite differences and the generated source run by NumPy."""
    f, twin = getattr(bp, name), TWINS[name]
    for args in POINTS[name]:
        g = srcjax.grad(f, argnums=(0, 1), max_iters=MAX_ITERS)
        got = g(*args)
        want = jax.grad(twin, argnums=(0, 1))(*(jnp.asarray(a) for a in args))
        numpy_run = srcjax.numpy_function(g)(*args)
        for k in range(2):
            np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(np.asarray(got[k]), _fd(f, args, k), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(np.asarray(numpy_run[k]), np.asarray(got[k]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["loops_in_both", "nested_ifs", "break_in_if"])
def test_vjp_jacrev_hessian_through_a_loop_inside_an_if_on_data(name: str) -> None:
    f, twin = getattr(bp, name), TWINS[name]
    for args in POINTS[name][:2]:
        jargs = tuple(jnp.asarray(a) for a in args)
        out, back = srcjax.vjp(f, *args, max_iters=MAX_ITERS)
        jout, jback = jax.vjp(twin, *jargs)
        np.testing.assert_allclose(np.asarray(out), np.asarray(jout), rtol=1e-12)
        for a, b in zip(back(np.float64(0.7)), jback(jnp.float64(0.7))):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(srcjax.jacrev(f, argnums=1, max_iters=MAX_ITERS)(*args)),
                                   np.asarray(jax.jacrev(twin, argnums=1)(*jargs)), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(srcjax.hessian(f, max_iters=MAX_ITERS)(*args)),
                                   np.asarray(jax.hessian(twin)(*jargs)), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", ["loop_in_if", "loops_in_both", "nested_ifs"])
def test_vmap_of_grad_takes_each_examples_branch(name: str) -> None:
    """A flag per example: the batch holds points on both paths."""
    f, twin = getattr(bp, name), TWINS[name]
    xs = np.stack([p[0] for p in POINTS[name]])
    y = POINTS[name][0][1]
    got = srcjax.vmap(srcjax.grad(f), in_axes=(0, None))(xs, y)
    want = jax.vmap(jax.grad(twin), in_axes=(0, None))(jnp.asarray(xs), jnp.asarray(y))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)
    numpy_run = srcjax.numpy_function(srcjax.vmap(srcjax.grad(f), in_axes=(0, None)))(xs, y)
    np.testing.assert_allclose(np.asarray(numpy_run), np.asarray(got), rtol=1e-12, atol=1e-12)


def test_the_generated_gradient_tests_the_flag_inside_the_loop() -> None:
    """``srcjax.source(srcjax.grad(f))``: the loop outside, a ``cond`` on the ``if``'s test in each step, and its
    adjoint loop the same; no tape in a branch."""
    text = srcjax.source(srcjax.grad(bp.loop_in_if))
    assert "for _i in loop_items:" in text and "srcjax.lax.cond(gt, if_true, if_false, y)" in text, text
    assert text.count("_tape.append(") == 1 and text.count("_tape.pop()") == 1, text
    both = srcjax.source(srcjax.grad(bp.loops_in_both))
    assert "not_gt = np.logical_not(gt)" in both, both


@pytest.mark.parametrize("kernel", ["gauss_seidel_while", "sor_until_converged"])
def test_grad_of_a_solver_whose_sweeps_loop_inside_its_while_on_data(kernel: str) -> None:
    """hunt23's Gauss-Seidel and SOR: a ``for`` over the rows inside a ``while`` on data; bounded, the ``while``'s
    exit is a flag around the sweep (``if not_stop:``), the sweep a loop inside an ``if`` on data."""
    fn = getattr(hunt23_programs, kernel)
    a = np.array([[4.0, 1.0, 0.0, 0.5], [1.0, 5.0, 1.0, 0.0], [0.0, 1.0, 6.0, 1.0], [0.3, 0.0, 1.0, 4.0]])
    b = np.array([1.0, 2.0, 3.0, 4.0])

    def loss(a: Any, b: Any) -> Any:
        return np.sum(fn(a, b) ** 2)

    got = srcjax.grad(loss, argnums=1, max_iters=60)(a, b)
    np.testing.assert_allclose(np.asarray(got), _fd(loss, (a, b), 1), rtol=1e-5, atol=1e-7)


def _scaled_steps(x: Any) -> Any:
    # the lowering's regression below, as reverse mode writes it: `stop` bound under `if gt:` only, read and
    # rebound in a loop under `if gt:` again
    y = x
    gt = np.sum(x) > 0
    if gt:
        stop = False
    for _i in range(10):
        if gt:
            go = np.logical_not(stop)
            if go:
                y = y * 1.3
                big = np.max(y) > 5
                if big:
                    stop = True
    return np.sum(y)


def test_a_flag_bound_on_one_path_and_updated_in_a_loop_on_that_path() -> None:
    """Silent wrong answer (the lowering, srcjax/lower/branches.py): a name bound on one branch of an ``if`` on data
    (``stop = False`` under ``if gt:``) and rebound in a later ``if gt:`` inside a loop lost every update where
    the branches joined (the earlier value, readable on the other branch of the same test only, was taken for the
    joined one): ``grad`` gave 1.3 ** 10 instead of 1.3 ** 5. The generated source run by NumPy was right."""
    x = np.array([0.5, 1.5, 0.3])
    got = np.asarray(srcjax.grad(_scaled_steps)(x))
    np.testing.assert_allclose(got, np.full(3, 1.3 ** 5), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(srcjax.grad(_scaled_steps))(x)), got, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.grad(_scaled_steps)(-x)), np.ones(3))


def test_a_loop_over_values_the_branch_computes_is_refused_at_the_loop() -> None:
    with pytest.raises(srcjax.TranspileError, match="loop over `.*` inside an `if` on array data") as e:
        srcjax.grad(_rows_made_in_the_branch)(X)
    assert "test_branch_loops.py" in str(e.value).splitlines()[0]


def test_a_loop_over_a_python_sequence_inside_an_if_on_data_stays_in_the_branch() -> None:
    """Silent-free but loud regression of the rewrite (CI: test_vmap_container_joins' tree_map_both_branches,
    test_vmap_container_cotangents, np.block in test_composites and test_numpy_coverage): a loop over a Python
    sequence (tree_map's over a dict's leaves, np.block's over the lists it is given) unrolls inside the branch, as
    before the rewrite, which moved it out and then refused its appends under the flag ("`items.append(...)`
    inside an `if` on array data") or its list made in the branch (unlocated). The gradients: test_grad_through_a_
    loop_inside_an_if_on_data[tree_maps_in_both] and below."""
    text = srcjax.source(srcjax.grad(bp.tree_maps_in_both))
    assert "np.logical_not" not in text and "    if gt:\n        d_before_1 = d\n        items = []" in text, text
    a, b = np.array([[0.3, -0.2], [0.5, 0.1]]), np.array([[1.0, 0.4], [-0.6, 0.2]])

    def block(a: Any, b: Any) -> Any:
        return np.sum(np.block([[a, b], [b.T, a]]) ** 3)

    def jax_block(a: Any, b: Any) -> Any:
        return jnp.sum(jnp.block([[a, b], [b.T, a]]) ** 3)

    got = srcjax.grad(block, argnums=(0, 1))(a, b)
    want = jax.grad(jax_block, argnums=(0, 1))(jnp.asarray(a), jnp.asarray(b))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)


def test_a_helpers_loop_over_rows_the_branch_computes_is_refused_at_the_users_line() -> None:
    """The refusal of a loop over values the branch computes, for a helper's loop written out in the branch (no
    line of the user's, nor has the branch written anew): it was unlocated; now at a line of the user's branch."""
    with pytest.raises(srcjax.TranspileError, match="loop over `rows` inside an `if` on array data") as e:
        srcjax.grad(bp.helper_over_rows_made_in_the_branch)(X, Y)
    first = str(e.value).splitlines()[0]
    assert "branch_loops_programs.py:" in first and "m = np.outer(x, y)" in str(e.value), str(e.value)


def test_a_loop_over_a_static_array_or_a_modules_tuple_moves() -> None:
    """What moves: a ``for`` over ``np.arange(3)`` (a static array's rows) as over a range, and a ``for`` over a
    module's tuple (it was left in the branch and refused at the user's ``if``: its tape would be written there)."""
    for x in (X, -X):
        np.testing.assert_allclose(np.asarray(srcjax.grad(bp.arange_in_if)(x, Y)), _fd(bp.arange_in_if, (x, Y), 0),
                                   rtol=1e-6, atol=1e-8)
        want = jax.grad(_global_tuple_in_if)(jnp.asarray(x), jnp.asarray(Y))
        np.testing.assert_allclose(np.asarray(srcjax.grad(bp.global_tuple_in_if)(x, Y)), np.asarray(want),
                                   rtol=1e-12, atol=1e-12)


def _global_tuple_in_if(x: Any, y: Any) -> Any:
    def steps(y: Any) -> Any:
        for c in bp.SCALES:
            y = jnp.sin(y * x) * c
        return y

    return jnp.sum(lax.cond(jnp.sum(x) > 0, steps, lambda y: y, y))


def _rows_made_in_the_branch(x: Any) -> Any:
    y = x
    if np.sum(x) > 0:
        rows = np.outer(x, x)
        for r in rows:
            y = y * r
    return np.sum(y)


# -- random programs: loop kinds x branch kinds x transformations -------------------------------------------------
LOOPS = {
    "for": "for i in range(3):\n{I}    y = np.tanh(y * x) + {c}",
    "rows": "for r in z:\n{I}    y = y * r + {c}",
    "while": "k = 0\n{I}while np.sum(y * y) < 4.0 and k < 4:\n{I}    y = y * 1.4 + {c}\n{I}    k = k + 1",
    "break": "for i in range(5):\n{I}    y = np.sin(y) + x * {c}\n{I}    if np.max(y) > 0.8:\n{I}        break",
}
TESTS = ["np.sum(x) > 0.3", "np.max(y) < 0.5", "x[0] > 0", "np.mean(x * y) > -0.1"]


def write_program(r: random.Random) -> str:
    """``def f(x, z)`` (x of shape (3,), z of shape (2, 3)): a statement, then an ``if`` on data (with an ``else``,
    an ``elif`` or an ``if`` nested in it) holding one or two loops, then a reduction."""
    def c() -> str:
        return r.choice(["0.5", "0.1", "-0.3", "x"])

    def loop(ind: str) -> str:
        return r.choice(list(LOOPS.values())).format(I=ind, c=c())

    def branch(ind: str) -> str:
        parts = [f"y = y * {c()} + x"] if r.random() < 0.5 else []
        parts.append(loop(ind))
        if r.random() < 0.3:
            parts.append(loop(ind))
        if r.random() < 0.5:
            parts.append(f"y = y + {c()}")
        return "\n".join(ind + p for p in parts)

    kind = r.choice(["if", "ifelse", "elif", "nested"])
    lines = [f"    y = x * {c()} + z[0]", f"    if {r.choice(TESTS)}:", branch("        ")]
    if kind == "ifelse":
        lines += ["    else:", branch("        ")]
    elif kind == "elif":
        lines += [f"    elif {r.choice(TESTS)}:", branch("        ")]
    elif kind == "nested":
        lines += [f"        if {r.choice(TESTS)}:", branch("            ")]
    lines.append(f"    return np.sum(y * {r.choice(['y', 'x', '1.0'])})")
    return "import numpy as np\n\n\ndef f(x, z):\n" + "\n".join(lines) + "\n"


XS = np.array([[0.6, -0.2, 0.4], [-0.5, 0.3, -0.1], [0.2, 0.9, -0.7]])
Z = np.array([[0.3, -0.4, 0.2], [0.1, 0.5, -0.3]])
TRANSFORMS = ("grad", "vjp", "jacrev", "hessian", "vmap(grad)")


def check(text: str, transform: str) -> None:
    f = load(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fd = np.stack([_fd(f, (x, Z), 0) for x in XS])
    if transform == "vmap(grad)":
        g = srcjax.vmap(srcjax.grad(f, max_iters=8), in_axes=(0, None))
        got = np.asarray(g(XS, Z))
        np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-6, err_msg=f"{transform}\n{text}")
        np.testing.assert_allclose(np.asarray(srcjax.numpy_function(g)(XS, Z)), got, rtol=1e-10, atol=1e-12,
                                   err_msg=f"NumPy running {transform}\n{text}")
        return
    for x, want in zip(XS, fd):
        if transform == "grad":
            got = np.asarray(srcjax.grad(f, max_iters=8)(x, Z))
        elif transform == "vjp":
            out, back = srcjax.vjp(f, x, Z, max_iters=8)
            np.testing.assert_allclose(np.asarray(out), f(x, Z), rtol=1e-12, err_msg=f"vjp's value\n{text}")
            got = np.asarray(back(np.float64(1.0))[0])
        elif transform == "jacrev":
            got = np.asarray(srcjax.jacrev(f, max_iters=8)(x, Z))
        else:  # hessian: against finite differences of srcjax's grad (checked above against f's)
            h = np.asarray(srcjax.hessian(f, max_iters=8)(x, Z))
            g = srcjax.grad(f, max_iters=8)
            fd_h = np.stack([(np.asarray(g(x + 1e-6 * e, Z)) - np.asarray(g(x - 1e-6 * e, Z))) / 2e-6
                             for e in np.eye(3)], axis=-1)
            np.testing.assert_allclose(h, fd_h, rtol=1e-4, atol=1e-5, err_msg=f"hessian\n{text}")
            continue
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{transform}\n{text}")


@examples(3, scale=100)
@given(st.integers(0, 2**32 - 1), st.sampled_from(TRANSFORMS))
def test_random_loops_inside_ifs_on_data_under_reverse_mode(seed: int, transform: str) -> None:
    check(write_program(random.Random(seed)), transform)


def main(count: int, seed: int) -> None:  # pragma: no cover (a sweep by hand)
    for s in range(seed, seed + count):
        for t in TRANSFORMS:
            text = write_program(random.Random(s))
            try:
                check(text, t)
            except AssertionError as e:
                print(f"seed {s} {t}: WRONG {str(e)[:1500]}")
            except Exception as e:  # noqa: BLE001
                print(f"seed {s} {t}: {type(e).__name__}: {str(e)[:600]}\n{text}")
        print(s, "done", flush=True)


if __name__ == "__main__":  # pragma: no cover
    import sys

    main(int(sys.argv[1]), int(sys.argv[2]))
