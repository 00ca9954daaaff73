"""The print for given shapes of batched programs (``vmap``; ``hessian``, ``jacfwd``, ``jacrev``:
one batched JVP or VJP): ``srcjax.batched``'s helpers whose effect the recorded shapes decide are
written as what they do (srcjax/transforms/specialized_batch.py), and what is printed is still the
program that runs (checked as tests/test_specialized_print.py checks it: NumPy against the generic
program run by NumPy, XLA bit for bit, StableHLO or optimized HLO)."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

import srcjax
from srcjax.batched import batch_matmul
from srcjax.transforms import specialized_batch
from tests.test_readable import LOSSES, _args
from tests.test_specialized_print import check, transformed


def mse(w, x, y):
    p = np.tanh(x @ w)
    return np.mean((p - y) ** 2)


def _calls(text: str, prefix: str) -> list[str]:
    return re.findall(rf"\b{prefix}\w*\(", text)


def test_vmap_of_grad_prints_no_batch_helper() -> None:
    """Issue 20's example: ``batch_align_b(p, y) - batch_align_b(y, p)``, ``batch_align(ones_like_1,
    2) / 2 * 2``, ``batch_unbroadcast(mul_1, p, True, True)``, ``batch_matmul(x, w, True, False)`` and
    a dead ``reduced_size_vmap`` call (with its helpers) were printed; now none is."""
    w, x, y = np.linspace(-1, 1, 6).reshape(3, 2), np.linspace(0, 2, 15).reshape(5, 3), np.ones((5, 2))
    f = srcjax.vmap(srcjax.grad(mse), in_axes=(None, 0, 0))
    text = srcjax.source(f, w, x, y)
    assert _calls(text, "batch_") == [], text
    assert "reduced_size" not in text and "range(" not in text and "x @ w" in text, text
    assert "batch_align" in srcjax.source(f)  # (the generic program aligns)
    assert check(f, (w, x, y)) in ("stablehlo", "optimized")


def _transformed(name: str, kind: str):
    f, args = LOSSES[name], _args(name, np.random.default_rng(0))
    if kind == "vmap_grad":
        return srcjax.vmap(srcjax.grad(f)), tuple(np.stack([a, a[::-1] if a.ndim else a]) for a in args)
    if kind == "hessian":
        return srcjax.hessian(f), args
    return getattr(srcjax, kind)(srcjax.grad(f)), args


NAMES = [n for n in LOSSES if n != "mlp"]  # (mlp: a pytree of weights, which these transforms refuse)
NO_ALIGN = ("sigmoid_cross_entropy", "log_cosh", "pseudo_huber", "poisson_nll")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", ["vmap_grad", "hessian", "jacrev"])
def test_batched_derivatives_print_specialized_and_run(name, kind) -> None:
    """Each loss's batched derivative prints for its shapes (huber's ``jacrev`` is the one printed
    generic: its ``where`` branches), with fewer batched helpers than the generic program, none
    for the elementwise losses, and is the program that runs."""
    f, args = _transformed(name, kind)
    level = check(f, args)
    if (name, kind) == ("huber", "jacrev"):
        return
    assert level in ("stablehlo", "optimized")
    text, generic = srcjax.source(f, *args), srcjax.source(f)
    assert len(_calls(text, "batch_")) < len(_calls(generic, "batch_"))
    if name in NO_ALIGN:
        assert _calls(text, "batch_align") == [], text


def test_batch_matmul_is_matmul_where_the_rule_says_so() -> None:
    """``batch_matmul(x1, x2, b1, b2)`` printed as ``x1 @ x2`` (or as the helper's own expression
    where its ranks need no new axes) only where that is the helper's result, for every batching
    and per-example rank up to 3."""
    import libcst as cst

    rng = np.random.default_rng(0)
    dims = {0: (), 1: (4,), 2: (3, 4), 3: (2, 3, 4)}
    seen = plain = 0
    for b1, b2, r1, r2 in itertools.product((True, False), (True, False), (1, 2, 3), (1, 2, 3)):
        s1, s2 = dims[r1], dims[r2]
        if r2 >= 2:
            s2 = s2[:-2] + (4, 5)
        s1, s2 = ((6,) if b1 else ()) + s1, ((6,) if b2 else ()) + s2
        facts = {"a": ("a", s1, np.dtype(np.float64), False), "b": ("a", s2, np.dtype(np.float64), False)}
        try:
            want = batch_matmul(rng.standard_normal(s1), rng.standard_normal(s2), b1, b2)
        except ValueError:
            continue
        args = [cst.Name("a"), cst.Name("b"), cst.Name(str(b1)), cst.Name(str(b2))]
        ft = ("a", np.shape(want), np.dtype(np.float64), False)
        done = specialized_batch.rewrite_call("batch_matmul", args, ft, facts.get)
        if done is None:
            continue
        assert done[0] == "expr"
        x1, x2 = rng.standard_normal(s1), rng.standard_normal(s2)
        np.testing.assert_array_equal(eval(done[1], {"np": np, "a": x1, "b": x2}),  # noqa: S307
                                      batch_matmul(x1, x2, b1, b2))
        seen += 1
        plain += done[1] == "a @ b"
    assert seen >= 20 and plain >= 5, (seen, plain)


def test_batch_squeeze_is_squeeze_with_the_axes_it_computes() -> None:
    import libcst as cst

    from srcjax.batched import batch_squeeze

    a = np.arange(12.0).reshape(2, 1, 3, 1, 2)
    f = ("a", a.shape, np.dtype(np.float64), False)
    for axis in ("None", "0", "-2", "(0, 2)", "(-2,)"):
        want = batch_squeeze(a, eval(axis))  # noqa: S307
        ft = ("a", want.shape, np.dtype(np.float64), False)
        done = specialized_batch.rewrite_call("batch_squeeze", [cst.Name("a"), cst.parse_expression(axis)], ft,
                                              {"a": f}.get)
        assert done is not None and done[0] == "expr", axis
        np.testing.assert_array_equal(eval(done[1], {"np": np, "a": a}), want)  # noqa: S307


def test_argmax_tile_transpose_and_basic_getitem_are_written_as_what_they_do() -> None:
    """Issue 20 (vmap cases printed generic for the arguments): ``batch_argmax(a, None, False)``,
    ``batch_tile``, ``batch_transpose`` and ``batch_getitem`` with a literal basic key, each against
    the helper on arrays of several ranks; ``batch_tile`` with more reps than axes per example (new
    axes), keepdims, and keys with arrays are left to the helper."""
    import libcst as cst

    from srcjax import batched

    rng = np.random.default_rng(0)
    cases = [("batch_argmax", "None", "False"), ("batch_argmin", "None", "False"), ("batch_tile", "(2, 1)"),
             ("batch_tile", "3"), ("batch_transpose", "None"), ("batch_transpose", "(1, 0)"),
             ("batch_getitem", "0"), ("batch_getitem", "-1"), ("batch_getitem", "np.s_[::2, 1::3]"),
             ("batch_getitem", "np.s_[..., None, -1]")]
    done_any = 0
    for shape in ((4, 3), (4, 3, 5), (2, 4, 3, 5)):
        a = rng.standard_normal(shape)
        f = ("a", a.shape, np.dtype(np.float64), False)
        for fn, *rest in cases:
            try:
                want = getattr(batched, fn)(a, *[eval(r, {"np": np}) for r in rest])  # noqa: S307
            except (ValueError, IndexError, TypeError):
                continue
            ft = ("a", np.shape(want), np.asarray(want).dtype, False)
            done = specialized_batch.rewrite_call(fn, [cst.Name("a"), *map(cst.parse_expression, rest)], ft,
                                                  {"a": f}.get)
            if done is None:
                assert fn == "batch_tile" and len(eval(rest[0]) if "(" in rest[0] else (1,)) > len(shape) - 1 \
                    or fn == "batch_transpose" and rest[0] != "None" and len(shape) != 3, (fn, rest, shape)
                continue
            np.testing.assert_array_equal(eval(done[1], {"np": np, "a": a}), want)  # noqa: S307
            done_any += 1
    assert done_any >= 25, done_any
    a = ("a", (4, 3, 5), np.dtype(np.float64), False)
    for fn, rest in (("batch_argmax", ["None", "True"]), ("batch_getitem", ["np.s_[[0, 1], :, [1, 2]]"]),
                     ("batch_getitem", ["k"]), ("batch_tile", ["(2, 2, 2)"])):
        assert specialized_batch.rewrite_call(fn, [cst.Name("a"), *map(cst.parse_expression, rest)],
                                              ("a", (4,), np.dtype(np.int64), False), {"a": a}.get) is None, fn


def test_vmap_cases_with_those_helpers_print_specialized() -> None:
    """The corpus programs that printed generic for their arguments for want of those rules."""
    from tests.corpus_programs import CORPUS

    cases = {c.name: c for c in CORPUS}
    for name in ("argmax_argmin", "flip_tile_repeat", "transposes"):
        f, args = transformed(cases[name].fn, "vmap", tuple(cases[name].args(np.random.default_rng(11))))
        text = srcjax.source(f, *args)
        assert text != srcjax.source(f) and "batch_" not in text, text
        assert check(f, tuple(args)) in ("stablehlo", "optimized"), name


def test_identity_rules_need_a_batched_operand() -> None:
    """``batch_unbroadcast(g, x, False, True)`` of an unbatched ``g`` with the result's shape is not
    ``g`` (it sums each example and repeats it): no rule applies."""
    import libcst as cst

    f = ("a", (3,), np.dtype(np.float64), False)
    args = [cst.Name("g"), cst.Name("x"), cst.Name("False"), cst.Name("True")]
    assert specialized_batch.rewrite_call("batch_unbroadcast", args, f, {"g": f}.get) is None
    args[2] = cst.Name("True")
    assert specialized_batch.rewrite_call("batch_unbroadcast", args, f, {"g": f}.get) == ("same", "g")
    two = ("a", (3, 1), np.dtype(np.float64), False)
    assert specialized_batch.rewrite_call("batch_align", [cst.Name("g"), cst.Name("y")], two, {"g": f}.get) is None


def test_functions_nothing_calls_are_dropped_and_impure_ones_kept() -> None:
    generic = ("def f(x):\n    a = g(x)\n    return h(x)\n\n\ndef g(x):\n    return x\n\n\n"
               "def h(x):\n    return x\n")
    text = "def f(x):\n    return h(x)\n\n\ndef g(x):\n    return x\n\n\ndef h(x):\n    return x\n"
    assert specialized_batch.without_unused(text, generic) == "def f(x):\n    return h(x)\n\n\ndef h(x):\n    return x\n"
    assert specialized_batch.without_unused(generic, generic) == generic


def test_a_parameter_named_like_a_function_is_not_a_call_of_it() -> None:
    """A helper's parameter ``g`` (``batch_unbroadcast(g, ...)``) read in its body is not a call of the user's
    function ``g``: ``g`` stays a root, and what it reaches stays (everything was dropped, the entry too)."""
    generic = ("def g(x):\n    return f(x)\n\n\ndef f(x):\n    return helper(x, x)\n\n\n"
               "def helper(g, x):\n    h = lambda f: f + g\n    return h(x)\n\n\ndef unused(x):\n    return x\n")
    text = generic.replace("return f(x)\n", "return helper(x, x)\n")
    assert specialized_batch.without_unused(text, generic) == (
        "def g(x):\n    return helper(x, x)\n\n\ndef helper(g, x):\n    h = lambda f: f + g\n    return h(x)\n\n\n"
        "def unused(x):\n    return x\n")


def test_a_function_that_stores_into_an_array_or_calls_out_is_not_pure() -> None:
    import libcst as cst

    def effects(src: str) -> bool:
        v = specialized_batch._Effects({"h"})
        v.walk(cst.parse_module(src).body[0])
        return v.ok

    assert effects("def f(a):\n    n = len(a)\n    for i in range(n):\n        a2 = h(a) * i\n    return np.sum(a2)\n") \
        is False  # (len, range: builtins are not in the set given here)
    assert effects("def f(a):\n    b = np.ones(3)\n    c = h(a, b)\n    return c\n")
    assert not effects("def f(a):\n    a[0] = 1.0\n    return a\n")
    assert not effects("def f(a):\n    a.x = 1.0\n    return a\n")
    assert not effects("def f(a):\n    print(a)\n    return a\n")
    assert not effects("def f(a):\n    def g():\n        return a\n    return g()\n")


def counted_break(w, x):
    for _ in range(4):
        if x < 0.0:
            break
        x = np.sqrt(w * x) - 0.5
    return x


def test_taken_marks_on_integer_and_boolean_leaves_are_not_printed() -> None:
    """A batched loop marks its carry with the examples still running (``taken(leaf, running)``), its
    counter and its break flag too: the batcher does not know dtypes. For given shapes those marks
    (on an integer, a boolean: nothing to mask) are not printed; the float leaf's stays."""
    import libcst as cst

    f = srcjax.vmap(counted_break, in_axes=(None, 0))
    args = (1.5, np.array([9.0, 0.3, 30.0, -1.0]))
    generic, text = srcjax.source(f), srcjax.source(f, *args)
    assert re.search(r"taken\(carry_\d+\[1\], running\)", generic) and \
        re.search(r"taken\(carry_\d+\[2\], running\)", generic), generic
    assert not re.search(r"taken\(carry_\d+\[[12]\]", text) and re.search(r"taken\(carry_\d+\[0\], running\)", text), \
        text
    assert check(f, args) in ("stablehlo", "optimized")
    flags = [cst.Name("i"), cst.Name("running")]
    for dtype, rule in ((np.int64, ("same", "i")), (np.bool_, ("same", "i")), (np.float64, None)):
        fact = ("a", (4,), np.dtype(dtype), False)
        assert specialized_batch.rewrite_call("taken", flags, fact, {"i": fact}.get) == rule
