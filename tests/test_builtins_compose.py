"""Python builtins and idioms JAX users write, under jit, grad, vmap, vmap(grad) and jacfwd (issue #15: "composes
with everything"); each against jax (the same text run with jax.numpy) and NumPy running the user's function.

Also the silent wrong answer found on the way: reverse mode of a loop nested in another loop, the inner one over a
sequence made before the outer one (`for j in ...: for r in pairs:`), dropped the sequence's cotangent (zeros)."""

from __future__ import annotations

import functools  # noqa: F401 - (read by the programs, and by their jax twins)
import operator  # noqa: F401

import numpy as np
import pytest

import srcjax

from .twins import JAX, jax_twin

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(0)
X, Y = RNG.normal(size=3), RNG.normal(size=3)
XB, YB = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 3))


def _close(a, b):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for u, v in zip(la, lb):
        assert np.shape(u) == np.shape(v)
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-10, atol=1e-12)


def check(fn, args=(X, Y), batched=(XB, YB), in_axes=0, *, helpers=(), jacfwd=True, numpy=True):
    """jit against NumPy running ``fn`` (``numpy``: NumPy runs it) and jax; grad (and its generated source run by
    NumPy), vmap, vmap(grad) (and jacfwd) against jax."""
    twin = jax_twin(fn, helpers=helpers, functools=functools, operator=operator, lax=jax.lax)
    value = srcjax.jit(fn)(*args)
    if numpy:
        _close(value, fn(*args))
    _close(value, jax.jit(twin)(*args))
    grad = JAX.grad(twin)(*args)
    _close(srcjax.grad(fn)(*args), grad)
    if numpy:  # (the generated source run by NumPy)
        _close(srcjax.numpy_function(srcjax.grad(fn))(*args), grad)
    _close(srcjax.vmap(fn, in_axes=in_axes)(*batched), JAX.vmap(twin, in_axes=in_axes)(*batched))
    _close(srcjax.vmap(srcjax.grad(fn), in_axes=in_axes)(*batched),
           JAX.vmap(jax.grad(twin), in_axes=in_axes)(*batched))
    if jacfwd:
        _close(srcjax.jacfwd(fn)(*args), JAX.jacfwd(twin)(*args))


def refused(fn, *args, words=(), makers=(srcjax.jit, srcjax.grad, srcjax.vmap)):
    """``fn`` refused under jit, grad and vmap with a TranspileError located at this file's line, saying ``words``."""
    for make in makers:
        with pytest.raises(srcjax.TranspileError) as e:
            make(fn)(*args)
        text = str(e.value)
        assert "test_builtins_compose.py" in text.splitlines()[0], text
        for w in words:
            assert w in text, text


# -- a loop nested in a loop, over a sequence made before both (reverse mode dropped its cotangent) -----------

def nested_over_outer_list(x, y):
    pairs = [x, y * 2]
    s = 0.0
    for j in range(2):
        for r in pairs:
            s = s + r * j
    return np.sum(s)


def nested_over_outer_pairs(x, y):
    pairs = [(x, y), (y, x)]
    s = 0.0
    for j in range(2):
        for r in pairs:
            s = s + r[j] * r[j]
    return np.sum(s)


def nested_comprehension_over_outer_list(x, y):
    pairs = [x, y * 2]
    t = [[r * j for r in pairs] for j in range(2)]
    return np.sum(t[1][0] * t[1][1])


@pytest.mark.parametrize("fn", [nested_over_outer_list, nested_over_outer_pairs, nested_comprehension_over_outer_list])
def test_inner_loop_over_a_sequence_made_outside_the_outer_loop(fn):
    check(fn)


# -- vmap of a comprehension over a comprehension of mapped values (was the same value for every example) -----

def comprehension_over_comprehension(x, y):
    return np.sum(np.stack([a * 2 for a in [np.tanh(t) for t in [x, y]]]))


def test_comprehension_over_a_comprehension_of_mapped_values():
    check(comprehension_over_comprehension)


# -- map(f, xs, ys): a comprehension, a lambda's body in place ------------------------------------------------

def _scaled(a, b):
    return a * np.cos(b)


def map_lambda_two_lists(x, y):
    return np.sum(np.stack(list(map(lambda a, b: a * b + np.sin(a), [x, y], [y, x]))))


def map_numpy_function(x, y):
    return np.sum(sum(map(np.tanh, [x, y, x * y])))


def map_helper_of_rows(x, y):
    m = np.stack([x, y])
    return sum(np.sum(v) for v in map(_scaled, m, [y, x]))


def map_lambda_in_a_generator(x, y):
    return sum(np.sum(a) for a in map(lambda t: t * x, [x, y]))


def map_in_a_comprehension(x, y):
    return np.sum(np.stack([a * 2 for a in map(np.tanh, [x, y])]))


@pytest.mark.parametrize("fn", [map_lambda_two_lists, map_numpy_function, map_helper_of_rows, map_lambda_in_a_generator,
                                map_in_a_comprehension])
def test_map(fn):
    check(fn, helpers=[_scaled])


# -- functools.reduce: unrolled as jax traces it --------------------------------------------------------------

def reduce_layers(x, w1, w2):
    return np.sum(functools.reduce(lambda a, w: np.tanh(a @ w), [w1, w2], x))


def reduce_operator_add(x, y):
    return np.sum(functools.reduce(operator.add, [x, y, x * y]) ** 2)


def reduce_np_add_with_initial(x, y):
    return np.sum(np.sin(functools.reduce(np.multiply, [x, y], x)))


def reduce_static_range(x, y):
    return np.sum(functools.reduce(lambda a, i: a * x + i * y, range(3), x))


def reduce_rows(x, y):
    m = np.stack([x, y, x * y])
    return np.sum(functools.reduce(lambda a, r: a * r + np.sin(a), m))


@pytest.mark.parametrize("fn", [reduce_operator_add, reduce_np_add_with_initial, reduce_static_range, reduce_rows])
def test_reduce(fn):
    check(fn)


def test_reduce_layers_of_changing_shapes():
    w1, w2 = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2))
    check(reduce_layers, (X, w1, w2), (XB, w1, w2), in_axes=(0, None, None))


def reduce_empty(x):
    return np.sum(functools.reduce(operator.add, [x for _ in range(0)]))


def test_reduce_of_nothing_without_initial_is_python_error():
    with pytest.raises(srcjax.TranspileError, match="reduce\\(\\) of empty iterable"):
        srcjax.jit(reduce_empty)(X)


# -- zip(*xs): the rows -----------------------------------------------------------------------------------------

def zip_star_pairs(x, y):
    pairs = [(x, y), (y, x), (x * y, x)]
    ws, bs = zip(*pairs)
    return np.sum(np.stack(ws)) + np.sum(np.stack(bs) ** 2) + len(ws)


def list_zip_star(x, y):
    t = list(zip(*[(x, y), (y, x)]))
    return np.sum(t[0][0] * t[1][1])


def zip_star_array(x, y):
    s = 0.0
    for a, b, c in zip(*np.stack([x, y, x * y])):
        s = s + a * b - c
    return s


@pytest.mark.parametrize("fn", [zip_star_pairs, list_zip_star, zip_star_array])
def test_zip_star(fn):
    check(fn)


# -- builtins: abs, round, max/min -------------------------------------------------------------------------------

def abs_and_round(x, y):
    return np.sum(abs(x) * y + round(x) * y + round(x * y, 1))


def max_of_keys(p, x):
    k = max(p, key=len)
    return np.sum(p[k] * x) + len(p)


def sums(x, y):
    return np.sum(sum([x, y, x * y]) + sum((a * a for a in [x, y]), x) + sum(np.stack([x, y])))


def test_builtin_sum_of_lists_generators_and_rows():
    check(sums)


def test_abs_and_round():
    check(abs_and_round, numpy=False)  # (NumPy's arrays have no __round__; jax's have: np.round)


def test_max_of_a_dicts_keys_is_static():
    p, pb = {"a": X, "bb": Y}, {"a": XB, "bb": YB}
    check(max_of_keys, (p, X), (pb, X), in_axes=(0, None), jacfwd=False)


def max_of_two(x, y):
    return np.sum(max(x, 2.0) + min(1.0, y))


def max_of_list(x, y):
    return np.sum(max([x, y]))


def max_of_rows(x, y):
    return np.sum(max(np.stack([x, y])))


@pytest.mark.parametrize("fn", [max_of_two, max_of_list, max_of_rows])
def test_builtin_max_of_arrays_is_refused_as_jax_refuses_it(fn):
    twin = jax_twin(fn)
    with pytest.raises((TypeError, ValueError)):  # (a traced bool; an array of several bools)
        jax.jit(twin)(X, Y)
    # X and Y are vectors: under jit and grad `max(x, 2.0)` (`max([x, y])`: `max(x, y)`; `max(rows)`: its rows two at
    # a time) compares arrays (refused as jax refuses it); under vmap each example is one number (a row of two), which
    # Python's max compares: it runs as the loop over examples does (jax.vmap refuses it: a traced bool)
    refused(fn, X, Y, words=("compares values known only at run time", "np.m"), makers=(srcjax.jit, srcjax.grad))
    got = np.asarray(srcjax.vmap(fn)(X, Y))
    np.testing.assert_allclose(got, [fn(a, b) for a, b in zip(X, Y)], rtol=1e-15)


def test_vmap_of_builtin_max_of_each_examples_numbers_follows_python():
    """(session 44) Python's max/min of each example's single values under vmap: a select in Python's order (the
    first of equal values, NaN where Python keeps it); sizes of batched values (``min(len(x), len(y))``) are
    static. alias25's first rule wrote the batched text of any argument as it stood: ``len(x)`` of a batched
    ``x`` was the batch size (a silent wrong Jacobian under vmap(jacfwd))."""
    def f(x, y):
        return max(x, 2.0) * min(y, -1.0, x) + max(x, y, 0.5)

    def sizes(x, y):
        n = min(len(x), len(y))
        return np.sum(x[:n] * y[:n]) + max(len(x), 2)

    xs = np.array([1.0, 3.0, np.nan, -2.0, 2.0, 0.5])
    ys = np.array([-3.0, np.nan, 1.0, 0.0, 2.0, 0.5])
    got = np.asarray(srcjax.vmap(f)(xs, ys))
    np.testing.assert_array_equal(got, np.array([f(a, b) for a, b in zip(xs, ys)]))
    a, b = np.arange(12.0).reshape(3, 4), np.arange(15.0).reshape(3, 5)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(sizes)(a, b)), [sizes(p, q) for p, q in zip(a, b)])
    with pytest.raises(srcjax.TranspileError) as e:  # (examples that are rows: Python's max of arrays, refused)
        srcjax.vmap(f)(a, a)
    assert "test_builtins_compose.py" in str(e.value).splitlines()[0] and "np.maximum" in str(e.value)


# -- f(*xs), f(**kw) of a tuple, list or dict held in a name ------------------------------------------------

def _h(a, b, scale=1.0):
    return scale * a * b


def star_of_held_tuple(x, y):
    xs = (x, y)
    return np.sum(np.add(*xs))


def star_and_kwargs_forwarded(x, y):
    args = [x, y]
    kw = {"scale": 3.0}
    return np.sum(_h(*args, **kw))


@pytest.mark.parametrize("fn", [star_of_held_tuple, star_and_kwargs_forwarded])
def test_star_arguments_of_a_held_literal(fn):
    check(fn, helpers=[_h])


def star_of_appended_list(x, y):
    xs = [x]
    xs.append(y)
    return np.sum(np.add(*xs))


def test_star_of_a_changed_list_is_refused_with_what_to_write():
    refused(star_of_appended_list, X, Y, words=("f(xs[0], xs[1])",))


# -- starred unpacking of an argument's list under vmap ------------------------------------------------------

def first_and_rest(ws, x):
    first, *rest = ws
    return np.sum(first * x) + sum(np.sum(r ** 2) for r in rest)


def nested_starred_targets(x, y):
    *a, b = [x, y, x * y]
    (c, *d), e = (x, y, x), y
    return np.sum(a[1] * b + c * d[1] * e)


def test_nested_starred_targets():
    check(nested_starred_targets)


def test_starred_unpacking_of_a_mapped_list():
    ws = [RNG.normal(size=3) for _ in range(3)]
    wb = [RNG.normal(size=(2, 3)) for _ in range(3)]
    check(first_and_rest, (ws, X), (wb, X), in_axes=(0, None))


# -- NumPy functions as lax.switch / lax.cond branches, under vmap ----------------------------------------------

def switch_numpy_branches(i, x):
    return np.sum(srcjax.lax.switch(i, [np.sin, np.cos, np.tanh], x))


def cond_numpy_branches(p, x, y):
    return np.sum(srcjax.lax.cond(p > 0, np.add, np.multiply, x, y))


def test_numpy_functions_as_branches_of_a_batched_index():
    twin = jax_twin(switch_numpy_branches)
    i, ib = 2, np.array([0, 2])
    _close(srcjax.jit(switch_numpy_branches)(i, X), jax.jit(twin)(i, X))
    _close(srcjax.vmap(switch_numpy_branches)(ib, XB), JAX.vmap(twin)(ib, XB))
    _close(srcjax.vmap(srcjax.grad(switch_numpy_branches, argnums=1))(ib, XB),
           JAX.vmap(jax.grad(twin, argnums=1))(ib, XB))
    _close(srcjax.jacfwd(switch_numpy_branches, argnums=1)(i, X), JAX.jacfwd(twin, argnums=1)(i, X))
    twin = jax_twin(cond_numpy_branches)
    pb = np.array([1.0, -1.0])
    _close(srcjax.vmap(cond_numpy_branches)(pb, XB, YB), JAX.vmap(twin)(pb, XB, YB))
    _close(srcjax.vmap(srcjax.grad(cond_numpy_branches, argnums=(1, 2)))(pb, XB, YB),
           JAX.vmap(jax.grad(twin, argnums=(1, 2)))(pb, XB, YB))


# -- a loop with an early `return` over an array of no rows: the fallthrough value, as NumPy (and jax) -------

def first_above(x):
    for v in x:
        if v > 0.5:
            return v * 2.0
    return np.sum(x) - 1.0


def first_row_above(m, t):
    for r in m:
        if np.sum(r) > t:
            return r * 2
    return np.zeros(3)


@pytest.mark.parametrize("n", [0, 3])
def test_early_return_over_no_rows(n):
    x, xb = RNG.uniform(size=n), RNG.uniform(size=(2, n))
    twin = jax_twin(first_above)  # (the oracles: NumPy, jax's eager grad, per example)
    _close(srcjax.jit(first_above)(x), first_above(x))
    _close(srcjax.grad(first_above)(x), jax.grad(twin)(x))
    _close(srcjax.vmap(first_above)(xb), np.array([first_above(r) for r in xb]))
    g = jax.grad(twin)  # (eager: jax's vmap refuses a Python `if` on data)
    _close(srcjax.vmap(srcjax.grad(first_above))(xb), np.stack([g(r) for r in xb]))
    m, mb = RNG.normal(size=(n, 3)), RNG.normal(size=(2, n, 3))
    _close(srcjax.jit(first_row_above)(m, 0.0), first_row_above(m, 0.0))
    _close(srcjax.vmap(first_row_above, in_axes=(0, None))(mb, 0.0), np.array([first_row_above(r, 0.0) for r in mb]))
