"""frontend/cst_printer.py writes what libcst's code generation writes, for every node it writes.

The corpus test prints, with libcst, every node ``names.code`` printed while a sample of the golden corpora
(every transformation is in it; all of them in the thorough tier) is written, and compares. The other tests
read the defaults libcst fills in (a comma, a keyword's ``=``, ``return``'s space) on nodes made without them.
"""

from __future__ import annotations

import zlib
from typing import Any

import libcst as cst
import pytest

from srcjax.frontend import cst_printer, names
from srcjax.frontend.cst_expressions import parse_expression
from tests.golden import cases, render
from tests.tiers import THOROUGH

_CASES = [c for c in cases() if THOROUGH or zlib.crc32(c[0].encode()) % 40 == 11]


def _libcst(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


@pytest.mark.parametrize("name,fn,transform", _CASES, ids=[c[0] for c in _CASES])
def test_the_printer_writes_libcsts_text(name, fn, transform, monkeypatch) -> None:
    written = [0]

    def checked(node: Any) -> str | None:
        text = cst_printer.fast_code(node)
        if text is not None:
            written[0] += 1
            assert text == _libcst(node), f"{type(node).__name__} in {name}"
        return text

    monkeypatch.setattr(names, "fast_code", checked)
    names._CODE.clear()  # (nothing printed before is read from the memo)
    render(fn, transform)


_TEXTS = ["x", "(x)", "( x )", "np.tanh(x)", "f(a, b=2, *c, **d)", "f(a,)", "a[1:]", "a[::2]", "a[1:2:3, None]",
          "a[:, i]", "a[...]", "(a,)", "(a, b)", "()", "[a, b]", "[]", "-x", "not x", "~x", "x if c else -y",
          "a < b <= c", "a is not b", "a not in b", "a and (b or c)", "x ** -2.5", "1j * x", "'s' + x",
          "f(x)(y)[0].T", "((a + b)) * c"]


@pytest.mark.parametrize("text", _TEXTS)
def test_parsed_expressions(text: str) -> None:
    for node in (cst.parse_expression(text), parse_expression(text)):
        assert cst_printer.fast_code(node) == _libcst(node) == text


@pytest.mark.parametrize("text", ["x = f(a)\n", "a = b = 1\n", "x += 1\n", "return\n", "return x, y\n",
                                  "assert np.ndim(x) == 0, 'm'\n", "f(x); g(y)\n", "x = 1  \n", "x[i] = y\n"])
def test_parsed_statements(text: str) -> None:
    node = cst.parse_statement(text)
    assert cst_printer.fast_code(node) == _libcst(node) == text
    assert isinstance(node, cst.SimpleStatementLine)
    for small in node.body:  # (alone: without its line's semicolon and end)
        assert cst_printer.fast_code(small) == _libcst(small)


@pytest.mark.parametrize("text", ["a[1:]", "a[::2]", "a[1:2:3, None]", "a[:, i]", "a[ 1 : n ]", "a[i:j:]", "a[*b]"])
def test_subscript_elements_alone(text: str) -> None:
    """A subscript's ``Slice`` and ``Index`` printed on their own (``anf``'s index keys print each): libcst's text,
    not libcst's printer (a slice alone cost ~80 calls through it)."""
    for e in cst.parse_expression(text).slice:  # type: ignore[attr-defined]
        assert cst_printer.fast_code(e.slice) == _libcst(e.slice)


def test_defaults_of_made_nodes() -> None:
    """Nodes made without their commas, ``=`` or spaces: the defaults libcst writes."""
    a, b = cst.Name("a"), cst.Name("b")
    made = [
        cst.Call(func=cst.Name("f"), args=[cst.Arg(a), cst.Arg(b, keyword=cst.Name("k"))]),
        cst.Tuple(elements=[cst.Element(a)]),
        cst.Tuple(elements=[cst.Element(a), cst.Element(b)], lpar=[], rpar=[]),
        cst.List(elements=[cst.Element(a), cst.Element(b)]),
        cst.Subscript(value=a, slice=[cst.SubscriptElement(cst.Slice(lower=None, upper=b, step=cst.Integer("2"))),
                                      cst.SubscriptElement(cst.Index(b))]),
        cst.SimpleStatementLine(body=[cst.Return(value=a), cst.Expr(b)]),
        cst.SimpleStatementLine(body=[cst.Return()]),
        cst.SimpleStatementLine(body=[cst.Assert(test=a, msg=cst.SimpleString("'m'"))]),
        cst.SimpleStatementLine(body=[]),
        cst.Return(value=a, semicolon=cst.Semicolon()), cst.Assign(targets=[cst.AssignTarget(a)], value=b),
        cst.AugAssign(target=a, operator=cst.AddAssign(), value=b),
        cst.Slice(lower=a, upper=None, step=b), cst.Slice(lower=None, upper=None), cst.Index(a),
        cst.BinaryOperation(left=a, operator=cst.Add(), right=b, lpar=[cst.LeftParen()], rpar=[cst.RightParen()]),
    ]
    for node in made:
        assert cst_printer.fast_code(node) == _libcst(node)


def test_other_nodes_are_libcsts() -> None:
    """A comment, a line break inside brackets, a leading empty line, a node type not written: None."""
    for node in (cst.parse_expression("f(a,\n  b)"), cst.parse_expression("[x for x in y]"),
                 cst.parse_expression("f'{x}'"), cst.parse_statement("x = 1  # c\n"),
                 cst.parse_module("x = 1\n\ny = 2\n").body[1], cst.parse_statement("if x:\n    pass\n")):
        assert cst_printer.fast_code(node) is None
    assert names.code(cst.parse_expression("[x for x in y]")) == "[x for x in y]"
