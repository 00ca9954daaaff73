"""Random helpers that write into their argument array through random chains of second names, views, containers,
loops, branches and other helpers, called by a caller that reads the argument after the call (or not), compared
with the user's functions run by NumPy (srcjax/frontend/changed_arguments.py: aliasing.py's scan of the helper).

srcjax must give NumPy's numbers or refuse with a located ``TranspileError``; a different number is a failure (it
prints the program). Before session 43 a write through a second name or a view (``v = b[1:]; v[0] = 2.0``,
``b.fill(..)``, ``np.copyto(b, ..)``, ``out=b``, ``np.add.at(b, ..)``, ``s = [b]; s[0][1] = 2.0``) was lost
silently. Default tier: 12 examples; ``SRCJAX_HYPOTHESIS=thorough``: 300 (``python -m tests.test_helper_alias_random
N SEED`` sweeps N programs and counts agreements and refusals).
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

HEADER = "import numpy as np\n\n\ndef ident(v):\n    return v\n\n\ndef put(u, k):\n    u[k] = 9.0\n    return 0\n\n\n"

_LINKS = ["{v} = {p}", "{v} = {p}[:]", "{v} = {p}[::-1]", "{v} = {p}.reshape(3)", "{v} = {p}.T",
          "{v} = np.asarray({p})", "{v} = ident({p})", "{v} = {p}.copy()", "{v} = {p} * 1.0",
          "{v} = [{p}][0]", "{v} = {p} if s > 0 else {p} * 2.0"]
_WRITES = ["{w}[{k}] = 2.0", "{w} += 1.0", "{w} *= 3.0", "{w}.fill(0.5)", "np.copyto({w}, 3.0)",
           "np.add({w}, 1.0, out={w})", "np.add.at({w}, [{k}], 1.0)", "{w}[...] = 4.0", "put({w}, {k})",
           "{w}[1:] = {w}[:2] * 2.0"]


def write_program(r: random.Random) -> str:
    """``def h(b, s)`` writing into a random alias chain of ``b`` (shape (3,)), and ``def f(x)`` calling it."""
    lines: list[str] = []
    name = "b"
    for k in range(r.randint(0, 3)):
        lines.append(r.choice(_LINKS).format(v=f"v{k}", p=name))
        name = f"v{k}"
    if r.random() < 0.2:  # (a container holding the array: its item written)
        lines.append(f"box = [{name}]")
        name = "box[0]"
    write = r.choice(_WRITES).format(w=name, k=r.randrange(3))
    wrap = r.choice(["", "", "for _ in range(2):\n        ", "if s > 0:\n        ", "if s < 0:\n        "])
    lines.append(wrap + write)
    ret = r.choice(["s * 2.0", "np.sum(b)", "b * s"])
    helper = "def h(b, s):\n" + "".join(f"    {ln}\n" for ln in lines) + f"    return {ret}\n\n\n"
    s = r.choice(["2.0", "-1.0"])
    caller = r.choice([f"    b = x.copy()\n    y = h(b, {s})\n    return b * 2.0 + y\n",
                       f"    b = x * 1.0\n    h(b, {s})\n    return np.sum(b) + x\n",
                       f"    b = x.copy()\n    c = b\n    h(c, {s})\n    return b\n",
                       f"    b = x.copy()\n    return h(b, {s}) + b\n",
                       f"    b = x.copy()\n    y = h(b, {s})\n    return y + x\n"])
    return HEADER + helper + "def f(x):\n" + caller


X = np.array([0.7, -1.3, 2.1])


def check(text: str) -> str:
    """``"ok"``, or ``"refused"`` (a located TranspileError); raises AssertionError with the program on a
    different number."""
    f = load(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            want = np.asarray(f(X.copy()))
        except (ValueError, IndexError):  # (NumPy's own error: not a program)
            return "numpy refuses"
    try:
        got = np.asarray(srcjax.jit(f)(X.copy()))
    except srcjax.TranspileError as e:
        assert ".py:" in str(e).splitlines()[0], f"{e}\n{text}"
        return "refused"
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"jit\n{text}")
    by_numpy = np.asarray(srcjax.numpy_function(srcjax.jit(f))(X.copy()))
    np.testing.assert_allclose(by_numpy, want, rtol=1e-12, atol=1e-12, err_msg=f"numpy_function\n{text}")
    return "ok"


@examples(12, scale=25)
@given(st.integers(0, 2**32 - 1))
def test_random_helper_writes_agree_with_numpy_or_are_refused(seed: int) -> None:
    check(write_program(random.Random(seed)))


def test_the_generator_writes_each_kind_of_alias_and_write() -> None:
    texts = "".join(write_program(random.Random(s)) for s in range(300))
    for spelling in ("[:]", "[::-1]", ".reshape(3)", ".T", "np.asarray(", "ident(", " if s > 0 else ", "box = [",
                     ".fill(", "np.copyto(", "out=", "np.add.at(", "[...] =", "put(", "for _ in range(2)",
                     "return h(b"):
        assert spelling in texts, spelling


def main(count: int, seed: int) -> None:  # pragma: no cover (a sweep by hand)
    sweep(write_program, lambda text, _r: check(text), count, seed)


if __name__ == "__main__":  # pragma: no cover
    main(int(sys.argv[1]), int(sys.argv[2]))
