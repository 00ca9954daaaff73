"""Programs with a loop inside an ``if`` on array data (tests/test_branch_loops.py): reverse mode runs the loop
outside the ``if``, under a flag (srcjax/transforms/branch_loops.py). Each has a jax twin written with
``lax.cond`` and ``lax.fori_loop`` in tests/test_branch_loops.py."""

import numpy as np

import srcjax


def loop_in_if(x, y):
    # the `if` on data around a `for` over a static range
    if np.max(x) > 1:
        for _i in range(3):
            y = y * x + 1
    return np.sum(y * y)


def loops_in_both(x, y):
    # statements before and after the loop, a loop in the `else` too, a name first bound in the branch
    if np.sum(x) > 0:
        y = 2.0 * y
        t = x * 0.5
        for _i in range(3):
            y = np.tanh(y * t) + t
        y = y + t
    else:
        y = -y
        for _i in range(2):
            y = np.sin(y) * x
    return np.sum(y ** 2)


def nested_ifs(x, y):
    # an `if` on data inside the loop inside the `if`, a loop inside that one
    if np.max(x) > 0.5:
        for i in range(2):
            if x[i] > 0.2:
                for _j in range(2):
                    y = y * x + 0.1
            else:
                y = y + x
    return np.sum(y)


def while_in_if(x, y):
    # a `while` on data (bounded by its counter) inside the `if`
    if np.sum(x) > 0:
        k = 0
        while np.max(np.abs(y)) < 4.0 and k < 6:
            y = y * 1.5 + x
            k += 1
    return np.sum(y)


def break_in_if(x, y):
    # a `break` on data in a loop inside the `if`: the loop's flag lives across its steps
    if np.sum(x) > 0:
        for _i in range(8):
            y = y * 1.3 + x * 0.1
            if np.max(y) > 3.0:
                break
    return np.sum(y)


def elif_chain(x, y):
    # `elif`: the second test under the first one's `else`
    s = np.sum(x)
    if s > 1.0:
        for _i in range(2):
            y = y * x
    elif s > -1.0:
        for _i in range(3):
            y = np.sin(y) + x
    else:
        y = y * 2.0
    return np.sum(y)


def static_range_in_if(x, y):
    # the loop's range read from a shape inside the branch (`n = x.shape[0]` there is refused by jit too: a name
    # bound under a test on data is data)
    if np.sum(x) > 0:
        for _i in range(x.shape[0]):
            y = y * 0.8 + x
    return np.sum(y)


def rows_in_if(x, y):
    # a loop over the rows of an argument
    if np.min(x) < 0.5:
        for row in y:
            x = np.tanh(x + row)
    return np.sum(x)


def tree_maps_in_both(x, y):
    # loops over Python sequences only (tree_map's over a dict's leaves, appending to a list it makes): they unroll
    # in the branch, which is left as it is (the rewrite moved them out, and the appends under a flag were refused)
    d = {"u": x * 1.5, "v": y}
    if x[0] > 0:
        d = srcjax.tree_util.tree_map(lambda v: v * 0.5, d)
    else:
        d = srcjax.tree_util.tree_map(lambda v: v * -1.0, d)
    return np.sum(d["u"] * d["v"])


def range_in_a_tuple_loop(x, y):
    # a loop over a tuple holding a loop over a range: the range's loop moves out, and the tuple's with it
    if np.sum(x) > 0:
        for c in (0.5, 2.0):
            for _i in range(2):
                y = np.sin(y * x) * c
    return np.sum(y)


def _sweep(y, rows):
    for r in rows:
        y = np.tanh(y * r)
    return y


def helper_over_rows_made_in_the_branch(x, y):
    # the helper's loop, written out in the branch (it has no line of the user's), walks rows the branch computes
    if np.sum(x) > 0:
        m = np.outer(x, y)
        y = _sweep(y, m)
    return np.sum(y)


SCALES = (0.5, 2.0)


def arange_in_if(x, y):
    # a loop over a static array's rows moves out, as a range's
    if np.sum(x) > 0:
        for c in np.arange(3):
            y = np.sin(y * x) * c + y
    return np.sum(y)


def global_tuple_in_if(x, y):
    # a loop over a module's tuple moves out of the `if`, as a range's
    if np.sum(x) > 0:
        for c in SCALES:
            y = np.sin(y * x) * c
    return np.sum(y)
