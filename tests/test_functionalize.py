"""Control-flow functionalization (srcjax/frontend/functionalize.py).

``if``/``while``/``for`` on array data become ``srcjax.lax`` calls with
generated nested functions; static control flow stays Python. Oracles:

1. the user's function run by NumPy == the generated source run by NumPy
   (``srcjax.numpy_function``), with hypothesis drawing data that takes each
   branch / each number of loop iterations;
2. the same, compiled (``srcjax.compile``);
3. the printed source: ``srcjax.lax`` calls present or absent as expected,
   nested ``def``s, no Python ``if`` left on data;
4. errors: the right class and line.
"""

from __future__ import annotations

import inspect
import os
import warnings
from typing import Any

import libcst as cst
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import srcjax
from srcjax.frontend.binding_times import DYNAMIC, STATIC, UNKNOWN, BindingTimes
from srcjax.frontend.program import Program

_SCALE = 10 if os.environ.get("SRCJAX_HYPOTHESIS") == "thorough" else 1


def examples(n: int) -> settings:
    return settings(max_examples=n * _SCALE, deadline=None, derandomize=_SCALE == 1,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def vectors(n: int = 3, lo: float = -2.0, hi: float = 2.0):
    return hnp.arrays(np.float64, (n,), elements=st.floats(lo, hi, allow_nan=False, allow_infinity=False,
                                                         allow_subnormal=False))


# ======================================================================================
# Programs
# ======================================================================================


def piecewise(x):
    s = np.sum(x)
    if s > 1.0:
        y = np.sin(x) * 2
    elif s < -1.0:
        y = np.cos(x)
    else:
        y = x + 1
    return y


def newton_sqrt(a):
    x = a
    while np.max(np.abs(x * x - a)) > 1e-9:
        x = 0.5 * (x + a / x)
    return x


def decay_until_small(x):
    for i in range(1000):  # noqa: B007
        x = x * 0.9
        if np.sum(np.abs(x)) < 1.0:
            break
    return x


def skip_negative_terms(x):
    acc = np.zeros_like(x)
    for i in range(5):
        y = x * (i - 2)
        if np.sum(y) < 0:
            continue
        acc = acc + y
    return acc


def early_return(x):
    if np.max(x) > 1.0:
        return x / np.max(x)
    y = x * 2
    return y + 1


def nested_loops_and_ifs(x, w):
    acc = x
    for i in range(3):  # noqa: B007
        h = np.tanh(acc @ w)
        if np.mean(h) > 0:
            acc = h
        else:
            acc = -h
            if np.min(acc) < -0.5:
                acc = acc * 0.5
        k = 0
        while np.sum(acc * acc) > 0.5 and k < 10:
            acc = acc * 0.8
            k = k + 1
    return acc


def sum_positive_rows(X):
    Y = np.tanh(X)
    s = Y[0] * 0.0
    for row in Y:
        s = s + np.maximum(row, 0.0)
    return s


def rows_until(X):
    Y = np.tanh(X)
    s = Y[0] * 0.0
    for row in Y:
        s = s + row
        if np.sum(s) > 1.0:
            break
    return s


def grow_until(x):
    n = 0
    while n < 100:
        x = x * 1.5
        n = n + 1
        if np.max(np.abs(x)) > 50:
            break
    return x, n


def odd_steps_while(x):
    k = 0
    acc = x * 0
    while np.sum(np.abs(acc)) < 10.0 and k < 50:
        k = k + 1
        if k % 2 == 0:
            continue
        acc = acc + x
    return acc, k


def and_or_not(x):
    y = x
    if np.sum(x) > 0 and np.max(x) < 1.5:
        y = x * 2
    if not np.any(x > 1.0) or np.min(x) > 0.5:
        y = y - 1
    return y


def chained_test(x):
    s = np.sum(x)
    y = x
    if -1 < s < 1:
        y = x * 3
    return y


def stepped_range(x):
    acc = x * 0
    for i in range(10, 0, -3):
        acc = acc + x * i
    return acc


def break_deep_with_tail(x):
    acc = x
    for i in range(20):  # noqa: B007
        acc = acc + 1.0
        if np.sum(acc) > 0:
            if np.max(acc) > 3.0:
                break
            acc = acc * 0.5
        acc = acc - 0.25
    return acc


def ternary_on_data(x):
    s = np.sum(x)
    return x if s > 0 else -x


def both_exits(x):
    acc = x * 0
    for i in range(8):
        t = np.sin(x * i)
        if np.sum(t) < -0.5:
            break
        if np.sum(t) < 0:
            continue
        acc = acc + t
    return acc


def iterations_used(x):
    for i in range(100):  # noqa: B007
        x = x * 0.5
        if np.max(np.abs(x)) < 1.0:
            break
    return x, i


def doubling_until(x):
    while True:
        x = x * 2
        if np.sum(x) > 100:
            break
    return x


def with_user_closure(x):
    def body(i, acc):
        return acc + x[i]

    if np.sum(x) > 0:
        y = x * 2
    else:
        y = x
    return srcjax.lax.fori_loop(0, 3, body, y[0] * 0) + y


def first_nonpositive(x):
    y = np.tanh(x)
    i = 0
    n = y.shape[0]
    while i < n and y[i] > 0:  # y[n] would fail: the right side must stay lazy
        i = i + 1
    return i


def scoping_traps(x, flag=False):
    # `z` is defined before the loop, assigned in both branches and again later in the body: it is a
    # local of loop_body, so it must not be passed to the cond (it is unbound there); `w` may be unbound
    # before the second `if` (flag=False): it must not be passed either
    acc = x * 0
    z = x * 0
    for i in range(3):
        if np.sum(x) > i:
            z = x + 1
        else:
            z = x - 1
        acc = acc + z
        z = acc
    if flag:
        w = x
    if np.sum(x) > 0:
        w = x * 2
    else:
        w = x * 3
    return acc, w


# -- static control flow: stays Python -------------------------------------------------------
def static_shapes(x, b=None):
    outs = []
    if x.ndim == 2 and b is None:
        x = x.T
    for i in range(3):
        outs.append(x * i)
    if x.shape[0] > 1:
        y = np.stack(outs)
    else:
        y = np.stack(outs) * 2
    return y


def static_flag(x, use_tanh=True):
    if use_tanh:
        return np.tanh(x)
    return x


def unknown_param_test(x, n):
    # `n` may be a Python int or an array: the lowering decides, so it stays Python here
    y = x
    if n > 2:
        y = x * n
    return y


# -- errors ----------------------------------------------------------------------------------
def one_branch_only(x):
    if np.sum(x) > 0:
        y = x * 2
    return y


def return_in_data_loop(x):
    for i in range(10):  # noqa: B007
        x = x * 2
        if np.sum(x) > 100:
            return x
    return x


def return_in_data_while(x):
    while np.sum(x) < 100:
        x = x * 2
        return x
    return x


def append_in_data_if(x):
    outs = []
    if np.sum(x) > 0:
        outs.append(x)
    return outs


def break_in_zip_loop(x, ys):
    for a, b in zip(ys, ys):  # noqa: B007
        x = x + a
        if np.sum(x) > 0:
            break
    return x


def while_defines_late(x):
    while np.sum(x) < 10:
        x = x * 2
        z = x + 1
    return z


# ======================================================================================
# Helpers
# ======================================================================================


def numpy_agree(fn, *args: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = fn(*args)
        actual = srcjax.numpy_function(fn)(*args)
    check_agree(actual, expected, f"{fn.__name__}: generated source run by NumPy")
    return expected


_COMPILED: dict[Any, Any] = {}


def compiled_agree(fn, *args: Any) -> None:
    if fn not in _COMPILED:
        _COMPILED[fn] = srcjax.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = fn(*args)
    check_agree(_COMPILED[fn](*args), expected, f"{fn.__name__}: compiled", exact_dtype=False)


def check_agree(actual: Any, expected: Any, who: str, exact_dtype: bool = True) -> None:
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), who
        for a, e in zip(actual, expected):
            check_agree(a, e, who, exact_dtype)
        return
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.shape == e.shape, f"{who}: shape {a.shape} != {e.shape}"
    if exact_dtype:
        assert a.dtype == e.dtype, f"{who}: dtype {a.dtype} != {e.dtype}"
    np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-12, err_msg=who)


def both(fn, *args: Any) -> None:
    numpy_agree(fn, *args)
    compiled_agree(fn, *args)


def src(fn) -> str:
    return srcjax.source(fn)


def body_of(text: str, name: str) -> str:
    """The text of the entry function ``name`` in a generated module."""
    start = text.index(f"def {name}(")
    return text[start:]


def python_ifs_on(text: str) -> list[str]:
    """The `if` lines left in generated text (nested defs included)."""
    return [ln.strip() for ln in text.splitlines() if ln.strip().startswith(("if ", "elif ", "while "))]


def line_of(fn, snippet: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    for k, ln in enumerate(lines):
        if snippet in ln:
            return start + k
    raise AssertionError(f"{snippet!r} not in {fn.__name__}")


# ======================================================================================
# Printed source
# ======================================================================================


def test_piecewise_source() -> None:
    text = src(piecewise)
    assert text.startswith("import numpy as np\nimport srcjax\n")
    assert text.count("srcjax.lax.cond(") == 2  # the elif is a cond inside the false branch
    assert "def if_true():" in text and "def if_false():" in text
    assert "def if_true_1():" in text and "def if_false_1():" in text
    assert "y = srcjax.lax.cond(gt, if_true, if_false)" in text
    assert python_ifs_on(text) == []
    assert text.rstrip().endswith("return y")


def test_newton_source() -> None:
    text = src(newton_sqrt)
    assert "x = srcjax.lax.while_loop(loop_cond, loop_body, x)" in text
    assert "    def loop_cond(x):\n" in text and "    def loop_body(x):\n" in text
    # the while test is written out one operation per line inside loop_cond
    cond = text[text.index("def loop_cond"):text.index("def loop_body")]
    assert "absolute = np.absolute(sub)" in cond and cond.strip().endswith("return gt")
    assert python_ifs_on(text) == []


def test_break_loop_source() -> None:
    text = src(decay_until_small)
    assert "stop = False" in text and "i = 0" in text
    assert "x, i, stop = srcjax.lax.while_loop(loop_cond, loop_body, (x, i, stop))" in text
    assert "lt_1 = i < 1000" in text or "< 1000" in text
    assert "np.logical_not(stop)" in text and "np.logical_and(" in text
    assert "stop = np.logical_or(stop, " in text and "i = i + 1" in text  # `if c: stop = True`, no branches
    assert "break" not in text and python_ifs_on(text) == []


def test_continue_source() -> None:
    text = src(skip_negative_terms)
    assert "acc = srcjax.lax.fori_loop(0, 5, loop_body, acc)" in text
    assert "def loop_body(i, acc):" in text
    assert "skip = False" in text and "skip = np.logical_or(skip, " in text and "not_skip = np.logical_not(skip)" in text
    assert "continue" not in text and python_ifs_on(text) == []


def test_for_range_becomes_fori_loop() -> None:
    text = src(nested_loops_and_ifs)
    assert "srcjax.lax.fori_loop(0, 3, loop_body" in text
    assert "srcjax.lax.while_loop(" in text and text.count("srcjax.lax.cond(") == 2
    assert python_ifs_on(text) == []


def test_rows_loop_source() -> None:
    text = src(sum_positive_rows)
    assert "len_Y = len(Y)" in text
    assert "row = Y[i]" in text
    assert "s = srcjax.lax.fori_loop(0, len_Y, loop_body, s)" in text


def test_stepped_range_source() -> None:
    text = src(stepped_range)
    assert "range_1 = range(10, 0, -3)" in text and "trips = len(range_1)" in text
    assert "acc = srcjax.lax.fori_loop(0, trips, loop_body, acc)" in text


def test_logical_tests_source() -> None:
    text = src(and_or_not)
    assert "np.logical_and(gt, lt)" in text
    assert "np.logical_not(" in text and "np.logical_or(" in text
    assert " and " not in text and " or " not in text and "not " not in text.replace("not_", "")
    text = src(chained_test)
    assert "np.logical_and(" in text and python_ifs_on(text) == []


def test_ternary_on_data_is_a_cond() -> None:
    text = src(ternary_on_data)
    assert "select = srcjax.lax.cond(gt, if_true, if_false)" in text


def test_early_return_has_one_exit() -> None:
    text = src(early_return)
    assert "result = srcjax.lax.cond(gt, if_true, if_false)" in text
    assert text.count("return result") == 3 and python_ifs_on(text) == []


@pytest.mark.parametrize("fn", [static_shapes, static_flag, unknown_param_test])
def test_static_control_flow_stays_python(fn) -> None:
    text = src(fn)
    assert "srcjax.lax" not in text and "import srcjax" not in text
    assert python_ifs_on(text), "the Python `if` is kept"


def test_list_appending_loop_stays_python() -> None:
    text = src(static_shapes)
    assert "for i in range(3):" in text and "outs.append(mul)" in text


def test_generated_names_do_not_clash() -> None:
    def clash(x, if_true, loop_body):
        stop = x * if_true
        i = 0
        while np.sum(stop) < loop_body:
            stop = stop * 2
            if np.max(stop) > 50:
                break
            i = i + 1
        return stop, i

    text = src(clash)
    assert "def if_true_1(" in text and "def loop_body_1(" in text and "stop_1 = False" in text
    both(clash, np.array([1.0, 2.0]), 0.5, 30.0)


# ======================================================================================
# NumPy and compiled oracles over data that takes every branch
# ======================================================================================


@examples(30)
@given(vectors())
@example(np.array([1.0, 1.0, 1.0]))
@example(np.array([-1.0, -1.0, -1.0]))
@example(np.array([0.1, 0.0, -0.1]))
def test_piecewise(x) -> None:
    both(piecewise, x)


@examples(15)
@given(hnp.arrays(np.float64, (4,), elements=st.floats(0.01, 1e4)))
def test_newton(a) -> None:
    both(newton_sqrt, a)
    x = srcjax.numpy_function(newton_sqrt)(a)
    assert np.max(np.abs(x * x - a)) <= 1e-9  # the loop's own stopping rule (x itself: ~1e-9 / (2 sqrt(a)))


@examples(20)
@given(vectors(3, -5.0, 5.0))
@example(np.array([0.1, 0.1, 0.1]))  # breaks at the first iteration
@example(np.array([1e3, -1e3, 5e2]))  # many iterations
def test_break_loop(x) -> None:
    both(decay_until_small, x)


@examples(20)
@given(vectors())
def test_continue_loop(x) -> None:
    both(skip_negative_terms, x)


@examples(20)
@given(vectors())
@example(np.array([2.0, 0.0, 0.0]))
def test_early_return(x) -> None:
    both(early_return, x)


@examples(15)
@given(vectors(3, -1.5, 1.5), hnp.arrays(np.float64, (3, 3), elements=st.floats(-1.5, 1.5, allow_subnormal=False)))
def test_nested(x, w) -> None:
    both(nested_loops_and_ifs, x.reshape(1, 3), w)


@examples(15)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 5), st.just(3)), elements=st.floats(-2, 2, allow_subnormal=False)))
def test_rows(X) -> None:
    both(sum_positive_rows, X)
    both(rows_until, X)


@examples(15)
@given(vectors(2, -3.0, 3.0))
@example(np.array([0.0, 0.0]))  # never breaks: n reaches 100
def test_while_break(x) -> None:
    both(grow_until, x)


@examples(15)
@given(vectors(2, -3.0, 3.0))
def test_while_continue(x) -> None:
    both(odd_steps_while, x)


@examples(20)
@given(vectors())
@example(np.array([0.6, 0.7, 0.8]))
@example(np.array([0.5, 1.2, 0.1]))
def test_logical_tests(x) -> None:
    both(and_or_not, x)
    both(chained_test, x)


@examples(15)
@given(vectors(3, -3.0, 3.0))
def test_misc(x) -> None:
    both(stepped_range, x)
    both(break_deep_with_tail, x)
    both(ternary_on_data, x)
    both(both_exits, x)


@examples(15)
@given(vectors(3, -300.0, 300.0))
def test_loop_variable_used_after_a_break(x) -> None:
    text = src(iterations_used)
    assert "counter = 0" in text and "i = counter" in text and "counter = counter + 1" in text
    both(iterations_used, x)


@examples(10)
@given(vectors(3, -3.0, 3.0))
def test_operands_are_only_what_a_branch_reads_first(x) -> None:
    text = src(scoping_traps)
    assert "srcjax.lax.cond(gt, if_true, if_false)" in text and "def loop_body(i, acc):" in text
    assert "w = srcjax.lax.cond(gt_1, if_true_1, if_false_1)" in text
    both(scoping_traps, x)


@examples(15)
@given(vectors(4, -1.0, 3.0))
@example(np.array([1.0, 2.0, 3.0, 4.0]))  # runs off the end: y[4] must not be evaluated
def test_and_keeps_its_right_side_lazy(x) -> None:
    text = src(first_nonpositive)
    assert "def and_rhs():" in text and "and_ = srcjax.lax.cond(lt, and_rhs, and_short)" in text
    both(first_nonpositive, x)


@examples(10)
@given(vectors(3, 0.1, 30.0))
def test_while_true_with_break(x) -> None:
    cond = body_of(src(doubling_until), "loop_cond")
    assert cond.split("return ")[1].startswith("not_stop")  # no `True and ...`
    both(doubling_until, x)


@examples(10)
@given(vectors(3, -2.0, 2.0))
def test_user_nested_def_is_kept(x) -> None:
    text = src(with_user_closure)
    assert "def body(i, acc):" in text and "srcjax.lax.cond(gt, if_true, if_false)" in text
    both(with_user_closure, x)


def test_static_programs_agree() -> None:
    x = np.arange(6.0).reshape(2, 3)
    both(static_shapes, x)
    both(static_shapes, x[:1])
    both(static_flag, x)
    both(unknown_param_test, x, 3)


# ======================================================================================
# Errors
# ======================================================================================


def test_one_branch_only_is_an_error() -> None:
    """Such an `if` stays Python (derivative code relies on re-testing a predicate); the lowering, which
    knows on which paths `y` is defined, refuses the read."""
    text = src(one_branch_only)
    assert "srcjax.lax" not in text and "if gt:" in text
    with pytest.raises(srcjax.UnsupportedSyntaxError) as ei:
        srcjax.compile(one_branch_only)(np.ones(3))
    e = ei.value
    assert e.span.line == line_of(one_branch_only, "return y")
    assert "'y'" in e.message and f"line {line_of(one_branch_only, 'if np.sum(x) > 0')}" in e.message
    assert e.hint and "every path" in e.hint


@pytest.mark.parametrize("fn", [return_in_data_loop, return_in_data_while])
def test_return_in_data_loop_is_a_flag_and_a_carried_result(fn) -> None:
    """(was refused: frontend/loop_returns.py) the loop keeps its shape, carrying `returned` and `result`;
    the result is selected after it."""
    text = src(fn)
    assert "srcjax.lax.while_loop" in text and "returned = True" in text and "result = " in text
    for x in (np.ones(3), np.full(3, 40.0), np.full(3, -1.0)):
        np.testing.assert_allclose(srcjax.compile(fn)(x), fn(x))


@pytest.mark.parametrize("fn,snippet,fragment", [
    (append_in_data_if, "if np.sum(x) > 0", "outs.append"),
    (while_defines_late, "while np.sum(x) < 10", "`z`"),
])
def test_other_errors(fn, snippet, fragment) -> None:
    with pytest.raises(srcjax.UnsupportedSyntaxError) as ei:
        src(fn)
    assert ei.value.span.line == line_of(fn, snippet)
    assert fragment in ei.value.message and ei.value.hint


def break_in_zip_of_two_loop(x, ys, zs):
    for a, b in zip(ys, zs):
        x = x + a * b
        if np.sum(x) > 0:
            break
    return x


@pytest.mark.parametrize("zs_rows", [4, 2])
def test_a_break_on_data_in_a_zip_loop_walks_the_shortest(zs_rows) -> None:
    # (was refused; walked by index since forward mode's zip(x, x_dot) is: zip stops at the shortest sequence)
    x = np.array([-50.0, -30.0])
    ys = np.array([[1.0, 0.5], [2.0, 1.0], [3.0, 2.0], [1.0, 1.0]])
    zs = 2.0 * ys[:zs_rows]
    np.testing.assert_allclose(np.asarray(srcjax.jit(break_in_zip_loop)(x, ys)), break_in_zip_loop(x, ys))
    np.testing.assert_allclose(np.asarray(srcjax.jit(break_in_zip_of_two_loop)(x, ys, zs)),
                               break_in_zip_of_two_loop(x, ys, zs))


# ======================================================================================
# The pass itself: binding times, spans, the plain ANF
# ======================================================================================


def test_binding_times() -> None:
    def f(x, n=3, name=None, scale=0.5):
        s = np.sum(x)
        k = x.shape[0]
        d = x.dtype
        m = len(x) + k
        t = x * 2
        c = np.zeros(3)
        z = np.float32
        flag = name is None
        if s > 0:
            q = k + 1
        else:
            q = 0
        for i in range(k):
            r = i
        return s, q, r, t, c, d, m, z, flag, scale, n

    nf = Program(f).entry
    bta = BindingTimes(nf, nf.plain_fdef)
    assert {v: bta.kind(v) for v in ("x", "n", "name", "scale")} == \
        {"x": UNKNOWN, "n": STATIC, "name": STATIC, "scale": UNKNOWN}
    assert bta.kind("s") == DYNAMIC and bta.kind("c") == DYNAMIC
    assert bta.kind("t") == UNKNOWN and bta.kind("i") == UNKNOWN and bta.kind("r") == UNKNOWN
    for v in ("k", "d", "m", "z", "flag"):
        assert bta.kind(v) == STATIC, v
    assert bta.kind("q") == DYNAMIC  # assigned under a test on data


def test_spans_and_plain() -> None:
    prog = Program(decay_until_small)
    nf = prog.entry
    assert nf.plain is not None and nf.plain is not nf.fdef
    assert "break" in cst.Module([]).code_for_node(nf.plain)
    missing = []

    class V(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            if id(node) not in nf.spans:
                missing.append(cst.Module([]).code_for_node(node).strip())

        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.If, cst.For, cst.While, cst.FunctionDef)) and id(node) not in nf.spans:
                missing.append(type(node).__name__)
            return super().on_visit(node)

    for s in nf.fdef.body.body:
        s.visit(V())
    assert missing == []
    # the user's statements keep their node objects (and so their spans) inside the generated bodies
    plain_lines = set()

    class P(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            plain_lines.add(id(node))

    nf.plain.visit(P())
    kept = []

    class K(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            if id(node) in plain_lines:
                kept.append(cst.Module([]).code_for_node(node).strip())

    nf.fdef.visit(K())
    assert "x = x * 0.9" in kept


def test_nothing_to_rewrite_returns_the_same_function() -> None:
    from srcjax.frontend.functionalize import functionalize

    nf = Program(static_shapes).entry
    assert nf.plain is None
    assert functionalize(nf) is nf


def test_compiled_error_points_at_user_line_inside_a_branch() -> None:
    def bad(x, w):
        if np.sum(x) > 0:
            y = x @ w
        else:
            y = x
        return y

    with pytest.raises(srcjax.ShapeError) as ei:
        srcjax.compile(bad)(np.ones(3), np.ones((4, 2)))
    assert ei.value.span is not None and ei.value.span.line == line_of(bad, "y = x @ w")


def _loss_break(x):
    return np.sum(decay_until_small(x))


def _loss_continue(x):
    return np.sum(skip_negative_terms(x))


def _loss_newton(a):
    return np.sum(newton_sqrt(a))


@pytest.mark.parametrize("fn,x", [(_loss_break, np.array([3.0, -4.0, 5.0])),
                                  (_loss_continue, np.array([1.0, -2.0, 0.5])),
                                  (_loss_newton, np.array([2.0, 9.0, 0.5]))])
def test_jvp_through_data_loops(fn, x) -> None:
    """Forward mode writes tangent code next to the primal: its loops are functionalized together."""
    v = np.array([0.3, -0.2, 0.1])
    eps = 1e-6
    expected = (fn(x + eps * v) - fn(x - eps * v)) / (2 * eps)
    out, t = srcjax.jvp(fn, (x,), (v,))
    np.testing.assert_allclose(np.asarray(out), fn(x), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(t), expected, rtol=1e-6, atol=1e-8)


def test_grad_through_data_if() -> None:
    """AD works on the plain ANF; the derivative's own `if` on data is functionalized in turn."""
    def f(x):
        if np.sum(x) > 0:
            y = np.sum(np.sin(x))
        else:
            y = np.sum(x * x)
        return y

    g = srcjax.grad(f)
    for x in (np.array([0.5, 1.0]), np.array([-0.5, -1.0])):
        expected = np.cos(x) if np.sum(x) > 0 else 2 * x
        np.testing.assert_allclose(np.asarray(g(x)), expected, rtol=1e-12)
        np.testing.assert_allclose(srcjax.numpy_function(g)(x), expected, rtol=1e-12)
