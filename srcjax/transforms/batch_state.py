"""What is batched of a value, tracked statically per name by the vmap writer (transforms/batch.py)."""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import libcst as cst

from ..frontend import parsed
from ..frontend.cst_expressions import parse_expression
from ..frontend.names import code

__all__ = ["Repeated", "Stack", "State", "Tree", "all_batched", "any_batched", "element", "fully_batched", "item",
           "join", "pack", "parts_of", "record_type_fields", "batched_leaf", "batched_leaves", "literal_key",
           "returns_join"]


@dataclass(frozen=True)
class Tree:
    """A tuple, list, dict or record (NamedTuple, dataclass) whose elements are batched or not, element by
    element. A record's keys are its fields as ``".w"`` (read as ``x.w``, rebuilt with ``tree_set``)."""

    kind: str  # "tuple" | "list" | "dict" | "record"
    items: tuple[tuple[str, State], ...]  # (key as source: "0", "'w'", ".w"), state


@dataclass(frozen=True)
class Stack:
    """A Python list used as a stack (a derivative's tape): the state of each value pushed, in order.

    Also a sequence built by ``zip``/``enumerate``/``reversed`` for a loop: one entry, the state of
    every element. Pushes and pops are matched in program order (a loop's body stands for each of its iterations,
    which push and pop alike), so a value keeps its own state through the list: a tape holding an
    unbatched weight and a batched activation stores the weight once, not once per example."""

    entries: tuple[State, ...]

    def push(self, s: State) -> Stack:
        return Stack((*self.entries, s))


@dataclass(frozen=True)
class Repeated(Stack):
    """A list every value of which is in state ``entries[0]``, however many there are: the tape of a
    recursive function, pushed once per level (transforms/batch_recursion.py). A push keeps it, a pop
    gives that state."""


State = bool | Tree | Stack
"""What is batched of a value: ``False`` nothing (per-example shape), ``True`` every leaf
(batch axis first), a :class:`Tree` element by element, or a :class:`Stack` pushed value by value."""


def record_type_fields(obj: Any) -> tuple[str, ...] | None:
    """The fields of a NamedTuple class or dataclass (None: ``obj`` is neither)."""
    if not isinstance(obj, type):
        return None
    if issubclass(obj, tuple) and hasattr(obj, "_fields"):
        return tuple(obj._fields)
    if dataclasses.is_dataclass(obj):
        return tuple(f.name for f in dataclasses.fields(obj) if f.init)
    return None


def any_batched(s: State) -> bool:
    if isinstance(s, Tree):
        return any(any_batched(v) for _, v in s.items)
    if isinstance(s, Stack):
        return any(any_batched(v) for v in s.entries)
    return s


def fully_batched(s: State) -> bool:
    """Whether every leaf of a value in state ``s`` is batched (it may stand in a list in state True)."""
    if isinstance(s, Tree):
        return all(fully_batched(v) for _, v in s.items)
    if isinstance(s, Stack):
        return all(fully_batched(v) for v in s.entries)
    return s is True


def element(s: State) -> State:
    """The state of any one element of a container (a list indexed at run time, a loop over it)."""
    parts = [v for _, v in s.items] if isinstance(s, Tree) else list(s.entries) if isinstance(s, Stack) else [s]
    out: State = False
    for v in parts:
        out = join(out, v)
    return out if not parts or all(v == parts[0] for v in parts) else any_batched(out)


def join(a: State, b: State) -> State:
    """The least state both ``a`` and ``b`` can be brought to (by broadcasting)."""
    if a == b:
        return a
    if isinstance(a, Stack) and isinstance(b, Stack) and len(a.entries) == len(b.entries):
        return Stack(tuple(join(x, y) for x, y in zip(a.entries, b.entries)))
    if isinstance(a, Stack) or isinstance(b, Stack):
        return any_batched(a) or any_batched(b)
    if isinstance(a, Tree) and isinstance(b, Tree) and a.kind == b.kind and [k for k, _ in a.items] == \
            [k for k, _ in b.items]:
        return Tree(a.kind, tuple((k, join(x, y)) for (k, x), (_, y) in zip(a.items, b.items)))
    if a is False and isinstance(b, Tree) or b is False and isinstance(a, Tree):
        t = a if isinstance(a, Tree) else b
        assert isinstance(t, Tree)
        return Tree(t.kind, tuple((k, join(v, False)) for k, v in t.items))
    return any_batched(a) or any_batched(b)


def returns_join(states: Sequence[State]) -> State:
    """The state every ``return`` of a function is brought to: their join, except that a value in state
    ``False`` (a container of any structure: ``tuple(range(n))``) is not packed to the keys of another
    return's :class:`Tree` holding batched leaves (its structure may differ: an element dropped); then
    every leaf is batched (``True``), each return keeping its own structure."""
    out: State = False
    for s in states:
        out = join(out, s)
    if isinstance(out, Tree) and any_batched(out) and any(s is False for s in states):
        return True
    return out


def all_batched(s: State) -> State:
    """``s`` with every leaf batched (keeping a tree's structure)."""
    if isinstance(s, Tree):
        return Tree(s.kind, tuple((k, all_batched(v)) for k, v in s.items))
    return True


def parts_of(expr: str) -> dict[str, str] | None:
    """The elements of a tuple, list or dict literal by key (``"0"``, ``"'w'"``), or None."""
    parts = _parts(expr)
    return None if parts is None else dict(parts)


@functools.lru_cache(maxsize=4096)
def _parts(expr: str) -> tuple[tuple[str, str], ...] | None:
    """:func:`parts_of`, remembered per text (the batcher asks again for the same names)."""
    if expr.isidentifier():  # (a name, or a keyword that does not parse: no literal's parts, and no parse)
        return None
    top = parsed.expression(expr)  # (~10x cheaper than libcst's parse: most texts asked are no literal)
    if top is not None and not isinstance(top, (ast.Tuple, ast.List, ast.Dict)):
        return None
    try:
        node = parse_expression(expr)
    except cst.ParserSyntaxError:
        return None
    if isinstance(node, (cst.Tuple, cst.List)):
        return tuple((str(i), code(e.value)) for i, e in enumerate(node.elements))
    if type(node) is cst.Dict and all(type(e) is cst.DictElement for e in node.elements):
        return tuple((code(e.key), code(e.value)) for e in node.elements if type(e) is cst.DictElement)
    return None


@functools.lru_cache(maxsize=4096)
def _simple(expr: str) -> bool:
    """Whether ``expr`` is a name, subscript, attribute or call (indexing it needs no parentheses)."""
    try:
        return isinstance(parse_expression(expr), (cst.Name, cst.Subscript, cst.Attribute, cst.Call))
    except cst.ParserSyntaxError:
        return False


def item(expr: str, key: str) -> str:
    """``expr[key]`` (``expr.w`` for a record's key ``".w"``), or the literal's element itself."""
    parts = parts_of(expr)
    if parts is not None and key in parts:
        return parts[key]
    simple = _simple(expr)
    if key.startswith("."):
        return f"{expr}{key}" if simple else f"({expr}){key}"
    return f"{expr}[{key}]" if simple else f"({expr})[{key}]"


def pack(kind: str, parts: Sequence[tuple[str, str]], base: str = "") -> str:
    """The container of ``kind`` with these elements; a record is ``base`` with its fields replaced."""
    if kind == "record":
        out = base
        for k, v in parts:
            if v != item(base, k):
                out = f"tree_set({out}, {k[1:]!r}, {v})"
        return out
    if kind == "dict":
        return "{" + ", ".join(f"{k}: {v}" for k, v in parts) + "}"
    body = ", ".join(v for _, v in parts)
    if kind == "list":
        return "[" + body + "]"
    return "(" + body + ("," if len(parts) == 1 else "") + ")"


def batched_leaf(expr: str, st: State) -> str:
    """A path to a batched leaf of a value in state ``st`` (``p[1]['w']``)."""
    if isinstance(st, Tree):
        for k, v in st.items:
            if any_batched(v):
                return batched_leaf(item(expr, k), v)
    return expr


def batched_leaves(expr: str, st: State) -> list[str]:
    """The paths to every batched leaf of a value in state ``st``."""
    if isinstance(st, Tree):
        return [leaf for k, v in st.items for leaf in batched_leaves(item(expr, k), v)]
    return [expr] if any_batched(st) else []


def literal_key(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError):
        return None
