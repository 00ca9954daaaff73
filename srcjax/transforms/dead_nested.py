"""Dead code that :mod:`.simplify` leaves (it folds and deletes only straight-line statements at the top level of
a module's functions, and names bound once).

Input and output: a module text of generated functions. A statement is deleted when

- it binds one name with a pure expression (names, numbers, operators, subscripts, tuples, calls of ``np.*`` or
  of ``pure_calls``: the helpers of :mod:`srcjax.adjoint` and :mod:`srcjax.batched`, but not ``in_place``, a
  check: ``simplify_syntax.checks``) and either nothing reads
  the name anywhere in its function (nested functions included; not at a module-level function's top level,
  which is :mod:`.simplify`'s): ``_i_1 = i`` in a loop body, ``w_bar = unbroadcast(...)`` in a loop of grad
  source; or the name is bound again later in its block before anything reads it, only simple statements
  between and no nested function reading it (``hi_3_2 = taken(hi_3, gt_2)`` then ``hi_3_2 = mid_1_1`` in a
  batched ``while``'s step; not in a function with a ``try``);
- or it is a nested ``def`` (no decorators) whose name is read nowhere in the function that holds it.

Names a ``global`` or ``nonlocal`` statement names, and the tape (``_tape``), are never touched; a block keeps
at least one statement. Deleting repeats until nothing changes (a deleted statement may have been the one
reader of another). Statements are deleted as whole lines; a statement sharing a line with another is kept.
Run at the end of :func:`~.simplify.simplify_source`. tests/test_dead_nested.py.
"""

from __future__ import annotations

import ast
from collections import Counter
from functools import lru_cache
from typing import Any

from ..adjoint import SAVED_LIST_NAME, TAPE_NAME
from ..frontend import provenance
from ..frontend.ast_walk import walk_ast, walked
from ..frontend.parsed import parse
from .simplify_syntax import checks

__all__ = ["drop_dead_nested"]

_PURE_NODES = (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp, ast.Subscript,
               ast.Slice, ast.Tuple, ast.Load, ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.keyword,
               ast.Call, ast.Attribute, ast.Starred)


def drop_dead_nested(text: str, pure_calls: frozenset[str]) -> str:
    """``text`` without the dead statements of nested functions and the unread nested ``def``\\ s."""
    return _dropped(text, pure_calls)


@lru_cache(maxsize=64)
def _dropped(text: str, pure_calls: frozenset[str]) -> str:
    try:
        tree = parse(text)  # (shared: readable reads the same text next when nothing is deleted)
    except SyntaxError:  # pragma: no cover - generated text parses
        return text
    fixed = {n for node in walk_ast(tree) if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names} \
        if "global " in text or "nonlocal " in text else set()
    lines = text.splitlines(keepends=True)
    dead: set[int] = set()  # ids of deleted statements
    spans: list[tuple[int, int]] = []
    for top in tree.body:
        if isinstance(top, ast.FunctionDef) and not _nothing_dead(top):
            _function(top, False, fixed, pure_calls, dead, spans, lines, _Loads(top))
    if not spans:
        return text
    gone = {i for lo, hi in spans for i in range(lo, hi + 1)}
    return "".join(line for i, line in enumerate(lines, 1) if i not in gone)


_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor, ast.While, ast.If,
             ast.With, ast.AsyncWith, ast.Try, ast.Match, *([ast.TryStar] if hasattr(ast, "TryStar") else []))


def _nothing_dead(top: ast.FunctionDef) -> bool:
    """Whether nothing in the module-level function ``top`` can be deleted, found from its statements alone:
    straight-line (no nested block or ``def``: an unread name at its top level is :mod:`.simplify`'s) and no
    name bound by two of its assignments, or else none bound again before a statement reads it
    (:func:`_read_before_bound_again`). Most generated functions: their names are not counted."""
    bound: set[str] = set()
    again = False
    for s in top.body:
        if isinstance(s, _COMPOUND):
            return False
        if isinstance(s, ast.Assign):
            for t in s.targets:
                for n in [t.id] if isinstance(t, ast.Name) else _target_names(t):
                    again = again or n in bound
                    bound.add(n)
    return not again or _read_before_bound_again(top)


def _read_before_bound_again(top: ast.FunctionDef) -> bool:
    """Whether no ``name = ...`` of the straight-line ``top`` is followed by an assignment binding ``name``
    again before a statement reads it (the one binding it again included: ``x_bar = index_add(x_bar, ...)``
    reads it): all :func:`_function` could delete there (:func:`_overwritten`; its other conditions only keep
    more). A gradient's chains of ``x_bar = index_add(x_bar, ...)`` read each binding before the next."""
    walked(top)  # (the whole walk first: each statement's below is cut from it; _function and readable read it)
    unread: set[str] = set()  # names whose last binding is `name = ...`, read by no statement since
    for s in top.body:
        kind = s.__class__
        if unread:
            for n in walked(s):  # (the names _Loads reads: every name not stored, nested lambdas' included)
                if n.__class__ is ast.Name and n.ctx.__class__ is not ast.Store:  # type: ignore[attr-defined]
                    unread.discard(n.id)  # type: ignore[attr-defined]
            if kind is ast.AugAssign:  # (read, as _function's next_read counts it)
                unread -= _target_names(s.target)  # type: ignore[attr-defined]
        if kind is ast.Assign:
            targets = s.targets  # type: ignore[attr-defined]
            if unread:
                for t in targets:
                    for bound in [t.id] if t.__class__ is ast.Name else _target_names(t):
                        if bound in unread:
                            return False
            if len(targets) == 1 and targets[0].__class__ is ast.Name:
                unread.add(targets[0].id)
    return True


def _classes(*roots: type) -> frozenset[type]:
    out: set[type] = set()
    todo = list(roots)
    while todo:
        c = todo.pop()
        out.add(c)
        todo.extend(c.__subclasses__())
    return frozenset(out)


_SPANNED = _classes(ast.stmt, ast.Lambda)
# ast's node classes that hold anything, and the statements (`pass`: a span of its own)
_WITH_FIELDS = frozenset(c for c in _classes(ast.AST) if c._fields) | _SPANNED  # type: ignore[attr-defined]
_SCOPES = _classes(ast.FunctionDef, ast.Lambda)


class _Loads:
    """How often each name is read in a statement's (or lambda's) subtree: the names read, in order, gathered
    in one walk of a module-level function, each statement's a slice of them (counted when first asked)."""

    def __init__(self, tree: ast.AST) -> None:
        self.names: list[str] = []
        self.spans: dict[int, tuple[int, int]] = {}
        self.memo: dict[int, Counter[str]] = {}
        self._visit(tree)

    def _visit(self, node: ast.AST) -> None:
        start = len(self.names)
        d = node.__dict__
        for field in node._fields:  # (ast.iter_child_nodes, without its two generators)
            v: Any = d[field] if field in d else None
            child: Any
            for child in v if v.__class__ is list else (v,):
                c = child.__class__
                if c is ast.Name:
                    if child.ctx.__class__ is not ast.Store:
                        self.names.append(child.id)
                elif c in _WITH_FIELDS:  # (a node: not a name, a number or None; nor a leaf like `ast.Load()`)
                    self._visit(child)
        if node.__class__ in _SPANNED:
            self.spans[id(node)] = (start, len(self.names))

    def read(self, node: ast.AST) -> list[str]:
        """The names read in ``node``'s subtree, repeats kept (a statement's or a lambda's)."""
        lo, hi = self.spans[id(node)]
        return self.names[lo:hi]

    def __call__(self, node: ast.AST) -> Counter[str]:
        got = self.memo.get(id(node))
        if got is None:
            lo, hi = self.spans[id(node)]
            got = self.memo[id(node)] = Counter(self.names[lo:hi])
        return got


def _function(fdef: ast.FunctionDef, nested: bool, fixed: set[str], pure_calls: frozenset[str], dead: set[int],
              spans: list[tuple[int, int]], lines: list[str], loads: _Loads) -> None:
    closures: set[str] = set()
    tries = False
    for d in walked(fdef):  # (the shared tree's walk: the readable pass walks the same functions next)
        c = d.__class__
        if c in _SCOPES and d is not fdef:
            closures.update(loads.read(d))
        elif c is ast.Try:
            tries = True
    reads = Counter(loads(fdef))  # (nothing inside fdef is deleted yet; kept up to date below)
    blocks = _blocks(fdef)
    changed = True
    while changed:  # (each sweep goes backwards through each block: a chain of dead lines goes in one sweep)
        changed = False
        for block, top in blocks:
            alive = sum(1 for t in block if id(t) not in dead)
            next_read: dict[str, int] = {}
            next_bind: dict[str, int] = {}
            barrier = len(block)  # (the next statement that is not a simple one)
            for i in range(len(block) - 1, -1, -1):
                s = block[i]
                if id(s) in dead:
                    continue
                if alive > 1 and (s.__class__ is ast.Assign or s.__class__ is ast.FunctionDef) and \
                        (_dead(s, nested or not top, reads, fixed, pure_calls) or not tries and
                         _overwritten(s, i, next_read, next_bind, barrier, closures, fixed, pure_calls)) and \
                        _whole_lines(s, lines):
                    dead.add(id(s))
                    spans.append((s.lineno, s.end_lineno or s.lineno))
                    reads.subtract(loads(s))
                    alive -= 1
                    changed = True
                    continue
                if not isinstance(s, _SIMPLE):
                    barrier = i
                for n in loads.read(s):
                    next_read[n] = i
                if s.__class__ is ast.AugAssign:
                    for n in _target_names(s.target):
                        next_read[n] = i
                if isinstance(s, ast.Assign):
                    for t in s.targets:
                        for n in _target_names(t):
                            next_bind[n] = i
    for block, _ in blocks:
        for s in block:
            if id(s) not in dead and isinstance(s, ast.FunctionDef):
                _function(s, True, fixed, pure_calls, dead, spans, lines, loads)


_SIMPLE = (ast.Assign, ast.Expr, ast.AugAssign, ast.AnnAssign, ast.Assert)


def _one_name(s: ast.stmt) -> str | None:
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
        return s.targets[0].id
    return None


def _kept_name(name: str, fixed: set[str]) -> bool:
    return name in fixed or bool(TAPE_NAME.match(name)) or bool(SAVED_LIST_NAME.match(name))


def _dead(s: ast.stmt, unread_ok: bool, reads: Counter[str], fixed: set[str], pure_calls: frozenset[str]) -> bool:
    """An unread nested ``def``, or (``unread_ok``) ``name = <pure>`` of a name read nowhere."""
    if isinstance(s, ast.FunctionDef):
        return not s.decorator_list and reads[s.name] <= 0 and s.name not in fixed
    name = _one_name(s)
    return unread_ok and name is not None and reads[name] <= 0 and not _kept_name(name, fixed) and \
        _pure(s.value, pure_calls)  # type: ignore[attr-defined]


def _overwritten(s: ast.stmt, i: int, next_read: dict[str, int], next_bind: dict[str, int], barrier: int,
                 closures: set[str], fixed: set[str], pure_calls: frozenset[str]) -> bool:
    """Whether ``name = <pure>`` is bound again later in its block before anything reads it (``hi_3_2 =
    taken(hi_3, gt_2)`` then ``hi_3_2 = mid_1_1``): only simple statements between, no nested function reading
    the name (a call between could run it)."""
    name = _one_name(s)
    if name is None or name in closures or _kept_name(name, fixed) or name not in next_bind:
        return False
    j = next_bind[name]
    return j < next_read.get(name, barrier + 1) and j < barrier and \
        _pure(s.value, pure_calls)  # type: ignore[attr-defined]


def _target_names(t: ast.AST) -> set[str]:
    return {n.id for n in walk_ast(t) if isinstance(n, ast.Name)}


def _blocks(fdef: ast.FunctionDef) -> list[tuple[list[ast.stmt], bool]]:
    """The statement lists of ``fdef`` (its body: True), its loops', branches', ``with``'s and ``try``'s,
    not those of the functions it defines."""
    out: list[tuple[list[ast.stmt], bool]] = [(fdef.body, True)]
    todo = list(fdef.body)
    while todo:
        s = todo.pop()
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            block = getattr(s, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                out.append((block, False))
                todo.extend(block)
        for h in getattr(s, "handlers", []):
            out.append((h.body, False))
            todo.extend(h.body)
    return out


def _whole_lines(s: ast.stmt, lines: list[str]) -> bool:
    """Whether ``s`` alone fills its lines (no ``a = 1; b = 2``)."""
    first, last = lines[s.lineno - 1], lines[(s.end_lineno or s.lineno) - 1]
    return first[:s.col_offset].strip() == "" and provenance.blank(last[s.end_col_offset or 0:], "\\") and \
        ";" not in "".join(lines[s.lineno - 1:s.end_lineno or s.lineno])


def _pure(e: ast.expr, pure_calls: frozenset[str]) -> bool:
    for node in walk_ast(e):
        if not isinstance(node, _PURE_NODES):
            return False
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                if f.id not in pure_calls or checks(node):  # (no shapes known here: every in_place)
                    return False
            elif not (_np_path(f) and "random" not in ast.unparse(f)):
                return False
        elif isinstance(node, ast.Attribute) and not _np_path(node) and node.attr not in ("T", "shape", "ndim",
                                                                                          "dtype", "real", "imag"):
            return False
    return True


def _np_path(f: ast.expr) -> bool:
    while isinstance(f, ast.Attribute):
        f = f.value
    return isinstance(f, ast.Name) and f.id == "np"
