"""Walks of generated code that a first call makes fewer of (issues #15 and #18, first calls), each answering as
the walks it replaced did (over the generated functions of the golden corpora; the readable pass's output is
the goldens' text).

The batch writer's walks of a nested function it writes in line (a branch or a loop step on batched data):

- Whether a statement holds its function's ``return`` is found from its statements, no expression walked.
- The names renamed fresh keep the user's positions of the nodes they stand for (a refusal in the body points
  at the statement), found while renaming, not by a second walk of both trees.
- The names a function shows are dicts are read from its nested functions, found among its statements.

The readable pass: whether a statement is pure, calls with side effects, binds a name or holds a walrus is read
from one walk of the statement (cut from its function's); its value is not walked again on its own.
"""

from __future__ import annotations

import glob
import os
from typing import Any

import libcst as cst
import pytest

from srcjax.frontend import ast_walk
from srcjax.frontend.dict_names import dict_names
from srcjax.frontend.names import renamed, syntax_children, walk
from srcjax.transforms import batch_lax, readable

_GOLDEN = os.path.join(os.path.dirname(__file__), "golden")


def _functions(step: int = 7) -> list[cst.FunctionDef]:
    """The functions (nested ones too) of every ``step``-th golden file that libcst reads."""
    out: list[cst.FunctionDef] = []
    for path in sorted(glob.glob(os.path.join(_GOLDEN, "*.txt")))[::step]:
        with open(path) as f:
            text = f.read()
        try:
            module = cst.parse_module(text)
        except Exception:  # (a golden file that is not one module of Python)
            continue
        out += [n for n in walk(module) if type(n) is cst.FunctionDef]
    return out


def _returns_of_every_node(node: cst.CSTNode) -> bool:
    """(the walk this replaced) every node under ``node``, but a nested function's or lambda's."""
    if type(node) is cst.Return:
        return True
    if type(node) is cst.FunctionDef or type(node) is cst.Lambda:
        return False
    return any(_returns_of_every_node(c) for c in syntax_children(node))


def _located_by_pairs(st: cst.CSTNode, mapping: dict[str, cst.Name], spans: dict[int, Any]) -> cst.CSTNode:
    """(what this replaced) the renamed statement, then both trees walked in pairs."""
    new = renamed(st, mapping)
    pairs: list[tuple[cst.CSTNode, cst.CSTNode]] = [(st, new)]
    while pairs:
        a, b = pairs.pop()
        if a is b:
            continue
        span = spans.get(id(a))
        if span is not None:
            spans.setdefault(id(b), span)
        pairs += zip(syntax_children(a), syntax_children(b))
    return new


class _Writer:
    """The parts of a ``FunctionWriter`` the walks read."""

    def __init__(self, fdef: cst.FunctionDef, spans: dict[int, Any]) -> None:
        self.nf = type("NF", (), {"spans": spans, "fdef": fdef})()


@pytest.fixture(scope="module")
def functions() -> list[cst.FunctionDef]:
    found = _functions()
    assert len(found) > 100
    return found


def test_a_statement_holds_a_return_as_the_walk_of_every_node_found(functions):
    seen = 0
    for fdef in functions:
        for st in fdef.body.body:
            assert batch_lax._returns(st) == _returns_of_every_node(st), cst.Module(body=[st]).code
            seen += batch_lax._returns(st)
    assert seen > 100
    nested = cst.parse_module("def f(x):\n    if x:\n        def g():\n            return 1\n"
                              "        h = lambda: 2\n    else:\n        return 3\n").body[0]
    assert type(nested) is cst.FunctionDef
    assert batch_lax._returns(nested.body.body[0])
    only_nested = cst.parse_module("if x:\n    def g():\n        return 1\n    y = lambda: 2\n").body[0]
    assert not batch_lax._returns(only_nested)


def test_renamed_names_keep_the_positions_the_walk_of_both_trees_gave(functions):
    checked = 0
    for fdef in functions:
        names = {n.value for n in walk(fdef) if type(n) is cst.Name}
        base = {id(n): i for i, n in enumerate(walk(fdef)) if i % 3}  # (some nodes without a position)
        got: list[list[Any]] = []
        for located in (False, True):
            spans = dict(base)
            mapping = {n: cst.Name(n + "_1") for n in sorted(names)[::2]}  # (fresh nodes each way)
            w = _Writer(fdef, spans)
            written = [batch_lax._renamed_located(w, st, mapping) if located else  # type: ignore[arg-type]
                       _located_by_pairs(st, mapping, spans)  # (one writer's spans over the body, statement
                       for st in fdef.body.body]  # by statement, the statements kept: as inline's block)
            got.append([[spans.get(id(n)) for n in walk(new)] for new in written])
        assert got[0] == got[1], cst.Module(body=[fdef]).code
        checked += 1
    assert checked > 100


def test_the_dicts_a_function_shows_are_found_among_its_statements(functions):
    for fdef in functions:
        w = _Writer(fdef, {})
        every = set().union(*(dict_names(d.body.body) for d in walk(fdef) if type(d) is cst.FunctionDef))
        for name in every | {"x", "params_1"}:
            assert batch_lax.shown_dict(w, name) == (name in every or  # type: ignore[arg-type]
                                                     name == "params_1" and "params" in every)


def test_the_readable_pass_walks_a_functions_statements_not_their_values_again(monkeypatch):
    started: list[str] = []
    walk_from = ast_walk._walk

    def spy(node: Any) -> Any:
        started.append(type(node).__name__)
        return walk_from(node)

    monkeypatch.setattr(ast_walk, "_walk", spy)
    text = ("def f_grad_walks(x, w):\n    matmul = x @ w\n    tanh = np.tanh(matmul)\n    mul = tanh * x\n"
            "    sub = 1.0 - mul\n    total = np.sum(sub)\n    return total\n")
    assert readable.readable_source(text, set()) == "def f_grad_walks(x, w):\n    return np.sum(1.0 - np.tanh(x @ w) * x)\n"
    assert started and set(started) == {"FunctionDef"}, started  # (was: each value again, BinOp, Call, ...)
