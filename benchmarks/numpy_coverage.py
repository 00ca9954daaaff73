"""How much small realistic NumPy code srcjax compiles and differentiates, side by side with jax.jit.

Run (from the repository root, in the venv that has jax, the oracle)::

    .venv/bin/python benchmarks/numpy_coverage.py            # the table and the totals
    .venv/bin/python benchmarks/numpy_coverage.py --only fft,linalg --no-jax

The programs are in ``benchmarks/coverage_programs.py`` and ``coverage_programs_more.py`` (one or
two NumPy features each, grouped by category; the registry is ``coverage_corpus.py``). For each one:

* **srcjax**: ``srcjax.compile(f)(*args)`` against ``f(*args)`` run by NumPy (within the program's
  tolerance); a refusal is checked to be a ``srcjax.TranspileError`` located in the program's own
  source (file:line:col) with a hint that names what to write instead. ``ok`` / ``refused``
  (located, hint) / ``UNLOCATED`` (a refusal without place or such a hint) / ``INTERNAL`` (any
  other exception) / ``WRONG`` (a result that differs from NumPy).
* **grad**: where the result is real floating point, ``srcjax.vjp`` with a random cotangent against
  central finite differences (float64) of the program run by NumPy, for every float64 array
  argument (or the program's ``diff``); ``-`` where there is nothing to differentiate.
* **jax**: the same source text run with ``np`` bound to ``jax.numpy`` (and ``lax`` to
  ``jax.lax``) under ``jax.jit`` (Python ints and strings static), checked against NumPy, and its
  ``jax.vjp`` against the same finite differences.

Totals: srcjax compiled % (of all programs), differentiated % (of the programs with something to
differentiate), supported % (compiled, and differentiated where there is something to
differentiate), and the same for jax.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import textwrap
import time
import traceback
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # coverage_programs, when imported from the tests

import coverage_programs  # noqa: E402, F401  (registers its programs)
import coverage_programs_more  # noqa: E402, F401
from coverage_corpus import PROGRAMS, Program  # noqa: E402

import srcjax  # noqa: E402


def source_file(p: Program) -> str:
    return str(Path(sys.modules[p.fn.__module__].__file__ or "").resolve())
GENERIC_HINT = "see the supported NumPy subset in docs/numpy.md"  # (names no alternative: not good enough)


@dataclass
class Outcome:
    """``status`` is ok / refused / UNLOCATED / INTERNAL / WRONG / '-' (nothing to do)."""

    status: str
    detail: str = ""


@dataclass
class Report:
    program: Program
    compiled: Outcome
    grad: Outcome
    jax: Outcome = field(default_factory=lambda: Outcome("-"))
    jax_grad: Outcome = field(default_factory=lambda: Outcome("-"))


def arguments(p: Program) -> tuple[Any, ...]:
    return p.args(np.random.default_rng(zlib.crc32(p.name.encode())))


def leaves(x: Any) -> list[Any]:
    if isinstance(x, tuple | list):
        return [leaf for item in x for leaf in leaves(item)]
    return [x]


def rebuild(like: Any, flat: list[Any]) -> Any:
    """``flat`` (the leaves of ``like`` in order) with ``like``'s tuple/list structure."""
    it = iter(flat)

    def go(x: Any) -> Any:
        if isinstance(x, tuple | list):
            return type(x)(go(item) for item in x)
        return next(it)

    return go(like)


def matches(got: Any, expected: Any, p: Program) -> str:
    """'' when ``got`` agrees with NumPy's ``expected``, else why not."""
    g, e = leaves(got), leaves(expected)
    if len(g) != len(e):
        return f"{len(g)} outputs, NumPy has {len(e)}"
    for a, b in zip(g, e):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype == object:
            return f"an object array came back: {a!r}"[:300]
        if a.shape != b.shape:
            return f"shape {a.shape}, NumPy's {b.shape}"
        try:
            np.testing.assert_allclose(a, b, rtol=p.rtol, atol=p.atol, equal_nan=True)
        except AssertionError as err:
            return " ".join(str(err).split())[:300]
    return ""


def refusal(e: BaseException, p: Program) -> Outcome:
    """A refusal is fine when it is a TranspileError located in the program's source, with a hint."""
    if isinstance(e, srcjax.TranspileError):
        span = e.span
        located = span is not None and str(Path(span.filename).resolve()) == source_file(p)
        first = e.message.splitlines()[0][:160]
        if located and e.hint and e.hint != GENERIC_HINT:
            return Outcome("refused", first)
        return Outcome("UNLOCATED", f"{type(e).__name__}: {first} (span {span}, hint {e.hint!r})")
    return Outcome("INTERNAL", "".join(traceback.format_exception_only(e)).strip()[:300])


def diff_positions(p: Program, args: tuple[Any, ...], out: Any) -> list[int]:
    if not all(np.issubdtype(np.asarray(v).dtype, np.floating) for v in leaves(out)):
        return []
    if p.diff is not None:
        return list(p.diff)
    return [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype == np.float64]


def cotangent(p: Program, out: Any) -> Any:
    rng = np.random.default_rng(zlib.crc32(p.name.encode()) + 1)
    return rebuild(out, [rng.standard_normal(np.shape(v)) for v in leaves(out)])


def finite_differences(p: Program, args: tuple[Any, ...], ct: Any, i: int, eps: float = 1e-6) -> np.ndarray:
    """d <ct, f(*args)> / d args[i] by central differences of the program run by NumPy."""
    def loss(x: np.ndarray) -> float:
        a = list(args)
        a[i] = x
        return float(sum(np.sum(c * np.asarray(v)) for c, v in zip(leaves(ct), leaves(p.fn(*a)))))

    x = np.array(args[i], dtype=np.float64)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        g[idx] = (loss(xp) - loss(xm)) / (2 * eps)
    return g


def grads_match(grads: dict[int, Any], p: Program, args: tuple[Any, ...], ct: Any) -> str:
    for i, g in grads.items():
        fd = finite_differences(p, args, ct, i)
        got = np.zeros_like(fd) if g is None else np.asarray(g)
        if got.dtype == object or got.shape != fd.shape:
            return f"argument {i}: not an array of its shape: {got!r}"[:300]
        try:
            np.testing.assert_allclose(got, fd, rtol=1e-4, atol=1e-5 * (1 + np.abs(fd).max()))
        except AssertionError as err:
            return f"argument {i}: " + " ".join(str(err).split())[:300]
    return ""


def check_srcjax(p: Program) -> tuple[Outcome, Outcome]:
    """(the compiled result vs NumPy, the VJP vs finite differences)."""
    args = arguments(p)
    expected = p.fn(*args)
    try:
        got = srcjax.compile(p.fn)(*args)
    except Exception as e:  # noqa: BLE001 (every outcome is reported)
        return refusal(e, p), Outcome("-")
    why = matches(got, expected, p)
    compiled = Outcome("WRONG", why) if why else Outcome("ok")
    positions = diff_positions(p, args, expected)
    if not positions:
        return compiled, Outcome("-")
    ct = cotangent(p, expected)
    try:
        _, pullback = srcjax.vjp(p.fn, *args)
        cts = pullback(ct)
    except Exception as e:  # noqa: BLE001
        return compiled, refusal(e, p)
    why = grads_match({i: cts[i] for i in positions}, p, args, ct)
    return compiled, Outcome("WRONG", why) if why else Outcome("ok")


def jax_function(p: Program) -> Callable[..., Any]:
    """The program's own source text, executed with ``np`` bound to ``jax.numpy``."""
    import jax
    import jax.numpy as jnp

    lines = textwrap.dedent(inspect.getsource(p.fn)).splitlines()
    start = next(k for k, ln in enumerate(lines) if ln.startswith("def "))
    namespace = dict(vars(sys.modules[p.fn.__module__]), np=jnp, lax=jax.lax)
    exec(compile("\n".join(lines[start:]) + "\n", source_file(p), "exec"), namespace)  # noqa: S102
    return namespace[p.name]


def check_jax(p: Program) -> tuple[Outcome, Outcome]:
    import jax

    args = arguments(p)
    expected = p.fn(*args)
    static = tuple(i for i, a in enumerate(args) if isinstance(a, int | str | tuple))
    try:
        jf = jax_function(p)
        got = jax.jit(jf, static_argnums=static)(*args)
    except Exception as e:  # noqa: BLE001
        return Outcome("fails", " ".join(f"{type(e).__name__}: {e}".split())[:160]), Outcome("-")
    why = matches(got, expected, p)
    ran = Outcome("WRONG", why) if why else Outcome("ok")
    positions = diff_positions(p, args, expected)
    if not positions:
        return ran, Outcome("-")
    ct = cotangent(p, expected)

    def at(*xs: Any) -> Any:
        full = list(args)
        for i, x in zip(positions, xs):
            full[i] = x
        return jf(*full)

    try:
        out, pullback = jax.vjp(jax.jit(at), *[args[i] for i in positions])
        cts = pullback(rebuild(out, leaves(ct)))
    except Exception as e:  # noqa: BLE001
        return ran, Outcome("fails", " ".join(f"{type(e).__name__}: {e}".split())[:160])
    why = grads_match(dict(zip(positions, cts)), p, args, ct)
    return ran, Outcome("WRONG", why) if why else Outcome("ok")


def percent(n: int, d: int) -> str:
    return f"{n}/{d} = {100 * n / d:.0f}%" if d else "0/0"


def totals(reports: list[Report], with_jax: bool) -> list[str]:
    n = len(reports)
    differentiable = [r for r in reports if r.grad.status != "-" or (r.compiled.status != "ok"
                                                                     and r.program.diff != ())]
    lines = [
        f"programs: {n}",
        f"srcjax compiled (matches NumPy):        {percent(sum(r.compiled.status == 'ok' for r in reports), n)}",
        f"srcjax differentiated (matches FD):     "
        f"{percent(sum(r.grad.status == 'ok' for r in differentiable), len(differentiable))}",
        f"srcjax supported (both where they apply): "
        f"{percent(sum(r.compiled.status == 'ok' and r.grad.status in ('ok', '-') for r in reports), n)}",
        f"srcjax refusals located with a hint:    "
        f"{percent(sum(r.compiled.status == 'refused' for r in reports) + sum(r.grad.status == 'refused' for r in reports), sum(r.compiled.status in ('refused', 'UNLOCATED', 'INTERNAL') for r in reports) + sum(r.grad.status in ('refused', 'UNLOCATED', 'INTERNAL') for r in reports))}",  # noqa: E501
        f"srcjax wrong results (value or grad):   "
        f"{sum(r.compiled.status == 'WRONG' or r.grad.status == 'WRONG' for r in reports)}",
    ]
    if with_jax:
        jdiff = [r for r in reports if r.jax_grad.status != "-" or (r.jax.status != "ok" and r.program.diff != ())]
        lines += [
            f"jax.jit ran and matched NumPy:          {percent(sum(r.jax.status == 'ok' for r in reports), n)}",
            f"jax differentiated (matches FD):        "
            f"{percent(sum(r.jax_grad.status == 'ok' for r in jdiff), len(jdiff))}",
            f"jax supported (both where they apply):  "
            f"{percent(sum(r.jax.status == 'ok' and r.jax_grad.status in ('ok', '-') for r in reports), n)}",
        ]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated categories or program names")
    ap.add_argument("--no-jax", action="store_true", help="skip the jax column")
    ap.add_argument("--details", action="store_true", help="print every refusal's and failure's message")
    a = ap.parse_args(argv)
    if not a.no_jax:
        import jax

        jax.config.update("jax_enable_x64", True)
    chosen = set(filter(None, a.only.split(",")))
    programs = [p for p in PROGRAMS if not chosen or p.category in chosen or p.name in chosen]
    reports = []
    start = time.time()
    print(f"{'program':30s} {'category':10s} {'srcjax':10s} {'grad':10s} {'jax':8s} {'jax grad':8s}")
    for p in programs:
        compiled, grad = check_srcjax(p)
        r = Report(p, compiled, grad)
        if not a.no_jax:
            r.jax, r.jax_grad = check_jax(p)
        reports.append(r)
        print(f"{p.name:30s} {p.category:10s} {compiled.status:10s} {grad.status:10s} "
              f"{r.jax.status:8s} {r.jax_grad.status:8s}", flush=True)
        if a.details or compiled.status in ("WRONG", "INTERNAL", "UNLOCATED") or grad.status in (
                "WRONG", "INTERNAL", "UNLOCATED"):
            for what, o in (("srcjax", compiled), ("grad", grad), ("jax", r.jax), ("jax grad", r.jax_grad)):
                if o.detail and (a.details or what in ("srcjax", "grad")):
                    print(f"    {what}: {o.detail}")
    print()
    print("\n".join(totals(reports, not a.no_jax)))
    print(f"({time.time() - start:.0f} s)")
    bad = [r for r in reports if {r.compiled.status, r.grad.status} & {"WRONG", "INTERNAL", "UNLOCATED"}]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
