"""Reading ANF statements: what the forward and reverse modes share about the function they differentiate.

- :class:`Op` and :func:`classify`: what one ANF right-hand side does (a primitive and its
  operands, a copy, a tuple, a helper or custom-rule call, ...); containers
  (:func:`classify_container`: dicts, NamedTuple fields, the srcjax.adjoint tree helpers);
- loops: how ``for <target> in <iter>`` binds its target from sequences (:class:`LoopSource`,
  :func:`loop_sources`, :func:`active_loop`, :func:`loop_key`), and the loop pre-passes
  that put iterables back together (:func:`inline_loop_iterables`) and name the sequences of
  active loops (:func:`hoist_loop_sequences`);
- a function's parameters as generated functions take them (:func:`signature`,
  :func:`all_params`, :func:`call_arguments`);
- ``ADJOINT_IMPORTS`` (the :mod:`srcjax.adjoint` helpers generated code reads) and the errors
  of differentiation (:class:`DifferentiationError`, :class:`ComprehensionError`).

The facade :mod:`srcjax.transforms.ad` re-exports the public names.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from .. import adjoint, gc_pause
from ..core import TranspileError
from ..frontend import parsed
from ..frontend.ast_walk import target_names
from ..frontend.names import Names, RenameNames, code, names_in, names_read, walk
from ..frontend.normalize import NormalizedFunction, literal_code
from ..frontend.program import Program
from ..primitives import registry
from ..primitives.elementwise import OPERATOR_PRIMS
from . import custom_rules

ADJOINT_IMPORTS = tuple(adjoint.__all__)  # the helpers generated derivative source imports


class DifferentiationError(TranspileError):
    """A construct srcjax cannot differentiate (yet)."""

    at_return = False  # (about the function's return, placed there by autodiff: has_aux's missing pair)


class ComprehensionError(DifferentiationError):
    """A comprehension, generator expression or builtin ``sum`` over differentiated values: written as
    a loop (``items.append(y)``, ``total = total + y``), it can be."""


_PATHS: list[Any] = [None, {}]  # [the registry's state it was built for, path -> primitive]


def primitive_paths() -> dict[str, registry.Primitive]:
    """Each primitive by its path (``"np.tanh"``): read-only, rebuilt when a primitive is registered."""
    state = (len(registry.PRIMITIVES), registry.registrations())
    if _PATHS[0] != state:
        _PATHS[1] = {p.path: p for p in registry.PRIMITIVES.values()}
        _PATHS[0] = state
    return _PATHS[1]  # type: ignore[no-any-return]


# -- reading ANF statements --------------------------------------------------------------

@dataclass
class Op:
    """What one ANF right-hand side does."""

    kind: str  # prim | copy | pack | call | static | tape_pop | tape_new
    prim: registry.Primitive | None = None
    args: dict[str, Any] = field(default_factory=dict)  # param -> atom code (str), list[str] for sequences
    operands: dict[str, str] = field(default_factory=dict)  # array param -> Name it reads (only Names)
    callee: str | None = None  # helper name
    call_args: list[str] = field(default_factory=list)
    call_kwargs: dict[str, str] = field(default_factory=dict)
    elements: list[str] = field(default_factory=list)  # for pack (and dict: the values)
    reads: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)  # for dict: the keys' code


def _subscript_key(node: cst.Subscript) -> str:
    """The index of ``x[...]`` as an expression: ``np.s_[1:, None]`` when it is all literals,
    else an explicit tuple (``(i, slice(1, n, None))``) so computed indices stay values."""
    literal = all(isinstance(n, (cst.Integer, cst.Ellipsis, cst.UnaryOperation, cst.Slice)) or
                  (isinstance(n, cst.Name) and n.value == "None")
                  for e in node.slice for n in [e.slice.value if isinstance(e.slice, cst.Index) else e.slice])
    literal = literal and all(
        p is None or isinstance(p, (cst.Integer, cst.UnaryOperation))
        for e in node.slice if isinstance(e.slice, cst.Slice) for p in (e.slice.lower, e.slice.upper, e.slice.step))
    if literal and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) and \
            isinstance(node.slice[0].slice.value, (cst.Integer, cst.UnaryOperation)):
        return code(node.slice[0].slice.value)  # items[0], x[-1]: the index itself
    if literal:
        return "np.s_[" + ", ".join(code(e.slice) for e in node.slice) + "]"
    parts = []
    for e in node.slice:
        sl = e.slice
        if isinstance(sl, cst.Index):
            parts.append(code(sl.value))
        else:
            assert isinstance(sl, cst.Slice)
            parts.append("slice(" + ", ".join(code(p) if p is not None else "None"
                                             for p in (sl.lower, sl.upper, sl.step)) + ")")
    if len(parts) == 1:
        return parts[0]  # x[i], p["w"], xs[a:b]: one index as itself (a container takes no tuple key)
    return "(" + ", ".join(parts) + ",)"


def _literal(v: Any) -> str:
    return repr(v)


def literal_container(arg: Any) -> cst.Tuple | cst.List | None:
    """An array argument written as a tuple or list literal (``index_add(z, k, (a_bar, b_bar))``)."""
    if not isinstance(arg, str) or not arg.startswith(("(", "[")):
        return None
    node = cst.parse_expression(arg)
    return node if isinstance(node, (cst.Tuple, cst.List)) else None


# srcjax's own helpers of derivative code whose results are static whatever they read (an einsum's subscripts
# as terms: strings); not followed by derivatives (the subscripts are a value popped from the tape in forward over
# reverse of vmap's batch_dot, which a tape pop makes active: `subscripts.replace` was refused in the helper)
STATIC_HELPER_CALLS = frozenset({"einsum_terms"})


def classify(node: cst.BaseExpression, program: Program, nf: NormalizedFunction) -> Op:
    paths = primitive_paths()
    reads = [n for n in names_in(node)]
    if type(node) is cst.Name:  # (exact types: libcst's node classes are final; isinstance goes through ABCMeta)
        return Op("copy", operands={"x": node.value}, reads=reads)
    if type(node) is cst.Tuple or type(node) is cst.List:
        return Op("pack", elements=[code(e.value) for e in node.elements], reads=reads)
    container = classify_container(node, program)
    if container is not None:
        return container
    record = _record_build(node, nf)
    if record is not None:
        return record
    if type(node) is cst.BinaryOperation:
        prim = registry.PRIMITIVES[OPERATOR_PRIMS[type(node.operator).__name__]]
        args = {"x1": code(node.left), "x2": code(node.right)}
        return _prim_op(prim, args, reads)
    if type(node) is cst.UnaryOperation and type(node.operator) is not cst.Not:
        if type(node.expression) is cst.Integer or type(node.expression) is cst.Float:
            return Op("static", reads=reads)
        prim = registry.PRIMITIVES[OPERATOR_PRIMS[type(node.operator).__name__]]
        return _prim_op(prim, {"x": code(node.expression)}, reads)
    if type(node) is cst.Comparison:
        return Op("static", reads=reads)  # comparisons have zero derivatives
    if type(node) is cst.Subscript:
        return _prim_op(registry.PRIMITIVES["getitem"], {"x": code(node.value), "key": _subscript_key(node)}, reads)
    if type(node) is cst.Attribute:
        if node.attr.value == "T":
            return _prim_op(registry.PRIMITIVES["transpose"], {"a": code(node.value), "axes": "None"}, reads)
        return Op("static", reads=reads)
    if isinstance(node, cst.Call):
        fcode = code(node.func)
        if fcode.endswith(".pop") and not node.args and isinstance(node.func, cst.Attribute):
            return Op("tape_pop", callee=code(node.func.value), reads=reads)
        if fcode == "tree_get" and len(node.args) == 2:  # g["w"] in derivative code (a record's field too)
            return _prim_op(_tree_get(), {"x": code(node.args[0].value), "key": code(node.args[1].value)}, reads)
        if fcode == "tree_set" and len(node.args) == 3 and "tree_set" not in program.functions:
            # a record's field replaced in batched code (vmap's carry broadcast item by item): `index_update` of
            # the container, whose derivative reads and clears the item by its key
            return _prim_op(registry.PRIMITIVES["index_update"], {"x": code(node.args[0].value),
                            "key": code(node.args[1].value), "value": code(node.args[2].value)}, reads)
        cprim = paths.get(fcode)
        if cprim is None and fcode == "np.astype":
            cprim = registry.PRIMITIVES["astype"]
        if cprim is None and fcode == "abs" and "abs" not in program.functions and len(node.args) == 1:
            cprim = registry.PRIMITIVES["absolute"]  # (Python's abs of an array: NumPy's, as jax's)
        if cprim is None and fcode == "round" and "round" not in program.functions and 1 <= len(node.args) <= 2:
            cprim = registry.PRIMITIVES["round"]  # (Python's round of an array: np.round, as jax's: no derivative)
        if cprim is None and fcode in ("min", "max") and fcode not in program.functions and len(node.args) == 2 and \
                all(a.keyword is None and not a.star for a in node.args):
            return _selected_op(fcode, code(node.args[0].value), code(node.args[1].value), reads)
        if cprim is not None:
            pos = [code(a.value) for a in node.args if a.keyword is None]
            kws = {a.keyword.value: code(a.value) for a in node.args if a.keyword is not None}
            try:
                bound = cprim.bind(pos, kws)
            except TypeError as e:
                raise DifferentiationError(f"{cprim.path}(): {e}") from None
            cargs: dict[str, Any] = {}
            for pname, p in cprim.signature.parameters.items():
                if pname in bound.arguments:
                    v = bound.arguments[pname]
                    cargs[pname] = list(v) if p.kind == inspect.Parameter.VAR_POSITIONAL else v
                elif p.default is not inspect.Parameter.empty:
                    cargs[pname] = _literal(p.default)
            return _prim_op(cprim, cargs, reads)
        if fcode in STATIC_HELPER_CALLS:
            return Op("static", reads=reads)
        if isinstance(node.func, cst.Name) and node.func.value in program.functions:
            if custom_rules.custom_callee(program, node.func.value) is not None:
                return custom_rules.classify_call(program, node, Op)
            callee = program.functions[node.func.value]
            try:
                pos, kws = _every_argument(callee, [code(a.value) for a in node.args if a.keyword is None],
                                           {a.keyword.value: code(a.value) for a in node.args if a.keyword is not None})
            except TranspileError as e:  # (at the caller's call of it)
                raise e.with_span(nf.call_sites.get(callee.fn)) from None
            return Op("call", callee=node.func.value, call_args=pos, call_kwargs=kws, reads=reads)
        return Op("static", reads=reads)
    return Op("static", reads=reads)


def _every_argument(nf: NormalizedFunction, pos: list[str],
                    kws: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """A helper call's arguments for every parameter, literal defaults written out: the positional
    ones in order, and the keyword-only ones by name. The helper's generated halves and jvp take
    the positional ones, then ``_tape`` or tangents, then the keyword-only ones by keyword."""
    sig = inspect.signature(nf.fn)
    try:
        ba = sig.bind(*pos, **kws)
    except TypeError:
        return pos, kws  # reported when the call is specialized
    out: list[str] = []
    kw: dict[str, str] = {}
    for name, p in sig.parameters.items():
        if p.kind not in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            return pos, kws
        if name in ba.arguments:
            value = ba.arguments[name]
        else:
            value = literal_code(p.default) or _default_code(nf, name, p.default)
            if value is None:
                raise DifferentiationError(
                    f"cannot differentiate the call to {nf.name}: it leaves {name!r} to its default, which is not "
                    "a literal value", hint=f"pass {name}=... explicitly in the call")
        if p.kind is inspect.Parameter.KEYWORD_ONLY:
            kw[name] = value
        else:
            out.append(value)
    return out, kw


def _default_code(nf: NormalizedFunction, name: str, default: Any) -> str | None:
    """A helper's default that is not a literal, written out: a NumPy function srcjax knows (``f=np.sin``:
    ``np.sin``), or ``None`` for a parameter its body does not read (``grad(s)`` of ``s(v, f=np.sin)``: a
    derivative whose body was written with ``np.sin`` itself); None where neither holds."""
    prim = registry.lookup(default) if callable(default) else None
    if prim is not None:
        return prim.path
    return "None" if name not in names_in(nf.fdef.body) else None


def call_arguments(op: Op, then: Sequence[str]) -> list[str]:
    """A helper's derivative called: the positional arguments, ``then`` (tangents, the tape), and
    the keyword-only arguments by keyword (as ``signature(callee, then)`` takes them)."""
    return [*op.call_args, *then, *(f"{k}={v}" for k, v in op.call_kwargs.items())]


@functools.cache
def _tree_get() -> registry.Primitive:
    """``tree_get(g, "w")`` of derivative code: ``getitem`` whose tangent is read by name as well
    (``tree_get(g_dot, "w")``: a NamedTuple's or dataclass's field, which ``g_dot["w"]`` is not)."""
    return dataclasses.replace(registry.PRIMITIVES["getitem"], jvp={"x": "tree_get(x_dot, key)"})


def _selected_op(fcode: str, first: str, second: str, reads: list[str]) -> Op:
    """Python's ``min(a, b)`` (``max``) of two single values: ``np.where(b < a, b, a)`` to derivatives (the first of
    equal values, as Python's comparison keeps it: eager jax's gradient; the lowering refuses arrays of several
    elements, whose truth NumPy refuses too)."""
    test = f"{second} {'<' if fcode == 'min' else '>'} {first}"
    return _prim_op(registry.PRIMITIVES["where"], {"condition": test, "x": second, "y": first}, reads)


def _prim_op(prim: registry.Primitive, args: dict[str, Any], reads: list[str]) -> Op:
    operands: dict[str, str] = {}
    for p in prim.arrays:
        a = args.get(p)
        if isinstance(a, str) and a.isidentifier() and a not in ("None", "True", "False"):
            operands[p] = a
    for p in prim.array_seqs:
        seq = args.get(p)
        if isinstance(seq, str):
            node = cst.parse_expression(seq)
            if isinstance(node, (cst.List, cst.Tuple)):  # a literal list of arrays: its elements
                args[p] = [code(e.value) for e in node.elements]
            else:
                operands[p] = seq  # a variable holding a list: see Activity.check
    return Op("prim", prim=prim, args=args, operands=operands, reads=reads)


# -- containers --------------------------------------------------------------------------------
#
# The tangent or cotangent of a tuple, list, dict or NamedTuple is a container of the same
# structure holding the leaves' tangents or cotangents; in cotangents, leaves without a
# derivative (integers, booleans, strings, None) hold None. Derivative code builds them with
# srcjax.adjoint helpers that also take arrays, so the same source serves every argument
# structure: ``zeros_like(p)``, ``index_add(z, key, g)`` (``p["w"]``, ``params[-1]``,
# ``params[:-1]``, ``p.w``), ``tree_add(a, b)`` (two cotangents of one value that may be a
# container), ``pack_like(x, (a_bar, b_bar))`` (``a, b = x``). A loop over a container binds
# its target from an element of a sequence; the adjoint adds the target's cotangent into the
# sequence's at that element's index.

_STATIC_ATTRS = {"shape", "ndim", "dtype", "size", "T"}


def _record_build(node: cst.BaseExpression, nf: NormalizedFunction) -> Op | None:
    """``State(a, b)`` / ``State(x=a, v=b)``: a NamedTuple or a plain dataclass built of its fields (every
    field given): a "record" op, its elements in field order; None for anything else."""
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Name) or \
            any(a.star for a in node.args):
        return None
    src = nf.source
    cls = src.closure.get(node.func.value, src.globals.get(node.func.value))
    if not isinstance(cls, type):
        return None
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        fields = list(cls._fields)
    elif dataclasses.is_dataclass(cls) and not hasattr(cls, "__post_init__") and \
            all(f.init for f in dataclasses.fields(cls)):
        fields = [f.name for f in dataclasses.fields(cls)]
    else:
        return None
    given: dict[str, str] = {}
    for k, a in enumerate(node.args):
        name = a.keyword.value if a.keyword is not None else (fields[k] if k < len(fields) else None)
        if name is None or name not in fields:
            return None
        given[name] = code(a.value)
    if set(given) != set(fields):
        return None  # (defaults: not followed)
    return Op("record", elements=[given[f] for f in fields], args={"cls": node.func.value, "fields": fields},
              reads=list(names_in(node)))


def classify_container(node: cst.BaseExpression, program: Program) -> Op | None:
    """Dict literals, attribute reads (NamedTuple fields) and calls of the container helpers."""
    reads = list(names_in(node))
    if type(node) is cst.Dict:  # (exact types, as in classify)
        elements = [e for e in node.elements if isinstance(e, cst.DictElement)]
        if len(elements) != len(node.elements):
            return Op("static", reads=reads)  # {**d}: not differentiated (see Activity.check)
        return Op("dict", elements=[code(e.value) for e in elements], keys=[code(e.key) for e in elements],
                  reads=reads)
    if type(node) is cst.Attribute and type(node.value) is cst.Name and node.attr.value not in _STATIC_ATTRS:
        return Op("getattr", operands={"x": node.value.value}, args={"attr": node.attr.value}, reads=reads)
    if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in program.functions:
        from .. import adjoint

        fn = program.functions[node.func.value].fn
        args = [code(a.value) for a in node.args]
        if fn is adjoint.zeros_like or fn is adjoint.ones_like:
            return Op("static", reads=reads)
        if fn is adjoint.tree_add:
            return Op("tree_add", elements=args, reads=reads)
        if fn is adjoint.pack_like:
            return Op("pack_like", args={"x": args[0]}, elements=args[1:], reads=reads)
    return None


ITERATOR_CALLS = {"enumerate", "zip", "map", "filter"}


@dataclass
class LoopSource:
    """One part of a loop target bound from an element of a sequence: ``target`` (a name or a
    tuple target) is ``seq[key]``. ``key`` is code in which ``@i@`` stands for the position of
    the item in the loop (the adjoint enumerates it): ``@i@``, ``-1 - @i@`` (``reversed(xs)``),
    ``list(d)[@i@]`` (``d.values()``), or a target name holding the key (``i`` in
    ``enumerate``, ``k`` in ``d.items()``)."""

    target: cst.BaseExpression
    seq: cst.BaseExpression
    key: str


INDEX = "@i@"


def loop_sources(s: cst.For) -> list[LoopSource]:
    """How ``for <target> in <iter>`` binds its target from sequences (empty for ``range`` and
    other iterables whose items carry no derivative, and a loop whose target is an index: ``for k in d: ... d[k]``,
    a dict's keys, never an array's values: its derivative was added at the key's position, silently wrong)."""
    return [] if indexing_items(s) else _sources(s.iter, s.target)


def indexing_items(s: cst.For) -> bool:
    """Whether ``s``'s target is one name its body indexes with (``for k in d: ... d[k]``): keys or indices."""
    return type(s.target) is cst.Name and _indexes_with(s.body, s.target.value)


def _indexes_with(body: cst.CSTNode, name: str) -> bool:
    """Whether ``body`` subscripts something with ``name`` (``x[name]``, ``x[name, 0]``, or derivative code's
    ``index_add(z, name, g)``, ``tree_get(x, name)``): it holds a key or an index (an integer, a string, a tuple of
    them), which carries no derivative."""
    for n in walk(body):
        if isinstance(n, cst.SubscriptElement) and isinstance(n.slice, cst.Index) and \
                isinstance(n.slice.value, cst.Name) and n.slice.value.value == name:
            return True
        if isinstance(n, cst.Call) and len(n.args) >= 2 and isinstance(n.args[1].value, cst.Name) and \
                n.args[1].value.value == name and call_name(n) in _KEYED_CALLS:
            return True
    return False


_KEYED_CALLS = frozenset({"index_add", "index_update", "tree_get", "tree_set", "batch_getitem", "batch_index_add"})


def _sources(it: cst.BaseExpression, target: cst.BaseExpression) -> list[LoopSource]:
    it = _strip_calls(it, ("list", "tuple"))
    parts = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else None
    name = call_name(it)
    if name == "sorted" and isinstance(it, cst.Call) and len(it.args) == 1 and _items_call(it.args[0].value) and \
            parts is not None and \
            len(parts) == 2 and isinstance(parts[0], cst.Name):  # `for k, v in sorted(d.items())`: in key order
        return [LoopSource(parts[1], it.args[0].value.func.value, code(parts[0]))]  # type: ignore[attr-defined]
    if isinstance(it, cst.Call) and code(it.func).rsplit(".", 1)[-1] == "tree_leaves":
        return [LoopSource(target, it, INDEX)]  # (named first: `loop_items = tree_leaves(p)`)
    if isinstance(it, cst.Call) and name is not None and name not in _ITEM_CALLS:
        # the items of a sequence a call returns (a helper's tuple, np.split): named first (hoisted)
        return [] if name in _STATIC_ITEM_CALLS or name.startswith("math.") else [LoopSource(target, it, INDEX)]
    if isinstance(it, cst.Call) and name is not None:
        args = [a.value for a in it.args]
        if len(args) != 1 and name != "zip" or any(a.keyword is not None or a.star for a in it.args):
            return []
        if name == "reversed":
            inner = _strip_calls(args[0], ("list", "tuple"))
            if call_name(inner) == "zip":  # positions from the end of a zip of unequal lengths: not followed,
                srcs = _sources(args[0], target)  # but an enumerate's index is the item's position itself
                return srcs if all(INDEX not in src.key for src in srcs) else []  # (reverse mode's own loops)
            return [LoopSource(src.target, src.seq, src.key.replace(INDEX, f"-1 - {INDEX}"))
                    for src in _sources(args[0], target)]
        if name == "enumerate" and parts is not None and len(parts) == 2:
            idx = code(parts[0]) if isinstance(parts[0], cst.Name) else INDEX
            return [LoopSource(src.target, src.seq, src.key.replace(INDEX, idx))
                    for src in _sources(args[0], parts[1])]
        if name == "zip" and parts is not None and len(parts) == len(args):
            return [src for p, a in zip(parts, args) for src in _sources(a, p)]
        return []  # range(...), sorted(d), ...: static items
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and not it.args:
        meth = it.func.attr.value
        if meth == "items" and parts is not None and len(parts) == 2 and isinstance(parts[0], cst.Name):
            return [LoopSource(parts[1], it.func.value, code(parts[0]))]
        if meth == "values":
            return [LoopSource(target, it.func.value, f"list({code(it.func.value)})[{INDEX}]")]
        return []
    if isinstance(it, cst.Call) or isinstance(it, cst.Attribute) and it.attr.value in ("shape", "strides"):
        return []  # (`for d in x.shape`: ints, static)
    return [LoopSource(target, it, INDEX)]


# calls whose items are a sequence's own (followed above); calls whose items carry no derivative
_ITEM_CALLS = {"reversed", "enumerate", "zip", "list", "tuple"}
_STATIC_ITEM_CALLS = {"range", "sorted", "len", "iter", "map", "filter", "np.arange", "np.ndindex", "np.shape",
                      "np.ndenumerate", "np.nonzero", "np.argsort", "np.unravel_index", "np.indices"}


def _items_call(node: cst.BaseExpression) -> bool:
    """``d.items()`` or ``d.values()``."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and not node.args and \
        node.func.attr.value in ("items", "values")


def _strip_calls(node: cst.BaseExpression, names: tuple[str, ...]) -> cst.BaseExpression:
    """``list(tuple(x))`` -> ``x`` for ``names=("list", "tuple")``."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in names \
            and len(node.args) == 1:
        node = node.args[0].value
    return node


def call_name(node: cst.BaseExpression) -> str | None:
    if node.__class__ is cst.Call and node.func.__class__ is cst.Name:  # type: ignore[attr-defined]
        return node.func.value  # type: ignore[attr-defined]
    return None


def active_loop(s: cst.For, active: set[str]) -> list[LoopSource]:
    """The sources of a loop whose target receives derivatives (a sequence that is active)."""
    srcs = loop_sources(s)
    if _taken_whole(s.iter, s.target) and any(n in active for n in names_in(s.iter)):
        raise DifferentiationError(  # (its items were static to the derivative: a silently wrong one, refuse46)
            f"cannot differentiate a loop over `{code(s.iter)}` yet: an item of a zip or enumerate inside it is "
            "taken whole by the loop's target",
            hint="unpack each item in the target as the iterable nests it: `for (a, b), z in zip(zip(xs, ys), zs)`")
    if any(n in active for src in srcs for n in names_in(src.seq)):
        return srcs
    it = _strip_calls(s.iter, ("list", "tuple", "reversed"))
    iterator = call_name(it) in ITERATOR_CALLS or _items_call(it) or (
        call_name(it) == "sorted" and any(_items_call(a.value) for a in it.args)) or (  # type: ignore[attr-defined]
        # a call srcjax does not know the items of (`tree_leaves(p)`): its items may carry derivatives
        isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and it.args and
        code(it.func) not in _STATIC_ITEM_CALLS and it.func.attr.value not in ("keys", "index", "count"))
    if iterator and any(n in active for n in names_in(s.iter)):
        raise DifferentiationError(
            f"cannot differentiate a loop over `{code(s.iter)}` yet",
            hint="loop over a list, tuple, dict or array (`for p in params`, `for i, p in enumerate(params)`, "
                 "`for a, b in zip(xs, ys)`, `for k, v in d.items()`)")
    return []


def _taken_whole(it: cst.BaseExpression, target: cst.BaseExpression) -> bool:
    """Whether a ``zip``/``enumerate`` nested in the loop's iterable hands its tuples to a name of the target
    (``pair`` of ``for pair, z in zip(zip(xs, ys), zs)``), which :func:`loop_sources` does not follow (a top-level
    one: refused in :func:`active_loop` as an iterator)."""
    args = [a.value for a in it.args] if isinstance(it, cst.Call) else []
    parts = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else None
    name = call_name(it)
    if name in ("reversed", "list", "tuple") and len(args) == 1:
        return _taken_whole(args[0], target)
    if name == "zip" and parts is not None:
        return len(parts) == len(args) and any(_nested_whole(a, p) for a, p in zip(args, parts))
    if name == "enumerate" and parts is not None and len(parts) == 2 and args:
        return _nested_whole(args[0], parts[1])
    return False


def _nested_whole(it: cst.BaseExpression, target: cst.BaseExpression) -> bool:
    inner = _strip_calls(it, ("list", "tuple", "reversed"))
    if call_name(inner) in ("zip", "enumerate") and not isinstance(target, (cst.Tuple, cst.List)):
        return True
    return _taken_whole(it, target)


_VIEW_CALLS = {"enumerate", "zip", "list", "tuple", "reversed"}


def inline_loop_iterables(body: Sequence[Any], spans: dict[int, Any] | None = None) -> list[Any]:
    """Put a loop's iterable back together where A-normal form split it (derivative code read
    again, e.g. for hessian): ``list_1 = list(enumerate_1)`` + ``for i, p in reversed(list_1):``
    -> ``for i, p in reversed(list(enumerate(params))):``, for names used only there. ``spans``: the
    statements' positions, given to the statements rebuilt (a refusal of such a loop at the user's line)."""
    if not _has_for(body):  # (no loop: nothing to put back together, no names to count)
        return list(body)
    counts: dict[str, int] = {}
    for st in body:
        for n in names_in(st):
            counts[n] = counts.get(n, 0) + 1
    return _inline_block(list(body), counts, {} if spans is None else spans)


def _has_for(stmts: Sequence[Any]) -> bool:
    """Whether a ``for`` is among ``stmts`` or in the blocks :func:`_inline_block` reads (``if``, ``else``, loop
    bodies)."""
    for st in stmts:
        kind = st.__class__
        if kind is cst.For:
            return True
        if kind is cst.While and _has_for(st.body.body):
            return True
        while kind is cst.If:
            if _has_for(st.body.body):
                return True
            st = st.orelse
            kind = st.__class__
            if kind is cst.Else and _has_for(st.body.body):
                return True
    return False


def _inline_block(stmts: list[Any], counts: dict[str, int], spans: dict[int, Any]) -> list[Any]:
    out: list[Any] = []
    views: dict[str, tuple[int, cst.BaseExpression]] = {}
    dropped: set[int] = set()
    for st in stmts:
        old = st
        kind = st.__class__  # (libcst's statement classes are final: no isinstance call, an ABC's check, each)
        if kind is cst.If:
            st = _with_bodies(st, _inline_block(list(st.body.body), counts, spans),
                              _inline_orelse(st.orelse, counts, spans))
        elif kind is cst.For or kind is cst.While:
            st = _with_bodies(st, _inline_block(list(st.body.body), counts, spans))
        if kind is cst.SimpleStatementLine and len(st.body) == 1 and isinstance(st.body[0], cst.Assign) \
                and len(st.body[0].targets) == 1 and isinstance(st.body[0].targets[0].target, cst.Name):
            value = st.body[0].value
            is_view = isinstance(value, cst.Call) and (
                call_name(value) in _VIEW_CALLS or isinstance(value.func, cst.Attribute) and not value.args
                and value.func.attr.value in ("items", "values") or
                # `sorted(items)` of `items = d.items()`: the pairs in key order (as `sorted(d.items())`)
                call_name(value) == "sorted" and len(value.args) == 1 and isinstance(value.args[0].value, cst.Name)
                and value.args[0].value.value in views and _items_call(views[value.args[0].value.value][1]))
            if is_view:
                views[st.body[0].targets[0].target.value] = (len(out), value)
        if kind is cst.For:
            it = st.iter
            while True:
                used = [n for n in names_in(it) if n in views and counts.get(n) == 2]
                if not used:
                    break
                for n in used:
                    dropped.add(views[n][0])
                it = it.visit(RenameNames({n: views.pop(n)[1] for n in used}))  # type: ignore[assignment]
            if it is not st.iter:
                st = st.with_changes(iter=it)
        if st is not old and id(old) in spans:
            spans[id(st)] = spans[id(old)]
        out.append(st)
    return [st for k, st in enumerate(out) if k not in dropped]


def _inline_orelse(orelse: Any, counts: dict[str, int], spans: dict[int, Any]) -> Any:
    if isinstance(orelse, cst.If):
        new = _with_bodies(orelse, _inline_block(list(orelse.body.body), counts, spans),
                           _inline_orelse(orelse.orelse, counts, spans))
        if new is not orelse and id(orelse) in spans:
            spans[id(new)] = spans[id(orelse)]
        return new
    if orelse is not None:
        return _with_bodies(orelse, _inline_block(list(orelse.body.body), counts, spans))
    return None


_KEEP = object()


def _with_bodies(st: Any, body: list[Any], orelse: Any = _KEEP) -> Any:
    """``st`` with a new body (and ``orelse``), or ``st`` itself when nothing changed (statements
    keep their identity: source positions are looked up by it)."""
    same = len(body) == len(st.body.body) and all(a is b for a, b in zip(body, st.body.body))
    if same and (orelse is _KEEP or orelse is st.orelse):
        return st
    changes: dict[str, Any] = {"body": st.body.with_changes(body=body)}
    if orelse is not _KEEP:
        changes["orelse"] = orelse
    return st.with_changes(**changes)


def hoist_loop_sequences(body: Sequence[Any], active: set[str], names: Names,
                         spans: dict[int, Any] | None = None) -> list[Any]:
    """Name the sequences of active loops: ``for p in params[:-1]:`` ->
    ``loop_items = params[:-1]`` + ``for p in loop_items:``, so the cotangent the loop gives
    ``loop_items`` flows back through an ordinary statement. (``spans``: the user's positions of
    statements, for errors.)"""
    out: list[Any] = []
    for st in body:
        where = (spans or {}).get(id(st))
        kind = st.__class__  # (libcst's statement classes are final: no isinstance call, an ABC's check, each)
        if kind is cst.If:
            st = _hoist_if(st, active, names, spans)
        elif kind is cst.For or kind is cst.While:
            st = _with_bodies(st, hoist_loop_sequences(st.body.body, active, names, spans))
        if kind is cst.For:
            mapping: dict[cst.BaseExpression, cst.Name] = {}
            try:
                srcs = active_loop(st, active)
            except DifferentiationError as e:
                raise e.with_span(where) from None
            for src in srcs:
                if not isinstance(src.seq, cst.Name) and src.seq not in mapping:
                    name = cst.Name(names.fresh("loop_items"))
                    mapping[src.seq] = name
                    out.append(cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(target=name)],
                                                                       value=src.seq)]))
            if mapping:
                st = st.with_changes(iter=st.iter.visit(_Replace(mapping)))
        out.append(st)
    return out


def _hoist_if(st: cst.If, active: set[str], names: Names, spans: dict[int, Any] | None) -> cst.If:
    orelse = st.orelse
    if isinstance(orelse, cst.If):
        orelse = _hoist_if(orelse, active, names, spans)
    elif orelse is not None:
        orelse = _with_bodies(orelse, hoist_loop_sequences(orelse.body.body, active, names, spans))
    return _with_bodies(st, hoist_loop_sequences(st.body.body, active, names, spans), orelse)  # type: ignore[no-any-return]


class _Replace(cst.CSTTransformer):
    """Replace given nodes (by identity) with names."""

    def __init__(self, mapping: dict[cst.BaseExpression, cst.Name]) -> None:
        self.mapping = {id(k): v for k, v in mapping.items()}

    def on_leave(self, original: Any, updated: Any) -> Any:
        rep = self.mapping.get(id(original))
        return rep if rep is not None else updated


def loop_key(src: LoopSource, index: str) -> str:
    """The expression of ``src``'s element key in the adjoint loop (``index``: its position)."""
    return src.key.replace(INDEX, index)


def tuple_target_code(t: cst.BaseExpression, leaf: Any) -> str:
    """``t`` (a name or a nested tuple target) with each name replaced by ``leaf(name)``."""
    if isinstance(t, (cst.Tuple, cst.List)):
        parts = [tuple_target_code(e.value, leaf) for e in t.elements]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    assert isinstance(t, cst.Name)
    return str(leaf(t.value))


def array_result(op: Op, program: Program) -> bool:
    """Whether ``op``'s result is one array whose rows a tuple target unpacks: a primitive's that says so, or a
    helper's whose body ends ``r = <such a primitive>; return r`` (``a, b, c = helper(x)`` of
    ``return np.moveaxis(x, 1, 0)``; vmap's ``r0, r1, r2 = batch_rows(x)``): the targets' cotangents are then
    stacked for its adjoint, as for the primitive itself."""
    if op.prim is not None:
        return op.prim.result_kind(op.args) == "array"
    nf = program.functions.get(op.callee) if op.kind == "call" and op.callee is not None else None
    if nf is None or len(body := list(nf.plain_fdef.body.body)) < 2:
        return False
    ret, last = body[-1], body[-2]
    if not (isinstance(ret, cst.SimpleStatementLine) and isinstance(ret.body[0], cst.Return) and
            isinstance(ret.body[0].value, cst.Name) and isinstance(last, cst.SimpleStatementLine) and
            isinstance(last.body[0], cst.Assign) and len(last.body[0].targets) == 1 and
            code(last.body[0].targets[0].target) == ret.body[0].value.value):
        return False
    inner = classify(last.body[0].value, program, nf)
    return inner.prim is not None and inner.prim.result_kind(inner.args) == "array"


def stacked_target_code(t: cst.BaseExpression, leaf: Any) -> str:
    """The array whose rows a (nested) tuple target ``t`` unpacks, from each name's ``leaf(name)``:
    ``np.stack((leaf(a), leaf(b)))`` for ``a, b``."""
    if isinstance(t, (cst.Tuple, cst.List)):
        return "np.stack((" + ", ".join(stacked_target_code(e.value, leaf) for e in t.elements) + ",))"
    assert isinstance(t, cst.Name)
    return str(leaf(t.value))


def _param_code(p: cst.Param) -> str:
    return p.name.value + (f"={code(p.default)}" if p.default is not None else "")


def signature(nf: NormalizedFunction, then: Sequence[str] | None = None) -> str:
    """``nf``'s parameters as written, with their defaults (``params, x, y=None, *, scale=2.0``);
    with ``then`` (tangents, a cotangent): the positional names, ``then``, and the keyword-only
    parameters with their defaults (``x, y, x_dot, *, scale=2.0``)."""
    ps = nf.plain_fdef.params
    pos = [_param_code(p) for p in ps.params] if then is None else [p.name.value for p in ps.params] + list(then)
    kw = [_param_code(p) for p in ps.kwonly_params]
    return ", ".join(pos + (["*", *kw] if kw else []))


def all_params(nf: NormalizedFunction) -> list[str]:
    """Every parameter name, positional then keyword-only (all bound on entry)."""
    ps = nf.plain_fdef.params
    return [p.name.value for p in [*ps.params, *ps.kwonly_params]]


def function_names(fdef: cst.FunctionDef) -> frozenset[str]:
    """``set(names_in(fdef))``, remembered per tree while a front-end run lasts (trees never change): reverse mode
    asks for a function's names three times (the loop returns' flags, fresh names before and after its passes),
    forward mode again."""
    hit = _FUNCTION_NAMES.get(id(fdef))
    if hit is None or hit[0] is not fdef:
        if len(_FUNCTION_NAMES) >= _FUNCTION_NAMES_MAX:  # (a run outside a pause: never emptied by on_resume)
            _FUNCTION_NAMES.clear()
        hit = _FUNCTION_NAMES[id(fdef)] = (fdef, frozenset(names_in(fdef)))  # (the tree kept: its id is its own)
    return hit[1]


_FUNCTION_NAMES: dict[int, tuple[cst.FunctionDef, frozenset[str]]] = {}
_FUNCTION_NAMES_MAX = 64
gc_pause.on_resume(_FUNCTION_NAMES.clear)


def derivative_names(program: Program, nf: NormalizedFunction, body: Sequence[Any]) -> Names:
    """Fresh names for a derivative of ``nf``: none that the function, the passes that rewrote its ``body``
    (a lax scan's loop index ``i``, its leaves), the program's functions or the adjoint's imports use."""
    fdef = nf.plain_fdef
    own = {id(st) for st in fdef.body.body}  # (a statement the passes kept as it was: its names are fdef's)
    rewritten = [st for st in body if id(st) not in own]
    return Names({*function_names(fdef), *(names_in(cst.Module(body=rewritten)) if rewritten else ()),
                  *program.functions, *ADJOINT_IMPORTS})


def differentiable_params(nf: NormalizedFunction) -> list[str]:
    """The parameters a derivative of ``nf`` may differentiate: all of them but a library helper's
    index parameters (:func:`srcjax.core.index_params`)."""
    index = getattr(nf.fn, "__srcjax_index_params__", ())
    return [p for p in all_params(nf) if p not in index]


def dedent_block(text: str) -> str:
    return textwrap.dedent(text) + "\n"


def lines_read(lines: list[str]) -> set[str]:
    """Names read (not just assigned) by these statements (indented lines of generated source)."""
    if not lines:
        return set()
    return names_read(dedent_block("\n".join(lines)))


def lines_read_of(lines: list[str], names: set[str]) -> set[str]:
    """Those of ``names`` that these statements read: :func:`lines_read`, the lines parsed only where their text
    holds one of ``names`` (a name they read is in their text; reverse mode's straight-line code saves none)."""
    if not names:
        return set()
    text = "\n".join(lines)
    return lines_read(lines) & names if any(n in text for n in names) else set()


def _lines_tree(lines: list[str]) -> ast.Module:
    """The ``ast`` of these statements (indented lines of generated source), shared: read-only."""
    return parsed.parse(dedent_block("\n".join(lines)))


def lines_rebound(lines: list[str]) -> set[str]:
    """Names these statements bind by ``=`` or as a ``for`` target, in ``if``/``for``/``while`` bodies
    too (not in ``for``/``while`` ``else`` blocks, ``with``, ``try`` or nested functions). The lines are
    text the writer just wrote: read with ``ast`` (about ten times cheaper than libcst)."""
    out: set[str] = set()

    def go(stmts: list[ast.stmt]) -> None:
        for s in stmts:
            if isinstance(s, ast.Assign):
                out.update(n for t in s.targets for n in target_names(t))
            elif isinstance(s, ast.If):
                go(s.body)
                go(s.orelse)  # (an ``elif`` is an ``If`` there)
            elif isinstance(s, (ast.For, ast.While)):
                if isinstance(s, ast.For):
                    out.update(target_names(s.target))
                go(s.body)

    if lines:
        go(_lines_tree(lines).body)
    return out


def lines_free_of_loop_targets(lines: list[str]) -> set[str]:
    """Names in these statements (indented lines of generated source: parameters, ``True``/``False``/
    ``None`` and ``def`` names included, attribute names and call keywords not) except where a ``for``
    around them binds them (an adjoint loop rebinds the primal loop's target: ``for i, p in
    reversed(...)``), so they need not be saved. (A ``for``'s target and ``else`` block are not read.)"""
    out: set[str] = set()
    bound: list[set[str]] = []

    def add(name: str) -> None:
        if not any(name in b for b in bound):
            out.add(name)

    def walk(node: ast.AST) -> None:
        t = type(node)
        if t is ast.Name:
            add(node.id)  # type: ignore[attr-defined]
        elif t is ast.Constant:
            if node.value is None or isinstance(node.value, bool):  # type: ignore[attr-defined]
                add(repr(node.value))  # type: ignore[attr-defined]  # (names to libcst)
        elif t is ast.arg:
            add(node.arg)  # type: ignore[attr-defined]
        elif t is ast.For:
            walk(node.iter)  # type: ignore[attr-defined]
            bound.append(set(target_names(node.target)))  # type: ignore[attr-defined]
            for s in node.body:  # type: ignore[attr-defined]
                walk(s)
            bound.pop()
            return
        elif t is ast.FunctionDef or t is ast.ClassDef:
            add(node.name)  # type: ignore[attr-defined]
        elif t is ast.Global or t is ast.Nonlocal:
            for n in node.names:  # type: ignore[attr-defined]
                add(n)
        for child in ast.iter_child_nodes(node):
            walk(child)

    if lines:
        walk(_lines_tree(lines))
    return out
