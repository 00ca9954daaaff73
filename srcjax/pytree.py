"""Minimal pytrees: nested tuples, lists and dicts with array (or static) leaves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Leaf = Any


class TreeDef:
    """The structure of a nested container; ``None`` nodes mark leaves."""

    __slots__ = ("kind", "children", "keys")

    def __init__(self, kind: str, children: tuple[TreeDef, ...] = (), keys: tuple[Any, ...] = ()) -> None:
        self.kind = kind
        self.children = children
        self.keys = keys

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TreeDef) and self.kind == other.kind and self.keys == other.keys
                and self.children == other.children)

    def __hash__(self) -> int:
        return hash((self.kind, self.children, self.keys))

    def __repr__(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(map(repr, self.children))
        if self.kind == "dict":
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.keys, self.children))
            return "{" + inner + "}"
        return ("(" + inner + ",)") if self.kind == "tuple" else ("[" + inner + "]")

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)


LEAF = TreeDef("leaf")
NONE = TreeDef("none")


def flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Leaf], TreeDef]:
    leaves: list[Leaf] = []
    return leaves, _flatten(tree, is_leaf, leaves)


def _flatten(x: Any, is_leaf: Callable[[Any], bool] | None, leaves: list[Leaf]) -> TreeDef:
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return LEAF
    if x is None:
        return NONE
    if type(x) is tuple or type(x) is list:
        return TreeDef("tuple" if type(x) is tuple else "list", tuple(_flatten(c, is_leaf, leaves) for c in x))
    if type(x) is dict:
        keys = tuple(sorted(x))
        return TreeDef("dict", tuple(_flatten(x[k], is_leaf, leaves) for k in keys), keys)
    leaves.append(x)
    return LEAF


def unflatten(treedef: TreeDef, leaves: list[Leaf]) -> Any:
    # No recursive closure here: a closure referring to itself is a reference cycle that would
    # keep the results (device buffers) alive until the cycle collector runs.
    return _build(treedef, iter(leaves))


def _build(t: TreeDef, it: Any) -> Any:
    if t.kind == "leaf":
        return next(it)
    if t.kind == "none":
        return None
    kids = [_build(c, it) for c in t.children]
    if t.kind == "tuple":
        return tuple(kids)
    if t.kind == "list":
        return kids
    return dict(zip(t.keys, kids))
