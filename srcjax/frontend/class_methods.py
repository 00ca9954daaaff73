"""Classmethods of the user's module-level classes: ``Kernels.mix(r2, w)``, ``cls.rbf(r2)``, ``self.mix(x)``.

JAX traces through such a call as through any Python. srcjax writes source: a classmethod was a call the
specializer ran (jit: its ``cls.rbf(...)`` read as an undefined name ``rbf``), opaque to derivatives and
``vmap``. The class is a constant, so the call is a call of a copy of the classmethod's function (a *class
variant*: the same code object, the class in ``__srcjax_class_of__``) without its first parameter, whose
``cls.attr`` reads are spelled with the class's module-level name (``Kernels.attr``, :func:`expand`): a
staticmethod read through it is a plain helper, another classmethod another class variant, a class constant a
static value. A classmethod whose ``cls`` is used otherwise (``cls(...)``, passed on, bound again) or whose
class is not its module's name for it is left as it was.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from typing import Any

import libcst as cst

from .function_copies import copy_function
from .names import target_names, walk
from .read import FunctionSource, read_function

CLASS_OF = "__srcjax_class_of__"
_VARIANTS: dict[tuple[type, types.FunctionType], types.FunctionType | None] = {}


def call_variant(fv: Any) -> types.FunctionType | None:
    """The class variant a call of ``fv`` (a classmethod bound to its class, ``Kernels.mix``) calls, else None."""
    if not isinstance(fv, types.MethodType) or not isinstance(fv.__self__, type):
        return None
    return variant(fv.__self__, fv.__func__)


def variant(cls: type, fn: Any) -> types.FunctionType | None:
    """The copy of the classmethod function ``fn`` of ``cls`` with ``cls`` fixed (None: not one to copy)."""
    if not isinstance(fn, types.FunctionType) or fn.__globals__.get(cls.__name__) is not cls:
        return None
    key = (cls, fn)
    if key in _VARIANTS:
        return _VARIANTS[key]
    made: types.FunctionType | None = None
    try:
        fdef = read_function(fn).fdef
    except Exception:  # (no source: left to the specializer, as before)
        fdef = None
    if fdef is not None and _only_attribute_reads(fdef):
        made = copy_function(fn, f"{cls.__name__}_{fn.__name__}")  # (named as a method's copy: `Kernels_mix`)
        setattr(made, CLASS_OF, cls)
        sig = inspect.signature(fn)
        made.__signature__ = sig.replace(parameters=list(sig.parameters.values())[1:])  # type: ignore[attr-defined]
    _VARIANTS[key] = made
    return made


def _first(fdef: cst.FunctionDef) -> str | None:
    params = [*fdef.params.posonly_params, *fdef.params.params]
    return params[0].name.value if params else None


def _only_attribute_reads(fdef: cst.FunctionDef) -> bool:
    """Whether the first parameter is only read as ``cls.attr`` (never bound again, called or passed on)."""
    me = _first(fdef)
    if me is None:
        return False
    attrs = {id(n.value) for n in walk(fdef.body) if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name)
             and n.value.value == me}
    for n in walk(fdef.body):
        if isinstance(n, cst.Name) and n.value == me and id(n) not in attrs:
            return False
        if isinstance(n, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)) and \
                me in target_names(n.target):
            return False
        if isinstance(n, (cst.FunctionDef, cst.Lambda)):
            return False  # (a nested scope may bind the name again)
    return True


def expand(src: FunctionSource) -> FunctionSource:
    """``src`` of a class variant without its first parameter, each ``cls.attr`` spelled ``Cls.attr``; else
    ``src``."""
    cls = getattr(src.fn, CLASS_OF, None)
    if cls is None:
        return src
    fdef = src.fdef
    me = _first(fdef)
    assert me is not None
    params = fdef.params
    if params.posonly_params:
        params = params.with_changes(posonly_params=params.posonly_params[1:])
    else:
        params = params.with_changes(params=params.params[1:])
    body = fdef.body.visit(_Spelled(me, cls.__name__, src.positions))
    return dataclasses.replace(src, fdef=fdef.with_changes(params=params, body=body))


class _Spelled(cst.CSTTransformer):
    def __init__(self, me: str, name: str, positions: dict[Any, Any]) -> None:
        self.me, self.name, self.positions = me, name, positions

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        if isinstance(updated.value, cst.Name) and updated.value.value == self.me:
            out = updated.with_changes(value=cst.Name(self.name))
            if original in self.positions:  # (errors about it are located at the user's `cls.attr`)
                self.positions[out] = self.positions[original]
            if original.value in self.positions:
                self.positions[out.value] = self.positions[original.value]
            return out
        return updated
