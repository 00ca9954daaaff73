"""An object of a plain class of the user's made in the function (``p = Point(x, y)``, then ``p.norm()``), read as
a dataclass's.

``class Point: def __init__(self, x, y): self.x = x; self.y = y`` runs Python code when constructed, which
compiled code refused ("constructing a Point object runs Python code srcjax does not transpile"), and so did the
transformations. A dataclass's object srcjax follows under every transformation (a record: its fields are its
leaves, its methods the class's). Where ``__init__`` only stores its parameters (or expressions of them) in
attributes, the object is that of a dataclass made from the class, once: a subclass of it (its methods, and
``isinstance(p, Point)``) with one field per attribute, in the order ``__init__`` stores them. The call is written
with ``__init__``'s parameters bound first, renamed apart: ``Point_x = x; Point_y = y; p = Point(Point_x, Point_y)``,
the name ``Point`` standing for the dataclass in the function's closure.

Only a class that does nothing else is read so: defined in the module of the function being read (its names mean
the same there), deriving from ``object`` alone, without ``__slots__``, ``__new__``, ``__post_init__`` or a
metaclass, whose ``__init__`` has plain parameters and a body of ``self.a = <expression of the parameters>``
(after a docstring), each attribute stored once; called with arguments by position or keyword (a parameter left
out having a number, string, bool or None as default). Anything else is left as it is (refused as before).
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import weakref
from typing import Any, cast

import libcst as cst

from ..core import TranspileError
from .callees import origin
from .names import Names, assigned_names, names_in, walk
from .read import FunctionSource, Located, read_function
from .returned_closures import bound_arguments, call_of, is_docstring, params_of

_RECORDS: weakref.WeakKeyDictionary[type, Any] = weakref.WeakKeyDictionary()  # class -> its dataclass (or None)


def rewrite(src: FunctionSource) -> FunctionSource:
    """``src`` with its constructions of plain classes written as their dataclasses' (``src`` itself where none)."""
    if src.filename.startswith("<srcjax.") or not _calls_a_plain_class(src):
        return src
    w = _Constructions(src)
    fdef = src.fdef.visit(w)
    if not w.records:
        return src
    assert isinstance(fdef, cst.FunctionDef)
    return dataclasses.replace(src, fdef=fdef, closure={**src.closure, **w.records})


def _calls_a_plain_class(src: FunctionSource) -> bool:
    """Whether ``src`` calls a name that is a plain class (:func:`_plain_class`): only such a call is rewritten
    (a walk of the tree, not libcst's transformer over all of it: most functions construct no object)."""
    seen: set[str] = set()
    for n in walk(src.fdef):
        if type(n) is cst.Call and type(n.func) is cst.Name:  # type: ignore[attr-defined]
            name = n.func.value  # type: ignore[attr-defined]
            if name in seen:
                continue
            seen.add(name)
            found = src.closure[name] if name in src.closure else src.globals.get(name)
            if isinstance(found, type) and _plain_class(src, name) is not None:
                return True
    return False


def _plain_class(src: FunctionSource, name: str) -> type | None:
    if name in assigned_names(src.fdef.body.body) or name in params_of(src.fdef):
        return None
    cls = src.closure[name] if name in src.closure else src.globals.get(name)
    if not isinstance(cls, type) or type(cls) is not type or cls.__bases__ != (object,) or \
            dataclasses.is_dataclass(cls) or "__slots__" in vars(cls) or "__new__" in vars(cls) or \
            hasattr(cls, "__post_init__"):
        return None
    init = vars(cls).get("__init__")
    if "__init__" not in vars(cls):
        return cls  # (object's __init__: nothing stored; `Sigmoid()(x)`)
    if not isinstance(init, types.FunctionType) or origin(init) is not None or init.__closure__ or \
            init.__globals__ is not src.globals or \
            init.__code__.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return None
    return cls


def _stores(init: FunctionSource) -> list[tuple[str, cst.BaseExpression]] | None:
    """``[(a, expr), ...]`` of an ``__init__`` whose body is ``self.a = expr`` lines (each attribute once)."""
    params = params_of(init.fdef)
    if not params:
        return None
    me, block = params[0], init.fdef.body
    body: list[cst.BaseStatement] = list(block.body) if isinstance(block, cst.IndentedBlock) else \
        [cst.SimpleStatementLine(body=cast(cst.SimpleStatementSuite, block).body)]  # (`def __init__(self): pass`)
    if body and is_docstring(body[0]):
        body = body[1:]
    out: list[tuple[str, cst.BaseExpression]] = []
    for s in body:
        if type(s) is not cst.SimpleStatementLine:
            return None
        for small in s.body:
            if type(small) is cst.Pass:  # (`def __init__(self): pass`)
                continue
            if type(small) is not cst.Assign or len(small.targets) != 1:
                return None
            t = small.targets[0].target
            if type(t) is not cst.Attribute or type(t.value) is not cst.Name or t.value.value != me or \
                    me in names_in(small.value) or any(a == t.attr.value for a, _ in out):
                return None
            out.append((t.attr.value, small.value))
    return out


def _record(cls: type, fields: list[str]) -> Any:
    """The dataclass of ``cls`` with these fields (made once per class)."""
    made = _RECORDS.get(cls)
    if made is None:
        made = dataclasses.make_dataclass(cls.__name__, [(f, Any) for f in fields], bases=(cls,), eq=False,
                                          namespace={"__module__": cls.__module__, "__qualname__": cls.__qualname__})
        _RECORDS[cls] = made
    return made


class _Constructions(Located):
    def __init__(self, src: FunctionSource) -> None:
        super().__init__(src.positions)
        self.src = src
        self.fresh = Names(set(names_in(src.fdef)) | set(src.globals) | set(src.closure)).fresh
        self.records: dict[str, Any] = {}

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        body: list[cst.BaseStatement] = []
        for st in updated.body:
            for line in self.hoisted(st):
                body.extend(self.constructed(line) or [line])
        return self.located(original, updated.with_changes(body=body))  # type: ignore[no-any-return]

    def hoisted(self, st: cst.BaseStatement) -> list[cst.BaseStatement]:
        """``[scaler = Scaler(x), <st reading scaler>]`` of a line using an object made and used at once,
        ``Scaler(x).run(x)`` or ``Sigmoid()(x)`` (not under a lambda, comprehension, conditional expression or
        ``and``/``or``: those may not run it); ``[st]`` where none."""
        if type(st) is not cst.SimpleStatementLine or len(st.body) != 1 or \
                type(st.body[0]) not in (cst.Assign, cst.Return, cst.Expr, cst.AugAssign):
            return [st]
        found = _Temporaries(self)
        st.body[0].visit(found)
        if not found.made:
            return [st]
        names = {id(c): self.fresh(c.func.value.lower()) for c in found.made}  # type: ignore[attr-defined]
        lines: list[cst.BaseStatement] = []
        for c in found.made:
            line = cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(names[id(c)]))],
                                                            value=c)])
            self.located(c, line)
            self.located(c, line.body[0])
            lines.append(line)
        rest = st.visit(_Replace({id(c): n for c, n in zip(found.made, names.values(), strict=True)}))
        assert isinstance(rest, cst.SimpleStatementLine)
        self.located(st, rest)
        self.located(st.body[0], rest.body[0])
        return [*lines, rest]

    def constructed(self, st: cst.BaseStatement) -> list[cst.BaseStatement] | None:
        call = call_of(st)
        if call is None:
            return None
        target, c = call
        cname = c.func.value  # type: ignore[attr-defined]
        cls = _plain_class(self.src, cname)
        if cls is None:
            return None
        init = vars(cls).get("__init__")
        if init is None:  # (object's: called with no arguments)
            stores: list[tuple[str, cst.BaseExpression]] | None = []
            params: list[str] = []
            args: dict[str, cst.BaseExpression] | None = {} if not c.args else None
        else:
            try:
                isrc = read_function(init)
            except TranspileError:
                return None
            stores = _stores(isrc)
            params = params_of(isrc.fdef)
            args = bound_arguments(init, c, skip=1) if stores is not None else None
        caller = {*params_of(self.src.fdef), *assigned_names(self.src.fdef.body.body)}
        if stores is None or args is None or any(
                n in caller and n not in params and n in self.src.globals for _, e in stores for n in names_in(e)):
            return None  # (a module name __init__ reads that is a local here)
        record = _record(cls, [a for a, _ in stores])
        if [f.name for f in dataclasses.fields(record)] != [a for a, _ in stores]:
            return None  # (another __init__ since: the class was redefined)
        rname = self.records.get(cname) and cname
        if rname is None:
            rname = cname  # (the class's name stands for its dataclass in this function)
            self.records[cname] = record
        mapping = {p: self.fresh(f"{cname}_{p}") for p in args}
        out: list[cst.BaseStatement] = [
            cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(mapping[p]))], value=v)])
            for p, v in args.items()]
        values = [cst.Arg(cast(cst.BaseExpression, e.visit(_Params(mapping)))) for _, e in stores]
        out.append(cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(target))],
                                                            value=c.with_changes(args=values))]))
        for s in out:
            self.located(st, s)
            for small in s.body:  # type: ignore[attr-defined]
                self.located(st, small)
                self.located(c, getattr(small, "value", small))
        return out


class _Temporaries(cst.CSTVisitor):
    """The constructions of plain classes used at once in an expression (``Scaler(x).run``, ``Sigmoid()(x)``)."""

    def __init__(self, owner: _Constructions) -> None:
        self.owner = owner
        self.made: list[cst.Call] = []

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        return False

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> bool:
        return False

    def visit_ListComp(self, node: cst.ListComp) -> bool:
        return False

    def visit_SetComp(self, node: cst.SetComp) -> bool:
        return False

    def visit_DictComp(self, node: cst.DictComp) -> bool:
        return False

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> bool:
        return False

    def _take(self, node: cst.BaseExpression) -> None:
        if type(node) is cst.Call and type(node.func) is cst.Name and \
                _plain_class(self.owner.src, node.func.value) is not None and node not in self.made:
            self.made.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._take(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        self._take(node.func)


class _Replace(cst.CSTTransformer):
    def __init__(self, names: dict[int, str]) -> None:
        self.names = names

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        name = self.names.get(id(original))
        return cst.Name(name) if name is not None else updated


class _Params(cst.CSTTransformer):
    """``__init__``'s parameters renamed (an expression stored: no nested scopes to follow but lambdas')."""

    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping
        self.shadowed: list[set[str]] = []

    def visit_Lambda(self, n: cst.Lambda) -> bool:
        self.shadowed.append(set(params_of(n)))
        return True

    def leave_Lambda(self, original: cst.Lambda, updated: cst.Lambda) -> cst.Lambda:
        self.shadowed.pop()
        return updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)

    def leave_Param(self, original: cst.Param, updated: cst.Param) -> cst.Param:
        return updated.with_changes(name=original.name)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        new = self.mapping.get(original.value)
        if new is None or any(original.value in s for s in self.shadowed):
            return updated
        return cst.Name(new)
