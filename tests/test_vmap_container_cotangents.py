"""Cotangents of containers through branches on batched data, under ``vmap`` composed with derivatives (issue #15:
"composes with everything"; tests/test_vmap_container_flow_random.py seeds 14, 15, 17, 18).

Where the batcher's state does not show a container's structure (a ``tree_map``'s result, a loop's carried dict,
a cotangent of one), a branch on batched data marks it ``taken(d, test)`` and joins it with ``batch_select_items``,
leaf by leaf. Four things still took such a container for an array:

* reverse mode over the vmap (``jacrev(vmap(f))``, ``hessian(vmap(f))``) wrote ``taken``'s cotangent
  ``taken_bar(d_bar, test)``, a helper of arrays: "cannot use a value of type dict (object) as an array" at the
  user's ``for``. ``taken_bar`` is a primitive now, whose ``tree`` rule selects a container leaf by leaf while
  compiling (as ``taken``'s does), so no helper of arrays has a container branch;
* the reverse of ``batch_select_items`` (its ``out[k] = ...`` over ``item_keys(a)``) cleared an item's cotangent to
  the number 0.0 and read it through ``np.where`` (``winning_writes``): with a list in the dict, "np.where(): a list of
  traced values"; under vmap, a (9,) zero beside a (9, 3, 3) leaf. A loop over ``item_keys(...)`` and vmap's
  ``item_key(...)`` are a container's keys now (activity.unique_keys), in forward mode too;
* ``vmap(grad(f))`` through a ``while`` on data and an ``if`` selected a dict's cotangent carried by the loop with
  ``batch_select`` (arrays only): the batcher notes a name a join selects item by item, its copies and a branch's
  ``taken`` read of it as containers (batch_containers.note_tree).

Each program is checked against jax (``lax.cond`` for the ``if``) or finite differences of a loop over the
examples (a ``while`` on data: jax does not reverse it), and the generated source run by NumPy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")

from tests.twins import jitted  # noqa: E402

jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

X = np.array([[0.7, -1.3, 2.1], [-0.4, 0.9, -1.7], [1.2, 0.4, 0.8]])


def dict_for_if(x):  # a tree_map's dict carried by a `for` with an `if` on batched data
    d = {"u": x * 1.5, "v": x * 2.0}
    d = srcjax.tree_util.tree_map(lambda v: v * 0.5, d)
    for _k in range(2):
        if x.sum() > 0.0:
            d = {"u": d["v"] * 0.5, "v": d["u"]}
    return np.sum(d["u"]) * d["v"]


def list_in_dict_for_if(x):  # the same with a list inside the dict
    d = {"u": x * 1.5, "v": [x * 2.0, x]}
    d = srcjax.tree_util.tree_map(lambda v: v * 0.5, d)
    for _k in range(2):
        if x.sum() > 0.0:
            d = {"u": d["v"][0] * 0.5, "v": [d["u"], d["v"][1] * 3.0]}
    return np.sum(d["u"]) * d["v"][0] + d["v"][1]


def _dict_for_if_twin(x):
    d = jax.tree_util.tree_map(lambda v: v * 0.5, {"u": x * 1.5, "v": x * 2.0})
    for _k in range(2):
        d = jax.lax.cond(x.sum() > 0.0, lambda d: {"u": d["v"] * 0.5, "v": d["u"]}, lambda d: d, d)
    return jnp.sum(d["u"]) * d["v"]


def _list_in_dict_for_if_twin(x):
    d = jax.tree_util.tree_map(lambda v: v * 0.5, {"u": x * 1.5, "v": [x * 2.0, x]})
    for _k in range(2):
        d = jax.lax.cond(x.sum() > 0.0, lambda d: {"u": d["v"][0] * 0.5, "v": [d["u"], d["v"][1] * 3.0]},
                         lambda d: d, d)
    return jnp.sum(d["u"]) * d["v"][0] + d["v"][1]


TRANSFORMS = {
    "jacrev(vmap)": (lambda f: srcjax.jacrev(srcjax.vmap(f)), lambda f: jax.jacrev(jax.vmap(f))),
    "jacfwd(vmap)": (lambda f: srcjax.jacfwd(srcjax.vmap(f)), lambda f: jax.jacfwd(jax.vmap(f))),
    "hessian(vmap)": (lambda f: srcjax.hessian(srcjax.vmap(f)), lambda f: jax.hessian(jax.vmap(f))),
    "vmap(jacrev)": (lambda f: srcjax.vmap(srcjax.jacrev(f)), lambda f: jax.vmap(jax.jacrev(f))),
}


@pytest.mark.parametrize("what", list(TRANSFORMS))
@pytest.mark.parametrize("f, twin", [(dict_for_if, _dict_for_if_twin),
                                     (list_in_dict_for_if, _list_in_dict_for_if_twin)],
                         ids=["dict", "list_in_dict"])
def test_derivatives_of_a_vmapped_dict_carried_through_an_if_on_batched_data(f: Any, twin: Any, what: str) -> None:
    ours, theirs = TRANSFORMS[what]
    want = np.asarray(jitted(theirs(twin))(X))  # (jitted: one compile, not one per primitive dispatched)
    np.testing.assert_allclose(np.asarray(ours(f)(X)), want, rtol=1e-12, atol=1e-12, err_msg=what)
    if what == "jacrev(vmap)":
        np.testing.assert_allclose(np.asarray(srcjax.numpy_function(ours(f))(X)), want, rtol=1e-12, atol=1e-12,
                                   err_msg="numpy(jacrev(vmap))")


def tree_map_then_if(x, p):  # seed 18's: a tree_map's dict read by an `if` on batched data
    d = {"u": x * 1.5, "v": p * 2.0}
    d = srcjax.tree_util.tree_map(lambda v: v * 1.5, d)
    if x[0] > 0:
        d = {"u": d["v"], "v": d["u"] * 0.5}
    return d["u"] * d["v"]


def _tree_map_then_if_twin(x, p):
    d = jax.tree_util.tree_map(lambda v: v * 1.5, {"u": x * 1.5, "v": p * 2.0})
    d = jax.lax.cond(x[0] > 0, lambda d: {"u": d["v"], "v": d["u"] * 0.5}, lambda d: d, d)
    return d["u"] * d["v"]


@pytest.mark.parametrize("axes", [(0, None), (0, 0)])
def test_jacrev_of_vmap_through_a_tree_map_read_by_a_branch(axes: tuple[Any, ...]) -> None:
    p = X[::-1].copy() if axes[1] == 0 else X[1]
    for argnums in (0, 1):
        got = srcjax.jacrev(srcjax.vmap(tree_map_then_if, in_axes=axes), argnums=argnums)(X, p)
        want = jax.jacrev(jax.vmap(_tree_map_then_if_twin, in_axes=axes), argnums=argnums)(X, p)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)


def while_then_if_else(x, p):  # seed 17's: a dict carried by a `while` on data, then an if/else with a tree_map
    d = {"u": x, "v": x * p}
    i = 0
    while x.sum() + i < 2.0 and i < 3:
        d = {"u": d["u"] + d["v"], "v": d["v"] * -1.0}
        i += 1
    if x[0] > 0:
        d = {"u": d["v"], "v": d["u"]}
    else:
        d = srcjax.tree_util.tree_map(lambda v: v * 0.5, d)
    return d


def leaves_total(x, p):  # (the dict a helper returns, summed leaf by leaf: its cotangent a dict of unknown structure)
    return sum(np.sum(v) for v in srcjax.tree_util.tree_leaves(while_then_if_else(x, p)))


def for_then_while(x, p):  # seed 14's: a tuple in a `for`, then a `while` on data of tree_maps
    d = {"u": x * 1.5, "v": p}
    for _k in range(2):
        t = (d["v"], d["u"])
        d = {"u": t[0], "v": t[1] * 0.5}
    i = 0
    while x.sum() + i < 2.0 and i < 3:
        d = srcjax.tree_util.tree_map(lambda v: v * 0.5, d)
        i += 1
    return np.sum(d["u"] * d["v"])


@pytest.mark.parametrize("f", [leaves_total, for_then_while], ids=lambda f: f.__name__)
def test_vmap_of_grad_through_a_while_on_data_carrying_a_dict(f: Any) -> None:
    p, eps = np.array([1.4, 0.2, -0.6]), 1e-6
    fd = np.stack([[(f(x + eps * e, p) - f(x - eps * e, p)) / (2 * eps) for e in np.eye(3)] for x in X])
    g = srcjax.vmap(srcjax.grad(f), in_axes=(0, None))
    np.testing.assert_allclose(np.asarray(g(X, p)), fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(g)(X, p)), fd, rtol=1e-6, atol=1e-8)
