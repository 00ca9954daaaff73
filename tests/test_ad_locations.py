"""Derivative code is reported at the user's lines: errors and StableHLO locations.

- ``grad`` of a function whose output is not a real scalar (an array, the first of a
  ``has_aux`` pair, an integer) is refused at the function's ``return`` with the output's
  shape, as ``srcjax-transpile --list`` reports it, not at the assertion the generated
  gradient carries;
- every location in the optimized HLO of a derivative (``source_file``/``source_line``
  metadata, which profiles and XLA dumps show) names the user's file and a line of the
  function (or of the user's helpers it calls): not the generated source, not
  ``srcjax/adjoint.py`` whose helpers derivative code calls.
"""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

import srcjax
from srcjax.autodiff import _wrap
from tests import ad_programs as P
from tests.corpus_helpers import dense


def locate(fn: Any, snippet: str) -> tuple[int, int]:
    """(1-based line, 0-based column) of ``snippet`` in ``fn``'s source file."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        col = line.find(snippet)
        if col >= 0:
            return start + i, col
    raise AssertionError(f"{snippet!r} not in the source of {fn.__name__}")


# -- outputs grad refuses ---------------------------------------------------------------------------
def vector_out(x):
    y = np.tanh(x)
    return y


def pair_with_vector_first(x):
    return np.tanh(x), np.sum(x)


def integer_out(x):
    return np.sum(x > 0)


def two_returns(x):
    if x.shape[0] > 2:
        return np.sum(x)
    return x * 2.0


REFUSED = [
    # (function, transformation, error class, where it points, message fragments)
    (vector_out, srcjax.grad, srcjax.ShapeError, "y\n", ["srcjax.grad needs a scalar output", "vector_out returns f64[3]"]),
    (vector_out, srcjax.value_and_grad, srcjax.ShapeError, "y\n", ["srcjax.value_and_grad needs a scalar output",
                                                                    "f64[3]"]),
    # (srcjax.hessian of vector_out was here: it is JAX's jacfwd(jacrev(f)) now, tests/test_compose_unseen.py)
    (pair_with_vector_first, lambda f: srcjax.grad(f, has_aux=True), srcjax.ShapeError, "np.tanh(x), ",
     ["returns f64[3] as its output (the first of the pair)"]),
    (pair_with_vector_first, lambda f: srcjax.value_and_grad(f, has_aux=True), srcjax.ShapeError, "np.tanh(x), ",
     ["f64[3]"]),
    (integer_out, srcjax.grad, srcjax.DTypeError, "np.sum(x > 0)",
     ["requires a real-valued (floating-point) output", "integer_out returns i64[]"]),
    (two_returns, srcjax.grad, srcjax.ShapeError, "two_returns(x)", ["two_returns returns f64[2]"]),
]


@pytest.mark.parametrize("row", REFUSED, ids=lambda r: f"{r[0].__name__}")
def test_grad_output_errors_point_at_the_return(row: Any) -> None:
    """Regression (issue 13.4): it was `<srcjax.grad of vector_out #6>:8:12: assert np.ndim(tanh) == 0`."""
    fn, transform, cls, snippet, fragments = row
    x = np.linspace(0.5, 1.0, 3 if fn is not two_returns else 2)
    with pytest.raises(cls) as ei:
        transform(fn)(x)
    e = ei.value
    line, col = locate(fn, snippet.rstrip("\n")) if snippet != "y\n" else locate(fn, "return y")
    if snippet == "y\n":
        col += len("return ")
    assert e.span is not None and e.span.filename == __file__, str(e)
    assert (e.span.line, e.span.col) == (line, col), f"points at {e.span.line}:{e.span.col}\n{e}"
    for frag in fragments:
        assert frag in e.message, e.message
    assert "srcjax.grad of" not in str(e) and "assert" not in str(e)
    assert e.hint


def _returns_a_dict(w, x):
    return {"a": w * 2.0, "b": np.cos(w) * x}


def _returns_a_pair(w):
    return np.sum(w), np.cos(w)


@pytest.mark.parametrize("fn,kind,what", [(_returns_a_dict, "a dict", srcjax.grad),
                                          (_returns_a_pair, "a tuple", srcjax.grad),
                                          (_returns_a_dict, "a dict", srcjax.value_and_grad)])
def test_a_returned_container_is_refused_at_the_return_even_without_arguments(fn, kind, what) -> None:
    """A container output is never a scalar: ``srcjax.source`` of the gradient says so at the return
    (it said ``name 'out_bar' is not defined``, in generated code), and so does a call."""
    line = inspect.getsourcelines(fn)[1] + 1
    name = "value_and_grad" if what is srcjax.value_and_grad else "grad"
    for attempt in (lambda: srcjax.source(what(fn)), lambda: what(fn)(np.ones(2), np.ones(2))[:1]):
        with pytest.raises(srcjax.ShapeError) as info:
            attempt()
        first = str(info.value).splitlines()[0]
        assert f"test_ad_locations.py:{line}:12: error: srcjax.{name} needs a scalar output" in first, first
        assert f"returns {kind}" in first
        assert "has_aux=True" in (info.value.hint or "")


def test_a_scalar_float_output_is_fine() -> None:
    g = srcjax.grad(lambda x: np.sum(np.tanh(x)))(np.ones(3))
    assert g.shape == (3,)


def test_cli_list_reports_an_integer_output(tmp_path: Any) -> None:
    """`srcjax-transpile --list`: the same refusal, at the same place."""
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent('''\
        import numpy as np


        def count(x: "f32[4]"):
            return np.sum(x > 0)


        def vec(x: "f32[4]"):
            return np.tanh(x)
        '''))
    r = subprocess.run([sys.executable, "-m", "srcjax", str(path), "--list"], capture_output=True, text=True)
    rows = {ln.split()[1].split("(")[0]: ln for ln in r.stdout.splitlines()[2:] if ln.strip()}
    assert "5:12: DTypeError: --grad requires a real-valued (floating-point) output, but count returns i64[]" \
        in rows["count"], r.stdout
    assert "9:12: ShapeError: --grad needs a scalar output, but vec returns f32[4]" in rows["vec"], r.stdout


# -- StableHLO locations ----------------------------------------------------------------------------
_LOC = re.compile(r'source_file="([^"]*)" source_line=(\d+)')


def _lines_of(*fns: Any) -> set[tuple[str, int]]:
    out = set()
    for f in fns:
        lines, start = inspect.getsourcelines(f)
        out |= {(inspect.getsourcefile(f), start + k) for k in range(len(lines))}
    return out


def _locations(fn: Any, *args: Any) -> set[tuple[str, int]]:
    text = srcjax.lower(fn, *args).compile().as_text()
    return {(f, int(n)) for f, n in _LOC.findall(text)}


def rnn_loss(w, x):
    h = np.zeros(w.shape[1])
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ w + np.sin(h))
    return np.sum(np.outer(h, h)) + np.linalg.norm(w)


def bounded_loop(x):
    it = 0
    while it < 5 and np.sum(x) > 1.0:
        x = x * 0.9 + 0.01 * np.tanh(x)
        it += 1
    return np.sum(x * x)


def fori_body(x):
    def body(i, c):
        return c * x + np.sin(c)
    return np.sum(srcjax.lax.fori_loop(0, 3, body, x))


def with_helper(w, b, x):
    return np.mean(dense(w, b, x) ** 2)


r = np.random.default_rng(0)
W, X, B = r.normal(size=(3, 2)), r.normal(size=(4, 3)), r.normal(size=2)
LOCATION_CASES = [
    (P.mse_tanh, (W, X, r.normal(size=(4, 2))), ()),
    (P.softmax_xent, (r.normal(size=(4, 5)), np.eye(5)[[0, 2, 4, 1]]), ()),
    (P.attention, (r.normal(size=(4, 3)), r.normal(size=(5, 3)), r.normal(size=(5, 2))), ()),
    (rnn_loss, (r.normal(size=(3, 3)), r.normal(size=(4, 3))), ()),
    (bounded_loop, (np.linspace(0.5, 2.0, 4),), ()),
    (fori_body, (np.linspace(0.1, 0.5, 4),), ()),
    (with_helper, (W, B, X), (dense,)),
]


@pytest.mark.parametrize("fn, args, helpers", LOCATION_CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_derivative_locations_are_the_users_lines(fn: Any, args: tuple[Any, ...], helpers: tuple[Any, ...]) -> None:
    """Regression (issue 13.4): optimized HLO named srcjax/adjoint.py lines for derivative code.
    grad, jvp, vjp and hessian-vector products: every location is a line of the function (or of the
    user's helper it calls), and the function's own statements are among them."""
    allowed = _lines_of(fn, *helpers)
    n = len(args)
    derivatives = [
        ("grad", srcjax.grad(fn, argnums=tuple(range(n))), args),
        ("jvp", _wrap(fn, "jvp", tuple(range(n)), False), args + tuple(np.ones_like(a) for a in args)),
        ("vjp", _wrap(fn, "vjp", tuple(range(n)), False), args + (1.0,)),
        ("hvp", _wrap(srcjax.grad(fn), "jvp", (0,), False), args + (np.ones_like(args[0]),)),
    ]
    body = {(inspect.getsourcefile(fn), ln) for ln in range(locate(fn, "def ")[0] + 1, max(ln for _, ln in allowed) + 1)}
    for kind, d, a in derivatives:
        locs = _locations(d, *a)
        assert locs, f"{kind}: no locations"
        stray = sorted(loc for loc in locs if loc not in allowed)
        assert not stray, f"{kind}: locations outside {fn.__name__}: {stray}"
        assert locs & body, f"{kind}: no location in the body of {fn.__name__}: {sorted(locs)}"


def test_primal_locations_are_unchanged() -> None:
    """Compiling the function itself: its lines, each statement's ops at that statement's line."""
    locs = _locations(srcjax.compile(rnn_loss), *LOCATION_CASES[3][1])
    line = locate(rnn_loss, "h = np.tanh(")[0]
    assert (__file__, line) in locs and locs <= _lines_of(rnn_loss)


# -- errors inside a helper, under jvp and a derivative of a derivative ---------------------------
# jvp reported `<srcjax.jvp of f #0>:16:14` (generated code); grad(grad(f)) the inner gradient's source.

def _bad_matmul(x):
    return np.reshape(x, (3, 2)) @ np.ones(4)


def _sums_bad_matmul(x):
    return np.sum(_bad_matmul(x))


@pytest.mark.parametrize("what", ["jvp", "vjp", "grad", "grad_grad", "jacfwd", "hessian"])
def test_a_helpers_error_is_at_the_helpers_line(what):
    x = np.arange(6.0)
    calls = {
        "jvp": lambda: srcjax.jvp(_sums_bad_matmul, (x,), (x,)),
        "vjp": lambda: srcjax.vjp(_sums_bad_matmul, x),
        "grad": lambda: srcjax.grad(_sums_bad_matmul)(x),
        "grad_grad": lambda: srcjax.grad(srcjax.grad(_sums_bad_matmul))(x),
        "jacfwd": lambda: srcjax.jacfwd(_bad_matmul)(x),
        "hessian": lambda: srcjax.hessian(_sums_bad_matmul)(x),
    }
    with pytest.raises(srcjax.ShapeError) as info:
        calls[what]()
    line = inspect.getsourcelines(_bad_matmul)[1] + 1
    assert f"test_ad_locations.py:{line}:" in str(info.value).splitlines()[0], str(info.value)
