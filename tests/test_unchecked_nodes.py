"""read.unchecked_nodes: libcst's nodes made unchecked while the normalized form of source srcjax wrote is built."""

from __future__ import annotations

import libcst as cst
import pytest

from srcjax.frontend import read


def test_with_changes_inside_is_libcsts_without_the_checks() -> None:
    node = cst.parse_expression("f(a, b=2)[1:3] + -x")
    assert isinstance(node, cst.BinaryOperation)
    outside = node.with_changes(right=cst.Name("y"), lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    with read.unchecked_nodes():
        inside = node.with_changes(right=cst.Name("y"), lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        call = node.left.value.with_changes(args=[])  # type: ignore[attr-defined]
        with pytest.raises(TypeError):
            node.with_changes(operand=cst.Name("z"))
        cst.Name("not an identifier")  # (unchecked: libcst's check would refuse it)
    assert type(inside) is cst.BinaryOperation and inside.deep_equals(outside)
    assert cst.Module([]).code_for_node(inside) == "(f(a, b=2)[1:3] + y)"
    assert cst.Module([]).code_for_node(call) == "f()"


def test_the_checks_are_back_when_the_last_region_ends() -> None:
    with read.unchecked_nodes():
        with read.unchecked_nodes():
            pass
        cst.Name("still unchecked")  # (the outer region is open)
    with pytest.raises(cst.CSTValidationError):
        cst.Name("checked again")
    assert cst.CSTNode.with_changes is read._WITH_CHANGES
