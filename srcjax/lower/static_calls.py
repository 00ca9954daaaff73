"""Derivatives' and vmap's own helpers called on static values only: run by Python, not interpreted.

The specializer interprets a helper's normalized source statement by statement (:meth:`.specialize.Specializer.
call_function`), exactly as Python would run it on static values. A helper of :data:`~..frontend.resolve.
STRUCTURAL_MODULES` (``srcjax.adjoint``, ``srcjax.batched``, ``srcjax.batch_sums``) whose arguments are all plain
static values (ints, floats, booleans, strings, None, ``...``, slices and tuples of these: a shape, an index key,
flags) computes a static plan from them (``batched._index_plan``: how to index a batched ``x[1:]`` in one gather),
the same value either way: :func:`run` calls the function itself (a few calls where interpreting it cost ~600,
and its tree is not rebuilt from the disk cache: a hessian's first call decodes two helpers less, ``_index_plan``
and ``_is_array_index``).

Anything else is interpreted, as before: a value that is not plain (an array, a traced value, a list or dict
the helper could change), a result that is not plain (an array: the interpreter makes ``np.arange`` an iota, a
constant here), a generated copy of a helper, and a call that raises (interpreting it again raises the error at
the helper's line)."""

from __future__ import annotations

import types
from typing import Any

from ..frontend.normalize import NormalizedFunction
from ..frontend.read import is_generated
from ..frontend.resolve import STRUCTURAL_MODULES

NOT_RUN: Any = object()
""":func:`run`'s answer where the helper must be interpreted."""

_PLAIN = frozenset({int, bool, float, complex, str, type(None), type(Ellipsis)})


def plain(v: Any) -> bool:
    """Whether ``v`` is a plain static value: a Python scalar, a string, None, ``...``, or a slice or tuple of
    those (nothing mutable, nothing traced)."""
    t = type(v)
    if t in _PLAIN:
        return True
    if t is tuple:
        for x in v:
            if type(x) not in _PLAIN and not plain(x):
                return False
        return True
    if t is slice:
        return plain(v.start) and plain(v.stop) and plain(v.step)
    return False


def run(nf: NormalizedFunction, args: Any, kwargs: dict[str, Any]) -> Any:
    """``nf.fn(*args, **kwargs)`` where ``nf`` is a structural helper (not a copy or derivative srcjax wrote)
    and its arguments and result are plain (:func:`plain`); :data:`NOT_RUN` otherwise."""
    fn = nf.fn
    if type(fn) is not types.FunctionType or fn.__module__ not in STRUCTURAL_MODULES or nf.plain is not None:
        return NOT_RUN
    for a in args:  # (most calls: an array among the arguments, found here)
        if type(a) not in _PLAIN and not plain(a):
            return NOT_RUN
    if kwargs and not plain(tuple(kwargs.values())) or is_generated(fn):
        return NOT_RUN
    try:
        result = fn(*args, **kwargs)
    except Exception:  # noqa: BLE001 - interpreted again: the error where the helper's source raises it
        return NOT_RUN
    return result if plain(result) else NOT_RUN
