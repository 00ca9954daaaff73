"""libcst's ``node.visit(transformer)``, without its per-field dispatch.

libcst visits a node's children field by field, each through ``visit_required``/``visit_sequence`` and two
attribute callbacks (``on_visit_attribute``, ``on_leave_attribute``: a name built and looked up per field), then
builds the node again from its visited fields. For a transformer whose hooks are only ``on_visit``/``on_leave``
(``visit_<Node>``/``leave_<Node>``: the normalizer's ``_LazyRewriter``, ~10 us a node of a gradient's guard
``np.ndim(out) == 0 and is_float(out)``), :func:`transform` does the same without the attribute callbacks:
``on_visit``; where it says so, each field in libcst's own order (read once per class from the class's
``_visit_and_replace_children``: the order of source) visited, and the node built again by its class with every
field (a new node, as libcst's, checked as libcst's where nodes are checked); then ``on_leave`` with the node
and the one built. The transformer must not define attribute hooks nor return a removal or a flattening
(checked: refused with ``TypeError``, as libcst refuses them where the parent needs the child).
tests/test_cst_transform.py compares the normalized functions of a sample of the golden corpora both ways.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import libcst as cst

from .names import NODE_CLASSES

__all__ = ["transform"]

_ORDER: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}  # class -> (its fields, those visited, in order)
_NODE = cst.CSTNode


class _Order(cst.CSTTransformer):
    """Records the fields a node's ``_visit_and_replace_children`` visits, in its order, visiting no child."""

    def __init__(self) -> None:
        self.fields: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_leave(self, original_node: Any, updated_node: Any) -> Any:
        return original_node

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.fields.append(attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        return None


def _order(node: cst.CSTNode) -> tuple[tuple[str, ...], tuple[str, ...]]:
    recorder = _Order()
    node._visit_and_replace_children(recorder)  # (children not visited: on_visit says no)
    found = _ORDER[type(node)] = (tuple(f.name for f in dataclasses.fields(node)), tuple(recorder.fields))
    return found


def transform(node: Any, tr: cst.CSTTransformer) -> Any:
    """``node.visit(tr)`` (see the module docstring)."""
    if tr.on_visit(node):
        cls = node.__class__
        try:
            fields, visited = _ORDER[cls]
        except KeyError:
            fields, visited = _order(node)
        values = {f: getattr(node, f) for f in fields}
        for f in visited:
            v = values[f]
            if v.__class__ in NODE_CLASSES:  # (isinstance(v, cst.CSTNode) without ABCMeta's check)
                values[f] = _child(transform(v, tr))
            elif v.__class__ is tuple or v.__class__ is list:
                values[f] = tuple([_child(transform(c, tr)) for c in v])
        updated = cls(**values)
    else:
        updated = node
    result = tr.on_leave(node, updated)
    if not isinstance(result, _NODE):
        raise TypeError(f"a {type(result).__name__} where a node was expected")
    return result


def _child(v: Any) -> Any:
    if not isinstance(v, _NODE):  # (a removal or a flattening: not what these transformers write)
        raise TypeError(f"a {type(v).__name__} where a node was expected")
    return v
