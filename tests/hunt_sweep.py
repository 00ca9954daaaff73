"""What the program hunts share (tests/test_hunt_random.py, tests/test_hunt_domains.py,
tests/test_transform_compose_random.py, tests/test_user_programs.py, the corpora's tests/corpus_harness.py): a case's
:class:`Outcome`, how a srcjax error is classified, the leaf by leaf comparison of results, the verdict on a result
(:func:`judged`: against jax, then NumPy running the generated source), and the command line of the random hunts (``python -m tests.test_hunt_random``,
``python -m tests.test_hunt_domains``): run seeds in one process, print each case and what went wrong."""

from __future__ import annotations

import argparse
import collections
import pathlib
import tempfile
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np


class Outcome(NamedTuple):
    status: str  # "ok", "refused", "known", "wrong", "internal", "oracle", "numpy"
    detail: str


def refusal(e: BaseException, user_files: Sequence[str], known: Sequence[str], chars: int) -> Outcome:
    """A srcjax TranspileError: "internal" when it is located in srcjax's own files or not in the user's
    (``user_files``: fragments of their paths), "known" when it is a refusal listed in ``known``, else
    "refused" (located at the user's line where jax runs)."""
    msg = str(e)
    first = msg.split("\n")[0]
    in_srcjax = "srcjax/" in first and not any(u in first for u in user_files)
    if in_srcjax or not any(u in msg for u in user_files):
        return Outcome("internal", f"unlocated/srcjax-located {type(e).__name__}: {msg[:chars]}")
    if any(k in msg for k in known):
        return Outcome("known", first[:300])
    return Outcome("refused", msg[:chars])


def crash(e: BaseException, chars: int) -> Outcome:
    """Any other exception out of srcjax: an internal error, with the end of its traceback."""
    return Outcome("internal", f"{type(e).__name__}: {e}\n{traceback.format_exc()[-chars:]}")


def leaves_agree(gl: Sequence[Any], wl: Sequence[Any], what: str, rtol: float, dtypes: bool = True) -> None:
    """Two results' leaves, in order: the same count, shapes and (``dtypes``) dtypes; values within ``rtol``
    (absolute ``rtol`` times the expected leaf's largest magnitude, at least 1)."""
    assert len(gl) == len(wl), f"{what}: {len(gl)} leaves, want {len(wl)}"
    for i, (g, w) in enumerate(zip(gl, wl)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{what}: leaf {i} shape {g.shape} != {w.shape}"
        if w.dtype.kind == "V":  # (jax's float0 tangent of an integer output: srcjax's is a float zero, documented in
            assert not np.any(g), f"{what}: leaf {i} (an integer output's tangent) is not zero"  # transformations.md)
            continue
        if dtypes:
            assert g.dtype == w.dtype, f"{what}: leaf {i} dtype {g.dtype} != {w.dtype}"
        scale = max(1.0, float(np.max(np.abs(w.astype(np.float64)), initial=0.0)))
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=rtol * scale,
                                   err_msg=f"{what} leaf {i}")


Agree = Callable[[Any, Any, str, float], None]  # (got, want, what, rtol): an AssertionError where they differ


def source_run_agrees(fn: Any, args: Sequence[Any], got: Any, agree: Agree, rtol: float, chars: int,
                      numpy_chars: int) -> Outcome | None:
    """The generated source of ``fn`` run by NumPy (``srcjax.numpy_function(fn)(*args)``, warnings ignored: NumPy's
    overflow in an untaken branch) against srcjax's result ``got``: None where ``agree`` finds them within ``rtol``,
    else the Outcome "numpy" (it did not run; its error's first ``numpy_chars``) or "wrong" (the first ``chars`` of
    the difference)."""
    import srcjax

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np_got = srcjax.numpy_function(fn)(*args)
    except Exception as e:  # noqa: BLE001
        return Outcome("numpy", f"the generated source under NumPy: {type(e).__name__}: {str(e)[:numpy_chars]}")
    try:
        agree(np_got, got, "NumPy running the generated source vs srcjax", rtol)
    except AssertionError as e:
        return Outcome("wrong", str(e)[:chars])
    return None


def judged(fn: Any, args: Sequence[Any], got: Any, want: Any, agree: Agree, rtol: float, *,
           numpy_check: bool = True, numpy_rtol: float | None = None, numpy_agree: Agree | None = None,
           chars: int = 800, numpy_chars: int = 400) -> Outcome:
    """The verdict on srcjax's result ``got`` of ``fn(*args)``: "wrong" where ``agree`` finds it differs from jax's
    ``want`` ("srcjax vs jax", ``rtol``), then (``numpy_check``) :func:`source_run_agrees`'s verdict on the
    generated source run by NumPy (``numpy_agree``, default ``agree``, within ``numpy_rtol``, default ``rtol``),
    else "ok". ``chars``: how much of a difference a "wrong" keeps."""
    try:
        agree(got, want, "srcjax vs jax", rtol)
    except AssertionError as e:
        return Outcome("wrong", str(e)[:chars])
    if numpy_check:
        out = source_run_agrees(fn, args, got, numpy_agree or agree, rtol if numpy_rtol is None else numpy_rtol,
                                chars, numpy_chars)
        if out is not None:
            return out
    return Outcome("ok", "")


def main(run_case: Callable[..., Any], describe: Callable[[int], str], detail_chars: int) -> None:
    """``--start S --count N`` or ``--seeds a,b,c`` (``--no-numpy``: skip the NumPy run of the source)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--seeds", type=str, default="")
    ap.add_argument("--no-numpy", action="store_true")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else range(args.start, args.start + args.count)
    counts: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory() as d:
        for s in seeds:
            import srcjax

            srcjax.reuse.forget()
            out = run_case(s, pathlib.Path(d), numpy_check=not args.no_numpy)
            counts[out.status] += 1
            print(f"[{out.status}] {describe(s)}", flush=True)
            if out.status != "ok":
                print("    " + out.detail.replace("\n", "\n    ")[:detail_chars], flush=True)
    print(dict(counts))
