"""``loop_else.has_loop_else`` (a walk of a function's statements alone) finds what a walk of every node finds.

The rewrite of ``for ... else`` / ``while ... else`` runs on every function normalized, srcjax's generated ones
included; it asked a walk of every node whether there was a loop with an ``else`` (issue #15: ~8% of normalizing a
hessian's generated functions). A loop is a statement, so the scan reads statements, suites and clauses only.
"""

from __future__ import annotations

import textwrap
import zlib
from typing import Any

import libcst as cst
import pytest

from srcjax.frontend import loop_else
from srcjax.frontend.names import walk
from tests.golden import cases, render
from tests.tiers import THOROUGH


def _walked(fdef: cst.FunctionDef) -> bool:
    return any(type(n) in (cst.For, cst.While) and n.orelse is not None for n in walk(fdef))  # type: ignore[attr-defined]


_PLACES = {
    "top": "for v in xs:\n    y = v\nelse:\n    y = 0\n",
    "while": "while x:\n    x = x - 1\nelse:\n    x = 0\n",
    "in_if_else": "if x:\n    pass\nelse:\n    for v in xs:\n        pass\n    else:\n        pass\n",
    "in_elif": "if x:\n    pass\nelif y:\n    while y:\n        break\n    else:\n        pass\n",
    "in_loop_body": "for a in xs:\n    for b in a:\n        pass\n    else:\n        pass\n",
    "in_loop_else": "for a in xs:\n    pass\nelse:\n    for b in xs:\n        pass\n    else:\n        pass\n",
    "in_try": "try:\n    pass\nexcept E:\n    for v in xs:\n        pass\n    else:\n        pass\n",
    "in_finally": "try:\n    pass\nfinally:\n    while x:\n        pass\n    else:\n        pass\n",
    "in_try_else": "try:\n    pass\nexcept E:\n    pass\nelse:\n    for v in xs:\n        pass\n    else:\n        pass\n",
    "in_with": "with c:\n    for v in xs:\n        pass\n    else:\n        pass\n",
    "in_nested_def": "def g(z):\n    for v in z:\n        pass\n    else:\n        pass\n    return z\n",
    "in_nested_class": "class K:\n    for v in xs:\n        pass\n    else:\n        pass\n",
    "in_match": "match x:\n    case 1:\n        for v in xs:\n            pass\n        else:\n            pass\n",
    "none_if_else": "if x:\n    y = 1\nelse:\n    y = 2\n",
    "none_plain_loops": "for v in xs:\n    y = [w for w in v if w] if v else v\nwhile x:\n    x = (lambda q: q)(x)\n",
    "none_one_line_suite": "if x: y = 1\n",
}


@pytest.mark.parametrize("where", sorted(_PLACES))
def test_the_statement_scan_finds_a_loop_else_wherever_the_full_walk_does(where: str) -> None:
    text = "def f(x, xs, c, y, E):\n" + textwrap.indent(_PLACES[where], "    ") + "    return x\n"
    fdef = cst.parse_module(text).body[0]
    assert isinstance(fdef, cst.FunctionDef)
    assert loop_else.has_loop_else(fdef) == _walked(fdef) == (not where.startswith("none"))


_CASES = [c for c in cases() if THOROUGH or zlib.crc32(c[0].encode()) % 40 == 11]


@pytest.mark.parametrize("name,fn,transform", _CASES, ids=[c[0] for c in _CASES])
def test_the_statement_scan_agrees_with_the_full_walk_on_the_corpora(name, fn, transform, monkeypatch) -> None:
    """Every function normalized while a sample of the golden corpora is written (the user's and srcjax's)."""
    original = loop_else.rewrite
    seen: list[Any] = []

    def checked(src: Any) -> Any:
        assert loop_else.has_loop_else(src.fdef) == _walked(src.fdef), f"{src.name} of {name}"
        seen.append(src.name)
        return original(src)

    monkeypatch.setattr(loop_else, "rewrite", checked)
    render(fn, transform)
