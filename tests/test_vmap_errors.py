"""vmap's error for a batched value where a static one is needed: a shape, a ``range`` bound, an index into a
Python list, an ``if`` on a string that ``in_axes`` maps. Each is a TranspileError at the user's line that
names the mapped argument (or the item of one) the value comes from, and the ``in_axes`` that leaves it
unmapped; the suggested ``in_axes`` then runs and agrees with a loop over examples (issue #15)."""

from __future__ import annotations

import inspect
import re
from typing import Any

import numpy as np
import pytest

import srcjax


def reshape_by(x, k):
    return np.reshape(x, (k, -1))


def zeros_by(x, n):
    return np.zeros(n) + np.sum(x)


def range_by(x, n):
    s = 0.0
    for i in range(n):
        s = s + x[i]
    return s


def list_index(x, i):
    parts = [x, x * 2.0, x * 3.0]
    return parts[i]


def index_via_name(x, j):
    k = j + 1
    parts = [x, -x, x * 0.5]
    return parts[k]


def act(p, x):
    if p["act"] == "relu":
        return np.maximum(p["w"] * x, 0.0)
    else:
        raise ValueError("unknown activation")


def _line(fn: Any, snippet: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if snippet in line)


X = np.arange(24.0).reshape(4, 6)
CASES = [  # (function, its batched arguments, the statement, the argument named, the in_axes suggested, shared value)
    (reshape_by, (X, np.array([2, 2, 2, 2])), "np.reshape", "`k`", "in_axes=(0, None)", 2),
    (zeros_by, (X, np.array([3, 3, 3, 3])), "np.zeros", "`n`", "in_axes=(0, None)", 3),
    (list_index, (X, np.array([1, 1, 1, 1])), "parts[i]", "`i`", "in_axes=(0, None)", 1),
    (index_via_name, (X, np.array([0, 0, 0, 0])), "parts[k]", "`j`", "in_axes=(0, None)", 0),
]


def test_a_python_for_over_a_mapped_range_runs_per_example() -> None:
    """(was in CASES, refused as jax refuses range() of a traced value: it runs as a batched while, each example
    stopping at its own bound, as vmap of srcjax.lax.fori_loop with a mapped bound does)"""
    ns = np.array([2, 0, 5, 3])
    np.testing.assert_allclose(srcjax.vmap(range_by)(X, ns), [range_by(x, n) for x, n in zip(X, ns)])


@pytest.mark.parametrize(("fn", "args", "where", "named", "axes", "shared"), CASES, ids=[c[0].__name__ for c in CASES])
def test_a_mapped_value_where_a_static_one_is_needed(fn: Any, args: Any, where: str, named: str, axes: str,
                                                     shared: int) -> None:
    with pytest.raises(srcjax.TranspileError) as ei:
        srcjax.vmap(fn)(*args)
    e = ei.value
    assert e.span is not None and e.span.filename == __file__ and e.span.line == _line(fn, where), str(e)
    assert named in e.message and "mapped argument" in e.message, e.message
    assert e.hint is not None and axes in e.hint, e.hint
    # what the hint says works: that argument the same for every example
    got = srcjax.vmap(fn, in_axes=eval(axes.split("=", 1)[1]))(args[0], shared)  # noqa: S307
    want = np.stack([fn(x, shared) for x in args[0]])
    np.testing.assert_allclose(np.asarray(got), want)


def test_an_if_on_a_string_leaf_of_a_mapped_dict_names_the_leaf() -> None:
    """``in_axes=0`` maps the whole dict, the string too: the `if` on it is refused where it is, naming
    ``p['act']`` and the dict in_axes that leaves it unmapped (session 13's behaviour change)."""
    p = {"act": "relu", "w": np.array([1.0, -1.0, 2.0, 0.5])}
    x = np.array([0.5, 1.0, -2.0, 3.0])
    with pytest.raises(srcjax.TranspileError) as ei:
        srcjax.vmap(act, in_axes=0)(p, x)
    e = ei.value
    assert e.span is not None and e.span.line == _line(act, 'if p["act"]')
    assert "`p['act']`" in e.message, e.message
    m = re.search(r"in_axes=(\(\{.*\}, 0\))", e.hint or "")
    assert m is not None and "'act': None" in m.group(1) and "'w': 0" in m.group(1), e.hint
    got = srcjax.vmap(act, in_axes=eval(m.group(1)))(p, x)  # noqa: S307
    np.testing.assert_allclose(np.asarray(got), [act({"act": "relu", "w": w}, v) for w, v in zip(p["w"], x)])


def mismatched(w, x):
    h = np.tanh(x @ w)
    return np.sum(h * h)


@pytest.mark.parametrize("how", ["vmap", "vmap_grad", "compile_vmap", "grad_of_vmap"])
def test_regression_a_shape_error_under_vmap_is_at_the_users_line(how: str) -> None:
    """Regression: a shape error inside the batched program was placed in srcjax's own helper
    (``srcjax/batched.py``: ``return np.matmul(x1, x2)``): the call site in the batched source, which maps
    to the user's line, was not recorded. It is the user's line now, with no srcjax location anywhere."""
    w, xs = np.ones((4, 2)), np.ones((5, 3))  # x @ w: 3 != 4
    fns = {"vmap": srcjax.vmap(mismatched, in_axes=(None, 0)),
           "vmap_grad": srcjax.vmap(srcjax.grad(mismatched), in_axes=(None, 0)),
           "compile_vmap": srcjax.compile(srcjax.vmap(mismatched, in_axes=(None, 0))),
           "grad_of_vmap": srcjax.grad(_summed_mismatch)}
    with pytest.raises(srcjax.TranspileError) as ei:
        fns[how](w, xs)
    e = ei.value
    assert e.span is not None and e.span.filename == __file__ and e.span.line == _line(mismatched, "x @ w"), str(e)
    assert "srcjax/" not in str(e) and "<srcjax." not in str(e), str(e)
    assert "inner dimensions" in e.message


def _summed_mismatch(w, xs):
    return np.sum(srcjax.vmap(mismatched, in_axes=(None, 0))(w, xs))


def test_mapped_sizes_that_differ_name_the_leaves_of_a_container() -> None:
    # one in_axes for a dict: the error names p['a'] and p['b'] (it said p[0] and p[1]), with both sizes
    with pytest.raises(srcjax.ArgumentError, match=r"p\['a'\] has 4, p\['b'\] has 5"):
        srcjax.vmap(lambda p: p["a"] + p["b"])({"a": np.ones((4, 3)), "b": np.ones((5, 3))})
