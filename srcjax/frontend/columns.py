"""The column of an error in generated code, carried to the user's statement it maps to.

``locations.user_span`` maps a generated line to the user's statement (or the sub-expression a normalized statement
came from); the readable form folds several normalized statements into one line (``z = np.sum(w * w) +
np.sum(exp[5])`` of the user's ``z = np.sum(w * w) + np.sum(np.exp(w)[5])``), so a refusal of a sub-expression of
that line (``exp[5]``) would point at the start of the statement. :func:`within` finds the sub-expression of the
user's span that the generated one was written from: the one expression of the same form, where a name the user's
span does not read (a temporary, ``exp``) stands for any sub-expression; the user's span as it is where none or
several match.
"""

from __future__ import annotations

import ast

from ..core import Span

__all__ = ["within"]


def within(generated: Span, user: Span) -> Span:
    """The sub-expression of ``user`` that the expression at ``generated`` was written from, else ``user``."""
    g = _expression(generated.text().strip())
    if g is None or isinstance(g, ast.Name) or (generated.line, generated.col) == (generated.end_line, 0):
        return user
    text = user.text()
    tree = _parsed(text)
    if tree is None:
        return user
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    found = [n for n in ast.walk(tree) if isinstance(n, ast.expr) and _same(g, n, names, root=True)]
    if len(found) != 1:
        return user
    n = found[0]
    lines = text.split("\n")
    end_line = n.end_lineno or n.lineno
    col = _chars(lines[n.lineno - 1], n.col_offset) + (user.col if n.lineno == 1 else 0)
    end_col = _chars(lines[end_line - 1], n.end_col_offset or 0) + (user.col if end_line == 1 else 0)
    return Span(user.filename, user.line + n.lineno - 1, col, user.line + end_line - 1, end_col)


def _expression(text: str) -> ast.expr | None:
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        return None


def _parsed(text: str) -> ast.AST | None:
    """``text`` (a user's statement or expression, its first line from its column on) parsed."""
    for mode in ("eval", "exec"):
        try:
            return ast.parse(text, mode=mode)
        except SyntaxError:
            continue
    return None


def _chars(line: str, offset: int) -> int:
    """The character column of ``ast``'s byte ``offset`` in ``line``."""
    return len(line.encode("utf-8")[:offset].decode("utf-8", errors="ignore"))


def _same(g: ast.AST, u: ast.AST, names: set[str], strict: bool = False, root: bool = False) -> bool:
    """Whether the generated expression ``g`` is written from the user's ``u``: the same form, where a part of ``g``
    that reads a name the user's span does not (a temporary: ``exp``, a tangent ``w_dot * exp``) stands for any
    sub-expression (``strict``: none does; a called function, ``np.sum``, is the same one; ``root``: ``g`` itself is
    the same form)."""
    if not strict and not root and _temporary(g, names):
        return True
    if isinstance(g, ast.Name):
        return isinstance(u, ast.Name) and u.id == g.id
    if type(g) is not type(u):
        return False
    if isinstance(g, ast.Call) and isinstance(u, ast.Call):  # (the arguments in order, by keyword or not: the
        gv, uv = [*g.args, *(k.value for k in g.keywords)], [*u.args, *(k.value for k in u.keywords)]  # normalized
        return (_helper_of(g.func, u.func) or _same(g.func, u.func, names, True)) and len(gv) == len(uv) and \
            all(_same(a, b, names, strict) for a, b in zip(gv, uv))  # `np.reshape(y, shape=s)` of `np.reshape(y, s)`)
    for field in g._fields:
        if field == "ctx":
            continue
        a, b = getattr(g, field, None), getattr(u, field, None)
        exact = strict
        if isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b) or not all(_same(x, y, names, exact) if isinstance(x, ast.AST) else x == y
                                           for x, y in zip(a, b)):
                return False
        elif isinstance(a, ast.AST):
            if not isinstance(b, ast.AST) or not _same(a, b, names, exact):
                return False
        elif a != b:
            return False
    return True


def _helper_of(g: object, u: object) -> bool:
    """Whether ``g`` names one of srcjax's helpers for the function ``u`` names (``eig_refused``, ``eig_jvp``: the
    user's ``np.linalg.eig``)."""
    last = u.attr if isinstance(u, ast.Attribute) else u.id if isinstance(u, ast.Name) else None
    return isinstance(g, ast.Name) and last is not None and g.id.startswith(last + "_")


def _temporary(g: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id not in names for n in ast.walk(g))
