"""Python ``ast`` trees of generated module text, parsed once per text.

A generated module's text goes through several read-only passes that each need its tree: the
simplifier, the readable pass (its guard rewrites, folding, tidying, renumbering: each on the text
the one before wrote, often the same text when it changed nothing), ``load_module``'s registrations,
the derivative's float parameters. :func:`parse` parses a text once and hands the same tree to every
pass that asks for it again soon (the last :data:`KEPT` texts).

The cache lives for one front-end run: it is emptied when the collector's pause ends
(:func:`srcjax.gc_pause.on_resume`), so the trees die with the run.

The trees are shared, so **nobody may change them** (every user only reads positions, names and
node kinds: ``tests/test_parsed.py`` checks that the passes leave a tree as they found it).
"""

from __future__ import annotations

import ast
import functools

from .. import gc_pause

__all__ = ["KEPT", "expression", "is_literal", "parse", "share"]

KEPT = 8  # texts remembered (a transformation's module goes through about six passes in a row)

_TREES: dict[str, ast.Module] = {}
gc_pause.on_resume(_TREES.clear)


def parse(text: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(text, filename)`` (a ``SyntaxError`` names ``filename``), shared with the other
    readers of the same text: read-only."""
    tree = _TREES.get(text)
    if tree is None:
        tree = ast.parse(text, filename)
        _keep(text, tree)
    return tree


def _keep(text: str, tree: ast.Module) -> None:
    _TREES[text] = tree
    if len(_TREES) > KEPT:
        try:
            del _TREES[next(iter(_TREES))]  # the oldest (dicts keep insertion order)
        except (KeyError, RuntimeError, StopIteration):  # pragma: no cover - another thread got there first
            pass


def share(text: str, same: str) -> None:
    """Hand ``text``'s kept tree to ``same`` as well: ``same`` is ``text`` with comments taken off some lines' ends
    (``provenance.unmark``), no line removed and no line in a string, so every node of its tree is where it is in
    ``text``'s (a comment moves no position). Nothing is parsed: where ``text``'s tree is not kept, ``same`` is
    parsed when asked, as any text."""
    tree = _TREES.get(text)
    if tree is not None and same not in _TREES:
        _keep(same, tree)


@functools.lru_cache(maxsize=4096)
def expression(text: str) -> ast.expr | None:
    """The ``ast`` of the expression ``text`` (None where ``ast`` does not read it as one: ``*a``, a
    syntax error), remembered per text: read-only. For questions about a small generated text's kind
    of expression (a tuple literal? an atom? a constant?) that libcst's ``parse_expression`` answered
    about ten times slower (its fixed cost per call: ~0.1 ms in a cold first call, hundreds of calls
    in a ``vmap(grad(f))``). Where ``ast`` reads an expression, libcst reads the same kind of node at
    the top (``tests/test_parsed.py`` checks the correspondence the callers rely on)."""
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError):  # (ValueError: a NUL character)
        return None


def is_literal(text: str) -> bool:
    """Whether ``text`` is a number, string, bytes or ``...`` literal: no names in it (``True``, ``False`` and
    ``None`` are not: libcst reads them as names)."""
    top = expression(text)
    return isinstance(top, ast.Constant) and top.value is not None and not isinstance(top.value, bool)
