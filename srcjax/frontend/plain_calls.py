"""Plain calls: the calls :meth:`Normalizer.flat_call` may read without trying its dozen spellings first.

``flat_call`` tries, before it reads a call as a call of its callee, every rewrite a call may need
(``map(f, xs)``, ``sorted(.., key=lambda ..)``, a method of a user object, ``x.at[k].set(v)``,
``srcjax.jvp(f, ..)``, ``p._replace(..)``, ``lax.scan`` by another spelling, ``reduce_window`` with a
lambda, ...): ~180 Python calls a call, most of a first ``hessian``'s re-reading of the source srcjax
wrote, where nearly every call is ``np.f(..)`` or a helper of srcjax's (``index_add(..)``,
``batch_align(..)``). :func:`plain_callee` says, with a few dictionary look-ups, that none of them
applies: the callee is a name chain rooted at a global (a module's function, no local, no parameter
fixed to a function), no argument is starred or a lambda, and its value is a NumPy primitive or a
helper srcjax's writers call (a library helper, or a function srcjax wrote), none of the callees a
spelling rewrites (:func:`_rewritten_callees`). Such a call is then read exactly as the checks would
have left it (``tests/test_plain_calls.py`` holds each check to that, callee by callee).
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import types
from typing import Any

import libcst as cst
import numpy as np

from ..core import TranspileError
from ..primitives import registry
from .read import is_generated
from .resolve import LIBRARY_MODULES, composite
from .syntax import attr_chain

NOT_PLAIN: Any = object()
TAKE_FUNCTIONS = ("srcjax.lax_reduce",)  # (library helpers taking the user's functions: bound like the user's)
_REWRITTEN: list[frozenset[int]] = []  # id() of each callee a spelling check of flat_call rewrites (made on first use)


def _rewritten_callees() -> frozenset[int]:
    """The callees ``flat_call``'s spelling checks look for (by identity): a call of one is never plain."""
    if not _REWRITTEN:
        from .. import lax, lax_reduce, tree_util, windows

        found: list[Any] = [builtins.map, builtins.zip, functools.reduce, builtins.sorted, builtins.print,
                            dataclasses.replace, windows.reduce_window, lax_reduce.associative_scan,
                            lax_reduce.reduce, tree_util.tree_map, lax.map, composite(np.piecewise),
                            *(getattr(lax, k) for k in ("cond", "switch", "fori_loop", "while_loop", "scan"))]
        _REWRITTEN.append(frozenset(id(f) for f in found))  # (whole or not at all: another thread may read it)
    return _REWRITTEN[0]


def plain_callee(norm: Any, node: cst.Call) -> Any:
    """The callee's value where ``node`` is a plain call (see the module docstring), else :data:`NOT_PLAIN`."""
    func = node.func
    chain = attr_chain(func)
    if chain is None or chain[0] in norm.locals or chain[0] in norm.bindings or chain[-1] == "_replace":
        return NOT_PLAIN
    for a in node.args:
        if a.star or type(a.value) is cst.Lambda:
            return NOT_PLAIN
    try:
        ok, fv = norm.static_value(func)
    except TranspileError:  # (flat_call's own path raises it, where it should)
        return NOT_PLAIN
    if not ok or id(fv) in _rewritten_callees():
        return NOT_PLAIN
    if callable(fv) and registry.lookup(fv) is not None:
        return fv
    if type(fv) is types.FunctionType and len(chain) == 1 and (
            is_generated(fv) or fv.__module__ in LIBRARY_MODULES and fv.__module__ not in TAKE_FUNCTIONS) and \
            getattr(fv, "__srcjax_inline_jvp__", None) is None and getattr(fv, "__srcjax_inline_vjp__", None) is None:
        return fv
    return NOT_PLAIN
