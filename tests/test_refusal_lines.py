"""A refusal inside ``jvp``/``vjp``/``grad``/``vmap`` inside ``jit`` is located at the user's offending line
(tests/refusal_line_programs.py), as ``jit`` alone locates it.

(session 46, found by hunt26) The lines of generated derivative code were mapped to the user's statements by the
names they assign; the readable form renumbers temporaries densely (``sum_4`` -> ``sum_1``), so a renumbered line
took the user's line of another statement that had the new name (``sum_1 = np.sum(x * x)`` two lines above), and a
name the user binds twice (``add = ...``, then ``add = c * 3.0 + add``) took its last binding. Now a renumbered name
is looked up by the name the writer gave it (``transforms/readable_names.renamed``), and the bindings of a name bound
again are taken in order (``frontend/locations._Rebound``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import srcjax
from tests import refusal_line_programs as P

X = np.linspace(0.1, 1.5, 5)
TRANSFORMS: dict[str, Callable[[Any], Callable[[], Any]]] = {
    "jit": lambda f: lambda: srcjax.jit(f)(X),
    "jit(jvp)": lambda f: lambda: srcjax.jit(lambda x: srcjax.jvp(f, (x,), (np.cos(x),)))(X),
    "jit(vjp)": lambda f: lambda: srcjax.jit(lambda x: srcjax.vjp(f, x)[1](1.0))(X),
    "jit(grad)": lambda f: lambda: srcjax.jit(lambda x: srcjax.grad(f)(x))(X),
    "jit(vmap)": lambda f: lambda: srcjax.jit(lambda x: srcjax.vmap(f)(x))(np.stack([X, 2.0 * X])),
    "jvp": lambda f: lambda: srcjax.jvp(f, (X,), (np.cos(X),)),
    "grad": lambda f: lambda: srcjax.grad(f)(X),
}
PROGRAMS = (P.renumbered, P.renumbered_later, P.rebound, P.sized_by_data, P.masked, P.ranged)


def _offending(fn: Any) -> tuple[int, int, int]:
    """(line, first column, end column) of the construct marked ``# refused: ...`` in ``fn`` (1-based columns)."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if "# refused: " in line:
            what = line.split("# refused: ")[1].strip()
            col = line.index(what)
            return start + i, col + 1, col + len(what)
    raise AssertionError(fn.__name__)


@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_a_refusal_is_at_the_users_offending_line(fn: Any, transform: str) -> None:
    line, col, end = _offending(fn)
    with pytest.raises(srcjax.TranspileError) as e:
        TRANSFORMS[transform](fn)()
    first = str(e.value).splitlines()[0]
    where = first.split(": error")[0]
    path, got_line, got_col = where.rsplit(":", 2)
    assert path.endswith("refusal_line_programs.py"), first
    assert int(got_line) == line, first
    # (the construct, or the statement of the line that holds it: a derivative folds single-use temporaries)
    assert int(got_col) <= col, first
    shown = str(e.value).splitlines()[1:3]
    assert any("# refused" in s for s in shown), str(e.value)
    assert "^" * (end - col + 1) in "\n".join(shown) or int(got_col) < col, str(e.value)
