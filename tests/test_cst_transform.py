"""frontend/cst_transform.py: ``transform(node, tr)`` is libcst's ``node.visit(tr)`` for the normalizer's rewriter of
expressions kept nested (``Normalizer.lazy``: conditions, assert messages, comprehensions).

Every function normalized while a sample of the golden corpora is written (the user's and those srcjax wrote) is
normalized again with libcst's own visit: the same ANF, the same places of its statements, the same callees and
temporaries (tests/test_plain_calls.py's comparison). The default tier reads a fixed sample; the thorough tier
reads them all.
"""

from __future__ import annotations

import zlib
from typing import Any

import libcst as cst
import pytest

from srcjax.frontend import normalize, program
from srcjax.frontend.cst_transform import transform
from tests.golden import cases, render
from tests.test_plain_calls import _form
from tests.tiers import THOROUGH

_CASES = [c for c in cases() if THOROUGH or zlib.crc32(c[0].encode()) % 40 == 23]


class _Renamer(cst.CSTTransformer):
    """Renames names, and records the order the hooks run in."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        self.seen.append("visit Attribute")
        return False  # (its children not visited: leave still runs, with the node itself)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        self.seen.append(f"leave Attribute {updated is original}")
        return updated

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        self.seen.append(original.value)
        return updated.with_changes(value=original.value + "_1")


def test_the_same_tree_and_hooks_as_libcst_s_visit() -> None:
    node = cst.parse_expression("(a + np.sum(b, axis=c)) if f(d, *e) else [g for g in h if g]")
    slow, fast = _Renamer(), _Renamer()
    want, got = node.visit(slow), transform(node, fast)
    assert got.deep_equals(want) and cst.Module(body=[]).code_for_node(got) == \
        "(a_1 + np.sum(b_1, axis_1=c_1)) if f_1(d_1, *e_1) else [g_1 for g_1 in h_1 if g_1]"
    assert fast.seen == slow.seen
    assert got is not node and got.test is not node.test  # (rebuilt, as libcst rebuilds: new nodes)
    assert transform(cst.parse_expression("x"), cst.CSTTransformer()) is not None


@pytest.mark.parametrize("name,fn,transform_name", _CASES, ids=[c[0] for c in _CASES])
def test_lazy_expressions_read_as_libcst_reads_them(name, fn, transform_name, monkeypatch) -> None:
    original = program.normalize

    def checked(f: Any, *args: Any, **kwargs: Any) -> Any:
        nf = original(f, *args, **kwargs)
        monkeypatch.setattr(normalize, "transform", lambda node, tr: node.visit(tr))
        try:
            slow = original(f, *args, **kwargs)
        finally:
            monkeypatch.setattr(normalize, "transform", transform)
        assert _form(nf) == _form(slow), f"{nf.name} of {name}"
        assert nf.fdef.deep_equals(slow.fdef), f"{nf.name} of {name}"
        return nf

    monkeypatch.setattr(program, "normalize", checked)
    render(fn, transform_name)
