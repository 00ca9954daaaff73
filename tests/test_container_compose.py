"""Containers under composed transformations where jax runs them (issue #15: "composes with everything").

Each program was refused or crashed with an internal-looking message, or (``d | e``) gave zero gradients silently:
``hessian`` / ``jacfwd(grad)`` through ``p._replace(w=...)`` and ``dataclasses.replace`` ("'Params' object is not
subscriptable"), ``{**defaults, **a}`` under ``grad`` with respect to ``defaults`` (an unbroadcast error), the merges
``d | e`` (zeros), ``dict(d, k=v)`` (refused), ``vmap(grad)`` of ``list(d.values())`` (a ``tree_get()`` KeyError),
and a ``grad`` inside ``grad`` of a function whose default is a function (no file:line). Checked against jax (jitted
twins), and the merges also against finite differences of the user's NumPy function.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

import srcjax

from .twins import jax_twin, jitted

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)


class Params(NamedTuple):
    w: np.ndarray
    b: np.ndarray


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: np.ndarray


srcjax.tree_util.register_dataclass(Layer, data_fields=["w", "b"], meta_fields=[])
jax.tree_util.register_dataclass(Layer, data_fields=["w", "b"], meta_fields=[])


# -- programs (module level: srcjax reads their source) -------------------------------------------------------

def replaced(p, x):
    q = p._replace(w=p.w * 2.0)
    return np.sum(np.tanh(x @ q.w + q.b) ** 2)


def dc_replaced(p, x):
    q = dataclasses.replace(p, w=p.w * 2.0)
    return np.sum(np.tanh(x @ q.w + q.b) ** 2)


def splat_merge(defaults, a):
    d = {**defaults, **a}
    return np.sum(d["x"] * np.sin(d["y"]))


def or_merge(defaults, a):
    d = defaults | a
    return np.sum(d["x"] * np.sin(d["y"]))


def or_merge_in_place(defaults, a):
    d = dict(defaults)
    d |= a
    return np.sum(d["x"] ** 2 * np.sin(d["y"]))


def keyword_merge(d, y):
    e = dict(d, y=y)
    return np.sum(e["x"] * np.sin(e["y"]))


def item_merge(d, y):
    e = {**d, "y": y}
    return np.sum(e["x"] * np.sin(e["y"]))


def stacked_values(d):
    return np.sum(np.stack([v for v in list(d.values())]) ** 2)


def masks_or(x, y):
    m = (x > 0) | (y > 0)
    return np.sum(np.where(m, x * y, 0.0))


def summed(v, f=np.sin):
    return np.sum(f(v))


def grad_of_defaulted(v):
    return np.sum(srcjax.grad(summed)(v))


def _close(got, want, rtol=1e-10, atol=1e-12):
    g, w = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(g) == len(w) and jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for u, v in zip(g, w):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=rtol, atol=atol)


def _rng():
    return np.random.default_rng(0)


# -- 1: NamedTuple._replace and dataclasses.replace under second derivatives --------------------------------------

@pytest.mark.parametrize("fn,kind", [(replaced, Params), (dc_replaced, Layer)], ids=["namedtuple", "dataclass"])
def test_replace_second_order(fn, kind):
    rng = _rng()
    p, x = kind(rng.normal(size=(3, 2)), rng.normal(size=2)), rng.normal(size=3)
    pb = kind(rng.normal(size=(4, 3, 2)), rng.normal(size=(4, 2)))
    twin = jax_twin(fn, Params=Params, dataclasses=dataclasses)
    _close(srcjax.hessian(fn)(p, x), jitted(jax.hessian(twin))(p, x))
    _close(srcjax.jacfwd(srcjax.grad(fn))(p, x), jitted(jax.jacfwd(jax.grad(twin)))(p, x))
    _close(srcjax.vmap(srcjax.grad(fn), in_axes=(0, None))(pb, x),
           jitted(jax.vmap(jax.grad(twin), in_axes=(0, None)))(pb, x))


# -- 2: dict merges under grad, jacrev, vmap, vmap(grad) --------------------------------------------------------

def _fd(fn, args, argnum, eps=1e-6):
    leaves, tree = jax.tree_util.tree_flatten(args[argnum])
    out = []
    for k, leaf in enumerate(leaves):
        g = np.zeros_like(leaf)
        for idx in np.ndindex(leaf.shape):
            hi, lo = [a.copy() for a in leaves], [a.copy() for a in leaves]
            hi[k][idx] += eps
            lo[k][idx] -= eps
            at = [list(args), list(args)]
            at[0][argnum], at[1][argnum] = tree.unflatten(hi), tree.unflatten(lo)
            g[idx] = (fn(*at[0]) - fn(*at[1])) / (2 * eps)
        out.append(g)
    return tree.unflatten(out)


@pytest.mark.parametrize("fn", [splat_merge, or_merge, or_merge_in_place])
def test_merged_dicts(fn):
    rng = _rng()
    d, a = {"x": rng.normal(size=3), "y": rng.normal(size=3)}, {"y": rng.normal(size=3)}
    ab = {"y": rng.normal(size=(4, 3))}
    twin = jax_twin(fn)
    for argnum in (0, 1):
        got = srcjax.grad(fn, argnums=argnum)(d, a)
        _close(got, jitted(jax.grad(twin, argnums=argnum))(d, a))
        _close(got, _fd(fn, (d, a), argnum), rtol=1e-6, atol=1e-8)
    _close(srcjax.jacrev(fn, argnums=1)(d, a), jitted(jax.jacrev(twin, argnums=1))(d, a))
    _close(srcjax.vmap(fn, in_axes=(None, 0))(d, ab), jitted(jax.vmap(twin, in_axes=(None, 0)))(d, ab))
    _close(srcjax.vmap(srcjax.grad(fn, argnums=(0, 1)), in_axes=(None, 0))(d, ab),
           jitted(jax.vmap(jax.grad(twin, argnums=(0, 1)), in_axes=(None, 0)))(d, ab))


@pytest.mark.parametrize("fn", [keyword_merge, item_merge])
def test_dict_with_an_item_replaced(fn):
    rng = _rng()
    d, y, yb = {"x": rng.normal(size=3), "y": rng.normal(size=3)}, rng.normal(size=3), rng.normal(size=(4, 3))
    twin = jax_twin(fn)
    _close(srcjax.grad(fn, argnums=(0, 1))(d, y), jitted(jax.grad(twin, argnums=(0, 1)))(d, y))
    _close(srcjax.vmap(fn, in_axes=(None, 0))(d, yb), jitted(jax.vmap(twin, in_axes=(None, 0)))(d, yb))
    _close(srcjax.vmap(srcjax.grad(fn, argnums=(0, 1)), in_axes=(None, 0))(d, yb),
           jitted(jax.vmap(jax.grad(twin, argnums=(0, 1)), in_axes=(None, 0)))(d, yb))


def test_or_of_masks_stays_bitwise():
    """``|`` of arrays is untouched: the rewrite needs a dict in sight."""
    rng = _rng()
    x, y = rng.normal(size=5), rng.normal(size=5)
    assert "{**" not in srcjax.source(srcjax.grad(masks_or))
    _close(srcjax.grad(masks_or)(x, y), jitted(jax.grad(jax_twin(masks_or)))(x, y))


# -- 4: a comprehension over list(d.values()) under vmap(grad) --------------------------------------------------

def test_vmap_grad_of_values_comprehension():
    rng = _rng()
    db = {"a": rng.normal(size=(4, 2)), "b": rng.normal(size=(4, 2))}
    twin = jax_twin(stacked_values)
    _close(srcjax.vmap(srcjax.grad(stacked_values))(db), jitted(jax.vmap(jax.grad(twin)))(db))


# -- 5: grad inside grad of a function whose default is a function ----------------------------------------------

def test_grad_of_grad_with_a_function_default():
    v = np.array([0.1, -0.7, 1.3])
    got = srcjax.grad(grad_of_defaulted)(v)
    np.testing.assert_allclose(np.asarray(got), -np.sin(v), rtol=1e-12)
    twin = jax_twin(grad_of_defaulted, helpers=[summed])
    _close(got, jax.grad(twin)(v))


# -- 3: out_axes for lists built by a loop that do not depend on the mapped input ---------------------------------

def scaled_list(ws, x):
    outs = []
    for w in ws:
        outs.append(w * 3.0)
    return outs, x * 2.0


def mixed_list(ws, x):
    outs = []
    for w in ws:
        outs.append(w * 3.0)
    outs.append(x)
    return outs


@pytest.mark.parametrize("out_axes", [0, (None, 0), ([None, None], 0), (1, 0)], ids=str)
def test_unmapped_list_built_by_a_loop(out_axes):
    """A list of unmapped values: broadcast for an axis (it was returned without a batch axis: silently the
    wrong shape), as it is for out_axes=None (was "destination must be a static int, got None")."""
    rng = _rng()
    ws, xb = [rng.normal(size=(3, 2)), rng.normal(size=2)], rng.normal(size=(4, 3))
    twin = jax_twin(scaled_list)
    _close(srcjax.vmap(scaled_list, in_axes=(None, 0), out_axes=out_axes)(ws, xb),
           jax.vmap(twin, in_axes=(None, 0), out_axes=out_axes)(ws, xb))


@pytest.mark.parametrize("out_axes", [0, 1], ids=str)
def test_list_of_mapped_and_unmapped_values(out_axes):
    """A list of mapped and unmapped appends returned: each unmapped value broadcast where it is appended, as jax
    does (was refused at the return, "a list that holds both mapped and unmapped values")."""
    rng = _rng()
    ws, xb = [rng.normal(size=3), rng.normal(size=3)], rng.normal(size=(4, 3))
    _close(srcjax.vmap(mixed_list, in_axes=(None, 0), out_axes=out_axes)(ws, xb),
           jitted(jax.vmap(jax_twin(mixed_list), in_axes=(None, 0), out_axes=out_axes))(ws, xb))


def test_list_of_mapped_and_unmapped_values_refused_without_an_axis():
    rng = _rng()
    ws, xb = [rng.normal(size=3)], rng.normal(size=(4, 3))
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.vmap(mixed_list, in_axes=(None, 0), out_axes=None)(ws, xb)
    assert "test_container_compose.py" in str(e.value).splitlines()[0]


# -- 6: associative_scan of a combination that is no monoid, under derivatives -----------------------------------

def scanned(x):
    return np.sum(srcjax.lax.associative_scan(lambda a, b: a * 0.5 + b, x) ** 2)


def reduced(x):
    return srcjax.lax.reduce(x, 0.0, lambda a, b: a * 0.5 + b, (0,))


def test_associative_scan_of_a_lambda_under_derivatives():
    """The lambda is read as a helper (as a module-level function is): jax's recursive algorithm, differentiated
    (was "cannot differentiate through `fn(...)`" / "... the nested function `lambda_fn`")."""
    x = np.array([0.3, -1.2, 0.7, 2.0, -0.4])
    twin = jax_twin(scanned)
    _close(srcjax.jit(scanned)(x), jitted(twin)(x))
    # the printed module runs by itself: srcjax's associative_scan with the lambda fixed is printed, not imported
    # (it imported srcjax.lax.associative_scan under the copy's name and called it without the lambda)
    _close(srcjax.numpy_function(srcjax.jit(scanned))(x), scanned(x))
    _close(srcjax.grad(scanned)(x), jitted(jax.grad(twin))(x))
    _close(srcjax.jacfwd(scanned)(x), jitted(jax.jacfwd(twin))(x))


def test_reduce_of_no_monoid_refused_at_the_users_line():
    """XLA applies a reduction in no set order, and jax's derivative of one (a pairwise tree) disagrees with its own
    value (a sequence) for ``a * 0.5 + b``: refused, at the user's call, with what to write instead."""
    x = np.array([1.0, 2.0, 3.0])
    for run in (srcjax.jit(reduced), srcjax.grad(reduced)):
        with pytest.raises(srcjax.TranspileError) as e:
            run(x)
        first = str(e.value).splitlines()[0]
        assert "test_container_compose.py" in first and "lax.add" in str(e.value) and "scan" in str(e.value)


# -- 7: sorting values under derivatives -------------------------------------------------------------------------

def sorted_scalars(x):
    xs = sorted([x[0], x[1], x[2]])
    return xs[0] * 1.0 + xs[1] * 2.0 + xs[2] * 3.0


def sorted_array(x):
    xs = np.sort(np.stack([x[0], x[1], x[2]]))
    return xs[0] * 1.0 + xs[1] * 2.0 + np.sort(x)[::-1][0] * 3.0


def test_sort_of_one_array_differentiated_as_jax():
    x, xb = np.array([0.3, -1.2, 0.7]), np.array([[0.3, -1.2, 0.7], [2.0, 1.0, -3.0]])
    twin = jax_twin(sorted_array)
    _close(srcjax.grad(sorted_array)(x), jitted(jax.grad(twin))(x))
    _close(srcjax.hessian(sorted_array)(x), jitted(jax.hessian(twin))(x))
    _close(srcjax.vmap(srcjax.grad(sorted_array))(xb), jitted(jax.vmap(jax.grad(twin)))(xb))


def test_sorted_of_array_values_refused_with_np_sort():
    """``sorted()`` compares values in Python (jax.jit refuses it too): refused at the user's line, naming np.sort."""
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.grad(sorted_scalars)(np.array([0.3, -1.2, 0.7]))
    assert "test_container_compose.py" in str(e.value).splitlines()[0] and "np.sort(np.stack(" in str(e.value)



def masked_shape_error(x, y):
    m = (x > 0) | (y > 0)
    return np.sum(np.where(m, x, 0.0) @ np.ones(4))


def test_errors_in_a_function_with_an_or_keep_the_users_line():
    """The ``|`` reader rebuilds the function's nodes: each keeps its position (errors had no file:line)."""
    x = np.ones(3)
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.jit(masked_shape_error)(x, x)
    line = masked_shape_error.__code__.co_firstlineno + 2
    assert str(e.value).startswith(f"{__file__}:{line}:"), str(e.value)


def total(d):
    return np.sum(d["x"] * np.sin(d["y"]))


def merged_unseen(defaults, a):
    return total(defaults | a)


def masks_unseen(p, q):
    m = p | q
    return helper_where(m)


def helper_where(m):
    return np.sum(np.where(m, 1.0, 2.0))


def test_or_of_names_not_shown_as_dicts_or_arrays():
    """``total(defaults | a)`` (a helper indexes the merge): decided by the values, a test of the argument's type
    (zero gradients, silently, before); ``|`` of two such boolean arrays stays a bitwise or."""
    rng = _rng()
    d, a, ab = {"x": rng.normal(size=3), "y": rng.normal(size=3)}, {"y": rng.normal(size=3)}, {"y": rng.normal(size=(4, 3))}
    twin = jax_twin(merged_unseen, helpers=[total])
    _close(srcjax.grad(merged_unseen, argnums=(0, 1))(d, a), jitted(jax.grad(twin, argnums=(0, 1)))(d, a))
    _close(srcjax.vmap(srcjax.grad(merged_unseen, argnums=1), in_axes=(None, 0))(d, ab),
           jitted(jax.vmap(jax.grad(twin, argnums=1), in_axes=(None, 0)))(d, ab))
    p, q = np.array([True, False, False]), np.array([False, False, True])
    _close(srcjax.jit(masks_unseen)(p, q), masks_unseen(p, q))
    _close(srcjax.vmap(masks_unseen)(p[None], q[None]), np.array([masks_unseen(p, q)]))
