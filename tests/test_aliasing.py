"""In-place changes seen through another name (srcjax/frontend/aliasing.py).

NumPy's ``a += b`` and ``a[i] = v`` change the array, so ``b = a`` made earlier sees the change;
srcjax's arrays are immutable, as JAX's. Where the second name is read after the change, the
results would differ silently: srcjax refuses at the changing statement. Where nothing reads the
alias afterwards, or the value is a Python number (immutable in NumPy too), it compiles, and
agrees with NumPy. Found by the thorough random-program sample (`v7 = v1; v1 += v1; return v6, v7`).
"""

import inspect

import numpy as np
import pytest

import srcjax


def alias_then_add(w):
    v1 = np.tanh(w)
    v7 = v1
    v1 += v1
    return v1, v7


def alias_then_set_item(x):
    y = x
    x[0] = 5.0
    return np.sum(y)


def alias_then_add_item(x):
    y = x
    x[1] += 2.0
    return y


def alias_in_a_loop(x):
    acc = np.zeros(3)
    for _ in range(3):
        prev = acc
        acc += x
        x = x + prev
    return x


def accumulate_into_an_argument(x):
    out = x  # NumPy: out and x are one array, so x * i below reads the running sum
    for i in range(3):
        out += x * i
    return out


def read_after_rebinding(x):
    y = x
    x += 1.0
    y = y * 2
    return x, y


REFUSED = [alias_then_add, alias_then_set_item, alias_then_add_item, alias_in_a_loop, accumulate_into_an_argument,
           read_after_rebinding]


@pytest.mark.parametrize("fn", REFUSED, ids=[f.__name__ for f in REFUSED])
def test_an_in_place_change_seen_through_an_alias_is_refused_at_the_change(fn):
    with pytest.raises(srcjax.UnsupportedSyntaxError) as info:
        srcjax.compile(fn)(np.arange(3.0))
    src, first = inspect.getsourcelines(fn)
    line = first + next(k for k, ln in enumerate(src) if "+=" in ln or "] =" in ln)
    msg = str(info.value)
    assert f"test_aliasing.py:{line}:" in msg.splitlines()[0], msg
    assert "np.copy(" in msg, msg


def no_alias_read_after(x):
    y = x
    y += 1.0
    return y


def python_numbers(x):
    n = 0
    m = n
    n += 1
    return x * m + n


def explicit_copy(x):
    y = np.copy(x)
    x += 1.0
    x[0] = 7.0
    return x + y


def alias_rebound_before_the_change(x):
    y = x
    y = y * 2.0
    x += 1.0
    return x + y


ACCEPTED = [no_alias_read_after, python_numbers, explicit_copy, alias_rebound_before_the_change]


@pytest.mark.parametrize("fn", ACCEPTED, ids=[f.__name__ for f in ACCEPTED])
def test_without_a_later_read_of_an_alias_it_compiles_and_agrees_with_numpy(fn):
    x = np.arange(3.0)
    np.testing.assert_allclose(np.asarray(srcjax.compile(fn)(x.copy())), fn(x.copy()), rtol=1e-12)


# -- through a NumPy view: the same difference ------------------------------------------------------

def view_by_reshape_then_add(y):
    v = y.reshape(-1)  # a view of y in NumPy
    y += y
    return np.sum(v * v)


def view_by_transpose_then_scale(x):
    t = x.T
    x *= 2.0
    return t


def view_by_slice_then_subtract(x):
    head = x[:2]
    x -= 1.0
    return np.sum(head) + np.sum(x)


def view_by_np_reshape_changed_in_place(x):
    r = np.reshape(x, (3, 1))
    r += 1.0  # changes x too, in NumPy
    return x


VIEWS = [view_by_reshape_then_add, view_by_transpose_then_scale, view_by_slice_then_subtract,
         view_by_np_reshape_changed_in_place]


@pytest.mark.parametrize("fn", VIEWS, ids=[f.__name__ for f in VIEWS])
def test_an_in_place_change_seen_through_a_view_is_refused_at_the_change(fn):
    # regression: srcjax gave the old view's values where NumPy sees the change (a silent difference)
    with pytest.raises(srcjax.UnsupportedSyntaxError) as info:
        srcjax.compile(fn)(np.arange(3.0))
    src, first = inspect.getsourcelines(fn)
    line = first + next(k for k, ln in enumerate(src) if "=" in ln and ln.split("=")[0].rstrip()[-1] in "+-*")
    msg = str(info.value)
    assert f"test_aliasing.py:{line}:" in msg.splitlines()[0], msg
    assert ".copy()`" in msg, msg  # the hint copies the view where it is made


def element_then_add(x):
    first = x[0]  # an element of a 1-D array: a copy in NumPy
    x += 1.0
    return x * first


def view_rebound_before_the_change(x):
    v = x[1:]
    v = v * 2.0
    x += 1.0
    return np.sum(v) + np.sum(x)


@pytest.mark.parametrize("fn", [element_then_add, view_rebound_before_the_change])
def test_reads_that_are_not_views_still_compile_and_agree_with_numpy(fn):
    x = np.arange(3.0)
    np.testing.assert_allclose(np.asarray(srcjax.compile(fn)(x.copy())), fn(x.copy()), rtol=1e-12)
