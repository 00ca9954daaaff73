"""Two views of one array (``a = m[0]; r = m[:2]``, ``ys = [m[0]]; r = m[0]``): a change through one changes the
other in NumPy. Only the pair (view, what it views) was followed, so a change through ``a`` of a ``r`` read after it
gave srcjax the old ``r``: a silent wrong answer (test_view_alias_random's thorough tier, seed 179). Now each is
refused at the changing line; views of other literal rows (``m[0]``, ``m[1]``) share nothing and run."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import srcjax


def two_rows_same(m):
    a = m[0]
    r = m[0]
    a[0] = -1.0
    return np.sum(r)


def row_and_slice(m):
    a = m[0]
    r = m[:2]
    a[0] = -1.0
    return np.sum(r)


def column_and_row(m):
    a = m[:, 0]
    r = m[1]
    a[1] = -1.0
    return np.sum(r)


def transpose_and_row(m):
    a = m.T
    r = m[1]
    a[1, 1] = -1.0
    return np.sum(r)


def view_of_a_view(m):
    a = m[0]
    b = a[1:]
    m[0, 2] = 7.0
    return np.sum(b)


def list_item_and_row(m):
    ys = [m[0]]
    r = m[0]
    ys[0][0] = -1.0
    return np.sum(r)


def appended_item_and_row(m):
    ys = []
    ys.append(m[0])
    ys.append(m[1])
    r = m[0]
    ys[0][0] = -1.0
    return np.sum(r)


def dict_item_and_row(m):
    d = {"p": m[0]}
    r = m[0]
    d["p"][0] = -1.0
    return np.sum(r)


def row_bound_before_list(m):
    r = m[0]
    ys = [m[0]]
    ys[0][0] = -1.0
    return np.sum(r)


def unpacked_rows(m):
    a, r = m[0], m[0]
    a[0] = -1.0
    return np.sum(r)


SHARED = [two_rows_same, row_and_slice, column_and_row, transpose_and_row, view_of_a_view, list_item_and_row,
          appended_item_and_row, dict_item_and_row, row_bound_before_list, unpacked_rows]


def other_rows(m):
    a = m[0]
    r = m[1]
    a[0] = -1.0
    return np.sum(r)


def other_rows_in_a_list(m):
    ys = [m[0]]
    r = m[1]
    ys[0][0] = -1.0
    return np.sum(r) + np.sum(ys[0])


M = np.arange(12.0).reshape(3, 4)


@pytest.mark.parametrize("fn", SHARED, ids=lambda f: f.__name__)
def test_a_change_seen_through_another_view_is_refused_at_its_line(fn):
    fn(M.copy())  # (NumPy runs it)
    lines, first = inspect.getsourcelines(fn)
    changing = next(first + k for k, ln in enumerate(lines) if "= -1.0" in ln or "= 7.0" in ln)
    with pytest.raises(srcjax.TranspileError) as e:
        srcjax.jit(fn)(M.copy())
    assert f"{__file__}:{changing}:" in str(e.value)


@pytest.mark.parametrize("fn", [other_rows, other_rows_in_a_list], ids=lambda f: f.__name__)
def test_views_of_other_rows_run_and_agree_with_numpy(fn):
    np.testing.assert_allclose(np.asarray(srcjax.jit(fn)(M.copy())), fn(M.copy()))
