"""Shared ``ast`` trees of generated text (srcjax.frontend.parsed) and remembered walks
(srcjax.frontend.ast_walk.walked): the passes that share them must leave them as they found them,
and a remembered walk is ``ast.walk`` exactly."""

from __future__ import annotations

import ast

import numpy as np
import pytest

import srcjax
from srcjax.adjoint import __all__ as ADJOINT_IMPORTS
from srcjax.autodiff import derivative_function
from srcjax.batched import __all__ as BATCHED_IMPORTS
from srcjax.frontend import parsed
from srcjax.frontend.ast_walk import walk_ast, walked
from srcjax.frontend.read import anf_text
from srcjax.transforms import readable, readable_facts, readable_names
from srcjax.transforms.simplify import simplify_source


def _loss(w, x, y):
    p = np.tanh(x @ w)
    d = p - y
    return np.mean(d ** 2) + 0.5 * np.sum(w * w) * 2


def _module(fn) -> str:
    text = anf_text(fn)
    assert text is not None
    return "import numpy as np\nfrom srcjax.adjoint import *\nfrom srcjax.batched import *\n\n\n" + text


def _dump(tree: ast.AST) -> str:
    return ast.dump(tree, include_attributes=True)


def test_the_same_text_gives_the_same_tree_and_another_text_another() -> None:
    a = "def f(x):\n    return x + 1\n"
    assert parsed.parse(a) is parsed.parse("".join(list(a)))
    assert parsed.parse(a) is not parsed.parse(a.replace("1", "2"))
    assert _dump(parsed.parse(a)) == _dump(ast.parse(a))


def test_a_syntax_error_names_the_file_and_is_not_kept() -> None:
    try:
        parsed.parse("def f(:\n", "<srcjax.bad #1>")
    except SyntaxError as e:
        assert e.filename == "<srcjax.bad #1>"
    else:  # pragma: no cover
        raise AssertionError("parsed a syntax error")
    assert "def f(:\n" not in parsed._TREES


def test_only_the_last_texts_are_kept() -> None:
    texts = [f"x = {k}\n" for k in range(parsed.KEPT + 3)]
    for t in texts:
        parsed.parse(t)
    assert texts[-1] in parsed._TREES and texts[0] not in parsed._TREES
    assert len(parsed._TREES) <= parsed.KEPT


def test_the_passes_that_share_a_tree_leave_it_as_they_found_it() -> None:
    w, x, y = np.ones((3, 2)), np.ones((4, 3)), np.ones((4, 2))
    texts = [_module(srcjax.grad(_loss)), _module(derivative_function(_loss, "jvp"))]
    g = srcjax.vmap(srcjax.grad(_loss), in_axes=(None, 0, 0))
    g(w, x[None].repeat(2, 0), y[None].repeat(2, 0))
    texts.append(_module(g.fn))
    pure = set(ADJOINT_IMPORTS) | set(BATCHED_IMPORTS)
    for text in texts:
        tree = parsed.parse(text)
        before = _dump(tree)
        steps = [simplify_source(text, pure, {}), readable_facts.guard_rewrites(text),
                 readable.readable_source(text, pure, frozenset({"w", "x", "y", "p", "d"})),
                 readable.tidy(text), readable_names.renumber(text)]
        assert parsed.parse(text) is tree and _dump(tree) == before
        for s in steps:  # each pass's output parsed fresh gives what it gives from the shared tree
            assert _dump(parsed.parse(s)) == _dump(ast.parse(s))


def test_a_remembered_walk_is_ast_walk() -> None:
    tree = ast.parse("def f(x, y):\n    a = np.sum(x[1:] * y) - (lambda z: z + 1)(x)\n    return [a, {1: a}]\n")
    for node in ast.walk(tree):
        assert walked(node) == list(ast.walk(node)) == list(walk_ast(node))
    assert walked(tree) is walked(tree)
    other = ast.parse("def f(x, y):\n    return x\n")
    assert walked(other) == list(ast.walk(other)) and walked(other) is not walked(tree)


def test_the_same_generated_text_shares_its_tree_and_keeps_its_own_place() -> None:
    """A generated function whose text another generated module already had (a batched helper's copy,
    a Jacobian's wrapper) is read from the same libcst tree and positions; spans stay its own."""
    from srcjax.frontend.read import read_function
    from srcjax.generated import load_module

    body = "def g_shared_1(x):\n    y = x * 2.0\n    return y + 1.0\n"
    found = []
    for k, pad in ((1, ""), (2, "\n\n\ndef other(z):\n    return z\n\n\n")):
        name = f"<srcjax.test shared #{k}>"
        ns: dict = {"np": np}
        exec(load_module(name, "import numpy as np\n\n\n" + pad + body, {}), ns)
        found.append((name, read_function(ns["g_shared_1"])))
    (na, a), (nb, b) = found
    assert a.fdef is b.fdef and a.positions is b.positions
    sa, sb = a.def_span(), b.def_span()
    assert (sa.filename, sb.filename) == (na, nb)
    assert (sa.line, sb.line) == (4, 11) and sa.col == sb.col == 4
    assert srcjax.compile(b.fn)(np.float64(2.0)) == 5.0


def test_parse_module_without_validation_is_libcsts_parse():
    """read.parse_module skips libcst's per-node checks while it parses: the same tree as
    ``cst.parse_module``, the same syntax errors, and the checks are back afterwards."""
    import libcst as cst
    import pytest

    from srcjax.frontend.read import parse_module

    text = _module(derivative_function(_loss, "grad", (0,)))
    assert parse_module(text).deep_equals(cst.parse_module(text))
    assert parse_module(text).code == text
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("def f(x:\n    return x\n")
    with pytest.raises(cst.CSTValidationError):  # (validation restored, after an error too)
        cst.Name("not a name")


def test_text_passes_remember_their_inputs():
    """simplify_source and readable_source are functions of their arguments: a repeated input is
    answered from memory with the same text; another argument is another entry."""
    from srcjax.transforms import simplify

    text = _module(derivative_function(_loss, "grad", (0,)))
    pure = set(ADJOINT_IMPORTS)
    a = simplify_source(text, pure)
    hits = simplify._simplified.cache_info().hits
    assert simplify_source(text, set(pure)) == a and simplify._simplified.cache_info().hits == hits + 1
    assert simplify_source(text, pure, keep=frozenset({"w"})) == simplify_source(text, pure, keep=frozenset({"w"}))
    r = readable.readable_source(a, pure)
    assert readable.readable_source(a, set(pure)) == r
    assert readable.readable_source(a, pure, tidy_constants=False) is not None


# texts of the kinds the batcher and activity analysis ask about (names, numbers, literals, calls, ...)
_EXPRESSIONS = [
    "x", "x_bar", "True", "False", "None", "match", "_", "2", "-2", "1_000", "2.5", "1e-12", "1j", "'a'", "b'a'",
    "'a' 'b'", "f'{x}'", "...", "(x)", "((x))", "(2)", "x, y", "(x, y)", "(x,)", "()", "[x, y[0]]", "[]",
    "{'w': w, 'b': b}", "{**d}", "{'w': w, **d}", "{x}", "np.sum(x * y, axis=0)", "x[0]", "x[1:, None]", "x.T",
    "x.shape[0]", "x + y", "-x", "not x", "x if c else y", "lambda: x", "[v for v in xs]", "(v for v in xs)",
    "(a := 1)", "*a", "a := 1", "", " x", "x  ", "def", "if", "(", "x +", "x.shape", "np.s_[1:]",
]


def _libcst_parts(expr: str):  # (batch_state._parts before its ast fast path)
    import libcst as cst

    from srcjax.frontend.names import code

    if expr.isidentifier():
        return None
    try:
        node = cst.parse_expression(expr)
    except Exception:
        return None
    if isinstance(node, (cst.Tuple, cst.List)):
        return tuple((str(i), code(e.value)) for i, e in enumerate(node.elements))
    if isinstance(node, cst.Dict) and all(isinstance(e, cst.DictElement) for e in node.elements):
        return tuple((code(e.key), code(e.value)) for e in node.elements if isinstance(e, cst.DictElement))
    return None


def _libcst_paren(text: str) -> str:  # (batch_call._paren before its ast fast path)
    import libcst as cst

    try:
        node = cst.parse_expression(text)
    except Exception:
        return f"({text})"
    if isinstance(node, (cst.Name, cst.Integer, cst.Float, cst.Call, cst.Subscript, cst.Attribute)):
        return text
    return f"({text})"


def _libcst_names(text: str) -> list[str]:  # (names.text_names before its fast paths: batch._names)
    import libcst as cst

    from srcjax.frontend.names import names_in

    try:
        return names_in(cst.parse_expression(text))
    except Exception:
        return []


def _libcst_seq_names(v: str) -> list[str]:  # (activity._seq_names of a text before its fast paths)
    import libcst as cst

    from srcjax.frontend.names import comprehension_targets
    from srcjax.transforms.activity import _ArrayNames

    try:
        node = cst.parse_expression(v)
    except Exception:
        return []
    reads = _ArrayNames()
    reads.walk(node)
    return [n for n in reads.out if n not in comprehension_targets(node)]


def test_ast_answers_the_questions_libcst_answered() -> None:
    """The text queries that read a small expression with ``ast`` first (``parsed.expression``: ten times
    cheaper than libcst's parse) answer as when libcst parsed every text."""
    from srcjax.frontend.names import text_names
    from srcjax.transforms import activity, batch_call, batch_state

    for text in _EXPRESSIONS:
        assert batch_state._parts(text) == _libcst_parts(text), text
        assert batch_call._paren(text) == _libcst_paren(text), text
        assert text_names(text) == _libcst_names(text), text
        assert activity._seq_names(text) == _libcst_seq_names(text), text


def test_exact_kinds_are_isinstance_for_parsed_nodes() -> None:
    """The passes test node kinds by exact type (``type(n) in kinds``, ``ast_walk.exact_kinds``): the same as
    ``isinstance`` only for classes no other class derives from, which ``exact_kinds`` checks (``ast.Constant``
    has the deprecated ``ast.Num``; ``ast.expr`` is abstract); over the walk of a module with every kind the
    passes test, both tests agree on every node."""
    from srcjax.frontend.ast_walk import exact_kinds
    from srcjax.transforms import readable, readable_facts, readable_names, simplify, simplify_syntax

    for bad in (ast.Constant, ast.expr, ast.stmt, int):
        with pytest.raises(TypeError):
            exact_kinds(bad)
    sets = [readable._GLOBALS, readable._DEFS, readable._IMPURE, simplify._BUILD_KINDS, simplify._GLOBALS,
            simplify_syntax._SCOPE_KINDS, readable_facts._NESTED_KINDS, readable_names._NOT_PLAIN]
    tree = ast.parse(
        "import a.b as c\nglobal g\n@d\nclass K:\n    pass\n"
        "async def h(x, *a, **k):\n    nonlocal q\n    async for i in y:\n        await z\n    async with w:\n"
        "        yield x\n    yield from v\n"
        "def f(x, y=1):\n    if (n := x):\n        y += 1\n    while x:\n        break\n    for i in x:\n"
        "        continue\n    try:\n        pass\n    except E as e:\n        pass\n    with o:\n        pass\n"
        "    match x:\n        case [1, *r]:\n            pass\n        case {'a': 1, **rest}:\n            pass\n"
        "    return [i for i in x], {i for i in x}, {i: i for i in x}, (i for i in x), lambda t: t, f'{x}', "
        "[*x], {**x}, {1}, {}, -x, x.a[1:2], g(*x, k=1)\n")
    nodes = list(ast.walk(tree))
    for kinds in sets:
        classes = tuple(kinds)
        assert any(type(n) in kinds for n in nodes), classes  # (the module has one of each set at least)
        assert [isinstance(n, classes) for n in nodes] == [type(n) in kinds for n in nodes], classes


def test_a_jvp_s_float_parameters_are_read_from_the_module_the_simplifier_parses(monkeypatch) -> None:
    """The derivative's text with its header: the simplifier's parse of the same text is then the one already made."""
    from srcjax import autodiff
    from srcjax.transforms import simplify

    read_for_floats: list[str] = []
    simplified: list[str] = []
    floats, simplified_source = autodiff._float_parameters, simplify.simplify_source

    def floats_of(text: str, *args: object) -> object:
        read_for_floats.append(text)
        return floats(text, *args)  # type: ignore[arg-type]

    def simplify_of(text: str, *args: object, **kwargs: object) -> str:
        simplified.append(text)
        return simplified_source(text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(autodiff, "_float_parameters", floats_of)
    monkeypatch.setattr(autodiff, "simplify_source", simplify_of)

    def cubic_sum(x):
        return np.sum(x ** 3 - 2.0 * x)

    x = np.linspace(0.5, 1.5, 4)
    np.testing.assert_allclose(np.asarray(srcjax.hessian(cubic_sum)(x)), np.diag(6.0 * x))
    assert read_for_floats and all(t in simplified for t in read_for_floats)
