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
