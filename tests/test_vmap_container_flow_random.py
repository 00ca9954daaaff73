"""Random small programs carrying dicts, lists, tuples and NamedTuples through control flow on batched data, under
``srcjax.vmap`` and its compositions, compared with a loop over the examples run by NumPy.

The vmap writer repeats an unbatched value along the batch where it meets a batched one (``batch_broadcast``,
``batch_broadcast_items`` for containers): a container handed to the array-only form comes back as it was, and its
leaves are then read as mapped, a silent wrong answer. These programs join containers of batched and unbatched
leaves in an ``if`` on batched data, carry them through ``for``, ``while`` on data, ``lax.fori_loop`` and
``lax.cond``, pass them to helpers returning containers and ``tree_map``, store them into containers and return
them (a container output, ``out_axes=0``). Each is run by ``srcjax.vmap`` (the unbatched ``p`` with
``in_axes=(0, None)`` or batched), ``srcjax.jit(srcjax.vmap(...))``, the generated source run by NumPy, and
``vmap(grad)`` / ``jacrev(vmap)`` of the leaves' sum against finite differences of the loop. srcjax must agree or
refuse with a located ``TranspileError``. Default tier: 1 example (each compiles a dozen programs), without
``jacrev``; ``SRCJAX_HYPOTHESIS=thorough``: 500
(``python -m tests.test_vmap_container_flow_random N SEED`` sweeps N programs without stopping).
"""

from __future__ import annotations

import random
import sys
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import srcjax
from srcjax.adjoint import UNSET

from .test_alias_random import load, sweep
from .written import THOROUGH, examples

HEADER = '''import numpy as np
import srcjax
from typing import NamedTuple


class Pair(NamedTuple):
    u: Any
    v: Any


def swap(d):
    return {"u": d["v"], "v": d["u"] * 0.5}


def pack(a, b):
    return [a, b * 2.0]


'''.replace("from typing import NamedTuple", "from typing import Any, NamedTuple")


def write_program(r: random.Random, steps: int = 4) -> str:
    """``def f(x, p)`` (``x`` of shape (3,), ``p`` a dict of two (3,) arrays) carrying ``d``, a dict ``{"u", "v"}``,
    through ``steps`` random statements, returning ``d``, a container holding it, or the sum of its leaves."""
    lines = [r.choice(['d = {"u": x * 1.5, "v": p["a"]}', 'd = {"u": p["b"], "v": p["a"] * 2.0}',
                       'd = {"u": x, "v": x * p["b"]}'])]

    def c() -> str:
        return r.choice(["0.5", "2.0", "-1.0", "1.5"])

    def step() -> str:
        return r.choice([f'd = {{"u": d["v"] * {c()}, "v": d["u"]}}', f'd = {{"u": d["u"] + d["v"], "v": d["v"] * {c()}}}',
                         'd = swap(d)', f'd = {{"u": d["u"] * {c()}, "v": p["b"]}}',
                         f'd = srcjax.tree_util.tree_map(lambda v: v * {c()}, d)',
                         'q = Pair(d["u"], d["v"] + 1.0)\n@Id = {"u": q.v, "v": q.u}',
                         'ls = pack(d["u"], d["v"])\n@Id = {"u": ls[1], "v": ls[0]}',
                         't = (d["v"], d["u"])\n@Id = {"u": t[0], "v": t[1] * 0.5}',
                         'e = {"inner": d, "w": x}\n@Id = {"u": e["inner"]["v"] + e["w"], "v": e["inner"]["u"]}'])

    for _ in range(steps):
        kind = r.choice(["if", "if", "ifelse", "for", "while", "fori", "cond", "plain"])
        if kind == "if":
            lines.append(f"if x.sum() > {r.choice(['0.0', '1.0', '-1.0'])}:\n        " + step().replace("@I", "        "))
        elif kind == "ifelse":
            lines.append("if x[0] > 0:\n        " + step().replace("@I", "        ") + "\n    else:\n        "
                         + step().replace("@I", "        "))
        elif kind == "for":
            lines.append("for k in range(2):\n        " + step().replace("@I", "        "))
        elif kind == "while":
            lines.append("i = 0\n    while x.sum() + i < 2.0 and i < 3:\n        " + step().replace("@I", "        ")
                         + "\n        i += 1")
        elif kind == "fori":
            lines.append(f'd = srcjax.lax.fori_loop(0, 2, lambda k, c: {{"u": c["v"] * {c()}, "v": c["u"]}}, d)')
        elif kind == "cond":
            lines.append('d = srcjax.lax.cond(x[1] > 0, lambda c: {"u": c["v"], "v": c["u"] * 2.0}, lambda c: c, d)')
        else:
            lines.append(step().replace("@I", "    "))
    ret = r.choice(["d", 'np.sum(d["u"]) + np.sum(d["v"])', '(d["u"], [d["v"], x])', '{"out": d, "x": x}',
                    'Pair(d["u"], d["v"])'])
    body = "".join(f"    {ln}\n" for ln in lines)
    return HEADER + "def f(x, p):\n" + body + f"    return {ret}\n"


X = np.array([[0.7, -1.3, 2.1], [-0.4, 0.9, -1.7], [1.2, 0.4, 0.8]])
P = {"a": np.array([0.3, -0.8, 1.1]), "b": np.array([1.4, 0.2, -0.6])}
PB = {"a": np.array([[0.3, -0.8, 1.1], [0.5, 0.1, -0.2], [-1.0, 0.6, 0.9]]),
      "b": np.array([[1.4, 0.2, -0.6], [0.7, -0.3, 0.2], [0.1, 0.8, -1.2]])}


def _leaves(v: Any) -> list[np.ndarray]:
    if isinstance(v, dict):
        return [a for k in sorted(v) for a in _leaves(v[k])]
    if isinstance(v, (list, tuple)):
        return [a for e in v for a in _leaves(e)]
    return [np.asarray(v, dtype=float)]


def _total(f: Any) -> Any:
    def total(x: Any, p: Any) -> Any:
        out = f(x, p)
        return sum(np.sum(v) for v in srcjax.tree_util.tree_leaves(out))
    return total


def _same(got: Any, want: list[Any], what: str, text: str) -> None:
    g = _leaves(got)
    w = [np.stack(z) for z in zip(*[_leaves(o) for o in want])]
    assert len(g) == len(w), f"{what}: {len(g)} leaves, NumPy's {len(w)}\n{text}"
    for a, b in zip(g, w):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=f"{what}\n{text}")


def _refused(e: srcjax.TranspileError, text: str) -> str:
    assert ".py:" in str(e).splitlines()[0], f"{e}\n{text}"
    return "refused"


def check(text: str, batched_p: bool, jacobian: bool = True) -> str:
    """``"ok"``, ``"refused"`` (vmap refused, with a located TranspileError) or ``"derivatives refused"`` (vmap
    right, vmap(grad) or jacrev(vmap) refused); raises AssertionError with the program on a different number."""
    f = load(text)
    p, axes = (PB, (0, 0)) if batched_p else (P, (0, None))
    per = [(X[b], {k: v[b] for k, v in p.items()} if batched_p else p) for b in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = [f(x.copy(), q) for x, q in per]
    results = {}
    try:
        results["vmap"] = srcjax.vmap(f, in_axes=axes)(X, p)
    except srcjax.TranspileError as e:
        return _refused(e, text)
    results["jit(vmap)"] = srcjax.jit(srcjax.vmap(f, in_axes=axes))(X, p)
    results["numpy(vmap)"] = srcjax.numpy_function(srcjax.vmap(f, in_axes=axes))(X, p)
    for what, got in results.items():
        _same(got, want, what, text)
    total = _total(f)
    eps = 1e-6
    fd = np.stack([[(total(x + eps * e, q) - total(x - eps * e, q)) / (2 * eps) for e in np.eye(3)] for x, q in per])
    verdict = "ok"
    try:
        g = np.asarray(srcjax.vmap(srcjax.grad(total), in_axes=axes)(X, p))
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6, err_msg=f"vmap(grad)\n{text}")
    except srcjax.TranspileError as e:
        verdict = _refused(e, text) and "derivatives refused"
    if not jacobian:
        return verdict
    try:
        jac = np.asarray(srcjax.jacrev(srcjax.vmap(total, in_axes=axes))(X, p))
        np.testing.assert_allclose(jac, np.einsum("ab,bk->abk", np.eye(3), fd), rtol=1e-5, atol=1e-6,
                                   err_msg=f"jacrev(vmap)\n{text}")
    except srcjax.TranspileError as e:
        verdict = _refused(e, text) and "derivatives refused"
    return verdict


@examples(1, scale=500)
@given(st.integers(0, 2**32 - 1))
def test_random_container_flow_under_vmap_agrees_with_a_loop_or_is_refused(seed: int) -> None:
    r = random.Random(seed)
    check(write_program(r), r.random() < 0.5, jacobian=THOROUGH)


_BOUND_IN_IFS = {
    "a NamedTuple in two ifs": "    u = x * 1.5\n    if x.sum() > 1.0:\n        q = Pair(u, u + 1.0)\n        u = q.v\n"
                               "    if x[0] > 0:\n        q = Pair(u, u + 1.0)\n        u = q.v\n    return u\n",
    "a dict in three ifs": "    u = x * 1.5\n    if x.sum() > 1.0:\n        q = {'a': u, 'b': u * 2.0}\n        u = q['b']\n"
                           "    if x[0] > 0:\n        q = {'a': u * u, 'b': u + 1.0}\n        u = q['a']\n"
                           "    if x[1] > 0:\n        q = {'a': np.sin(u), 'b': u}\n        u = q['a'] + q['b']\n    return u\n",
}


@pytest.mark.parametrize("name", sorted(_BOUND_IN_IFS))
def test_a_container_bound_only_in_ifs_on_batched_data_under_vmap_of_grad(name: str) -> None:
    """Seed 59 (thorough tier): ``q = Pair(...)`` in two ``if``s on batched data, under ``vmap(grad)`` and
    ``jacrev(vmap)``. Reverse mode saves ``q``, ``UNSET`` before the first ``if``: the vmap writer, which takes a
    value only one branch binds from that branch for every example, missed it there because a later ``if`` binds
    ``q`` again, and repeated ``UNSET``'s fields along the batch with ``tree_set`` (once an out-of-memory hang, then
    "UNSET (a value no path computed) is not iterable", located at the user's line). Now runs, against finite
    differences of a loop over the examples run by NumPy; vmap, jit(vmap) and NumPy running the generated source
    against that loop."""
    text = HEADER + "def f(x, p):\n" + _BOUND_IN_IFS[name]
    assert check(text, name.startswith("a NamedTuple"), jacobian=True) == "ok"
    with pytest.raises(TypeError, match="not iterable"):
        list(UNSET)


def test_the_generator_writes_each_kind_of_flow():
    texts = "".join(write_program(random.Random(s)) for s in range(200))
    for spelling in ("if x.sum()", "else:", "for k in range(2)", "while x.sum()", "fori_loop", "lax.cond", "swap(d)",
                     "tree_map", "Pair(", "pack(", '"inner": d', "return d\n", "return {", "return ("):
        assert spelling in texts, spelling


def main(count: int, seed: int) -> None:  # pragma: no cover (a sweep by hand)
    sweep(write_program, lambda text, r: check(text, r.random() < 0.5), count, seed, chars=2500, progress=True)


if __name__ == "__main__":  # pragma: no cover
    main(int(sys.argv[1]), int(sys.argv[2]))
