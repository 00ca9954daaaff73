"""Random user programs with one refusable construct at a random line, under a random composition of
transformations: the TranspileError's file:line:col is exactly that construct's (tests/test_exact_locations.py has the
hand-written cases; frontend/provenance.py and frontend/columns.py carry the places through generated code).
``SRCJAX_REFUSAL_SEEDS=N``: the first N seeds (default 8; 40 checked when written)."""

from __future__ import annotations

import importlib.util
import os
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import srcjax

# (the construct, written with `{u}` for the value it reads; the text the error must point at)
# (a summed masked selection, `np.sum(u[u > 0.0])`, runs: read as a `where`)
CONSTRUCTS = [("np.nonzero({u})[0] * 1.0", "np.nonzero({u})"),
              ("{u} + np.ones(7)", "{u} + np.ones(7)"), ("np.unique({u})", "np.unique({u})"),
              ("np.reshape({u}, (2, 2))", "np.reshape({u}, (2, 2))")]
FILLERS = ["np.sin({u}) * 2.0", "np.tanh({u}) + {u}", "{u} * {u} - 1.0", "np.exp(-{u}) / 3.0"]


def _tangent(f: Callable[..., Any]) -> Callable[..., Any]:
    return lambda x: srcjax.jvp(f, (x,), (np.ones_like(x),))[1]


COMPOSITIONS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "jit": srcjax.jit, "grad": srcjax.grad, "jit_grad": lambda f: srcjax.jit(srcjax.grad(f)), "jvp": _tangent,
    "jit_jvp": lambda f: srcjax.jit(_tangent(f)), "vmap": srcjax.vmap,
    "vmap_grad": lambda f: srcjax.vmap(srcjax.grad(f)), "hessian": srcjax.hessian}


def program(seed: int) -> tuple[str, int, int, str]:
    """(source of `f`, 1-based line and 0-based column of its refusable construct, the composition)."""
    r = random.Random(seed)
    n = r.randint(2, 5)
    at = r.randint(0, n - 1)
    lines, last = ["import numpy as np", "", "", "def f(x):"], "x"
    place = (0, 0)
    for i in range(n):
        if i == at:
            made, shown = r.choice(CONSTRUCTS)
            text = f"    v{i} = np.sum(x) + np.sum({made.format(u=last)})"
            place = (len(lines) + 1, text.index(shown.format(u=last)))
        else:
            text = f"    v{i} = {r.choice(FILLERS).format(u=last)}"
        lines.append(text)
        last = f"v{i}"
    lines.append(f"    return np.sum({last})")
    return "\n".join(lines) + "\n", place[0], place[1], r.choice(sorted(COMPOSITIONS))


SEEDS = list(range(int(os.environ.get("SRCJAX_REFUSAL_SEEDS", "8"))))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_random_programs_refusal_is_at_its_construct(seed: int, tmp_path: Any) -> None:
    text, line, col, composition = program(seed)
    path = tmp_path / f"refused_{seed}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"refused_{seed}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = np.array([1.5, -0.3, 2.0])
    with pytest.raises(srcjax.TranspileError) as info:
        COMPOSITIONS[composition](module.f)(np.stack([x, x + 0.5]) if "vmap" in composition else x)
    e = info.value
    assert e.span is not None and (e.span.filename, e.span.line, e.span.col) == (str(path), line, col), \
        f"{composition}: {e}\n{text}"
