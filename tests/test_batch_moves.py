"""vmap's printed source of branches and loops on batched data (session 47, readable generated code): a value a
branch only moves into its result is not marked ``taken`` (``transforms/batch_moves.py``), nor copied to a name of
its own: the ``batch_select`` it leaves the branch through already sends the other examples no cotangent; a value
the branch computes with stays marked (reverse mode's NaN guard, srcjax/branch_guard.py).

Each program runs against a loop over the examples and the generated source run by NumPy; the gradients through
a branch singular for the examples that do not take it stay finite.
"""

from __future__ import annotations

import re

import libcst as cst
import numpy as np
import pytest

import srcjax
from srcjax.transforms.batch_moves import moved_only

from . import vmap_hunt46_programs as P
from .vmap_loop_oracle import agree, loop


def _moved(text: str) -> set[str]:
    fdef = cst.ensure_type(cst.parse_module(text).body[0], cst.FunctionDef)
    return set(moved_only(fdef))


def test_moved_only_names_are_returned_or_packed_unchanged():
    assert _moved("def f(r, s, t):\n    return r, s, t\n") == {"r", "s", "t"}
    assert _moved("def f(r, s):\n    result = (v, k)\n    return result, s\n") == {"v", "k", "result", "s"}
    # read by an operation, unpacked, subscripted, moved into a name read by one: marked
    assert _moved("def f(a, b, c, d):\n    e = a + 1\n    u, w = b\n    g = (d, c)\n    h = g[0]\n"
                  "    return e, u, c[0], h\n").isdisjoint({"a", "b", "c", "d"})
    assert _moved("def f(a):\n    a = a * 2\n    return a\n") == set()  # (read once by the product)


def safe_scale(x, y):
    if x > 0.0:
        y = y / x
    return y * 2.0


@pytest.mark.filterwarnings("ignore:divide by zero")  # (NumPy runs both branches: y / 0 where x == 0)
def test_a_value_a_branch_passes_through_is_not_marked_and_gradients_stay_finite():
    f = srcjax.vmap(safe_scale)
    text = srcjax.source(f)
    assert "taken(y, gt, False)" not in text, text  # (the false branch moves y out: no mark)
    assert re.search(r"taken\(y, gt\)", text), text  # (the true branch divides by x: marked)
    x, y = np.array([0.0, 2.0, -1.0, 0.5]), np.array([1.0, 3.0, 2.0, -4.0])
    want = np.where(x > 0, y / np.where(x > 0, x, 1.0), y) * 2.0
    agree(f(x, y), want, what="vmap")
    agree(srcjax.numpy_function(f)(x, y), want, what="generated source run by NumPy")
    g = srcjax.grad(lambda x, y: np.sum(srcjax.vmap(safe_scale)(x, y)), argnums=(0, 1))(x, y)
    safe = np.where(x > 0, x, 1.0)
    agree(g, (np.where(x > 0, -2.0 * y / safe ** 2, 0.0), np.where(x > 0, 2.0 / safe, 2.0)), what="grad(vmap)")
    assert all(np.all(np.isfinite(v)) for v in g)
    gv = srcjax.vmap(srcjax.grad(safe_scale, argnums=1))(x, y)
    agree(gv, np.where(x > 0, 2.0 / safe, 2.0), what="vmap(grad)")


def test_flags_a_while_step_only_moves_are_not_marked():
    f = srcjax.vmap(P.return_from_while)
    text = srcjax.source(f)
    for moved in ("taken(returned", "taken(stop", "taken(result"):
        assert moved not in text, text
    assert not re.search(r"result_\d+ = result\b", text), text  # (the copy of a moved parameter)
    x = np.array([0.1, 1.9, -2.1, 1.2, 0.0])
    got = f(x)
    agree(got, loop(P.return_from_while, (x,), 0, 5), what="loop over examples")
    agree(srcjax.numpy_function(f)(x), got, what="generated source run by NumPy")
