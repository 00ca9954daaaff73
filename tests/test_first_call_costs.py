"""First calls (issue #15, issue #18 item 4): work a new function's first call no longer does, and
that what runs and what is shown stay the same without it.

- Reading a generated function (a derivative, a batched program) takes its file name from its code:
  ``inspect.getsourcefile`` looked for its module among all of ``sys.modules`` to give back the same
  name (~0.7 ms a function with jax imported); a user's function's lines are read from its file with
  its globals, without ``inspect.getmodule``'s search (the same lines and first line as inspect's).
- vmap's batched copy of a library helper (``matmul_rhs_bar_vmap``) is written once per process for its
  argument states, and written again where the program's names would make another text.
- A generated module is compiled from the ``ast`` tree its registrations parsed (not parsed again).
- A Jacobian of a gradient by an array (`hessian`) knows the gradient's output is an array: its first
  call specialized the whole gradient only to learn that (~3 ms).
- The specializer binds a call that gives every parameter of an all-positional function positionally
  without ``Signature.bind`` (``lower/signatures.py``): the same mapping, and ``bind`` for every other call.
- Writing a gradient makes no reference cycles of srcjax's own (a class per call, a nested function calling
  itself, the reverse-mode writer and its helper-call parts holding each other): what it drops is freed at once,
  not left to the cyclic collector, whose collections then ran more often and scanned more.
- Reverse mode parses its adjoint's lines for the names they read only where a name it asks about is in their
  text (a straight-line gradient: never), and reads a function's names once per tree.
- vmap's align pass walks an assignment for the names it passes to ``batch_align_b`` only where its lines name one.
- A generated module's text with its writers' marks taken off (loaded, split into functions) reads the tree parsed of
  the marked text, where only the marks' comments went: it was parsed twice more (``provenance.unmark``).
"""

from __future__ import annotations

import ast
import gc
import inspect
import linecache

import numpy as np
import pytest

import srcjax
from srcjax.frontend import read
from tests.test_first_call import _fresh_function, _fresh_module

_X = np.linspace(0.25, 1.5, 4)


def test_a_generated_function_is_read_without_a_search_of_the_modules(monkeypatch):
    f = _fresh_function("def f(x):\n    return np.sum(np.cos(x) * x * 1.375)\n")
    g = srcjax.grad(f)
    plain = g.fn
    assert read.is_generated(plain)
    asked: list[object] = []
    real = inspect.getsourcefile
    monkeypatch.setattr(inspect, "getsourcefile", lambda obj: asked.append(obj) or real(obj))
    read._CACHE.set(plain, (plain.__code__, id(plain.__globals__)), None)  # (read again)
    src = read.read_function(plain)
    assert asked == []
    assert src.filename == plain.__code__.co_filename and src.filename.startswith("<srcjax.")
    assert src.fdef.name.value == plain.__name__
    # the user's own function is still found in its file
    user = read.read_function(f)
    assert user.filename == inspect.getsourcefile(f) and asked
    np.testing.assert_allclose(np.asarray(srcjax.hessian(f)(_X)),
                               np.diag((-2 * np.sin(_X) - _X * np.cos(_X)) * 1.375), rtol=1e-6, atol=1e-12)


def test_a_hessian_learns_its_gradients_output_is_an_array_without_specializing_it(monkeypatch):
    from srcjax import jacobian

    asked: list[object] = []
    real = jacobian.eval_shape
    monkeypatch.setattr(jacobian, "eval_shape", lambda fn, *a, **k: asked.append(fn) or real(fn, *a, **k))
    f = _fresh_function("def f(x, y):\n    return np.sum(np.sin(x) ** 2 * y * 1.125)\n")
    y = _X[::-1].copy()
    np.testing.assert_allclose(np.asarray(srcjax.hessian(f)(_X, y)), np.diag(2 * np.cos(2 * _X) * y * 1.125),
                               rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(np.asarray(srcjax.hessian(f, 1)(_X, y)), np.zeros((4, 4)), atol=1e-12)
    mixed = srcjax.jacfwd(srcjax.grad(f, 1), 0)(_X, y)  # (the gradient by y, differentiated by x)
    np.testing.assert_allclose(np.asarray(mixed), np.diag(np.sin(2 * _X) * 1.125), rtol=1e-6, atol=1e-12)
    assert asked == []
    # what is not a gradient by an array is still specialized to learn its output's structure
    g = _fresh_function("def f(x):\n    return {'a': np.sin(x) * 0.875}\n")
    out = srcjax.jacfwd(g)(_X)
    np.testing.assert_allclose(np.asarray(out["a"]), np.diag(np.cos(_X) * 0.875), rtol=1e-6, atol=1e-12)
    assert len(asked) == 1
    # an output that is not a scalar: the gradient's path fails, then JAX's hessian, jacfwd(jacrev(f))
    vector = _fresh_function("def f(x):\n    return np.sin(x) * 2.0\n")
    want = np.zeros((4, 4, 4))
    want[np.arange(4), np.arange(4), np.arange(4)] = -2.0 * np.sin(_X)
    np.testing.assert_allclose(np.asarray(srcjax.hessian(vector)(_X)), want, rtol=1e-6, atol=1e-12)


def _decorated(fn):
    return fn


class _Holder:
    @staticmethod
    @_decorated
    def method(x):  # a comment
        return x + 1


def test_a_users_function_is_read_as_inspect_reads_it_without_a_search_of_the_modules(monkeypatch):
    def nested(x,
               y):
        return x * y

    mod = _fresh_module("""
        def f(x):
            return np.sin(x) * 0.625


        def g(x):
            def inner(y):
                return y * 2
            return inner(x) + 1.0
        """)
    fns = [mod.f, mod.g, nested, _Holder.method, _decorated, test_a_hessian_learns_its_gradients_output_is_an_array_without_specializing_it]
    want = {fn: (inspect.getsourcelines(fn.__code__), inspect.getsourcefile(fn.__code__)) for fn in fns}
    real = inspect.getmodule
    asked: list[object] = []
    monkeypatch.setattr(inspect, "getmodule", lambda *a, **k: asked.append(a) or real(*a, **k))
    for fn in fns:
        lines, start, filename = read._file_lines(fn, fn.__code__)
        assert ((lines, start), filename) == want[fn], fn
    assert asked == []
    for fn in (mod.f, mod.g):
        read._CACHE.set(fn, (fn.__code__, id(fn.__globals__)), None)
        src = read.read_function(fn)
        assert src.fdef.name.value == fn.__name__ and src.filename == mod.__file__
        assert src.def_span().line == fn.__code__.co_firstlineno
    assert asked == []
    np.testing.assert_allclose(np.asarray(srcjax.grad(lambda x: np.sum(mod.g(x)))(_X)), np.full(4, 2.0))


# ------------------------------------------------------------------------------------------------
# vmap's copies of library helpers (srcjax/transforms/batch_copies.py)
# ------------------------------------------------------------------------------------------------

_LOSS = """
def {name}(w, x, y):
    h = np.tanh(x @ w)
    return np.sum((h - y) ** 2 * {c}) + np.max(h)
"""


def _per_example(fn):
    return srcjax.vmap(srcjax.grad(fn), in_axes=(None, 0, 0))


def test_a_library_helpers_batched_copy_is_written_once_and_reads_the_same(monkeypatch, tmp_path):
    from srcjax.transforms import batch_copies

    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))  # (no copy an earlier test stored)
    rng = np.random.default_rng(3)
    w, x, y = rng.standard_normal((5, 3)), rng.standard_normal((6, 5)), rng.standard_normal((6, 3))
    batch_copies.clear()
    written: list[str] = []
    from srcjax.transforms.batch import Batcher

    real = Batcher.write_function
    monkeypatch.setattr(Batcher, "write_function",
                        lambda self, nf, *a, **k: written.append(nf.name) or real(self, nf, *a, **k))
    f1 = _fresh_function(_LOSS.format(name="f", c="0.75"))
    first = srcjax.source(_per_example(f1))
    assert "matmul_rhs_bar_vmap" in first and "max_bar_vmap" in first
    helpers = [n for n in written if n != "f_grad"]
    assert helpers
    written.clear()
    f2 = _fresh_function(_LOSS.format(name="f", c="0.5"))
    second = srcjax.source(_per_example(f2))
    assert [n for n in written if n != "f_grad"] == []  # (each copy was written by the first program)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def ref(w, x, y):
        h = jnp.tanh(x @ w)
        return jnp.sum((h - y) ** 2 * 0.5) + jnp.max(h)

    want = jax.vmap(jax.grad(ref), in_axes=(None, 0, 0))(w, x, y)
    np.testing.assert_allclose(np.asarray(_per_example(f2)(w, x, y)), np.asarray(want), rtol=1e-10, atol=1e-12)
    # written again, the copies are the same text
    batch_copies.clear()
    f3 = _fresh_function(_LOSS.format(name="f", c="0.5"))
    assert srcjax.source(_per_example(f3)) == second


def test_a_copy_is_written_again_where_the_programs_names_differ(monkeypatch, tmp_path):
    """A program with a function named like a name in a copy (``mul_1``) writes the copy again (its fresh
    names avoid the program's functions), as it would with no copy kept."""
    from srcjax.transforms import batch_copies
    from srcjax.transforms.batch import Batcher

    monkeypatch.setenv("SRCJAX_CACHE_DIR", str(tmp_path / "cache"))
    rng = np.random.default_rng(4)
    w, x, y = rng.standard_normal((5, 3)), rng.standard_normal((6, 5)), rng.standard_normal((6, 3))
    batch_copies.clear()
    srcjax.source(_per_example(_fresh_function(_LOSS.format(name="f", c="0.25"))))
    text = """
        def mul_1(a):
            return a * 1.0


        def f(w, x, y):
            h = np.tanh(x @ w)
            return np.sum((h - mul_1(y)) ** 2 * 0.25) + np.max(h)
        """
    written: list[str] = []
    real = Batcher.write_function
    monkeypatch.setattr(Batcher, "write_function",
                        lambda self, nf, *a, **k: written.append(nf.name) or real(self, nf, *a, **k))
    mod = _fresh_module(text)
    second = srcjax.source(_per_example(mod.f))
    assert "matmul_rhs_bar" in written, written
    batch_copies.clear()
    assert srcjax.source(_per_example(_fresh_module(text).f)) == second  # (as written with no copy kept)
    got = np.asarray(_per_example(mod.f)(w, x, y))
    eps = 1e-6
    for i in range(2):  # central differences of one example's loss
        num = np.zeros_like(w)
        for j in np.ndindex(w.shape):
            d = np.zeros_like(w)
            d[j] = eps
            num[j] = (mod.f(w + d, x[i], y[i]) - mod.f(w - d, x[i], y[i])) / (2 * eps)
        np.testing.assert_allclose(got[i], num, rtol=1e-5, atol=1e-7)


def test_a_generated_module_is_compiled_from_its_tree_as_from_its_text():
    from srcjax.frontend import parsed
    from srcjax.generated import load_module

    f = _fresh_function("def f(x):\n    y = np.tanh(x) * 0.375\n    return np.sum(y * y)\n")
    g = srcjax.grad(f).fn
    text = "".join(linecache.getlines(g.__code__.co_filename))
    assert "def f_grad(" in text
    tree = parsed.parse(text, "<srcjax.test compiled from its tree>")
    before = ast.dump(tree, include_attributes=True)
    code = load_module("<srcjax.test compiled from its tree>", text, {})
    assert code == compile(text, "<srcjax.test compiled from its tree>", "exec")
    mine = [c for c in code.co_consts if hasattr(c, "co_code")]
    theirs = [c for c in compile(text, "<srcjax.test compiled from its tree>", "exec").co_consts if hasattr(c, "co_code")]
    assert mine and [list(c.co_positions()) for c in mine] == [list(c.co_positions()) for c in theirs]
    assert ast.dump(tree, include_attributes=True) == before  # (the shared tree is unchanged)


def _pos(a, b=2.0, /, c=3):
    return a


def _kwonly(a, *, k=1):
    return a


def _star(a, *rest):
    return a


def _kw(a, **kw):
    return a


def test_plain_names_read_off_the_code_are_the_signatures():
    """``plain_names`` reads a Python function's positional parameters off its code: the same names (or None)
    as ``inspect.signature`` gives, for every kind of parameter list, a wrapper (``functools.wraps``: the
    wrapped function's), a function with ``__signature__`` set, a lambda, a closure and callables that are
    not Python functions."""
    import functools
    import inspect

    from srcjax.lower.signatures import plain_names, signature_of

    def closure(x, y=1):
        return x + y + len(_X)

    @functools.wraps(_pos)
    def wrapper(*args, **kwargs):
        return _pos(*args, **kwargs)

    def signed(*args):
        return args

    signed.__signature__ = inspect.signature(closure)  # type: ignore[attr-defined]

    class Call:
        def __call__(self, a, b):
            return a

        def method(self, a, b=1):
            return a

    for fn in (_pos, _kwonly, _star, _kw, closure, wrapper, signed, lambda: 0, lambda a, /, b: a,
               Call(), Call().method, functools.partial(_pos, 1), np.add, len):
        try:
            want = signature_of(fn)[1]
        except (TypeError, ValueError):  # (no signature: plain_names asks inspect too)
            with pytest.raises((TypeError, ValueError)):
                plain_names(fn)
            continue
        assert plain_names(fn) == want, fn
    assert plain_names(wrapper) == ("a", "b", "c") and plain_names(signed) == ("x", "y")


def test_the_specializers_own_rules_are_no_other_kind_of_callable():
    """``Specializer.call_value`` looks its own rules up first (``len``, ``np.ndim``, ``lax.cond``: half the
    calls a library helper's static code makes), by the function's id: no key may be a primitive, a
    function read like the user's, one srcjax writes in NumPy terms, a NumPy scalar type, a program's
    function or a nested ``def`` (each answered before the rules were)."""
    from srcjax.frontend.normalize import NormalizedFunction
    from srcjax.frontend.resolve import composite, is_user_function
    from srcjax.lower import specialize
    from srcjax.lower.values import LocalFunction
    from srcjax.primitives import registry

    assert len(specialize._RULES_BY_ID) == len(specialize._CALL_RULES) > 20
    for fn, rule in specialize._CALL_RULES.items():
        assert specialize._RULES_BY_ID[id(fn)] == (fn, rule)
        assert registry.lookup(fn) is None and not is_user_function(fn) and composite(fn) is fn, fn
        assert not isinstance(fn, (NormalizedFunction, LocalFunction))
        assert not (isinstance(fn, type) and issubclass(fn, np.generic)), fn


def test_a_call_giving_every_positional_parameter_binds_as_signature_bind_does():
    from srcjax.lower.signatures import signature_of

    assert signature_of(_pos)[1] == ("a", "b", "c")
    for fn in (_kwonly, _star, _kw):  # (bind decides: keyword-only defaults, *args and **kw)
        assert signature_of(fn)[1] is None, fn
    sig, plain = signature_of(_pos)
    assert dict(zip(plain, (1, 2, 3))) == dict(sig.bind(1, 2, 3).arguments)
    assert signature_of(_pos)[0] is sig  # remembered while the defaults are the same objects
    _pos.__defaults__ = (5.0, 6)
    try:
        assert signature_of(_pos)[0] is not sig and signature_of(_pos)[0].parameters["c"].default == 6
    finally:
        _pos.__defaults__ = (2.0, 3)

    def f(x, scale=2.0, *, shift=0.0):
        return helper(x, scale) + shift

    def helper(x, scale=3.0):
        return x * scale

    g = srcjax.jit(f)
    np.testing.assert_allclose(np.asarray(g(_X)), f(_X))  # helper(x, scale): every parameter, positionally
    np.testing.assert_allclose(np.asarray(g(_X, 4.0, shift=1.0)), f(_X, 4.0, shift=1.0))



def test_writing_a_gradient_makes_no_reference_cycles_of_its_own():
    f = _fresh_function("def f(w, x):\n    h = np.tanh(x @ w)\n    return np.sum(h * h) * 0.625\n")
    w, x = np.linspace(0.1, 0.9, 12).reshape(4, 3), np.linspace(-1.0, 1.0, 8).reshape(2, 4)
    gc.collect()
    flags = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)  # (what a collection finds unreachable is kept in gc.garbage, to look at)
    try:
        g = srcjax.grad(f)
        expected = np.asarray(g(w, x))
        del g
        gc.collect()
        found = list(gc.garbage)
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()
    ours = [o for o in found if (getattr(type(o), "__module__", "") or "").startswith("srcjax.transforms.")]
    classes = [o for o in found if isinstance(o, type) and o.__module__.startswith("srcjax")]
    nested = [o for o in found if type(o).__name__ == "function" and o.__module__.startswith("srcjax")
              and "<locals>" in o.__qualname__]
    assert not ours and not classes and not nested, (ours[:5], classes, [o.__qualname__ for o in nested])
    h = np.tanh(x @ w)  # (and the gradient is the same)
    np.testing.assert_allclose(expected, x.T @ (2 * h * (1 - h ** 2)) * 0.625, rtol=1e-12)


def test_the_adjoint_is_parsed_for_its_reads_only_where_a_name_asked_about_is_in_it(monkeypatch):
    from srcjax.transforms import anf

    lines = ["    a_bar = mul_bar * b", "    ab = a_bar + 1.0", "    c[0] = ab"]
    for names in ({"a"}, {"ab"}, {"b", "zz"}, {"c"}, {"a_bar", "ab"}, set(), {"mul"}):
        assert anf.lines_read_of(lines, names) == anf.lines_read(lines) & names, names
    # a straight-line gradient saves no value and binds none on one path only: its adjoint is not parsed again
    calls = []
    monkeypatch.setattr(anf, "lines_read", lambda lines: calls.append(lines) or set())
    f = _fresh_function("def f(x):\n    return np.sum(np.tanh(x) * x * 1.4375)\n")
    np.testing.assert_allclose(srcjax.grad(f)(_X), (1 - np.tanh(_X) ** 2) * _X * 1.4375 + np.tanh(_X) * 1.4375)
    assert calls == []


def test_a_functions_names_are_read_once_per_tree_and_are_names_in():
    import libcst as cst

    from srcjax.frontend.names import names_in
    from srcjax.transforms import anf

    fdef = cst.parse_module("def f(x, y):\n    z = x * y\n    return np.sum(z)\n").body[0]
    got = anf.function_names(fdef)  # type: ignore[arg-type]
    assert got == set(names_in(fdef)) and anf.function_names(fdef) is got  # type: ignore[arg-type]
    other = fdef.with_changes(name=cst.Name("g"))
    assert anf.function_names(other) == set(names_in(other))  # (another tree: its own names)


def test_the_align_pass_walks_only_assignments_that_name_batch_align_b(monkeypatch):
    from srcjax.transforms import batch_aligns

    text = ("def f_vmap(a, b):\n    sin = np.sin(a)\n    mul = batch_align(sin, b) * b\n"
            "    add = batch_align_b(mul, sin) + batch_align_b(sin, mul)\n    sub = batch_align(add, b) - b\n"
            "    return sub\n")
    want = batch_aligns.drop_trivial_aligns(text)
    walked = []
    real = batch_aligns._aligned_b
    monkeypatch.setattr(batch_aligns, "_aligned_b", lambda e: walked.append(ast.unparse(e)) or real(e))
    assert batch_aligns.drop_trivial_aligns(text + "\n") == want + "\n"  # (another text: not a remembered parse)
    assert walked == ["batch_align_b(mul, sin) + batch_align_b(sin, mul)"]  # (not sin's, mul's, sub's)


def _marked_module() -> str:
    """A module as the batch writers mark it (``#@k`` at simple statements' ends)."""
    from srcjax.core import Span
    from srcjax.frontend import provenance

    span = Span("<test marks>", 3, 4, 3, 20)
    lines = ["def f_vmap(x, w):", provenance.mark("    matmul = batch_matmul(w, x, False, True)", span),
             provenance.mark("    tanh = np.tanh(matmul)", span), "    if tanh.ndim:",
             "        tanh = (tanh +", provenance.mark("                1.0)", span), "    return tanh", ""]
    return "\n".join(lines)


def test_an_unmarked_module_reads_its_marked_texts_tree_where_only_comments_went(monkeypatch):
    from srcjax.frontend import parsed, provenance

    text = _marked_module()
    tree = parsed.parse(text)
    parsed_now: list[str] = []
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda src, *a, **k: parsed_now.append(src) or real(src, *a, **k))
    out, lines = provenance.unmark(text, same_tree=True)
    assert "#@" in text and "#@" not in out and sorted(lines) == [2, 3, 6]
    assert parsed.parse(out) is tree and parsed_now == []  # (not parsed again)
    assert ast.dump(tree, include_attributes=True) == ast.dump(real(out), include_attributes=True)
    assert compile(tree, "<t>", "exec") == compile(out, "<t>", "exec")
    # not shared: without same_tree; a mark alone on its line (dropped: the lines below move up); a string that
    # goes on to the next line (a "mark" at its line's end would be the string's text)
    for marked, same in [(text + "\n", False), (text + "    #@0\nz = 1\n", True),
                         (text + 's = """a\nb"""\n', True), (text + "t = 'a\\\n b'\n", True)]:
        parsed.parse(marked)
        out = provenance.unmark(marked, same_tree=same)[0]
        assert parsed.parse(out) is not parsed.parse(marked)
    parsed._TREES.clear()  # (a tree not kept: nothing is parsed, nothing kept)
    parsed_now.clear()
    provenance.unmark(text + "\n\n", same_tree=True)
    assert not parsed._TREES and parsed_now == []


def test_a_first_jacrev_parses_no_batched_module_again_unmarked(monkeypatch):
    from srcjax.frontend import provenance

    f = _fresh_function("def f(x, w):\n    return np.tanh(w @ x) * x * 1.03125\n")
    texts: list[str] = []
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda src, *a, **k: texts.append(src) or real(src, *a, **k))
    x, w = np.linspace(-1, 1, 4), np.linspace(-1, 1, 16).reshape(4, 4) / 4
    got = np.asarray(srcjax.jacrev(f)(x, w))
    t = np.tanh(w @ x)
    np.testing.assert_allclose(got, np.diag(t * 1.03125) + ((1 - t * t) * x * 1.03125)[:, None] * w, rtol=1e-12)
    marked = [s for s in texts if "#@" in s and "def f_vjp_vmap(" in s]
    assert marked  # (the batched VJP's module, as the passes wrote it)
    again = [s for s in texts if "#@" not in s and any(provenance.strip(m) == s for m in marked)]
    assert again == []  # (its unmarked forms, loaded and split into functions, read the marked texts' trees)


_LAZY = {"bta", "tape_zeros", "first_reads", "order"}  # (reverse mode's tables made when a statement first asks)


def test_a_straight_line_gradient_makes_no_binding_times_nor_tape_tables(monkeypatch):
    from srcjax.transforms import reverse_ad

    made = []
    real = reverse_ad.VJP.sweeps

    def sweeps(self, seed):
        got = real(self, seed)
        made.append(_LAZY & set(vars(self.tables)))
        return got

    monkeypatch.setattr(reverse_ad.VJP, "sweeps", sweeps)
    f = _fresh_function("def f(x):\n    return np.sum(np.tanh(x) * x * 1.5625)\n")
    np.testing.assert_allclose(srcjax.grad(f)(_X), (1 - np.tanh(_X) ** 2) * _X * 1.5625 + np.tanh(_X) * 1.5625)
    assert made == [set()]  # (no `if`, no loop, no list appended or popped: none of them asked for)
    # an `if` on data asks for the binding times: the same gradient as written out
    g = _fresh_function("def f(x):\n    s = np.zeros_like(x)\n    for k in range(3):\n        if np.sum(x) > k:\n"
                        "            s = s + np.sin(x * k)\n        else:\n            s = s * 2.0\n"
                        "    return np.sum(s) * 1.5625\n")
    expected = np.zeros_like(_X)
    s = np.zeros_like(_X)
    for k in range(3):
        if np.sum(_X) > k:
            expected, s = expected + np.cos(_X * k) * k, s + np.sin(_X * k)
        else:
            expected, s = expected * 2.0, s * 2.0
    np.testing.assert_allclose(srcjax.grad(g)(_X), expected * 1.5625, rtol=1e-12)
    assert "bta" in made[1], made
    h = _fresh_function("def f(x):\n    out = []\n    for k in range(3):\n        out.append(np.sin(x * k))\n"
                        "    t = out.pop()\n    return np.sum(t + out[0] * out[1]) * 1.5625\n")
    np.testing.assert_allclose(srcjax.grad(h)(_X), 2 * np.cos(2 * _X) * 1.5625, rtol=1e-12)  # (out[0] is zeros)
    assert {"tape_zeros", "first_reads"} <= made[2], made  # (a list appended and popped)


def test_a_gradients_index_keys_are_found_once_and_are_its_bodys(monkeypatch):
    from srcjax.transforms import integer_leaves, reverse_ad, saved_constants

    calls, same = [], []
    real_keys, real_sweeps = integer_leaves.unique_keys, reverse_ad.VJP.sweeps

    def keys(body, params):
        calls.append(len(body))
        return real_keys(body, params)

    def sweeps(self, seed):
        k = real_keys(self.body, self.params)
        same.append((set(k), k.containers, k.held) == (set(self.unique_keys), self.unique_keys.containers,
                                                        self.unique_keys.held))
        return real_sweeps(self, seed)

    monkeypatch.setattr(reverse_ad, "unique_keys", keys)
    monkeypatch.setattr(saved_constants, "unique_keys", keys)
    monkeypatch.setattr(reverse_ad.VJP, "sweeps", sweeps)
    f = _fresh_function("def f(x):\n    y = np.zeros(4)\n    for i in range(4):\n        y[i] = x[i] * x[3 - i]\n"
                        "    return np.sum(y * 1.8125)\n")
    np.testing.assert_allclose(srcjax.grad(f)(_X), 2 * _X[::-1] * 1.8125, rtol=1e-12)
    assert len(calls) == 1 and same == [True], (calls, same)  # (the constants' and the writer's: one body's keys)
