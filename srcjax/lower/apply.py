"""Applying a primitive to the specializer's values (:func:`apply_primitive`, ``Specializer.apply``).

With every array operand static (and a primitive that allows it) the primitive's NumPy function runs
right here, as Python would. Otherwise its abstract-evaluation rule runs (shape and dtype errors are
raised here, pointing at the user's line) and then its lowering rule, which appends StableHLO to the
function being built; a result whose type differs from the abstract evaluation is srcjax's bug.
"""

from __future__ import annotations

import inspect
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import pytree
from ..core import (
    STATIC_EVAL_ERRORS,
    ArgumentError,
    DTypeError,
    InternalError,
    NeedStatic,
    ShapedArray,
    StaticValueError,
)
from ..primitives.registry import LowerCtx, Primitive
from .hlo import HloValue
from .values import contains_dynamic, is_dynamic

if TYPE_CHECKING:  # annotations only: the specializer imports this module, not the other way round
    from .specialize import Specializer


def _unrepeated(sp: Specializer, prim: Primitive, call_args: list[Any], outs: list[ShapedArray],
                multi: bool) -> Any:
    """A stack-wise primitive (``prim.stacked``) of a repeat along new leading axes (``FuncBuilder.repeated``:
    vmap's unmapped matrix read in a branch on batched data) lowered on the unrepeated operand, its results
    repeated (one inverse, not one per example); None where that does not apply."""
    assert sp.b is not None
    arrays = [v for v in call_args if isinstance(v, HloValue)]
    src = sp.b.repeated.get(arrays[0].name) if prim.stacked and len(arrays) == 1 else None
    if src is None or src.ndim < prim.stacked:
        return None
    lead = arrays[0].ndim - src.ndim
    small = [src if v is arrays[0] else v for v in call_args]
    out = prim.abstract_eval(*[_aval_of(v) for v in small])
    small_outs = list(out) if multi else [out]
    if len(small_outs) != len(outs) or any(o.shape[lead:] != s.shape or o.dtype != s.dtype
                                           for o, s in zip(outs, small_outs)):
        return None  # pragma: no cover (each result a stack along the operand's leading axes)
    res = prim.lower(LowerCtx(sp.b, small_outs), *small)
    res = [sp.b.broadcast_to(r, o.shape) for r, o in zip(res if multi else [res], outs)]
    return res if multi else res[0]


_PLANS: dict[int, tuple[inspect.Signature, tuple[str, ...], int, frozenset[str], dict[str, Any], bool,
                         str | None]] = {}


def _plan(sig: inspect.Signature) -> tuple[inspect.Signature, tuple[str, ...], int, frozenset[str], dict[str, Any],
                                           bool, str | None]:
    """``sig``'s parameters, read once: (``sig``, their names, how many may be given by position, the
    positional-only ones, their defaults, whether none is ``*``/``**``, the name of its ``*args`` or None)."""
    plan = _PLANS.get(id(sig))
    if plan is None or plan[0] is not sig:
        ps = list(sig.parameters.values())
        plan = _PLANS[id(sig)] = (sig, tuple(p.name for p in ps), sum(p.kind != p.KEYWORD_ONLY for p in ps),
                                  frozenset(p.name for p in ps if p.kind == p.POSITIONAL_ONLY),
                                  {p.name: p.default for p in ps},
                                  all(p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in ps),
                                  next((p.name for p in ps if p.kind == p.VAR_POSITIONAL), None))
    return plan


def _bound(sig: inspect.Signature, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``sig.bind(*args, **kwargs)``'s arguments with its defaults applied; a plain call (no ``*``/``**``
    parameters, keywords naming parameters not given by position) bound without ``inspect``'s general walk,
    anything else (and every error: too many arguments, a missing one) by ``inspect``."""
    _, names, npos, posonly, defaults, plain, _ = _plan(sig)
    given = len(args)
    if plain and given <= npos and (not kwargs or all(k in defaults and k not in posonly and names.index(k) >= given
                                                      for k in kwargs)):
        arguments: dict[str, Any] = dict(zip(names, args))
        for n in names[given:]:
            v = kwargs[n] if n in kwargs else defaults[n]
            if v is inspect.Parameter.empty:
                break  # (a missing argument: inspect's error below)
            arguments[n] = v
        else:
            return arguments
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.arguments


def apply_primitive(sp: Specializer, prim: Primitive, args: list[Any], kwargs: dict[str, Any],
                    operator: bool = False) -> Any:
    """``prim`` applied to ``args``: run here when every array operand is static (and the primitive
    allows it), else abstract evaluation (shape and dtype errors) and lowering into ``sp``'s function.
    Scalar results carry their operands' origins; an operator on weakly typed operands stays weak."""
    assert sp.b is not None
    if prim.through and args and any(args[0] is v for v in prim.through):  # (unbroadcast's None, taken's UNSET)
        return args[0]
    try:
        arguments = _bound(prim.signature, args, kwargs)
    except TypeError as e:
        raise ArgumentError(f"{prim.path}(): {e}") from None
    names = list(arguments)
    values = list(arguments.values())
    all_static = True
    for k, (n, v) in enumerate(zip(names, values)):
        if n in prim.nested and isinstance(v, (list, tuple)) and contains_dynamic(v):
            # np.array(rows) of a list made at run time (a comprehension): NumPy's array of it is the
            # stack of its elements, inner lists first (a literal list was written np.stack already)
            values[k] = v = _stacked(sp, v)
            arguments[n] = v
            bound = inspect.BoundArguments(prim.signature, arguments)
            args, kwargs = list(bound.args), dict(bound.kwargs)
        if n in prim.arrays:
            if type(v) is HloValue:  # (is_dynamic)
                all_static = False
            elif isinstance(v, (list, tuple)) and contains_dynamic(v):  # (NumPy makes it an array: np.asarray)
                values[k] = v = _as_array(sp, prim, v)
                arguments[n] = v
                bound = inspect.BoundArguments(prim.signature, arguments)
                args, kwargs = list(bound.args), dict(bound.kwargs)
                all_static = False
        elif n in prim.array_seqs:
            if not isinstance(v, (tuple, list)):
                raise DTypeError(f"{prim.path}(): {n} must be a sequence of arrays")
            if any(isinstance(x, (list, tuple)) and contains_dynamic(x) for x in v):
                # np.stack(rows) of rows that are lists made at run time (`items.append([a, b])`): NumPy
                # makes each item an array first, the stack of its elements, inner lists first
                values[k] = v = [_stacked(sp, x) if isinstance(x, (list, tuple)) else x for x in v]
                arguments[n] = v
                bound = inspect.BoundArguments(prim.signature, arguments)
                args, kwargs = list(bound.args), dict(bound.kwargs)
            if any(is_dynamic(x) for x in v):
                all_static = False
        elif n not in prim.mixed and type(v) not in _ATOMS:  # "mixed" params (index keys) may hold dynamic ints
            try:
                sp.need_static(v, f"{prim.path}(): the argument {n!r}")
            except StaticValueError as e:  # the primitive's own alternative, where it names one
                e.hint = prim.static_hint or e.hint
                raise
    if all_static and prim.static_eval:
        try:
            return prim.fn(*args, **kwargs)
        except STATIC_EVAL_ERRORS as e:  # (NumPy's refusal of these inputs: the user's; MemoryError, a bug: not)
            raise StaticValueError(f"{prim.path}(): {type(e).__name__}: {e}") from None
    folded = prim.fold(values) if prim.fold is not None else None
    if folded is not None:
        return folded
    for i, (n, v) in enumerate(zip(names, values)):
        if n in prim.arrays and v is not None:
            values[i] = sp.lift(v)
        elif n in prim.array_seqs:
            values[i] = [sp.lift(x) for x in v]
    star = _plan(prim.signature)[6]  # (the name of its *args)
    call_args: list[Any] = []
    for n, v in zip(names, values):
        if n == star:
            call_args += list(v)
        else:
            call_args.append(v)
    avals = [v.aval if type(v) is HloValue else _aval_of(v) for v in call_args]
    out = prim.abstract_eval(*avals)
    multi = isinstance(out, (list, tuple))
    outs = list(out) if multi else [out]
    # a scalar result is computed from its operands' Python ints, unless the record says from which
    # (x[i] is data, whatever i is)
    origin_args = [v for n, v in zip(names, values) if n in prim.origin_from] if prim.origin_from else call_args
    origin = frozenset().union(*[v.aval.origin if type(v) is HloValue else _origins(v) for v in origin_args
                                 if type(v) is HloValue or type(v) not in _ATOMS])  # (_origins: none in those)
    weak = operator and all(_is_weak(v) for v in call_args if v is not None)
    res = _unrepeated(sp, prim, call_args, outs, multi) if prim.stacked and sp.b.repeated else None
    res = prim.lower(LowerCtx(sp.b, outs), *call_args) if res is None else res
    res_list = list(res) if multi else [res]
    final = []
    for r, o in zip(res_list, outs):
        if r.aval.shape != o.shape or r.aval.dtype != o.dtype:
            raise InternalError(f"internal error: {prim.name} lowered to {r.aval.str_short()} but its "
                                f"abstract evaluation says {o.str_short()}")
        w, org = weak or o.weak_type, origin if not o.shape else frozenset()
        final.append(HloValue(r.name, o if w == o.weak_type and org == o.origin else
                              o.update(weak_type=w, origin=org)))
    return final if multi else final[0]


_ATOMS = frozenset({int, float, bool, str, complex, type(None)})
"""Exact types of static arguments that are never arrays nor hold any (``need_static`` and ``_origins``
have nothing to do for them)."""


def _aval_of(v: Any) -> Any:
    if isinstance(v, HloValue):
        return v.aval
    if isinstance(v, list) and v and all(isinstance(x, HloValue) for x in v):
        return [x.aval for x in v]
    return v


def _origins(v: Any) -> frozenset[Hashable]:
    if isinstance(v, HloValue):
        return v.aval.origin
    if isinstance(v, list):
        return frozenset().union(*(_origins(x) for x in v)) if v else frozenset()
    return frozenset()


def _is_weak(v: Any) -> bool:
    return isinstance(v, HloValue) and v.aval.weak_type


def _as_array(sp: Specializer, prim: Primitive, v: list[Any] | tuple[Any, ...]) -> Any:
    """NumPy's ``np.asarray(v)`` of a list or tuple of integers known at run time where ``prim`` takes an array
    (``np.bitwise_and(mask, vector)`` of a default ``mask=(1, 0, 1)``, hunt24's check_mask): the stack of its items,
    as strongly typed as NumPy's array of Python ints (int64). Anything else is refused, as jax refuses it: an
    item of one dimension or more (NumPy's own array of it, or its ragged-list error), and floats (a list argument's
    derivative is a list, which the array would lose: ``grad(f)([1.5, 2.0])``)."""
    leaves = pytree.flatten(v)[0]
    if any((x.aval.ndim if type(x) is HloValue else np.ndim(x)) > 0 or
           np.dtype(x.aval.dtype if type(x) is HloValue else np.result_type(x)).kind not in "biu" for x in leaves):
        raise DTypeError(f"{prim.path}(): a {type(v).__name__} of traced values where an array goes",
                         hint="pass an array (np.asarray(...) of the list before calling the compiled function), or "
                              "make one here with np.stack(...)")
    origin = frozenset().union(*(x.aval.origin for x in leaves if type(x) is HloValue))
    if origin:  # (Python int arguments, a default `mask=(1, 0, 1)`: specialized on, NumPy's tuple then)
        raise NeedStatic(origin)
    out = _stacked(sp, v)
    if type(out) is HloValue and out.aval.weak_type:  # (NumPy's array of Python ints: int64)
        out = type(out)(out.name, out.aval.update(weak_type=False))
    return out


def _stacked(sp: Specializer, v: Any) -> Any:
    """A (nested) list or tuple of arrays and numbers as one array: ``np.stack`` level by level."""
    from ..primitives import registry

    if not isinstance(v, (list, tuple)):
        return v
    stack = registry.lookup(np.stack)
    assert stack is not None
    return apply_primitive(sp, stack, [[_stacked(sp, x) for x in v]], {})
