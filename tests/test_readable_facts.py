"""What a gradient's guard proves (srcjax.transforms.readable_facts): the rewrites it allows, the
places it must not touch, and bit-identical results against the text before the rewrite, run by
NumPy, for every dtype and shape (the guard failing in both where it fails in one)."""

from __future__ import annotations

import os
import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import srcjax
from srcjax import adjoint
from srcjax.transforms.readable_facts import guard_rewrites

_SCALE = 10 if os.environ.get("SRCJAX_HYPOTHESIS") == "thorough" else 1
HEAD = "import numpy as np\nfrom srcjax.adjoint import expand_reduced, is_float, ones_like, unbroadcast, zeros_like\n"
GUARD = "assert np.ndim(out) == 0 and is_float(out), 'grad requires a real scalar output'"


def _module(params: str, body: str) -> str:
    return HEAD + f"\n\ndef f({params}):\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n"


def _body(text: str) -> str:
    return textwrap.dedent(text.split("):\n", 1)[1]).strip("\n")


def test_a_reduced_cast_to_the_dtype_it_already_has_is_dropped() -> None:
    text = _module("a, c", f"""
        p = a ** 2
        s = np.sum(p)
        out = s * c
        {GUARD}
        h = ones_like(out)
        g = unbroadcast(-h, s)
        return expand_reduced(g, a, None, False)
    """)
    assert _body(guard_rewrites(text)).splitlines()[-2:] == \
        ["h = ones_like(out)", "return expand_reduced(-h, a, None, False)"]


def test_ones_times_a_real_float_is_the_float() -> None:
    text = _module("a", f"""
        p = a ** 2
        out = np.sum(p)
        {GUARD}
        o = ones_like(a)
        b = o * 2 * a
        return b + o * a
    """)
    assert _body(guard_rewrites(text)).splitlines()[-2:] == ["b = 2 * a", "return b + a"]


@pytest.mark.parametrize("body", [
    # not past a guard
    "p = a ** 2\ns = np.sum(p)\nout = s * c\nh = ones_like(out)\n"
    "g = unbroadcast(h, s)\nreturn expand_reduced(g, a, None, False)",
    # h not known 0-d: unbroadcast sums it
    f"p = a ** 2\ns = np.sum(p)\nout = s * np.sum(c)\n{GUARD}\n"
    "g = unbroadcast(c, s)\nreturn expand_reduced(g, a, None, False)",
    # p is not a, a ** k or -a (np.exp of an integer a is float: s's dtype is not a's)
    f"p = np.exp(a)\ns = np.sum(p)\nout = s * c\n{GUARD}\nh = ones_like(out)\n"
    "g = unbroadcast(h, s)\nreturn expand_reduced(g, a, None, False)",
    # a float power: s is float64 for an integer a
    f"p = a ** 2.0\ns = np.sum(p)\nout = s * c\n{GUARD}\nh = ones_like(out)\n"
    "g = unbroadcast(h, s)\nreturn expand_reduced(g, a, None, False)",
    # a bound twice
    f"p = a ** 2\ns = np.sum(p)\nout = s * c\n{GUARD}\nh = ones_like(out)\na = a * 2.0\n"
    "g = unbroadcast(h, s)\nreturn expand_reduced(g, a, None, False)",
    # a not known real floating: the mean of an integer array is float
    f"p = a ** 2\nout = np.mean(p)\n{GUARD}\no = ones_like(a)\nreturn o * 2 * a",
    # another shape: ones_like(c) * a
    f"p = a ** 2\nout = np.sum(p)\n{GUARD}\no = ones_like(c)\nreturn o * 2 * a",
    # a float literal times a: an integer a gives a float result
    f"p = 0.5 * a\nout = np.sum(p)\n{GUARD}\no = ones_like(a)\nreturn o * a",
])
def test_what_the_guard_does_not_prove_stays(body: str) -> None:
    text = _module("a, c", body)
    assert guard_rewrites(text) == text


def test_control_flow_and_rebound_helpers_are_left_alone() -> None:
    body = f"p = a ** 2\nout = np.sum(p)\n{GUARD}\no = ones_like(a)\n"
    for extra in ("for i in range(2):\n    c = c + 1\n", "ones_like = np.ones_like\n"):
        text = _module("a, c", body + extra + "return o * 2 * a")
        assert guard_rewrites(text) == text


def _run(text: str, *args):
    ns: dict = {}
    exec(compile(text, "<f>", "exec"), ns)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ns["f"](*args)
    except (AssertionError, TypeError, ValueError) as e:
        return type(e)


DTYPES = [np.float16, np.float32, np.float64, np.complex64, np.int32, np.int8, np.bool_]


@settings(max_examples=60 * _SCALE, deadline=None, derandomize=True)
@given(st.sampled_from(DTYPES), st.sampled_from(DTYPES), st.sampled_from([(), (3,), (2, 3)]),
       st.sampled_from(["a", "a ** 2", "-a", "a ** 3"]), st.sampled_from(["ones_like(out)", "-ones_like(out)",
                                                                        "c * 3.0", "c"]),
       st.sampled_from(["c", "np.sum(c)", "2.0"]))
def test_reduced_cast_rewrite_is_bit_identical(ta, tc, shape, p, h, outer) -> None:
    """Every dtype pair and shape: the rewritten text and the text before it give the same values
    and dtype (or both fail the guard)."""
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(shape) * 3).astype(ta)
    c = np.asarray(rng.standard_normal(()) * 2).astype(tc)
    text = _module("a, c", f"""
        p = {p}
        s = np.sum(p)
        out = s * {outer}
        {GUARD}
        h = {h}
        g = unbroadcast(h, s)
        return expand_reduced(g, a, None, False)
    """)
    new = guard_rewrites(text)
    assert (new != text) == ("out" in h or outer == "c"), new  # (c is 0-d when out = s * c is)
    want, got = _run(text, a, c), _run(new, a, c)
    if isinstance(want, type):
        assert got is want
    else:
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(got, want)


@settings(max_examples=40 * _SCALE, deadline=None, derandomize=True)
@given(st.sampled_from(DTYPES), st.sampled_from([(), (4,), (2, 3)]),
       st.sampled_from(["np.sum(a ** 2)", "-np.sum(a)", "np.sum(3 * a)", "np.sum(-a) * 2"]),
       st.sampled_from(["o * 2 * a", "o * a", "o * 2.5 * a", "o * 70000 * a"]))
def test_ones_factor_rewrite_is_bit_identical(ta, shape, out, expr) -> None:
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(shape) * 3).astype(ta)
    lines = [f"out = {out}"]
    if "np.sum(a ** 2)" in out:
        lines = ["p = a ** 2", "out = np.sum(p)"]
    elif out == "-np.sum(a)":
        lines = ["s = np.sum(a)", "out = -s"]
    elif out == "np.sum(3 * a)":
        lines = ["p = 3 * a", "out = np.sum(p)"]
    text = _module("a", "\n".join([*lines, GUARD, "o = ones_like(a)", f"return {expr}"]))
    new = guard_rewrites(text)
    assert (new != text) == (out != "np.sum(-a) * 2"), new  # (not a name: ANF names every operand)
    want, got = _run(text, a), _run(new, a)
    if isinstance(want, type):
        assert got is want
    else:
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(got, want)


def test_softmax_cross_entropy_gradient_reads_the_reduction_once() -> None:
    """The rewrite on a real gradient: ``np.sum(t * z)`` folds into the loss (it was kept alive for
    a cast the expansion does again), and the result equals jax's gradient."""
    from tests.test_readable import softmax_cross_entropy

    g = srcjax.grad(softmax_cross_entropy)
    text = srcjax.source(g)
    # (and the seed, all minus ones where it meets ``mul``, is written as what it is: -ones_like(mul))
    assert "sub = np.log(sum_1) - np.sum(mul)" in text and "unbroadcast(t * -ones_like(mul), z)" in text
    assert "unbroadcast(-" not in text
    z, t = np.linspace(-1, 1, 5), np.eye(5)[1]
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    want = jax.grad(lambda z, t: jax.numpy.log(jax.numpy.sum(jax.numpy.exp(z))) - jax.numpy.sum(t * z))(z, t)
    np.testing.assert_allclose(np.asarray(g(z, t)), np.asarray(want), rtol=1e-12)
    anf = srcjax.source(g, form="anf")
    for dtype in (np.float64, np.float32, np.float16):
        args = (z.astype(dtype), t.astype(dtype))
        got = _run_named(text, "softmax_cross_entropy_grad", *args)
        assert got.dtype == dtype and np.asarray(g(*args)).dtype == dtype
        np.testing.assert_array_equal(got, _run_named(anf, "softmax_cross_entropy_grad", *args))


def _run_named(text: str, name: str, *args):
    ns: dict = {}
    exec(compile(text, "<g>", "exec"), ns)
    return ns[name](*args)


def test_helpers_stay_what_the_rewrite_assumes() -> None:
    """The proofs above read these helpers' dtype rules: 0-d ``unbroadcast`` is a cast to the target's
    dtype between floating types, ``ones_like`` is in its argument's dtype for a real float."""
    for dt in (np.float16, np.float32, np.float64):
        assert adjoint.ones_like(np.zeros(3, dt)).dtype == dt
        assert adjoint.unbroadcast(np.float64(1.0) / 3, np.asarray(1, dt)).dtype == dt
    assert adjoint.unbroadcast(np.float64(2.0), np.asarray(1, np.int32)).dtype == np.float64


# -- ones_like of a value computed elementwise from one name --------------------------------------------------

HUBER = f"""
    r = a - c
    absolute = np.absolute(r)
    le = absolute <= 1.0
    pow_1 = r ** 2
    mul = 0.5 * pow_1
    sub = absolute - 0.5
    where = np.where(le, mul, sub)
    out = np.sum(where)
    {GUARD}
    where_bar = ones_like(where)
    return np.where(le, where_bar, 0.0) * r
"""


def test_ones_like_reads_the_name_its_value_is_computed_from() -> None:
    out = _body(guard_rewrites(_module("a, c", HUBER)))
    assert "where_bar = ones_like(r)" in out


@pytest.mark.parametrize("old,new", [
    ("mul = 0.5 * pow_1", "mul = np.exp(r)"),  # np.exp of int8 is float16: another dtype
    ("where = np.where(le, mul, sub)", "where = np.where(le, np.abs(r) * 0.5, np.abs(r) - 0.5)"),  # a complex
    # r: through abs only, a real value
    ("sub = absolute - 0.5", "sub = absolute - c"),  # c's shape and dtype
    ("where = np.where(le, mul, sub)", "where = np.where(le, mul, 0.5)"),  # a number branch
    ("le = absolute <= 1.0", "le = absolute <= c"),  # a condition of another shape
])
def test_ones_like_of_what_is_not_like_its_root_stays(old: str, new: str) -> None:
    text = _module("a, c", HUBER.replace(old, new))
    assert "where_bar = ones_like(where)" in guard_rewrites(text)


@settings(max_examples=60 * _SCALE, deadline=None, derandomize=True)
@given(st.sampled_from([*DTYPES, np.uint8, np.complex128]), st.sampled_from([(), (4,), (2, 3)]),
       st.sampled_from(["0.5 * pow_1", "-pow_1", "pow_1 / 3", "r * 2", "pow_1 - r", "2 - r"]),
       st.sampled_from(["absolute - 0.5", "absolute * 2.0", "r", "-r"]))
def test_ones_like_root_rewrite_is_bit_identical(dtype, shape, mul, sub) -> None:
    rng = np.random.default_rng(2)
    a = (rng.standard_normal(shape) * 2).astype(dtype)
    text = _module("a, c", HUBER.replace("0.5 * pow_1", mul).replace("absolute - 0.5", sub).replace(
        "r = a - c", "r = a"))
    new = guard_rewrites(text)
    assert "ones_like(r)" in new, new
    want, got = _run(text, a, None), _run(new, a, None)
    if isinstance(want, type):
        assert got is want
    else:
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(got, want)


def _every_function(text: str) -> str:
    """:func:`guard_rewrites` as it was: every function without nested scopes read (no skip by the guard's shape)."""
    import ast

    from srcjax.transforms import readable_facts
    from srcjax.transforms.simplify import _Text

    if "is_float(" not in text or "from srcjax.adjoint import" not in text:
        return text
    tree = ast.parse(text)
    imported = {a for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "srcjax.adjoint"
                for a in readable_facts.imported_names(n)} - {a.asname for n in tree.body
                                                              if isinstance(n, ast.ImportFrom) for a in n.names
                                                              if a.asname is not None}
    if not set(readable_facts._HELPERS) <= imported:
        return text
    t = _Text(text)
    edits: list[tuple[int, int, str]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not readable_facts._nested(node):
            readable_facts._Function(node, t, edits).rewrite()
    return t.render(0, len(text), edits) if edits else text


def test_a_function_without_the_guard_is_not_read() -> None:
    from srcjax.transforms import readable_facts

    text = _module("a", f"""
        out = np.sum(a ** 2)
        {GUARD}
        return 2 * ones_like(out) * a
        """) + "\n\ndef g(a):\n    and_ = np.ndim(a) == 0 and is_float(a)\n    assert and_\n    return ones_like(a) * a\n"
    made: list[str] = []
    real = readable_facts._Function

    class Counted(real):  # type: ignore[misc, valid-type]
        def __init__(self, fdef, *args) -> None:  # type: ignore[no-untyped-def]
            made.append(fdef.name)
            super().__init__(fdef, *args)

    want = _every_function(text)
    readable_facts._Function = Counted  # type: ignore[misc]
    try:
        assert guard_rewrites(text) == want
    finally:
        readable_facts._Function = real  # type: ignore[misc]
    assert made == ["f"], made


_SAMPLE = [c for c in __import__("tests.golden", fromlist=["cases"]).cases()
           if os.environ.get("SRCJAX_HYPOTHESIS") == "thorough" or __import__("zlib").crc32(c[0].encode()) % 40 == 13]


@pytest.mark.parametrize("name,fn,transform", _SAMPLE, ids=[c[0] for c in _SAMPLE])
def test_the_guards_rewrites_read_as_every_function_would(name, fn, transform, monkeypatch) -> None:
    """Every module the readable pass rewrites while a sample of the golden corpora is written (all of them in
    the thorough tier) comes out as it did when every function was read."""
    from srcjax.transforms import readable
    from tests.golden import render

    original = readable.guard_rewrites

    def checked(text: str) -> str:
        got = original(text)
        assert got == _every_function(text), text
        return got

    monkeypatch.setattr(readable, "guard_rewrites", checked)
    render(fn, transform)
