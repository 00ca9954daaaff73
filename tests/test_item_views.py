"""Integer-indexed items of an array held by names and containers (srcjax/frontend/item_views.py, aliasing.scan):
``m[0]`` of a 2-D ``m`` is a NumPy *view* of its row, of a 1-D ``m`` a number (a copy).

Each program here ran silently differently from NumPy with a 2-D ``m`` (srcjax kept the old value where NumPy's
change reached the other name): ``rows = [m[0], m[1]]; rows[0] += 1`` then ``m`` read, ``{"a": m[0]}``,
``a, b = m[0], m[1]``, ``[m[i] for i in ...]``, ``list(m)``, ``rows.append(m[0])``, ``r = m[0]; m += 1`` then ``r``
read, ``t = m[1:]; r = t[0]; r += 1``, ``rows = [m.ravel()]; rows[0][2] = v``. Now each is refused at the changing
line with a hint under jit, grad, jacrev, vmap and vmap(grad) (the generated source run by NumPy raises too), and
the same program of a 1-D ``m`` (whose items are copies: NumPy's other value does not change) runs and agrees with
NumPy, the generated source run by NumPy, a loop over the examples for vmap and finite differences.
"""

import inspect

import numpy as np
import pytest

import srcjax


def list_rows_then_add(m):
    rows = [m[0], m[1]]
    rows[0] += 1.0  # changes
    return m * rows[1]


def list_rows_then_set(m):
    rows = [m[0], m[1]]
    rows[0][1] = 5.0  # changes
    return m * 2.0


def dict_row_then_add(m):
    d = {"a": m[0]}
    d["a"] += 1.0  # changes
    return m * 1.0


def dict_rows_loop(m):
    d = {"a": m[0], "b": m[1]}
    for k in d:
        d[k] *= 2.0  # changes
    return m * 1.0


def tuple_unpacked_then_add(m):
    (a, b) = (m[0], m[1])
    a += 1.0  # changes
    return m * b


def list_unpacked_then_add(m):
    rows = [m[0], m[1]]
    a, b = rows
    b -= 1.0  # changes
    return m * b


def comprehension_then_add(m):
    rows = [m[i] for i in range(2)]
    rows[1] += 1.0  # changes
    return m * 1.0


def list_of_argument_then_add(m):
    rows = list(m)
    rows[0] += 1.0  # changes
    return m * 1.0


def appended_then_add(m):
    rows = []
    rows.append(m[0])
    rows[0] += 1.0  # changes
    return m * 1.0


def row_of_a_view_then_add(m):
    t = m[1:]
    r = t[0]
    r += 1.0  # changes
    return m * 1.0


def raveled_in_a_list_then_set(m):
    rows = [m.ravel()]
    rows[0][1] = 1.0  # changes
    return m * 1.0


def name_then_array_added(m):
    r = m[0]
    m += 1.0  # changes
    return r * m


def list_then_array_added(m):
    rows = [m[0], m[1]]
    m *= 2.0  # changes
    return rows[0] * m


def unpacked_then_array_set(m):
    a, b = m[0], m[1]
    m[0] = b  # changes
    return m * a


def dict_then_array_set(m):
    d = {"a": m[1]}
    m[1, 0] = 2.0  # changes
    return d["a"] * m


def dict_then_rows_added_in_a_loop(m):  # (tests/test_view_alias_random.py's seed 18)
    d = {"p": m[0], "q": m[1]}
    for k in range(2):
        m[k] += 2.0  # changes
    return m * d["q"]


def row_then_set_with_rows_in_a_dict(m):  # (tests/test_view_alias_random.py's seed 1111)
    r = m[1]
    d = {"p": m[0], "q": m[1]}
    r[2] = 0.5  # changes
    return r * d["q"]


def row_then_added_with_rows_in_a_list(m):
    r = m[1]
    rows = [m[0], m[1]]
    r += 0.5  # changes
    return r * rows[1]


def dict_then_row_set_in_a_branch(m):  # (tests/test_view_alias_random.py's seed 2082: `m` dead after the `if`)
    d = {"p": m[1], "q": m[1]}
    if np.sum(m) > 0.0:
        m[1] = 2.0  # changes
    return d["q"] * 1.0


def unpacked_then_added_in_a_branch(m):
    _a, b = m[0], m[1]
    if np.sum(m) > 0.0:
        m *= 2.0  # changes
    return b * 1.0


def rows_collected_in_a_loop_then_set(m):
    out = []
    for r in m:
        out.append(r)
    out[0][1] = 4.0  # changes
    return m * 1.0


def branch_item_then_add(m):
    r = m[0] if m.shape[0] > 1 else m[1]
    r += 1.0  # changes
    return m * r


def unpacked_then_set(m):
    a, b = m[0], m[1]
    a[0] = 5.0  # changes
    return m * b


CASES = [list_rows_then_add, list_rows_then_set, dict_row_then_add, dict_rows_loop, tuple_unpacked_then_add,
         list_unpacked_then_add, comprehension_then_add, list_of_argument_then_add, appended_then_add,
         row_of_a_view_then_add, raveled_in_a_list_then_set, name_then_array_added, list_then_array_added,
         unpacked_then_array_set, dict_then_array_set, dict_then_rows_added_in_a_loop, unpacked_then_set,
         row_then_set_with_rows_in_a_dict, row_then_added_with_rows_in_a_list, dict_then_row_set_in_a_branch,
         unpacked_then_added_in_a_branch, rows_collected_in_a_loop_then_set, branch_item_then_add]
M = np.array([[0.7, -1.3, 2.1], [-0.4, 0.9, -1.7]])
X = np.array([0.7, -1.3, 2.1])


def _total(fn):
    return lambda v: np.sum(fn(v))


def _tangent(fn):
    return lambda v: srcjax.jvp(fn, (v,), (np.ones_like(v),))[1]


TRANSFORMS = {"jit": srcjax.jit, "grad": lambda f: srcjax.grad(_total(f)), "jacrev": srcjax.jacrev,
              "vmap": srcjax.vmap, "vmap_grad": lambda f: srcjax.vmap(srcjax.grad(_total(f))),
              "jit_jvp": lambda f: srcjax.jit(_tangent(f)), "vmap_jvp": lambda f: srcjax.vmap(_tangent(f))}


@pytest.mark.parametrize("fn", CASES)
@pytest.mark.parametrize("transform", list(TRANSFORMS))
def test_a_change_reaching_a_row_view_of_a_2d_array_is_refused_at_its_line(fn, transform):
    want = M.copy()
    with pytest.raises(srcjax.TranspileError) as info:
        TRANSFORMS[transform](fn)(np.stack([M, M]) if transform.startswith("vmap") else M.copy())
    src, first = inspect.getsourcelines(fn)
    at = next(k for k, ln in enumerate(src) if "# changes" in ln)
    # (exactly the changing statement, line and column, under every transformation: vmap's and jvp's writers mark
    # each line they write with the user's statement it comes from, a loop's or branch's body too, and the line that
    # binds the changed name again, `a, b = rows` before `b -= 1.0`, is not taken for it: frontend/provenance.py)
    where = (first + at, len(src[at]) - len(src[at].lstrip()))
    if (fn, transform) == (unpacked_then_added_in_a_branch, "vmap_grad"):  # (left: the readable form folds the
        # change into the `if`'s join, `m = batch_select(gt, in_place(...), ...)`, whose line keeps the join's
        # provenance, the `if`'s test; a line holds one mark: see frontend/provenance.py)
        where = (first + at - 1, 7)
    assert info.value.span is not None and (info.value.span.line, info.value.span.col) == where, str(info.value)
    msg = str(info.value)
    assert f"test_item_views.py:{where[0]}:{where[1] + 1}:" in msg.splitlines()[0], msg
    assert "hint:" in msg and "copy" in msg and "Traceback" not in msg, msg
    np.testing.assert_array_equal(M, want)


@pytest.mark.parametrize("fn", CASES)
def test_the_generated_source_run_by_numpy_refuses_a_2d_array_too(fn):
    try:
        run = srcjax.numpy_function(srcjax.jit(fn))
    except srcjax.TranspileError:
        return  # (refused while reading the function: no program)
    with pytest.raises((ValueError, srcjax.TranspileError), match="in place"):
        run(M.copy())


ONE_D = [list_rows_then_add, dict_row_then_add, dict_rows_loop, tuple_unpacked_then_add, list_unpacked_then_add,
         comprehension_then_add, list_of_argument_then_add, appended_then_add, name_then_array_added,
         list_then_array_added, unpacked_then_array_set, dict_then_rows_added_in_a_loop,
         row_then_added_with_rows_in_a_list, dict_then_row_set_in_a_branch, unpacked_then_added_in_a_branch,
         branch_item_then_add]


@pytest.mark.parametrize("fn", ONE_D)
def test_with_a_1d_array_its_items_are_copies_and_it_runs_as_numpy(fn):
    want = fn(X.copy())
    np.testing.assert_allclose(np.asarray(srcjax.jit(fn)(X.copy())), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(srcjax.jit(fn))(X.copy())), want, rtol=1e-12)
    xs = np.stack([X, -0.5 * X])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(fn)(xs.copy())), np.stack([fn(r.copy()) for r in xs]),
                               rtol=1e-12)
    eps = 1e-6
    fd = np.array([(np.sum(fn(X + eps * e)) - np.sum(fn(X - eps * e))) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(np.asarray(srcjax.grad(_total(fn))(X.copy())), fd, rtol=1e-6, atol=1e-8)
    fds = np.stack([[(np.sum(fn(r + eps * e)) - np.sum(fn(r - eps * e))) / (2 * eps) for e in np.eye(3)]
                    for r in xs])
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(_total(fn)))(xs.copy())), fds, rtol=1e-6,
                               atol=1e-8)
