"""``ast.walk``, about three times faster: the same nodes in the same (breadth-first) order.

The readable-source, simplification and location passes walk Python's ``ast`` of generated text
statement by statement; with ``ast.walk`` (two nested generators per node: ``iter_child_nodes``
over ``iter_fields``) that walking was a quarter of a ``hessian``'s first call. Those passes walk
the same statement several times (its bindings, its calls, whether it is pure, ...): :func:`walked`
walks a node once and hands the same list to the next walk of it (for trees nobody changes: the
shared trees of :mod:`.parsed`), until the collector's pause ends (:func:`srcjax.gc_pause.on_resume`).
"""

from __future__ import annotations

import ast
import importlib
import re
from collections import deque
from collections.abc import Iterator
from typing import Any

from .. import gc_pause

__all__ = ["AST_CLASSES", "exact_kinds", "has_fstring", "imported_names", "statements", "walk_ast", "walked"]

_AST = ast.AST


def _classes_under(cls: type) -> list[type]:
    out = [cls]
    sub: type
    for sub in cls.__subclasses__():
        out += _classes_under(sub)
    return out


# a value's class -> whether it is a node: looked up by subscript (no call per field of every node walked: the
# walks' ``isinstance`` and ``getattr`` were most of their cost); a class met first is asked once (_is_node)
_IS_NODE: dict[type, bool] = {**dict.fromkeys(_classes_under(ast.AST), True), **dict.fromkeys(
    (str, int, float, complex, bool, bytes, type(None), type(...), list, tuple), False)}


AST_CLASSES = frozenset(_classes_under(ast.AST))  # ``v.__class__ in AST_CLASSES``: ``isinstance(v, ast.AST)`` of a
# parsed tree's values, without a call


def _is_node(cls: type) -> bool:
    found = _IS_NODE[cls] = issubclass(cls, _AST)
    return found


def walk_ast(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` (itself first), in ``ast.walk``'s order."""
    todo = deque((node,))
    popleft, append, extend = todo.popleft, todo.append, todo.extend
    is_node = _IS_NODE
    while todo:
        n = popleft()
        d = n.__dict__
        for name in n._fields:
            try:
                v = d[name]
            except KeyError:
                continue
            c = v.__class__
            if c is list:
                extend([x for x in v if (is_node[x.__class__] if x.__class__ in is_node else _is_node(x.__class__))])
            elif is_node[c] if c in is_node else _is_node(c):
                append(v)
        yield n


_WALKED: dict[int, tuple[ast.AST, list[ast.AST]]] = {}  # id(node) -> (node, its walk); the node kept alive
# id(statement) -> (the statement, the walk of a node above it, where each node's children end in that walk, the
# statement's index there): a statement's own walk, cut from its owner's when first asked (:func:`walked`)
_UNDER: dict[int, tuple[ast.AST, list[ast.AST], dict[int, int], int]] = {}
_WALKED_MAX = 4096  # entries before the memo starts again (it keeps the trees alive)
gc_pause.on_resume(_WALKED.clear)
gc_pause.on_resume(_UNDER.clear)


def walked(node: ast.AST) -> list[ast.AST]:
    """``list(walk_ast(node))``, remembered for ``node``: only for read-only passes over trees that
    are never changed after they are parsed (a changed tree would be walked as it was). The walk of
    each statement under ``node`` is remembered from the same pass (the passes walk a function, then
    its statements one by one): a statement's walk is the whole walk's nodes under it, in the same order
    (breadth first: the nodes at each depth under it keep their order), cut from it when first asked."""
    hit = _WALKED.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    under = _UNDER.get(id(node))
    if under is not None and under[0] is node:
        return _cut(*under)
    found, ends = _walk(node)
    if len(_WALKED) + len(_UNDER) >= _WALKED_MAX:
        _WALKED.clear()
        _UNDER.clear()
    _WALKED[id(node)] = (node, found)
    statement = _STATEMENTS
    i = 0
    for n in found:
        if n.__class__ in statement and i:
            _UNDER[id(n)] = (n, found, ends, i)
        i += 1
    return found


def _walk(node: ast.AST) -> tuple[list[ast.AST], dict[int, int]]:
    """``list(walk_ast(node))``, and for each node of it (by its index) where its children end in it (they begin
    where the previous node's end: breadth first, each node's children follow the previous node's, together)."""
    found: list[ast.AST] = [node]
    ends: dict[int, int] = {}  # (a dict's item set: no call a node, as a list's append is)
    add, extend = found.append, found.extend
    is_node = _IS_NODE
    k = 1  # len(found)
    i = 0
    for n in found:  # (the list grows as it is walked: the queue is the walk itself)
        d = n.__dict__
        for name in n._fields:
            try:
                v = d[name]
            except KeyError:
                continue
            c = v.__class__
            if c is list:
                if not v:
                    continue
                kids = [x for x in v if (is_node[x.__class__] if x.__class__ in is_node else _is_node(x.__class__))]
                extend(kids)
                k += len(kids)
            elif is_node[c] if c in is_node else _is_node(c):
                add(v)
                k += 1
        ends[i] = k
        i += 1
    return found, ends


def _cut(node: ast.AST, found: list[ast.AST], ends: dict[int, int], i: int) -> list[ast.AST]:
    """The walk of ``node``, ``found[i]``: at each depth under it, its nodes there are one run of ``found``
    (the children of the previous depth's run, in order), from the first one's first child to the last
    one's last child."""
    out = found[i:i + 1]
    a, b = ends[i - 1], ends[i]
    while a < b:
        out += found[a:b]
        a, b = ends[a - 1], ends[b - 1]
    _UNDER.pop(id(node), None)
    _WALKED[id(node)] = (node, out)
    return out


_BODIES = (ast.stmt, ast.excepthandler, ast.match_case)
_STATEMENTS = frozenset(_classes_under(ast.stmt))  # (a set of classes: no isinstance call per node walked)


def statements(node: ast.AST) -> list[ast.stmt]:
    """The statements of ``walked(node)``, in its order, without walking any expression: a statement is
    only ever held by a statement (its body, ``orelse``, ...), an ``except`` handler or a ``case`` (held by
    statements in turn), so walking only those reaches each one at the same depth, in the same order.
    A function's statements cost a few steps each (its expressions are most of its nodes)."""
    out: list[ast.stmt] = []
    todo: deque[Any] = deque((node,))
    popleft, append, extend, add = todo.popleft, todo.append, todo.extend, out.append
    bodies, statement = _BODY_CLASSES, _STATEMENTS
    while todo:
        n = popleft()
        d = n.__dict__
        for name in n._fields:
            try:
                v = d[name]
            except KeyError:
                continue
            if v.__class__ is list:
                if v and v[0].__class__ in bodies:  # (a list field holds nodes of one kind)
                    extend([c for c in v if c.__class__ in bodies])
            elif v.__class__ in bodies:
                append(v)
        if n.__class__ in statement:
            add(n)  # type: ignore[arg-type]
    return out


_BODY_CLASSES = frozenset(c for b in _BODIES for c in _classes_under(b))  # (classes: no isinstance call a field)


def exact_kinds(*classes: type) -> frozenset[type]:
    """``classes`` as a set for ``type(n) in kinds`` (or ``kinds.isdisjoint(map(type, walked(n)))``), which
    is ``isinstance(n, classes)`` for a parsed node: they are concrete ``ast`` classes that no other class
    derives from (checked here), so a node of one is of exactly that class. ``isinstance`` with a tuple
    tries each class in turn (~1 us a node for 20 of them: the walks of the readable and simplify passes
    asked it of every node of every generated function)."""
    for c in classes:
        if not (isinstance(c, type) and issubclass(c, ast.AST)) or c.__subclasses__():
            raise TypeError(f"{c!r} is not a concrete ast class without subclasses")
    return frozenset(classes)


_FSTRING = re.compile(r"""(?<!\w)(?:[fF][rR]?|[rR][fF])['"]""")


def has_fstring(text: str) -> bool:
    """Whether ``text`` may hold an f-string (an ``ast.JoinedStr``): False only when no f-string prefix
    precedes a quote anywhere (then no walk need look for one)."""
    return _FSTRING.search(text) is not None


def imported_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The names an import binds; ``from m import *`` (the header of generated modules: one line to
    parse instead of every helper's name) binds ``m.__all__``."""
    if isinstance(node, ast.ImportFrom) and node.module and [a.name for a in node.names] == ["*"]:
        return list(getattr(importlib.import_module(node.module), "__all__", ()))
    return [(a.asname or a.name).split(".")[0] for a in node.names]


def target_names(t: ast.AST) -> list[str]:
    """The names an ``ast`` assignment or ``for`` target binds (``a, (b, *c)`` -> a, b, c; not the names a
    subscript or attribute target reads). ``frontend.names.target_names`` is libcst's."""
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [n for e in t.elts for n in target_names(e)]
    if isinstance(t, ast.Starred):
        return target_names(t.value)
    return []
