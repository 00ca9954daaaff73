"""Random small programs mixing aliases, views, in-place changes, containers, loops and branches on data,
compared with the user's function run by NumPy (srcjax/frontend/aliasing.py and its siblings).

Each program is run by NumPy (the reference), by ``srcjax.jit``, by the generated source run by NumPy
(``srcjax.numpy_function``) and by ``srcjax.vmap`` against a loop over the examples. srcjax must give
NumPy's numbers or refuse with a located ``TranspileError``; a different number is a failure (it prints the
program). jax cannot express in-place changes, so NumPy is the oracle. Default tier: 20 examples;
``SRCJAX_HYPOTHESIS=thorough``: 500 (``python -m tests.test_alias_random N SEED`` sweeps N programs without
stopping and counts agreements and refusals).
"""

from __future__ import annotations

import importlib.util
import random
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import srcjax

from .written import examples

_DIR = Path(tempfile.mkdtemp(prefix="srcjax_alias_random_"))
HEADER = "import numpy as np\n\n\ndef ident(v):\n    return v\n\n\n"


def write_program(r: random.Random, steps: int = 6) -> str:
    """``def f(x)`` (``x`` of shape (3,)) of ``steps`` random statements, returning the sum of what it made."""
    arrays = ["x"]
    lists: list[str] = []
    dicts: list[str] = []
    lines: list[str] = []
    fresh = iter(f"v{k}" for k in range(100))

    def a() -> str:
        return r.choice(arrays)

    def c() -> str:
        return r.choice(["0.5", "2.0", "-1.0", "3.0"])

    for _ in range(steps):
        kind = r.choice([0, 0, 0, 1, 1, 2, 3, 4, 5, 6])
        if kind == 0 or len(arrays) < 2:
            n = next(fresh)
            e = r.choice([f"x * {c()}", f"{a()} + {a()}", f"np.tanh({a()})", f"{a()}.copy()", f"{a()} * {c()}",
                          f"np.copy({a()})"]) if r.random() < 0.6 else \
                r.choice([a(), f"{a()}[:]", f"{a()}[::-1]", f"{a()}.reshape(3)", f"np.asarray({a()})",
                          f"ident({a()})", f"({a()} if {a()}[0] > 0 else {a()})",
                          f"({a()} if {a()}[1] > 0 else {a()} * {c()})", f"({a()} if x.shape[0] > 2 else {a()} * {c()})"])
            lines.append(f"{n} = {e}")
            arrays.append(n)
        elif kind == 1:
            t = a()
            lines.append(r.choice([f"{t} += {a()}", f"{t} *= {c()}", f"{t}[{r.randrange(3)}] = {c()}",
                                   f"{t}[{r.randrange(3)}] += {c()}", f"np.add({t}, {a()}, out={t})",
                                   f"np.multiply({t}, {c()}, out={t})"]))
        elif kind == 2:
            n = f"ys{len(lists)}"
            lines.append(r.choice([f"{n} = [{a()}, {a()}]", f"{n} = [{a()} + {c()}, np.tanh({a()})]", f"{n} = [{a()}] * 2", f"{n} = [{a()} * {c()}] * 2"]))
            lists.append(n)
        elif kind == 3 and lists:
            ys = r.choice(lists)
            k = r.randrange(2)
            lines.append(r.choice([f"{ys}[{k}] += {c()}", f"{ys}[{k}][{r.randrange(3)}] = {c()}",
                                   f"{ys}[{k}] = {ys}[{k}] * {c()}"]))
        elif kind == 4:
            t, s = a(), a()
            lines.append(f"for k in range(2):\n        {r.choice([f'{t} += {s} * 0.5', f'{t} = {t} + {s} * 0.5'])}")
        elif kind == 5:
            t = a()
            lines.append(f"if {a()}[0] > 0:\n        " + r.choice([f"{t} += {c()}", f"{t}[1] = {c()}",
                                                               f"{t} = {t} * {c()}"]))
        else:
            n = f"d{len(lines)}"
            item = a() if r.random() < 0.5 else f"{a()} * {c()}"
            lines.append(f"{n} = {{'a': {item}}}\n    " + r.choice([f"{n}['a'] += {c()}", f"{n}['a'] = {n}['a'] * {c()}"]))
            dicts.append(n)
    outs = arrays + [f"{ys}[{k}]" for ys in lists for k in range(2)] + [f"{d}['a']" for d in dicts]
    if r.random() < 0.5:  # (some values left unread: an alias read later or not)
        outs = r.sample(outs, r.randint(1, len(outs)))
    body = "".join(f"    {ln}\n" for ln in lines)
    return HEADER + "def f(x):\n" + body + "    return " + " + ".join(outs) + "\n"


def load(text: str) -> Any:
    path = _DIR / f"alias_{abs(hash(text)) % 10**12}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.f


XS = np.array([[0.7, -1.3, 2.1], [-0.4, 0.9, -1.7]])


def check(text: str) -> str:
    """``"ok"``, or ``"refused"`` (a located TranspileError); raises AssertionError with the program on a
    different number."""
    f = load(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = [np.asarray(f(x.copy())) for x in XS]
    try:
        got = np.asarray(srcjax.jit(f)(XS[0].copy()))
    except srcjax.TranspileError as e:
        assert ".py:" in str(e).splitlines()[0], f"{e}\n{text}"
        return "refused"
    np.testing.assert_allclose(got, want[0], rtol=1e-12, atol=1e-12, err_msg=f"jit\n{text}")
    by_numpy = np.asarray(srcjax.numpy_function(srcjax.jit(f))(XS[0].copy()))
    np.testing.assert_allclose(by_numpy, want[0], rtol=1e-12, atol=1e-12, err_msg=f"numpy_function\n{text}")
    try:
        batched = np.asarray(srcjax.vmap(f)(XS.copy()))
    except srcjax.TranspileError as e:
        assert ".py:" in str(e).splitlines()[0], f"{e}\n{text}"
        return "refused"
    np.testing.assert_allclose(batched, np.stack(want), rtol=1e-12, atol=1e-12, err_msg=f"vmap\n{text}")
    return "ok"


@examples(20, scale=25)
@given(st.integers(0, 2**32 - 1))
def test_random_alias_programs_agree_with_numpy_or_are_refused(seed: int) -> None:
    check(write_program(random.Random(seed)))


def test_the_generator_writes_each_kind_of_alias():
    texts = "".join(write_program(random.Random(s)) for s in range(200))
    for spelling in ("[:]", "[::-1]", ".reshape(3)", "np.asarray(", "ident(", " if ", "] * 2", "out=", "+=",
                     "for k in range(2)", "['a'] +="):
        assert spelling in texts, spelling


def sweep(write: Callable[[random.Random], str], check: Callable[[str, random.Random], str], count: int, seed: int,
          chars: int = 2000, progress: bool = False) -> None:  # pragma: no cover (a sweep by hand)
    """Programs ``seed .. seed + count - 1`` (``write(random.Random(s))``, then ``check(text, that rng)``): each
    failure printed with its seed, the verdicts counted (the random-program tests' command lines)."""
    counts: dict[str, int] = {}
    for s in range(seed, seed + count):
        r = random.Random(s)
        text = write(r)
        try:
            verdict = check(text, r)
        except AssertionError as e:
            verdict = "WRONG"
            print(f"seed {s}: {str(e)[:chars]}")
        except Exception as e:
            verdict = "crash"
            print(f"seed {s}: {type(e).__name__}: {str(e)[:300]}\n{text}")
        counts[verdict] = counts.get(verdict, 0) + 1
        if progress:
            print(s, verdict, flush=True)
    print(counts)


def main(count: int, seed: int) -> None:  # pragma: no cover (a sweep by hand)
    sweep(write_program, lambda text, _r: check(text), count, seed)


if __name__ == "__main__":  # pragma: no cover
    main(int(sys.argv[1]), int(sys.argv[2]))
