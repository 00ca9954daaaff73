"""Names in readable source: the temporaries that survive folding are renumbered densely.

srcjax names a generated temporary after its primitive and numbers repeats (``sub``, ``sub_1``,
``sub_2``); once :mod:`.readable` has folded ``sub`` away, the survivor ``sub_1`` reads as if a
``sub`` were somewhere. :func:`renumber` renames the survivors of each name to the lowest numbers,
in order (``sub_1`` -> ``sub``), together with their derivatives (``sub_1_bar`` -> ``sub_bar``,
``sub_1_dot`` -> ``sub_dot``), so the printed program reads ``sub`` and ``sub_bar`` as a pair.

Renaming is alpha-renaming of a function's local variables: every occurrence of the name in the
function is renamed, to a name that does not occur in it (nor at the top of the module, nor among
Python's builtins and keywords). Only functions without nested scopes, ``global``/``nonlocal``,
f-strings and control flow (which srcjax may functionalize and show in a normalized form) are
renamed; a family is left as it is when any of its names is a parameter or one of the user's own
names (``keep``), or when a name it would take is taken (also by a family renamed before it: ``mul_4``
of ``mul`` and ``mul_1_1`` of ``mul_1`` cannot both become ``mul_1``).
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
from collections import defaultdict
from itertools import islice

from ..frontend.ast_walk import exact_kinds, imported_names, walked
from ..frontend.parsed import parse

# the simplifier's text positions and scope kinds: this pass edits the same module text after it
from .simplify import _Text
from .simplify_syntax import _SCOPES

_SUFFIXES = ("_bar", "_dot")
_NUMBERED = re.compile(r"(.+?)(?:_(\d+))?")
_TAKEN = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)


def renumber(text: str, keep: frozenset[str] = frozenset()) -> str:
    """``text`` (a module of generated functions) with each function's surviving numbered
    temporaries renumbered densely (see the module docstring). The names each function's temporaries
    had before are kept for the text returned (:func:`renamed`)."""
    try:
        tree = parse(text)
    except SyntaxError:  # pragma: no cover - generated text parses
        return text
    top = {n for node in tree.body for n in _top_names(node)}
    t = _Text(text)
    edits: list[tuple[int, int, str]] = []
    before: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and _plain(node):
            back: dict[str, str] = {}
            edits.extend(_function(node, t, keep | top, back))
            if back:
                before[node.name] = back
    if not edits:
        return text
    out = t.render(0, len(text), edits)
    _RENAMED[out] = before
    while len(_RENAMED) > _RENAMED_KEPT:
        del _RENAMED[next(iter(_RENAMED))]
    return out


def renamed(text: str) -> dict[str, dict[str, str]]:
    """Of a text :func:`renumber` returned (recently): each function's renamed temporaries, new name -> the name
    the writer gave it (``sum_1`` -> ``sum_4``: the name of the user's statement it derives from, which
    ``frontend/locations.py`` maps to the user's line; ``sum_1`` is another statement's). Else empty."""
    return _RENAMED.get(text, {})


# renumbered text -> (function -> new name -> old name), oldest first: a derivative's module is loaded right after
# it is made readable (the readable texts remembered: readable.TEXTS_KEPT, fewer than these)
_RENAMED: dict[str, dict[str, dict[str, str]]] = {}
_RENAMED_KEPT = 256


def _top_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return imported_names(node)
    return [n.id for n in walked(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)]


def _plain(fdef: ast.FunctionDef) -> bool:
    """No nested scope, control flow, ``global``/``nonlocal``, f-string or decorator."""
    if fdef.decorator_list:
        return False
    # (the whole def's walk, which _function reads next, first: the body's statements only if it finds one)
    if _NOT_PLAIN.isdisjoint(map(type, islice(walked(fdef), 1, None))):
        return True
    return all(_NOT_PLAIN.isdisjoint(map(type, walked(body))) for body in fdef.body)


_NOT_PLAIN = exact_kinds(*_SCOPES, ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith,
                         ast.Match, ast.Global, ast.Nonlocal, ast.JoinedStr)


def _split(name: str) -> tuple[str, int, str]:
    """``sub_1_bar`` -> (``sub``, 1, ``_bar``); ``sub`` -> (``sub``, 0, ``""``)."""
    suffix = next((s for s in _SUFFIXES if name.endswith(s) and len(name) > len(s)), "")
    core = name[:len(name) - len(suffix)]
    m = _NUMBERED.fullmatch(core)
    assert m is not None
    return m.group(1), int(m.group(2) or 0), suffix


def _function(fdef: ast.FunctionDef, t: _Text, keep: frozenset[str],
              back: dict[str, str]) -> list[tuple[int, int, str]]:
    """The edits renumbering ``fdef``'s temporaries; ``back``: new name -> old name of each one renamed."""
    a = fdef.args
    params = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, *([a.vararg] if a.vararg else []),
                              *([a.kwarg] if a.kwarg else [])]}
    names: dict[str, list[ast.Name]] = defaultdict(list)
    bound: set[str] = set()
    name_t, load_t = ast.Name, ast.Load  # (exact types: no class derives from these)
    for n in walked(fdef):
        if type(n) is name_t:
            names[n.id].append(n)  # type: ignore[attr-defined]
            if type(n.ctx) is not load_t:  # type: ignore[attr-defined]
                bound.add(n.id)  # type: ignore[attr-defined]
    present = set(names) | params
    families: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for name in present:
        base, k, suffix = _split(name)
        families[base][k].add(suffix)
    edits: list[tuple[int, int, str]] = []
    claimed: set[str] = set()  # the new names of the families renamed so far (``mul_4`` -> ``mul_1``)
    for base, members in sorted(families.items()):
        if base.startswith("_") or base in keep or not base.isidentifier():
            continue
        olds = {k: [_name(base, k, s) for s in sorted(members[k])] for k in members}
        if any(n in params or n in keep or n not in bound for ns in olds.values() for n in ns):
            continue  # (a parameter, a user's name, or a global the function reads: not a local temporary)
        order = sorted(members)
        if order == list(range(len(order))):
            continue
        mine = {n for ns in olds.values() for n in ns}
        renames = {_name(base, old_k, sfx): _name(base, new_k, sfx)
                   for new_k, old_k in enumerate(order) for sfx in members[old_k]}
        if any(new != old and (new in present and new not in mine or new in keep or new in _TAKEN or new in claimed)
               for old, new in renames.items()):
            continue  # (``mul_1_1`` of the family ``mul_1`` would also be ``mul_1``: two values, one name)
        claimed.update(new for old, new in renames.items() if new != old)
        for old, new in renames.items():
            if new == old:
                continue
            back[new] = old
            for n in names[old]:
                start, end = t.span(n)
                if t.text[start:end] != old:  # pragma: no cover - positions we do not trust
                    back.clear()
                    return []
                edits.append((start, end, new))
    return edits


def _name(base: str, k: int, suffix: str) -> str:
    return f"{base}_{k}{suffix}" if k else base + suffix
