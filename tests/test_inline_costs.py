"""Reverse mode's writing out of helper calls inside ``if``s on data (issue #15/#18, first calls): work it
no longer repeats, and that what it writes stays the same without it.

- A helper called at several places in a branch on data has its own body (its helpers' calls written
  out in turn) prepared once per reverse-mode function, not once per call: grad(vmap(jacfwd(f))) of a
  dict-params layer wrote vmap's library helpers out 145 times (117 now).
- The inliner's early-return rewrite (``single_exit``) rebuilds only statements: the renaming that
  follows rebuilds every node anyway (it was half of the inliner's time). Every node it writes is a
  new object, each only once in the result (maps keyed by ``id(node)`` tell the copies apart).
"""

from __future__ import annotations

import libcst as cst
import numpy as np

import srcjax
from srcjax.frontend.names import code
from srcjax.frontend.restructure import single_exit
from srcjax.transforms import inline_calls
from tests.test_first_call import _fresh_module

_X = np.linspace(-0.75, 1.25, 5)

_HELPERS = """
def twice(x):
    return np.sin(x) * 2.0


def pair(x):
    return twice(x) + twice(x * 3.0)


def f(x):
    if np.sum(x) > 0:
        y = pair(x) + pair(x * 2.0)
    else:
        y = x * 1.0625
    return np.sum(y)
"""


def _want(x: np.ndarray) -> np.ndarray:
    if np.sum(x) > 0:
        return sum(2.0 * k * m * np.cos(x * k * m) for k in (1.0, 2.0) for m in (1.0, 3.0))
    return np.full_like(x, 1.0625)


def test_a_helper_called_at_several_places_in_a_data_branch_is_written_out_once(monkeypatch):
    f = _fresh_module(_HELPERS).f
    bodies: list[str] = []
    real = inline_calls.inline_calls_in_data_branches

    def counted(program, nf, body, *a, **k):
        bodies.append(nf.name)
        return real(program, nf, body, *a, **k)

    monkeypatch.setattr(inline_calls, "inline_calls_in_data_branches", counted)
    g = srcjax.grad(f)
    for x in (_X, -_X - 1.0):  # both branches
        np.testing.assert_allclose(np.asarray(g(x)), _want(x), rtol=1e-12, atol=1e-12)
    # pair's body once (called twice) and twice's once (called four times, written out inside pair's
    # body): it was pair, twice, twice, pair, twice, twice (reverse mode's own call for f: not counted)
    assert bodies == ["pair", "twice"], bodies
    assert "np.sin" in srcjax.source(g) and "pair(" not in srcjax.source(g).split("def f_grad", 1)[-1]


_TWO_FUNCTIONS = """
def twice(x):
    return np.sin(x) * 2.0


def pair(x):
    return twice(x) + twice(x * 3.0)


def g(x):
    if np.max(x) > 0.5:
        return pair(x * 0.5)
    return x * 0.75


def f(x):
    u = g(x)
    if np.sum(x) > 0:
        y = pair(x) + u
    else:
        y = x * 1.0625 + u
    return np.sum(y * y)
"""


def test_the_functions_of_one_program_share_the_written_out_bodies(monkeypatch):
    """f and g each have reverse mode written (g's forward and backward halves): ``pair`` in their
    branches on data is prepared once for both (it was once per function differentiated)."""
    mod = _fresh_module(_TWO_FUNCTIONS)
    bodies: list[str] = []
    real = inline_calls.inline_calls_in_data_branches

    def counted(program, nf, body, *a, **k):
        bodies.append(nf.name)
        return real(program, nf, body, *a, **k)

    monkeypatch.setattr(inline_calls, "inline_calls_in_data_branches", counted)
    grad = srcjax.grad(mod.f)
    eps = 1e-6
    for x in (_X, -_X - 1.0, _X * 0.1):  # (both branches of f and of g)
        got = np.asarray(grad(x))
        for i in range(x.size):
            e = np.zeros_like(x)
            e[i] = eps
            np.testing.assert_allclose(got[i], (mod.f(x + e) - mod.f(x - e)) / (2 * eps), rtol=1e-6, atol=1e-8)
    # (the helpers' bodies: reverse mode's own call of it for f and g is not counted here) it was pair,
    # twice for g's reverse mode, then again for f's
    assert bodies == ["pair", "twice"], bodies


_EARLY = """
def h(x, y):
    a = x * 2.0
    if y > 0:
        return a + np.sin(y)
    b = a * y
    if x > 1:
        return b
    return b + np.cos(a)
"""


def test_single_exit_of_statements_only_writes_the_same_program():
    body = list(cst.parse_module(_EARLY).body[0].body.body)
    full = single_exit(body, "result")
    lines = single_exit(body, "result", statements_only=True)
    assert code(cst.Module(body=lines)) == code(cst.Module(body=full))
    # the expressions of the lines are the function's own (not walked), the full rewrite's are copies
    value = body[0].body[0].value
    assert lines[0].body[0].value is value and full[0].body[0].value is not value


# statements and the expressions maps are keyed by (an attribute's name, a keyword, an operator or a
# space may be one object in several places, as in what libcst's own transformers write)
_OWN = (cst.BaseSmallStatement, cst.BaseStatement, cst.Call, cst.BinaryOperation, cst.Comparison, cst.Subscript,
        cst.UnaryOperation, cst.BooleanOperation)


class _Ids(cst.CSTVisitor):
    def __init__(self) -> None:
        self.seen: list[int] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, _OWN):
            self.seen.append(id(node))
        return True


def test_the_inliner_writes_each_node_once(monkeypatch):
    """The rest of the body after an early return goes into both branches: the inliner's renaming
    makes each copy's nodes its own objects (nothing shared between the copies)."""
    from srcjax.transforms.inline_lax import Inliner

    written: list[list[object]] = []
    real = Inliner.inline

    def spy(self, fdef, args, target, line):
        out = real(self, fdef, args, target, line)
        written.append(out)
        return out

    monkeypatch.setattr(Inliner, "inline", spy)
    mod = _fresh_module(_EARLY.replace("def h(", "def helper(").replace("y > 0", "np.sum(y) > 0")
                        .replace("x > 1", "np.sum(x) > 1") + """

def f(x, y):
    if np.sum(x) > 0:
        z = helper(x, y)
    else:
        z = x * y
    return np.sum(z)
""")
    x, y = np.array([1.5, 0.25]), np.array([0.5, -2.0])
    g = srcjax.grad(mod.f, argnums=(0, 1))
    got = g(x, y)
    assert written, "the helper was written out in the branch"
    for out in written:
        ids = _Ids()
        cst.Module(body=out).visit(ids)
        assert len(ids.seen) == len(set(ids.seen)), "a node written twice in the inlined body"
    # jax-free oracle: central differences of the function in float64
    eps = 1e-6
    for k, arg in enumerate((x, y)):
        for i in range(arg.size):
            e = np.zeros_like(arg)
            e[i] = eps
            hi = mod.f(*[a + e if j == k else a for j, a in enumerate((x, y))])
            lo = mod.f(*[a - e if j == k else a for j, a in enumerate((x, y))])
            np.testing.assert_allclose(np.asarray(got[k])[i], (hi - lo) / (2 * eps), rtol=1e-6, atol=1e-8)
