"""Run transformations of a function in one process, in a given order, and print each one's outcome
(tests/test_transform_order.py runs it twice in fresh processes: a transformation alone, then after another one of
the same function, and asserts the same outcome).

srcjax keeps state per process: per-function caches (srcjax/lifetimes.py), a function's shared ``Program`` that a
lowering may rewrite (lower/regions.py), front-end caches keyed by code objects or texts, the simplifier's caches
keyed by text. What a transformation answers must not depend on what ran before it: a refusal skipped the second
time (or a value that differs) is a silent wrong answer that only some test orders show.

A job (JSON): ``{"kind": "views", "fn": NAME, "order": [T, ...]}`` (tests/test_item_views.py's function NAME under
its ``TRANSFORMS``, on its 2-D ``M``; vmap's on two of them), or ``{"kind": "corpus", "module":
"tests.test_hunt22_programs", "case": NAME, "order": [EXPR, ...]}`` (a corpus case's checks, at float64, as
tests/vmap_corpus.py runs them), or ``{"kind": "printed", "fn": NAME, "order": [T, ...]}`` (this module's function
NAME under ``PRINTED[T]``, its value and its ``srcjax.source``). ``python -m tests.transform_order JOBS.json`` prints one JSON line per
transformation run: ``[job, step, outcome]``; an outcome is ``["value", leaves]`` (``["value", leaves, source]``), ``["refused", class, first
line]`` or ``["crash", class, message]``.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from typing import Any

import numpy as np

import srcjax


def _leaf(x: Any) -> dict[str, Any]:
    a = np.asarray(x)
    out: dict[str, Any] = {"shape": list(a.shape), "dtype": str(a.dtype), "re": np.real(a).ravel().tolist()}
    if np.iscomplexobj(a):
        out["im"] = np.imag(a).ravel().tolist()
    return out


def outcome(run: Any) -> list[Any]:
    """What ``run()`` answers: its value's leaves (and, for a :class:`Printed` value, the source printed), or its
    refusal (class and first line, generated files' counters left out), or a crash."""
    try:
        got = run()
    except srcjax.TranspileError as e:
        return ["refused", type(e).__name__, _same_text(str(e).splitlines()[0] if str(e) else "")]
    except Exception as e:  # noqa: BLE001 - (reported, compared)
        return ["crash", type(e).__name__, _same_text(str(e))[:300]]
    if isinstance(got, Printed):
        return ["value", [_leaf(x) for x in srcjax.tree_util.tree_leaves(got.value)], got.source]
    return ["value", [_leaf(x) for x in srcjax.tree_util.tree_leaves(got)]]


class Printed:
    """A step's value and the ``srcjax.source`` of the transformation that computed it."""

    def __init__(self, value: Any, source: str) -> None:
        self.value, self.source = value, source


def _same_text(text: str) -> str:
    """``text`` without what differs between processes: generated files' counters (``<srcjax.grad of f #3>``),
    addresses, directories (a corpus's temporary one) and the numbers of a corpus's check files (numbered in the
    order a process first wrote them: ``hunt25_check_2.py``)."""
    text = re.sub(r"#\d+|0x[0-9a-f]+", "#", text)
    text = re.sub(r"(?:[\w.+-]*/)+([\w.+-]+\.py)", r"\1", text)
    return re.sub(r"_check_\d+\.py", "_check_N.py", text)


def _views_step(fn_name: str, transform: str) -> Any:
    from tests import test_item_views as tv

    fn = getattr(tv, fn_name)
    arg = np.stack([tv.M, tv.M]) if transform.startswith("vmap") else tv.M.copy()
    return lambda: tv.TRANSFORMS[transform](fn)(arg)


def break_on_parameter(x):
    # (the front end cannot tell that `x` is data, so the lowering functionalizes the loop again with its test on
    # data: lower/regions.DataExit, on a copy of the shared Program)
    while x < 100.0:
        x = x * 2.0
        if x > 50.0:
            break
    return x


PRINTED: dict[str, Any] = {  # a transformation of a function, and its arguments
    "jit": lambda f: (srcjax.jit(f), (np.float64(3.0),)),
    "jvp": lambda f: (_jvp_of(f), (np.float64(3.0), np.float64(1.0))),
    "jacfwd": lambda f: (srcjax.jacfwd(f), (np.float64(3.0),)),
    "vmap": lambda f: (srcjax.vmap(f), (np.array([3.0, 60.0]),)),
}


def _jvp_of(f: Any) -> Any:
    return srcjax.autodiff._wrap(f, "jvp", (0,), False)  # (srcjax.jvp's compiled derivative: it prints)


def _printed_step(fn_name: str, transform: str) -> Any:
    def run() -> Printed:
        fn, args = PRINTED[transform](globals()[fn_name])
        return Printed(fn(*args), srcjax.source(fn))
    return run


def _corpus_step(module: str, case: str, expr: str) -> Any:
    from tests.vmap_corpus import arguments

    corpus = importlib.import_module(module).CORPUS
    c = corpus.by_name[case]
    axes = next(k[1] for k in c.checks if k[0] == expr)
    args = arguments(c, axes, np.float64)

    def run() -> Any:
        fn = corpus.evaluate(expr, corpus.srcjax_t, getattr(corpus.module, c.fn_name or c.name), vars(corpus.module))
        return (fn if expr.startswith("jit(") else srcjax.jit(fn))(*args)
    return run


def run_jobs(jobs: list[dict[str, Any]]) -> list[list[Any]]:
    lines = []
    for i, job in enumerate(jobs):
        for k, step in enumerate(job["order"]):
            run = _views_step(job["fn"], step) if job["kind"] == "views" else \
                _printed_step(job["fn"], step) if job["kind"] == "printed" else \
                _corpus_step(job["module"], job["case"], step)
            lines.append([i, k, outcome(run)])
    return lines


def same(a: list[Any], b: list[Any]) -> bool:
    """Whether two outcomes agree: the same refusal or crash, or values equal to 1e-12 (NaN where NaN)."""
    if a[0] != b[0] or a[0] != "value" or a[2:] != b[2:]:  # (a value's printed source: the same text)
        return a == b
    if len(a[1]) != len(b[1]):
        return False
    for x, y in zip(a[1], b[1]):
        if x["shape"] != y["shape"] or x["dtype"] != y["dtype"] or ("im" in x) != ("im" in y):
            return False
        for part in ("re", "im"):
            if part in x and not np.allclose(x[part], y[part], rtol=1e-12, atol=1e-300, equal_nan=True):
                return False
    return True


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        for line in run_jobs(json.load(f)):
            print(json.dumps(line), flush=True)
