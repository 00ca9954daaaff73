"""What a helper's forward half saves for its backward half, and which saved values are constants.

A helper's reverse mode is two functions sharing a tape (:func:`~.reverse_ad.vjp_helper`): the forward
half pushes values, the backward half pops them. Forward mode over the backward half (``hessian`` is
``jacfwd(jacrev(f))``) sees every popped value as coming from the tape, which carries tangents, so an
integer saved there (``k + 1`` of a loop over ``range``) would get a zero tangent, and a rule that
multiplies a tangent by a local derivative that is infinite or NaN there (the power's exponent term
``k_dot * log(x) * out`` at ``x < 0``) gives ``0 * nan``. JAX gives integers no tangent at all.

:func:`constant_names` finds the names that never carry a derivative, whatever is differentiated:
values computed from no parameter (``k + 1``, ``float(k)`` of a loop over ``range``, literal arrays),
integers and booleans (:func:`~.activity.unique_keys`), and arrays from primitives without a derivative
(``x.astype(int)``, ``np.argmax``, comparisons). The
backward half pops them under another name and binds them with ``index_key(...)`` (derivatives take it as
a constant), so forward mode gives them a symbolic zero tangent: no tangent statement, no term. Forward
mode itself (:class:`~.forward_ad.JVP`) takes them out of the active names too, items of containers
included: ``n = p[1]`` of ``p = (x, 2)``, and ``y, n = h(x)`` where ``h`` returns ``(..., 3)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import libcst as cst

from ..frontend.names import code, names_in, target_names
from ..frontend.restructure import walk as _walk
from .activity import Activity, unique_keys
from .anf import ITERATOR_CALLS, all_params, call_name


def constant_names(body: Sequence[Any], act: Activity, params: Sequence[str],
                   keys: frozenset[str] | None = None) -> set[str]:
    """Names of ``body`` that never carry a derivative (see the module docstring): computed from no
    parameter (a flow-insensitive fixed point over the names each binding reads; module globals are
    constants), integers and booleans, and arrays from primitives without a derivative. (Binding-time
    analysis's STATIC is not enough: a slice of a list parameter, ``params[:-1]``, is STATIC structure
    holding data.) ``keys``: :func:`~.activity.unique_keys` of ``body`` and ``params`` where the caller has them."""
    deps: dict[str, list[set[str] | None]] = {}  # name -> per binding, the names it reads (None: unknown)

    def bind(names: Sequence[str], reads: set[str] | None) -> None:
        for n in names:
            deps.setdefault(n, []).append(reads)

    literals: dict[str, list[cst.BaseExpression]] = {}  # names bound to a tuple or list literal
    items: list[tuple[str, str, int]] = []  # `a = p[1]`: (a, p, 1)
    for st, _ in _walk(body):
        if isinstance(st, cst.Assign):
            op = act.op(st.value)
            targets = [n for t in st.targets for n in target_names(t.target)]
            target = st.targets[0].target
            if isinstance(target, cst.Name) and isinstance(st.value, (cst.Tuple, cst.List)) and \
                    not any(isinstance(e, cst.StarredElement) for e in st.value.elements):
                literals[target.value] = [e.value for e in st.value.elements]
            if isinstance(target, cst.Name) and (item := _literal_item(st.value)) is not None:
                items.append((target.value, *item))
            if op.kind == "prim" and op.prim is not None and not op.prim.differentiable(op.args) and \
                    op.prim.result_kind(op.args) == "array":
                bind(targets, set())
            elif op.kind == "call" and isinstance(target, cst.Tuple) and len(targets) == len(target.elements) \
                    and (outs := _constant_outputs(act, op.callee)) is not None and len(outs) == len(targets):
                for n, constant_out in zip(targets, outs):  # `y, n = h(x)` where h returns `(..., 3)`
                    bind([n], set() if constant_out else None)
                bind(act.appended_arguments(op), None)
            elif op.kind in ("call", "custom", "tape_pop"):
                bind(targets, None)
                if op.kind == "call":
                    bind(act.appended_arguments(op), None)
            else:
                bind(targets, set(names_in(st.value)))
        elif isinstance(st, (cst.AugAssign, cst.AnnAssign)):
            bind(target_names(st.target), None)
        elif isinstance(st, cst.For):
            bind(target_names(st.target), set(names_in(st.iter)))
        elif isinstance(st, cst.Expr) and isinstance(st.value, cst.Call):  # `out.append(v)`: out holds v
            call = st.value
            if isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name):
                bind([call.func.value.value], {n for a in call.args for n in names_in(a.value)})
            elif act.op(call).kind == "call":  # a helper appending to a list it is passed
                bind(act.appended_arguments(act.op(call)), None)
    for a, p, k in items:  # an item of a literal bound once (`p = (x, 2)`, `a = p[1]`): the item's reads
        if len(deps.get(p, ())) == 1 and -len(literals.get(p, ())) <= k < len(literals.get(p, ())) and \
                len(deps[a]) == 1:
            deps[a] = [set(names_in(literals[p][k]))]
    pinned = set(unique_keys(body, params) if keys is None else keys)
    const = set(deps) - set(params) | pinned
    changed = True
    while changed:
        changed = False
        for n in sorted(const - pinned):
            if any(d is None or any(m in params or (m in deps and m not in const) for m in d) for d in deps[n]):
                const.discard(n)
                changed = True
    return const & set(deps)


def _literal_item(e: cst.BaseExpression) -> tuple[str, int] | None:
    """``p[1]`` (a name, an integer literal): (``p``, 1)."""
    if not (isinstance(e, cst.Subscript) and isinstance(e.value, cst.Name) and len(e.slice) == 1):
        return None
    idx = e.slice[0].slice
    if not isinstance(idx, cst.Index):
        return None
    v = idx.value
    neg = isinstance(v, cst.UnaryOperation) and isinstance(v.operator, cst.Minus)
    v = v.expression if isinstance(v, cst.UnaryOperation) and neg else v
    return (e.value.value, -int(v.value) if neg else int(v.value)) if isinstance(v, cst.Integer) else None


def _constant_outputs(act: Activity, callee: str | None) -> list[bool] | None:
    """Per element of the tuple a helper returns (its one ``return``, at the end), whether it is a
    constant: a number or boolean literal, or an integer or boolean name (``unique_keys``)."""
    nf = act.program.functions.get(callee or "")
    if nf is None:
        return None
    stmts = list(nf.plain_fdef.body.body)
    returns = [st for st, _ in _walk(stmts) if isinstance(st, cst.Return)]
    last = stmts[-1] if stmts else None
    if len(returns) != 1 or not isinstance(last, cst.SimpleStatementLine) or last.body[-1] is not returns[0]:
        return None
    value = returns[0].value
    if not isinstance(value, cst.Tuple):
        return None
    keys = unique_keys(stmts, all_params(nf))

    def constant(e: cst.BaseExpression) -> bool:
        if isinstance(e, cst.UnaryOperation):
            return constant(e.expression)
        return isinstance(e, (cst.Integer, cst.Float)) or isinstance(e, cst.Name) and (
            e.value in ("True", "False", "None") or e.value in keys)

    return [not isinstance(e, cst.StarredElement) and constant(e.value) for e in value.elements]


def restored(names: Sequence[str], constants: set[str], fresh: Callable[[str], str]) -> tuple[list[str], list[str]]:
    """(the targets of a tape pop restoring ``names``, the lines binding the constants among them):
    ``add_saved, div = _tape.pop()`` then ``add = index_key(add_saved)``."""
    saved = {n: fresh(f"{n}_saved") for n in names if n in constants}
    return [saved.get(n, n) for n in names], [f"{n} = index_key({s})" for n, s in saved.items()]


def saved_iterable(it: cst.BaseExpression, values: Mapping[str, Sequence[cst.BaseExpression]] | None = None) -> str:
    """What the primal keeps of a loop's iterable for the adjoint: iterators become lists, a name bound to one too
    (``values``: the values each name is bound to in the function; ``select = zip(keys, flags)`` on one path of a
    helper, ``for k, f in select:``, was saved as the iterator the loop then used up: "'zip' object is not
    reversible" in the adjoint, and ``reversed(list(...))`` of it would run no steps)."""
    return f"list({code(it)})" if _iterator(it, values or {}, 0) else code(it)


def overwritten(body: Sequence[Any], params: Sequence[str]) -> set[str]:
    """Names of ``body`` bound more than once (a parameter counts as bound on entry) or bound in a loop: the
    values reverse mode saves before they are overwritten."""
    counts: dict[str, int] = {p: 1 for p in params}
    in_loop: set[str] = set()
    for s, depth in _walk(body):
        if isinstance(s, cst.Assign):
            for t in s.targets:
                for n in target_names(t.target):
                    counts[n] = counts.get(n, 0) + 1
                    if depth > 0:
                        in_loop.add(n)
    return {n for n, c in counts.items() if c > 1} | in_loop


def bound_values(body: Sequence[Any]) -> dict[str, list[cst.BaseExpression]]:
    """The values each name is bound to (by ``name = value``) anywhere in ``body``."""
    out: dict[str, list[cst.BaseExpression]] = {}
    for st, _ in _walk(body):
        if isinstance(st, cst.Assign):
            for t in st.targets:
                if isinstance(t.target, cst.Name):
                    out.setdefault(t.target.value, []).append(st.value)
    return out


def _iterator(it: cst.BaseExpression, values: Mapping[str, Sequence[cst.BaseExpression]], depth: int) -> bool:
    if isinstance(it, cst.Name):  # (a copy of a copy: followed a few steps)
        return depth < 8 and any(_iterator(v, values, depth + 1) for v in values.get(it.value, ()))
    if not isinstance(it, cst.Call):
        return False
    f = it.func
    return isinstance(f, cst.Name) and f.value in ITERATOR_CALLS | {"reversed", "iter"} and not (
        f.value == "reversed" and bool(it.args) and call_name(it.args[0].value) == "range") or \
        isinstance(f, cst.Attribute) and f.attr.value in ("items", "values", "keys")


def constant(restore: str, is_constant: bool) -> str:
    """How an adjoint gets a saved value back (``_tape.pop()``, a name): through ``index_key`` for a constant."""
    return f"index_key({restore})" if is_constant and restore.endswith(".pop()") else restore


def snapshot(vjp: Any, name: str, bound: set[str] | None = None) -> str:
    """What reverse mode (``vjp``, a :class:`~.reverse_ad.VJP`) saves of ``name`` in a branch on data, for the
    adjoint to restore: a list's copy (``history[:]``: the list as it was, whatever later appends change in place;
    the same list under a second name was refused by vmap, which follows a list by the name it is changed through),
    else the value itself; ``UNSET`` where ``bound`` (the names bound on this path) lacks it."""
    if bound is not None and name not in bound:
        return "UNSET"
    listed = any(  # (a list changed in place: a tuple, never changed, is saved as it is; its copy `t[:]` was a
        # value vmap no longer knew a tuple: seed 36's loop carry, test_vmap_unseen_more)
        type(s) is cst.Expr and type(call := s.value) is cst.Call and type(call.func) is cst.Attribute and  # type: ignore[attr-defined]
        call.func.attr.value in _LIST_CHANGES and code(call.func.value) == name for s, _ in _walk(vjp.body))
    return f"{name}[:]" if listed and name not in vjp.arrays else name


_LIST_CHANGES = frozenset({"append", "extend", "insert", "remove", "reverse", "sort"})
"""Methods only a list has of those that change a container in place (a dict's ``pop`` and ``update`` not)."""
