"""Failures the random programs of tests/written.py found (``python -m tests.sweep``), reduced by hand.

Each program is checked against jax running the same source with ``jax.numpy`` (eagerly, so Python
control flow on data runs as written), compiled by XLA and run as generated source by NumPy.
The sweep's failures of issue 13's item 1 (forward mode reading a name after the statement that
rebinds it) are in tests/test_rebinding.py; these are the other classes.
"""

import inspect

import numpy as np
import pytest

import srcjax

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)


def twin(fn):
    """``fn`` with ``np`` bound to ``jax.numpy``."""
    ns = {"np": jnp}
    exec(inspect.getsource(fn), ns)
    return ns[fn.__name__]


def jax_hessian(jf, args):
    """Column by column (``jax.hessian`` is vmap over jvp, which cannot branch on data)."""
    x = args[0]
    g = jax.grad(lambda x: jf(x, *args[1:]))
    cols = [np.asarray(jax.jvp(g, (x,), (e.reshape(x.shape),))[1]) for e in np.eye(x.size)]
    return np.stack(cols, axis=-1).reshape(x.shape + x.shape)


def check(fn, args, what):
    """``what`` (grad, jvp, vjp or hessian) of ``fn`` at ``args``: XLA and NumPy against jax."""
    jf = twin(fn)
    tangents = tuple(np.cos(np.arange(np.size(a)) + 1.0).reshape(np.shape(a)) for a in args)
    nums = tuple(range(len(args)))
    for f in (srcjax.compile(fn, device="numpy"), fn):
        if what == "grad":
            got, want = srcjax.grad(f, argnums=nums)(*args), jax.grad(jf, argnums=nums)(*args)
        elif what == "jvp":
            got, want = srcjax.jvp(f, args, tangents), jax.jvp(jf, args, tangents)
        elif what == "vjp":
            got, want = srcjax.vjp(f, *args)[1](0.7), jax.vjp(jf, *args)[1](0.7)
        else:
            got, want = (srcjax.hessian(f)(*args),), (jax_hessian(jf, args),)
        for a, b in zip(got, want):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-12, err_msg=what)


# -- `and`/`or` of tests on data in an `if` ---------------------------------------------------------
# Was refused under derivatives ("builds a list or value ... derivatives cannot follow"), and the
# gradient's `and_ = a > 0 and b < 1` (bound again by the tape's pop) stayed a Python `and` on data
# under XLA. The value of an `and`/`or` of comparisons is a boolean, which carries no derivative;
# derivative code keeps it, and the functionalizer makes it `np.logical_and` wherever it is an
# `if` test on data.

def if_or(x, y):
    if np.mean(y) < 0.5 or np.sum(x) < -0.5:
        v = np.sin(x)
    else:
        v = np.cos(x)
    return np.sum(v * y)


def if_and(x):
    if np.sum(x) > 0.0 and np.max(x) < 2.0:
        v = np.sin(x)
    else:
        v = np.cos(x)
    return np.sum(v)


def if_and_not_in_a_loop(x, z):
    it = 0
    while it < 3 and np.sum(x) < 1.0:
        x = z * x
        if np.sum(x) > 0.0 and not np.max(z) > 0.5:
            x = x * np.tanh(x)
        else:
            x = np.where(x > 0, x, 0.1 * x)
        it = it + 1
    return np.sum(x * z)


def value_of_or_is_refused(x, y):
    v = x or y  # the value of `or` is one of the arrays: derivatives do not follow it
    return np.sum(v)


@pytest.mark.parametrize("what", ["grad", "jvp", "vjp", "hessian"])
@pytest.mark.parametrize("fn,args", [(if_or, (np.array([0.3, -0.2]), np.array([0.6, 0.9]))),
                                     (if_and, (np.array([-0.3, -0.2]),)),
                                     (if_and_not_in_a_loop, (np.array([0.3, 0.2, 0.1]), np.array([0.9, 0.8, 1.1]))),
                                     (if_and_not_in_a_loop, (np.array([0.3, 0.2, 0.1]), np.array([0.4, 0.3, 0.2])))],
                         ids=["or-false", "and-false", "loop-else", "loop-then"])
def test_and_or_of_data_tests_in_an_if(fn, args, what):
    np.testing.assert_allclose(srcjax.compile(fn)(*args), fn(*args), rtol=1e-12)
    check(fn, args, what)


def test_the_value_of_or_on_arrays_is_refused_at_the_users_line():
    with pytest.raises(srcjax.TranspileError) as info:
        srcjax.grad(value_of_or_is_refused)(np.array([0.3]), np.array([0.2]))
    line = inspect.getsourcelines(value_of_or_is_refused)[1] + 1
    assert f"test_random_regressions.py:{line}:" in str(info.value).splitlines()[0], str(info.value)


# -- forward over reverse: a loop whose tape holds only flags --------------------------------------
# The gradient of a counted `while` on data saves the loop's flags on the tape each iteration
# (`_tape.append((not_and__1, not_stop, not_stop_1,))`). Its jvp (hessian = jacfwd(grad)) pushes their
# zero tangents on `_tape_dot` but the adjoint's `not_and__1, ... = _tape.pop()` pops no tangent, so
# every later `x_dot = _tape_dot.pop()` takes the wrong entry: "cannot use a value of type tuple as an
# array" / "cannot unpack 3 values into 1 names" under XLA, a broadcast error or a silently wrong
# Hessian from the generated source run by NumPy (a tuple of three zeros reads as an array of three).

def rebound_then_counted_while(x, z):
    x = x / (1.0 + x * x)
    j = 0
    while np.max(z) > 3.0 and j < 1:
        j = j + 1
    return np.sum(x)


def loop_tape_then_counted_while(x):
    y = x
    for _ in range(2):
        t = np.sin(y)
        y = t * 1.0
    j = 0
    while j < 1 and np.mean(y) > 1.0:
        j += 1
    return np.sum(np.tanh(y))


def test_hessian_after_a_counted_while_on_data():
    check(rebound_then_counted_while, (np.array([0.3, -0.2]), np.array([0.5, 1.0])), "hessian")


def test_hessian_after_a_counted_while_on_data_three_elements():
    # three elements: the tuple of the loop's three flags' tangents passes for x_dot (NumPy: wrong values)
    check(rebound_then_counted_while, (np.array([0.3, -0.2, 0.7]), np.array([0.5, 1.0])), "hessian")


def test_hessian_of_a_loop_tape_then_a_counted_while_on_data():
    check(loop_tape_then_counted_while, (np.array([0.3, -0.2]),), "hessian")


# -- reverse mode: the zero cotangent of an argument whose rebinding is dead --------------------------
# `y = np.sum(y, axis=0, keepdims=True) * 0.5` and `y` never read again: the gradient in `y` is
# `y_bar = zeros_like(y)` written after the rebinding, so it has the new shape, (1, 3) for a (3, 3)
# argument (grad and vjp, XLA and NumPy). The same hazard as issue 13's item 1, in reverse mode.

def dead_rebinding_with_a_new_shape(x, y):
    y = np.sum(y, axis=0, keepdims=True) * 0.5
    return np.sum(x * x)


@pytest.mark.parametrize("what", ["grad", "vjp"])
def test_cotangent_of_an_argument_rebound_with_a_new_shape_and_unused(what):
    check(dead_rebinding_with_a_new_shape, (np.array([0.3, -0.2, 0.5]), np.arange(9.0).reshape(3, 3) / 10), what)
