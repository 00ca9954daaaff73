"""Methods of static objects: ``sigmoid(x)``, ``loss.gradient(y, p)``, ``self.gaussian_pdf(x, mu, s)``, where
``sigmoid`` and ``loss`` are module-level instances of the user's plain classes (ML-From-Scratch's activation
and loss objects) and ``self`` is the receiver of such a method.

JAX traces through such a call as through any Python. srcjax writes source: the specializer already ran these
calls (``callees.user_method``), but derivatives and ``vmap`` saw an opaque call. The object is a constant of
the compiled program (module globals are read when a signature is first compiled), so its class is known
while normalizing and its method is a known function: the call is written as a call of a copy of that method
(``methods.method_variant``, guarded by ``assert isinstance(self, Cls)``) with the object first, a helper like
any other, whose ``self.alpha`` reads are static values. Inside such a copy, ``self.meth(...)`` and
``self(...)`` are calls of the same class's methods; a staticmethod is a call of its function.

Not followed (left as they were: run by the specializer, refused where a derivative or ``vmap`` needs them):
classmethods, an object reached through an attribute of ``self`` (its class is not known statically), and
objects of classes defined outside the user's code.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import libcst as cst

from . import class_methods
from .callees import origin
from .function_copies import copy_function
from .methods import METHOD_OF, READ_AS, _is_pytree_class, method_function  # (the classes methods.py follows)
from .names import Visitor, code, target_names
from .resolve import rebound_parameters
from .syntax import attr_chain

_SKIP_TYPES = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def _user_class(cls: type) -> bool:
    mod = (getattr(cls, "__module__", "") or "").split(".")[0]
    return mod not in ("srcjax", "numpy", "builtins") and not hasattr(cls, "shape")


def _receiver_class(norm: Any, recv: cst.BaseExpression) -> tuple[type, Any] | None:
    """(class, object) of the object ``recv`` names statically: a module-level object (``loss``, ``mod.loss``,
    ``net.layer.activation``), the first parameter of a method's copy (``self``: its object where the copy is
    bound to one, else None), or an attribute chain of a bound copy's ``self`` (``self.activation``); None: not
    known."""
    chain = attr_chain(recv)
    if chain is None:
        return None
    if chain[0] in norm.locals:
        cls = getattr(norm.src.fn, METHOD_OF, None)
        params = [*norm.src.fdef.params.posonly_params, *norm.src.fdef.params.params]
        own = cls is not None and params and params[0].name.value == chain[0] and \
            chain[0] not in rebound_parameters(norm.src.fdef)
        if not own or cls is None:
            return None
        if len(chain) == 1:
            return cls, getattr(norm.src.fn, OBJECT_OF, None)
        if not hasattr(norm.src.fn, OBJECT_OF):
            return None  # (a copy for every object of its class: what `self.a` holds is not known)
        v = getattr(norm.src.fn, OBJECT_OF)
    else:
        found, v = norm.lookup(chain[0])
        if not found:
            return None
    for part in chain[1:]:  # (through modules and objects: `helpers.loss`, `config.loss`, `self.activation`)
        try:
            v = inspect.getattr_static(v, part)
        except AttributeError:
            return None
        if isinstance(v, (staticmethod, classmethod, property)):
            return None
    if isinstance(v, _SKIP_TYPES) or not _user_class(type(v)):
        return None
    return type(v), v


def _holds_objects(obj: Any) -> bool:
    """Whether an attribute of ``obj`` holds an object of the user's classes (a layer's ``self.activation``):
    then a copy of its methods reads them through ``obj`` itself."""
    try:
        attrs = vars(obj)
    except TypeError:
        return False
    return any(not isinstance(v, _SKIP_TYPES) and _user_class(type(v)) and not isinstance(v, (list, tuple, dict))
               for v in attrs.values())


_VARIANTS: dict[tuple[Any, ...], types.FunctionType] = {}
OBJECT_OF = "__srcjax_object_of__"  # (a copy bound to one object: what its `self.activation` holds is known)


def object_method(cls: type, fn: types.FunctionType, obj: Any = None, owner: type | None = None
                  ) -> types.FunctionType:
    """The copy of the method ``fn`` of ``cls`` called as a helper, named ``Cls_meth`` (``Sigmoid_call`` for
    ``__call__``): one per pair, or one per object ``obj`` whose attributes hold objects of the user's classes
    (its ``self.activation(x)`` calls ``activation``'s class's method); ``methods.guard`` checks its first
    argument's class, and each call through ``self.activation`` checks that object's class."""
    bound = obj is not None and _holds_objects(obj)
    key = (cls, fn, id(obj)) if bound else (cls, fn)
    if owner is not None:  # (`super().__call__(x)`: Base's method run on a Child, its `self.meth` Child's)
        key = (*key, owner)
    hit = _VARIANTS.get(key)
    if hit is not None and (not bound or getattr(hit, OBJECT_OF) is obj):
        return hit
    made = copy_function(fn, f"{(owner or cls).__name__}_{fn.__name__.strip('_') or 'call'}")
    setattr(made, METHOD_OF, cls)
    setattr(made, READ_AS, f"{made.__name__}() is {(owner or cls).__name__}.{fn.__name__} of the "
                           f"{cls.__name__} it is called on (a constant of the program, read when it is first "
                           "compiled)" if owner is not None else
                           f"{made.__name__}() is {cls.__name__}.{fn.__name__} of the object it is called on "
                           "(a constant of the program, read when it is first compiled)")
    if bound:
        setattr(made, OBJECT_OF, obj)
    _VARIANTS[key] = made
    return made


def _loop_classes(norm: Any, name: str) -> list[type] | None:
    """The classes of the objects a local ``name`` takes, where its only bindings are ``for name in OBJECTS``
    loops over one module-level list or tuple of objects of the user's classes (``for act in ACTIVATIONS``);
    subclasses before their bases. None: not such a name."""
    loops = _Loops(name, norm.src.fdef)
    loops.walk(norm.src.fdef)
    if loops.other or not loops.iters:
        return None
    values = [norm.constant(it) for it in loops.iters]
    if not all(ok and isinstance(v, (list, tuple)) and v for ok, v in values) or \
            any(v is not values[0][1] for _, v in values):
        return None
    classes: list[type] = []
    for obj in values[0][1]:
        if isinstance(obj, _SKIP_TYPES) or not _user_class(type(obj)):
            return None
        if type(obj) not in classes:
            classes.append(type(obj))
    return sorted(classes, key=lambda c: -len(c.__mro__))


class _Loops(Visitor):
    """The iterables of the ``for`` loops binding ``name`` alone, and whether anything else binds it."""

    def __init__(self, name: str, fdef: cst.FunctionDef) -> None:
        self.name, self.fdef = name, fdef
        self.iters: list[cst.BaseExpression] = []
        self.other = name in {p.name.value for p in (*fdef.params.params, *fdef.params.posonly_params,
                                                     *fdef.params.kwonly_params)}

    def visit_For(self, node: cst.For) -> None:
        if isinstance(node.target, cst.Name) and node.target.value == self.name:
            self.iters.append(node.iter)
        elif self.name in target_names(node.target):
            self.other = True

    def visit_Assign(self, node: cst.Assign) -> None:
        self.other |= any(self.name in target_names(t.target) for t in node.targets)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.other |= self.name in target_names(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.other |= self.name in target_names(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.other |= self.name in target_names(node.target)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.other |= node is not self.fdef and node.name.value == self.name
        return node is self.fdef


def _parameter_classes(norm: Any, recv: cst.BaseExpression, name: str) -> list[type] | None:
    """The plain classes of the caller's module defining the method ``name`` (subclasses first), for
    ``layer.forward(x)`` of a parameter ``layer`` never bound again (an object passed as a static argument): a
    static test per class, the last class's copy checking its object. None: not a parameter, or no such class
    (a NamedTuple's or dataclass's method: methods.py)."""
    if not isinstance(recv, cst.Name) or hasattr(norm.src.fn, METHOD_OF):
        return None
    fdef = norm.src.fdef
    params = {p.name.value for p in (*fdef.params.posonly_params, *fdef.params.params, *fdef.params.kwonly_params)}
    if recv.value not in params or recv.value in rebound_parameters(fdef) or \
            method_function(norm.src, name) is not None:
        return None
    classes = [v for k, v in norm.src.globals.items()
               if isinstance(v, type) and v.__name__ == k and _user_class(v) and not _is_pytree_class(v)
               and v.__module__ == norm.src.globals.get("__name__") and _method_of(v, name) is not None]
    return sorted(classes, key=lambda c: -len(c.__mro__)) or None


def _defines(known: tuple[type, Any] | None, name: str) -> bool:
    return known is not None and _method_of(known[0], name) is not None


def _method_of(cls: type, name: str) -> tuple[types.FunctionType, bool] | None:
    """``(function, takes the object)`` of the method ``name`` of ``cls`` (a staticmethod takes none); None:
    not a plain function of the user's."""
    attr = inspect.getattr_static(cls, name, None)
    if isinstance(attr, classmethod):  # (`self.mix(x)` of a classmethod: its copy with `cls` fixed)
        owner = next((c for c in cls.__mro__ if name in vars(c)), cls)
        made = class_methods.variant(owner if owner.__name__ in attr.__func__.__globals__ else cls, attr.__func__)
        return None if made is None else (made, False)
    fn, bound = (attr.__func__, False) if isinstance(attr, staticmethod) else (attr, True)
    if not isinstance(fn, types.FunctionType) or origin(fn) is not None:
        return None
    return fn, bound


def static_receiver_call(norm: Any, node: cst.Call, skip: Any) -> cst.BaseExpression | None:
    """``obj(args)`` / ``obj.meth(args)`` of a module-level object of the user's class, or ``self.meth(args)``
    inside a method's copy, as ``meth_copy(obj, args)`` (a staticmethod: ``fn(args)``); None: not such a call
    (``skip``: names of array and container methods)."""
    func = node.func
    if any(a.star for a in node.args):
        return None
    if isinstance(func, cst.Attribute) and (up := _super_call(norm, node, func)) is not None:
        return up
    if isinstance(func, cst.Attribute):
        recv: cst.BaseExpression = func.value
        name = func.attr.value
        if name in skip and not _defines(_receiver_class(norm, recv), name):
            return None  # (`x.sum()`, `d.update(e)`; `optimizer.update(w, g)` of the user's class is its method)
    elif isinstance(func, cst.Name):
        if func.value in getattr(norm, "bindings", {}):
            return None
        recv, name = func, "__call__"
    else:
        return None
    known = _receiver_class(norm, recv)
    if known is not None and name != "__call__" and _method_of(known[0], name) is None and \
            inspect.getattr_static(known[0], name, None) is None and \
            (held := _receiver_class(norm, func)) is not None:  # `self.activation(x)`: the object's __call__
        recv, name, known = func, "__call__", held
    obj = known[1] if known is not None else None
    classes = [known[0]] if known is not None else \
        _loop_classes(norm, recv.value) if isinstance(recv, cst.Name) and recv.value in norm.locals else None
    if not classes and isinstance(func, cst.Attribute):
        classes = _parameter_classes(norm, recv, name)
    if not classes:
        return None
    found = [_method_of(c, name) for c in classes]
    if any(f is None for f in found) or any(c.__name__ not in norm.src.globals or
                                            norm.src.globals[c.__name__] is not c for c in classes[1:]):
        return None  # (a dispatch names the classes: each must be the module's name for it)
    args = [a.with_changes(value=norm.atom(a.value)) for a in node.args]
    this = norm.atom(recv)
    calls = []
    for c, (fn, bound) in zip(classes, found):  # type: ignore[misc]
        callee = norm.helper_call_name(object_method(c, fn, obj) if bound else fn, node)
        calls.append(node.with_changes(func=callee, args=[cst.Arg(this), *args] if bound else args))
    if len(calls) == 1:
        return calls[0]
    return _dispatch(norm, node, this, classes, calls)


def _super_call(norm: Any, node: cst.Call, func: cst.Attribute) -> cst.Call | None:
    """``super().meth(args)`` (or ``super(Cls, self).meth(args)``) inside a method's copy: a call of the copy of
    the method the next class of the object's class's MRO defines, run on ``self`` (its ``self.other()`` calls
    the object's class's ``other``, as Python's lookup does); None: not such a call."""
    sup = func.value
    if not (isinstance(sup, cst.Call) and isinstance(sup.func, cst.Name) and sup.func.value == "super"):
        return None
    cls = getattr(norm.src.fn, METHOD_OF, None)
    params = [*norm.src.fdef.params.posonly_params, *norm.src.fdef.params.params]
    if cls is None or not params or params[0].name.value in rebound_parameters(norm.src.fdef):
        return None
    me = params[0].name.value
    code_ = norm.src.fn.__code__
    mro = cls.__mro__
    start = next((i for i, c in enumerate(mro) for v in vars(c).values()
                  if getattr(getattr(v, "__func__", v), "__code__", None) is code_), None)
    if sup.args:  # super(Cls, self)
        named = [code(a.value) for a in sup.args]
        start = next((i for i, c in enumerate(mro) if len(named) == 2 and named == [c.__name__, me]), None)
    if start is None:
        return None
    owner = next((c for c in mro[start + 1:] if func.attr.value in vars(c)), None)
    found = _method_of(owner, func.attr.value) if owner is not None and owner is not object else None
    if found is None or owner is None:
        return None
    fn, takes_self = found
    args = [a.with_changes(value=norm.atom(a.value)) for a in node.args]
    callee = norm.helper_call_name(object_method(cls, fn, getattr(norm.src.fn, OBJECT_OF, None), owner)
                                   if takes_self else fn, node)
    return node.with_changes(func=callee, args=[cst.Arg(cst.Name(me)), *args] if takes_self else args)


def _dispatch(norm: Any, node: cst.Call, this: cst.BaseExpression, classes: list[type],
              calls: list[cst.Call]) -> cst.Name:
    """``if isinstance(act, Sigmoid): r = Sigmoid_call(act, x) elif ...: ... else: r = SoftPlus_call(act, x)``
    (static tests: the object is a constant of the program; the last class's copy checks its object)."""
    result = norm.fresh(f"{code(this)}_{code(node.func).split('.')[-1]}" if isinstance(node.func, cst.Attribute)
                        else f"{code(this)}_call")
    saved = norm.out
    branches = []
    for call in calls:
        norm.out = []
        norm.assign(cst.Name(result), call, node)
        branches.append(norm.out)
    norm.out = saved
    orelse: cst.If | cst.Else = cst.Else(body=cst.IndentedBlock(body=branches[-1]))
    for cls, body in reversed(list(zip(classes[:-1], branches[:-1]))):
        test = cst.parse_expression(f"isinstance({code(this)}, {cls.__name__})")
        orelse = cst.If(test=test, body=cst.IndentedBlock(body=body), orelse=orelse)
    assert isinstance(orelse, cst.If)
    sp = norm.span(node)
    if sp is not None:
        norm.spans[id(orelse)] = sp
    norm.out.append(orelse)
    return cst.Name(result)
