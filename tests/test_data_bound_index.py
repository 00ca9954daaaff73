"""``for i in range(n)`` with ``n`` computed from array data, reading ``x[i]``: refused at the loop
(srcjax/frontend/data_bound_index.py).

errs16 found that vmap of ``for i in range(int(np.sum(x))): s = s + x[i]`` clamped ``x[i]`` past the end (the
last element summed again) where NumPy raises IndexError; jit did the same. JAX refuses ``int()`` of a traced
value. A loop with a data bound whose body does not index with the loop variable keeps running, checked
against NumPy per example.
"""

import numpy as np
import pytest

import srcjax


def sum_first_n(x):
    s = 0.0
    for i in range(int(np.sum(x))):
        s = s + x[i]
    return s


def scaled_sum_first_n(x):
    s = 0.0
    n = int(np.sum(x))
    for i in range(n):
        j = i + 1
        s = s + x[j - 1] * 2.0
    return s


def write_first_n(x):
    y = np.zeros(3)
    for i in range(int(np.sum(x))):
        y[i] = 1.0
    return y * x


@pytest.mark.parametrize("fn", [sum_first_n, scaled_sum_first_n, write_first_n])
@pytest.mark.parametrize("transform", ["jit", "vmap", "jit_vmap"])
def test_an_index_from_a_data_bounded_loop_is_refused_at_the_loop(fn, transform):
    xs = np.array([[1.0, 1.0, 0.0], [3.0, 2.0, 0.0]])  # (the second example's loop runs past x's end)
    with pytest.raises(IndexError):
        fn(xs[1])
    t = {"jit": srcjax.jit, "vmap": srcjax.vmap, "jit_vmap": lambda f: srcjax.jit(srcjax.vmap(f))}[transform]
    with pytest.raises(srcjax.TranspileError) as info:
        t(fn)(xs[1] if transform == "jit" else xs)
    msg = str(info.value)
    assert "test_data_bound_index.py:" in msg.splitlines()[0] and "for i in range(" in msg, msg
    assert "IndexError" in msg and "np.where(i < n" in msg, msg


def count_steps(x):
    s = 0.0
    for _ in range(int(np.sum(x))):
        s = s + 0.5 * x[0]
    return s


def test_a_data_bounded_loop_without_an_index_still_runs_as_numpy():
    xs = np.array([[1.0, 1.0, 0.0], [3.0, 2.0, 0.0]])
    want = np.array([count_steps(x) for x in xs])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(count_steps)(xs)), want)
    np.testing.assert_allclose(np.asarray(srcjax.jit(count_steps)(xs[1])), want[1])
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(srcjax.vmap(count_steps))(xs)), want)
