"""``a, b = d.values()`` read as ``a, b = list(d.values())``; ``(k1, a), (k2, b) = d.items()`` as
``k1, k2 = list(d.keys()); a, b = list(d.values())``.

Unpacking a dict's view is iterating it: Python and jax take its values in order. Derivatives refused the view kept
as a value ("cannot differentiate through `d.values()` kept as a value yet") where they follow
``list(d.values())``: grad, vmap and vmap(grad) of ``a, b = d.values()`` now match jax. Only an assignment whose
every target is a tuple or list (unpacking) is rewritten. The items unpacked into pairs of a dict named by a name
are split into its keys and its values (a list of ``(key, value)`` pairs, ``list(d.items())``, holds unbatched keys
beside batched values, which ``vmap(grad)`` does not batch as a whole); other unpackings of ``d.items()`` are read
as ``list(d.items())``.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from .names import walk
from .read import FunctionSource, Located

_VIEWS = ("values", "items")


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
    """Whether ``fdef`` unpacks a dict view (one walk: no visitor class made per call)."""
    return any(n.__class__ is cst.Assign and _unpacked(n) for n in walk(fdef))  # type: ignore[arg-type]


def _view(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Attribute) and \
        node.func.attr.value in _VIEWS


def _pairs(n: cst.Assign) -> list[tuple[cst.BaseExpression, cst.BaseExpression]] | None:
    """The (key, value) targets of ``(k1, a), (k2, b) = d.items()`` (``d`` a name, one target of pairs), else None."""
    call = n.value
    if len(n.targets) != 1 or not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute) or \
            call.func.attr.value != "items" or not isinstance(call.func.value, cst.Name):
        return None
    outer = n.targets[0].target
    assert isinstance(outer, (cst.Tuple, cst.List))
    pairs = []
    for e in outer.elements:
        t = e.value
        if isinstance(e, cst.StarredElement) or not isinstance(t, (cst.Tuple, cst.List)) or len(t.elements) != 2 or \
                any(isinstance(p, cst.StarredElement) for p in t.elements):
            return None
        pairs.append((t.elements[0].value, t.elements[1].value))
    return pairs


class _Views(Located):
    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.BaseSmallStatement | \
            cst.FlattenSentinel[cst.BaseSmallStatement]:
        if not _unpacked(updated):
            return updated
        pairs = _pairs(updated)
        if pairs is not None:  # (k1, a), (k2, b) = d.items(): its keys, then its values
            assert isinstance(updated.value, cst.Call) and isinstance(updated.value.func, cst.Attribute)
            made = []
            for i, view in enumerate(("keys", "values")):
                call = cst.Call(func=cst.Name("list"), args=[cst.Arg(cst.Call(
                    func=updated.value.func.with_changes(attr=cst.Name(view))))])
                self.located(original.value, call)
                made.append(self.located(original, cst.Assign(
                    targets=[cst.AssignTarget(cst.Tuple([cst.Element(p[i]) for p in pairs]))], value=call)))
            return cst.FlattenSentinel(made)
        listed = cst.Call(func=cst.Name("list"), args=[cst.Arg(updated.value)])
        self.located(original.value, listed)
        return self.located(original, updated.with_changes(value=listed))  # type: ignore[no-any-return]

