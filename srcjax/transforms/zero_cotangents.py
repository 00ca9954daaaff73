"""Symbolic zero cotangents of a helper's outputs: ``d, y = f(x); return np.sum(y)`` gives ``f``'s backward half the
cotangent ``(zeros_like(d), y_bar)``. Run as arrays, the zeros meet ``f``'s local derivatives: ``0 * (0.5 / d)``
is NaN where ``d = np.sqrt(x ** 2)`` is 0, and the gradient was NaN where JAX's is finite (JAX's symbolic zeros
never run the pullback of an output without a cotangent). The call's cotangent, as reverse mode writes it, says
which parts are zeros: a tuple display with ``zeros_like(...)`` elements, or ``index_add(zeros_like(out), key, g)``
(``f(x)[1]``, ``g(x)["y"]``). The helper's backward half is then written for that pattern (reverse_ad.vjp_helper):
its zero parts seed no cotangent, so their pullbacks are never written."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from ..frontend.names import code, names_in, parse_expression
from .anf import DifferentiationError

if TYPE_CHECKING:
    from .reverse_ad import VJP

__all__ = ["Parts", "is_zero", "nonzero_parts", "seed_parts", "written"]

Parts = frozenset[tuple[str, ...]]  # the output parts (paths of keys as written) whose cotangent may be nonzero


def _zeros(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "zeros_like"


def _parts(node: cst.BaseExpression, path: tuple[str, ...]) -> tuple[set[tuple[str, ...]], bool]:
    """(the parts of ``node`` that may be nonzero, whether any part is a zero)."""
    if isinstance(node, cst.Tuple):
        out: set[tuple[str, ...]] = set()
        zero = False
        for k, e in enumerate(node.elements):
            if isinstance(e, cst.StarredElement):
                return {path}, False
            if _zeros(e.value):
                zero = True
                continue
            sub, z = _parts(e.value, (*path, str(k)))
            out |= sub
            zero = zero or z
        return out, zero
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "index_add" and \
            len(node.args) == 3 and isinstance(node.args[1].value, (cst.Integer, cst.SimpleString)):
        inner = node.args[0].value  # (zeros_like(out), or an index_add of it: `f(x)[0] + f(x)[2]`)
        before, zero = (set(), True) if _zeros(inner) else _parts(inner, path)
        if zero:
            return before | {(*path, code(node.args[1].value))}, True
    return {path}, False


def written(g: str, lines: list[str], pad: str) -> str:
    """``g`` as written: a cotangent name's scatters into zeros (``f_bar = index_add(zeros_like(f), 1, y_bar)``,
    then ``f_bar = index_add(f_bar, 0, x_bar)``) among the adjoint ``lines`` of this block, written at ``pad``;
    else ``g`` (written in another block, or any other way: no zero parts known)."""
    if not g.isidentifier():
        return g
    keys: list[str] = []
    for line in reversed(lines):
        lhs, eq, rhs = line.partition(" = ")
        if not eq or not re.search(rf"(^|[^\w.]){g}($|[^\w])", lhs):
            continue
        if lhs != pad + g:
            return g
        if rhs.startswith(f"index_add({g}, "):
            keys.append(rhs[len(f"index_add({g}, "):])
            continue
        if not rhs.startswith("index_add(zeros_like("):
            return g
        for rest in reversed(keys):
            rhs = f"index_add({rhs}, {rest}"
        return rhs
    return g


def nonzero_parts(g: str) -> Parts | None:
    """The parts of the cotangent ``g`` that may be nonzero where it has zero parts, else None."""
    try:
        out, zero = _parts(parse_expression(g), ())
    except Exception:  # noqa: BLE001 - (not an expression of ours: no pattern)
        return None
    return frozenset(out) if zero else None


def is_zero(nonzero: Parts | None, path: tuple[str, ...]) -> bool:
    """Whether the output part at ``path`` has a zero cotangent under ``nonzero``."""
    return nonzero is not None and not any(q[:len(path)] == path or path[:len(q)] == q for q in nonzero)


def seed_parts(v: VJP, node: cst.BaseExpression, g: str, adj: list[str], defined: set[str],
               path: tuple[str, ...] = ()) -> None:
    """``return a, {"h": h, "pair": (s, m)}`` of ``v``'s function: each returned name gets its part of ``g`` (none
    where the part is a zero, :func:`is_zero` of ``v.nonzero``)."""
    if is_zero(v.nonzero, path):
        return
    if isinstance(node, cst.Name):
        if node.value in v.act.active:
            v.accumulate(node.value, g, adj, "    ", defined)
    elif isinstance(node, (cst.Tuple, cst.List)):
        for k, e in enumerate(node.elements):
            seed_parts(v, e.value, f"{g}[{k}]", adj, defined, (*path, str(k)))
    elif isinstance(node, cst.Dict) and all(isinstance(e, cst.DictElement) for e in node.elements):
        for de in node.elements:
            key = code(de.key)  # type: ignore[attr-defined]
            seed_parts(v, de.value, f"{g}[{key}]", adj, defined, (*path, key))
    elif any(n in v.act.active for n in names_in(node)):
        raise DifferentiationError(f"cannot differentiate `return {code(node)}` yet",
                                   hint="assign the result to a variable and return that")
