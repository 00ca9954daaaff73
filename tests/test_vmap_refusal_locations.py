"""A refusal under ``vmap`` for a statement inside a branch on batched data points at that statement.

A branch on batched data is written out in line (transforms/batch_lax.py ``inline``: both branches run, each
example selects), its names renamed fresh; the renamed statements had no source position, so a refusal there
pointed at the ``def`` line (or, under ``vmap(grad)``, at the caller's line) and named srcjax's names (``ws_1``,
``i_1``, "a mapped argument"). Each is at the statement's own file:line:col now, with the user's names.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import srcjax


def in_an_if(x, i):
    out = x * 0.0
    if x.sum() > 0:
        ws = [x, 2.0 * x]
        out = out + ws[i]
    return out


def in_an_else(x, i):
    out = x * 0.0
    if x.sum() > 0:
        out = out + 1.0
    else:
        ws = [x, 2.0 * x]
        out = out + ws[i]
    return out


def in_an_if_in_a_loop(x, i):
    out = x * 0.0
    for _k in range(2):
        if x.sum() > 0:
            ws = [x, 2.0 * x]
            out = out + ws[i]
    return out


def in_a_loop(x, i):
    out = x * 0.0
    for _k in range(2):
        ws = [x, 2.0 * x]
        out = out + ws[i]
    return out


def _where(f: Any) -> tuple[int, int]:
    """The line and column of ``ws[i]`` in ``f``'s source."""
    lines, start = inspect.getsourcelines(f)
    k = next(j for j, ln in enumerate(lines) if "ws[i]" in ln)
    return start + k, lines[k].index("ws[i]") + 1


@pytest.mark.parametrize("f", [in_an_if, in_an_else, in_an_if_in_a_loop, in_a_loop], ids=lambda f: f.__name__)
@pytest.mark.parametrize("derivative", [False, True], ids=["vmap", "vmap(grad)"])
def test_a_refusal_in_a_branch_on_batched_data_points_at_its_statement(f: Any, derivative: bool) -> None:
    X, index = np.ones((2, 3)), np.array([0, 1])
    fn = srcjax.vmap(srcjax.grad(lambda x, i: np.sum(f(x, i))) if derivative else f)
    with pytest.raises(srcjax.TranspileError) as e:
        fn(X, index)
    line, col = _where(f)
    first, shown = str(e.value).splitlines()[:2]
    assert first.startswith(f"{__file__}:{line}:{col}: error: vmap: the index [i] into the Python container `ws`"), \
        str(e.value)
    assert "depends on `i`, a mapped argument" in first and "out = out + ws[i]" in shown, str(e.value)
    if not derivative:  # (under vmap(grad) the hint names the forward pass's parameters: in_an_if_fwd's)
        assert "pass in_axes=(0, None) to leave `i` unmapped" in (e.value.hint or ""), str(e.value)
