"""The parameters a user's helper changes in place, as NumPy sees them: ``def build_up_b(b, u): b[1:-1] = ...``
writes into the caller's array, and the caller reads ``b`` afterwards (npbench's cavity_flow). srcjax's arrays
are immutable, as JAX's: the helper's write binds its own ``b`` again and the caller's keeps the old value, so
frontend/aliasing.py refuses such a call where the caller reads the argument after it.

One implementation of "what shares an array" (frontend/aliasing.py's ``scan``): the helper's source is scanned as
if each parameter had a second name read after the helper returns (the caller's), so every change aliasing.py
follows reaches it: ``p[k] = v``, ``p op= v``, through a second name (``v = p; v[1:] = x``), a view (``v =
p[1:]``, ``p.T``, ``p.reshape(..)``, ``p[:, 0]``), a container holding it (``s = [p]; s[0][1] = v``),
``np.copyto(p, ..)``, ``p.fill(..)``, ``out=p``, ``np.add.at(p, ..)``, another helper that changes it, in a loop
or an ``if``; ``p = p.copy()`` first gives the helper its own array. Helpers whose source cannot be read change
nothing here.

Each change is :class:`Change`: where it is, and whether it is ``p op= v`` on the parameter's own name (or a
plain second name of it): Python binds a number again there (the caller's ``t`` is unchanged), NumPy writes into
an array (a 0-d ``ndarray`` too), so the caller decides by the argument's type when it is specialized
(``in_place(t, t, alias=..., rank=0)``, frontend/helper_checks.py)."""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import libcst as cst
import numpy as np

from ..core import TranspileError
from . import aliasing
from .aliasing import user_view_of
from .names import code, target_names, walk
from .returned_alias import returned_source
from .syntax import attr_chain

__all__ = ["Change", "callees", "changed_arguments", "changed_parameters", "resolvers"]

_CALLER = aliasing.CALLER  # (the second names the scan gives the parameters: the caller's, read after)


@dataclass(frozen=True)
class Change:
    """A parameter's in-place change: ``what`` (the statement as written, its line and helper), and ``rebinds``:
    ``p op= v`` on the parameter's own name, which binds a Python number again (an array changes in place)."""
    what: str
    rebinds: bool = False


_CACHE: dict[types.CodeType, dict[str, Change]] = {}
_OPEN: set[types.CodeType] = set()  # (helpers being read: a recursive helper changes nothing through itself)


def _plain_names(fdef: cst.FunctionDef, param: str) -> set[str]:
    """``param`` and the names bound only to plain copies of it (``v = p``): a change of those by ``v op= w``
    binds a number again, as ``p op= w`` does."""
    binds: dict[str, list[cst.BaseExpression | None]] = {}
    for n in walk(fdef.body):
        if type(n) is cst.Assign:
            for t in n.targets:
                for name in target_names(t.target):
                    binds.setdefault(name, []).append(n.value if isinstance(t.target, cst.Name) else None)
        elif type(n) in (cst.For, cst.AnnAssign, cst.NamedExpr, cst.WithItem, cst.CompFor):
            tgt = getattr(n, "target", None) or getattr(getattr(n, "asname", None), "name", None)
            for name in target_names(tgt) if tgt is not None else ():
                binds.setdefault(name, []).append(None)
    out = {param} if param not in binds else set()
    grown = True
    while grown:
        grown = False
        for name, values in binds.items():
            if name not in out and values and all(isinstance(v, cst.Name) and v.value in out for v in values):
                out.add(name)
                grown = True
    return out


def _with_callers(fdef: cst.FunctionDef, params: list[str]) -> cst.FunctionDef:
    """``fdef`` with ``_srcjax_caller_k = p`` for each parameter first and a read of all of them last."""
    first = [cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(f"{_CALLER}{k}"))],
                                                      value=cst.Name(p))]) for k, p in enumerate(params)]
    reads = cst.Tuple(elements=[cst.Element(cst.Name(f"{_CALLER}{k}")) for k in range(len(params))])
    body: list[cst.BaseStatement] = list(fdef.body.body) if isinstance(fdef.body, cst.IndentedBlock) else \
        [cst.SimpleStatementLine(body=list(fdef.body.body))]  # type: ignore[arg-type]  # (`def put(xs, v): ...`)
    return fdef.with_changes(body=cst.IndentedBlock(
        body=[*first, *body, cst.SimpleStatementLine(body=[cst.Expr(reads)])]))


def changed_parameters(fn: Any) -> dict[str, Change]:
    """The parameters ``fn`` changes in place (by name), each with the change."""
    if not isinstance(fn, types.FunctionType) or fn.__code__ in _OPEN:
        return {}
    code_ = fn.__code__
    if code_ in _CACHE:
        return _CACHE[code_]
    module = getattr(fn, "__module__", "") or ""
    if module.split(".")[0] in ("numpy", "srcjax", "jax"):
        return {}
    from .read import is_generated, read_function
    try:
        if is_generated(fn):
            return {}
        src = read_function(fn)
    except (TranspileError, OSError, TypeError):
        return {}
    _OPEN.add(code_)
    try:
        out = _changes(src, resolvers)
    finally:
        _OPEN.discard(code_)
    _CACHE[code_] = out
    return out


def _changes(src: Any, resolvers: Any) -> dict[str, Change]:
    fdef = src.fdef
    p = fdef.params
    params = [q.name.value for q in [*p.posonly_params, *p.params, *p.kwonly_params]]
    if not params:
        return {}
    found_: dict[str, Change] = {}
    first = src.fn.__code__.co_firstlineno
    todo = list(params)
    while todo:
        found, checked = aliasing.scan(_with_callers(fdef, todo), *resolvers(src, fdef))
        if found is None or not found.alias.startswith(_CALLER):
            # (an unsure item, `r = p[0]; r += v`: p's row where p is 2-D; the helper's own refusal: its own. A check
            # of rank 2 or more is of a change of the array itself, `p[0] = v` of `a = p[0]`: the caller's where `p`
            # still is the parameter, which the scan sees as a change its second name reads)
            for made, rank in checked.values():
                base = made.split("[", 1)[0]
                if base in todo and rank == 1:
                    found_[base] = Change(f"a change of `{made}` in {src.fn.__name__} (a view of `{base}`'s row "
                                          f"where it has two dimensions or more)")
            break
        param = todo.pop(int(found.alias[len(_CALLER):]))
        span = src.span(found.statement)
        where = f"line {span.line if span is not None else first} of {src.fn.__name__}"
        stmt = found.statement
        if found.helper:  # (a helper it calls changes it: "`inner(p)` runs `...`")
            call, _, inner = found.helper.partition(" runs ")
            found_[param] = Change(f"{call} ({where}), which runs {inner}", rebinds=found.rebinds)
            continue
        rebinds = isinstance(stmt, cst.AugAssign) and isinstance(stmt.target, cst.Name) and \
            stmt.target.value in _plain_names(fdef, param) and not (found.binding or found.holder or found.repeated)
        found_[param] = Change(f"`{code(stmt)}` ({where})", rebinds=rebinds)
    return found_


def _functions(value: Any) -> list[Any]:
    """The functions a dict, list or tuple of a module holds (``ACTIVATIONS = {'relu': inplace_relu, ...}``)."""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    return [v for v in items if isinstance(v, types.FunctionType)]


def callees(func: cst.BaseExpression, lookup: Callable[[str], Any],
            local: Callable[[str], list[cst.BaseExpression]], seen: frozenset[str] = frozenset()) -> list[Any]:
    """The functions ``func`` (a call's callee) may be: a helper by name, one a local variable is bound to
    (``hidden_activation = ACTIVATIONS[activation]``: each function the module's dict holds), a parameter's
    default, an item of a module's dict or list (``ACTIVATIONS[name](x)``), a module's attribute
    (``helpers.relu_(y)``), either side of ``f if c else g``, a loop's item (``for h in (relu_, scale_)``).
    ``local``: the values a local name is bound to (``[]`` where unknown)."""
    if isinstance(func, cst.Name):
        fn = lookup(func.value)
        if fn is not None:
            return [fn]
        if func.value in seen:
            return []
        return [c for v in local(func.value) for c in callees(v, lookup, local, seen | {func.value})]
    if isinstance(func, cst.Subscript) and isinstance(func.value, cst.Name):
        return _functions(lookup(func.value.value))
    if isinstance(func, cst.Attribute) and (chain := attr_chain(func)) is not None:
        value = lookup(chain[0])
        for attr in chain[1:]:
            value = getattr(value, attr, None)
        return [value] if isinstance(value, types.FunctionType) else []
    if isinstance(func, (cst.Tuple, cst.List)):
        return [c for e in func.elements for c in callees(e.value, lookup, local, seen)]
    if isinstance(func, cst.IfExp):
        return callees(func.body, lookup, local, seen) + callees(func.orelse, lookup, local, seen)
    return []


def changed_arguments(call: cst.Call, lookup: Callable[[str], Any],
                      local: Callable[[str], list[cst.BaseExpression]] = lambda name: []
                      ) -> list[tuple[str, str, bool, bool, str]]:
    """(the variable, the change, whether it is ``p op= v``: a number bound again, whether the argument is an item
    of the variable, the parameter where the argument is the variable itself and the call names the helper, else
    "") for each argument a user's helper that ``call`` may call changes in place (:func:`callees`): an argument
    written as a name, a view of one (``fill(b[1:], x)`` writes into ``b``: never a number) or an item
    (``fill(box[0], x)``, ``fill(W[0][1], x)``: the array the container holds, or a row of ``m``)."""
    if any(a.star for a in call.args):
        return []
    direct = isinstance(call.func, cst.Name) and lookup(call.func.value) is not None
    positional = [a.value for a in call.args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    out: list[tuple[str, str, bool, bool, str]] = []
    for fn in callees(call.func, lookup, local):
        changed = changed_parameters(fn)
        if not changed:
            continue
        names = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
        for param, change in changed.items():
            k = names.index(param) if param in names else len(positional)
            arg = positional[k] if k < len(positional) else keywords.get(param)
            got: tuple[str, str, bool, bool, str] | None = None
            if isinstance(arg, cst.Name):
                got = (arg.value, change.what, change.rebinds, False, param if direct else "")
            elif arg is not None and (base := user_view_of(arg)) is not None:
                got = (base, change.what, False, False, "")
            elif isinstance(arg, cst.Subscript):
                root: cst.BaseExpression = arg
                while isinstance(root, cst.Subscript):
                    root = root.value
                if isinstance(root, cst.Name):
                    got = (root.value, change.what, False, True, "")
            if got is not None and got not in out:
                out.append(got)
    return out


def resolvers(src: Any, fdef: cst.FunctionDef) -> tuple[Callable[[cst.Call], tuple[str, bool] | None],
                                                       Callable[[str], bool],
                                                       Callable[[cst.Call], list[tuple[str, str, bool, bool, str]]]]:
    """``aliasing.scan``'s ``returned``, ``module_array`` and ``changed`` for the function ``src`` reads (its
    globals and closure; a name the function binds itself is its own, never the module's)."""
    from .resolve import local_names
    local = set(local_names(fdef))
    scope = {**src.fn.__globals__, **src.closure}

    def lookup(name: str) -> Any:
        return None if name in local else scope.get(name)

    def module_array(name: str) -> bool:
        return name not in local and isinstance(scope.get(name), np.ndarray)

    bound: dict[str, list[cst.BaseExpression]] = {}
    for p in [*fdef.params.params, *fdef.params.kwonly_params, *fdef.params.posonly_params]:
        if p.default is not None:  # (`def f(x, act=relu_)`: the default's function)
            bound.setdefault(p.name.value, []).append(p.default)
    for node in walk(fdef.body):  # (a local name's values as written: `h = ACTIVATIONS[name]`)
        if type(node) is cst.Assign:
            for t in node.targets:
                if isinstance(t.target, cst.Name):
                    bound.setdefault(t.target.value, []).append(node.value)
        elif type(node) is cst.For and isinstance(node.target, cst.Name):  # (`for h in (relu_, scale_)`; an item
            item = node.iter if isinstance(node.iter, (cst.Tuple, cst.List)) else cst.Subscript(  # of a module's
                value=node.iter, slice=[cst.SubscriptElement(cst.Index(cst.Integer("0")))])  # list: `for h in HS`)
            bound.setdefault(node.target.value, []).append(item)

    return (lambda call: returned_source(call, lookup)), module_array, \
        (lambda call: changed_arguments(call, lookup, lambda name: bound.get(name, [])))
