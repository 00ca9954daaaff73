"""vmap over nested control flow on batched data (issue #15): each branch body is batched once, whatever
its nesting depth, and the values agree with jax (a loop over examples of eager jax where the control flow
is Python on data; jax.vmap where jax can batch the program).

``SRCJAX_HYPOTHESIS=thorough`` runs every program under every composition.
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import srcjax  # noqa: E402
from srcjax.transforms import batch_lax  # noqa: E402

from . import vmap_more_programs as V  # noqa: E402
from . import vmap_nested_programs as P  # noqa: E402
from .twins import jax_twin  # noqa: E402
from .unseen_oracle import agree, loop  # noqa: E402

RNG = np.random.default_rng(1515)
THOROUGH = os.environ.get("SRCJAX_HYPOTHESIS") == "thorough"


def r(*s: int) -> np.ndarray:
    return RNG.standard_normal(s)


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times the batcher writes each nested function's body in line (per function name)."""
    seen: Counter[str] = Counter()
    inline = batch_lax.inline

    def counted(w, fdef, *args, **kw):  # type: ignore[no-untyped-def]
        seen[fdef.name.value] += 1
        return inline(w, fdef, *args, **kw)

    monkeypatch.setattr(batch_lax, "inline", counted)
    return seen


# -- 1. nested data-dependent ifs: each branch written once (was: twice per level, 2**depth) -------------------------

@pytest.mark.parametrize("how", ["vmap", "vmap(grad)"])
def test_each_branch_of_eight_nested_ifs_is_batched_once(writes, how) -> None:
    """Eight ``if``s on data nested in each other's true branch: 16 branch bodies (the grad's program has
    its own conds: 32). Was 510 (vmap) and 1020 (vmap(grad)) bodies written: each level wrote its branches
    once to learn their result's batching, then again."""
    f = srcjax.vmap(P.ladder_8) if how == "vmap" else srcjax.vmap(srcjax.grad(P.ladder_8))
    x = r(6, 4) * 0.6
    got = f(x)
    assert sum(writes.values()) <= (16 if how == "vmap" else 32), writes
    assert max(writes.values()) == 1, writes
    twin = jax_twin(P.ladder_8)
    agree(got, loop(twin if how == "vmap" else jax.grad(twin), (x,), 0, 6))


def test_vmap_grad_of_mutual_recursion_is_written_in_seconds(writes) -> None:
    """The mutual recursion of tests/test_vmap_unseen_more.py (reverse mode writes it as ~10 nested ``if``s
    on ``n``): was 4092 bodies written (~20 s), now 40; checked against jax.vmap of jax.grad."""
    x = r(4, 3)
    twin = jax_twin(V.even_steps, helpers=[V.odd_steps])
    agree(srcjax.vmap(srcjax.grad(V.even_steps), in_axes=(0, None))(x, 3),
          jax.vmap(jax.grad(twin), in_axes=(0, None))(x, 3))
    assert sum(writes.values()) <= 64, sum(writes.values())


# -- 2. values of nested control flow under vmap and its compositions -----------------------------------------------

def _vmap(f):
    return srcjax.vmap(f)


def _vmap_grad(f):
    return srcjax.vmap(srcjax.grad(f))


def _grad_vmap(f):
    return srcjax.grad(lambda x: np.sum(srcjax.vmap(f)(x)))


COMPOSED = {"vmap": (_vmap, lambda t: t), "vmap(grad)": (_vmap_grad, jax.grad), "grad(vmap)": (_grad_vmap, jax.grad)}
PROGRAMS = [P.nested_ifs_6, P.ladder_8, P.early_returns]
GRID = [(f, how) for f in PROGRAMS for how in COMPOSED]


@pytest.mark.parametrize("fn,how", GRID if THOROUGH else GRID[:4] + [(P.early_returns, "grad(vmap)")],
                         ids=lambda v: getattr(v, "__name__", v))
def test_nested_ifs_agree_with_a_loop_of_jax(fn, how) -> None:
    x = r(8, 4) * 0.8
    ours, theirs = COMPOSED[how]
    agree(ours(fn)(x), loop(theirs(jax_twin(fn)), (x,), 0, 8), what=how)


# -- 3. batched while bodies print one select per carried value --------------------------------------------------------

def newton_steps(a, b):
    x, y, it = a, b, 0
    while np.abs(x * x - a) > 1e-10 and it < 40:
        x = 0.5 * (x + a / x)
        y = y + 0.5 * x
        it += 1
    return x + y * it


def test_a_batched_while_prints_one_select_per_carried_value() -> None:
    """The step of a batched ``while`` keeps each carried value of the examples already done on its own
    line (was one ``return`` of a tuple of ``batch_select`` calls, over 200 characters with four values)."""
    a, b = np.abs(r(6)) + 0.3, r(6)
    f = srcjax.vmap(newton_steps)
    text = srcjax.source(f)
    selects = [ln.strip() for ln in text.splitlines() if "batch_select(" in ln]
    assert len(selects) == 3 and all(s.count("batch_select(") == 1 and len(s) < 60 for s in selects), text
    assert max(len(ln) for ln in text.splitlines()) <= 110, text
    agree(f(a, b), loop(newton_steps, (a, b), 0, 6))
    agree(srcjax.vmap(srcjax.grad(newton_steps, argnums=(0, 1), max_iters=40))(a, b),
          loop(jax.grad(jax_twin(newton_steps), argnums=(0, 1)), (a, b), 0, 6))


def test_a_batched_if_binding_several_names_prints_one_select_per_name() -> None:
    x, t = r(5, 3), r(5)
    text = srcjax.source(srcjax.vmap(P.search_break))
    assert not [ln for ln in text.splitlines() if ln.count("batch_select(") > 1], text
    agree(srcjax.vmap(P.search_break)(x, t), loop(P.search_break, (x, t), 0, 5))


# -- 4. the refusal of a counted `while` on a mapped bound is at the user's `while` --------------------------------------

@pytest.mark.parametrize("transform", ["grad", "jacrev", "hessian"])
def test_a_while_on_a_mapped_bound_is_refused_at_the_users_while(transform) -> None:
    """``while i < n`` with ``n`` mapped under vmap of reverse mode without max_iters: reverse mode writes
    the loop as ``for _ in range(0, n, 1)``, which cannot run a different number of times per example;
    the error names the user's ``while`` line and its test's column (was the ``def`` line)."""
    import inspect

    from . import unseen_programs as U

    lines, first = inspect.getsourcelines(U.while_on_index)
    k = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("while "))
    col = lines[k].index("i < n") + 1
    with pytest.raises(srcjax.TranspileError, match="different number of times per example") as e:
        srcjax.vmap(getattr(srcjax, transform)(U.while_on_index))(r(3, 6), np.array([2, 5, 0]))
    assert f"unseen_programs.py:{first + k}:{col}:" in str(e.value), str(e.value)
    assert "max_iters" in e.value.hint
