"""Methods of an argument's class: ``params.energy(x)``, ``params`` a NamedTuple (or a dataclass registered as
a pytree) of the user's whose class defines ``energy``.

JAX traces through a method as through any Python; srcjax reads source, where ``params.energy`` names no
function until the argument's class is known. The class is found statically: the one class the calling
function's module (its globals and closure) names that defines ``energy`` as a plain function. The call is
then a call of that function with the object first (``energy(params, x)``), a helper like any other: its
reads of ``self.k`` are reads of the container's leaves, so ``grad`` with respect to ``params`` and ``vmap``
over it follow them (the specializer ran such a method already, but derivatives and batching saw an opaque
call). The helper is a copy of the method (``__srcjax_method_of__``) whose body starts with
``assert isinstance(self, Spring)``, checked while specializing: an object of another class is refused there,
never read with the wrong method. Two classes defining the name: the call is left as it was (and refused
where a derivative needs it).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
from typing import Any

import libcst as cst

from .. import pytree
from .callees import origin
from .function_copies import copy_function
from .names import Visitor, target_names
from .read import FunctionSource

METHOD_OF = "__srcjax_method_of__"
READ_AS = "__srcjax_method_read_as__"  # (how a copy's guard names the method it was read as, where not as above)
_VARIANTS: dict[tuple[Any, Any, Any], types.FunctionType] = {}


def _is_pytree_class(cls: Any) -> bool:
    return isinstance(cls, type) and (
        (issubclass(cls, tuple) and hasattr(cls, "_fields")) or dataclasses.is_dataclass(cls)
        or cls in pytree.REGISTERED)


def method_function(src: FunctionSource, name: str) -> tuple[type, types.FunctionType] | None:
    """(class, function) of the one class named by ``src``'s module or closure defining the method ``name``
    as a plain function (None: none, or several)."""
    found: dict[types.FunctionType, Any] = {}
    for v in [*src.globals.values(), *src.closure.values()]:  # (values: Any)
        if not _is_pytree_class(v) or (getattr(v, "__module__", "") or "").split(".")[0] in ("srcjax", "numpy"):
            continue
        f = inspect.getattr_static(v, name, None)
        named = src.globals.get(v.__name__) is v or src.closure.get(v.__name__) is v  # (in the closure: a plain
        if isinstance(f, types.FunctionType) and named and origin(f) is None:  # class's dataclass, constructed_objects)
            # (the user's own code: not a NamedTuple's `_replace`, which the specializer runs itself)
            found.setdefault(f, v)
    if len(found) != 1:
        return None
    (fn, cls), = found.items()
    return cls, fn


def property_functions(src: FunctionSource, name: str) -> tuple[list[tuple[type, types.FunctionType]], bool]:
    """The classes named by ``src``'s module or closure defining ``name`` as a property (or a
    ``functools.cached_property``) in the user's code, each with its getter, and whether another such class
    has ``name`` as a field (a NamedTuple's, a dataclass's)."""
    found: dict[types.FunctionType, Any] = {}
    field = False
    for v in [*src.globals.values(), *src.closure.values()]:
        if not _is_pytree_class(v) or (getattr(v, "__module__", "") or "").split(".")[0] in ("srcjax", "numpy"):
            continue
        field |= name in _fields(v)
        d = inspect.getattr_static(v, name, None)
        fget = d.func if isinstance(d, functools.cached_property) else d.fget if isinstance(d, property) else None
        named = src.globals.get(v.__name__) is v or src.closure.get(v.__name__) is v
        if isinstance(fget, types.FunctionType) and named and origin(fget) is None:
            found.setdefault(fget, v)
    return [(cls, fn) for fn, cls in found.items()], field


def _fields(cls: type) -> tuple[str, ...]:
    if dataclasses.is_dataclass(cls):
        return tuple(f.name for f in dataclasses.fields(cls))
    return tuple(getattr(cls, "_fields", ()))


def property_read(norm: Any, node: cst.Attribute, base: cst.BaseExpression) -> tuple[cst.BaseExpression, Any] | None:
    """``recv.energy`` of a local ``recv`` (``base``: its atom), ``energy`` a property of the user's classes, as a
    call of its getter's copy ``Body_energy(recv)`` (a helper, like a method's: derivatives and ``vmap`` follow
    it, where they took the getter's result for a field of the container; the specializer checks the object's
    class); where several classes define it, or another has a field of that name, a choice by the object's class
    (static): ``Body_energy(b) if isinstance(b, Body) else ... b.energy``. None: not such a read."""
    if not isinstance(base, cst.Name) or base.value not in norm.locals and base.value not in norm.temps:
        return None
    attr = node.attr.value
    found, field = property_functions(norm.src, attr)
    if not found:
        return None
    calls = []
    for cls, fget in found:
        made = method_variant(cls, fget, f"{cls.__name__}_{attr}")
        setattr(made, READ_AS, f"`.{attr}` is read as the property {cls.__name__}.{attr} of the object")
        calls.append((cls, cst.Call(func=norm.helper_call_name(made, node), args=[cst.Arg(base)])))
    if len(calls) == 1 and not field:
        return calls[0][1], attr
    out: cst.BaseExpression = node.with_changes(value=base)
    plain = out
    for cls, call in reversed(calls):
        test = cst.parse_expression(f"isinstance({base.value}, {cls.__name__})")
        out = cst.IfExp(test=test, body=call, orelse=out)
    getters = {id(call) for _, call in calls}

    def branch(e: cst.BaseExpression) -> cst.BaseExpression:  # (a getter's call is flat: its callee is a copy)
        if id(e) in getters or e is plain:
            return e
        return norm.flat_ifexp(e, branch)[0] if isinstance(e, cst.IfExp) else norm.flat(e)[0]
    return norm.flat_ifexp(out, branch)


def method_variant(cls: type, fn: types.FunctionType, name: str | None = None) -> types.FunctionType:
    """The copy of the method ``fn`` of ``cls`` called as a helper (one per pair; ``name``: called so, an object's
    ``__call__`` read as ``Sigmoid_call``)."""
    key = (cls, fn, name)
    hit = _VARIANTS.get(key)
    if hit is not None:
        return hit
    made = copy_function(fn)
    setattr(made, METHOD_OF, cls)
    if name is not None:
        made.__name__ = name
        setattr(made, READ_AS, f"{name}() is {cls.__name__}.{fn.__name__} of the object it is called on")
    _VARIANTS[key] = made
    return made


def receiver_call(norm: Any, node: cst.Call, skip: Any) -> cst.Call | None:
    """``recv.meth(args)`` of a local ``recv`` as ``meth_copy(recv, args)`` (its callee the name the program
    calls the copy by, its arguments atoms), or None: not such a call (``skip``: names of array and container
    methods, never read as a class's)."""
    func = node.func
    if isinstance(func, cst.Name) and func.value in norm.locals and not any(a.star for a in node.args) and \
            func.value not in getattr(norm, "bindings", {}):  # `s(x)` of `s = Sigmoid()`: its __call__
        cls = _built_class(norm.src, func.value)
        fn = inspect.getattr_static(cls, "__call__", None) if cls is not None else None
        if cls is None or not isinstance(fn, types.FunctionType) or origin(fn) is not None:
            return None
        hit: tuple[type, types.FunctionType] | None = (cls, fn)
        recv: cst.BaseExpression = func
    elif not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)) or \
            func.value.value not in norm.locals or any(a.star for a in node.args):
        return None
    else:
        hit, recv = method_function(norm.src, func.attr.value), func.value
        if hit is None or func.attr.value in skip and _built_class(norm.src, func.value.value) is not hit[0]:
            return None  # (`x.mean()` is NumPy's; `c.mean()` of `c = Stats(x)` is Stats.mean)
    assert hit is not None
    called = f"{hit[0].__name__}_call" if recv is func else None
    callee = norm.helper_call_name(method_variant(*hit, called), node)
    return node.with_changes(func=callee, args=[cst.Arg(recv),
                                                *[a.with_changes(value=norm.atom(a.value)) for a in node.args]])


def _built_class(src: FunctionSource, name: str) -> type | None:
    """The class every binding of the local ``name`` constructs (``name = Cls(...)``, ``Cls`` a dataclass of the
    user's: a plain class's, constructed_objects.py); None: another binding, or several classes."""
    seen = _Bindings(name)
    seen.walk(src.fdef.body)
    for seq in seen.sequences:  # (`for layer in layers:` of `layers = [Dense(...), Dense(...)]`)
        items = _constructed_items(src, seq)
        if items is None:
            return None
        seen.calls += items
    if not seen.calls or seen.other:
        return None
    found = {id(c): c for c in ((src.closure[n] if n in src.closure else src.globals.get(n)) for n in seen.calls)}
    cls = next(iter(found.values())) if len(found) == 1 else None
    return cls if _is_pytree_class(cls) else None


class _Bindings(Visitor):
    def __init__(self, name: str) -> None:
        self.name, self.other = name, False
        self.calls: list[str] = []
        self.sequences: list[cst.BaseExpression] = []  # what a `for name in ...:` loop iterates over

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and \
                node.targets[0].target.value == self.name:
            v = node.value
            if isinstance(v, cst.Call) and isinstance(v.func, cst.Name):
                self.calls.append(v.func.value)
            else:
                self.other = True
        elif any(self.name in target_names(t.target) for t in node.targets):
            self.other = True

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.other |= self.name in target_names(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.other |= self.name in target_names(node.target)

    def visit_For(self, node: cst.For) -> None:
        seq = _iterated(node.target, node.iter, self.name)
        if seq is not None:
            self.sequences.append(seq)
        else:
            self.other |= self.name in target_names(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.other |= self.name in target_names(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        self.other |= node.asname is not None and self.name in target_names(node.asname.name)


def _iterated(target: cst.BaseExpression, it: cst.BaseExpression, name: str) -> cst.BaseExpression | None:
    """The sequence whose items a loop binds to ``name`` (``for name in seq``, ``for name in reversed(seq)``,
    ``for i, name in enumerate(seq)``); None: another loop."""
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and len(it.args) == 1 and \
            it.args[0].keyword is None and not it.args[0].star:
        if it.func.value in ("reversed", "list", "tuple") and isinstance(target, cst.Name):
            return _iterated(target, it.args[0].value, name)
        if it.func.value == "enumerate" and isinstance(target, cst.Tuple) and len(target.elements) == 2 and \
                isinstance(target.elements[0].value, cst.Name) and target.elements[0].value.value != name:
            return _iterated(target.elements[1].value, it.args[0].value, name)
    if isinstance(target, cst.Name) and target.value == name and isinstance(it, (cst.Name, cst.List, cst.Tuple)):
        return it
    return None


def _constructed_items(src: FunctionSource, seq: cst.BaseExpression) -> list[str] | None:
    """The classes' names constructing each item of ``seq``: a list or tuple display of ``Cls(...)`` calls, or a
    local name whose one binding is such a display and that nothing changes; None: anything else."""
    if isinstance(seq, cst.Name):
        found = _Displays(seq.value)
        found.walk(src.fdef.body)
        if len(found.values) != 1 or found.other:
            return None
        seq = found.values[0]
    if not isinstance(seq, (cst.List, cst.Tuple)) or not seq.elements:
        return None
    names = [e.value.func.value for e in seq.elements if isinstance(e, cst.Element) and
             isinstance(e.value, cst.Call) and isinstance(e.value.func, cst.Name)]
    return names if len(names) == len(seq.elements) else None


class _Displays(Visitor):
    """The list or tuple displays bound to the local ``name``, and whether anything else binds or changes it."""

    def __init__(self, name: str) -> None:
        self.name, self.other = name, False
        self.values: list[cst.BaseExpression] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            if isinstance(t.target, cst.Name) and t.target.value == self.name and \
                    isinstance(node.value, (cst.List, cst.Tuple)):
                self.values.append(node.value)
            elif self.name in target_names(t.target) or isinstance(t.target, cst.Subscript) and \
                    isinstance(t.target.value, cst.Name) and t.target.value.value == self.name:
                self.other = True

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.other |= isinstance(node.target, (cst.Name, cst.Subscript)) and self.name in target_names(
            node.target.value if isinstance(node.target, cst.Subscript) else node.target)

    def visit_Attribute(self, node: cst.Attribute) -> None:  # (`layers.append(...)`, `layers.pop()`: changed)
        self.other |= isinstance(node.value, cst.Name) and node.value.value == self.name

    def visit_For(self, node: cst.For) -> None:
        self.other |= self.name in target_names(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.other |= self.name in target_names(node.target)


def guard(src: FunctionSource) -> FunctionSource:
    """``src`` of a method's copy with ``assert isinstance(self, Cls)`` first; else ``src``."""
    cls = getattr(src.fn, METHOD_OF, None)
    if cls is None:
        return src
    fdef = src.fdef
    params = [*fdef.params.posonly_params, *fdef.params.params]
    if not params:
        return src
    read = getattr(src.fn, READ_AS, None) or \
        f"{src.name}() is read as {cls.__name__}.{src.name} (the one class of its caller's module defining it)"
    why = f"{read}, but the object is not a {cls.__name__}: call the method through its class"
    check = cst.parse_statement(f"assert isinstance({params[0].name.value}, {cls.__name__}), {why!r}\n")
    body = fdef.body
    if isinstance(body, cst.SimpleStatementSuite):  # (`def __call__(self, x): return ...` on one line)
        body = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=body.body)])
    assert isinstance(body, cst.IndentedBlock)
    closure = src.closure
    if src.globals.get(cls.__name__) is not cls and closure.get(cls.__name__) is not cls:
        closure = {**closure, cls.__name__: cls}  # (a plain class's dataclass, constructed_objects.py: `self.sq()`)
    return dataclasses.replace(src, fdef=fdef.with_changes(body=body.with_changes(body=[check, *body.body])),
                               closure=closure)
