"""Plain Python ``if``/``elif``/``else`` and ``while`` on array data.

A test on array data is lowered to stablehlo.if/while: either by the source
rewrite (``if``/``while`` -> ``srcjax.lax`` calls, when the test is plainly a
NumPy computation) or while specializing (when the test only turns out to be
an array, e.g. ``if x < 1.0`` on a parameter). Both routes are exercised.

Each program must give the same result three ways: compiled
(``srcjax.compile``), run as written by Python with NumPy, and its generated
source run by NumPy (``srcjax.numpy_function``). The error tests check the
class (a ``srcjax.TranspileError`` subclass) and that the message starts with
``file:line:col: error:`` at the right place in this file.
"""

from __future__ import annotations

import inspect
import itertools
import os
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import srcjax

_SCALE = 10 if os.environ.get("SRCJAX_HYPOTHESIS") == "thorough" else 1


def examples(n: int) -> settings:
    return settings(max_examples=n * _SCALE, deadline=None, derandomize=_SCALE == 1,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


_COMPILED: dict[Any, Any] = {}


def compiled(fn):
    if fn not in _COMPILED:
        _COMPILED[fn] = srcjax.compile(fn)
    return _COMPILED[fn]


def check_agree(actual: Any, expected: Any, who: str) -> None:
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), f"{who}: {actual!r}"
        for a, e in zip(actual, expected):
            check_agree(a, e, who)
        return
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.shape == e.shape, f"{who}: shape {a.shape} != {e.shape}"
    assert a.dtype == e.dtype, f"{who}: dtype {a.dtype} != {e.dtype}"
    if e.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e, err_msg=who)
    else:
        t = dict(rtol=2e-6, atol=1e-6) if e.dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(a, e, **t, err_msg=who)


def three_way(fn, *args: Any) -> Any:
    """Compiled == Python running the function with NumPy == the generated source run by NumPy."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = fn(*args)
        check_agree(srcjax.numpy_function(fn)(*args), expected, "generated source run by NumPy")
    check_agree(compiled(fn)(*args), expected, "compiled")
    return expected


def hlo(fn, *args: Any) -> str:
    return srcjax.lower(fn, *args).as_text()


def floats(lo: float, hi: float):
    # no subnormals: XLA on CPU flushes them to zero (as under jax), so a test on a subnormal input
    # (`mid ** 3 > -1e-308`) may take the other branch than NumPy does
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def vectors(n: int = 4, lo: float = -3.0, hi: float = 3.0):
    return hnp.arrays(np.float64, n, elements=floats(lo, hi))


# ======================================================================================
# Programs
# ======================================================================================
def newton_sqrt(a):
    x = a + 1.0
    while np.abs(x * x - a) > 1e-12 * (a + 1.0):
        x = 0.5 * (x + a / x)
    return x


def newton_sqrt_vec(a):
    x = np.ones_like(a)
    steps = 0
    while np.max(np.abs(x * x - a)) > 1e-6 * np.max(a):
        x = 0.5 * (x + a / x)
        steps += 1
    return x, steps


def piecewise(x):
    if x < -1.0:
        y = -x - 0.5
    elif x < 1.0:
        y = 0.5 * x * x
    else:
        y = x - 0.5
    return y


def piecewise_mean(x):
    m = np.mean(x)
    if m < -1.0:
        y = x * 0.0
        tag = -1
    elif m < 0.0:
        y = np.tanh(x)
        tag = 0
    elif m < 1.0:
        y = x * x
        tag = 1
    else:
        y = np.exp(-x)
        tag = 2
    return y, tag


def collatz(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def gcd(a, b):
    while b != 0:
        a, b = b, a % b
    return a


def bisect_cbrt(c):
    lo, hi = np.minimum(c, -1.0), np.maximum(c, 1.0)
    while hi - lo > 1e-10:
        mid = 0.5 * (lo + hi)
        if mid * mid * mid > c:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def if_in_static_for(x):
    acc = np.zeros_like(x)
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            acc = acc + x * i
        elif np.sum(x[: i + 1]) < -1.0:
            acc = acc - x
        else:
            acc = acc * 0.5
    return acc


def while_in_if(x):
    if np.sum(x) > 0:
        while np.max(x) < 100.0:
            x = x * 3.0 + 1.0
    else:
        x = -x
    return x


def if_without_else(x):
    y = x * 1.0
    if np.mean(x) > 0:
        y = y + 10.0
    return y


def setitem_under_if(x):
    y = x.copy()
    if x[0] > 0:
        y[1] = 5.0
    else:
        y[2] += 1.0
    return y


def nested_whiles(n):
    total = np.int64(0)
    i = np.int64(0)
    while i < n:
        j = np.int64(0)
        while j < i:
            total = total + i * j
            j = j + 1
        i = i + 1
    return total


def break_on_data(x):
    while np.sum(x) < 1000.0:
        x = x * 2.0 + 0.5
        if np.max(x) > 40.0:
            break
    return x


def continue_on_data(x):
    n = 0
    while np.sum(x) < 50.0:
        x = x + 1.0
        n += 1
        if np.max(x) > 10.0:
            continue
        x = x * 1.5
    return x, n


def early_return_on_data(x):
    if np.sum(x) > 0:
        return x * 2.0
    y = x - 1.0
    return y


def python_scalar_joins_array(x):
    if np.sum(x) > 0:
        s = 0.0  # a Python float takes the other branch's float32
    else:
        s = np.max(x)
    return x + s


# ======================================================================================
# Results: compiled == Python/NumPy == generated source
# ======================================================================================
@examples(25)
@given(a=floats(1e-3, 1e4))
def test_newton_sqrt(a):
    x = three_way(newton_sqrt, np.float64(a))
    np.testing.assert_allclose(x, np.sqrt(a), rtol=1e-10)


@examples(15)
@given(a=vectors(3, lo=0.01, hi=50.0))
def test_newton_sqrt_vector_with_step_counter(a):
    three_way(newton_sqrt_vec, a)


@examples(30)
@given(x=st.one_of(floats(-3.0, 3.0), st.sampled_from([-1.0, 1.0, 0.0, -1.5, 2.5])),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_piecewise_if_elif_else(x, dtype):
    three_way(piecewise, dtype(x))


@examples(25)
@given(x=vectors(3))
def test_piecewise_on_a_reduction_with_python_int_tag(x):
    three_way(piecewise_mean, x)


@examples(20)
@given(n=st.integers(1, 300), dtype=st.sampled_from([np.int32, np.int64]))
def test_collatz_integer_while_with_nested_if(n, dtype):
    three_way(collatz, dtype(n))


@examples(20)
@given(a=st.integers(0, 500), b=st.integers(0, 500))
def test_gcd_tuple_assignment_in_while(a, b):
    assert int(three_way(gcd, np.int64(a), np.int64(b))) == np.gcd(a, b)


@examples(15)
@given(c=floats(-30.0, 30.0))
def test_bisection_if_inside_while(c):
    r = three_way(bisect_cbrt, np.float64(c))
    np.testing.assert_allclose(r, np.cbrt(c), atol=1e-9)


@examples(25)
@given(x=vectors(5))
def test_if_elif_inside_static_for(x):
    three_way(if_in_static_for, x)


@examples(15)
@given(x=vectors(3, lo=-2.0, hi=5.0))
def test_while_inside_if(x):
    three_way(while_in_if, x)


@examples(10)
@given(x=vectors(3))
def test_if_without_else_keeps_the_old_value(x):
    three_way(if_without_else, x)


@pytest.mark.parametrize("first", [1.0, -1.0])
def test_item_assignment_under_if(first):
    three_way(setitem_under_if, np.array([first, 2.0, 3.0]))


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_nested_whiles(n):
    three_way(nested_whiles, np.int64(n))


@examples(15)
@given(x=vectors(3, lo=0.0, hi=60.0))
def test_break_under_data_if_in_data_while(x):
    three_way(break_on_data, x)


@examples(15)
@given(x=vectors(3, lo=0.0, hi=12.0))
def test_continue_under_data_if_with_python_int_counter(x):
    three_way(continue_on_data, x)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_early_return_under_data_if(sign):
    three_way(early_return_on_data, sign * np.arange(1.0, 4.0))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_python_scalar_in_one_branch_takes_the_array_dtype(sign):
    x = sign * np.arange(1.0, 4.0, dtype=np.float32)
    three_way(python_scalar_joins_array, x)
    assert compiled(python_scalar_joins_array)(x).dtype == np.float32


def test_control_flow_on_data_is_stablehlo_if_and_while():
    assert "stablehlo.while" in hlo(newton_sqrt, np.float64(2.0))
    assert "stablehlo.if" in hlo(piecewise, np.float64(2.0))
    text = hlo(collatz, np.int64(27))
    assert text.count("stablehlo.while") == 1 and "stablehlo.if" in text


def test_one_compilation_serves_every_trip_count():
    f = srcjax.compile(collatz)
    assert [int(f(np.int64(n))) for n in (1, 6, 27)] == [0, 8, 111]


# ======================================================================================
# Errors: class, file:line:col, message
# ======================================================================================
def locate(fn, snippet: str) -> tuple[int, int]:
    """(1-based line, 1-based column) of the first occurrence of ``snippet`` in ``fn``'s source."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        col = line.find(snippet)
        if col >= 0:
            return start + i, col + 1
    raise AssertionError(f"{snippet!r} not in the source of {fn.__name__}")


def raises(fn, args, cls) -> srcjax.TranspileError:
    with pytest.raises(cls) as ei:
        srcjax.compile(fn)(*args)
    e = ei.value
    assert isinstance(e, srcjax.TranspileError)
    assert e.span is not None and e.span.filename == __file__
    lines, start = inspect.getsourcelines(fn)
    assert start <= e.span.line < start + len(lines), f"points outside {fn.__name__}: {e}"
    head = str(e).splitlines()[0]
    assert head == f"{__file__}:{e.span.line}:{e.span.col + 1}: error: {e.message}"
    return e


def at(e: srcjax.TranspileError, fn, snippet: str) -> None:
    assert (e.span.line, e.span.col + 1) == locate(fn, snippet), f"points at {e.span}, expected {snippet!r}:\n{e}"


def only_one_branch_on_reduction(x):
    if np.sum(x) > 0:
        y = x * 2.0
    return y


def only_one_branch_on_parameter(x):
    if x > 0:
        y = x * 2.0
    return y


def only_one_branch_never_read(x):
    if x > 0:
        y = x * 2.0  # noqa: F841
    return x


@pytest.mark.parametrize("fn,x", [(only_one_branch_on_reduction, np.ones(3)),
                                  (only_one_branch_on_parameter, np.float64(1.0))],
                         ids=["reduction", "parameter"])
def test_name_assigned_in_one_branch_and_read_after(fn, x):
    e = raises(fn, (x,), srcjax.TranspileError)
    if_line, _ = locate(fn, "if ")
    read_line, _ = locate(fn, "return y")
    assert "y" in e.message
    assert e.span.line == if_line or (e.span.line == read_line and f"line {if_line}" in e.message), str(e)
    assert e.hint and "y" in e.hint


def test_name_assigned_in_one_branch_but_never_read_is_fine():
    three_way(only_one_branch_never_read, np.float64(-1.0))


def branches_with_different_shapes(x):
    if np.sum(x) > 0:
        y = x
    else:
        y = x[:2]
    return y


def branches_with_different_shapes_on_parameter(x, t):
    if t > 0:
        y = x
    else:
        y = x[:2]
    return y


def test_branches_with_different_shapes():
    e = raises(branches_with_different_shapes, (np.ones(3),), srcjax.ShapeError)
    at(e, branches_with_different_shapes, "np.sum(x) > 0")
    assert "`y`" in e.message and "f64[3]" in e.message and "f64[2]" in e.message
    e = raises(branches_with_different_shapes_on_parameter, (np.ones(3), np.float64(1.0)), srcjax.ShapeError)
    at(e, branches_with_different_shapes_on_parameter, "t > 0")


def branches_with_different_dtypes(x):
    if np.sum(x) > 0:
        y = x
    else:
        y = x.astype(np.float64)
    return y


def python_float_against_int_array(n):
    if n > 0:
        y = 1.5
    else:
        y = n
    return y


def test_branches_with_different_strong_dtypes():
    e = raises(branches_with_different_dtypes, (np.ones(3, np.float32),), srcjax.DTypeError)
    at(e, branches_with_different_dtypes, "np.sum(x) > 0")
    assert "float32" in e.message and "float64" in e.message and "`y`" in e.message


def test_python_float_cannot_join_an_int_array():
    e = raises(python_float_against_int_array, (np.int32(3),), srcjax.DTypeError)
    at(e, python_float_against_int_array, "n > 0")
    assert "int32" in e.message


def vector_predicate(x):
    if x > 0:
        x = x * 2.0
    return x


def vector_while_test(x):
    while x < 10.0:
        x = x + 1.0
    return x


@pytest.mark.parametrize("fn,snippet", [(vector_predicate, "x > 0"), (vector_while_test, "x < 10.0")],
                         ids=["if", "while"])
def test_non_scalar_predicate(fn, snippet):
    e = raises(fn, (np.ones(4),), srcjax.ShapeError)
    at(e, fn, snippet)
    assert "scalar" in e.message and "bool[4]" in e.message
    assert e.hint and "np.any" in e.hint and "np.all" in e.hint
    assert "np.any" in str(e)


def break_in_while_on_parameter(x):
    while x < 100.0:
        x = x * 2.0
        if x > 50.0:
            break
    return x


def test_break_in_while_on_a_parameter_is_rewritten():
    """The front end cannot tell that ``x`` is data (it might be a Python float), so it leaves the loop to
    the lowering, which finds the ``break`` under a test on data: the function is functionalized again
    with that test on data (``lower/regions.DataExit``; this was an UnsupportedSyntaxError)."""
    f = srcjax.compile(break_in_while_on_parameter)
    for v in (3.0, 0.7, 60.0, 200.0):
        assert float(f(np.float64(v))) == break_in_while_on_parameter(v)
    _, t = srcjax.jvp(break_in_while_on_parameter, (np.float64(3.0),), (np.float64(1.0),))
    assert float(t) == 32.0  # five doublings


def return_in_while_on_data(x):
    while np.sum(x) < 100.0:
        x = x * 2.0
        if np.sum(x) > 50.0:
            return x
    return -x


def test_return_in_while_on_data():
    """(was refused) a done flag and a carried result: frontend/loop_returns.py, tests/test_loop_returns.py."""
    for x in (np.ones(3), np.full(3, 30.0), np.full(3, 40.0)):
        np.testing.assert_allclose(srcjax.compile(return_in_while_on_data)(x), return_in_while_on_data(x))


def raise_under_data_if(x):
    if np.sum(x) > 0:
        raise ValueError("positive")
    return x


def test_raise_under_data_if():
    e = raises(raise_under_data_if, (np.ones(3),), srcjax.UnsupportedSyntaxError)
    assert "raise" in e.message


def carry_changes_shape(x, n):
    acc = 0.0
    while n > 0:
        acc = acc + x
        n = n - 1
    return acc


def test_while_carry_changes_shape():
    e = raises(carry_changes_shape, (np.ones(4, np.float32), np.int32(3)), srcjax.ShapeError)
    at(e, carry_changes_shape, "n > 0")
    assert "`acc`" in e.message and "f32[4]" in e.message


def append_under_data_if(x):
    out = []
    if np.sum(x) > 0:
        out.append(x)
    else:
        out.append(-x)
    return out[0] + len(out)


def test_list_mutation_under_data_if_is_refused():
    e = raises(append_under_data_if, (np.ones(3),), srcjax.UnsupportedSyntaxError)
    assert "out.append" in e.message


def append_under_parameter_if(x):
    out = []
    if x > 0:
        out.append(x)
    else:
        out.append(-x)
    return out[0] + len(out)


def test_list_mutation_under_parameter_if_is_refused():
    """Regression: both branches are transpiled, so both appends used to happen (a silently wrong answer)."""
    x = np.float64(2.0)
    with pytest.raises(srcjax.UnsupportedSyntaxError) as ei:
        srcjax.compile(append_under_parameter_if)(x)
    assert "`out`" in str(ei.value) and "changed inside" in str(ei.value)


def counts_while_looping(x):
    n = 0
    for _ in range(1000):
        x = x * 0.999 + 0.001
        n = n + 2
    return x, n


def count_used_as_a_shape(x):
    n = 0
    for _ in range(5):
        n = n + 1
    return x[:n]


def test_a_loop_changing_a_python_int_stays_one_loop():
    x = np.ones(8)
    got = srcjax.compile(counts_while_looping)(x)
    want = counts_while_looping(x)
    np.testing.assert_allclose(np.asarray(got[0]), want[0], rtol=1e-12)
    assert int(np.asarray(got[1])) == want[1]
    assert srcjax.lower(counts_while_looping, x).as_text().count("stablehlo.while") == 1


def test_a_loop_int_needed_static_afterwards_unrolls_that_loop():
    x = np.arange(8.0)
    np.testing.assert_array_equal(np.asarray(srcjax.compile(count_used_as_a_shape)(x)), count_used_as_a_shape(x))


# -- builtins that call functions, endless iterators ---------------------------------------------
# map(f, xs) raised "'NormalizedFunction' object is not callable"; sorted(key=f) ran f as a Python
# function; `for i in itertools.count():` hung while specializing.

def _square(v):
    return v * v


def maps_a_helper(x, y):
    out = np.sum(np.stack(list(map(_square, [x, x * 2.0]))))
    for v in map(np.add, [x, y], [y, x]):
        out = out + np.sum(v)
    return out


def sorts_by_shape(xs):
    parts = sorted(xs, key=lambda a: a.shape[0])
    return np.sum(parts[0]) * 2.0 + np.sum(parts[1])


def sorts_by_data(x):
    parts = sorted([x, x * 2.0], key=np.sum)
    return np.sum(parts[0])


def counts_until_static_break(x):
    for i in itertools.count():
        if i > 3:
            break
        x = x * 2.0
    return np.sum(x)


@pytest.mark.parametrize("fn,args", [(maps_a_helper, (np.arange(3.0), np.ones(3))),
                                     (sorts_by_shape, ([np.ones(4), np.ones(2)],)),
                                     (counts_until_static_break, (np.arange(3.0),))],
                         ids=["map", "sorted", "count"])
def test_builtins_calling_functions_and_endless_iterators(fn, args):
    np.testing.assert_allclose(np.asarray(srcjax.compile(fn)(*args)), fn(*args), rtol=1e-12)


def test_sorting_by_array_data_is_refused_at_the_users_line():
    with pytest.raises(srcjax.StaticValueError) as info:
        srcjax.compile(sorts_by_data)(np.arange(3.0))
    line = inspect.getsourcelines(sorts_by_data)[1] + 1
    assert f"test_control_flow.py:{line}:" in str(info.value).splitlines()[0], str(info.value)
