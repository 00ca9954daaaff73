"""Imports of the names a printed module reads that the user's module imported (``from math import pi as PI``,
``from mymod import SCALE``, ``import mymod as mm``): the printed module carries those import lines, so that it
runs by itself (it read ``PI`` with no definition). Module constants the user's module defines itself stay
names of its namespace, as before (the printed module runs in it, or with them given).

The import is the user's own statement, found in the source file of the module that holds the function
(top-level ``import``/``from ... import`` statements, relative ones made absolute), and carried only where the
name still holds what that import gives.
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
import os
import re
import sys
from collections.abc import Iterable
from typing import Any

from .parsed import parse

_IMPORTS: dict[tuple[str, float], dict[str, tuple[str, str | None]]] = {}  # (file, mtime) -> name -> import


def _module_imports(filename: str) -> dict[str, tuple[str, str | None]]:
    """name -> (module, attribute or None for ``import module as name``) of a file's top-level imports."""
    try:
        key = (filename, os.path.getmtime(filename))
    except OSError:
        return {}
    hit = _IMPORTS.get(key)
    if hit is not None:
        return hit
    out: dict[str, tuple[str, str | None]] = {}
    try:
        with open(filename, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        tree = ast.Module(body=[], type_ignores=[])
    for st in tree.body:
        if isinstance(st, ast.ImportFrom):
            mod = "." * st.level + (st.module or "")
            for a in st.names:
                if a.name != "*":
                    out[a.asname or a.name] = (mod, a.name)
        elif isinstance(st, ast.Import):
            for a in st.names:
                if a.asname is not None:
                    out[a.asname] = (a.name, None)
    _IMPORTS[key] = out
    return out


def _free_names(text: str) -> set[str]:
    """Names ``text`` reads that nothing in it binds (nor Python's builtins)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    loads: set[str] = set()
    bound: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            (loads if isinstance(n.ctx, ast.Load) else bound).add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(n.name)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in n.names)
    return {n for n in loads - bound if not hasattr(builtins, n)}


def _line(name: str, mod: str, attr: str | None, globs: dict[str, Any]) -> tuple[str, str] | None:
    """(module, what it imports) binding ``name`` as the user's module did (``attr as name``; ``""`` for
    ``import module as name``), if ``name`` still holds what that import gives."""
    if mod.startswith("."):
        try:
            mod = importlib.util.resolve_name(mod, globs.get("__package__") or "")
        except (ImportError, ValueError):
            return None
    module = sys.modules.get(mod)
    if module is None or name not in globs:
        return None
    if attr is None:
        return (mod, "") if globs[name] is module else None
    if getattr(module, attr, _MISSING) is not globs[name]:
        return None
    return mod, attr + (f" as {name}" if attr != name else "")


_MISSING = object()
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_ATTRIBUTE = re.compile(r"\.[ \t]*[A-Za-z_][A-Za-z_0-9]*")  # (not across lines: a comment's end)
_DEF = re.compile(r"^def ([A-Za-z_][A-Za-z_0-9]*)\(", re.M)


def _may_read_imported(header: str, text: str, namespaces: list[dict[str, Any]]) -> bool:
    """False where no word of ``text`` can be a name read free that a module of ``namespaces`` imported: every
    such name is a word of the text, not bound by the header's imports, not a builtin, and a name of that
    module's namespace (:func:`_line` requires it). Then :func:`import_lines` has nothing to say, without
    parsing the whole module (~1-2 ms of a first call: the text of a program rarely reads such a name)."""
    # (an attribute's name is never read as a variable; the functions the text defines are bound)
    words = set(_WORD.findall(_ATTRIBUTE.sub(" ", text))).difference(_DEF.findall(text))
    try:
        head = parse(header)
    except SyntaxError:
        return True
    for st in head.body:
        if not isinstance(st, (ast.Import, ast.ImportFrom)):
            return True  # (a header of imports only, as Program.source writes it; anything else: the long way)
        words.difference_update((a.asname or a.name).split(".")[0] for a in st.names)
    spaces = list({id(g): g for g in namespaces}.values())
    return any(w in globs and not hasattr(builtins, w) for w in words for globs in spaces)


def import_lines(header: str, text: str, namespaces: Iterable[dict[str, Any]]) -> str:
    """The import lines for the names ``header + text`` reads free that the modules of ``namespaces`` (the
    globals of the program's functions) imported by name."""
    namespaces = list(namespaces)
    if not _may_read_imported(header, text, namespaces):
        return ""
    free = _free_names(header + text)
    if not free:
        return ""
    found: dict[str, set[str]] = {}
    for globs in namespaces:
        filename = globs.get("__file__")
        if not isinstance(filename, str) or not free:
            continue
        imports = _module_imports(filename)
        for n in sorted(free & set(imports)):
            line = _line(n, *imports[n], globs)
            if line is not None:
                found.setdefault(line[0], set()).add(line[1] or f"import {line[0]} as {n}")
                free.discard(n)
    out = []
    for mod, parts in sorted(found.items()):
        out += sorted(p for p in parts if p.startswith("import "))
        names = sorted(p for p in parts if not p.startswith("import "))
        if names:
            out.append(f"from {mod} import {', '.join(names)}")
    return "".join(f"{ln}\n" for ln in out)
