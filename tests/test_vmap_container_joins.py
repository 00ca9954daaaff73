"""Containers (dicts, lists, tuples, NamedTuples) joined by branches on batched data under ``vmap`` and its
compositions with reverse mode (issue #15: "composes with everything").

A branch on batched data runs both sides for every example and selects per example; what a branch reads is
marked ``taken(x, test)`` (srcjax/branch_guard.py). Where the batcher's state does not show a container's
structure (a loop's carried dict made batched whole, a cotangent, a helper's or ``tree_map``'s result), the
marks and the selects went to the container whole: "cannot use a value of type dict as an array", and an
internal error ("object of type 'HloValue' has no len()") for ``tree_map`` in both branches. They go leaf by
leaf now (``taken``'s ``tree`` rule, ``batch_select`` of a container), an item of ``UNSET`` (a value one path
leaves unset, joined item by item) is ``UNSET``, and a container a call returns is read item by item once
bound (it was called again for each item). Each program is checked against a loop over the examples run by
NumPy and central finite differences of it, and the generated source run by NumPy.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pytest

import srcjax


class Pair(NamedTuple):
    u: Any
    v: Any


def pack(a, b):
    return [a, b * 2.0]


def carried_dict(x, p):  # a dict carried by a `for` with an `if` on batched data in it
    d = {"u": x * 1.5, "v": p["a"]}
    for _k in range(2):
        if x.sum() > 0.0:
            d = {"u": d["u"] * 0.5, "v": d["v"] + x}
    return d


def dict_in_an_if(x, p):  # one leaf batched, the other not
    d = {"u": x * 1.5, "v": p["a"]}
    if x.sum() > 0.0:
        d = {"u": d["u"] * 0.5, "v": p["b"]}
    return d


def tree_map_both_branches(x, p):
    d = {"u": x * 1.5, "v": p["a"]}
    if x[0] > 0:
        d = srcjax.tree_util.tree_map(lambda v: v * 0.5, d)
    else:
        d = srcjax.tree_util.tree_map(lambda v: v * -1.0, d)
    return d


def list_set_on_one_path(x, p):  # `ls` UNSET on one path of the first `if`, then bound by a loop
    d = {"u": x * 1.5, "v": p["a"]}
    if x.sum() > 1.0:
        ls = pack(d["u"], d["v"])
        d = {"u": ls[1], "v": ls[0]}
    for _k in range(2):
        ls = pack(d["u"], d["v"])
        d = {"u": ls[1], "v": ls[0]}
    if x.sum() > -1.0:
        q = Pair(d["u"], d["v"] + 1.0)
        d = {"u": q.v, "v": q.u}
    if x.sum() > 0.0:
        ls = pack(d["u"], d["v"])
        d = {"u": ls[1], "v": ls[0]}
    return d


PROGRAMS = [carried_dict, dict_in_an_if, tree_map_both_branches, list_set_on_one_path]
X = np.array([[0.7, -1.3, 2.1], [-0.4, 0.9, -1.7], [1.2, 0.4, 0.8]])
P = {"a": np.array([0.3, -0.8, 1.1]), "b": np.array([1.4, 0.2, -0.6])}


def _total(f: Any) -> Any:
    def total(x, p):
        return sum(np.sum(v) for v in srcjax.tree_util.tree_leaves(f(x, p)))
    return total


def _fd(f: Any, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    return np.array([(f(x + eps * e, P) - f(x - eps * e, P)) / (2 * eps) for e in np.eye(x.size)])


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_vmap_of_containers_joined_on_batched_data_agrees_with_a_loop(f: Any) -> None:
    want = [f(x, P) for x in X]
    for what, fn in (("vmap", srcjax.vmap(f, in_axes=(0, None))),
                     ("numpy(vmap)", srcjax.numpy_function(srcjax.vmap(f, in_axes=(0, None))))):
        got = fn(X, P)
        for k in ("u", "v"):
            np.testing.assert_allclose(np.asarray(got[k]), np.stack([w[k] for w in want]), rtol=1e-12, err_msg=what)
    total = _total(f)
    fd = np.stack([_fd(total, x) for x in X])
    g = srcjax.vmap(srcjax.grad(total), in_axes=(0, None))
    np.testing.assert_allclose(np.asarray(g(X, P)), fd, rtol=1e-6, atol=1e-8, err_msg="vmap(grad)")
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(g)(X, P)), fd, rtol=1e-6, atol=1e-8,
                               err_msg="numpy(vmap(grad))")
    jac = srcjax.jacrev(srcjax.vmap(total, in_axes=(0, None)))(X, P)
    np.testing.assert_allclose(np.asarray(jac), np.einsum("ab,bk->abk", np.eye(3), fd), rtol=1e-6, atol=1e-8,
                               err_msg="jacrev(vmap)")


def test_a_container_a_call_returns_is_called_once_when_made_batched() -> None:
    """``out = f(x, p)`` made batched item by item (``tree_leaves(out)`` reads it whole) wrote the call once per
    item, ``{"u": f_vmap(x, p)["u"], "v": f_vmap(x, p)["v"]}``: twice the work, and under ``vmap(grad)`` the
    forward pass pushed its tape twice."""
    for fn in (srcjax.vmap(_total(list_set_on_one_path), in_axes=(0, None)),
               srcjax.vmap(srcjax.grad(_total(list_set_on_one_path)), in_axes=(0, None))):
        text = srcjax.source(fn)
        calls = [ln for ln in text.splitlines() if "list_set_on_one_path_" in ln and "(x, p" in ln
                 and not ln.lstrip().startswith("def ")]
        assert len(calls) == 1, text
