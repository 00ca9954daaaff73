"""Name queries and renaming on libcst trees, shared by every pass.

In all of them a ``Name`` node that is an attribute (``x.shape``'s ``shape``)
or a keyword (``axis=``) is not a variable and is left alone.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import keyword
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import libcst as cst
from libcst._nodes.internal import CodegenState

from .. import gc_pause
from .cst_expressions import parse_expression
from .cst_printer import fast_code
from .parsed import is_literal, parse

# -- fast traversal ------------------------------------------------------------------
# ``CSTVisitor`` rebuilds every node it passes (libcst visits through ``_visit_and_replace_children``),
# and ``node.children`` does the same: queries here walk the dataclass fields instead, in the order
# libcst visits them (lexical order: ``IfExp`` is body, test, orelse), read once per node type from
# libcst's own ``_visit_and_replace_children``.

_N = TypeVar("_N", bound=cst.CSTNode)
_FIELD_RE = re.compile(r'visit_\w+\(\s*self,\s*"(\w+)"')
# fields that only hold whitespace, comments and punctuation: never a name, a call or a statement
_TRIVIA = frozenset({
    "lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators", "header", "footer",
    "trailing_whitespace", "newline", "dot", "equal", "colon", "operator", "whitespace", "indent"})
_ALL_FIELDS: dict[type, tuple[str, ...]] = {}
_SYNTAX_FIELDS: dict[type, tuple[str, ...]] = {}


def _subclasses(base: type) -> frozenset[type]:
    """``base`` and every class derived from it: ``type(v) in`` it is ``isinstance(v, base)`` without a call (for
    libcst's ``CSTNode``, an ``ABC``, without ``ABCMeta.__instancecheck__``: tens of thousands a first call)."""
    out: set[type] = set()
    todo: list[type] = [base]
    while todo:
        c = todo.pop()
        if c not in out:
            out.add(c)
            todo.extend(c.__subclasses__())
    return frozenset(out)


NODE_CLASSES: frozenset[Any] = _subclasses(cst.CSTNode)  # (every libcst node class)


def _fields_of(cls: type) -> tuple[str, ...]:
    """Every field of ``cls`` that may hold nodes, in the order libcst visits them."""
    found = _ALL_FIELDS.get(cls)
    if found is None:
        declared = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        visit = getattr(cls, "_visit_and_replace_children", None)
        code = getattr(visit, "__code__", None)
        visited = _string_constants(code) if code is not None else []
        order = [f for f in dict.fromkeys(visited) if f in declared]
        found = _ALL_FIELDS[cls] = tuple(order + [f for f in declared if f not in order])
    return found


def _string_constants(code: Any) -> list[str]:
    """The string constants of a code object and of the code nested in it, in the compiler's order: in
    ``_visit_and_replace_children``, the field names libcst visits (``visit_required(self, "test", ...)``),
    in the order its source names them. (It was read from that source with :data:`_FIELD_RE`: each node
    type's first ``inspect.getsource``, tokenizing libcst's module, cost ~0.7 ms, 20 of them in a new
    process's first ``hessian``; tests/test_names.py checks both give the same order for every node type.)"""
    out: list[str] = []
    for c in code.co_consts:
        if isinstance(c, str):
            out.append(c)
        elif hasattr(c, "co_consts"):
            out.extend(_string_constants(c))
    return out


def _fields_from_source(cls: type) -> tuple[str, ...]:
    """:func:`_fields_of` as first written, from the source of libcst's visit (tests compare the two)."""
    declared = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    try:
        visited = _FIELD_RE.findall(inspect.getsource(cls._visit_and_replace_children))  # type: ignore[attr-defined]
    except (OSError, TypeError):  # pragma: no cover - libcst without sources
        visited = []
    order = [f for f in dict.fromkeys(visited) if f in declared]
    return tuple(order + [f for f in declared if f not in order])


def syntax_fields(cls: type) -> tuple[str, ...]:
    """:func:`_fields_of` less whitespace and punctuation."""
    found = _SYNTAX_FIELDS.get(cls)
    if found is None:
        found = _SYNTAX_FIELDS[cls] = tuple(
            f for f in _fields_of(cls) if f not in _TRIVIA and not f.startswith("whitespace"))
    return found


# a node class -> (a getter of its syntax fields' values in one call, whether it has one field: then the getter
# gives the value itself), in lexical order and reversed (for stacks): walks read a node's fields with one call,
# not a ``getattr`` call per field (those calls were most of a walk's cost)
_SYNTAX_GETTERS: dict[type, tuple[Callable[[Any], Any], bool]] = {}
_REVERSED_GETTERS: dict[type, tuple[Callable[[Any], Any], bool]] = {}


def _getter(fields: tuple[str, ...]) -> tuple[Callable[[Any], Any], bool]:
    return (operator.attrgetter(*fields) if fields else _NO_FIELDS), len(fields) == 1


def _NO_FIELDS(node: Any) -> tuple[()]:
    return ()


def _syntax_getter(cls: type) -> tuple[Callable[[Any], Any], bool]:
    found = _SYNTAX_GETTERS[cls] = _getter(syntax_fields(cls))
    return found


def _reversed_getter(cls: type) -> tuple[Callable[[Any], Any], bool]:
    found = _REVERSED_GETTERS[cls] = _getter(syntax_fields(cls)[::-1])
    return found


# (for loops over a stack elsewhere, as walk's and names_in's: ``getter, single = REVERSED_GETTERS[type(n)]``,
# ``reversed_getter(type(n))`` on a KeyError)
REVERSED_GETTERS = _REVERSED_GETTERS
reversed_getter = _reversed_getter


def _nodes_in(node: cst.CSTNode, fields: tuple[str, ...]) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []
    nodes = NODE_CLASSES
    for f in fields:
        v: Any = getattr(node, f)
        if v.__class__ in nodes:
            out.append(v)
        elif isinstance(v, (tuple, list)):
            out.extend(c for c in v if c.__class__ in nodes)
    return out


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node.children`` (every child node, in lexical order), without rebuilding ``node``."""
    return _nodes_in(node, _fields_of(type(node)))


def syntax_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The child nodes that are code (expressions, statements, names, ...), in lexical order."""
    return _nodes_in(node, syntax_fields(type(node)))


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every code node under it (see :func:`syntax_children`), in source order."""
    stack = [node]
    pop, push = stack.pop, stack.append
    nodes, getters = NODE_CLASSES, _REVERSED_GETTERS
    while stack:
        n = pop()
        yield n
        t = n.__class__
        try:
            getter, single = getters[t]
        except KeyError:
            getter, single = _reversed_getter(t)
        got = getter(n)  # (the children pushed inline, as in names_in/walk: a helper is a call per node)
        for v in (got,) if single else got:  # (the last field first, its last item first: popped in order)
            c = v.__class__
            if c in nodes:
                push(v)
            elif c is tuple or c is list:
                for x in v[::-1]:
                    if x.__class__ in nodes:
                        push(x)


def statement_nodes(body: cst.CSTNode, small: bool = True) -> list[cst.CSTNode]:
    """The statements, small statements and holders of statements (blocks, ``else``, handlers) of ``walk(body)``,
    in its order, without walking any expression (no statement is ever inside one: a lambda's body is an
    expression, a comprehension's ``for`` is not a loop statement): a tenth of the nodes. ``small=False``: not
    the small statements (a line's ``x = v``, ``return y``), only the lines holding them. (numpy_calls'
    ``names_always``; loop_else's scan for a loop with ``else``, which needs no small statement.)"""
    out: list[cst.CSTNode] = []
    stack = [body]
    kinds = _STATEMENT_KINDS
    line = None if small else cst.SimpleStatementLine
    while stack:
        n = stack.pop()
        out.append(n)
        t = n.__class__
        if t is line or (kinds[t] if t in kinds else _statement_kind(t)) == _SMALL:
            continue  # (its children are expressions, or small statements not asked for)
        stack += [c for c in reversed(syntax_children(n))
                  if (kinds[c.__class__] if c.__class__ in kinds else _statement_kind(c.__class__)) != _EXPRESSION]
    return out


_EXPRESSION, _SMALL, _HOLDER = range(3)
_STATEMENT_KINDS: dict[type, int] = {}  # a node class -> a small statement, a statement or a holder of them, or else
_HOLDERS = (cst.BaseStatement, cst.BaseSuite, cst.Else, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally,
            cst.MatchCase)


def _statement_kind(t: type) -> int:
    k = _STATEMENT_KINDS[t] = _SMALL if issubclass(t, cst.BaseSmallStatement) else \
        _HOLDER if issubclass(t, _HOLDERS) else _EXPRESSION
    return k


@dataclasses.dataclass(frozen=True)
class BodyBindings:
    """What a function body binds, from one walk (see :func:`body_bindings`)."""

    values: dict[str, list[cst.BaseExpression]]  # name -> the values `name = value` assigns it (walk order)
    rebound: set[str]  # names an augmented or annotated assignment, a `for` or a comprehension's `for` binds
    defs: dict[str, list[cst.FunctionDef]]  # name -> the nested ``def``s of that name (walk order)


def body_bindings(body: cst.CSTNode) -> BodyBindings:
    """The bindings of ``body`` (a function's) that the closure passes ask of each local passed to a helper
    (``apply(f, x)``: is ``f`` a lambda bound once? a nested ``def``?), gathered in one :func:`walk`,
    remembered per node until the collector's pause ends (libcst's nodes never change): each argument of
    each call walked the caller's body three times."""
    hit = _BINDINGS.get(id(body))
    if hit is not None and hit[0] is body:
        return hit[1]
    values: dict[str, list[cst.BaseExpression]] = {}
    rebound: set[str] = set()
    defs: dict[str, list[cst.FunctionDef]] = {}
    for n in walk(body):
        t = type(n)
        if t is cst.Assign:
            for tg in n.targets:  # type: ignore[attr-defined]
                if isinstance(tg.target, cst.Name):
                    values.setdefault(tg.target.value, []).append(n.value)  # type: ignore[attr-defined]
        elif t is cst.FunctionDef:
            defs.setdefault(n.name.value, []).append(n)  # type: ignore[attr-defined,arg-type]
        elif t in (cst.AugAssign, cst.For, cst.CompFor, cst.AnnAssign) and \
                isinstance(n.target, cst.Name):  # type: ignore[attr-defined]
            rebound.add(n.target.value)  # type: ignore[attr-defined]
    found = BodyBindings(values, rebound, defs)
    if len(_BINDINGS) >= 256:
        _BINDINGS.clear()
    _BINDINGS[id(body)] = (body, found)  # (the node kept alive: its id is not another node's while it is here)
    return found


_BINDINGS: dict[int, tuple[cst.CSTNode, BodyBindings]] = {}
gc_pause.on_resume(_BINDINGS.clear)


class Visitor:
    """A read-only ``CSTVisitor`` that does not rebuild the nodes it passes (several times faster).

    Subclasses define ``visit_<Node>(node)`` (return False to skip the node's children) and
    ``leave_<Node>(node)``, as for libcst; ``self.walk(child)`` visits a child from inside
    a method (where libcst code writes ``self.walk(child)``). Only code nodes are visited
    (not whitespace, comments or punctuation: see :func:`syntax_children`), in source order.
    """

    _hooks: dict[type, tuple[Any, Any]]

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls._hooks = {}

    def walk(self, node: cst.CSTNode) -> None:
        t = type(node)
        try:
            hooks = self._hooks[t]  # (a subscript: no call a node, as dict.get is)
        except KeyError:
            hooks = self._hooks[t] = (getattr(type(self), f"visit_{t.__name__}", None),
                                      getattr(type(self), f"leave_{t.__name__}", None))
        visit, leave = hooks
        if visit is None or visit(self, node) is not False:
            walk = self.walk
            try:
                getter, single = _SYNTAX_GETTERS[t]
            except KeyError:
                getter, single = _syntax_getter(t)
            got = getter(node)
            for v in (got,) if single else got:
                if v.__class__ in NODE_CLASSES:
                    walk(v)
                elif v.__class__ is tuple or v.__class__ is list:
                    for c in v:
                        if c.__class__ in NODE_CLASSES:
                            walk(c)
        if leave is not None:
            leave(self, node)


class _NoPosition:
    """A context manager that does nothing (``CodegenState.record_syntactic_position`` is a generator)."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_POSITION = _NoPosition()


class _Codegen(CodegenState):
    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
                                  end_node: cst.CSTNode | None = None) -> Any:
        return _NO_POSITION


def code(node: cst.CSTNode) -> str:
    """``cst.Module([]).code_for_node(node)``, cheaper (a name or number is its text), and remembered
    per node until the collector's pause ends (libcst's nodes never change: the batcher and the
    derivative writers print the same operands several times, ~half of a first ``vmap(grad(f))``'s)."""
    t = type(node)
    if (t is cst.Name or t is cst.Integer or t is cst.Float) and not node.lpar:  # type: ignore[attr-defined]
        return node.value  # type: ignore[attr-defined,no-any-return]
    hit = _CODE.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    text = fast_code(node)  # (the node types the writers print, in a call a node: cst_printer.py)
    if text is None:
        state = _Codegen(default_indent="    ", default_newline="\n")
        node._codegen(state)
        text = "".join(state.tokens)
    if len(text) <= _CODE_LONGEST:  # (operands: a whole function printed is not kept alive here)
        if len(_CODE) >= _CODE_MAX:
            _CODE.clear()
        _CODE[id(node)] = (node, text)  # (the node kept alive: its id is not another node's while it is here)
    return text


_CODE: dict[int, tuple[cst.CSTNode, str]] = {}  # id(node) -> (node, its code)
_CODE_MAX = 4096
_CODE_LONGEST = 200
gc_pause.on_resume(_CODE.clear)


_LITERALS: dict[tuple[type, str], Any] = {}


def literal_value(node: cst.Integer | cst.Float | cst.Imaginary | cst.SimpleString) -> Any:
    """``node.evaluated_value`` (libcst parses the literal's text with ``ast`` each time), remembered
    per text: numbers and strings are immutable."""
    key = (type(node), node.value)
    found = _LITERALS.get(key, _LITERALS)
    if found is _LITERALS:
        found = _LITERALS[key] = node.evaluated_value
    return found


def text_names(text: str) -> list[str]:
    """``names_in(cst.parse_expression(text))``, [] where libcst does not read ``text``: a name is itself and a
    number or string has none, without libcst's parse (~0.1 ms each in a first call; the batcher asks for
    hundreds)."""
    if text.isidentifier() and not keyword.iskeyword(text):
        return [text]
    if is_literal(text):
        return []
    try:
        return names_in(parse_expression(text))
    except cst.ParserSyntaxError:
        return []


def names_in(node: cst.CSTNode, *, skip_targets: bool = False) -> list[str]:
    """Variable names in ``node`` in source order (repeats kept).

    With ``skip_targets``, names only bound (assignment and ``for`` targets) are left out.
    """
    if type(node) is cst.Name:  # (the common case: a target, an operand)
        return [node.value]  # type: ignore[attr-defined]
    out: list[str] = []
    append = out.append
    getters = _REVERSED_GETTERS
    nodes = NODE_CLASSES
    name_t, attr_t, arg_t, target_t, for_t = cst.Name, cst.Attribute, cst.Arg, cst.AssignTarget, cst.For
    # (a loop over a stack, in source order: a nested function calling itself would be a reference
    # cycle per call, garbage only the cyclic collector frees)
    stack: list[Any] = [node]
    pop, push = stack.pop, stack.append
    while stack:
        n = pop()
        t = n.__class__
        if t is name_t:
            append(n.value)
            continue
        if t is attr_t or t is arg_t:
            push(n.value)
            continue
        if skip_targets:
            if t is target_t:
                continue
            if t is for_t:
                if n.orelse is not None:
                    push(n.orelse)
                push(n.body)
                push(n.iter)
                continue
        try:
            getter, single = getters[t]
        except KeyError:
            getter, single = _reversed_getter(t)
        got = getter(n)  # (the children pushed inline, as in names_in/walk: a helper is a call per node)
        for v in (got,) if single else got:  # (the last field first, its last item first: popped in order)
            c = v.__class__
            if c in nodes:
                push(v)
            elif c is tuple or c is list:
                for x in v[::-1]:
                    if x.__class__ in nodes:
                        push(x)
    return out


def names_read(text: str) -> set[str]:
    """``set(names_in(cst.parse_module(text), skip_targets=True))``, with Python's own parser (several
    times faster than libcst's): for analyses of generated source that only need the names."""
    out: set[str] = set()
    stack: list[Any] = [parse(text)]
    pop, push = stack.pop, stack.append
    nodes, getters = _AST_CLASSES, _AST_GETTERS
    while stack:
        n = pop()
        t = type(n)
        if t is ast.Name:
            out.add(n.id)  # type: ignore[attr-defined]
            continue
        if t is ast.Assign:  # its targets are only bound
            stack.append(n.value)  # type: ignore[attr-defined]
            continue
        if t is ast.For or t is ast.AsyncFor:
            stack.append(n.iter)  # type: ignore[attr-defined]
            stack.extend(n.body)  # type: ignore[attr-defined]
            stack.extend(n.orelse)  # type: ignore[attr-defined]
            continue
        # names that are no ast.Name, but a libcst Name
        if t is ast.Constant:
            if n.value is None or n.value is True or n.value is False:  # type: ignore[attr-defined]
                out.add(repr(n.value))  # type: ignore[attr-defined]
        elif t is ast.arg:
            out.add(n.arg)  # type: ignore[attr-defined]
        elif t is ast.FunctionDef or t is ast.AsyncFunctionDef or t is ast.ClassDef:
            out.add(n.name)  # type: ignore[attr-defined]
        elif t is ast.ExceptHandler:
            if n.name:  # type: ignore[attr-defined]
                out.add(n.name)  # type: ignore[attr-defined]
        elif t is ast.alias:
            out.add(n.name.split(".")[0])  # type: ignore[attr-defined]
            if n.asname:  # type: ignore[attr-defined]
                out.add(n.asname)  # type: ignore[attr-defined]
        elif t is ast.ImportFrom:
            if n.module:  # type: ignore[attr-defined]
                out.add(n.module.split(".")[0])  # type: ignore[attr-defined]
        elif t is ast.Global or t is ast.Nonlocal:
            out.update(n.names)  # type: ignore[attr-defined]
        try:
            getter, single = getters[t]
        except KeyError:
            getter, single = _ast_getter(t)
        got: Any = getter(n)  # (the children pushed inline: ast.iter_child_nodes was ~4 calls a node)
        for v in (got,) if single else got:
            c = v.__class__
            if c in nodes:
                push(v)
            elif c is list:
                for x in v:
                    if x.__class__ in nodes:
                        push(x)
    return out


_AST_CLASSES = _subclasses(ast.AST)  # (every ``ast`` node class)
_AST_GETTERS: dict[type, tuple[Callable[[Any], Any], bool]] = {}


def _ast_getter(t: type) -> tuple[Callable[[Any], Any], bool]:
    """A getter of an ``ast`` node class's fields' values in one call (see :data:`_SYNTAX_GETTERS`)."""
    found = _AST_GETTERS[t] = _getter(tuple(t._fields))  # type: ignore[attr-defined]
    return found


def target_names(t: cst.CSTNode) -> list[str]:
    """The names an assignment or ``for`` target binds (``a, (b, *c)`` -> a, b, c)."""
    kind = t.__class__  # (libcst's node classes are final: no isinstance call a target)
    if kind is cst.Name:
        return [t.value]  # type: ignore[attr-defined]
    if kind is cst.Tuple or kind is cst.List:
        return [n for e in t.elements for n in target_names(e.value)]  # type: ignore[attr-defined]
    if kind is cst.StarredElement:
        return target_names(t.value)  # type: ignore[attr-defined]
    return []


class RenameNames(cst.CSTTransformer):
    """Replace variable names by expressions (or other names)."""

    def __init__(self, mapping: Mapping[str, cst.BaseExpression | str]) -> None:
        self.mapping = mapping

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        rep = self.mapping.get(original.value)
        if rep is None:
            return updated
        return cst.Name(rep) if isinstance(rep, str) else rep


def renamed(node: _N, mapping: Mapping[str, cst.BaseExpression],
            located: tuple[Mapping[int, Any], dict[int, Any]] | None = None) -> _N:
    """``node.visit(RenameNames(mapping))`` for expressions and statements whose text is what matters:
    subtrees without a renamed name are kept (the same objects), the rest rebuilt along the way. ``located``
    (``spans``, ``found``): each node put in place of one that has a span in ``spans`` (by id) gets it in
    ``found`` (a node of ``mapping`` that stands for several names: the last one's, in source order)."""
    t = type(node)
    rep: Any
    if t is cst.Name:
        rep = mapping.get(node.value)  # type: ignore[attr-defined]
        if rep is None:
            return node
    elif t is cst.Attribute or t is cst.Arg:  # the attribute's name, the keyword: not variables
        value = node.value  # type: ignore[attr-defined]
        new = renamed(value, mapping, located)
        if new is value:
            return node
        rep = node.with_changes(value=new)
    else:
        changes: dict[str, Any] = {}
        for f in _SYNTAX_FIELDS.get(t) or syntax_fields(t):
            v = getattr(node, f)
            if v.__class__ in NODE_CLASSES:  # (isinstance of libcst's base class: an ABC's check, a Python call)
                nv = renamed(v, mapping, located)
                if nv is not v:
                    changes[f] = nv
            elif v.__class__ is tuple or v.__class__ is list:
                items = [renamed(c, mapping, located) if c.__class__ in NODE_CLASSES else c for c in v]
                if any(a is not b for a, b in zip(items, v)):
                    changes[f] = items
        if not changes:
            return node
        rep = node.with_changes(**changes)
    if located is not None and (span := located[0].get(id(node))) is not None:
        located[1][id(rep)] = span
    return rep  # type: ignore[return-value]


def replaced(node: _N, kind: type, fn: Callable[[Any], cst.CSTNode]) -> _N:
    """``node`` with each node of type ``kind`` under it replaced by ``fn(that node)`` (not searched
    inside); subtrees with nothing replaced are kept (the same objects), the rest rebuilt along the way."""
    t = type(node)
    if t is kind:
        return fn(node)  # type: ignore[return-value]
    changes: dict[str, Any] = {}
    for f in _SYNTAX_FIELDS.get(t) or syntax_fields(t):
        v = getattr(node, f)
        if v.__class__ in NODE_CLASSES:  # (isinstance of libcst's base class: an ABC's check, a Python call)
            nv = replaced(v, kind, fn)
            if nv is not v:
                changes[f] = nv
        elif v.__class__ is tuple or v.__class__ is list:
            items = [replaced(c, kind, fn) if c.__class__ in NODE_CLASSES else c for c in v]
            if any(a is not b for a, b in zip(items, v)):
                changes[f] = items
    return node.with_changes(**changes) if changes else node


def assigned_names(stmts: Sequence[cst.CSTNode]) -> list[str]:
    """Every name the statements bind (assignments, ``for`` targets, ``def``s), in order, once each;
    nested function bodies are their own scope and are not searched."""
    v = _Assigned()
    for s in stmts:
        v.walk(s)
    return list(v.out)


class _Assigned(Visitor):
    """:func:`assigned_names`' walker (one class, made once: its hooks are looked up once)."""

    def __init__(self) -> None:
        self.out: dict[str, None] = {}

    def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
        self.out.update(dict.fromkeys(target_names(n.target)))

    def visit_AugAssign(self, n: cst.AugAssign) -> None:
        self.out.update(dict.fromkeys(target_names(n.target)))

    def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
        self.out.update(dict.fromkeys(target_names(n.target)))

    def visit_For(self, n: cst.For) -> None:
        self.out.update(dict.fromkeys(target_names(n.target)))

    def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
        self.out[n.name.value] = None
        return False


class Names:
    """Fresh names: ``base``, else ``base_1``, ``base_2``, ... avoiding every name taken so far."""

    def __init__(self, taken: Iterable[str]) -> None:
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        if base not in self.taken:
            self.taken.add(base)
            return base
        for k in itertools.count(1):
            n = f"{base}_{k}"
            if n not in self.taken:
                self.taken.add(n)
                return n
        raise AssertionError


BOOLEAN_CALLS = {f"np.{n}" for n in ("isfinite", "isnan", "isinf", "isneginf", "isposinf", "any", "all",
                                      "logical_and", "logical_or", "logical_not", "logical_xor", "signbit",
                                      "array_equal", "allclose")}
_BOOLEAN_NAMES = frozenset(c.removeprefix("np.") for c in BOOLEAN_CALLS)


def boolean_valued(e: cst.BaseExpression, leaf: Callable[[cst.BaseExpression], bool] | None = None) -> bool:
    """``a > 0 and not np.isnan(b)``: an ``and``/``or``/``not`` of comparisons and tests, a boolean
    whichever operand decides (``np.logical_and`` of the same operands is the same value). ``leaf``
    accepts other operands (say, values without a derivative)."""
    kind = e.__class__  # (libcst's node classes are final: no isinstance call, each an ABC's check, a node)
    if kind is cst.BooleanOperation:
        return boolean_valued(e.left, leaf) and boolean_valued(e.right, leaf)  # type: ignore[attr-defined]
    if kind is cst.UnaryOperation and e.operator.__class__ is cst.Not:  # type: ignore[attr-defined]
        return True
    if kind is cst.Comparison or (kind is cst.Name and e.value in ("True", "False")):  # type: ignore[attr-defined]
        return True
    func: Any = e.func if kind is cst.Call else None  # type: ignore[attr-defined]
    if func.__class__ is cst.Attribute and func.attr.value in _BOOLEAN_NAMES \
            and code(func) in BOOLEAN_CALLS:  # (the name first: most calls are not these, and their text costs)
        return True
    return leaf is not None and leaf(e)


def copy_positions(old: cst.CSTNode, new: cst.CSTNode, positions: dict[cst.CSTNode, Any]) -> None:
    """Give the nodes of ``new`` (``old`` with some names replaced) the positions of ``old``'s."""
    if old is new:
        return
    r = positions.get(old)
    if r is not None:
        positions[new] = r
    for a, b in zip(children(old), children(new)):
        copy_positions(a, b, positions)


def comprehension_targets(root: cst.CSTNode) -> set[str]:
    v = _CompTargets()
    v.walk(root)
    return v.names


class _CompTargets(Visitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.names.update(target_names(node.target))
