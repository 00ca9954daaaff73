"""What a transformation answers does not depend on what ran before it in the process (tests/transform_order.py).

Each check runs fresh processes (``SRCJAX_CACHE=0``): one per position, where every job's transformation at that
position runs alone (the first of its function in that process), and one where each job's transformations run in
order; each outcome (the value to 1e-12, or the refusal's class and first line) must be the same in both. The
default tier runs a handful of jobs (tests/test_item_views.py's programs whose in-place change reaches a row view,
a corpus program that changes its caller's arrays in place); ``SRCJAX_HYPOTHESIS=thorough`` every item-view program
under rotations of its five transformations (and reversed), and every case of tests/hunt2[2-5]_programs.py with its
checks in order and reversed.

(session 44) In CI 11 cases of test_item_views.py and 2 of test_hunt16_programs.py failed: a change reaching a row
view ran under grad, vmap and vmap(grad) (silently the old value under vmap) where jit refused. Not an order
dependence after all: big25's dead rebindings (transforms/simplify_dead.py) dropped the ``in_place(..., alias=)``
check whose value nothing read, in every process; jit, which does not run that simplifier, still refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import srcjax
from tests.tiers import THOROUGH
from tests.transform_order import same

ROOT = Path(__file__).parent.parent
VIEWS = ("row_of_a_view_then_add", "dict_row_then_add", "appended_then_add", "list_rows_then_add")
TRANSFORMS = ("jit", "grad", "jacrev", "vmap", "vmap_grad")


def _run(jobs: list[dict[str, Any]], tmp: Path, tag: str) -> dict[tuple[int, int], list[Any]]:
    path = tmp / f"{tag}.json"
    path.write_text(json.dumps(jobs))
    env = dict(os.environ, SRCJAX_CACHE="0")
    out = subprocess.run([sys.executable, "-m", "tests.transform_order", str(path)], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=1800)
    assert out.returncode == 0, out.stderr[-3000:]
    return {(i, k): o for i, k, o in (json.loads(ln) for ln in out.stdout.splitlines())}


def _agree(jobs: list[dict[str, Any]], tmp: Path) -> None:
    """Each job's steps in order, in one process, against each step alone in a process of its position."""
    fresh: dict[tuple[int, int], list[Any]] = {}
    for k in range(max(len(j["order"]) for j in jobs)):
        alone = [(i, dict(j, order=[j["order"][k]])) for i, j in enumerate(jobs) if k < len(j["order"])]
        got = _run([j for _, j in alone], tmp, f"alone{k}")
        fresh.update({(i, k): got[n, 0] for n, (i, _) in enumerate(alone)})
    ordered = _run(jobs, tmp, "ordered")
    bad = [f"{jobs[i]}: step {k} ({jobs[i]['order'][k]}) alone: {str(fresh[i, k])[:300]}\n"
           f"    after {jobs[i]['order'][:k]}: {str(ordered[i, k])[:300]}"
           for i, k in sorted(fresh) if not same(fresh[i, k], ordered[i, k])]
    assert not bad, "\n".join(bad)


def _views(orders: list[list[str]], fns: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{"kind": "views", "fn": f, "order": o} for o in orders for f in fns]


def test_item_view_refusals_do_not_depend_on_what_ran_before(tmp_path):
    _agree(_views([["jit", "grad", "vmap"]], VIEWS), tmp_path)


def test_corpus_programs_that_change_arrays_in_place_do_not_depend_on_what_ran_before(tmp_path):
    # (scikit-learn's MLP forward pass: activations written into the caller's list items, refused where jax has
    # no `out=`; the checks of tests/test_hunt25_programs.py, not in their order)
    pytest.importorskip("jax")
    order = ["jit(f)", "vmap(f, in_axes=(0, None, None, None, None, None, None))"]
    _agree([{"kind": "corpus", "module": "tests.test_hunt25_programs", "case": "mlp_forward", "order": order}],
           tmp_path)


def test_a_lowering_that_functionalizes_again_changes_no_other_transformation(tmp_path):
    """(session 46) ``while x < 100.0: ... if x > 50.0: break`` on a parameter: the lowering functionalizes the loop
    again with its test on data (lower/regions.DataExit). It rewrote the shared ``Program`` in place: after jvp's
    call, jacfwd (written from jvp's program) printed the rewritten loop, and ``srcjax.source(jit(f))`` printed
    another program after its call than before. Now each lowering rewrites a copy of its own."""
    _agree([{"kind": "printed", "fn": "break_on_parameter", "order": ["jvp", "jacfwd", "jit", "vmap"]}], tmp_path)


@pytest.mark.skipif(not THOROUGH, reason="thorough tier (SRCJAX_HYPOTHESIS=thorough): the default tier runs "
                    "test_item_view_refusals_do_not_depend_on_what_ran_before")
@pytest.mark.parametrize("rotation", range(2 * len(TRANSFORMS)))
def test_every_item_view_program_in_every_rotation(rotation, tmp_path):
    from tests.test_item_views import CASES

    r = rotation % len(TRANSFORMS)
    order = list(TRANSFORMS[r:] + TRANSFORMS[:r])
    if rotation >= len(TRANSFORMS):
        order.reverse()
    _agree(_views([order], tuple(f.__name__ for f in CASES)), tmp_path)


@pytest.mark.skipif(not THOROUGH, reason="thorough tier (SRCJAX_HYPOTHESIS=thorough): the default tier runs "
                    "test_corpus_programs_that_change_arrays_in_place_do_not_depend_on_what_ran_before")
@pytest.mark.parametrize("module", [f"tests.test_hunt{n}_programs" for n in (22, 23, 24, 25)])
@pytest.mark.parametrize("reverse", [False, True], ids=["in_order", "reversed"])
def test_every_corpus_case_with_its_checks_in_order(module, reverse, tmp_path):
    pytest.importorskip("jax")
    import importlib

    cases = importlib.import_module(module).CORPUS.cases
    jobs = [{"kind": "corpus", "module": module, "case": c.name,
             "order": [k[0] for k in (reversed(c.checks) if reverse else c.checks)]} for c in cases]
    _agree(jobs, tmp_path)


# -- the fix (big25's dead rebindings dropped a check): each transformation refuses as NumPy does ------------------

_FRESH = """
import sys
import numpy as np
sys.path.insert(0, {root!r})
import srcjax
from tests.test_item_views import M, TRANSFORMS, row_of_a_view_then_add as f
for t in {order!r}:
    try:
        TRANSFORMS[t](f)(np.stack([M, M]) if t.startswith("vmap") else M.copy())
        print(t, "ran")
    except srcjax.TranspileError as e:
        print(t, "refused", str(e).splitlines()[0].rsplit("/", 1)[-1])
"""


@pytest.mark.parametrize("order", [["jit", "grad", "vmap_grad"], ["vmap"]], ids=["jit_grad_vmap_grad", "vmap"])
def test_a_change_reaching_a_row_view_is_refused_in_a_fresh_process(order):
    """(session 44) ``t = m[1:]; r = t[0]; r += 1.0`` then ``m`` read: grad, vmap and vmap(grad) ran (vmap: the old
    ``m``, where NumPy's row 1 changed), jit refused; in a fresh process too (the pair jit then grad was reported
    as an order dependence)."""
    script = _FRESH.format(root=str(ROOT), order=order)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=dict(os.environ, SRCJAX_CACHE="0"), cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    assert len(lines) == len(order), out.stdout
    for t, line in zip(order, lines):
        assert line.startswith(f"{t} refused test_item_views.py:81:"), line


def _dead_change(x):
    y = x * 2.0
    y += np.ones((2, 3))  # (NumPy: non-broadcastable output operand)
    return np.sum(x)


def _dead_cast(x):
    k = np.arange(3)
    k += x  # (NumPy: cannot cast float64 into int64)
    return np.sum(x)


@pytest.mark.parametrize("fn", [_dead_change, _dead_cast], ids=lambda f: f.__name__)
@pytest.mark.parametrize("transform", ["jit", "grad", "vmap"])
def test_an_in_place_change_numpy_refuses_is_refused_though_its_value_is_dead(fn, transform):
    """(session 44) NumPy raises at ``y += v`` where ``v`` does not fit ``y``'s shape or dtype, whether or not ``y``
    is read after: jit refused, grad and vmap ran (big25's dead rebindings dropped the ``in_place`` check)."""
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises((ValueError, TypeError)):
        fn(x.copy())
    t = {"jit": srcjax.jit, "grad": srcjax.grad, "vmap": srcjax.vmap}[transform]
    with pytest.raises(srcjax.TranspileError) as e:
        t(fn)(np.stack([x, x]) if transform == "vmap" else x)
    line = textwrap.dedent(str(e.value)).splitlines()[0]
    assert "test_transform_order.py" in line and ("broadcast" in line or "cast" in line), line
