"""A ``while_loop`` whose test counts: the carry item it counts with, so its trip bound is kept.

Reverse mode needs a bound on a ``while`` loop on data (:mod:`srcjax.transforms.bounded` reads one
from a test ``it < n`` on a counter set before the loop and raised once per iteration). A loop
written as ``srcjax.lax.while_loop(cond, body, init)`` hides its counter in the carry;
:func:`counter` finds it in the loop's functions (ANF)::

    def cond(carry):                    def body(carry):
        x, it = carry                       x, it = carry
        lt = it < 4                         ...
        ...                                 it = it + 1
        return np.logical_and(lt, ...)      return x, it

Two passes use it:

* :mod:`srcjax.transforms.inline_lax` writes such a call out as a Python ``while`` with its own
  trip counter in the form ``bounded`` reads (``trips = start`` before the loop, ``trips < n and
  go`` as the test, ``trips = trips + c`` in the body): reverse mode gets the bound;
* vmap (:mod:`srcjax.transforms.batch_lax`) batches a loop with a batched test as "run while any
  example runs", where the counter becomes per example and the test ``np.any(...)``. The bound
  still holds: an example stops for good once its test fails (a done example's carry is frozen,
  and so its test), so on the batched loop's ``t``-th trip every running example has counted
  ``t - 1`` steps from the same start; once ``start + c * (t - 1)`` reaches ``n`` no example runs.
  The batched loop therefore carries one more, unbatched, counter tested against ``n`` (exact:
  it never stops an example that would run), which this module finds again in the batched loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import libcst as cst

from ..frontend.names import assigned_names, code, names_in, target_names
from ..frontend.syntax import int_literal


@dataclass(frozen=True)
class Counter:
    """Carry item ``index`` counts: the loop runs while it is ``<`` (``<=`` when ``inclusive``) ``bound``
    and rises by ``step`` (> 0) per iteration."""
    index: int | None  # None: the carry is the counter itself
    bound: str
    inclusive: bool
    step: int


def _unpacked(fdef: cst.FunctionDef) -> tuple[dict[int | None, str], list[Any]] | None:
    """The carry item -> local name map of a loop function taking one ``carry`` (unpacked by its first
    statement, or used whole), and the statements after the unpacking."""
    params = fdef.params.params
    if len(params) != 1:
        return None
    p = params[0].name.value
    body = list(fdef.body.body)
    first = body[0] if body else None
    if isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1 and isinstance(first.body[0], cst.Assign):
        a = first.body[0]
        if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Tuple) and code(a.value) == p:
            els = a.targets[0].target.elements
            if all(isinstance(e.value, cst.Name) for e in els):
                return {i: e.value.value for i, e in enumerate(els)}, body[1:]  # type: ignore[attr-defined]
            return None
    return {None: p}, body


def _assigns(body: list[Any]) -> dict[str, list[cst.BaseExpression]]:
    """Every top-level single-target ``name = value`` of ``body`` by name (compound statements add no
    value: a name bound inside them is marked by an empty-list sentinel entry ``None``)."""
    out: dict[str, list[Any]] = {}
    for st in body:
        if isinstance(st, cst.SimpleStatementLine):
            for small in st.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                        isinstance(small.targets[0].target, cst.Name):
                    out.setdefault(small.targets[0].target.value, []).append(small.value)
                elif isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                    tgts = small.targets if isinstance(small, cst.Assign) else [small]
                    for t in tgts:
                        for n in target_names(t.target):
                            out.setdefault(n, []).append(None)
        else:
            for n in assigned_names([st]):
                out.setdefault(n, []).append(None)
    return out


def _returned(body: list[Any]) -> cst.BaseExpression | None:
    last = body[-1] if body else None
    if isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 and isinstance(last.body[0], cst.Return):
        return last.body[0].value
    return None


def _conjuncts(e: cst.BaseExpression, defs: dict[str, list[Any]], out: list[cst.BaseExpression]) -> None:
    """The comparisons ``e`` is the conjunction of (through names bound once and ``np.logical_and``)."""
    if isinstance(e, cst.Name) and len(defs.get(e.value, [])) == 1 and defs[e.value][0] is not None:
        _conjuncts(defs[e.value][0], defs, out)
    elif isinstance(e, cst.Call) and code(e.func) == "np.logical_and" and len(e.args) == 2 and \
            all(a.keyword is None and not a.star for a in e.args):
        _conjuncts(e.args[0].value, defs, out)
        _conjuncts(e.args[1].value, defs, out)
    elif isinstance(e, cst.BooleanOperation) and isinstance(e.operator, cst.And):
        _conjuncts(e.left, defs, out)
        _conjuncts(e.right, defs, out)
    else:
        out.append(e)


def counter(cond: cst.FunctionDef, body: cst.FunctionDef, init: cst.BaseExpression) -> Counter | None:
    """A carry item the loop ``while_loop(cond, body, init)`` counts with and tests against a bound
    that does not change in the loop (see the module docstring), or None."""
    cu, bu = _unpacked(cond), _unpacked(body)
    if cu is None or bu is None or set(cu[0]) != set(bu[0]):
        return None
    if None not in cu[0] and not (isinstance(init, cst.Tuple) and len(init.elements) == len(cu[0])):
        return None
    cdefs = _assigns(cu[1])
    ret = _returned(cu[1])
    if ret is None:
        return None
    local = set(cu[0].values()) | set(cdefs)
    conj: list[cst.BaseExpression] = []
    _conjuncts(ret, cdefs, conj)
    by_name = {v: k for k, v in cu[0].items()}
    for e in conj:
        if not isinstance(e, cst.Comparison) or len(e.comparisons) != 1:
            continue
        op, left, right = e.comparisons[0].operator, e.left, e.comparisons[0].comparator
        if isinstance(op, (cst.GreaterThan, cst.GreaterThanEqual)):
            left, right = right, left
            op = cst.LessThan() if isinstance(op, cst.GreaterThan) else cst.LessThanEqual()
        if not isinstance(op, (cst.LessThan, cst.LessThanEqual)) or not isinstance(left, cst.Name) or \
                left.value not in by_name or cdefs.get(left.value) or set(names_in(right)) & local:
            continue
        k = by_name[left.value]
        step = _step(bu[0][k], bu[1], k)
        if step is not None:
            return Counter(k, code(right), isinstance(op, cst.LessThanEqual), step)
    return None


def _step(name: str, body: list[Any], k: int | None) -> int | None:
    """``c`` when the loop body returns, as carry item ``k``, its item ``name`` plus a positive literal
    ``c`` (bound once at the top level, ``name`` not bound again)."""
    defs = _assigns(body)
    ret = _returned(body)
    if ret is None:
        return None
    if k is None:
        out = ret
    elif isinstance(ret, cst.Tuple) and k < len(ret.elements):
        out = ret.elements[k].value
    else:
        return None
    if not isinstance(out, cst.Name) or len(defs.get(out.value, [])) != 1:
        return None
    v = defs[out.value][0]
    if not (isinstance(v, cst.BinaryOperation) and isinstance(v.operator, cst.Add) and isinstance(v.left, cst.Name)
            and v.left.value == name):
        return None
    if out.value != name and name in defs:
        return None
    c = int_literal(v.right)
    return c if c is not None and c > 0 else None
