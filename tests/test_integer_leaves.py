"""The one analysis of names bound only to Python integers (srcjax/transforms/integer_leaves.py), read by
activity (an integer leaf of a carry has no derivative) and by unique_keys (index keys that cannot repeat)."""

from __future__ import annotations

import libcst as cst

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
