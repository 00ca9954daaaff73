"""Comprehensions and builtin reductions over items written as loops, for derivatives.

Derivatives follow lists built by ``append`` in a ``for`` loop, dicts filled by item assignment
(``d[k] = v``) and sums accumulated in a loop, but not comprehensions, whose items are out of reach
of the statements a derivative is written from. When a function's comprehensions read
differentiated values, it is read again (``comprehension_loops=True``) with

- ``[e for t in it if c]`` / ``(e for ...)`` as ``items = []`` and a loop that appends ``e``;
- ``{k: v for ...}`` (which :func:`syntax.dict_comprehensions` wrote ``dict([(k, v) for ...])``)
  as ``items = {}`` and a loop that assigns ``items[k] = v``;
- ``sum(e for ...)`` / ``sum(seq, start)`` (the builtin) as ``total = start`` and a loop that adds
  each item, exactly as ``sum`` does (no list);
- ``dict(p)`` (a copy of a dict) as ``{**p}``, below.

Always (not only for derivatives), ``{**p, "b": v}`` is written ``items = {}``, a loop that copies
each item of ``p`` (``items[k] = p[k]``) and ``items["b"] = v``, in the order Python evaluates them.

A generator expression is evaluated at once (its consumers in the supported subset read every
item). The comprehension's own names are renamed apart (in Python 3 they do not leak); positions
are kept, so errors still point into the comprehension.
"""

from __future__ import annotations

import builtins
from typing import Any

import libcst as cst

from . import function_names
from .bound_helpers import is_plain_function
from .names import comprehension_targets, copy_positions, renamed


def comprehension_loop(norm: Any, node: cst.ListComp | cst.GeneratorExp,
                       total: tuple[cst.BaseExpression, cst.CSTNode] | None = None,
                       pairs: bool = False) -> tuple[cst.BaseExpression, str | None]:
    """Write ``node`` as loops through ``norm`` (the :class:`Normalizer` reading the function):
    appends; with ``total=(start, call)`` additions from ``start``; with ``pairs`` (``node``'s
    element a ``(key, value)`` tuple) item assignments into a new dict. Returns the name that holds
    the result."""
    positions = norm.src.positions
    mapping: dict[str, cst.BaseExpression] = {n: cst.Name(norm.fresh(n)) for n in
                                              sorted(comprehension_targets(node))}
    new = renamed(node, mapping)
    copy_positions(node, new, positions)
    # (the first iterable is evaluated in the enclosing scope: `[f(m) for m in leaves(m)]` reads the outer m)
    outer_for = new.for_in.with_changes(iter=node.for_in.iter)
    whole = new.with_changes(for_in=outer_for)
    for made, was in ((outer_for, new.for_in), (whole, new)):
        if was in positions:
            positions[made] = positions[was]
    new = whole
    result = norm.fresh("total" if total is not None else "items")

    def located(made: Any, origin: cst.CSTNode) -> Any:
        r = positions.get(origin)
        if r is not None:
            positions[made] = r
        return made

    def leaf() -> cst.BaseSmallStatement:
        if total is not None:
            return cst.Assign(targets=[cst.AssignTarget(cst.Name(result))],
                              value=cst.BinaryOperation(cst.Name(result), cst.Add(), new.elt))
        if pairs:
            assert isinstance(new.elt, cst.Tuple)
            key, value = (e.value for e in new.elt.elements)
            item = cst.Subscript(value=cst.Name(result), slice=[cst.SubscriptElement(cst.Index(key))])
            return cst.Assign(targets=[cst.AssignTarget(located(item, new.elt))], value=value)
        return cst.Expr(cst.Call(func=cst.Attribute(value=cst.Name(result), attr=cst.Name("append")),
                                 args=[cst.Arg(new.elt)]))

    def loop(cf: cst.CompFor) -> list[cst.BaseStatement]:
        inner: list[cst.BaseStatement]
        if cf.inner_for_in is not None:
            inner = loop(cf.inner_for_in)
        else:
            inner = [located(cst.SimpleStatementLine(body=[located(leaf(), new.elt)]), new.elt)]
        for c in reversed(cf.ifs):
            inner = [located(cst.If(test=c.test, body=cst.IndentedBlock(body=inner)), c.test)]
        if isinstance(cf.target, cst.Name) and (fns := function_names.function_items(cf.iter, known)) is not None \
                and not any(function_names.binds(s, cf.target.value) for s in inner):
            return function_names.unrolled(inner, cf.target.value, fns, positions)  # `for f in (np.sin, np.cos)`
        return [located(cst.For(target=cf.target, iter=cf.iter, body=cst.IndentedBlock(body=inner)), cf)]

    def known(v: cst.BaseExpression) -> bool:
        ok, fv = norm.static_value(v)
        return ok and is_plain_function(fv)

    first = total[0] if total is not None else cst.Dict([]) if pairs else cst.List([])
    origin = total[1] if total is not None else node
    start = located(cst.Assign(targets=[cst.AssignTarget(cst.Name(result))], value=first), origin)
    norm.statement(located(cst.SimpleStatementLine(body=[start]), origin))
    for s in loop(new.for_in):
        norm.statement(s)
    return cst.Name(result), None


def merged_dict(norm: Any, elements: Any, origin: cst.CSTNode) -> tuple[cst.BaseExpression, str | None]:
    """``{**p, k: v, **q}`` (``elements``) as a new dict filled item by item (see the module's docstring)."""
    positions = norm.src.positions
    result = norm.fresh("items")

    def line(small: cst.BaseSmallStatement) -> cst.SimpleStatementLine:
        made = cst.SimpleStatementLine(body=[small])
        r = positions.get(origin)
        if r is not None:
            positions[made] = positions[small] = r
        return made

    def item(key: cst.BaseExpression, value: cst.BaseExpression) -> cst.SimpleStatementLine:
        sub = cst.Subscript(value=cst.Name(result), slice=[cst.SubscriptElement(cst.Index(key))])
        return line(cst.Assign(targets=[cst.AssignTarget(sub)], value=value))

    norm.statement(line(cst.Assign(targets=[cst.AssignTarget(cst.Name(result))], value=cst.Dict([]))))
    for e in elements:
        if isinstance(e, cst.StarredDictElement):
            src = norm.atom(e.value)
            key = cst.Name(norm.fresh("key"))
            copy = item(key, cst.Subscript(value=src, slice=[cst.SubscriptElement(cst.Index(key))]))
            keys = cst.Call(func=cst.Attribute(value=src, attr=cst.Name("keys")))  # (keys, never rows: `a` rebound)
            loop = cst.For(target=key, iter=keys, body=cst.IndentedBlock(body=[copy]))
            r = positions.get(e)
            if r is not None:
                positions[loop] = r
            norm.statement(loop)
        else:
            norm.statement(item(e.key, e.value))
    return cst.Name(result), None


def looped_builtin(norm: Any, node: cst.Call, name: str) -> bool:
    """Whether the call of ``name`` is the builtin ``sum`` or ``dict`` that :func:`builtin_loop` may write as a
    loop: read for derivatives (``norm.comprehension_loops``), or ``dict(p, w=v)`` wherever it is read (a dict
    with items replaced or added, written ``{**p, "w": v}``: item by item, as every transformation follows)."""
    keyword_merge = name == "dict" and len(node.args) > 1 and node.args[0].keyword is None and \
        node.args[0].star == "" and all(a.keyword is not None and a.star == "" for a in node.args[1:])
    return (norm.comprehension_loops or keyword_merge) and name in ("sum", "dict") and name not in norm.locals and \
        norm.lookup(name)[1] is getattr(builtins, name)


def builtin_loop(norm: Any, node: cst.Call, name: str) -> tuple[cst.BaseExpression, str | None] | None:
    """The builtin ``sum(...)`` or ``dict(<comprehension of pairs>)`` written as a loop, or None
    when the call has another form (it is then read as a call)."""
    pos = [a for a in node.args if a.keyword is None]
    kws = {a.keyword.value: a for a in node.args if a.keyword is not None}
    if name == "dict":
        it = pos[0].value if len(pos) == 1 and not kws else None
        if isinstance(it, (cst.ListComp, cst.GeneratorExp)) and isinstance(it.elt, cst.Tuple) and \
                len(it.elt.elements) == 2 and not any(isinstance(e, cst.StarredElement) for e in it.elt.elements):
            return comprehension_loop(norm, it, pairs=True)
        if it is not None and not isinstance(it, (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)):
            return merged_dict(norm, [cst.StarredDictElement(it)], node)  # dict(p): a copy of the dict p
        first = pos[0].value if len(pos) == 1 else None
        if first is not None and kws and all(a.star == "" for a in node.args) and \
                not isinstance(first, (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)):
            items = [cst.DictElement(cst.SimpleString(repr(k)), a.value) for k, a in kws.items()]
            return merged_dict(norm, [cst.StarredDictElement(first), *items], node)  # dict(p, w=v): {**p, "w": v}
        return None
    if not pos or len(pos) > 2 or set(kws) - {"start"} or len(pos) + len(kws) > 2:
        return None
    start: cst.BaseExpression = pos[1].value if len(pos) == 2 else \
        kws["start"].value if kws else cst.Integer("0")
    it = pos[0].value
    if isinstance(it, (cst.ListComp, cst.GeneratorExp)):
        return comprehension_loop(norm, it, total=(start, node))
    seq = norm.atom(it)
    item = cst.Name(norm.fresh("item"))
    gen = cst.GeneratorExp(elt=item, for_in=cst.CompFor(target=item, iter=seq))
    return comprehension_loop(norm, gen, total=(start, node))
