"""The readable pass keeps values (srcjax/transforms/readable.py): what it writes is what runs.

The pass folds single-use temporaries and tidies constants (``-(-e)``, ``a * 3 * b``, ``2.5 * a * 2``,
``-(2.5 * a)``, ``-(-e * b / c)``); each rewrite is meant to be exact for every dtype (the same values,
dtype and weakness). Hunt12 found one that dropped a minus sign (``-(-c * g * 2 * d)``, fixed in
68a336e). These property tests draw random programs rich in what the pass rewrites and check:

- the pass on its own: random ANF functions (one primitive per line, as :mod:`.simplify` writes them)
  through :func:`readable.readable_source`, and random nested expressions through :func:`readable.tidy`,
  run by NumPy before and after on arrays of several dtypes and on Python numbers: identical results
  (bit for bit, dtype and type), or the same exception;
- end to end: ``srcjax.grad`` / ``jacfwd`` / ``hessian`` of random smooth functions against jax and
  central finite differences.

Default tier: a few seconds; ``SRCJAX_HYPOTHESIS=thorough`` draws 10 times as many fresh examples.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import srcjax
from srcjax.transforms import readable
from tests.written import examples

# -- expressions written as text, with the parentheses a generator would write ---------------------------

_PREC = {"+": 12, "-": 12, "*": 13, "/": 13, "//": 13, "%": 13, "**": 15}
_UNARY = 14
_ATOMIC = 100

FLOATS = ("0.5", "2.5", "3.0", "1e-05", "0.25", "2.0", "-0.5", "-2.5", "-1.0")
INTS = ("2", "3", "4", "1", "-2", "-1")
_NUMBER = st.sampled_from(FLOATS + INTS).map(lambda s: (s, 14 if s.startswith("-") else 100))


def _wrap(text: str, prec: int, need: int, extra: bool) -> str:
    return "(" + text + ")" if prec < need or extra else text


@st.composite
def expression(draw: Any, leaves: tuple[str, ...], depth: int = 4, smooth: bool = False) -> tuple[str, int]:
    """A random expression over ``leaves`` and number literals: (its text, its precedence). ``smooth``
    keeps it differentiable and finite on inputs in [0.5, 2] (divisions by ``1.0 + e ** 2``)."""
    kinds = ["leaf", "num"] if depth <= 0 else (["leaf", "num"] if depth <= 2 else []) + \
        ["neg_product", "chain", "flat", "neg", "negneg", "bin", "pow", "div"] + (["call"] if smooth else [])
    kind = draw(st.sampled_from(kinds))
    extra = draw(st.booleans()) and draw(st.booleans())  # now and then, parentheses nobody needs
    sub = expression(leaves, depth - 1, smooth)
    if kind == "leaf":
        return draw(st.sampled_from(leaves)), _ATOMIC
    if kind == "num":
        text = draw(st.sampled_from(FLOATS + INTS))
        return text, (_UNARY if text.startswith("-") else _ATOMIC)
    if kind == "neg":  # -e (a power or a negation under it parenthesized, as the generator writes it)
        e, p = draw(sub)
        return "-" + _wrap(e, p, _ATOMIC if p <= _PREC["**"] else _UNARY + 1, extra), _UNARY
    if kind == "negneg":
        e, p = draw(sub)
        return "-(-" + _wrap(e, p, _ATOMIC, False) + ")", _UNARY
    if kind in ("neg_product", "chain"):  # -(±e * b / c ...), a * 3 * b, 2.5 * a * 2 * b
        factor = st.one_of(_NUMBER, st.sampled_from(leaves).map(lambda s: (s, _ATOMIC)), sub)
        e, p = draw(factor)
        head, hp = draw(st.sampled_from([("-" + _wrap(e, p, _ATOMIC, False), _UNARY), (e, p)]))
        text = _wrap(head, hp, _PREC["*"], kind == "chain" and extra)
        for _ in range(draw(st.integers(1, 4))):
            op = draw(st.sampled_from(["*", "*", "*", "/"] if not smooth else ["*"]))
            f, fp = draw(factor)
            text += f" {op} " + _wrap(f, fp, _PREC["*"] + 1, False)
        return ("-(" + text + ")", _UNARY) if kind == "neg_product" else (text, _PREC["*"])
    if kind == "flat":  # [-(][-]c * a * 2 * b / c[)]: numbers and leaves only, where the constants gather
        leaf = st.sampled_from(leaves).map(lambda s: (s, _ATOMIC))
        items = [draw(st.one_of(_NUMBER, leaf)) for _ in range(draw(st.integers(2, 5)))]
        text = draw(st.sampled_from(["", "-"])) + items[0][0]
        for f, fp in items[1:]:
            text += " " + draw(st.sampled_from(["*", "*", "*", "/"])) + " " + _wrap(f, fp, _ATOMIC, False)
        return ("-(" + text + ")", _UNARY) if draw(st.booleans()) else (text, _PREC["*"])
    if kind == "pow":
        e, p = draw(sub)
        k = draw(st.sampled_from(["2", "3"]))
        return _wrap(e, p, _PREC["**"] + 1, extra) + " ** " + k, _PREC["**"]
    if kind == "div":
        e, p = draw(sub)
        d, dp = draw(sub)
        if smooth:
            return _wrap(e, p, _PREC["/"], extra) + " / (1.0 + " + _wrap(d, dp, _PREC["**"] + 1, False) + " ** 2)", \
                _PREC["/"]
        return _wrap(e, p, _PREC["/"], extra) + " / " + _wrap(d, dp, _PREC["/"] + 1, False), _PREC["/"]
    if kind == "call":
        e, _ = draw(sub)
        return draw(st.sampled_from(["np.tanh", "np.sin"])) + "(" + e + ")", _ATOMIC
    op = draw(st.sampled_from(["+", "-", "*", "/"] if smooth else ["+", "-", "*", "/", "//", "%"]))
    if smooth and op == "/":
        op = "*"
    a, ap = draw(sub)
    b, bp = draw(sub)
    return _wrap(a, ap, _PREC[op], extra) + f" {op} " + _wrap(b, bp, _PREC[op] + 1, False), _PREC[op]


# -- running a text before and after the pass ----------------------------------------------------------

PARAMS = ("x", "y", "n", "a", "k")


def _inputs(seed: int) -> tuple[Any, ...]:
    """float64 and float32 arrays, an int64 array, a Python float and a Python int (never zero)."""
    rng = np.random.default_rng(seed)
    sign = rng.choice([-1, 1], 3)
    return (sign * rng.uniform(0.1, 3.0, 3), (-sign * rng.uniform(0.1, 3.0, 3)).astype(np.float32),
            rng.choice([-3, -2, -1, 1, 2, 3], 3).astype(np.int64), float(rng.choice([-1.5, 0.75, 2.0])),
            int(rng.choice([-2, 3])))


def _run(text: str, args: tuple[Any, ...]) -> tuple[str, Any]:
    ns: dict[str, Any] = {}
    exec(compile(text, "<readable>", "exec"), ns)
    with np.errstate(all="ignore"):
        try:
            return "value", ns["f"](*args)
        except (ArithmeticError, ValueError, TypeError) as e:
            return "error", type(e)


def _same(before: tuple[str, Any], after: tuple[str, Any]) -> None:
    assert before[0] == after[0], (before, after)
    b, a = before[1], after[1]
    if before[0] == "error":
        assert a is b
        return
    assert type(a) is type(b), (type(b), type(a))
    assert np.asarray(a).dtype == np.asarray(b).dtype, (np.asarray(b).dtype, np.asarray(a).dtype)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    if np.asarray(b).dtype.kind == "f":  # (and the signs of zeros: 1 / -0.0 is -inf)
        zero = np.asarray(b) == 0
        np.testing.assert_array_equal(np.signbit(a)[zero], np.signbit(b)[zero])


def _check_keeps_values(before: str, after: str) -> None:
    note(before)
    note(after)
    compile(after, "<readable>", "exec")
    for seed in (0, 1):
        _same(_run(before, _inputs(seed)), _run(after, _inputs(seed)))


def _module(body: list[str]) -> str:
    return "import numpy as np\n\n\ndef f(" + ", ".join(PARAMS) + "):\n" + "".join("    " + s + "\n" for s in body)


@st.composite
def anf_function(draw: Any) -> str:
    """A random function in ANF form: each line one primitive over the parameters, earlier temporaries
    (most read once, so they fold) and number literals."""
    names = list(PARAMS)
    body = []
    for i in range(draw(st.integers(2, 8))):
        operand = st.one_of(st.sampled_from(names), st.sampled_from(FLOATS + INTS))

        def atom(s: str) -> str:
            return "(" + s + ")" if s.startswith("-") else s

        kind = draw(st.sampled_from(["neg", "mul", "scale", "neg", "mul", "mul", "scale", "div", "sub", "add", "pow", "mul3"]))
        a, b, c = draw(operand), draw(operand), draw(operand)
        if len(names) > len(PARAMS) and draw(st.integers(0, 3)):  # (chains of temporaries: they fold into one line)
            a, b = names[-1], draw(st.one_of(st.sampled_from(("2", "0.5", "4", "-1.0", "3")), operand))
        if kind == "scale":  # -0.5 * t: how a derivative rule scales a cotangent
            rhs, name = draw(st.sampled_from(FLOATS)) + " * " + draw(st.sampled_from([*PARAMS, names[-1]])), "mul"
        elif kind == "neg":
            rhs, name = "-" + atom(a), "neg"
        elif kind == "pow":
            rhs, name = atom(a) + " ** " + draw(st.sampled_from(["2", "3"])), "integer_pow"
        elif kind == "mul3":
            rhs, name = a + " * " + atom(b) + " * " + atom(c), "mul"
        else:
            op = {"mul": "*", "div": "/", "sub": "-", "add": "+"}[kind]
            rhs, name = a + f" {op} " + atom(b), kind
        target = f"{name}_{i}"
        body.append(f"{target} = {rhs}")
        names.append(target)
    body.append("return " + names[-1])
    return _module(body)


@examples(150)
@given(anf_function())
def test_readable_source_keeps_values_of_random_anf_functions(text: str) -> None:
    _check_keeps_values(text, readable.readable_source(text, set(), frozenset(PARAMS)))


@examples(150)
@given(expression(PARAMS, depth=4))
def test_tidy_keeps_values_of_random_expressions(drawn: tuple[str, int]) -> None:
    text = _module(["out = " + drawn[0], "return out"])
    _check_keeps_values(text, readable.tidy(text))


# -- end to end: derivatives of random smooth functions against jax and finite differences ----------------


@examples(3)
@given(expression(("x", "s"), depth=3, smooth=True))
def test_derivatives_of_random_functions_agree_with_jax_and_finite_differences(tmp_path_factory: Any,
                                                                             drawn: tuple[str, int]) -> None:
    pytest.importorskip("jax")
    import jax

    from tests.fd import central_fd
    from tests.written import numpy_and_jax

    text = "import numpy as np\n\n\ndef f(x, s):\n    return np.sum(" + drawn[0] + ") + 0.0 * s * np.sum(x)\n"
    note(text)
    jax.config.update("jax_enable_x64", True)
    f, fj = numpy_and_jax(tmp_path_factory.mktemp("readable_values", numbered=True), text, "rv")
    x, s = np.array([0.6, 1.3, 1.9]), np.float64(0.8)
    np.testing.assert_allclose(srcjax.numpy_function(f)(x, s), f(x, s), rtol=1e-13, atol=1e-15)
    for argnums in (0, 1):
        got = srcjax.grad(f, argnums=argnums)(x, s)
        np.testing.assert_allclose(got, jax.grad(fj, argnums=argnums)(x, s), rtol=1e-9, atol=1e-12)
        # (central differences lose |f| * 1e-16 / eps to rounding: x ** 15 has |f| ~ 1e5)
        np.testing.assert_allclose(got, central_fd(f, (x, s), argnums), rtol=1e-5, atol=1e-6 + 1e-9 * abs(f(x, s)))
        np.testing.assert_allclose(srcjax.numpy_function(srcjax.grad(f, argnums=argnums))(x, s), got,
                                   rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(srcjax.jacfwd(f, argnums=argnums)(x, s),
                                   jax.jacfwd(fj, argnums=argnums)(x, s), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(srcjax.hessian(f)(x, s), jax.hessian(fj)(x, s), rtol=1e-9, atol=1e-11)


# -- regressions found by the tests above ----------------------------------------------------------------


def negative_base(x):
    return np.sum((-0.5) ** 2 / (1.0 + x ** 2)) + (-2) ** 2 * np.sum(x)


def negative_base_divisor(x):
    return np.sum(x / (1.0 + (-1.0) ** 2))


def test_a_negative_literal_keeps_its_parentheses_as_the_base_of_a_power() -> None:
    """The ANF form wrote ``(-0.5) ** 2`` as ``-0.5 ** 2`` (a negative literal is an atom, and lost its
    parentheses), which is ``-(0.5 ** 2)``: the generated source run by NumPy, and every derivative
    (generated source too), had the wrong sign (the gradient of ``(-0.5) ** 2 / (1 + x ** 2)``), or
    divided by zero (``1.0 + (-1.0) ** 2``, refused as a ZeroDivisionError at the user's line)."""
    x = np.array([0.6, 1.3, 1.9])
    assert "(-0.5) ** 2" in srcjax.source(negative_base) and "(-2) ** 2" in srcjax.source(negative_base)
    np.testing.assert_allclose(srcjax.numpy_function(negative_base)(x), negative_base(x), rtol=1e-15)
    want = -0.25 * 2 * x / (1 + x ** 2) ** 2 + 4
    np.testing.assert_allclose(srcjax.grad(negative_base)(x), want, rtol=1e-12)
    np.testing.assert_allclose(srcjax.numpy_function(srcjax.grad(negative_base))(x), want, rtol=1e-12)
    np.testing.assert_allclose(srcjax.jacfwd(negative_base)(x), want, rtol=1e-12)
    np.testing.assert_allclose(srcjax.grad(negative_base_divisor)(x), np.full(3, 0.5), rtol=1e-15)
