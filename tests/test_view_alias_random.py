"""Random small programs taking rows, columns, slices, transposes and reshapes of a 2-D array, holding them in
names, lists, dicts, unpackings and loops, and changing them or the array in place, compared with the user's
function run by NumPy (srcjax/frontend/aliasing.py, srcjax/frontend/item_views.py).

NumPy's ``m[0]`` of a 2-D ``m`` is a view of its row, and ``m[1:]``, ``m[:, j]``, ``m.T``, ``m.reshape(-1)``, ``for r
in m`` are views too: a change through one reaches the others. Each program is run by NumPy (the reference), by
``srcjax.jit``, by the generated source run by NumPy (``srcjax.numpy_function``), by ``srcjax.vmap`` against a loop
over the examples and by ``srcjax.grad`` against finite differences (programs without branches). srcjax must give
NumPy's numbers or refuse with a located ``TranspileError``; a different number is a failure (it prints the
program). Default tier: 20 examples; ``SRCJAX_HYPOTHESIS=thorough``: 500 (``python -m tests.test_view_alias_random
N SEED`` sweeps N programs without stopping and counts agreements and refusals).
"""

from __future__ import annotations

import random
import sys
import warnings

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import srcjax

from .test_alias_random import load, sweep
from .written import examples

HEADER = "import numpy as np\n\n\n"


def write_program(r: random.Random, steps: int = 6) -> str:
    """``def f(m)`` (``m`` of shape (2, 3)) of ``steps`` random statements, returning the sum of what it made."""
    mats = ["m"]  # names of (2, 3) arrays
    rows: list[str] = []  # names of (3,) values (views of a row or copies)
    other: list[str] = []  # names of other arrays (slices, transposes, reshapes)
    lists: list[str] = []
    dicts: list[str] = []
    lines: list[str] = []
    fresh = iter(range(100))
    loops = 0

    def mat() -> str:
        return r.choice(mats)

    def c() -> str:
        return r.choice(["0.5", "2.0", "-1.0", "3.0"])

    def i() -> int:
        return r.randrange(2)

    def j() -> int:
        return r.randrange(3)

    for _ in range(steps):
        kind = r.choice([0, 0, 1, 1, 2, 3, 3, 4, 5, 6, 7])
        if kind == 0:
            n = f"a{next(fresh)}"
            lines.append(f"{n} = " + r.choice([f"{mat()} * {c()}", f"np.tanh({mat()})", f"{mat()}.copy()",
                                               f"{mat()} + {mat()}"]))
            mats.append(n)
        elif kind == 1:
            n = f"r{next(fresh)}"
            e = r.choice([f"{mat()}[{i()}]", f"{mat()}[{i()}, :]", f"{mat()}[{i()}].copy()", f"{mat()}[{i()}] * {c()}"])
            lines.append(f"{n} = {e}")
            rows.append(n)
        elif kind == 2:
            n = f"s{next(fresh)}"
            lines.append(f"{n} = " + r.choice([f"{mat()}[:, {j()}]", f"{mat()}[1:]", f"{mat()}.T",
                                               f"{mat()}.reshape(-1)", f"{mat()}[..., {j()}]"]))
            other.append(n)
        elif kind == 3:
            n = f"ys{next(fresh)}"
            a = mat()
            lines.append(r.choice([f"{n} = [{a}[0], {a}[1]]", f"{n} = [{a}[i] for i in range(2)]",
                                   f"{n} = []\n    {n}.append({a}[{i()}])\n    {n}.append({a}[{i()}])",
                                   f"{n} = [{a}[0].copy(), {a}[1] * {c()}]"]))
            lists.append(n)
        elif kind == 4:
            n = f"d{next(fresh)}"
            a = mat()
            lines.append(f"{n} = {{'p': {a}[{i()}], 'q': {a}[{i()}]}}")
            dicts.append(n)
        elif kind == 5:
            a = mat()
            p, q = f"u{next(fresh)}", f"u{next(fresh)}"
            lines.append(f"{p}, {q} = {a}[0], {a}[1]")
            rows += [p, q]
        elif kind == 6 and loops < 1:
            loops += 1
            a = mat()
            lines.append(r.choice([f"for row in {a}:\n        row += {c()}", f"for k in range(2):\n        {a}[k] += {c()}",
                                   f"for k in range(2):\n        {a}[k, {j()}] = {a}[k, 0] * {c()}"]))
        else:
            choices = [f"{mat()} += {c()}", f"{mat()}[{i()}] = {c()}", f"{mat()}[{i()}, {j()}] = {c()}",
                       f"{mat()} *= {c()}"]
            if rows:
                w = r.choice(rows)
                choices += [f"{w} += {c()}", f"{w}[{j()}] = {c()}", f"{w} *= {c()}"]
            if other:
                w = r.choice(other)
                choices += [f"{w} += {c()}", f"{w} *= {c()}"]
            if lists:
                ys = r.choice(lists)
                choices += [f"{ys}[{i()}] += {c()}", f"{ys}[{i()}][{j()}] = {c()}", f"{ys}[{i()}] = {ys}[{i()}] * {c()}"]
            if dicts:
                d = r.choice(dicts)
                choices += [f"{d}['p'] += {c()}", f"{d}['q'][{j()}] = {c()}", f"{d}['p'] = {d}['q'] * {c()}"]
            s = r.choice(choices)
            if r.random() < 0.2:
                s = f"if {mat()}[0, 0] > 0:\n        {s}"
            lines.append(s)
    outs = mats + rows + other + [f"{ys}[{k}]" for ys in lists for k in range(2)] + \
        [f"{d}['{k}']" for d in dicts for k in "pq"]
    if r.random() < 0.5:  # (some values left unread: an alias read later or not)
        outs = r.sample(outs, r.randint(1, len(outs)))
    body = "".join(f"    {ln}\n" for ln in lines)
    return HEADER + "def f(m):\n" + body + "    return " + " + ".join(f"np.sum({o})" for o in outs) + "\n"


MS = np.array([[[0.7, -1.3, 2.1], [-0.4, 0.9, -1.7]], [[-0.6, 1.1, 0.3], [1.2, -0.8, 0.5]]])


def _refused(e: srcjax.TranspileError, text: str) -> str:
    assert ".py:" in str(e).splitlines()[0], f"{e}\n{text}"
    return "refused"


def check(text: str) -> str:
    """``"ok"``, or ``"refused"`` (a located TranspileError); raises AssertionError with the program on a
    different number."""
    f = load(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = [float(f(m.copy())) for m in MS]
    try:
        got = float(np.asarray(srcjax.jit(f)(MS[0].copy())))
    except srcjax.TranspileError as e:
        return _refused(e, text)
    np.testing.assert_allclose(got, want[0], rtol=1e-12, atol=1e-12, err_msg=f"jit\n{text}")
    by_numpy = float(np.asarray(srcjax.numpy_function(srcjax.jit(f))(MS[0].copy())))
    np.testing.assert_allclose(by_numpy, want[0], rtol=1e-12, atol=1e-12, err_msg=f"numpy_function\n{text}")
    try:
        batched = np.asarray(srcjax.vmap(f)(MS.copy()))
    except srcjax.TranspileError as e:
        return _refused(e, text)
    np.testing.assert_allclose(batched, want, rtol=1e-12, atol=1e-12, err_msg=f"vmap\n{text}")
    if " if " in text or "if " in text.split("def f", 1)[1]:
        return "ok"  # (a branch on data: finite differences may cross it)
    try:
        g = np.asarray(srcjax.grad(f)(MS[0].copy()))
    except srcjax.TranspileError as e:
        return _refused(e, text)
    eps = 1e-6
    fd = np.zeros((2, 3))
    for idx in np.ndindex(2, 3):
        e_ = np.zeros((2, 3))
        e_[idx] = eps
        fd[idx] = (f(MS[0] + e_) - f(MS[0] - e_)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6, err_msg=f"grad\n{text}")
    return "ok"


@examples(20, scale=25)
@given(st.integers(0, 2**32 - 1))
def test_random_view_programs_agree_with_numpy_or_are_refused(seed: int) -> None:
    check(write_program(random.Random(seed)))


def test_the_generator_writes_each_kind_of_view():
    texts = "".join(write_program(random.Random(s)) for s in range(200))
    for spelling in ("[0], ", "[:, ", "[1:]", ".T", ".reshape(-1)", "for row in", ".append(", "for i in range(2)]",
                     "{'p': ", "'] += ", "][0] = ", "if "):
        assert spelling in texts, spelling


def main(count: int, seed: int) -> None:  # pragma: no cover (a sweep by hand)
    sweep(write_program, lambda text, _r: check(text), count, seed)


if __name__ == "__main__":  # pragma: no cover
    main(int(sys.argv[1]), int(sys.argv[2]))
