"""The one analysis of names bound only to Python integers (srcjax/transforms/integer_leaves.py), read by
activity (an integer leaf of a carry has no derivative) and by unique_keys (index keys that cannot repeat)."""

from __future__ import annotations

import libcst as cst
import numpy as np

import srcjax
from srcjax.transforms.activity import unique_keys
from srcjax.transforms.integer_leaves import integer_names

BODY = """
def f(x, p):
    n = 0
    m = len(x) * 2 - n
    k = -m // 3
    for i in range(4):
        n = n + i
    for j in reversed(range(4)):
        m += j
    carry = (n, x[0])
    c, s = carry
    first = carry[0]
    d = {"n": k, "s": s}
    dn = d["n"]
    ds = d["s"]
    q = p + 1
    y = x[0] * 2
    t = 3
    t = y
"""


def _names(fn) -> frozenset[str]:  # type: ignore[no-untyped-def]
    fdef = cst.parse_module(BODY).body[0]
    assert isinstance(fdef, cst.FunctionDef)
    return frozenset(fn(list(fdef.body.body), ["x", "p"]))


def test_integer_names_and_unique_keys_read_one_analysis() -> None:
    ints = {"n", "m", "k", "i", "j", "c", "first", "dn"}
    assert _names(integer_names) == ints  # (not s, ds, q, y, t: floats, a parameter's sum, a rebinding to data)
    assert _names(unique_keys) >= ints and not _names(unique_keys) & {"s", "ds", "q", "y", "t", "x", "p"}


CYCLES = """
def f(x):
    c = (0, x)
    a = range(3)
    b = a
    for k in range(2):
        c = (c[0] + 1, c[1] * x)
        a = b
        b = a
    n = c[0]
    s = c[1]
    for i in b:
        pass
    d = np.result_type(i)
    for k in range(2):
        d = d
    z = np.asarray(3, dtype=d)
"""


def test_bindings_through_themselves_are_decided() -> None:
    """Names and elements bound through themselves (a loop swapping two names, ``c = (c[0] + 1, s)``) were a
    RecursionError; their bindings decide them as any others' do (the largest set)."""
    fdef = cst.parse_module(CYCLES).body[0]
    assert isinstance(fdef, cst.FunctionDef)
    body = list(fdef.body.body)
    assert integer_names(body, ["x"]) == {"k", "n", "i", "z"}
    assert {"k", "n", "i", "z"} <= unique_keys(body, ["x"]) and "s" not in unique_keys(body, ["x"])


def loop_over_a_swapped_range(x):  # type: ignore[no-untyped-def]
    a = range(3)
    b = a
    for _ in range(2):
        a = b
        b = a
    s = x * 0.0
    for i in b:
        s = s + x[i] * x[i]
    return s.sum()


def test_grad_of_a_loop_over_a_range_bound_through_a_swap() -> None:
    """grad raised an internal RecursionError (integer_leaves.ranged followed ``a = b; b = a`` for ever)."""
    x = np.array([0.5, -1.5, 2.0, 3.0])
    assert np.allclose(srcjax.numpy_function(srcjax.grad(loop_over_a_swapped_range))(x), [4.0, -12.0, 16.0, 0.0])
    assert np.allclose(np.asarray(srcjax.grad(loop_over_a_swapped_range)(x)), [4.0, -12.0, 16.0, 0.0])
    assert np.isclose(loop_over_a_swapped_range(x), 4 * (0.25 + 2.25 + 4.0))  # (the oracle's function, by NumPy)
