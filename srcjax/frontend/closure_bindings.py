"""A helper called with a function the caller defines and that reads the caller's locals: ``newton(f, fprime,
x0)`` with ``f = lambda E: E - e * np.sin(E) - M``, ``nag_update(w, v, grad_func)`` with a nested ``def
grad_func(w): return A.dot(w) - b``.

A bound variant (:mod:`.bound_helpers`) fixes the helper's parameter to a function; such a function is lifted
first (:mod:`.closures`: ``lambda_fn(E, e, M)``, the locals it reads as extra parameters), and the variant takes
those locals as keyword-only parameters of its own (``f_e``, ``f_M``, listed in ``__srcjax_closure_params__``),
which it passes after the arguments wherever it calls through the parameter: ``lambda_fn(x, f_e, f_M)``. The
call passes the caller's locals (``newton_1(M, f_e=e, f_M=M)``). Derivatives and ``vmap`` then follow the
lifted function like any helper (they saw an opaque call: "srcjax does not know its derivative"). A name bound
more than once, or a function taking more than plain positional parameters, is left as before.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import libcst as cst

from .names import body_bindings
from .read import FunctionSource
from .resolve import unwrap

EXTRA = "__srcjax_closure_params__"


def lifted_argument(norm: Any, value: cst.BaseExpression) -> tuple[Any, list[str]] | None:
    """``(the function, the names the call passes after its arguments)`` where ``value`` names a function this
    function defines reading its locals (or one a parameter of this bound variant is fixed to); None otherwise."""
    if isinstance(value, cst.Name) and value.value in norm.bindings:
        made = norm.bindings[value.value]
        extra = norm.closure_args.get(id(unwrap(made)))
        return (made, list(extra)) if extra else None
    if isinstance(value, cst.Lambda):
        got = norm.lifted(value)
    elif isinstance(value, cst.Name) and value.value in norm.locals:
        lam = _lambda_bound(norm.src.fdef, value.value)
        got = norm.lifted(lam) if lam is not None else norm.lifted(value)
    else:
        return None
    if got is None or not (got[1] or isinstance(value, cst.Lambda)):
        return None  # (a lambda reading no locals too: a parameter fixed to it is a function with source, which
        # `srcjax.vmap(fn)` in the helper can transform; passed as a value, it was a function of none)
    norm.closure_args[id(unwrap(got[0]))] = got[1]
    return got


def _lambda_bound(fdef: cst.FunctionDef, name: str) -> cst.Lambda | None:
    """The lambda ``name`` is bound to, where that is its only binding in ``fdef``."""
    bound = body_bindings(fdef.body)
    values = bound.values.get(name, [])
    if len(values) == 1 and name not in bound.rebound and isinstance(values[0], cst.Lambda):
        return values[0]
    return None


def extra_names(fn: Any, param: str, extra: list[str]) -> tuple[str, ...]:
    """The variant's parameters for the locals ``extra`` the function fixed to ``param`` reads."""
    taken = set(fn.__code__.co_varnames) | set(fn.__code__.co_names)
    out = []
    for x in extra:
        n = f"{param}_{x}"
        while n in taken or n in out:
            n += "_"
        out.append(n)
    return tuple(out)


def expand(src: FunctionSource) -> FunctionSource:
    """``src`` of a bound variant taking its fixed functions' locals: those keyword-only parameters added."""
    extras: dict[str, tuple[str, ...]] | None = getattr(src.fn, EXTRA, None)
    if not extras:
        return src
    ps = src.fdef.params
    new = [cst.Param(cst.Name(m)) for names in extras.values() for m in names]
    clean = ps.with_changes(kwonly_params=[p.with_changes(comma=cst.MaybeSentinel.DEFAULT)
                                           for p in [*ps.kwonly_params, *new]],
                            star_arg=ps.star_arg if isinstance(ps.star_arg, cst.Param) else cst.ParamStar())
    if ps.params:
        clean = clean.with_changes(params=[*ps.params[:-1], ps.params[-1].with_changes(
            comma=cst.MaybeSentinel.DEFAULT)])
    return dataclasses.replace(src, fdef=src.fdef.with_changes(params=clean))


def register(norm: Any) -> None:
    """Calls through a parameter fixed to a lifted function pass the variant's own parameters for its locals."""
    for p, names in (getattr(norm.src.fn, EXTRA, None) or {}).items():
        if p in norm.bindings:
            norm.closure_args[id(unwrap(norm.bindings[p]))] = list(names)
