"""Derivative rules' templates instantiated as code.

:func:`instantiate` fills a derivative template of a primitive's record (``"out_bar * x2"``,
``registry.Primitive.jvp``/``vjp``) with a statement's atoms and folds what that makes literal
(``2 - 1``, ``a ** 1``, ``2 == 0``, ``np.where(False, a, b)``, ``dtype=None``); :func:`expr` parses an
expression once and remembers it; :func:`paren` parenthesizes a term of a sum.

Folding is split in two on purpose: this one is local and syntactic (one instantiated
template, libcst, no knowledge of shapes: what substituting atoms into a template makes
literal), while :mod:`.simplify` folds across a whole generated function with its symbolic
shape/dtype facts (``unbroadcast(g, x)`` -> ``g``), on :mod:`ast` by source positions because it
runs once per derivative on large texts. Neither repeats the other's rewrites.
"""

from __future__ import annotations

import ast
import keyword
import re
from typing import Any

import libcst as cst

from ..frontend import parsed
from ..frontend.cst_expressions import parse_expression
from ..frontend.names import NODE_CLASSES, code, literal_value, renamed, syntax_fields, walk
from . import template_holes

# -- templates --------------------------------------------------------------------------------

def _fold(node: cst.CSTNode, unique: frozenset[str] = frozenset()) -> cst.CSTNode:
    """Fold literal arithmetic (``2 - 1``) and ``a ** 1`` in instantiated templates (bottom up), keep
    ``tree_get``/``index_cleared`` only for string keys (``_KEYED``), ``winning_writes(x, key)`` only for
    keys that may repeat an index (not literal integers, slices or strings, nor the names ``unique``
    holds: integers), ``index_lands(z, key)`` only for keys not literal, and drop keywords at their defaults
    (:func:`_default_keyword`: a template passes its primitive's ``dtype``, ``index_add``'s ``mode``)."""
    t = type(node)
    if t is cst.Name or t is cst.Integer or t is cst.Float or t is cst.SimpleString:
        return node
    if t is cst.Call and _literal_where_of_write(node, unique):
        node = _lands_of_write(node)  # type: ignore[arg-type]
    changes: dict[str, Any] = {}
    for f in syntax_fields(t):
        v = getattr(node, f)
        if v.__class__ in NODE_CLASSES:  # (isinstance of libcst's base class: an ABC's check, a Python call)
            nv = _fold(v, unique)
            if nv is not v:
                changes[f] = nv
        elif v.__class__ is tuple or v.__class__ is list:
            items = [_fold(c, unique) if c.__class__ in NODE_CLASSES else c for c in v]
            if any(a is not b for a, b in zip(items, v)):
                changes[f] = items
    if changes:
        node = node.with_changes(**changes)
    if t is cst.Call:
        assert isinstance(node, cst.Call)
        args = [a for a in node.args if not _default_keyword(node, a)]
        if len(args) != len(node.args):
            node = node.with_changes(args=[a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args])
    if t is cst.Call and _unkeyed_call(node, getattr(unique, "containers", frozenset())):
        return _unkeyed(node)  # type: ignore[arg-type]
    if t is cst.Call and _writes_once(node, unique):  # winning_writes(x, 3) -> True, (x, i) -> index_lands(x, i)
        return _lands_once(node, unique)  # type: ignore[arg-type]
    if t is cst.Call and _lands_always(node):  # index_lands(z, 3) -> True (a literal index is checked in range)
        return cst.Name("True")
    if t is cst.BinaryOperation:
        assert isinstance(node, cst.BinaryOperation)
        lv, rv = _num(node.left), _num(node.right)
        op = type(node.operator).__name__
        if lv is not None and rv is not None and op in ("Add", "Subtract", "Multiply"):
            v = {"Add": lv + rv, "Subtract": lv - rv, "Multiply": lv * rv}[op]
            return expr(repr(v))
        if op == "Power" and rv == 1 and isinstance(rv, int):
            return node.left
    if t is cst.Comparison:  # `2 == 0` (a literal exponent in power's rule) -> False
        assert isinstance(node, cst.Comparison)
        if len(node.comparisons) == 1:
            lv, rv = _num(node.left), _num(node.comparisons[0].comparator)
            op = type(node.comparisons[0].operator).__name__
            if lv is not None and rv is not None and op in ("Equal", "NotEqual"):
                return cst.Name(str((lv == rv) == (op == "Equal")))
    if t is cst.Call and _literal_where(node):  # np.where(False, a, b) -> b
        assert isinstance(node, cst.Call)
        return node.args[1 if node.args[0].value.value == "True" else 2].value  # type: ignore[attr-defined]
    return node


# the calls taking an index mode (default "drop"), by the position of their `mode` parameter
_MODE_AT = {"index_add": 3, "batch_index_add": 7, "batch_index_add_bar": 5}


def _default_keyword(call: cst.Call, a: cst.Arg) -> bool:
    """An argument a template passes that is its callee's default: ``dtype=None`` (NumPy's everywhere), the mode
    ``"drop"`` of ``index_add`` (its ``"clip"``, a read's transpose, is printed unless the key is literal)."""
    v = a.value
    if a.keyword is not None and a.keyword.value == "dtype":
        return isinstance(v, cst.Name) and v.value == "None"
    name = call.func.value if isinstance(call.func, cst.Name) else ""
    at = _MODE_AT.get(name)
    if at is None or not isinstance(v, cst.SimpleString) or \
            not (a.keyword is not None and a.keyword.value == "mode" or len(call.args) > at and call.args[at] is a):
        return False
    # (a literal key, checked in range where it compiles, adds at the same place in either mode: printed without)
    return v.evaluated_value == "drop" or name == "index_add" and unique_key(call.args[1].value)


def _literal_where(node: Any) -> bool:
    f = node.func
    return isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == "np" and \
        f.attr.value == "where" and len(node.args) == 3 and all(a.keyword is None for a in node.args) and \
        isinstance(node.args[0].value, cst.Name) and node.args[0].value.value in ("True", "False")


# Templates that read or clear an item of a container by a string key (a dict's, or a NamedTuple's or
# dataclass's field), and their forms for any other key (an array's index, a list's position), which
# read nothing else: `tree_get(g, "w")` / `g[k]`, `index_cleared(g, x, "w")` / `index_update(g, k, 0.0)`.
_KEYED = {"tree_get", "index_cleared"}


def _unkeyed_call(node: Any, containers: frozenset[str]) -> bool:
    """Whether a keyed template's call takes its form for any key: not for a string key, nor for
    ``index_cleared`` by a name keying a container (``for k in p: out[k] = ...``: ``out`` a dict, whose item's
    cotangent is cleared to zeros of its shape, not to the number 0.0)."""
    if not (isinstance(node.func, cst.Name) and node.func.value in _KEYED):
        return False
    key = node.args[-1].value
    if node.func.value == "index_cleared" and isinstance(key, cst.Name) and key.value in containers:
        return False
    return not isinstance(key, cst.SimpleString)


def _unkeyed(node: cst.Call) -> cst.BaseExpression:
    if node.func.value == "tree_get":  # type: ignore[attr-defined]
        return cst.Subscript(value=node.args[0].value, slice=[cst.SubscriptElement(cst.Index(node.args[1].value))])
    g, _, key = (a.value for a in node.args)
    return cst.Call(func=cst.Name("index_update"), args=[cst.Arg(g), cst.Arg(key), cst.Arg(cst.Float("0.0"))])


def _writes_once(node: Any, unique: frozenset[str]) -> bool:
    """A ``winning_writes(x, key)`` call whose key cannot name an element twice (:func:`unique_key`), or whose
    ``x`` is always a list or dict (``unique.held``: an item is written once, by any key)."""
    if not (isinstance(node.func, cst.Name) and node.func.value == "winning_writes" and len(node.args) == 2):
        return False
    x = node.args[0].value
    return unique_key(node.args[1].value, unique) or \
        isinstance(x, cst.Name) and x.value in getattr(unique, "held", frozenset())


def _literal_where_of_write(node: Any, unique: frozenset[str]) -> bool:
    """``np.where(winning_writes(x, i), tree_get(g, i), 0.0)`` (index_update's cotangent of its value) with a key
    of integer names (:func:`_lands_once`): its mask is :func:`_lands_of_write`'s."""
    f = node.func
    if not (isinstance(f, cst.Attribute) and code(f) == "np.where" and len(node.args) == 3):
        return False
    mask, read = node.args[0].value, node.args[1].value
    return isinstance(mask, cst.Call) and _writes_once(mask, unique) and \
        not isinstance(_lands_once(mask, unique), cst.Name) and isinstance(read, cst.Call) and \
        isinstance(read.func, cst.Name) and read.func.value == "tree_get" and isinstance(read.args[0].value, cst.Name)


def _lands_of_write(node: cst.Call) -> cst.Call:
    """:func:`_literal_where_of_write`'s call with its mask ``index_lands(g, i)``: the cotangent ``g`` has the
    written array's shape, all the mask reads (``x`` itself would be kept for it: on a loop's tape, every step)."""
    mask, read = node.args[0].value, node.args[1].value
    lands = cst.Call(func=cst.Name("index_lands"), args=[cst.Arg(read.args[0].value),  # type: ignore[attr-defined]
                                                        mask.args[1].with_changes(comma=cst.MaybeSentinel.DEFAULT)])  # type: ignore[attr-defined]
    return node.with_changes(args=[node.args[0].with_changes(value=lands), *node.args[1:]])


def _lands_once(node: cst.Call, unique: frozenset[str]) -> cst.BaseExpression:
    """A :func:`_writes_once` ``winning_writes(x, key)``: True for a literal key (in range where it compiles) or a
    list or dict ``x``; for a key of integer names (``i`` of ``for i in range(7)``, known only at run time) whether
    the write lands, ``index_lands(x, key)`` (False where ``i`` is out of range: the write was dropped, its value
    gets no cotangent, as JAX's; was folded to True)."""
    x, key = node.args[0].value, node.args[1].value
    if unique_key(key) or isinstance(x, cst.Name) and x.value in getattr(unique, "held", frozenset()) or \
            isinstance(key, cst.Name) and key.value in getattr(unique, "containers", frozenset()):
        return cst.Name("True")  # (a container's key: a write into a list or dict never drops)
    return node.with_changes(func=cst.Name("index_lands"))


def _lands_always(node: Any) -> bool:
    """An ``index_lands(z, key)`` call whose key is literal (integers, slices, ...): in range where it compiles (a
    name's integer, known at run time only, may not be: no fold)."""
    return isinstance(node.func, cst.Name) and node.func.value == "index_lands" and len(node.args) == 2 and \
        unique_key(node.args[1].value)


def unique_key(key: cst.BaseExpression, unique: frozenset[str] = frozenset()) -> bool:
    """Whether an index key's source names each element once at most: integers, slices, strings,
    None, ``...``, ``np.s_[...]`` of those, the names in ``unique`` (integers), and tuples of them."""
    if isinstance(key, (cst.Integer, cst.SimpleString, cst.Ellipsis)):
        return True
    if isinstance(key, cst.Name):
        return key.value == "None" or key.value in unique
    if isinstance(key, cst.UnaryOperation) and isinstance(key.operator, cst.Minus):
        return unique_key(key.expression, unique)
    if isinstance(key, cst.Tuple):
        return all(unique_key(e.value, unique) for e in key.elements)
    if isinstance(key, cst.Call):
        return isinstance(key.func, cst.Name) and key.func.value == "slice"
    if isinstance(key, cst.Subscript) and code(key.value) == "np.s_":
        return all(isinstance(e.slice, cst.Slice) or
                   isinstance(e.slice, cst.Index) and unique_key(e.slice.value, unique) for e in key.slice)
    return False


def _num(node: cst.BaseExpression) -> int | float | None:
    if isinstance(node, cst.Integer):
        return int(literal_value(node))
    if isinstance(node, cst.Float):
        return float(literal_value(node))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        v = _num(node.expression)
        return -v if v is not None else None
    return None


_TEMPLATE_CACHE: dict[str, cst.BaseExpression] = {}
_EXPR_CACHE: dict[str, cst.BaseExpression] = {}


def expr(text: str) -> cst.BaseExpression:
    """``cst.parse_expression(text)`` (``frontend.cst_expressions``: the same tree, cheaper), remembered (trees
    are immutable; only their text is used)."""
    hit = _EXPR_CACHE.get(text)
    if hit is None:
        if len(_EXPR_CACHE) > 20000:
            _EXPR_CACHE.clear()
        hit = _EXPR_CACHE[text] = cst.Name(text) if text.isidentifier() and not keyword.iskeyword(text) \
            else parse_expression(text)
    return hit


_TEMPLATE_NAMES: dict[str, tuple[str, ...]] = {}
_INSTANCES: dict[tuple[Any, ...], str] = {}  # (template, names' texts, unique, its containers' keys)


def instantiate(template: str, mapping: dict[str, str], unique: frozenset[str] = frozenset()) -> str:
    """``template`` with each name in ``mapping`` replaced by its text (or tree), folded (``unique``: names
    that hold integers, indices that cannot repeat). The text depends only on the template, the texts its
    names are given and ``unique``: remembered by those (a derivative instantiates the same rule with the
    same names again and again: ``x``, ``out_bar``)."""
    names = _TEMPLATE_NAMES.get(template)
    if names is None:
        template_holes.load(_TEMPLATE_NAMES, _HOLES, _LITERAL_HOLES)  # (once per process: what earlier ones found)
        names = _TEMPLATE_NAMES.get(template)
    if names is None:
        names = tuple(sorted({n.value for n in walk(_tree(template)) if type(n) is cst.Name}))
        with template_holes.locked():
            _TEMPLATE_NAMES[template] = names
    given = tuple(mapping.get(n) for n in names)
    plain = all(v is None or v.__class__ is str for v in given)
    key = (template, given, unique, getattr(unique, "containers", None)) if plain else None
    hit = _INSTANCES.get(key) if key is not None else None  # type: ignore[arg-type]
    if hit is not None:
        return hit
    text = _named(template, names, given) if plain else None  # type: ignore[arg-type]
    if text is None and plain:
        text = _partly_named(template, names, given)  # type: ignore[arg-type]
    if text is None:
        nodes = {k: expr(v) if not isinstance(v, cst.BaseExpression) else v for k, v in mapping.items()}
        text = code(_fold(renamed(_tree(template), nodes), unique))
    if key is not None:
        if len(_INSTANCES) > 20000:
            _INSTANCES.clear()
        _INSTANCES[key] = text  # type: ignore[index]
    return text


def _tree(template: str) -> cst.BaseExpression:
    tree = _TEMPLATE_CACHE.get(template)
    if tree is None:
        tree = _TEMPLATE_CACHE[template] = parse_expression(template)
    return tree


# (a template, which of its names are given) -> its text with a hole (`__srcjax_hole_3__`) for each name given,
# or None where filling names in could fold (see _named)
_HOLES: dict[tuple[str, tuple[bool, ...]], str | None] = {}
_HOLE = re.compile(r"__srcjax_hole_(\d+)__")
_NAME_FOLDS = frozenset({*_KEYED, "winning_writes", "index_lands"})  # (calls folded by the names their keys are given)


def _named(template: str, names: tuple[str, ...], given: tuple[str | None, ...]) -> str | None:
    """What :func:`instantiate` writes when each name of ``template`` given a value is given a name (an
    identifier, not ``None``/``True``/``False``: keywords) and nothing in the template folds: its text with
    the holes filled, without renaming, folding and printing the tree again (the holed texts kept for later
    processes: template_holes.py). Folding depends on the names given only through literals (numbers,
    strings, ``None``/``True``/``False``) and the keys of :data:`_NAME_FOLDS`' calls: a template without
    those that does not fold with names of its own does not fold with other names either. None: not such a
    case (the tree's way)."""
    if not all(v is None or v.isidentifier() and not keyword.iskeyword(v) for v in given):
        return None
    key = (template, tuple(v is not None for v in given))
    holed = _HOLES.get(key, "")
    if holed == "":
        holed = _holed(_tree(template), names, key[1])
        with template_holes.locked():
            _HOLES[key] = holed
        template_holes.found_new(_TEMPLATE_NAMES, _HOLES, _LITERAL_HOLES)
    if holed is None:
        return None
    return _HOLE.sub(lambda m: given[int(m.group(1))], holed)  # type: ignore[arg-type, return-value]


# (a template, each of its names: None not given, True given a name (a hole), or the text it is given) -> the
# template folded with those texts and a hole for each name given, or None where folding could depend on the
# names (see _partly_named)
_LITERAL_HOLES: dict[tuple[str, tuple[str | bool | None, ...]], str | None] = {}
_LITERALS_KEPT = 4096


def _partly_named(template: str, names: tuple[str, ...], given: tuple[str | None, ...]) -> str | None:
    """What :func:`instantiate` writes when some names of ``template`` are given other texts than names
    (literals, keywords, expressions: ``2``, ``None``, ``np.s_[1:]``), the rest names: the template with those
    texts, folded, a hole for each name given (kept for later processes with :data:`_HOLES`), the holes
    filled. Folding reads a name's text only for ``np`` (``np.where``), keywords (``None``, ``True``,
    ``False``: never holes) and the calls of :data:`_NAME_FOLDS` (with ``unique`` and its containers): a
    tree without those calls folds alike whatever other names it holds. None: a tree with such a call, a hole's
    spelling in a text, a text that does not parse (the tree's way)."""
    pattern = tuple(None if v is None else True if _is_hole(v) else v for v in given)
    key = (template, pattern)
    holed = _LITERAL_HOLES.get(key, "")
    if holed == "":
        if len(_LITERAL_HOLES) >= _LITERALS_KEPT:  # (texts of programs: the table, and its entry, stay bounded)
            return None
        holed = _literal_holed(template, names, pattern)
        with template_holes.locked():
            _LITERAL_HOLES[key] = holed
        template_holes.found_new(_TEMPLATE_NAMES, _HOLES, _LITERAL_HOLES)
    if holed is None:
        return None
    return _HOLE.sub(lambda m: given[int(m.group(1))], holed)  # type: ignore[arg-type, return-value]


def _is_hole(text: str) -> bool:
    """Whether a name's given text is filled in a hole: a name, not a keyword, nor ``np`` (``np.where`` folds)."""
    return text.isidentifier() and not keyword.iskeyword(text) and text != "np"


def _literal_holed(template: str, names: tuple[str, ...], pattern: tuple[str | bool | None, ...]) -> str | None:
    if "__srcjax_hole_" in template or any(type(p) is str and "__srcjax_hole_" in p for p in pattern):
        return None
    try:
        tree = renamed(_tree(template), {n: cst.Name(f"__srcjax_hole_{i}__") if p is True else expr(p)
                                         for i, (n, p) in enumerate(zip(names, pattern)) if type(p) is str or p})
    except Exception:  # noqa: BLE001 - a text that does not parse: the tree's way (its error)
        return None
    if any(type(n) is cst.Call and type(n.func) is cst.Name and n.func.value in _NAME_FOLDS  # type: ignore[attr-defined]
           for n in walk(tree)):
        return None
    return code(_fold(tree))


def _holed(tree: cst.BaseExpression, names: tuple[str, ...], filled: tuple[bool, ...]) -> str | None:
    if _fold(tree) is not tree or any(type(n) is cst.Call and type(n.func) is cst.Name and  # type: ignore[attr-defined]
                                      n.func.value in _NAME_FOLDS for n in walk(tree)):  # type: ignore[attr-defined]
        return None
    if "__srcjax_hole_" in code(tree):
        return None
    return code(renamed(tree, {n: cst.Name(f"__srcjax_hole_{i}__") for i, n in enumerate(names) if filled[i]}))


def paren(s: str) -> str:
    return s if s.isidentifier() or s.replace(".", "").replace("_", "").isalnum() else f"({s})"


_TIGHTER_THAN_ADD = (ast.Mult, ast.MatMult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)


def summand(s: str) -> str:
    """``s`` as the right operand of ``+``: parenthesized unless it binds tighter (a call, a name,
    a subscript, a product): ``g_bar + h * 2``, ``g_bar + (a - b)``."""
    if "\n" in s:
        return f"({s})"
    node = parsed.expression(s)  # (remembered per text: accumulations repeat their operands' texts)
    if node is None:
        return f"({s})"
    tight = isinstance(node, (ast.Call, ast.Name, ast.Attribute, ast.Subscript)) or \
        isinstance(node, ast.BinOp) and isinstance(node.op, _TIGHTER_THAN_ADD)
    return s if tight else f"({s})"
