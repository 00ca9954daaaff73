"""A dict's values or items copied into a list or tuple, written as the comprehension derivatives follow:

``list(d.values())``   ->  ``list([value for value in d.values()])``
``tuple(d.items())``   ->  ``tuple([(key, value) for key, value in d.items()])``
``[*d.values()]``      ->  ``list([value for value in d.values()])``   (``(*d.items(),)``: ``tuple(...)``)

The items are the same, in the same order (a dict argument's keys sorted, as under jax's ``jit``); indexing,
unpacking and iterating the copy then differentiate and batch as a comprehension over the view does. Before,
``vals = list(params.values()); vals[0]`` was refused in derivatives ("kept as a value"), and earlier it gave
a zero gradient, silently (#15). ``d.keys()`` (static strings), a static ``d`` (a module's dict, evaluated
while specializing), srcjax's own helpers and the code it wrote are left as they are.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

import libcst as cst

from .names import names_in

if TYPE_CHECKING:
    from .normalize import Normalizer

__all__ = ["rewrite"]


def _copied_view(norm: Normalizer, node: cst.BaseExpression) -> tuple[cst.Call, str] | None:
    """(the view ``d.values()``/``d.items()``, ``"list"`` or ``"tuple"``) that ``node`` copies, or None."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("list", "tuple") \
            and len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
        ok, fv = norm.static_value(node.func)
        if not ok or fv is not getattr(builtins, node.func.value):
            return None
        view, kind = node.args[0].value, node.func.value
    elif isinstance(node, (cst.List, cst.Tuple)) and len(node.elements) == 1 and \
            isinstance(node.elements[0], cst.StarredElement):
        view, kind = node.elements[0].value, "list" if isinstance(node, cst.List) else "tuple"
    else:
        return None
    if not (isinstance(view, cst.Call) and isinstance(view.func, cst.Attribute) and not view.args and
            view.func.attr.value in ("values", "items")) or norm.static_value(view.func.value)[0]:
        return None
    return view, kind


def rewrite(norm: Normalizer, node: cst.BaseExpression) -> cst.BaseExpression | None:
    """``node`` as a comprehension over the view it copies (see the module's docstring), or None."""
    if str(norm.src.globals.get("__name__", "")).startswith("srcjax.") or norm.src.filename.startswith("<srcjax."):
        return None  # (srcjax's helpers: node_children's `list(x.values())`; derivative code's `list(d.items())`)
    found = _copied_view(norm, node)
    if found is None:
        return None
    view, kind = found
    taken = set(names_in(view))
    value = next(n for n in ("value", "value_1", "value_2", "value_3") if n not in taken)
    key = next(n for n in ("key", "key_1", "key_2", "key_3") if n not in taken)
    if view.func.attr.value == "values":  # type: ignore[attr-defined]
        elt: cst.BaseExpression = cst.Name(value)
        target: cst.BaseAssignTargetExpression = cst.Name(value)
    else:
        elt = cst.Tuple([cst.Element(cst.Name(key)), cst.Element(cst.Name(value))])
        target = cst.Tuple([cst.Element(cst.Name(key)), cst.Element(cst.Name(value))], lpar=[], rpar=[])
    comp = cst.ListComp(elt=elt, for_in=cst.CompFor(target=target, iter=view))
    out = cst.Call(func=cst.Name(kind), args=[cst.Arg(comp)])
    positions = norm.src.positions
    if node in positions:
        for made in (out, comp, view):
            positions.setdefault(made, positions[node])
    return out
