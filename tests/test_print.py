"""``print(...)`` inside compiled code prints the run-time values at every call, in program order
(host callbacks from XLA): what it prints equals what the user's function prints under NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import srcjax

X = np.arange(1.0, 4.0)


def straight(x):
    y = np.sin(x)
    print("y is", y, np.sum(y))
    z = y * 2
    print(f"total {np.sum(z):.4f}, first {z[0]!r}, shape {z.shape}")
    print("a", "b", x.shape, sep="|", end="!\n")
    return z


def looping(x, n):
    print("start", n)
    i = 0
    while np.sum(x) < 100.0:
        x = x * 2.0
        print(f"iter {i}: total={np.sum(x):.2f} x={x}")
        i = i + 1
    for k in range(3):
        print("k", k, x[k])
        if x[k] > 40.0:
            print("big", x[k])
        else:
            print("small")
    total = 0.0
    for k in range(n):
        total = total + x[k % 3]
        print("running", total)
    print({"a": x[0], "b": [x[1], 2]})
    return np.sum(x ** 2)


def run_printing(fn, capsys, *args, **options):
    capsys.readouterr()
    out = fn(*args, **options)
    return out, capsys.readouterr().out


@pytest.mark.parametrize("fn, args, static", [(straight, (X,), ()), (looping, (X, 4), ("n",))])
def test_prints_what_numpy_prints_at_every_call_in_order(fn, args, static, capsys):
    _, want = run_printing(fn, capsys, *args)
    compiled = srcjax.compile(fn, static_argnames=static)
    for _ in range(2):  # printed again at every call, not once while compiling
        _, got = run_printing(compiled, capsys, *args)
        assert got == want
    _, got = run_printing(srcjax.compile(fn, static_argnames=static, device="numpy"), capsys, *args)
    assert got == want


def test_new_values_are_printed_on_the_next_call(capsys):
    compiled = srcjax.compile(straight)
    compiled(X)
    _, got = run_printing(compiled, capsys, X + 1.0)
    _, want = run_printing(straight, capsys, X + 1.0)
    assert got == want


def test_derivatives_print_the_forward_values_once(capsys):
    _, want = run_printing(looping, capsys, X, 4)
    g, got = run_printing(srcjax.grad(looping, max_iters=10), capsys, X, 4)
    assert got == want
    h = 1e-6
    fd = (np.array([looping(X + h * e, 4) for e in np.eye(3)]) - looping(X, 4)) / h
    capsys.readouterr()
    np.testing.assert_allclose(np.asarray(g), fd, rtol=1e-4)


def test_vmap_prints_the_batch(capsys):
    xs = np.arange(1.0, 7.0).reshape(2, 3)

    _, got = run_printing(srcjax.vmap(straight), capsys, xs)
    first = got.splitlines()[0]
    assert first.startswith("y is [[") and "[" in first
    assert "total [" in got  # `{np.sum(z):.4f}` of a batch: each example's total, formatted
    totals = [f"{np.sum(2 * np.sin(row)):.4f}" for row in xs]
    assert all(t in got for t in totals)


def test_the_generated_source_keeps_the_print(capsys):
    text = srcjax.source(srcjax.compile(straight))
    assert 'print("y is", y, sum_1)' in text
    assert "print(f\"total {" in text


show = print


def aliased(x):
    show("x is", x)
    return x + 1


def test_print_under_another_name(capsys):
    _, got = run_printing(srcjax.compile(aliased), capsys, X)
    _, want = run_printing(aliased, capsys, X)
    assert got == want


def test_library_helpers_never_print():
    """host_print._calls_print answers False for srcjax's own helpers without walking them (a new process
    loads ~20 of them per first derivative): so none may call print."""
    import ast
    import importlib
    import inspect

    from srcjax.frontend.resolve import LIBRARY_MODULES

    for name in LIBRARY_MODULES:
        tree = ast.parse(inspect.getsource(importlib.import_module(name)))
        calls = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                 and n.func.id == "print"]
        assert not calls, f"{name} calls print at lines {calls}"


def test_renaming_by_ast_positions_writes_what_libcst_writes():
    """``srcjax.source`` calls a program's functions by the names its module gives them; a generated text it
    did not parse already is renamed from ``ast``'s positions of its names (``program._renamed_names``): the
    text libcst's rename writes, or None where the two could differ (then libcst renames it, as before)."""
    import libcst as cst

    from srcjax.frontend import program

    renames = {"g": "g_1", "h": "helper"}
    same = [
        "def f(x, y):\n    a = g(x) + h(y, g=x)\n    b = np.g(a).h + (g)(a)\n    return [g(v) for v in a], lambda z: h(z)\n",
        "def f(x):\n    return g(h(g(x)))  # g\n",
        "def f(x):\n    s = 'g(x)'\n    return s, g\n",
        "def f(x):\n    if x:\n        return g\n    return {h: g for k in x}\n",
    ]
    differ = [
        "def f(x):\n    return f'{g(x)}'\n",  # (an f-string)
        "def f(g):\n    return g\n",  # (a parameter)
        "def f(x):\n    def h(y):\n        return y\n    return h(x)\n",  # (a definition)
        "def f(x):\n    return lambda g: g\n",
        "def f(x):\n    return 'é', g\n",  # (non-ASCII)
    ]
    for text in same:
        want = cst.parse_module(text).visit(program._Rename(renames)).code
        assert program._renamed_names(text, renames) == want, text
    for text in differ:
        assert program._renamed_names(text, renames) is None, text


def _printing_helper(x):
    print("helper", x[0])
    return x * 3.0


def prints_in_a_helper(x):
    return np.sum(_printing_helper(np.cos(x)))


def prints_in_a_nested_function(x):
    def show(v):
        print("nested", v[0])
        return v

    while np.sum(x) < 20.0:
        x = show(x * 2.0)
    return np.sum(x)


@pytest.mark.parametrize("fn", [prints_in_a_helper, prints_in_a_nested_function])
def test_print_in_a_helper_or_a_nested_function(fn, capsys):
    """Functions whose own code does not call ``print`` but print: through a helper, or a nested function
    called in a loop on data (lower/host_print.has_print reads the names each function's code reads)."""
    _, want = run_printing(fn, capsys, X)
    _, got = run_printing(srcjax.compile(fn), capsys, X)
    assert got == want and want
