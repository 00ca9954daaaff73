"""Programs with nested control flow on batched data, for tests/test_vmap_nested_control.py (issue #15):
deep nested data-dependent ``if``s, ``while`` inside ``if`` inside ``while``, ``break``/``continue`` and
early returns in nested ``if``s. Their jax twins are loops over examples (the control flow is Python on
data) or the same source run with ``np`` as jax.numpy where it is ``srcjax.lax``."""

import numpy as np

import srcjax


def nested_ifs_6(x):
    s = np.sum(x)
    if s > 0.0:
        y = x * 1.5
        if np.sum(y) > 1.0:
            y = np.sin(y)
            if np.max(y) > 0.5:
                y = y * y
                if np.sum(y) > 0.3:
                    y = y + np.cos(x)
                    if np.min(y) > 0.2:
                        y = y * 0.5
                        if np.sum(y) > 1.0:
                            y = np.tanh(y)
                        else:
                            y = y + 1.0
                    else:
                        y = y - x
                else:
                    y = y * 3.0
            else:
                y = y + x
        else:
            y = y ** 2
    else:
        y = np.exp(x)
    return np.sum(y * x)


def ladder_8(x):
    """Eight ifs, each inside the previous one's true branch; each test on the running value."""
    y = x
    if np.sum(y) > -3.0:
        y = y * 1.1
        if np.sum(y) > -2.5:
            y = np.sin(y) + y
            if np.sum(y) > -2.0:
                y = y * 0.9
                if np.sum(y) > -1.5:
                    y = y + 0.1 * np.cos(y)
                    if np.sum(y) > -1.0:
                        y = y * 1.2
                        if np.sum(y) > -0.5:
                            y = np.tanh(y) + y
                            if np.sum(y) > 0.0:
                                y = y * 0.8
                                if np.sum(y) > 0.5:
                                    y = y ** 2
    return np.sum(y * y)


def while_if_while(x):
    """A ``while`` inside an ``if`` inside a ``while``, each test on the example's data."""
    k = 0
    while np.sum(x * x) < 20.0 and k < 6:
        if np.sum(x) > 0.0:
            j = 0
            while np.max(x) < 3.0 and j < 4:
                x = x * 1.3 + 0.1
                j = j + 1
        else:
            x = x - 0.5 * np.sin(x)
        x = x * 1.2
        k = k + 1
    return np.sum(np.sin(x))


def if_while_if(x):
    """An ``if`` inside a ``while`` inside an ``if``."""
    if np.sum(x) > 0.0:
        i = 0
        while np.sum(x) < 5.0 and i < 8:
            if x[0] > 0.0:
                x = x * 1.4
            else:
                x = x + 0.7
            i = i + 1
        y = x
    else:
        y = np.cos(x)
    return np.sum(y * y)


def search_break(x, t):
    """``break`` and ``continue`` inside nested ifs of a loop over the elements (tests on data)."""
    acc = 0.0
    for i in range(x.shape[0]):
        v = x[i]
        if v < 0.0:
            if v < -1.0:
                break
            continue
        if v > t:
            acc = acc + v * v
            if acc > 2.0:
                break
        else:
            acc = acc + np.sin(v)
    return acc


def early_returns(x):
    """Early returns inside nested ifs."""
    s = np.sum(x)
    if s > 1.0:
        if np.max(x) > 1.5:
            return np.sum(x ** 2)
        y = np.sin(x) * s
        if np.min(y) < -0.5:
            return np.sum(y)
        return np.sum(y * x)
    if s < -1.0:
        return np.sum(np.exp(x * 0.1))
    return np.sum(np.tanh(x) * s)


def while_while_while(x):
    """Three ``while`` loops on data, each inside an ``if`` inside the one around it."""
    a = 0
    while np.sum(x) < 6.0 and a < 4:
        if np.max(x) > -1.0:
            b = 0
            while np.min(x) < 0.5 and b < 3:
                if np.sum(x) > -2.0:
                    c = 0
                    while np.max(x) < 2.0 and c < 3:
                        x = x + 0.3 * np.cos(x)
                        c = c + 1
                x = x + 0.2
                b = b + 1
        x = x * 1.1 + 0.05
        a = a + 1
    return np.sum(x * x)



def skip_small(x):
    """``continue`` inside a ``while`` on the example's elements, then a nested choice."""
    acc = 0.0
    i = 0
    while i < x.shape[0]:
        v = x[i]
        i = i + 1
        if np.abs(v) < 0.3:
            continue
        if v > 0.0:
            acc = acc + np.sqrt(v)
        else:
            acc = acc - v * v
    return acc


def bisect_cube_root(c):
    """Bisection (a ``while`` on data with an ``if`` on data in it): the cube root of ``c``."""
    lo = 0.0
    hi = 1.0 + c
    while hi - lo > 1e-9:
        mid = 0.5 * (lo + hi)
        if mid * mid * mid > c:
            hi = mid
        else:
            lo = mid
    return lo * np.ones(2) + c


def piecewise(x):
    """An ``elif`` chain with an ``if`` nested in one arm."""
    s = np.sum(x)
    if s < -1.0:
        y = np.exp(x)
    elif s < 0.0:
        if np.max(x) > 0.5:
            y = x * np.sin(x)
        else:
            y = x ** 3
    elif s < 1.0:
        y = np.tanh(x) * s
    else:
        y = x * s
    return np.sum(y)


def first_above(x, t):
    """An early return inside nested ``if``s inside a loop over the elements."""
    for i in range(x.shape[0]):
        if x[i] > t:
            if i > 1:
                return x[i] * 2.0 + t
            return x[i] * t
    return np.sum(x) * 0.5


def grow_until(x):
    """``break`` inside an ``if`` nested in an ``if`` of a counted ``while``."""
    k = 0
    while k < 10:
        x = x * 1.2 + 0.1
        if np.sum(x) > 5.0:
            if np.max(x) > 2.0:
                break
            x = x * 0.5
        k += 1
    return np.sum(x ** 2)


def rows_by_sign(x):
    """A ``for`` over rows with nested ``if``s on each row's data, accumulating an array."""
    acc = np.zeros(x.shape[1])
    for r in range(x.shape[0]):
        row = x[r]
        if np.sum(row) > 0.0:
            if row[0] > 0.0:
                acc = acc + row
            else:
                acc = acc + 2.0 * row
        else:
            acc = acc - np.sin(row)
    return np.sum(acc * acc)


def damped_newton(a):
    """Newton on ``x**3 = a`` with a damped step where the step is large (an ``if`` in the ``while``)."""
    x = a + 1.0
    it = 0
    while np.abs(x * x * x - a) > 1e-10 and it < 60:
        step = (x * x * x - a) / (3.0 * x * x)
        if np.abs(step) > 0.5:
            step = 0.5 * step
        x = x - step
        it += 1
    return x


def count_then_scale(x):
    """A ``while`` inside an ``if`` whose count then scales the result (an int carried out of the loop)."""
    n = 0
    if np.sum(x) > 0.0:
        while np.sum(x) < 8.0 and n < 6:
            x = x * 1.5
            n = n + 1
    else:
        x = -x
    return np.sum(x) * (n + 1)


def nested_loops_break(x):
    """``break`` out of an inner loop on data, inside an outer loop over rows."""
    total = 0.0
    for r in range(x.shape[0]):
        s = 0.0
        for c in range(x.shape[1]):
            if x[r, c] < -0.5:
                break
            s = s + x[r, c] * (c + 1)
        if s > 1.0:
            total = total + s
        else:
            total = total - 0.5 * s
    return total


def switch_ladder(x, k):
    """``srcjax.lax.switch`` four deep, each on the same index (jax.vmap runs its twin)."""
    def leaf(y):
        return np.tanh(y)

    def sin(y):
        return np.sin(y)

    def cos(y):
        return np.cos(y) * y

    def d4(y):
        return srcjax.lax.switch(k, [leaf, sin, cos], y * 1.1)

    def d3(y):
        return srcjax.lax.switch(k, [d4, sin, cos], y + 0.1)

    def d2(y):
        return srcjax.lax.switch(k, [d3, sin, cos], y * 0.9)

    return np.sum(srcjax.lax.switch(k, [d2, sin, cos], x) * x)
