"""Programs for tests/test_branch_loop_sequences.py: a ``for`` over a Python sequence of static length inside an
``if`` on array data, under reverse mode (srcjax/transforms/branch_loops.py). jax's twin of each is this module run
with ``jax.numpy`` as ``np`` (jax.grad runs the ``if`` in Python, on the concrete value, and unrolls the loop)."""

import numpy as np

SCALES = (0.5, 2.0)
TABLE = {"a": 0.3, "b": -1.2}


def tuple_display(x):
    # the program
    y = x
    if np.sum(x) > 0:
        for c in (1., 2., 3.):
            y = np.sin(y) * c
    return np.sum(y)


def list_bound_before(x):
    cs = [0.5, -1.0, 2.0]
    y = x
    if np.max(x) > 0.2:
        for c in cs:
            y = np.tanh(y * c) + x
    else:
        y = y * 3
    return np.sum(y * y)


def tuple_bound_in_the_branch(x):
    y = x * 2
    if np.sum(x) > 0:
        cs = (0.5, 1.5)
        for c in cs:
            y = np.sin(y) * c + x
    return np.sum(y)


def enumerate_zip(x):
    a = (1.0, 2.0, 3.0)
    b = [0.1, 0.2, 0.3]
    y = x
    if np.sum(x) > 0:
        for i, (p, q) in enumerate(zip(a, b)):
            y = np.cos(y * p) + q * x[i]
    return np.sum(y)


def reversed_tuple(x):
    y = x
    if np.mean(x) > 0:
        for c in reversed((0.5, 1.0, 1.5)):
            y = y * np.sin(y + c)
    return np.sum(y)


def module_dict_items(x):
    y = x
    if np.sum(x) > 0:
        for _k, v in TABLE.items():
            y = np.sin(y * v) + 1.0
    return np.sum(y)


def module_tuple_in_else(x):
    y = x
    if np.sum(x) > 0:
        y = y * 2.0
    else:
        for c in SCALES:
            y = np.sin(y * x) * c
    return np.sum(y)


def arrays_bound_before(x):
    ws = (x, x * 2.0)
    y = x
    if np.sum(x) > 0:
        for w in ws:
            y = np.sin(y * w)
    return np.sum(y)


def nested_loops(x):
    y = x
    if np.sum(x) > 0:
        for a in (1.0, 2.0):
            for b in (0.5, -0.5):
                y = np.sin(y * a + b)
            for _ in range(2):
                y = y * 0.9 + x
    return np.sum(y)


def static_break_and_continue(x):
    y = x
    if np.sum(x) > 0:
        for c in (1.0, 2.0, 3.0, 4.0):
            if c == 2.0:
                continue
            if c > 3.5:
                break
            y = np.sin(y) * c
    return np.sum(y)


def if_on_data_in_the_loop(x):
    y = x
    if np.sum(x) > 0:
        for c in (1.0, -2.0, 3.0):
            if np.sum(y) > c:
                y = np.sin(y) * c
            else:
                y = y * 0.5
    return np.sum(y)


def elif_chain(x):
    s = np.sum(x)
    y = x
    if s > 1.0:
        for c in (1.0, 2.0):
            y = np.sin(y) * c
    elif s > 0.0:
        for c in [0.5, 0.25]:
            y = np.cos(y) + c
    else:
        y = y * 2.0
    return np.sum(y)


def display_made_in_the_branch(x):
    # a list of arrays the branch computes: walked by position (`for i_ws in range(2): w = ws[i_ws]`)
    y = x
    if np.sum(x) > 0:
        ws = [y * 1.0, y * 2.0]
        for i, (w, c) in enumerate(zip(ws, SCALES)):
            y = np.sin(y * w) * c + i
    return np.sum(y)


def statements_around_the_loop(x):
    y = x
    z = x * 0.0
    if np.sum(x) > 0:
        z = y * 2.0
        for c in (1., 2.):
            y = np.sin(y) * c + z
        z = z + y
    return np.sum(y * z)


def comprehension_made_in_the_branch(x):
    # refused: the comprehension's list is built by appends in the branch (jax runs it)
    y = x
    if np.sum(x) > 0:
        ws = [y * c for c in (1.0, 2.0)]
        for w in ws:
            y = np.sin(y * w)
    return np.sum(y)


def dict_made_in_the_branch(x):
    # refused: a dict of arrays the branch computes (jax runs it)
    y = x
    if np.sum(x) > 0:
        d = {"a": y * 1.0, "b": y * 2.0}
        for _k, w in d.items():
            y = np.sin(y * w)
    return np.sum(y)


RUNS = ["tuple_display", "list_bound_before", "tuple_bound_in_the_branch", "enumerate_zip", "reversed_tuple",
        "module_dict_items", "module_tuple_in_else", "arrays_bound_before", "nested_loops",
        "static_break_and_continue", "if_on_data_in_the_loop", "elif_chain", "display_made_in_the_branch",
        "statements_around_the_loop"]
