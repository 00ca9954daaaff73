"""Derivatives through generator expressions, builtin ``sum``, and lists built by append loops.

A generator expression (or a comprehension, or ``sum`` over one) over differentiated
values is written as a loop (``items.append(y)``, ``total = total + y``); a list built by
appends has a list as cotangent (``items_bar``): reading ``items[k]`` adds into
``items_bar[k]``, and the adjoint of ``items.append(v)`` is ``v_bar = items_bar.pop()``.
Each gradient is checked against ``jax.grad`` (which runs the same Python eagerly), the
generated source run by NumPy, and the XLA run; each jvp against ``jax.jvp``.
"""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcjax
from tests import twins
from tests.twins import JAX

jax.config.update("jax_enable_x64", True)


# -- programs (module level: srcjax reads their source) ---------------------------------------

def gen_sum(x):
    return sum(np.sin(x) ** k for k in range(3))


def gen_sum_arrays(x):
    return np.sum(sum(np.tanh(x * k) for k in range(1, 4)) ** 2)


def gen_sum_start(x):
    return np.sum(sum((x * k for k in range(3)), np.cos(x)))


def gen_nested_filter(x):
    return sum(x[j] * np.sin(x[k]) for j in range(3) for k in range(j) if (j + k) % 2 == 1)


def gen_stack_tuple(x):
    return np.sum(np.stack(tuple(np.sin(x * k) for k in range(3))) ** 2)


def gen_stack_list(x):
    return np.sum(np.stack(list(np.cos(x + k) for k in range(3)), axis=1) * np.arange(3.0))


def gen_concatenate(x):
    return np.sum(np.concatenate([x[k:] * k for k in range(3)]) ** 3)


def listcomp_np_sum(x):
    return np.sum([np.tanh(x * k) for k in range(3)])


def sum_of_a_list(x):
    items = [np.sin(x) ** k for k in range(3)]
    return np.sum(sum(items))


def gen_in_a_loop(x):
    for _ in range(2):
        x = sum(np.sin(x * k) for k in range(1, 3))
    return np.sum(x)


def append_index(x):
    items = []
    for k in range(3):
        items.append(x * k)
    return items[0] + items[2] * items[1]


def append_index_arrays(x):
    items = []
    for k in range(3):
        items.append(np.sin(x * k))
    return np.sum(items[0] + items[2] * items[1])


def append_last_and_len(x):
    items = [x]
    for k in range(3):
        items.append(np.sin(items[-1]) + k)
    return np.sum(items[-1] * len(items) + items[-2])


def append_read_between(x):
    items = []
    items.append(np.sin(x))
    b = items[0] * 2.0
    for k in range(2):
        items.append(x * k)
    return np.sum(b)


def append_index_in_loop(x):
    items = []
    for k in range(3):
        items.append(np.sin(x * k))
    t = 0.0
    for i in range(len(items)):
        t = t + items[i] * i
    return np.sum(t)


def append_iterate(x):
    items = []
    for k in range(3):
        items.append(x * k + 1.0)
    t = 0.0
    for v in items:
        t = t + v * v
    return np.sum(t)


def append_zip(x, w):
    items = []
    for k in range(3):
        items.append(np.tanh(x * k + w))
    t = 0.0
    for a, b in zip(items, items[1:]):
        t = t + a * b
    return np.sum(t)


def append_tuple(x):
    items = []
    for k in range(3):
        items.append(x ** k)
    t = tuple(items)
    return np.sum(np.stack(t) * 2.0) + np.sum(t[1])


def append_rolled(x, w):
    items = []
    for k in range(x.shape[0]):
        items.append(np.sin(x[k] * w) * k)
    t = items[0] * items[-1]
    for i in range(len(items)):
        t = t + items[i] * 0.5
    return np.sum(t) + np.sum(np.stack(items))


def gen_rolled(x):
    return np.sum(sum(np.tanh(x * x[k]) for k in range(x.shape[0])))


def append_static_count(x, n):
    items = []
    for k in range(n):
        items.append(np.cos(x * (k + 1.0)))
    return np.sum(items[n - 1] * items[0]) + sum(np.sum(v) for v in items)


class _Jnp:
    """jax.numpy, whose reductions also take a list of arrays (as NumPy's do)."""

    def __getattr__(self, name):
        f = getattr(jnp, name)
        if name in ("sum", "mean", "prod"):
            return lambda a, *args, **kw: f(jnp.stack(a) if isinstance(a, list) else a, *args, **kw)
        return f


def jax_twin(fn):
    return twins.jax_twin(fn, np_module=_Jnp())


def check(fn, args, argnums=0, rtol=1e-9):
    """grad: XLA == jax.grad == the generated source run by NumPy; jvp == jax.jvp."""
    g = srcjax.grad(fn, argnums=argnums)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    ours = g(*args)
    ref = twins.jitted(jax.grad(jax_twin(fn), argnums=argnums))(*args)
    via_numpy = srcjax.numpy_function(g)(*args)
    if isinstance(argnums, int):
        ours, ref, via_numpy = (ours,), (ref,), (via_numpy,)
    for k in range(len(nums)):
        np.testing.assert_allclose(np.asarray(ours[k]), np.asarray(ref[k]), rtol=rtol, atol=1e-11)
        np.testing.assert_allclose(np.asarray(via_numpy[k]), np.asarray(ref[k]), rtol=rtol, atol=1e-11)
    tangents = tuple(np.random.default_rng(0).normal(size=np.shape(a)) for a in args)
    out, t = srcjax.jvp(fn, args, tangents)
    jout, jt = twins.jvp(jax_twin(fn), args, tangents)
    np.testing.assert_allclose(np.asarray(out), np.asarray(jout), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(t), np.asarray(jt), rtol=rtol, atol=1e-11)
    return g


X3 = np.array([0.3, -0.4, 1.1])


@pytest.mark.parametrize("fn,args", [
    (gen_sum, (0.3,)),
    (gen_sum_arrays, (X3,)),
    (gen_sum_start, (X3,)),
    (gen_nested_filter, (X3,)),
    (gen_stack_tuple, (X3,)),
    (gen_stack_list, (X3,)),
    (gen_concatenate, (X3,)),
    (listcomp_np_sum, (X3,)),
    (sum_of_a_list, (X3,)),
    (gen_in_a_loop, (X3,)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_generator_expressions(fn, args):
    g = check(fn, args)
    assert "for " in srcjax.source(g)  # written as a loop


@pytest.mark.parametrize("fn,args", [
    (append_index, (0.3,)),
    (append_index_arrays, (X3,)),
    (append_last_and_len, (X3,)),
    (append_read_between, (X3,)),
    (append_index_in_loop, (X3,)),
    (append_iterate, (X3,)),
    (append_tuple, (X3,)),
], ids=lambda v: getattr(v, "__name__", "") or str(np.shape(v)))
def test_indexing_lists_built_by_appends(fn, args):
    check(fn, args)


def test_zip_over_an_appended_list():
    check(append_zip, (X3, np.array([0.2, 0.1, -0.3])), argnums=(0, 1))


def test_a_rolled_loop_reading_the_list_it_appends_to_is_unrolled():
    # regression (a silently wrong value, also without derivatives): the rolled body read the list as it
    # was when the body was traced, so `items[-1]` was `x` in every iteration
    x = np.array([0.3, -0.4, 1.1])
    np.testing.assert_allclose(np.asarray(srcjax.compile(append_last_and_len)(x)), append_last_and_len(x),
                               rtol=1e-12)


def test_generated_source_of_a_sum_over_a_generator_is_a_loop():
    src = srcjax.source(srcjax.grad(gen_sum))
    assert "total = total + pow_1" in src and "for k_1 in reversed(loop_items):" in src
    assert "sum(" not in src.replace("np.sum(", "")


def test_generated_source_of_indexing_an_appended_list():
    src = srcjax.source(srcjax.grad(append_index))
    assert "items_bar = index_add(zeros_like(items), 1, getitem_2_bar)" in src
    assert "items_bar = index_add(items_bar, 0, " in src  # (its cotangent folded in)
    assert "mul_bar = items_bar.pop()" in src


def test_a_read_before_later_appends_starts_the_cotangent_as_long_as_the_list_then():
    # regression (silently wrong before): the cotangent list began as long as the final list, so the
    # first append popped the cotangent of a later one
    src = srcjax.source(srcjax.grad(append_read_between))
    assert "items_bar = zeros_like(items)" in src
    np.testing.assert_allclose(np.asarray(srcjax.grad(append_read_between)(X3)), 2 * np.cos(X3), rtol=1e-12)


# -- rolled loops (trip counts from a shape, a static argument) ---------------------------------

def test_append_loop_rolled_into_a_while():
    x, w = np.linspace(0.1, 1.0, 12), np.array([0.3, -0.7])
    g = check(append_rolled, (x, w), argnums=(0, 1))
    assert srcjax.lower(g, x, w).as_text().count("stablehlo.while") >= 1  # the forward loop stays rolled
    assert srcjax.lower(append_rolled, x, w).as_text().count("stablehlo.while") >= 1


def test_generator_over_a_shape_range():
    check(gen_rolled, (np.linspace(-1.0, 1.0, 9),))


def test_append_loop_with_a_static_count():
    x = np.array([0.3, -0.2])
    for n in (1, 2, 5):
        g = srcjax.grad(append_static_count)
        ref = jax.grad(jax_twin(append_static_count))(x, n)
        np.testing.assert_allclose(np.asarray(g(x, n)), np.asarray(ref), rtol=1e-10)
        np.testing.assert_allclose(srcjax.numpy_function(g)(x, n), np.asarray(ref), rtol=1e-10)
        out, t = srcjax.jvp(append_static_count, (x, n), (np.ones(2), 0))
        jout, jt = jax.jvp(lambda a, n=n: jax_twin(append_static_count)(a, n), (x,), (np.ones(2),))
        np.testing.assert_allclose(np.asarray(t), np.asarray(jt), rtol=1e-10)


# -- what is refused, and where ------------------------------------------------------------------

def list_as_array(x):
    items = []
    for k in range(3):
        items.append(x * k)
    return np.sum(items)


def max_of_generator(x):
    return max(np.sin(x * k) for k in range(3))


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, ln in enumerate(lines) if text in ln)


def test_a_list_passed_as_an_array_is_its_stack():
    x = np.array([0.5, -1.0])
    np.testing.assert_allclose(np.asarray(srcjax.grad(list_as_array)(x)), [3.0, 3.0])
    _, t = srcjax.jvp(list_as_array, (x,), (np.array([1.0, 2.0]),))
    np.testing.assert_allclose(float(t), 9.0)


@pytest.mark.parametrize("fn,text,words,hint", [
    (max_of_generator, "return max(", "the builtin max()", "np.max(np.stack("),
], ids=["max(generator)"])
@pytest.mark.parametrize("transform", ["grad", "jvp"])
def test_refused_with_the_users_line_and_a_hint(fn, text, words, hint, transform):
    with pytest.raises(srcjax.TranspileError) as e:
        if transform == "grad":
            srcjax.grad(fn)(X3)
        else:
            srcjax.jvp(fn, (X3,), (np.ones(3),))
    msg = str(e.value)  # (max of a list: refused where it is evaluated, as jit refuses it, and as jax.jit does)
    assert type(e.value).__name__ in ("DifferentiationError", "StaticValueError")
    assert f"{__file__}:{_line_of(fn, text)}:" in msg, msg
    assert text in msg  # the source line, with a caret under it
    assert words in msg and "hint:" in msg and hint in msg, msg


# -- the Hessian of np.stack/np.concatenate of an appended list --------------------------------
# The gradient splits the joined cotangent with srcjax.adjoint.seq_pieces, which the second
# derivative reads; it was refused inside srcjax/adjoint.py (a comprehension) for more than six items.

def stacked_items(x, n=3):
    items = []
    for i in range(n):
        items.append(np.sin(x) * (i + 1.0))
    return np.sum(np.stack(items) ** 2) + np.sum(np.concatenate(items) ** 3)


@pytest.mark.parametrize("n", [1, 3, 8])
def test_second_derivatives_of_joined_appended_lists(n):
    x = np.array([0.1, -0.2])
    ns = {"np": jnp}
    exec(inspect.getsource(stacked_items), ns)
    jf = ns["stacked_items"]
    ref = np.asarray(twins.jitted(jax.hessian(jf), static_argnums=1)(x, n))
    np.testing.assert_allclose(np.asarray(srcjax.hessian(stacked_items)(x, n)), ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.jacrev(srcjax.grad(stacked_items))(x, n)), ref, rtol=1e-9,
                               atol=1e-12)


# -- the names of derivative code's saved-value lists (srcjax.adjoint) ---------------------------

def test_tape_names():
    from srcjax.adjoint import is_saved_list_name, is_tape_name

    tapes = ["_tape", "_tape_1", "_tape_bar", "_tape_bar_2"]
    tangent_tapes = ["_tape_dot", "_tape_1_dot", "_tape_bar_dot"]  # forward over reverse (a Hessian)
    assert all(is_tape_name(n) and is_saved_list_name(n) for n in tapes)
    # popped like a tape by a rolled adjoint loop, but passed to a helper it counts as read
    assert all(is_saved_list_name(n) and not is_tape_name(n) for n in tangent_tapes)
    assert not any(is_tape_name(n) or is_saved_list_name(n) for n in ["tape", "x_tape", "items"])


def _user_tapes_list(x):
    _tapes = []
    for i in range(5):
        _tapes.append(x * i)
    return sum(_tapes) + _tapes[-1] * _tapes[1]


def _user_tape_list(x):
    _tape = []
    for i in range(5):
        _tape.append(x * i)
    return sum(_tape)


def test_a_users_list_named_like_a_tape_is_the_users_list():
    """Tapes exist only in derivative source srcjax wrote: a user's `_tapes` list in a rolled loop is
    read back like any list (it was taken for a tape: TypeError 'int' + 'Segment')."""
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(np.asarray(srcjax.compile(_user_tapes_list)(x)), _user_tapes_list(x), rtol=1e-12)
    g = srcjax.grad(lambda x: np.sum(_user_tapes_list(x)))(x)
    np.testing.assert_allclose(np.asarray(g), 10.0 + 8 * x, rtol=1e-12)


def test_a_users_tape_name_is_refused_at_its_line():
    """The names derivative code gives its tapes are reserved: a located error, not a wrong answer."""
    with pytest.raises(srcjax.UnsupportedSyntaxError, match=r"`_tape`.*tapes of srcjax's derivative code") as e:
        srcjax.compile(_user_tape_list)(np.ones(3))
    assert e.value.span is not None and e.value.span.line == inspect.getsourcelines(_user_tape_list)[1] + 1
    assert "rename it" in str(e.value)


# -- a loop over the tuple a helper returns ------------------------------------------------------

def two_parts(a, b):
    return (np.sin(a), np.exp(b))


def weighted_parts_loop(a, b):
    t = 0.0
    for o in two_parts(a, b):
        t = t + np.sum(o * np.arange(o.size).reshape(o.shape))
    return t


def weighted_parts_generator(a, b):
    return sum(np.sum(o * np.arange(o.size).reshape(o.shape)) for o in two_parts(a, b))


def j_weighted_parts(a, b):
    return sum(jnp.sum(o * jnp.arange(o.size).reshape(o.shape)) for o in (jnp.sin(a), jnp.exp(b)))


@pytest.mark.parametrize("fn", [weighted_parts_loop, weighted_parts_generator])
def test_a_loop_over_a_helpers_tuple_carries_derivatives(fn):
    # regression: the items of `for o in helper(a, b)` were taken for static: a silent zero gradient
    a, b = np.linspace(-1.0, 1.0, 6).reshape(2, 3), np.linspace(0.0, 0.5, 3)
    jg = JAX.grad(j_weighted_parts, argnums=(0, 1))(a, b)
    for got, want in zip(srcjax.grad(fn, argnums=(0, 1))(a, b), jg):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10)
    _, t = srcjax.jvp(fn, (a, b), (np.ones_like(a), np.ones_like(b)))
    _, jt = JAX.jvp(j_weighted_parts, (a, b), (np.ones_like(a), np.ones_like(b)))
    np.testing.assert_allclose(np.asarray(t), np.asarray(jt), rtol=1e-10)


# -- nested container literals passed to a helper (regression: their cotangents were dropped) -------

def _pair_helper(arrs, d):
    return arrs[0][0] * arrs[0][1] + d["k"] * arrs[1] + d["t"][0]


def nested_literals(x, y):
    return np.sum(_pair_helper([[x, y], x * 2.0], {"k": y, "t": (np.sin(x),)}))


def test_nested_literal_arguments_get_their_cotangents():
    x, y = np.array([1.0, -2.0, 0.5]), np.array([0.3, 1.5, -1.0])

    def jhelper(arrs, d):
        return arrs[0][0] * arrs[0][1] + d["k"] * arrs[1] + d["t"][0]

    def jf(x, y):
        return jnp.sum(jhelper([[x, y], x * 2.0], {"k": y, "t": (jnp.sin(x),)}))

    got = srcjax.grad(nested_literals, argnums=(0, 1))(x, y)
    want = JAX.grad(jf, argnums=(0, 1))(x, y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)
    t = (np.ones(3), np.arange(3.0))
    np.testing.assert_allclose(float(srcjax.jvp(nested_literals, (x, y), t)[1]), float(JAX.jvp(jf, (x, y), t)[1]),
                               rtol=1e-12)


def rnn_outputs(w, xs):
    h = np.zeros(3)
    outs = []
    for t in range(xs.shape[0]):
        h = np.tanh(w @ h + xs[t])
        outs.append(h)
    return np.sum(np.array(outs) ** 2) + np.mean(outs)  # (a list as an array: np.stack of it)


def test_a_list_passed_to_numpy_as_an_array_is_differentiated():
    def jf(w, xs):
        h, outs = jnp.zeros(3), []
        for t in range(xs.shape[0]):
            h = jnp.tanh(w @ h + xs[t])
            outs.append(h)
        return jnp.sum(jnp.array(outs) ** 2) + jnp.mean(jnp.array(outs))

    rng = np.random.default_rng(3)
    w, xs = rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(4, 3))
    np.testing.assert_allclose(np.asarray(srcjax.grad(rnn_outputs)(w, xs)), np.asarray(JAX.grad(jf)(w, xs)),
                               rtol=1e-10)
    got = srcjax.vmap(rnn_outputs, in_axes=(None, 0))(w, np.stack([xs, xs * 2]))
    np.testing.assert_allclose(np.asarray(got), [rnn_outputs(w, xs), rnn_outputs(w, xs * 2)], rtol=1e-12)
