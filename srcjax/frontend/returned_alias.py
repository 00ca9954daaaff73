"""Which array a call's result may be: an argument the callee returns as it is, or a module-level array.

``t = ident(s)`` of ``def ident(v): return v`` (or ``(lambda v: v)(s)``) binds ``t`` to ``s``'s own array in
NumPy, and ``t = get_table()`` of ``def get_table(): return TABLE`` to the module's ``TABLE``: an in-place change
of ``t`` (``t += 1``) then changes ``s`` or ``TABLE`` too, which srcjax's immutable arrays cannot.
``frontend/aliasing.py`` reads such a call as a copy (:func:`returned_source`). The callee is read from its
bytecode (a ``return`` of a parameter never bound again in its body, or of a global), a lambda written at the
call from its source.
"""

from __future__ import annotations

import dis
import types
from collections.abc import Callable
from typing import Any

import libcst as cst
import numpy as np

from .changed_arguments import changed_parameters
from .names import code, walk
from .syntax import attr_chain

# the bytecode of `return name`: a local (a parameter) or a global/closure value, then RETURN_VALUE
_LOCAL_LOADS = {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_BORROW"}
_GLOBAL_LOADS = {"LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME"}


def returned_names(fn: Any) -> tuple[set[int], set[str]]:
    """(the positions of the parameters ``fn`` may return as they are, the module-level or closure arrays it
    may return)."""
    if not isinstance(fn, types.FunctionType):
        return set(), set()
    code = fn.__code__
    params = list(code.co_varnames[:code.co_argcount])
    try:
        ins = list(dis.get_instructions(code))
    except Exception:  # pragma: no cover (a code object dis cannot read)
        return set(), set()
    stored = {i.argval for i in ins if i.opname in ("STORE_FAST", "DELETE_FAST")}
    closure = dict(zip(code.co_freevars, fn.__closure__ or ()))
    out_params: set[int] = set()
    out_globals: set[str] = set()
    for a, b in zip(ins, ins[1:]):
        if b.opname != "RETURN_VALUE":
            continue
        if a.opname in _LOCAL_LOADS and a.argval in params and a.argval not in stored:
            out_params.add(params.index(a.argval))
        elif a.opname in _GLOBAL_LOADS:
            cell = closure.get(a.argval)
            try:
                value = cell.cell_contents if cell is not None else fn.__globals__.get(a.argval)
            except ValueError:  # pragma: no cover (an empty cell)
                continue
            if isinstance(value, np.ndarray):
                out_globals.add(a.argval)
    return out_params, out_globals


def _lambda_returned(lam: cst.Lambda) -> int | None:
    params = [p.name.value for p in lam.params.params]
    body = lam.body
    if isinstance(body, cst.Name) and body.value in params:
        return params.index(body.value)
    return None


def returned_source(call: cst.Call, lookup: Callable[[str], Any]) -> tuple[str, bool] | None:
    """The name whose array the result of ``call`` may be (an argument written as a name, or a module-level
    array's name), and whether it is the latter; None where neither is known. ``lookup``: the callee's object by
    name (the caller's globals and closure)."""
    args = [a for a in call.args]
    if any(a.star for a in args):
        return None
    positional = [a.value for a in args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in args if a.keyword is not None}
    if isinstance(call.func, cst.Lambda):
        k = _lambda_returned(call.func)
        arg = positional[k] if k is not None and k < len(positional) else None
        return (arg.value, False) if isinstance(arg, cst.Name) else None
    if not isinstance(call.func, cst.Name):
        return None
    fn = lookup(call.func.value)
    params, globals_ = returned_names(fn)
    names = list(fn.__code__.co_varnames[:fn.__code__.co_argcount]) if params else []
    for k in sorted(params):
        arg = positional[k] if k < len(positional) else keywords.get(names[k])
        if isinstance(arg, cst.Name):
            return arg.value, False
    for g in sorted(globals_):
        return g, True
    return None


def _argument_name(arg: cst.BaseExpression) -> str | None:
    """The variable whose array an argument is or is a part of: ``b``, ``acts[i + 1]`` (an item of a list, or a
    view of an array: a helper's write reaches ``acts`` in NumPy), ``W[0][1]``."""
    while isinstance(arg, cst.Subscript):
        arg = arg.value
    return arg.value if isinstance(arg, cst.Name) else None


def _functions(value: Any) -> list[Any]:
    """The functions a dict, list or tuple of a module holds (``ACTIVATIONS = {'relu': inplace_relu, ...}``)."""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    return [v for v in items if isinstance(v, types.FunctionType)]


def callees(func: cst.BaseExpression, lookup: Callable[[str], Any],
            local: Callable[[str], list[cst.BaseExpression]], seen: frozenset[str] = frozenset()) -> list[Any]:
    """The functions ``func`` (a call's callee) may be: a helper by name, one a local variable is bound to
    (``hidden_activation = ACTIVATIONS[activation]``: each function the module's dict holds), an item of a
    module's dict or list (``ACTIVATIONS[name](x)``), either side of ``f if c else g``. ``local``: the values a
    local name is bound to (``[]`` where unknown)."""
    if isinstance(func, cst.Name):
        fn = lookup(func.value)
        if fn is not None:
            return [fn]
        if func.value in seen:
            return []
        return [c for v in local(func.value) for c in callees(v, lookup, local, seen | {func.value})]
    if isinstance(func, cst.Subscript) and isinstance(func.value, cst.Name):
        return _functions(lookup(func.value.value))
    if isinstance(func, cst.Attribute) and (chain := attr_chain(func)) is not None:  # (`helpers.relu_(y)`)
        value = lookup(chain[0])
        for attr in chain[1:]:
            value = getattr(value, attr, None)
        return [value] if isinstance(value, types.FunctionType) else []
    if isinstance(func, (cst.Tuple, cst.List)):  # (`for h in (relu_, scale_): h(y)`)
        return [c for e in func.elements for c in callees(e.value, lookup, local, seen)]
    if isinstance(func, cst.IfExp):
        return callees(func.body, lookup, local, seen) + callees(func.orelse, lookup, local, seen)
    return []


def changed_arguments(call: cst.Call, lookup: Callable[[str], Any],
                      local: Callable[[str], list[cst.BaseExpression]] = lambda name: []
                      ) -> list[tuple[str, str, str]]:
    """(the variable an argument is or is part of, the change, the argument as written) for each argument a
    user's helper ``call`` may call changes in place (frontend/changed_arguments.py)."""
    if any(a.star for a in call.args):
        return []
    positional = [a.value for a in call.args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    out = []
    for fn in callees(call.func, lookup, local):
        changed = changed_parameters(fn)
        if not changed:
            continue
        names = list(fn.__code__.co_varnames[:fn.__code__.co_argcount])
        for k, what in sorted(changed.items()):
            arg = positional[k] if k < len(positional) else keywords.get(names[k])
            name = _argument_name(arg) if arg is not None else None
            if name is not None and arg is not None and (name, what, code(arg)) not in out:
                out.append((name, what, code(arg)))
    return out


def resolvers(src: Any, fdef: cst.FunctionDef) -> tuple[Callable[[cst.Call], tuple[str, bool] | None],
                                                       Callable[[str], bool],
                                                       Callable[[cst.Call], list[tuple[str, str, str]]]]:
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
        if isinstance(node, cst.Assign):
            for t in node.targets:
                if isinstance(t.target, cst.Name):
                    bound.setdefault(t.target.value, []).append(node.value)
        elif isinstance(node, cst.For) and isinstance(node.target, cst.Name):  # (`for h in (relu_, scale_)`, an
            item = node.iter if isinstance(node.iter, (cst.Tuple, cst.List)) else cst.Subscript(  # item of a module's
                value=node.iter, slice=[cst.SubscriptElement(cst.Index(cst.Integer("0")))])  # list: `for h in HS`)
            bound.setdefault(node.target.value, []).append(item)

    return (lambda call: returned_source(call, lookup)), module_array, \
        (lambda call: changed_arguments(call, lookup, lambda name: bound.get(name, [])))
