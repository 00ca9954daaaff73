"""Starred assignment targets, written as indexing for the normalizer: ``a, *b, c = v`` ->
``unpacked = v``, checks of its kind and length, ``a = unpacked[0]``,
``b = [unpacked[i] for i in range(1, len(unpacked) - 1)]``, ``c = unpacked[-1]``.
As in Python (and so under jax), ``v`` is a tuple, a list or an array unpacked along its leading
axis (its length is static), and the starred name is bound to a list (a loop, which derivatives
and vmap follow, not ``list(...)``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .names import target_names

if TYPE_CHECKING:
    from .normalize import Normalizer

__all__ = ["assign", "has_nested_star", "has_star", "starred_assign"]


def has_star(t: cst.BaseExpression) -> bool:
    """Whether the target ``t`` is a tuple or list with a starred element at its top level."""
    # (exact types: libcst's node classes are final; isinstance goes through ABCMeta)
    return (type(t) is cst.Tuple or type(t) is cst.List) and any(type(e) is cst.StarredElement for e in t.elements)


def starred_assign(norm: Normalizer, t: cst.Tuple | cst.List, value: cst.BaseExpression, origin: cst.CSTNode) -> None:
    """Emit ``t = value`` for a target with one starred element (Python allows no more)."""
    elems = list(t.elements)
    k = next(i for i, e in enumerate(elems) if isinstance(e, cst.StarredElement))
    after = len(elems) - k - 1
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("list", "tuple") \
            and len(value.args) == 1 and value.args[0].keyword is None and not value.args[0].star:
        value = value.args[0].value  # (`a, *b = list(x)` unpacks x's items as `a, *b = x` does)
    flat = norm.flat(value)[0]
    if isinstance(flat, cst.Name) and flat.value not in target_names(t):
        src = flat.value  # (`first, *rest = ws`: ws itself, which vmap may know to be an argument's list)
    else:
        src = norm.fresh("unpacked")  # (a copy first: a target may rebind a name the value reads)
        norm.assign(cst.Name(src), flat, origin)
    need = len(elems) - 1
    for test, msg in ((f"not isinstance({src}, dict)", "unpacking a dict: unpack list(d.values()) or its keys"),
                      (f"len({src}) >= {need}", f"not enough values to unpack (expected at least {need})")):
        norm.emit(cst.Assert(test=norm.atom(cst.parse_expression(test)), msg=cst.SimpleString(repr(msg))), origin)
    for i, e in enumerate(elems):
        if i < k:
            text = f"{src}[{i}]"
        elif i == k:
            end = f"len({src}) - {after}" if after else f"len({src})"
            text = f"[{src}[i] for i in range({k}, {end})]"  # (not list(...): a loop derivatives and vmap follow)
        else:
            text = f"{src}[{i - len(elems)}]"
        flat = norm.flat(cst.parse_expression(text))[0]
        norm.assign(norm.target(e.value), flat, origin)


def has_nested_star(t: cst.BaseExpression) -> bool:
    """Whether a tuple or list inside the target ``t`` has a starred element (``(a, *b), c``)."""
    return (type(t) is cst.Tuple or type(t) is cst.List) and any(
        type(e) is cst.Element and (has_star(e.value) or has_nested_star(e.value)) for e in t.elements)


def assign(norm: Normalizer, t: cst.BaseExpression, value: cst.BaseExpression, origin: cst.CSTNode) -> None:
    """Emit ``t = value`` for a target with starred elements at any level: a nested level holding one is unpacked
    in an assignment of its own (``(c, *d), e = v`` -> ``level, e = v``, then ``c, *d = level``)."""
    later: list[tuple[cst.BaseExpression, cst.Name]] = []
    if has_nested_star(t):
        assert isinstance(t, (cst.Tuple, cst.List))
        elems: list[cst.BaseElement] = []
        for e in t.elements:
            if isinstance(e, cst.Element) and (has_star(e.value) or has_nested_star(e.value)):
                later.append((e.value, cst.Name(norm.fresh("level"))))
                e = e.with_changes(value=later[-1][1])
            elems.append(e)
        t = t.with_changes(elements=elems)
    if has_star(t):
        starred_assign(norm, t, value, origin)  # type: ignore[arg-type]
    else:
        norm.assign(norm.target(t), norm.flat(value)[0], origin)
    for inner, name in later:
        assign(norm, inner, name, origin)
