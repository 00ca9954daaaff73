"""Reverse mode through a ``for`` over a Python sequence of static length inside an ``if`` on array data
(srcjax/transforms/branch_loops.py).

It was refused at the user's ``if`` ("the loop's tape would be written in a branch (jax.grad refuses a while_loop
too)", a hint untrue for a ``for``); the loop now runs outside the ``if``, each step under the ``if``'s test as a
flag, as a loop over a range: tuple, list and dict displays, names bound to them before the ``if`` or (static) in
it, ``zip``/``enumerate``/``reversed`` of those, ``.items()``, a module's constant, nested loops, ``break`` and
``continue`` on static values, an ``if`` on data inside the loop, ``elif`` chains; a list or tuple display of
arrays the branch computes is walked by position. Oracles: jax running the same source with ``jax.numpy`` as
``np`` (jax.grad runs the ``if`` on the concrete value and unrolls the loop), central finite differences, and the
generated source run by NumPy. The random programs at the end draw loop kinds, which branch holds the loop,
loop-carried names and containers read (default tier: a few; the thorough tier: many).
"""

from __future__ import annotations

import random
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, note
from hypothesis import strategies as st

import srcjax

from . import branch_sequence_programs as bs
from .written import examples, numpy_and_jax

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax.config.update("jax_enable_x64", True)

_TWINS: dict[str, Any] = {}
exec(compile(Path(bs.__file__).read_text().replace("import numpy as np", "import jax.numpy as np"),
             bs.__file__, "exec"), _TWINS)

# both paths of every `if` (and of the elif chain: sums 0.8, -0.5, 2.11, and -0.27 with a max above 0.2), away from
# the tests' edges
XS = np.array([[0.61, -0.23, 0.42], [-0.52, 0.13, -0.11], [0.47, 0.91, 0.73], [-0.48, 0.33, -0.12]])


def _fd(f: Any, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


@pytest.mark.parametrize("name", bs.RUNS)
def test_grad_matches_jax_and_finite_differences(name: str) -> None:
    f, twin = getattr(bs, name), _TWINS[name]
    g = srcjax.grad(f)
    for x in XS:
        got = np.asarray(g(x))
        np.testing.assert_allclose(got, np.asarray(jax.grad(twin)(jnp.asarray(x))), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got, _fd(f, x), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(srcjax.numpy_function(g)(x)), got, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["tuple_display", "enumerate_zip", "if_on_data_in_the_loop", "elif_chain",
                                  "display_made_in_the_branch"])
def test_every_transformation_matches_jax(name: str) -> None:
    """value_and_grad, vjp, jacrev, hessian, jvp, jacfwd, and vmap(grad) with examples on both paths."""
    f, twin = getattr(bs, name), _TWINS[name]
    for x in XS[:3]:
        jx = jnp.asarray(x)
        value, grad = srcjax.value_and_grad(f)(x)
        np.testing.assert_allclose(np.asarray(value), f(x), rtol=1e-12)
        want = np.asarray(jax.grad(twin)(jx))
        np.testing.assert_allclose(np.asarray(grad), want, rtol=1e-10, atol=1e-12)
        out, back = srcjax.vjp(f, x)
        np.testing.assert_allclose(np.asarray(back(np.float64(0.7))[0]), 0.7 * want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(srcjax.jacrev(f)(x)), want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(srcjax.jacfwd(f)(x)), want, rtol=1e-10, atol=1e-12)
        t = np.cos(np.arange(3.0) + x)
        _, tangent = srcjax.jvp(f, (x,), (t,))
        np.testing.assert_allclose(np.asarray(tangent), want @ t, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(srcjax.hessian(f)(x)), np.asarray(jax.hessian(twin)(jx)),
                                   rtol=1e-9, atol=1e-10)
    got = np.asarray(srcjax.vmap(srcjax.grad(f))(XS))
    np.testing.assert_allclose(got, np.stack([np.asarray(jax.grad(twin)(jnp.asarray(x))) for x in XS]),
                               rtol=1e-10, atol=1e-12)


def test_the_generated_gradient_runs_the_tuples_loop_outside_the_if() -> None:
    """The issue's program: the loop over the tuple outside, a ``cond`` on the test in each step and in each step of
    the adjoint's loop; one tape push and pop; no refusal."""
    text = srcjax.source(srcjax.grad(bs.tuple_display))
    assert "    loop_items = (1., 2., 3.)\n    for c in loop_items:\n" in text, text
    assert "srcjax.lax.cond(gt, if_true, if_false, y)" in text and "for c in reversed(loop_items):" in text, text
    assert text.count("_tape.append(") == 1 and text.count("_tape.pop()") == 1, text


def test_a_display_the_branch_computes_is_walked_by_position() -> None:
    text = srcjax.source(srcjax.grad(bs.display_made_in_the_branch))
    assert "for i_1 in loop_items:\n        i = i_1\n        c = SCALES[i_1]\n" in text, text
    assert "w = ws[i_1]" in text and "zip(" not in text and "enumerate(" not in text, text


@pytest.mark.parametrize(("name", "walks", "display"), [("comprehension_made_in_the_branch", "ws", True),
                                                         ("dict_made_in_the_branch", "d", False)])
def test_a_loop_over_a_sequence_the_branch_computes_is_refused_with_a_true_hint(name: str, walks: str,
                                                                                display: bool) -> None:
    """Still refused (jax runs them): the hint was jax.grad's refusal of a while_loop, for a ``for``; now the
    reason (the loop walks a sequence the branch computes) and what runs instead; forward mode runs."""
    f = getattr(bs, name)
    with pytest.raises(srcjax.TranspileError, match=f"the `for` walks `{walks}`, which the branch computes") as e:
        srcjax.grad(f)(XS[0])
    text = str(e.value)
    assert "branch_sequence_programs.py:" in text.splitlines()[0] and "if np.sum(x) > 0:" in text, text
    assert "while_loop" not in text and f"compute `{walks}` before the `if`" in text, text
    assert ("list or tuple display" in text) == display, text
    for x in XS[:2]:
        np.testing.assert_allclose(np.asarray(srcjax.jacfwd(f)(x)), _fd(f, x), rtol=1e-5, atol=1e-6)


def _fixed_display(x: Any) -> Any:
    # the refusal's hint followed: a display bound in the branch
    y = x
    if np.sum(x) > 0:
        ws = [y * 1.0, y * 2.0]
        for w in ws:
            y = np.sin(y * w)
    return np.sum(y)


def test_the_refusals_hint_runs() -> None:
    for x in XS[:2]:
        np.testing.assert_allclose(np.asarray(srcjax.grad(_fixed_display)(x)), _fd(_fixed_display, x), rtol=1e-5,
                                   atol=1e-6)


# -- random programs: loop kinds x which branch x carried names x containers read --------------------------------
LOOPS = {  # ({n}: each loop's own targets; a name a loop binds again under a later test on data is data to the
    # binding-time analysis, and `if c == 2.0: continue` on it is refused, in every mode: docs/limitations.md)
    "tuple": ["for c{n} in (0.5, -1.0, 2.0):", "    y = np.sin(y * c{n}) + x"],
    "name": ["for c{n} in cs:", "    y = np.tanh(y * c{n}) + {a}"],
    "bound_here": ["ks{n} = (0.3, 1.2)", "for c{n} in ks{n}:", "    y = y * c{n} + np.cos({a})"],
    "zip": ["for c{n}, w{n} in zip(cs, ws):", "    y = np.tanh(y * w{n}) * c{n}"],
    "enumerate": ["for i{n}, c{n} in enumerate(cs):", "    y = np.sin(y) * c{n} + x[i{n}]"],
    "reversed": ["for w{n} in reversed(ws):", "    y = np.sin(y + w{n}) * 0.9"],
    "items": ["for k{n}, v{n} in d.items():", "    y = np.sin(y * v{n}) + {a}"],
    "module": ["for c{n} in SCALES:", "    y = np.cos(y) * c{n}"],
    "range": ["for j{n} in range(2):", "    y = np.sin(y) + x[j{n}]"],
    "nested": ["for c{n} in cs:", "    for j{n} in range(2):", "        y = np.tanh(y * c{n}) + x[j{n}]"],
    "break": ["for c{n} in (1.0, 2.0, 3.0):", "    if c{n} > 1.5:", "        break", "    y = np.sin(y) * c{n}"],
    "continue": ["for c{n} in (1.0, 2.0, 3.0):", "    if c{n} == 2.0:", "        continue",
                 "    y = np.sin(y) * c{n}"],
    "if_in_loop": ["for c{n} in cs:", "    if np.sum(y) > c{n}:", "        y = np.sin(y) * c{n}", "    else:",
                   "        y = y * 0.5 + {a}"],
    "made_here": ["vs{n} = [y * 0.5, x]", "for v{n} in vs{n}:", "    y = np.sin(y * v{n})"],
}
TESTS = ["np.sum(x) > 0.2", "np.max(y) < 0.5", "x[0] > 0", "np.mean(x * y) > -0.1"]


def write_program(r: random.Random) -> str:
    """``def f(x)`` (x of shape (3,)): containers bound before the ``if`` (a tuple, a list of arrays, a dict), a
    statement, an ``if`` on data (an ``else``, an ``elif`` or an ``if`` nested in it) whose branches hold loops
    over sequences (carrying ``y``, sometimes ``acc`` too), then a reduction."""
    count = iter(range(100))

    def loop(ind: str) -> list[str]:
        n, a = next(count), r.choice(["x", "acc", "0.1"])
        lines = [ind + t.format(a=a, n=n) for t in LOOPS[r.choice(sorted(LOOPS))]]
        if r.random() < 0.3:  # a second carried name
            lines.append(ind + "    acc = acc + y * 0.5")
        return lines

    def branch(ind: str) -> list[str]:
        parts = [ind + f"y = y * {r.choice(['0.5', '-0.3', 'x'])} + x"] if r.random() < 0.4 else []
        parts += loop(ind)
        if r.random() < 0.3:
            parts += loop(ind)
        return parts

    lines = ["    cs = (0.5, -1.0, 2.0)", "    ws = [x, x * x]", "    d = {'u': 0.7, 'v': -0.4}", "    acc = x * 0.1",
             f"    y = x * {r.choice(['0.5', '-1.0', 'x'])}", f"    if {r.choice(TESTS)}:"]
    kind = r.choice(["if", "ifelse", "elif", "nested", "else"])
    lines += branch("        ") if kind != "else" else ["        y = y * 2.0"]
    if kind in ("ifelse", "else"):
        lines += ["    else:", *branch("        ")]
    elif kind == "elif":
        lines += [f"    elif {r.choice(TESTS)}:", *branch("        ")]
    elif kind == "nested":
        lines += [f"        if {r.choice(TESTS)}:", *branch("            ")]
    lines.append(f"    return np.sum(y * {r.choice(['y', 'x', 'acc'])})")
    return "import numpy as np\n\nSCALES = (0.5, 2.0)\n\n\ndef f(x):\n" + "\n".join(lines) + "\n"


_DIR = Path(tempfile.mkdtemp(prefix="srcjax_branch_sequences_"))
TRANSFORMS = ("grad", "vjp", "jacrev", "hessian", "vmap(grad)", "jacfwd")


def check(text: str, transform: str) -> None:
    f, twin = numpy_and_jax(_DIR, text, "seq")
    want = np.stack([np.asarray(jax.grad(twin)(jnp.asarray(x))) for x in XS])
    # (a random program may jump within finite differences' step of a sample point, where a test of an `if` changes:
    # jax's derivative is then not the finite difference, and the point tells nothing; such programs are drawn again)
    assume(np.allclose(want, np.stack([_fd(f, x) for x in XS]), rtol=1e-5, atol=1e-6))
    if transform == "vmap(grad)":
        g = srcjax.vmap(srcjax.grad(f))
        got = np.asarray(g(XS))
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11, err_msg=f"{transform}\n{text}")
        np.testing.assert_allclose(np.asarray(srcjax.numpy_function(g)(XS)), got, rtol=1e-10, atol=1e-12,
                                   err_msg=f"NumPy running {transform}\n{text}")
        return
    for x, w in zip(XS, want):
        if transform == "hessian":
            np.testing.assert_allclose(np.asarray(srcjax.hessian(f)(x)), np.asarray(jax.hessian(twin)(jnp.asarray(x))),
                                       rtol=1e-8, atol=1e-10, err_msg=f"hessian\n{text}")
            continue
        if transform == "grad":
            got = np.asarray(srcjax.grad(f)(x))
        elif transform == "vjp":
            out, back = srcjax.vjp(f, x)
            np.testing.assert_allclose(np.asarray(out), f(x), rtol=1e-12, err_msg=f"vjp's value\n{text}")
            got = np.asarray(back(np.float64(1.0))[0])
        else:
            got = np.asarray(getattr(srcjax, transform)(f)(x))
        np.testing.assert_allclose(got, w, rtol=1e-9, atol=1e-11, err_msg=f"{transform}\n{text}")


@examples(3, scale=60)
@given(st.integers(0, 2**32 - 1), st.sampled_from(TRANSFORMS))
def test_random_sequence_loops_inside_ifs_on_data(seed: int, transform: str) -> None:
    text = write_program(random.Random(seed))
    note(text)
    check(text, transform)


def main(count: int, seed: int) -> None:  # pragma: no cover (a sweep by hand)
    for s in range(seed, seed + count):
        text = write_program(random.Random(s))
        for t in TRANSFORMS:
            try:
                check(text, t)
            except AssertionError as e:
                print(f"seed {s} {t}: WRONG {str(e)[:1500]}")
            except Exception as e:  # noqa: BLE001
                print(f"seed {s} {t}: {type(e).__name__}: {str(e)[:600]}\n{text}")
        print(s, "done", flush=True)


if __name__ == "__main__":  # pragma: no cover
    import sys

    main(int(sys.argv[1]), int(sys.argv[2]))
