"""Reverse mode through control flow on data: ifs inside loops, break/continue, while with a bound.

Each gradient is checked against jax (``jax.grad`` runs the same Python
control flow eagerly), the generated derivative source run by NumPy, and
central finite differences.
"""

import inspect

import jax
import numpy as np
import pytest
from hypothesis import Phase, assume, example, given, note, settings
from hypothesis import strategies as st

import srcjax
from srcjax import lax
from tests import twins
from tests.fd import central_fd
from tests.twins import JAX
from tests.written import EXAMPLES, THOROUGH, check_transforms, data_programs, examples, numpy_and_jax, run_numpy

jax.config.update("jax_enable_x64", True)


# -- programs (module level: srcjax reads their source) ---------------------------------------

def if_in_loop(x):
    for _ in range(5):
        if np.sum(x) < 3.0:
            x = np.sin(x) * 1.5
    return np.sum(x)


def branch_locals_in_loop(x):
    y = x
    for _ in range(6):
        s = np.sum(y)
        if s > 0.5:
            z = np.tanh(y) * 2.0
            y = y - 0.1 * z
        else:
            y = y * 1.3
    return np.sum(y ** 2)


def nested_ifs_in_loop(x, w):
    for _ in range(4):
        if np.max(x) > 0.0:
            if np.min(x) < -0.5:
                t = x * w
                x = np.tanh(t)
            else:
                x = x - 0.3 * w
        else:
            x = x * x + w
    return np.sum(x * w)


def break_on_data(x0, v):
    x = x0
    for _ in range(100):
        x = x + 0.05 * np.tanh(v * x)
        if np.max(x) > 2.0:
            break
    return np.sum(x)


def continue_on_data(x):
    acc = np.zeros_like(x)
    for _ in range(8):
        x = np.sin(x) + 0.5
        if np.sum(x) < 1.0:
            continue
        acc = acc + x * x
    return np.sum(acc)


def break_and_continue(x):
    acc = 0.0 * x
    for _ in range(20):
        x = 0.9 * x + 0.2 * np.cos(x)
        if np.sum(x) < 0.0:
            continue
        acc = acc + x
        if np.sum(acc) > 4.0:
            break
    return np.sum(acc * acc)


def newton_counted(a):
    x = a
    it = 0
    while it < 50 and np.max(np.abs(x * x - a)) > 1e-10:
        x = 0.5 * (x + a / x)
        it += 1
    return np.sum(x)


def newton_unbounded(a):
    x = a
    while np.max(np.abs(x * x - a)) > 1e-10:
        x = 0.5 * (x + a / x)
    return np.sum(x)


def while_true_break(x):
    while True:
        x = x * 1.5 + 0.1
        if np.sum(x) > 10.0:
            break
    return np.sum(np.sin(x))


def newton_three_steps(a):
    x = a
    for _ in range(3):
        if np.max(np.abs(x * x - a)) > 1e-10:
            x = 0.5 * (x + a / x)
    return np.sum(x)


def _damped(x, k):
    while np.max(np.abs(x)) > 0.01:
        x = x * k
    return x


def while_in_helper(x, k):
    y = _damped(x, k)
    return np.sum(y * y) + np.sum(x)


def while_in_for(x):
    total = 0.0
    for i in range(3):
        y = x + i
        while np.sum(y) < 5.0:
            y = y * 1.7
        total = total + np.sum(np.sqrt(y))
    return total


def counted_le(x, n):
    i = 1
    while i <= n and np.sum(x) < 100.0:
        x = x * 1.5
        i = i + 1
    return np.sum(x)


def _double(x):
    return x * 2.0


def lax_cond_fns(x):
    return np.sum(srcjax.lax.cond(np.sum(x) > 0, np.sin, _double, x))


def lax_cond_nested(x, w):
    def yes(a, b):
        t = a * b
        return np.tanh(t) + w
    def no(a, b):
        return a - b * w
    y = srcjax.lax.cond(np.max(x) > 0.2, yes, no, x, w)
    return np.sum(y * y)


def lax_switch(x, k):
    def second(a):
        return a * a
    y = srcjax.lax.switch(k, [np.sin, second, np.cos], x)
    return np.sum(y)


def lax_fori(x, w):
    def body(i, c):
        return np.tanh(c * w + i)
    return np.sum(srcjax.lax.fori_loop(0, 30, body, x))


def lax_fori_tuple(x, w):
    def body(i, carry):
        a, b = carry
        a2 = a + 0.1 * np.sin(b)
        b2 = b * w
        return (a2, b2)
    a, b = srcjax.lax.fori_loop(0, 5, body, (x, x * 0.5))
    return np.sum(a) + np.sum(b * b)


def lax_while(a):
    def keep_going(x):
        return np.max(np.abs(x * x - a)) > 1e-10
    def step(x):
        return 0.5 * (x + a / x)
    return np.sum(srcjax.lax.while_loop(keep_going, step, a))


def lax_scan(x, w):
    def step(c, row):
        c2 = np.tanh(c * w + row)
        return c2, c2 * c2
    c, ys = srcjax.lax.scan(step, x[0], x)
    return np.sum(c) + np.sum(ys)


def lax_scan_reverse(x, w):
    def step(c, row):
        c2 = c * w + np.sin(row)
        return c2, c2
    c, ys = srcjax.lax.scan(step, np.zeros_like(x[0]), x, reverse=True)
    return np.sum(ys * np.arange(1.0, 5.0)[:, None])


def lax_switch_on_a_variable(x, k):
    fns = [np.sin, np.cos]
    return np.sum(srcjax.lax.switch(k, fns, x))


def jax_twin(fn):
    return twins.jax_twin(fn, helpers=(_damped, _double))


def check(fn, args, argnums=0, max_iters=None, fd=True, rtol=1e-9):
    g = srcjax.grad(fn, argnums=argnums, max_iters=max_iters)
    ours = g(*args)
    ref = jax.grad(jax_twin(fn), argnums=argnums)(*args)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    ours_t = (ours,) if isinstance(argnums, int) else ours
    ref_t = (ref,) if isinstance(argnums, int) else ref
    via_numpy = srcjax.numpy_function(g)(*args)
    np_t = (via_numpy,) if isinstance(argnums, int) else via_numpy
    for k, i in enumerate(nums):
        np.testing.assert_allclose(np.asarray(ours_t[k]), np.asarray(ref_t[k]), rtol=rtol, atol=1e-11)
        np.testing.assert_allclose(np.asarray(np_t[k]), np.asarray(ours_t[k]), rtol=1e-10, atol=1e-12)
        if fd:
            np.testing.assert_allclose(np.asarray(ours_t[k]), central_fd(fn, args, i), rtol=1e-5, atol=1e-6)
    return g


# -- ifs on data inside loops --------------------------------------------------------------------

def test_if_on_data_inside_a_loop_overwriting_the_carry():
    g = check(if_in_loop, (np.array([0.1, 0.2, 0.3]),))
    assert "_before" in srcjax.source(g)  # the old value is saved by both branches, not pushed in one


@settings(max_examples=15, deadline=None, derandomize=not THOROUGH)  # (the default sample is fixed: docs/testing.md)
@given(st.lists(st.floats(-1.0, 1.0, allow_subnormal=False), min_size=3, max_size=3))
def test_names_computed_on_one_branch_inside_a_loop(xs):
    x = np.array(xs)
    check(branch_locals_in_loop, (x,), fd=False)


def test_nested_ifs_on_data_inside_a_loop():
    r = np.random.default_rng(0)
    for _ in range(4):
        x, w = r.normal(size=4), r.normal(size=4)
        check(nested_ifs_in_loop, (x, w), argnums=(0, 1), fd=False)


def test_unset_is_loud_under_numpy():
    """Any use of UNSET under NumPy but an item read or a sum fails loudly; a sum adds nothing (as compiled, where
    UNSET joins as zeros: a cotangent summed with that of a slot a branch left UNSET, reverse over reverse)."""
    from srcjax.adjoint import UNSET

    assert repr(UNSET) == "UNSET"
    assert UNSET + 1.0 == 1.0 and 2.0 + UNSET == 2.0 and UNSET + UNSET is UNSET
    for use in (lambda: UNSET * 1.0, lambda: UNSET - 1.0, lambda: np.sin(UNSET), lambda: np.ones(2) * UNSET,
                lambda: float(UNSET)):
        with pytest.raises(TypeError):
            use()


# -- break / continue ----------------------------------------------------------------------------

def test_break_on_data():
    x0, v = np.array([0.5, 0.8, 1.0]), np.array([1.0, 2.0, 0.5])
    g = check(break_on_data, (x0, v), argnums=(0, 1))
    src = srcjax.source(g)
    assert "np.logical_or" in src and "        break" not in src


def test_break_on_data_is_one_loop_each_way():
    x0, v = np.linspace(0.1, 1.0, 8), np.linspace(1.0, 2.0, 8)
    text = srcjax.lower(srcjax.grad(break_on_data, argnums=(0, 1)), x0, v).as_text()
    assert text.count("stablehlo.while") == 2


def test_continue_on_data():
    check(continue_on_data, (np.array([0.1, -0.9, 0.2]),))
    check(continue_on_data, (np.array([-2.0, -0.9, -1.2]),))


def test_break_and_continue_together():
    for x in (np.array([0.3, 0.5]), np.array([-1.0, 0.2]), np.array([2.0, 1.0])):
        check(break_and_continue, (x,))


# -- while on data -------------------------------------------------------------------------------

def test_while_with_a_counted_test_needs_no_bound():
    a = np.array([2.0, 3.0, 10.0])
    g = check(newton_counted, (a,))
    np.testing.assert_allclose(np.asarray(g(a)), 0.5 / np.sqrt(a), rtol=1e-9)
    assert "range(0, 50, 1)" in srcjax.source(g)


def test_while_counted_with_le_and_a_python_int_bound():
    x = np.array([1.0, 2.0])
    for n in (0, 2, 5, 20):
        g = srcjax.grad(counted_le)
        ref = jax.grad(jax_twin(counted_le))(x, n)
        np.testing.assert_allclose(np.asarray(g(x, n)), np.asarray(ref), rtol=1e-12)


def test_while_on_data_with_max_iters():
    a = np.array([2.0, 3.0, 10.0])
    g = check(newton_unbounded, (a,), max_iters=60)
    assert "range(60)" in srcjax.source(g)
    v, gv = srcjax.value_and_grad(newton_unbounded, max_iters=60)(a)
    np.testing.assert_allclose(np.asarray(v), np.sum(np.sqrt(a)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gv), 0.5 / np.sqrt(a), rtol=1e-9)


def test_max_iters_too_small_truncates_the_loop():
    a = np.array([2.0, 30.0])
    ours = srcjax.grad(newton_unbounded, max_iters=3)(a)
    ref = JAX.grad(jax_twin(newton_three_steps))(a)  # what max_iters=3 means: the first three iterations
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-12)
    assert not np.allclose(np.asarray(ours), 0.5 / np.sqrt(a), rtol=1e-3)


def test_while_true_with_a_break_on_data():
    check(while_true_break, (np.array([0.5, 1.0]),), max_iters=30)


def test_while_on_data_inside_a_helper():
    x = np.array([0.5, -0.8, 0.3])
    check(while_in_helper, (x, 0.7), max_iters=40, fd=False)
    ours = srcjax.grad(while_in_helper, argnums=1, max_iters=40)(x, 0.7)
    ref = JAX.grad(jax_twin(while_in_helper), argnums=1)(x, 0.7)
    np.testing.assert_allclose(float(ours), float(ref), rtol=1e-9)


def test_while_on_data_inside_a_for():
    check(while_in_for, (np.array([0.5, 0.8]),), max_iters=20)


def test_vjp_and_jacrev_with_max_iters():
    a = np.array([2.0, 3.0])
    out, f_vjp = srcjax.vjp(newton_unbounded, a, max_iters=60)
    (da,) = f_vjp(1.0)
    np.testing.assert_allclose(np.asarray(da), 0.5 / np.sqrt(a), rtol=1e-9)
    J = srcjax.jacrev(newton_unbounded, max_iters=60)(a)
    np.testing.assert_allclose(np.asarray(J), 0.5 / np.sqrt(a), rtol=1e-9)


def test_hessian_through_a_while_with_max_iters():
    a = np.array([2.0, 3.0])
    H = srcjax.hessian(newton_unbounded, max_iters=60)(a)
    np.testing.assert_allclose(np.asarray(H), np.diag(-0.25 * a ** -1.5), rtol=1e-7, atol=1e-12)


# -- errors ----------------------------------------------------------------------------------

def test_while_on_data_without_a_bound_says_how_to_give_one():
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.grad(newton_unbounded)(np.array([2.0]))
    msg = str(e.value)
    assert "max_iters" in msg and "it < 100" in msg
    line = inspect.getsourcelines(newton_unbounded)[1] + 2
    assert f"{__file__}:{line}:" in msg


def test_max_iters_must_be_a_positive_int():
    for bad in (0, -3, 2.5, True):
        with pytest.raises(srcjax.TranspileError):
            srcjax.grad(newton_unbounded, max_iters=bad)(np.array([2.0]))


def test_forward_mode_needs_no_bound():
    a = np.array([2.0, 3.0])
    _, t = srcjax.jvp(newton_unbounded, (a,), (np.ones(2),))
    np.testing.assert_allclose(float(t), np.sum(0.5 / np.sqrt(a)), rtol=1e-9)


# -- srcjax.lax written by the user --------------------------------------------------------------

def test_grad_of_lax_cond_with_module_functions():
    for x in (np.array([0.3, 0.5]), np.array([-0.3, -0.5])):
        check(lax_cond_fns, (x,))


def test_grad_of_lax_cond_with_nested_defs():
    for x in (np.array([0.3, 0.5]), np.array([-0.3, 0.1])):
        check(lax_cond_nested, (x, np.array([0.7, -0.2])), argnums=(0, 1))


def test_grad_of_lax_switch():
    x = np.array([0.3, -0.5, 1.1])
    jg = JAX.grad(jax_twin(lax_switch))  # (compiled once: the branch index is an argument)
    for k in (-1, 0, 1, 2, 5):
        g = srcjax.grad(lax_switch)
        ref = jg(x, k)
        np.testing.assert_allclose(np.asarray(g(x, k)), np.asarray(ref), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(srcjax.numpy_function(g)(x, k)), np.asarray(ref), rtol=1e-12)


def test_grad_of_lax_fori_loop_is_one_loop_each_way():
    x, w = np.array([0.3, -0.5]), np.array([0.9, 1.1])
    g = check(lax_fori, (x, w), argnums=(0, 1))
    assert srcjax.lower(g, x, w).as_text().count("stablehlo.while") == 2
    assert "srcjax.lax.fori_loop" not in srcjax.source(g)


def test_grad_of_lax_fori_loop_with_a_tuple_carry():
    check(lax_fori_tuple, (np.array([0.3, -0.5]), np.array([0.9, 1.1])), argnums=(0, 1))


def test_grad_of_lax_while_loop_with_max_iters():
    a = np.array([2.0, 3.0, 10.0])
    g = srcjax.grad(lax_while, max_iters=60)
    np.testing.assert_allclose(np.asarray(g(a)), 0.5 / np.sqrt(a), rtol=1e-9)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(g)(a)), 0.5 / np.sqrt(a), rtol=1e-9)
    with pytest.raises(srcjax.TranspileError, match="max_iters"):
        srcjax.grad(lax_while)(a)
    # forward mode: as written, no bound; jax agrees (it has no reverse mode for while_loop)
    _, t = srcjax.jvp(lax_while, (a,), (np.ones(3),))
    _, jt = JAX.jvp(jax_twin(lax_while), (a,), (np.ones(3),))
    np.testing.assert_allclose(np.asarray(t), np.asarray(jt), rtol=1e-9)


def test_grad_of_lax_scan():
    x, w = np.random.default_rng(1).normal(size=(4, 3)), np.array([0.9, 1.1, -0.4])
    check(lax_scan, (x, w), argnums=(0, 1))
    check(lax_scan_reverse, (x, w), argnums=(0, 1))


def test_jvp_of_lax_calls_matches_jax():
    r = np.random.default_rng(2)
    cases = [(lax_cond_nested, (r.normal(size=2), r.normal(size=2))), (lax_fori, (r.normal(size=2), r.normal(size=2))),
             (lax_scan, (r.normal(size=(4, 3)), r.normal(size=3)))]
    for fn, args in cases:
        tangents = tuple(r.normal(size=np.shape(a)) for a in args)
        out, t = srcjax.jvp(fn, args, tangents)
        jout, jt = JAX.jvp(jax_twin(fn), args, tangents)
        np.testing.assert_allclose(np.asarray(out), np.asarray(jout), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(t), np.asarray(jt), rtol=1e-9)



def test_regression_update_of_a_name_the_adjoint_never_reads():
    # `ys = index_update(ys, i, y)` with `ys` itself never read by the adjoint (here: returned in a pair):
    # the rule zeroed ys's cotangent at i, then read the zeroed one for y (a silently wrong gradient)
    x, w = np.random.default_rng(3).normal(size=(4, 2)), np.array([0.5, -1.2])
    check(lax_scan, (x, w), argnums=(0, 1))


def test_lax_call_reverse_mode_cannot_write_out_is_a_clear_error():
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.grad(lax_switch_on_a_variable)(np.array([0.5]), 1)
    msg = str(e.value)
    assert "literal list" in msg and "for/while/if" in msg
    line = inspect.getsourcelines(lax_switch_on_a_variable)[1] + 2
    assert f"{__file__}:{line}:" in msg


# -- loops whose iterable depends on an enclosing loop; list comprehensions -------------------

def triangle(x):
    items = []
    for j in range(3):
        for k in range(j, 3):
            items.append(x[j] * x[k])
    return np.sum(np.stack(items))


def nested_counted_while(x, n):
    acc = 0.0
    for i in range(n):
        y = x * (i + 1.0)
        k = 0
        while k < i + 1:
            y = np.sin(y)
            k = k + 1
        acc = acc + np.sum(y)
    return acc


def comp_simple(x):
    return np.sum(np.stack([np.sin(x * i) for i in range(3)]))


def comp_over_params(x, ws):
    hs = [np.tanh(w @ x) for w in ws]
    return np.sum(np.concatenate(hs) ** 2)


def comp_filter_and_shadow(x):
    i = 10.0
    ys = [x * i for i in range(1, 4) if i != 2]
    return np.sum(np.stack(ys)) * i


def comp_two_fors(x):
    return np.sum(np.stack([x[j] * x[k] for j in range(3) for k in range(j, 3)]))


def comp_nested(x):
    return np.sum(np.stack([np.sum(np.stack([x * a * b for a in range(2)])) for b in range(3)]))


def test_inner_loop_range_from_the_outer_loop_is_saved_per_iteration():
    # regression: the adjoint reran every inner loop over the last outer iteration's range (a wrong gradient)
    g = check(triangle, (np.array([1.0, 2.0, 3.0]),))
    np.testing.assert_allclose(g(np.array([1.0, 2.0, 3.0])), [7.0, 8.0, 9.0])


def test_while_nested_in_a_for_saves_its_trip_count_per_iteration():
    check(nested_counted_while, (np.array([0.3, 0.7]), 3), fd=True)


@pytest.mark.parametrize("fn,args", [
    (comp_simple, (np.array([0.3, -0.4, 1.1]),)),
    (comp_over_params, (np.array([0.3, -0.4, 1.1]), [np.linspace(-1, 1, 6).reshape(2, 3) * k for k in (1, 2, 3)])),
    (comp_filter_and_shadow, (np.array([0.3, -0.4]),)),
    (comp_two_fors, (np.array([1.0, 2.0, 3.0]),)),
    (comp_nested, (np.array([0.3, -0.4]),)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_list_comprehensions_over_differentiated_values(fn, args):
    g = check(fn, args, fd=not isinstance(args[-1], list))
    assert ".append(" in srcjax.source(g)  # the comprehension, written as a loop that appends


def test_comprehension_written_as_loop_keeps_errors_at_the_users_line():
    def bad(x, w):
        return np.sum(np.stack([w @ x * i for i in range(2)]))

    with pytest.raises(srcjax.ShapeError) as e:
        srcjax.grad(bad)(np.ones(3), np.ones((2, 4)))
    assert f"{__file__}:" in str(e.value) and "w @ x" in str(e.value)


# -- random programs with control flow on data: gradients against jax -------------------------

_STEPS = {
    "if_data": ["if np.sum({a}) > 0.3:", "    {v} = np.tanh({a}) * 1.5", "else:", "    {v} = {a} * {a} - 0.5"],
    "break": ["{v} = {a} * 0.5", "for _ in range(4):", "    {v} = np.sin({v}) + 0.3",
              "    if np.max({v}) > 0.9:", "        break"],
    "continue": ["{v} = {a} * 1.0", "for k in range(3):", "    if np.sum({v}) < -0.2:", "        continue",
                 "    {v} = {v} * 0.8 + k * 0.1"],
    "while": ["{v} = {a} * 1.0", "it = 0", "while it < 3 and np.sum({v} * {v}) < 4.0:",
              "    {v} = {v} * 1.4 + 0.1", "    it = it + 1"],
    "cumsum": ["{v} = np.cumsum({a}, axis=-1) * 0.5"],
    "comprehension": ["{v} = np.sum(np.stack([np.tanh({a} * k) for k in range(1, 3)]), axis=0)"],
    "append": ["items = []", "for k in range(2):", "    items.append(np.cos({a} + k))",
               "{v} = np.prod(np.stack(items), axis=0)"],
    "swap": ["p, q = {a}, np.tanh({a})", "p, q = q * 0.5, p", "{v} = p + q"],
    "triangle": ["{v} = {a} * 0.0", "for j in range(3):", "    for k in range(j, 3):",
                 "        {v} = {v} + np.sin({a} * (j + k) * 0.3)"],
    "gather": ["{v} = np.tanh({a}[np.arange(3) // 2]) * 2.0"],  # indices 0, 0, 1: repeated
    "where": ["{v} = np.where({a} > 0.1, {a} * 2.0, np.exp({a}))"],
    "generator": ["{v} = sum(np.tanh({a} * k) for k in range(1, 3))"],
    "generator_filter": ["{v} = sum(({a} * j + k for j in range(3) for k in range(j) if j != k + 1), {a} * 0.5)"],
    "append_index": ["items = []", "for k in range(3):", "    items.append(np.sin({a} + k))",
                     "{v} = items[0] * items[-1] + items[1]"],
    "append_read_back": ["items = [{a}]", "for k in range(2):", "    items.append(np.cos(items[-1]) * 0.9)",
                         "{v} = items[len(items) - 1] + items[0] * 0.5"],
    # names rebound from themselves: after a loop or a branch on data, in both branches, in a loop
    "rebind_after_while": ["{v} = {a} * 1.0", "j = 0", "while j < 3 and {v}.mean() < 3.0:",
                           "    {v} = {v} + 0.5 * (1.5 + np.cos(np.exp(-{a} * {a})))", "    j = j + 1",
                           "{v} = np.sin({v})"],
    "rebind_in_branches": ["{v} = {a} + 0.0", "if np.mean({v}) < -0.5:", "    {v} = np.sin({v} - {a})", "else:",
                           "    {v} = {v} * {v} * np.tanh({v})", "{v} = {a} * {v}"],
    "loop_local": ["{v} = {a} * 1.0", "j = 0", "while j < 2:", "    t = 0.5 * (1.0 / (1.0 + {v} * {v})) - {v}",
                   "    {v} = {v} / (1.0 + {a} * {a})", "    j += 1"],
    "rebind_in_loop": ["{v} = {a} * 1.0", "for _ in range(3):", "    {v} = {a} * {v}"],
    "rebind_argument": ["{a} = np.sin({a}) * {a}", "{v} = {a} * 1.0"],
}


@st.composite
def control_program(draw):
    """``def f(x, w)``: x f64[3], w f64[3]; every step keeps the shape (3,)."""
    names, lines = ["x", "w"], []
    for n in range(draw(st.integers(2, 5))):
        a = draw(st.sampled_from(names))
        v = f"v{n}"
        step = draw(st.sampled_from(sorted(_STEPS)))
        lines += [ln.format(a=a, v=v) for ln in _STEPS[step]]
        if draw(st.booleans()):
            b = draw(st.sampled_from(names))
            lines.append(f"{v} = {v} + {b} * 0.25")
        names.append(v)
    body = "\n".join("    " + ln for ln in lines)
    return f"import numpy as np\n\n\ndef f(x, w):\n{body}\n    return np.sum({names[-1]} * {names[-2]})\n"


# Without shrinking by default: each example compiles several programs, and a failing one prints its source.
_NO_SHRINK = {} if THOROUGH or EXAMPLES else {"phases": [Phase.explicit, Phase.reuse, Phase.generate]}


# found by the thorough run (session 16): jvp's tangent of `v1 = v1 + x * 0.25` after a folded `np.where`
# line was wrong (the readable fold copied a folded definition without its parentheses)
_REBOUND_AFTER_FOLD = """import numpy as np


def f(x, w):
    items = []
    for k in range(2):
        items.append(np.cos(x + k))
    v0 = np.prod(np.stack(items), axis=0)
    v1 = np.where(x > 0.1, x * 2.0, np.exp(x))
    v1 = v1 + x * 0.25
    return np.sum(v1 * v0)
"""


@examples(10, scale=20, **_NO_SHRINK)
@example(text=_REBOUND_AFTER_FOLD, vals=[0.0] * 6)
@given(control_program(), st.lists(st.floats(-1.0, 1.0, allow_subnormal=False), min_size=6, max_size=6))
def test_random_control_programs_match_jax(tmp_path_factory, text, vals):
    """grad (XLA and the generated source run by NumPy) and jvp against jax."""
    note(text)
    f, jf = numpy_and_jax(tmp_path_factory.mktemp("control_programs", numbered=True), text, "ctl")
    x, w = np.array(vals[:3]), np.array(vals[3:])
    g = srcjax.grad(f, argnums=(0, 1))
    ours = g(x, w)
    ref = JAX.grad(jf, argnums=(0, 1))(x, w)
    via_numpy = srcjax.numpy_function(g)(x, w)
    for a, b, c in zip(ours, ref, via_numpy):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-11, err_msg="grad, XLA")
        np.testing.assert_allclose(c, np.asarray(b), rtol=1e-9, atol=1e-11, err_msg="grad, NumPy")
    tangents = (np.cos(np.arange(3.0) + x), np.sin(np.arange(3.0) - w))
    out, t = srcjax.jvp(f, (x, w), tangents)
    jout, jt = JAX.jvp(jf, (x, w), tangents)
    np.testing.assert_allclose(np.asarray(out), np.asarray(jout), rtol=1e-9, atol=1e-11, err_msg="jvp value")
    np.testing.assert_allclose(np.asarray(t), np.asarray(jt), rtol=1e-8, atol=1e-10, err_msg="jvp tangent")


# issue 13's two random programs that forward mode got wrong (jvp read names after rebinding them)
FZ_A = """import numpy as np


def f(x, y, z):
    j = 0
    while j < 3 and z.mean() < 3.0:
        z = z + 0.5 * (1.5 + np.cos(np.exp(-x * x)))
        j = j + 1
    if np.mean(y) < -0.5:
        z = np.sin(z - x)
    else:
        z = np.sin(z)
    v1 = z[:, -2:]
    v2 = z.T
    if np.max(z) > 0.5:
        y = y + y + 0.1
    else:
        y = y * y * np.tanh(y)
    return np.sum(y) + 0.6 * np.sum(v1 * v1) + 0.1 * np.sum(np.tanh(v2))
"""
FZ_B = """import numpy as np


def f(x, y, z):
    j = 0
    while j < 2:
        v1 = 0.5 * (1.0 / (1.0 + y * y)) - y
        y = y / (1.0 + x * x)
        j += 1
    v2 = z @ y
    v3 = x - -y
    v3 = -v3 + v3
    if v3.mean() < 0.5:
        v4 = np.tanh(v2)
    else:
        v4 = np.cos(np.log(1.0 + np.tanh(v2) * np.tanh(v2)))
    v5 = np.cos(v3) * -x * 0.25
    v8 = np.reshape(v5, (3, 1))
    if v2.mean() > -1.0:
        v8 = np.sin(v8)
    j = 0
    while j < 3 and v8.sum() < 0.0:
        v8 = v8 + 0.3 * np.exp(np.sin(v8))
        j += 1
    v10 = np.sin(z) + np.sum(v5, axis=0, keepdims=True)
    return np.sum(np.tanh(z.T).mean(axis=-2)) - 0.9 * v10.sum() + 0.5 * np.sum(v8)
"""


@examples(3, **_NO_SHRINK)
@example((FZ_A, {"x": (5, 4), "y": (4, 4), "z": (5, 4)}), 0)
@example((FZ_B, {"x": (), "y": (3,), "z": (2, 3)}), 0)
@given(data_programs(), st.integers(0, 2 ** 16))
def test_random_data_programs_match_jax(tmp_path_factory, program, seed):
    """Random programs with control flow on data that rebind names from themselves (``y = e * y``),
    right after loops and branches on data, with ``while j < 3 and z.mean() < 3.0:``, loop locals
    nobody reads, names rebound in both branches, keepdims reductions, transposes and slices
    (tests/written.py): grad, jvp, vjp and hessian against jax, by XLA and by NumPy. A large sample
    that reports every failure: ``python -m tests.sweep --count 1000``."""
    text, shapes = program
    note(text)
    note(f"arguments: {shapes}, drawn by np.random.default_rng({seed}).standard_normal")
    f, jf = numpy_and_jax(tmp_path_factory.mktemp("data_programs", numbered=True), text, "data")
    rng = np.random.default_rng(seed)
    args = tuple(rng.standard_normal(s) for s in shapes.values())
    value = run_numpy(f, args)
    assume(value is not None and abs(value) < 1e6)
    check_transforms(f, jf, args, seed=seed)


def reused_list_name(x):
    items = []
    for k in range(2):
        items.append(np.cos(x + k))
    unused = np.prod(np.stack(items), axis=0)  # noqa: F841  (its cotangent is zero)
    items = []
    for k in range(2):
        items.append(np.sin(x * (k + 1.0)))
    return np.sum(np.stack(items) ** 2)


def test_a_list_name_rebound_after_an_unused_result():
    # regression: the first loop's adjoint popped cotangents from the second binding's list (IndexError)
    check(reused_list_name, (np.array([0.3, -0.6]),))


def comprehension_reuses_a_loop_name(x, w):
    v0 = x * 1.0
    for k in range(3):
        if np.sum(v0) < -0.2:
            continue
        v0 = v0 * 0.8 + k * 0.1
    v1 = np.sum(np.stack([np.tanh(w * k) for k in range(1, 3)]), axis=0)
    return np.sum(v1 * v0)


def test_a_comprehension_variable_is_not_the_enclosing_loop_variable():
    # regression: `k` of the comprehension counted as a read of the loop's `k` after the loop, so the
    # loop with a `continue` on data was refused ("the loop variable `k` is used after the loop")
    x, w = np.array([0.3, -0.1, 0.5]), np.array([0.2, 0.4, -0.7])
    np.testing.assert_allclose(srcjax.compile(comprehension_reuses_a_loop_name)(x, w),
                               comprehension_reuses_a_loop_name(x, w), rtol=1e-12)
    check(comprehension_reuses_a_loop_name, (x, w), argnums=(0, 1))


def appended_then_break(x):
    items = []
    for k in range(2):
        items.append(np.cos(x + k))
    v0 = np.prod(np.stack(items), axis=0)
    v1 = v0 * 0.5
    for _ in range(4):
        v1 = np.sin(v1) + 0.3
        if np.max(v1) > 0.9:
            break
    return np.sum(v1 * v0)


def test_values_from_an_appended_list_are_data():
    # regression: `items.append(v)` did not make `items` hold data for the binding-time analysis, so a
    # `break` on a value computed from it stayed Python and failed while specializing
    x = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(srcjax.compile(appended_then_break)(x), appended_then_break(x), rtol=1e-12)
    check(appended_then_break, (x,))


def branch_local_helper(x):
    if np.sum(x) > 0:
        v = x * 2
        y = np.sin(v)
    else:
        y = -x
    return y


def calls_branch_local_helper(x):
    return np.sum(branch_local_helper(x))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_helper_saving_a_value_bound_on_one_branch(sign):
    # regression: the helper's forward half bound `v` to None before the `if`, so the branch that does
    # not assign it returned None where the other returned an array ("the branches give different
    # structures", pointing into generated source); it is UNSET now, and the module imports it
    x = sign * np.array([0.3, 0.5, 0.9])
    want = 2 * np.cos(2 * x) if sign > 0 else -np.ones(3)
    g = srcjax.grad(calls_branch_local_helper)
    np.testing.assert_allclose(g(x), want, rtol=1e-12)
    np.testing.assert_allclose(g(x), central_fd(calls_branch_local_helper, (x,), 0), rtol=1e-6)
    text = srcjax.source(g)
    assert "v = UNSET" in text and "from srcjax.adjoint import UNSET," in text
    ns = dict(globals())
    exec(text, ns)
    np.testing.assert_allclose(ns["calls_branch_local_helper_grad"](x), want, rtol=1e-12)


def lax_alias_in_a_helper(x):
    def t(v):
        return v * 2

    def f(v):
        return np.sin(v)
    return lax.cond(np.sum(x) > 0, t, f, x)


def calls_lax_alias_helper(x):
    return np.sum(lax_alias_in_a_helper(x))


def test_lax_imported_by_another_name_is_differentiated():
    # regression: only calls spelled `srcjax.lax.cond(...)` were written out as Python control flow for
    # AD; `from srcjax import lax; lax.cond(...)` was refused ("cannot differentiate through the nested
    # function"), and so was any srcjax.lax call inside a helper function
    for x in (np.array([0.3, 0.5]), np.array([-0.3, -0.5])):
        np.testing.assert_allclose(srcjax.grad(calls_lax_alias_helper)(x),
                                   np.where(x.sum() > 0, 2.0, np.cos(x)), rtol=1e-12)


def _counted_to_an_argument(x, n):  # type: ignore[no-untyped-def]
    k = 0
    h = x
    while k < n and np.sum(h * h) < 6.0:
        h = h * 1.3 + 0.1
        k = k + 1
    return np.sum(h)


@pytest.mark.parametrize("n", [np.array(2), np.array(30), np.int64(3), 2], ids=["array", "array-big", "int64", "int"])
def test_grad_of_a_while_counted_to_an_integer_array_argument(n) -> None:
    """Regression: ``while k < n and ...`` with ``n`` an integer ARRAY argument, under grad with max_iters, was
    "a range() bound must be known at transpile time" (a range the user never wrote: the counted loop's bound
    ``trip_bound(n, most)`` was ``n`` itself). Now ``most`` there (each iteration is guarded by the test);
    against finite differences (jax.grad refuses a while_loop)."""
    x = np.linspace(0.1, 0.5, 3)
    g = np.asarray(srcjax.grad(_counted_to_an_argument, max_iters=8)(x, n))
    e = 1e-6
    fd = [(_counted_to_an_argument(x + e * u, int(n)) - _counted_to_an_argument(x - e * u, int(n))) / (2 * e)
          for u in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-7)
