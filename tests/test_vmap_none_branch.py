"""vmap of a function that returns None on one path of an ``if`` on data and a value on the other (hunt25: scipy's
``scalar_search_armijo`` returns ``None, phi_a1`` when the search fails): an internal error before
(``AttributeError: 'NoneType' object has no attribute 'shape'`` from ``batch_select``); now the located refusal
``jit`` gives, at the user's ``if``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax


def value_or_none(p):
    phi0 = np.sum(p)
    if phi0 <= 1.0:
        return phi0
    return None


def search(p):
    x = np.sum(p)
    while x > 0.1:
        x = x / 2.0
        if x < 0.3:
            return x, 1.0
    return None, x


@pytest.mark.parametrize(("fn", "line"), [(value_or_none, "if phi0 <= 1.0:"), (search, "while x > 0.1:")])
@pytest.mark.parametrize("how", ["jit", "vmap"])
def test_none_on_one_path_of_an_if_on_data_is_refused_at_the_users_line(fn: Any, line: str, how: str) -> None:
    x = np.array([[0.2, 0.3], [0.5, 0.9]])
    with pytest.raises(srcjax.TranspileError, match="the branches give different structures") as e:
        getattr(srcjax, how)(fn)(x if how == "vmap" else x[0])
    assert "test_vmap_none_branch.py" in str(e.value).splitlines()[0] and line in str(e.value)
    assert "internal error" not in str(e.value)
