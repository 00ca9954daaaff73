"""The names a function shows to hold dicts: the one answer that dict merges (``a | b`` of dicts,
:mod:`.dict_merges`), binding times (a loop over a dict walks its keys, never rows: :mod:`.binding_times`) and vmap
(an unmapped dict broadcast leaf by leaf: ``transforms/batch_dict_keys.py``) read.

A name is shown to be a dict where the function (its own scope: what a lambda, a comprehension or a nested ``def``
binds again is theirs)

- indexes it by a string (``d["w"]``; an array is never indexed by a string), or calls its ``.items()``,
  ``.keys()`` or ``.values()``;
- binds it (``d = ...``, or by unpacking a tuple display, ``xs, hs = {}, {}``) to a dict display or comprehension, a
  call of the builtin ``dict``, a merge ``a | b`` with such an operand, or another such name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import libcst as cst

from .names import Visitor, assigned_names, comprehension_targets, walk
from .syntax import params_of

__all__ = ["Scoped", "builtin_dict", "dict_names", "dictish", "is_merge", "keyed_loop"]

DICT_METHODS = ("items", "keys", "values")


def builtin_dict(func: cst.BaseExpression) -> bool:
    """``func`` spells the builtin ``dict`` (the default test of :func:`dict_names`; binding times resolve it)."""
    return isinstance(func, cst.Name) and func.value == "dict"


def is_merge(node: cst.BaseExpression) -> bool:
    """``a | b``."""
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr)


def dictish(node: cst.BaseExpression, names: set[str] | frozenset[str],
            is_dict: Callable[[cst.BaseExpression], bool] = builtin_dict) -> bool:
    """``node`` is a dict: a display, a comprehension, ``dict(...)``, a name of ``names``, or a merge of such."""
    return isinstance(node, (cst.Dict, cst.DictComp)) or isinstance(node, cst.Call) and is_dict(node.func) or \
        isinstance(node, cst.Name) and node.value in names or \
        is_merge(node) and (dictish(node.left, names, is_dict) or  # type: ignore[attr-defined]
                            dictish(node.right, names, is_dict))  # type: ignore[attr-defined]


class Scoped(Visitor):
    """A walk of a function's body that knows the names a nested scope (a lambda, a comprehension, a nested
    ``def``) binds again: what such a scope does with ``a`` says nothing of the function's own ``a``
    (``tree_map(lambda a: a * 2.0, a)``; ``sum(np.sum(a) for a in leaves(a))``)."""

    def __init__(self) -> None:
        self.hidden: list[frozenset[str]] = []

    def shown(self, name: str) -> bool:
        return not any(name in h for h in self.hidden)

    def run(self, fdef: cst.FunctionDef) -> None:
        self.walk(fdef.body)

    def inner(self, names: set[str] | list[str], *nodes: cst.CSTNode | None) -> bool:
        self.hidden.append(frozenset(names))
        for n in nodes:
            if n is not None:
                self.walk(n)
        self.hidden.pop()
        return False

    def visit_Lambda(self, n: cst.Lambda) -> bool:
        return self.inner({p.name.value for p in params_of(n)}, n.body)  # type: ignore[arg-type]

    def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:  # (a nested def: the top one is not walked)
        return self.inner({p.name.value for p in params_of(n)} | set(assigned_names([n.body])), n.body)

    def _comprehension(self, n: Any, *parts: cst.CSTNode) -> bool:
        self.walk(n.for_in.iter)  # (the first sequence is read in the enclosing scope)
        return self.inner(comprehension_targets(n), *parts, *n.for_in.ifs, n.for_in.inner_for_in)

    def visit_ListComp(self, n: cst.ListComp) -> bool:
        return self._comprehension(n, n.elt)

    def visit_SetComp(self, n: cst.SetComp) -> bool:
        return self._comprehension(n, n.elt)

    def visit_GeneratorExp(self, n: cst.GeneratorExp) -> bool:
        return self._comprehension(n, n.elt)

    def visit_DictComp(self, n: cst.DictComp) -> bool:
        return self._comprehension(n, n.key, n.value)


class _Evidence(Scoped):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.binds: list[tuple[str, cst.BaseExpression]] = []

    def visit_Subscript(self, n: cst.Subscript) -> None:
        if isinstance(n.value, cst.Name) and len(n.slice) == 1 and isinstance(n.slice[0].slice, cst.Index) \
                and isinstance(n.slice[0].slice.value, cst.SimpleString) and self.shown(n.value.value):
            self.names.add(n.value.value)

    def visit_Call(self, n: cst.Call) -> None:
        f = n.func
        if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.attr.value in DICT_METHODS \
                and not n.args and self.shown(f.value.value):
            self.names.add(f.value.value)

    def visit_Assign(self, n: cst.Assign) -> None:
        if self.hidden:
            return
        for t in n.targets:
            if isinstance(t.target, cst.Name):
                self.binds.append((t.target.value, n.value))
            elif isinstance(t.target, cst.Tuple) and isinstance(n.value, cst.Tuple) and \
                    len(t.target.elements) == len(n.value.elements):  # (`params, grads = {...}, {...}`)
                self.binds += [(e.value.value, v.value) for e, v in zip(t.target.elements, n.value.elements)
                               if isinstance(e.value, cst.Name)]


def dict_names(stmts: Sequence[cst.CSTNode],
               is_dict: Callable[[cst.BaseExpression], bool] = builtin_dict) -> set[str]:
    """The names the statements (a function's body) show to hold dicts (see the module's docstring); ``is_dict``:
    whether a callee is the builtin ``dict``."""
    v = _Evidence()
    for s in stmts:
        v.walk(s)
    names = v.names
    grown = True
    while grown:  # (a name bound to a dict, or to a merge of one: `d = defaults | a`, `e = d`)
        grown = False
        for name, value in v.binds:
            if name not in names and dictish(value, names, is_dict):
                names.add(name)
                grown = True
    return names


def keyed_loop(loop: cst.For, is_dict: Callable[[str], bool]) -> str | None:
    """The name ``loop`` runs over where its body indexes by the loop's name that name itself or a dict
    (``for k in g: out[k] = m[k] + g[k]``, optax's ``{k: m[k] + g[k] for k in g}`` written as a loop;
    ``out = {}``): a dict's keys, for this loop only (the name may hold a list elsewhere, a recursive helper's
    ``for v in t`` over a list). (Was: read as a batched array's rows, ``k`` was a mapped value and ``m[k]`` of
    the unmapped ``m`` a mapped one: a ShapeError, or unmapped results left without their batch axis, silently;
    and a loop over a dict that a loop made, ``a, ema = lax.fori_loop(...)``, was walked by position, ``ema[0]``.)
    ``is_dict``: whether a name is known to be a dict. An integer array iterated to index another array (``for i in idx:
    x[i]``) is not one."""
    it = loop.iter
    if type(it) is cst.Call and not it.args and type(it.func) is cst.Attribute and it.func.attr.value == "keys":
        it = it.func.value
    if type(loop.target) is not cst.Name or type(it) is not cst.Name:
        return None
    key, seq = loop.target.value, it.value

    def keyed(e: cst.BaseExpression) -> bool:
        return type(e) is cst.Name and (e.value == seq or is_dict(e.value))

    def by_key(e: cst.BaseExpression) -> bool:
        return type(e) is cst.Name and e.value == key

    for m in walk(loop.body):
        if type(m) is cst.Subscript and keyed(m.value) and len(m.slice) == 1 and \
                type(m.slice[0].slice) is cst.Index and by_key(m.slice[0].slice.value):
            return seq
        if type(m) is cst.Call and type(m.func) is cst.Attribute and m.func.attr.value == "index_update" and \
                len(m.args) >= 2 and keyed(m.args[0].value) and by_key(m.args[1].value):
            return seq
    return None
