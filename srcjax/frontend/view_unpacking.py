"""``a, b = d.values()`` read as ``a, b = list(d.values())``.

Unpacking a dict's view is iterating it: Python and jax take its values in order. Derivatives refused the view kept
as a value ("cannot differentiate through `d.values()` kept as a value yet") where they follow
``list(d.values())``: grad, vmap and vmap(grad) of ``a, b = d.values()`` now match jax. Only an assignment whose
every target is a tuple or list (unpacking) is rewritten. ``(k1, a), (k2, b) = d.items()`` is not (still refused
by derivatives at its line): written ``list(d.items())`` it ran under grad but not under vmap, where it runs now.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from .names import Visitor
from .read import FunctionSource, Located

_VIEWS = ("values",)


def rewrite(src: FunctionSource) -> FunctionSource:
    """``src`` with its unpacked dict views written ``list(...)`` (``src`` itself where there are none)."""
    if src.filename.startswith("<srcjax.") or not _has_unpacked_view(src.fdef):
        return src  # (srcjax's output: the user's views were read already)
    fdef = src.fdef.visit(_Views(src.positions))
    if fdef is src.fdef:
        return src
    assert isinstance(fdef, cst.FunctionDef)
    return dataclasses.replace(src, fdef=fdef)


def _unpacked(n: cst.Assign) -> bool:
    return _view(n.value) and all(isinstance(t.target, (cst.Tuple, cst.List)) for t in n.targets)


def _has_unpacked_view(fdef: cst.FunctionDef) -> bool:
    found = False

    class V(Visitor):
        def visit_Assign(self, n: cst.Assign) -> None:
            nonlocal found
            found = found or _unpacked(n)

    V().walk(fdef)
    return found


def _view(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Attribute) and \
        node.func.attr.value in _VIEWS


class _Views(Located):
    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        if not _unpacked(updated):
            return updated
        listed = cst.Call(func=cst.Name("list"), args=[cst.Arg(updated.value)])
        self.located(original.value, listed)
        return self.located(original, updated.with_changes(value=listed))  # type: ignore[no-any-return]

