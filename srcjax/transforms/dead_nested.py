"""Dead code that :mod:`.simplify` leaves (it folds and deletes only straight-line statements at the top level of
a module's functions, and names bound once).

Input and output: a module text of generated functions. A statement is deleted when

- it binds one name with a pure expression (names, numbers, operators, subscripts, tuples, calls of ``np.*`` or
  of ``pure_calls``: the helpers of :mod:`srcjax.adjoint` and :mod:`srcjax.batched`) and either nothing reads
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
from functools import lru_cache

from ..adjoint import SAVED_LIST_NAME, TAPE_NAME

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
        tree = ast.parse(text)
    except SyntaxError:  # pragma: no cover - generated text parses
        return text
    fixed = {n for node in ast.walk(tree) if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names}
    lines = text.splitlines(keepends=True)
    dead: set[int] = set()  # ids of deleted statements
    spans: list[tuple[int, int]] = []
    for top in tree.body:
        if isinstance(top, ast.FunctionDef):
            _function(top, False, fixed, pure_calls, dead, spans, lines)
    if not spans:
        return text
    gone = {i for lo, hi in spans for i in range(lo, hi + 1)}
    return "".join(line for i, line in enumerate(lines, 1) if i not in gone)


def _function(fdef: ast.FunctionDef, nested: bool, fixed: set[str], pure_calls: frozenset[str], dead: set[int],
              spans: list[tuple[int, int]], lines: list[str]) -> None:
    closures = {n for d in ast.walk(fdef) if isinstance(d, (ast.FunctionDef, ast.Lambda)) and d is not fdef
                for n in _reads_in(d)}
    tries = any(isinstance(n, ast.Try) for n in ast.walk(fdef))
    changed = True
    while changed:
        reads = _reads(fdef, dead)
        changed = False
        for block, top in _blocks(fdef):
            live = [s for s in block if id(s) not in dead]
            for s in live:
                if len([t for t in block if id(t) not in dead]) == 1:
                    break  # (a block keeps a statement)
                if not _whole_lines(s, lines):
                    continue
                if isinstance(s, ast.FunctionDef):
                    gone = not s.decorator_list and s.name not in reads and s.name not in fixed
                elif isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and \
                        (nested or not top):
                    name = s.targets[0].id
                    gone = name not in reads and name not in fixed and not TAPE_NAME.match(name) and \
                        not SAVED_LIST_NAME.match(name) and _pure(s.value, pure_calls)
                else:
                    gone = False
                if not gone and not tries and isinstance(s, ast.Assign) and len(s.targets) == 1 and \
                        isinstance(s.targets[0], ast.Name):  # (a handler may read what a raise left)
                    gone = _overwritten(s, s.targets[0].id, block, dead, closures, fixed, pure_calls)
                if gone:
                    dead.add(id(s))
                    spans.append((s.lineno, s.end_lineno or s.lineno))
                    changed = True
    for block, _ in _blocks(fdef):
        for s in block:
            if id(s) not in dead and isinstance(s, ast.FunctionDef):
                _function(s, True, fixed, pure_calls, dead, spans, lines)


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


def _overwritten(s: ast.Assign, name: str, block: list[ast.stmt], dead: set[int], closures: set[str],
                 fixed: set[str], pure_calls: frozenset[str]) -> bool:
    """Whether ``name = <pure>`` is bound again later in its block before anything reads it (``hi_3_2 =
    taken(hi_3, gt_2)`` then ``hi_3_2 = mid_1_1``): only simple statements between, no nested function reading
    the name (a call between could run it)."""
    if name in closures or name in fixed or TAPE_NAME.match(name) or SAVED_LIST_NAME.match(name) or \
            not _pure(s.value, pure_calls):
        return False
    for t in block[block.index(s) + 1:]:
        if id(t) in dead:
            continue
        if not isinstance(t, (ast.Assign, ast.Expr, ast.AugAssign, ast.AnnAssign, ast.Assert)) or name in _reads_in(t):
            return False
        if isinstance(t, ast.Assign) and any(isinstance(n, ast.Name) and n.id == name for n in t.targets):
            return True
    return False


def _reads_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)}


def _reads(fdef: ast.FunctionDef, dead: set[int]) -> set[str]:
    """The names read in ``fdef`` outside its deleted statements."""
    out: set[str] = set()
    todo: list[ast.AST] = [s for s in fdef.body if id(s) not in dead] + list(fdef.decorator_list)
    while todo:
        node = todo.pop()
        if id(node) in dead:
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            out.add(node.id)
        todo.extend(ast.iter_child_nodes(node))
    return out


def _whole_lines(s: ast.stmt, lines: list[str]) -> bool:
    """Whether ``s`` alone fills its lines (no ``a = 1; b = 2``)."""
    first, last = lines[s.lineno - 1], lines[(s.end_lineno or s.lineno) - 1]
    return first[:s.col_offset].strip() == "" and last[s.end_col_offset or 0:].strip() in ("", "\\") and \
        ";" not in "".join(lines[s.lineno - 1:s.end_lineno or s.lineno])


def _pure(e: ast.expr, pure_calls: frozenset[str]) -> bool:
    for node in ast.walk(e):
        if not isinstance(node, _PURE_NODES):
            return False
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                if f.id not in pure_calls:
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
