"""Automatic differentiation as source transformation of ANF programs.

Input: a normalized (ANF) function from :class:`~srcjax.frontend.program.Program`
and the names of the parameters to differentiate. Output: **Python source**
of new functions, which srcjax then reads like user code (so derivatives of
derivatives, ``srcjax.source``, NumPy execution and compilation all just work).

Forward mode (:func:`jvp_source`) interleaves a tangent statement after every
active statement: ``t_dot = <template>``. The template reads the statement's
operands as they were when it ran, and its result (``out``); between the two lines
only the statement's targets change. So a statement that rebinds a name it reads
(``y = e * y``, ``x = np.tanh(x)``, ``a, b = b, a``) first binds its result to a
fresh name: ``mul = e * y``, ``mul_dot = ...``, then ``y = mul``, ``y_dot = mul_dot``
(:meth:`JVP.rebinding`). Copies read only tangents, and helper and custom_jvp
calls bind the value and its tangent in one statement, so they need none.

Reverse mode (:func:`vjp_source`) writes the primal sweep, then the adjoint
sweep in reverse statement order, accumulating ``v_bar`` cotangents. Values
the adjoint needs but that the primal overwrites (variables assigned in loops
or more than once) are saved on a tape (``_tape.append(v)`` before the
assignment) and restored in the adjoint (``v = _tape.pop()``), which makes
static ``if``/``for``/``while`` and helper calls uniform; a loop's adjoint runs
over ``reversed(<the saved iterable>)``. Tapes are plain Python lists: under
NumPy they are lists of arrays, under specialization lists of SSA values.

Invariants: the output is valid for every shape the primal accepts (shape
work is done by :mod:`srcjax.adjoint` helpers); only names of the primal
are read by the adjoint at points where they hold their primal values. The
adjoint of a statement reads its operands as they were before it and its results
as they are after it: when the statement rebinds an operand (``y = e * y``), what
the rule needs of the results (``out``, zero cotangents of results without one,
custom_vjp residuals) is kept in fresh names, then the old values come back (from
the tape, or from names an ``if`` on data saved them in), then the rule runs.
"""

from __future__ import annotations

import inspect
import keyword
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from ..core import ShapeError, TranspileError, UnsupportedSyntaxError
from ..frontend.names import (
    Names,
    RenameNames,
    Visitor,
    assigned_names,
    boolean_valued,
    code,
    names_in,
    names_read,
    renamed,
    syntax_fields,
    target_names,
)
from ..frontend.normalize import BINOP_HINT, UNARY_HINT, NormalizedFunction, _call_hint, _literal_code
from ..frontend.program import Program
from ..frontend.restructure import single_exit as _single_exit
from ..frontend.restructure import walk as _walk
from ..primitives import registry
from ..primitives.elementwise import OPERATOR_PRIMS
from . import custom_rules, rules
from .bounded import bound_loops
from .inline_lax import Inliner, inline_lax

ADJOINT_IMPORTS = ("unbroadcast", "index_update", "broadcast_like", "zeros_like", "ones_like", "expand_reduced",
                   "reduced_size", "cumsum_bar",
                   "matmul_lhs_bar", "matmul_rhs_bar", "index_add", "max_bar", "var_bar", "std_bar", "norm_bar",
                   "norm_axes", "inverse_perm", "max_share", "abs_share", "clip_share", "prod_others", "ravel_bar",
                   "tensordot_axes", "tensordot_lhs_bar", "tensordot_rhs_bar", "dot_lhs_bar", "dot_rhs_bar",
                   "inner_lhs_bar", "inner_rhs_bar", "einsum_terms", "einsum_term_bar", "einsum_bars", "einsum_jvp",
                   "axis_slice", "tile_bar", "repeat_bar", "atleast_dots", "atleast_bars", "join_bars", "seq_piece",
                   "seq_pieces", "split_bounds", "split_bar", "UNSET", "tree_add", "pack_like", "is_tree",
                   "logaddexp_weight", "sinc_slope", "cumprod_terms", "cumprod_jvp", "cumprod_bar", "diff_bar",
                   "trace_bar", "diag_bar", "negated", "take_bar", "take_along_axis_bar", "is_float")


class DifferentiationError(TranspileError):
    """A construct srcjax cannot differentiate (yet)."""


class ComprehensionError(DifferentiationError):
    """A comprehension, generator expression or builtin ``sum`` over differentiated values: written as
    a loop (``items.append(y)``, ``total = total + y``), it can be."""


def _paths() -> dict[str, registry.Primitive]:
    return {p.path: p for p in registry.PRIMITIVES.values()}


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


def _literal_container(arg: Any) -> cst.Tuple | cst.List | None:
    """An array argument written as a tuple or list literal (``index_add(z, k, (a_bar, b_bar))``)."""
    if not isinstance(arg, str) or not arg.startswith(("(", "[")):
        return None
    node = cst.parse_expression(arg)
    return node if isinstance(node, (cst.Tuple, cst.List)) else None


def classify(node: cst.BaseExpression, program: Program, nf: NormalizedFunction) -> Op:
    paths = _paths()
    reads = [n for n in names_in(node)]
    if isinstance(node, cst.Name):
        return Op("copy", operands={"x": node.value}, reads=reads)
    if isinstance(node, (cst.Tuple, cst.List)):
        return Op("pack", elements=[code(e.value) for e in node.elements], reads=reads)
    container = classify_container(node, program)
    if container is not None:
        return container
    if isinstance(node, cst.BinaryOperation):
        prim = registry.PRIMITIVES[OPERATOR_PRIMS[type(node.operator).__name__]]
        args = {"x1": code(node.left), "x2": code(node.right)}
        return _prim_op(prim, args, reads)
    if isinstance(node, cst.UnaryOperation) and not isinstance(node.operator, cst.Not):
        if isinstance(node.expression, (cst.Integer, cst.Float)):
            return Op("static", reads=reads)
        prim = registry.PRIMITIVES[OPERATOR_PRIMS[type(node.operator).__name__]]
        return _prim_op(prim, {"x": code(node.expression)}, reads)
    if isinstance(node, cst.Comparison):
        return Op("static", reads=reads)  # comparisons have zero derivatives
    if isinstance(node, cst.Subscript):
        return _prim_op(registry.PRIMITIVES["getitem"], {"x": code(node.value), "key": _subscript_key(node)}, reads)
    if isinstance(node, cst.Attribute):
        if node.attr.value == "T":
            return _prim_op(registry.PRIMITIVES["transpose"], {"a": code(node.value), "axes": "None"}, reads)
        return Op("static", reads=reads)
    if isinstance(node, cst.Call):
        fcode = code(node.func)
        if fcode.endswith(".pop") and not node.args and isinstance(node.func, cst.Attribute):
            return Op("tape_pop", callee=code(node.func.value), reads=reads)
        cprim = paths.get(fcode)
        if cprim is None and fcode == "np.astype":
            cprim = registry.PRIMITIVES["astype"]
        if cprim is not None:
            pos = [code(a.value) for a in node.args if a.keyword is None]
            kws = {a.keyword.value: code(a.value) for a in node.args if a.keyword is not None}
            try:
                bound = cprim.signature.bind(*pos, **kws)
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
        if isinstance(node.func, cst.Name) and node.func.value in program.functions:
            if custom_rules.custom_callee(program, node.func.value) is not None:
                return custom_rules.classify_call(program, node, Op)
            pos, kws = _every_argument(program.functions[node.func.value],
                                       [code(a.value) for a in node.args if a.keyword is None],
                                       {a.keyword.value: code(a.value) for a in node.args if a.keyword is not None})
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
            value = _literal_code(p.default)
            if value is None:
                raise DifferentiationError(
                    f"cannot differentiate the call to {nf.name}: it leaves {name!r} to its default, which is not "
                    "a literal value", hint=f"pass {name}=... explicitly in the call")
        if p.kind is inspect.Parameter.KEYWORD_ONLY:
            kw[name] = value
        else:
            out.append(value)
    return out, kw


def call_arguments(op: Op, then: Sequence[str]) -> list[str]:
    """A helper's derivative called: the positional arguments, ``then`` (tangents, the tape), and
    the keyword-only arguments by keyword (as ``signature(callee, then)`` takes them)."""
    return [*op.call_args, *then, *(f"{k}={v}" for k, v in op.call_kwargs.items())]


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


def classify_container(node: cst.BaseExpression, program: Program) -> Op | None:
    """Dict literals, attribute reads (NamedTuple fields) and calls of the container helpers."""
    reads = list(names_in(node))
    if isinstance(node, cst.Dict):
        elements = [e for e in node.elements if isinstance(e, cst.DictElement)]
        if len(elements) != len(node.elements):
            return Op("static", reads=reads)  # {**d}: not differentiated (see Activity.check)
        return Op("dict", elements=[code(e.value) for e in elements], keys=[code(e.key) for e in elements],
                  reads=reads)
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.attr.value not in _STATIC_ATTRS:
        return Op("getattr", operands={"x": node.value.value}, args={"attr": node.attr.value}, reads=reads)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in program.functions:
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


_ITERATOR_CALLS = {"enumerate", "zip", "map", "filter"}


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
    other iterables whose items carry no derivative)."""
    return _sources(s.iter, s.target)


def _sources(it: cst.BaseExpression, target: cst.BaseExpression) -> list[LoopSource]:
    it = _strip_calls(it, ("list", "tuple"))
    parts = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else None
    name = _call_name(it)
    if isinstance(it, cst.Call) and name is not None:
        args = [a.value for a in it.args]
        if len(args) != 1 and name != "zip" or any(a.keyword is not None or a.star for a in it.args):
            return []
        if name == "reversed":
            inner = _strip_calls(args[0], ("list", "tuple"))
            if _call_name(inner) == "zip":
                return []  # (positions from the end of a zip of unequal lengths: not followed)
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
    if isinstance(it, cst.Call):
        return []
    return [LoopSource(target, it, INDEX)]


def _strip_calls(node: cst.BaseExpression, names: tuple[str, ...]) -> cst.BaseExpression:
    """``list(tuple(x))`` -> ``x`` for ``names=("list", "tuple")``."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in names \
            and len(node.args) == 1:
        node = node.args[0].value
    return node


def _call_name(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
        return node.func.value
    return None


def active_loop(s: cst.For, active: set[str]) -> list[LoopSource]:
    """The sources of a loop whose target receives derivatives (a sequence that is active)."""
    srcs = loop_sources(s)
    if any(n in active for src in srcs for n in names_in(src.seq)):
        return srcs
    it = _strip_calls(s.iter, ("list", "tuple", "reversed"))
    iterator = _call_name(it) in _ITERATOR_CALLS or (
        isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and it.func.attr.value in ("items", "values"))
    if iterator and any(n in active for n in names_in(s.iter)):
        raise DifferentiationError(
            f"cannot differentiate a loop over `{code(s.iter)}` yet",
            hint="loop over a list, tuple, dict or array (`for p in params`, `for i, p in enumerate(params)`, "
                 "`for a, b in zip(xs, ys)`, `for k, v in d.items()`)")
    return []


_VIEW_CALLS = {"enumerate", "zip", "list", "tuple", "reversed"}


def inline_loop_iterables(body: Sequence[Any]) -> list[Any]:
    """Put a loop's iterable back together where A-normal form split it (derivative code read
    again, e.g. for hessian): ``list_1 = list(enumerate_1)`` + ``for i, p in reversed(list_1):``
    -> ``for i, p in reversed(list(enumerate(params))):``, for names used only there."""
    counts: dict[str, int] = {}
    for st in body:
        for n in names_in(st):
            counts[n] = counts.get(n, 0) + 1
    return _inline_block(list(body), counts)


def _inline_block(stmts: list[Any], counts: dict[str, int]) -> list[Any]:
    out: list[Any] = []
    views: dict[str, tuple[int, cst.BaseExpression]] = {}
    dropped: set[int] = set()
    for st in stmts:
        if isinstance(st, cst.If):
            st = _with_bodies(st, _inline_block(list(st.body.body), counts), _inline_orelse(st.orelse, counts))
        elif isinstance(st, (cst.For, cst.While)):
            st = _with_bodies(st, _inline_block(list(st.body.body), counts))
        if isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 and isinstance(st.body[0], cst.Assign) \
                and len(st.body[0].targets) == 1 and isinstance(st.body[0].targets[0].target, cst.Name):
            value = st.body[0].value
            is_view = isinstance(value, cst.Call) and (
                _call_name(value) in _VIEW_CALLS or isinstance(value.func, cst.Attribute) and not value.args
                and value.func.attr.value in ("items", "values"))
            if is_view:
                views[st.body[0].targets[0].target.value] = (len(out), value)
        if isinstance(st, cst.For):
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
        out.append(st)
    return [st for k, st in enumerate(out) if k not in dropped]


def _inline_orelse(orelse: Any, counts: dict[str, int]) -> Any:
    if isinstance(orelse, cst.If):
        return _with_bodies(orelse, _inline_block(list(orelse.body.body), counts),
                            _inline_orelse(orelse.orelse, counts))
    if orelse is not None:
        return _with_bodies(orelse, _inline_block(list(orelse.body.body), counts))
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
        if isinstance(st, cst.If):
            st = _hoist_if(st, active, names, spans)
        elif isinstance(st, (cst.For, cst.While)):
            st = _with_bodies(st, hoist_loop_sequences(st.body.body, active, names, spans))
        if isinstance(st, cst.For):
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


def _tuple_target_code(t: cst.BaseExpression, leaf: Any) -> str:
    """``t`` (a name or a nested tuple target) with each name replaced by ``leaf(name)``."""
    if isinstance(t, (cst.Tuple, cst.List)):
        parts = [_tuple_target_code(e.value, leaf) for e in t.elements]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    assert isinstance(t, cst.Name)
    return str(leaf(t.value))


# primitives with several results (a tuple): their targets are not plain arrays
_MULTI_RESULT = {"split", "array_split", "atleast_1d", "atleast_2d", "atleast_3d"}


def array_names(body: Sequence[Any], act: Activity) -> set[str]:
    """Names that certainly hold arrays (or numbers), never containers: results of array
    primitives and their operands. The cotangents of other names are added with tree_add."""
    out: set[str] = set()
    for st, _ in _walk(body):
        if isinstance(st, cst.Assign):
            op = act.op(st.value)
            if op.kind != "prim" or op.prim is None or op.prim.name == "getitem":
                continue
            out.update(a for p, a in op.operands.items() if p in op.prim.arrays)
            if op.prim.name not in _MULTI_RESULT and isinstance(st.targets[0].target, cst.Name):
                out.add(st.targets[0].target.value)
    return out


# -- templates --------------------------------------------------------------------------------

def _fold(node: cst.CSTNode) -> cst.CSTNode:
    """Fold literal arithmetic (``2 - 1``) and ``a ** 1`` in instantiated templates (bottom up), and
    drop ``dtype=None`` (NumPy's default everywhere: a template passes its primitive's ``dtype``)."""
    t = type(node)
    if t is cst.Name or t is cst.Integer or t is cst.Float or t is cst.SimpleString:
        return node
    changes: dict[str, Any] = {}
    for f in syntax_fields(t):
        v = getattr(node, f)
        if isinstance(v, cst.CSTNode):
            nv = _fold(v)
            if nv is not v:
                changes[f] = nv
        elif v.__class__ is tuple or v.__class__ is list:
            items = [_fold(c) if isinstance(c, cst.CSTNode) else c for c in v]
            if any(a is not b for a, b in zip(items, v)):
                changes[f] = items
    if changes:
        node = node.with_changes(**changes)
    if t is cst.Call:
        assert isinstance(node, cst.Call)
        args = [a for a in node.args if not (a.keyword is not None and a.keyword.value == "dtype" and
                                             isinstance(a.value, cst.Name) and a.value.value == "None")]
        if len(args) != len(node.args):
            node = node.with_changes(args=[a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args])
    if t is cst.BinaryOperation:
        assert isinstance(node, cst.BinaryOperation)
        lv, rv = _num(node.left), _num(node.right)
        op = type(node.operator).__name__
        if lv is not None and rv is not None and op in ("Add", "Subtract", "Multiply"):
            v = {"Add": lv + rv, "Subtract": lv - rv, "Multiply": lv * rv}[op]
            return _expr(repr(v))
        if op == "Power" and rv == 1 and isinstance(rv, int):
            return node.left
    return node


def _num(node: cst.BaseExpression) -> int | float | None:
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.Float):
        return float(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        v = _num(node.expression)
        return -v if v is not None else None
    return None


_TEMPLATE_CACHE: dict[str, cst.BaseExpression] = {}
_EXPR_CACHE: dict[str, cst.BaseExpression] = {}


def _expr(text: str) -> cst.BaseExpression:
    """``cst.parse_expression(text)``, remembered (trees are immutable; only their text is used)."""
    hit = _EXPR_CACHE.get(text)
    if hit is None:
        if len(_EXPR_CACHE) > 20000:
            _EXPR_CACHE.clear()
        hit = _EXPR_CACHE[text] = cst.Name(text) if text.isidentifier() and not keyword.iskeyword(text) \
            else cst.parse_expression(text)
    return hit


def instantiate(template: str, mapping: dict[str, str]) -> str:
    tree = _TEMPLATE_CACHE.get(template)
    if tree is None:
        tree = _TEMPLATE_CACHE[template] = cst.parse_expression(template)
    nodes = {k: _expr(v) if not isinstance(v, cst.BaseExpression) else v for k, v in mapping.items()}
    return code(_fold(renamed(tree, nodes)))


def _paren(s: str) -> str:
    return s if s.isidentifier() or s.replace(".", "").replace("_", "").isalnum() else f"({s})"


# -- analysis ------------------------------------------------------------------------------------

class Activity:
    """Flow-insensitive activity: a name is active if any assignment to it depends
    differentiably on an active input."""

    def __init__(self, program: Program, nf: NormalizedFunction, active_params: Iterable[str],
                 body: Sequence[Any] | None = None) -> None:
        self.program = program
        self.nf = nf
        self.active: set[str] = set(active_params)
        self.ops: dict[int, Op] = {}
        if body is None:  # a helper's summary: its body as the helper's derivative will see it
            body = inline_loop_iterables(inline_lax(nf, list(nf.plain_fdef.body.body)))
        self.sequences = _local_sequences(body)
        self.pushed = _pushed_names(body)
        changed = True
        while changed:
            changed = False
            for s, _ in _walk(body if body is not None else nf.plain_fdef.body.body):
                targets, srcs = self.effect(s)
                if targets and any(n in self.active for n in srcs):
                    new = set(targets) - self.active
                    if new:
                        self.active |= new
                        changed = True

        self.check(body if body is not None else nf.plain_fdef.body.body)

    def check(self, body: Sequence[Any]) -> None:
        """Refuse what would otherwise silently lose derivatives."""
        for st in body:
            nested = _find_nested_def(st)
            if nested is not None:
                raise DifferentiationError(
                    f"cannot differentiate through the nested function `{nested.name.value}` (e.g. a body "
                    "passed to srcjax.lax.cond/fori_loop/while_loop/scan) yet", span=self.nf.spans.get(id(nested)),
                    hint="define a helper at module level (calls of module functions are differentiated), and "
                         "write lax bodies as plain Python if/for/while: srcjax rewrites and differentiates that")
        containers = set()
        for s, _ in _walk(body):
            if isinstance(s, cst.Assign):
                op = self.op(s.value)
                names = [n for t in s.targets for n in target_names(t.target)]
                if op.kind in ("pack", "convert") or (op.kind == "prim" and op.prim is not None and
                                         op.prim.name in ("split", "array_split")) and \
                        isinstance(s.targets[0].target, cst.Name):
                    if isinstance(s.targets[0].target, cst.Name):
                        containers.update(names)
                reads_active = [n for n in _value_reads(s.value) if n in self.active]
                arg_reads = [n for a in s.value.args for n in names_in(a.value) if n in self.active] \
                    if isinstance(s.value, cst.Call) else []
                if op.kind == "static" and arg_reads and isinstance(s.value, cst.Call) and \
                        code(s.value.func) not in _STATIC_RESULT_CALLS and not code(s.value.func).endswith(".pop"):
                    raise (ComprehensionError if code(s.value.func) == "sum" else DifferentiationError)(
                        f"cannot differentiate through `{code(s.value.func)}(...)`: srcjax does not know its "
                        f"derivative (it reads {', '.join(sorted(set(arg_reads)))})", span=self.span_of(s, body),
                        hint="call NumPy functions srcjax supports, srcjax.lax, or your own Python functions")
                if isinstance(s.value, cst.BinaryOperation) and any(
                        isinstance(v, (cst.Tuple, cst.List)) and any(n in self.active for n in names_in(v))
                        for v in (s.value.left, s.value.right)):
                    raise DifferentiationError(
                        f"cannot differentiate through `{code(s.value)}` yet: joining or repeating tuples or lists "
                        f"that hold {', '.join(sorted(set(reads_active)))}",
                        span=self.span_of(s, body),
                        hint="write the whole tuple or list out, e.g. (a, b, x) instead of (a, b) + (x,)")
                if op.kind == "static" and reads_active and _call_name(s.value) in ("max", "min"):
                    name = _call_name(s.value)
                    raise DifferentiationError(
                        f"cannot differentiate the builtin {name}() of differentiated values yet",
                        span=self.span_of(s, body),
                        hint=f"make one array and reduce it: np.{name}(np.stack([...]), axis=0), or "
                             f"np.{'maximum' if name == 'max' else 'minimum'}(a, b) for two values")
                if op.kind == "static" and reads_active and _stores_arrays(s.value) and \
                        not boolean_valued(s.value, lambda e: not any(n in self.active for n in names_in(e))):
                    raise (ComprehensionError if isinstance(s.value, (cst.ListComp, cst.GeneratorExp))
                           else DifferentiationError)(
                        f"cannot differentiate through `{code(s.value)}` yet (it builds a list or value from "
                        f"{', '.join(sorted(set(reads_active)))} that derivatives cannot follow)",
                        span=self.span_of(s, body),
                        hint="write the elements out (np.stack([a, b])), build the list with `out.append(y)` in a "
                             "for loop, or use array operations")
        for s, _ in _walk(body):
            if isinstance(s, cst.Assign):
                op = self.op(s.value)
                if op.kind == "prim" and op.prim is not None:
                    for _p, a in op.operands.items():
                        if a in containers and a in self.active and _p not in op.prim.array_seqs and \
                                "tree" not in op.prim.extra and op.prim.name != "getitem":
                            raise DifferentiationError(
                                f"cannot differentiate through the list `{a}` passed to {op.prim.path} "  # type: ignore[union-attr]
                                "as an array (NumPy makes one array of it, which derivatives do not follow)",
                                span=self.span_of(s, body),
                                hint=f"make the array explicit: {op.prim.path}(np.stack({a}), ...); or index the "
                                     f"list ({a}[0]), or unpack it (a, b = {a})")

    def span_of(self, small: cst.CSTNode, body: Sequence[Any]) -> Any:
        """The user's source position of a small statement of ``body`` (None if it was written by srcjax)."""
        def lines(ss: Sequence[Any]) -> Iterable[Any]:
            for st in ss:
                if isinstance(st, cst.SimpleStatementLine):
                    yield st
                elif isinstance(st, (cst.If, cst.For, cst.While)):
                    yield from lines(st.body.body)
                    orelse = st.orelse
                    while orelse is not None:
                        yield from lines(orelse.body.body)
                        orelse = orelse.orelse if isinstance(orelse, cst.If) else None

        for line in lines(body):
            if any(b is small for b in line.body):
                return self.nf.spans.get(id(line))
        return None

    def op(self, value: cst.BaseExpression) -> Op:
        k = id(value)
        op = self.ops.get(k)
        if op is None:
            op = classify(value, self.program, self.nf)
            if op.kind == "static" and isinstance(value, cst.Call) and _call_name(value) in ("tuple", "list") and \
                    len(value.args) == 1 and value.args[0].keyword is None and \
                    isinstance(value.args[0].value, cst.Name) and value.args[0].value.value in self.sequences:
                # tuple(items) of a list built here: the same items (cotangents packed like the list)
                op = Op("convert", operands={"x": value.args[0].value.value}, args={"kind": _call_name(value)},
                        reads=op.reads)
            self.ops[k] = op
        return op

    def call_output_active(self, op: Op) -> bool:
        """Whether a helper's result depends on its active arguments (``range(np.ndim(x))`` does not)."""
        callee = self.program.functions.get(op.callee or "")
        if callee is None:
            return True
        params = all_params(callee)
        bound = dict(zip(params, op.call_args))
        bound.update(op.call_kwargs)
        pattern = tuple(p for p in params if p in bound and any(n in self.active for n in names_in(
            _expr(bound[p]))))
        if not pattern:
            return False
        key = (id(callee), pattern)
        hit = _CALL_ACTIVITY.get(key)
        if hit is None:
            _CALL_ACTIVITY[key] = True  # recursion: assume active
            sub = Activity(self.program, callee, pattern)
            hit = _CALL_ACTIVITY[key] = bool(_returned_names(callee) & sub.active)
        return hit

    def appended_arguments(self, op: Op) -> list[str]:
        """The names passed to a helper's parameters that it (or a helper it calls) appends to (``_tape``)."""
        callee = self.program.functions.get(op.callee or "")
        if callee is None:
            return []
        params = all_params(callee)
        bound = dict(zip(params, op.call_args))
        bound.update(op.call_kwargs)
        return [bound[p] for p in _mutated_params(self.program, callee) if p in bound and bound[p].isidentifier()]

    def effect(self, s: cst.CSTNode) -> tuple[list[str], list[str]]:
        """(names written, names whose activity flows into them)."""
        if isinstance(s, cst.Assign):
            targets = [n for t in s.targets for n in target_names(t.target)]
            op = self.op(s.value)
            if op.kind == "prim":
                assert op.prim is not None
                if op.prim.name in rules.NONDIFF:
                    return targets, []
                if op.prim.name == "astype" and _is_int_dtype(op.args.get("dtype", "")):
                    return targets, []
                return targets, list(op.operands.values()) + [
                    x for p in op.prim.array_seqs for x in _seq_names(op.args.get(p))] + [
                    x for p in op.prim.arrays if p not in op.operands  # index_add(z, i, (w_bar, b_bar))
                    for x in _seq_names(op.args.get(p))]
            if op.kind == "call" and not self.call_output_active(op):
                appended = self.appended_arguments(op)  # a tape the helper appends to holds what it reads
                return appended, list(op.reads) if appended else []
            if op.kind == "call":  # a list the helper appends to (a forward half's tape) changes too
                targets = targets + self.appended_arguments(op)
            if op.kind in ("copy", "pack", "call", "tape_pop", "custom", "dict", "getattr", "tree_add", "pack_like",
                           "convert"):
                src = list(op.reads)
                if op.kind == "tape_pop" and op.callee:
                    if set(targets) <= self.pushed.get(op.callee, set()):
                        # `y = _tape.pop()` undoing this function's `_tape.append(y)` (derivative code): each
                        # name gets its own value back, so keeps its own activity (a saved `range` stays inactive)
                        return [], []
                    src.append(op.callee)
                return targets, src
            return targets, []
        if isinstance(s, cst.Expr) and isinstance(s.value, cst.Call) and isinstance(s.value.func, cst.Attribute) \
                and s.value.func.attr.value == "append":
            return [code(s.value.func.value)], [n for a in s.value.args for n in names_in(a.value)]
        if isinstance(s, cst.For):
            srcs = loop_sources(s)  # a loop over a container or array: its items carry derivatives
            if srcs:
                return [n for src in srcs for n in target_names(src.target)], [n for src in srcs
                                                                               for n in names_in(src.seq)]
            return target_names(s.target), []
        return [], []


def _pushed_names(body: Sequence[Any]) -> dict[str, set[str]]:
    """Per list, the names ``body`` appends to it, alone or in a tuple (``_tape.append((a, b,))``)."""
    out: dict[str, set[str]] = {}
    for s, _ in _walk(body):
        if isinstance(s, cst.Expr) and isinstance(s.value, cst.Call) and isinstance(s.value.func, cst.Attribute) \
                and s.value.func.attr.value == "append" and len(s.value.args) == 1:
            v = s.value.args[0].value
            items = [e.value for e in v.elements] if isinstance(v, cst.Tuple) else [v]
            out.setdefault(code(s.value.func.value), set()).update(
                e.value for e in items if isinstance(e, cst.Name))
    return out


_CALL_ACTIVITY: dict[tuple[int, tuple[str, ...]], bool] = {}
_MUTATED: dict[int, tuple[NormalizedFunction, set[str]]] = {}


def _mutated_params(program: Program, nf: NormalizedFunction) -> set[str]:
    """Parameters of ``nf`` that it (or a helper it passes them to) appends to."""
    hit = _MUTATED.get(id(nf))
    if hit is not None and hit[0] is nf:
        return hit[1]
    _MUTATED[id(nf)] = (nf, set())  # recursion: nothing yet
    params = {p.name.value for p in nf.plain_fdef.params.params}
    out: set[str] = set()
    for st, _ in _walk(nf.plain_fdef.body.body):
        call = st.value if isinstance(st, (cst.Expr, cst.Assign)) else None
        if not isinstance(call, cst.Call):
            continue
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "append" and \
                isinstance(call.func.value, cst.Name) and call.func.value.value in params:
            out.add(call.func.value.value)
        elif isinstance(call.func, cst.Name) and call.func.value in program.functions:
            callee = program.functions[call.func.value]
            cparams = [p.name.value for p in callee.plain_fdef.params.params]
            bound = {cparams[i]: code(a.value) for i, a in enumerate(call.args) if a.keyword is None
                     and i < len(cparams)}
            bound.update({a.keyword.value: code(a.value) for a in call.args if a.keyword is not None})
            out |= {bound[p] for p in _mutated_params(program, callee) if bound.get(p) in params}
    _MUTATED[id(nf)] = (nf, out)
    return out


def _returned_names(nf: NormalizedFunction) -> set[str]:
    out: set[str] = set()
    for s, _ in _walk(nf.plain_fdef.body.body):
        if isinstance(s, cst.Return) and s.value is not None:
            out |= set(names_in(s.value))
    return out


def _value_reads(node: cst.BaseExpression) -> list[str]:
    """Names whose *values* an expression reads: not those only passed to non-primitive calls
    (``np.shape(a)``, ``reduce_axes(a, axis)``) or read for ``.shape``/``.ndim``/``.dtype``."""
    paths = _paths()
    out: list[str] = []

    class V(Visitor):
        def visit_Name(self, n: cst.Name) -> None:
            out.append(n.value)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            if n.attr.value not in ("shape", "ndim", "dtype", "size"):
                self.walk(n.value)
            return False

        def visit_Call(self, n: cst.Call) -> bool:
            f = code(n.func)
            if f in paths or f == "np.astype":
                return True
            return False

    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):  # container builtins: their args
        for a in node.args:
            out.extend(_value_reads(a.value))
        return out
    if isinstance(node, (cst.ListComp, cst.GeneratorExp)):
        # an iterable's values matter only if the loop variables' values do
        inner = _value_reads(node.elt)
        fors: list[cst.CompFor] = []
        f: cst.CompFor | None = node.for_in
        while f is not None:
            fors.append(f)
            for c in f.ifs:
                inner += _value_reads(c.test)
            f = f.inner_for_in
        for f in reversed(fors):
            targets = set(target_names(f.target))
            if targets & set(inner):
                inner += _value_reads(f.iter)
            inner = [n for n in inner if n not in targets]
        return inner
    V().walk(node)
    bound: set[str] = set()

    class B(Visitor):
        def visit_CompFor(self, n: cst.CompFor) -> None:
            bound.update(target_names(n.target))

    B().walk(node)
    return [n for n in out if n not in bound]


def _stores_arrays(node: cst.BaseExpression) -> bool:
    """Expressions kept nested (comprehensions, ...) or container builtins over arrays."""
    if isinstance(node, (cst.ListComp, cst.GeneratorExp, cst.BooleanOperation, cst.IfExp, cst.DictComp)):
        return True
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
        return node.func.value in ("list", "tuple", "zip", "enumerate", "reversed", "sum", "sorted", "map",
                                   "dict", "max", "min")
    return False


def _seq_names(v: Any) -> list[str]:
    if isinstance(v, list):
        return [x for x in v if isinstance(x, str) and x.isidentifier()]
    if isinstance(v, str):
        try:
            node = cst.parse_expression(v)
        except Exception:
            return []
        return names_in(node)
    return []


def _is_int_dtype(s: str) -> bool:
    return any(t in s for t in ("int", "bool", "uint"))


# -- naming -------------------------------------------------------------------------------------

# -- forward mode ------------------------------------------------------------------------------

# Ops whose tangent line reads no primal that the statement itself rebinds: a copy reads the
# source's tangent; a helper or custom_jvp call computes the value and its tangent in one call
# (``h_out, h_out_dot = h_jvp(...)``) before the target is bound.
_OWN_TEMPORARIES = ("copy", "call", "custom")


def _temporary_hint(value: cst.BaseExpression) -> str:
    """A name for the value of ``value`` as A-normal form names it (``mul``, ``tanh``, ``getitem``)."""
    if isinstance(value, cst.BinaryOperation):
        return BINOP_HINT[type(value.operator).__name__]
    if isinstance(value, cst.UnaryOperation):
        return UNARY_HINT.get(type(value.operator).__name__, "value")
    if isinstance(value, cst.Call):
        return _call_hint(value.func)
    if isinstance(value, cst.Subscript):
        return "getitem"
    if isinstance(value, (cst.Tuple, cst.List)):
        return "items"
    return "value"


class JVP:
    """Writes ``def <name>(params..., <active>_dot...) -> (out, out_dot)``."""

    def __init__(self, program: Program, nf: NormalizedFunction, active_params: Sequence[str],
                 name: str, helpers: dict[tuple[str, tuple[str, ...]], str], out_lines: list[str]) -> None:
        self.program = program
        self.nf = nf
        self.name = name
        self.names = Names(set(names_in(nf.plain_fdef)) | set(program.functions) | set(ADJOINT_IMPORTS))
        self.body = inline_lax(nf, list(nf.plain_fdef.body.body))  # user srcjax.lax calls -> if/for/while
        self.body = inline_loop_iterables(self.body)
        self.act = Activity(program, nf, active_params, self.body)
        self.body, self.act = _hoisted(program, nf, active_params, self.body, self.act, self.names)
        self.dot: dict[str, str] = {}
        self.helpers = helpers
        self.out_lines = out_lines
        self.params = all_params(nf)
        self.active_params = list(active_params)
        self.synthesized: list[cst.Assign] = []

    def dname(self, v: str) -> str:
        d = self.dot.get(v)
        if d is None:
            d = self.dot[v] = self.names.fresh(f"{v}_dot")
        return d

    def build(self) -> str:
        lines: list[str] = []
        defined = set(self.active_params)
        for p in self.active_params:
            self.dname(p)
        self.block(self.body, lines, 1, defined, top=True)
        sig = signature(self.nf, [self.dot[p] for p in self.active_params])
        return f"def {self.name}({sig}):\n" + "\n".join(lines) + "\n"

    def tangent_of(self, atom: str, defined: set[str]) -> str | None:
        if atom in self.act.active and atom in defined:
            return self.dot[atom]
        return None

    def block(self, stmts: Sequence[Any], lines: list[str], ind: int, defined: set[str], top: bool = False,
              bound: set[str] | None = None) -> None:
        """``defined``: names whose tangent exists here; ``bound``: names definitely bound here."""
        if bound is None:
            bound = self.bound = set(self.params)
        pad = "    " * ind
        for s in stmts:
            if isinstance(s, cst.SimpleStatementLine):
                for small in s.body:
                    self.small(small, lines, ind, defined)
                    if isinstance(small, cst.Assign):
                        bound.update(n for t in small.targets for n in target_names(t.target))
            elif isinstance(s, cst.If):
                lines.append(f"{pad}if {code(s.test)}:")
                d1, k1 = set(defined), set(bound)
                b1: list[str] = []
                self.block(s.body.body, b1, ind + 1, d1, bound=k1)
                d2, k2 = set(defined), set(bound)
                b2: list[str] = []
                if s.orelse is not None:
                    other = [s.orelse] if isinstance(s.orelse, cst.If) else s.orelse.body.body
                    self.block(other, b2, ind + 1, d2, bound=k2)
                # a tangent defined on one path only: zeros on the other paths where the primal is bound
                union = d1 | d2
                for bl, d, _k in ((b1, d1, k1), (b2, d2, k2)):
                    for v in sorted((union - d) & (k1 & k2)):
                        bl.append(f"{pad}    {self.dname(v)} = zeros_like({v})")
                        d.add(v)
                defined.clear()
                defined |= d1 & d2
                bound |= k1 & k2
                lines += b1 or [f"{pad}    pass"]
                if b2:
                    lines.append(f"{pad}else:")
                    lines += b2
            elif isinstance(s, (cst.For, cst.While)):
                header = f"for {code(s.target)} in {code(s.iter)}:" if isinstance(s, cst.For) \
                    else f"while {code(s.test)}:"
                taken = set(self.names.taken)
                while True:
                    body_lines: list[str] = []
                    inner, kin = set(defined), set(bound)
                    if isinstance(s, cst.For):
                        kin.update(target_names(s.target))
                        srcs = active_loop(s, self.act.active)
                        if srcs:  # the items' tangents come from the sequences' tangents, in step
                            header = self.loop_header(s, srcs, defined)
                            inner.update(n for src in srcs for n in target_names(src.target))
                    self.block(s.body.body, body_lines, ind + 1, inner, bound=kin)
                    # tangents carried around the loop must exist before it; if the body reads one before
                    # assigning it (x in `t.append(x); x = f(x)`), it is written again knowing that
                    carried = [v for v in sorted(inner - defined) if v in bound]
                    for v in carried:
                        lines.append(f"{pad}{self.dname(v)} = zeros_like({v})")
                        defined.add(v)
                    if not carried or not set(carried) & set(_upward_exposed(s.body.body)):
                        break
                    self.names.taken = set(taken) | set(self.dot.values())
                lines.append(pad + header)
                lines += body_lines or [f"{pad}    pass"]
                defined |= inner
            else:
                raise UnsupportedSyntaxError(f"cannot differentiate {type(s).__name__}")

    def small(self, s: Any, lines: list[str], ind: int, defined: set[str]) -> None:
        pad = "    " * ind
        t: str | None
        if isinstance(s, cst.Return):
            val = code(s.value) if s.value is not None else "None"
            lines.append(f"{pad}return {val}, {self.tangent_expr(s.value, defined)}")
            return
        if isinstance(s, cst.Expr):
            lines.append(pad + code(s))
            call = s.value
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "append":
                lst = code(call.func.value)
                if lst in self.act.active:
                    arg = code(call.args[0].value)
                    t = self.tangent_expr(call.args[0].value, defined, allow_none=True)
                    lines.append(f"{pad}{self.dname(lst)}.append({t})")
                    _ = arg
            return
        if not isinstance(s, cst.Assign):
            lines.append(pad + code(s))
            return
        lines.append(pad + code(s))
        targets = [n for t in s.targets for n in target_names(t.target)]
        if not any(t in self.act.active for t in targets):
            op = self.act.op(s.value)
            if op.kind == "tape_pop" and op.callee in self.act.active and op.callee in defined:
                # the tangent list moves in step with its list (every append pushed a tangent, zeros for
                # values without one), so a pop whose values carry no derivative pops it too
                lines.append(f"{pad}{self.dname(op.callee)}.pop()")
            return
        target = s.targets[0].target
        op = self.act.op(s.value)
        if op.kind not in _OWN_TEMPORARIES and set(targets) & set(names_in(s.value)):
            lines.pop()
            self.rebinding(s, lines, ind, defined)
            return
        tname = code(target)
        if op.kind == "prim":
            t = self.prim_tangent(op, tname, defined)
        elif op.kind == "copy":
            t = self.tangent_of(op.operands["x"], defined)
        elif op.kind in ("pack", "dict"):
            t = self.tangent_expr(s.value, defined)
        elif op.kind in ("getattr", "tree_add", "pack_like"):
            t = self.container_tangent(op, defined)
        elif op.kind == "convert":
            t = self.tangent_of(op.operands["x"], defined)
            t = f"{op.args['kind']}({t})" if t is not None else None
        elif op.kind == "tape_pop":
            assert op.callee is not None
            t = f"{self.dname(op.callee)}.pop()" if op.callee in defined else None
        elif op.kind == "call":
            lines.pop()
            self.call(s, op, lines, ind, defined)
            return
        elif op.kind == "custom":
            lines.pop()
            custom_rules.jvp_call(self, s, op, lines, ind, defined)
            return
        else:
            t = None
        if isinstance(target, cst.Name):
            if t is None:
                t = f"zeros_like({tname})" if op.kind != "pack" else None
            if t is not None:
                if op.kind == "prim" and s.value is not None and code(s.value) == "[]":
                    t = "[]"
                lines.append(f"{pad}{self.dname(tname)} = {t}")
                defined.add(tname)
        else:  # tuple unpacking: unpack the tangent the same way
            names = target_names(target)
            dots = ", ".join(self.dname(n) for n in names)
            src = t if t is not None else f"zeros_like({code(s.value)})"
            if op.kind == "copy" and t is None:
                src = "(" + ", ".join(f"zeros_like({n})" for n in names) + ",)"
            if any(isinstance(e.value, (cst.Tuple, cst.List)) for e in target.elements):  # type: ignore[attr-defined]
                dots = _tuple_target_code(target, self.dname)[1:-1]  # (a, b), c = ...: the same nesting
                src = t if t is not None else _tuple_target_code(target, lambda n: f"zeros_like({n})")
            lines.append(f"{pad}{dots}, = {src}" if len(names) == 1 else f"{pad}{dots} = {src}")
            defined.update(names)

    def rebinding(self, s: cst.Assign, lines: list[str], ind: int, defined: set[str]) -> None:
        """``y = e * y``: the tangent's rule reads the old ``y`` (and the result), so the result gets
        a fresh name first, ``mul = e * y`` and its tangent, then ``y = mul`` and ``y_dot = mul_dot``
        (see the module docstring: no tangent reads a name its own primal statement rebinds)."""
        tmp = self.names.fresh(_temporary_hint(s.value))
        self.act.active.add(tmp)
        first = cst.Assign(targets=[cst.AssignTarget(cst.Name(tmp))], value=s.value)
        then = cst.Assign(targets=s.targets, value=cst.Name(tmp))
        self.synthesized += [first, then]  # alive while Activity.op remembers them by id
        self.small(first, lines, ind, defined)
        self.small(then, lines, ind, defined)

    def tangent_expr(self, node: cst.BaseExpression | None, defined: set[str], allow_none: bool = False) -> str:
        if node is None:
            return "None"
        if isinstance(node, cst.Name):
            t = self.tangent_of(node.value, defined)
            if t is not None:
                return t
            if allow_none and node.value not in self.act.active:
                return "None"
            return f"zeros_like({node.value})"
        if isinstance(node, (cst.Tuple, cst.List)):
            parts = [self.tangent_expr(e.value, defined) for e in node.elements]
            inner = ", ".join(parts) + ("," if len(parts) == 1 and isinstance(node, cst.Tuple) else "")
            return f"({inner})" if isinstance(node, cst.Tuple) else f"[{inner}]"
        if isinstance(node, cst.Dict) and all(isinstance(e, cst.DictElement) for e in node.elements):
            return "{" + ", ".join(f"{code(e.key)}: {self.tangent_expr(e.value, defined)}"  # type: ignore[attr-defined]
                                   for e in node.elements) + "}"
        return f"zeros_like({code(node)})"

    def container_tangent(self, op: Op, defined: set[str]) -> str | None:
        """The tangent of ``p.w``, ``tree_add(a, b)`` or ``pack_like(x, items)``."""
        if op.kind == "getattr":
            t = self.tangent_of(op.operands["x"], defined)
            return f"{t}.{op.args['attr']}" if t is not None else None
        if op.kind == "tree_add":
            ts = [t for t in (self.tangent_of(e, defined) for e in op.elements) if t is not None]
            return None if not ts else ts[0] if len(ts) == 1 else f"tree_add({ts[0]}, {ts[1]})"
        items = self.tangent_expr(cst.parse_expression(op.elements[0]), defined)
        return f"pack_like({op.args['x']}, {items})"

    def loop_header(self, s: cst.For, srcs: list[LoopSource], defined: set[str]) -> str:
        """``for <target>, <its tangent> in zip(<iter>, <iter over the tangents>):``."""
        mapping: dict[str, cst.BaseExpression] = {}
        for src in srcs:
            if isinstance(src.seq, cst.Name):
                mapping[src.seq.value] = cst.parse_expression(self.tangent_expr(src.seq, defined))
        it_dot = code(s.iter.visit(RenameNames(mapping)))  # type: ignore[arg-type]
        values = {n for src in srcs for n in target_names(src.target)}

        def dot_target(t: cst.BaseExpression) -> str:
            if isinstance(t, (cst.Tuple, cst.List)):
                parts = [dot_target(e.value) for e in t.elements]
                return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
            assert isinstance(t, cst.Name)
            return self.dname(t.value) if t.value in values else self.names.fresh("_")

        target = _tuple_target_code(s.target, str)
        return f"for {target}, {dot_target(s.target)} in zip({code(s.iter)}, {it_dot}):"

    def prim_tangent(self, op: Op, out: str, defined: set[str]) -> str | None:
        assert op.prim is not None
        prim = op.prim
        if prim.name in rules.NONDIFF:
            return None
        templates = rules.JVP.get(prim.name)
        if templates is None:
            raise DifferentiationError(f"no derivative rule for {prim.path} yet",
                                       hint="file an issue; or wrap it in srcjax.custom_jvp (issue #5)")
        mapping = {k: v if isinstance(v, str) else "[" + ", ".join(v) + "]" for k, v in op.args.items()}
        mapping["out"] = out
        if prim.name == "index_add":  # linear in (z, g) together (z may be a container: no `+`)
            zt, gt = (self.tangent_of(op.operands.get(p, ""), defined) for p in ("z", "g"))
            g = cst.parse_expression(op.args["g"])
            if isinstance(g, (cst.Tuple, cst.List)):  # index_add(params_bar, i, (w_bar, b_bar))
                gt = self.tangent_expr(g, defined)
                zt = zt if zt is not None else f"zeros_like({op.args['z']})"
            if zt is not None and gt is not None:
                return f"index_add({zt}, {op.args['key']}, {gt})"
        contribs = []
        for p, tmpl in templates.items():
            if p in prim.array_seqs:
                seq = op.args.get(p)
                if isinstance(seq, str) and seq.isidentifier() and self.tangent_of(seq, defined):  # np.stack(xs)
                    mapping[f"{p}_dot"] = self.tangent_of(seq, defined)  # type: ignore[assignment]
                    contribs.append(instantiate(tmpl, mapping))
                    continue
                elems = seq if isinstance(seq, list) else None
                if elems is None or not any(isinstance(e, str) and self.tangent_of(e, defined) for e in elems):
                    continue
                mapping[f"{p}_dot"] = "[" + ", ".join(self.tangent_expr(cst.parse_expression(e), defined)
                                                      for e in elems) + "]"
                contribs.append(instantiate(tmpl, mapping))
                continue
            a = op.operands.get(p)
            lit = _literal_container(op.args.get(p)) if a is None else None
            if lit is not None and any(self.tangent_of(n, defined) for n in names_in(lit)):
                # `(a, b)` as an array: its tangent is the literal of the elements' tangents
                mapping[f"{p}_dot"] = self.tangent_expr(lit, defined)
                contribs.append(instantiate(tmpl, mapping))
                continue
            if a is None:
                continue
            t = self.tangent_of(a, defined)
            if t is None:
                continue
            mapping[f"{p}_dot"] = t
            contribs.append(instantiate(tmpl, mapping))
        if not contribs:
            return None
        return " + ".join(_paren(c) for c in contribs) if len(contribs) > 1 else contribs[0]

    def call(self, s: cst.Assign, op: Op, lines: list[str], ind: int, defined: set[str]) -> None:
        pad = "    " * ind
        callee = self.program.functions[op.callee]  # type: ignore[index]
        params = all_params(callee)
        bound = dict(zip(params, op.call_args))
        bound.update(op.call_kwargs)
        active = tuple(p for p in params if p in bound and any(
            n in self.act.active and n in defined for n in names_in(_expr(bound[p]))))
        target = code(s.targets[0].target)
        if not active:
            lines.append(f"{pad}{target} = {code(s.value)}")
            names = target_names(s.targets[0].target)
            for n in names:
                if n in self.act.active:
                    lines.append(f"{pad}{self.dname(n)} = zeros_like({n})")
                    defined.add(n)
            return
        hname = jvp_helper(self.program, callee, active, self.helpers, self.out_lines)
        args = call_arguments(op, [self.tangent_expr(cst.parse_expression(bound[p]), defined) for p in active])
        out = self.names.fresh(f"{op.callee}_out")
        out_dot = self.names.fresh(f"{op.callee}_out_dot")
        lines.append(f"{pad}{out}, {out_dot} = {hname}({', '.join(args)})")
        lines.append(f"{pad}{target} = {out}")
        names = target_names(s.targets[0].target)
        tgt = s.targets[0].target
        if isinstance(tgt, cst.Name):
            lines.append(f"{pad}{self.dname(tgt.value)} = {out_dot}")
        else:  # the tangents unpack like the target (`a, = h(x)` -> `a_dot, = h_out_dot`)
            dots: Any = tgt.visit(RenameNames({n: self.dname(n) for n in names}))
            lines.append(f"{pad}{code(dots)} = {out_dot}")
        defined.update(names)


def _hoisted(program: Program, nf: NormalizedFunction, active_params: Sequence[str], body: list[Any],
             act: Activity, names: Names) -> tuple[list[Any], Activity]:
    """``body`` with the sequences of active loops named (see hoist_loop_sequences), and its activity."""
    before = len(names.taken)
    hoisted = hoist_loop_sequences(body, act.active, names, nf.spans)
    if len(names.taken) == before:
        return body, act
    return hoisted, Activity(program, nf, active_params, hoisted)


def jvp_helper(program: Program, nf: NormalizedFunction, active: tuple[str, ...],
               helpers: dict[tuple[str, tuple[str, ...]], str], out_lines: list[str]) -> str:
    key = (nf.name, active)
    name = helpers.get(key)
    if name is None:
        taken = set(helpers.values()) | set(program.functions)
        name = Names(taken).fresh(f"{nf.name}_jvp")
        helpers[key] = name
        out_lines.append(JVP(program, nf, active, name, helpers, out_lines).build())
    return name


# -- reverse mode ------------------------------------------------------------------------------

def single_exit(stmts: list[Any], result: str) -> list[Any]:
    """Rewrite early returns in static ``if``s so the function has one ``return`` at the end."""
    try:
        return _single_exit(stmts, result)
    except UnsupportedSyntaxError:
        raise DifferentiationError("`return` inside a loop is not supported in reverse mode yet",
                                   hint="break out of the loop with a flag and return after it") from None


class VJP:
    """Writes the primal sweep and the adjoint sweep of one function.

    ``mode``: ``"grad"`` -> ``def name(params...)`` returning the cotangents of
    the active params (seeded with ones); ``"vjp"`` -> ``def name(params..., out_bar)``
    returning ``(out, cotangents)``; ``"fwd"``/``"bwd"`` -> helper halves sharing a tape.
    """

    def __init__(self, program: Program, nf: NormalizedFunction, active_params: Sequence[str],
                 helpers: dict[tuple[str, tuple[str, ...]], tuple[str, str]], out_lines: list[str],
                 max_iters: int | None = None) -> None:
        self.program = program
        self.nf = nf
        self.max_iters = max_iters
        self.active_params = list(active_params)
        self.names = Names(set(names_in(nf.plain_fdef)) | set(program.functions) | set(ADJOINT_IMPORTS))
        self.bar: dict[str, str] = {}
        self.helpers = helpers
        self.out_lines = out_lines
        self.params = all_params(nf)
        self.tape = self.names.fresh("_tape")
        body = single_exit(list(nf.plain_fdef.body.body), Names(set(names_in(nf.plain_fdef))).fresh("result"))
        body = inline_lax(nf, body)  # user srcjax.lax calls -> if/for/while (see transforms/inline_lax.py)
        # while on data -> bounded for; break/continue -> flags (see transforms/bounded.py)
        body, self.spans, self._bounder = bound_loops(nf, body, max_iters)
        body = inline_calls_in_data_branches(program, nf, body)
        body = inline_loop_iterables(body)  # for i, p in reversed(list(enumerate(xs))): as written
        if not body or not isinstance(body[-1], cst.SimpleStatementLine) or \
                not isinstance(body[-1].body[-1], cst.Return):
            raise DifferentiationError(f"{nf.name}: reverse mode needs one `return` at the end of the function",
                                       hint="assign the result to a variable in each branch and return it once")
        for s, _ in _walk(body[:-1]):
            if isinstance(s, cst.Return):
                raise DifferentiationError(f"{nf.name}: `return` inside if/for is not supported in reverse mode "
                                           "yet", hint="assign the result in each branch and return it once")
            assert not isinstance(s, (cst.Break, cst.Continue)), "bound_loops leaves no loop exits"
        from ..frontend.functionalize import BindingTimes

        self.bta = BindingTimes(nf, nf.plain_fdef, body)
        self.ret: cst.Return = body[-1].body[-1]
        self.act = Activity(program, nf, active_params, body)
        body, self.act = _hoisted(program, nf, active_params, body, self.act, self.names)
        self.body = list(body[:-1]) + ([cst.SimpleStatementLine(body=list(body[-1].body[:-1]))]
                                       if len(body[-1].body) > 1 else [])
        self.body, self.custom_res = custom_rules.with_residuals(self, self.body)
        self.no_bar: set[int] = set()  # calls whose result gets no cotangent: primal calls them plainly
        self.order = {id(st): k for k, (st, _) in enumerate(_walk(self.body))}  # program order
        self.first_reads = _first_reads(self.body)
        self.saved = self.overwritten()
        self.arrays = array_names(self.body, self.act)
        self.loop_index: dict[int, str] = {}
        self.loop_iters: dict[int, str] = {}
        self.counters: dict[int, str] = {}
        self.loop_locals: dict[int, list[str]] = {}
        # (statement id, name) -> where the adjoint gets the name's old value back: the tape, or a
        # name saved inside an `if` on data (a tape push there would depend on the branch taken)
        self.pushed: dict[tuple[int, str], str] = {}
        self.branch_saves: list[list[tuple[str, str]]] = []  # per open data `if`: (saved name, variable)
        self.loop_saves: list[list[str]] = []  # per open loop: saved names first bound in its body
        self.restore: set[str] = set(self.saved)
        self.seed_expr: str | None = None  # grad seeds the output's cotangent with this expression

    def bname(self, v: str) -> str:
        b = self.bar.get(v)
        if b is None:
            b = self.bar[v] = self.names.fresh(f"{v}_bar")
        return b

    def overwritten(self) -> set[str]:
        counts: dict[str, int] = {p: 1 for p in self.params}
        in_loop: set[str] = set()
        for s, depth in _walk(self.body):
            if isinstance(s, cst.Assign):
                for t in s.targets:
                    for n in target_names(t.target):
                        counts[n] = counts.get(n, 0) + 1
                        if depth > 0:
                            in_loop.add(n)
        return {n for n, c in counts.items() if c > 1} | in_loop

    # -- primal sweep -------------------------------------------------------------------------
    def primal(self, stmts: Sequence[Any], ind: int, lines: list[str], bound: set[str]) -> None:
        """Emit the primal; save a value on the tape before it is overwritten, if the adjoint reads it.

        ``bound`` holds the names definitely bound here (a push needs a value).
        """
        pad = "    " * ind
        for s in stmts:
            if isinstance(s, cst.SimpleStatementLine):
                for small in s.body:
                    if isinstance(small, cst.Assign):
                        targets = [n for t in small.targets for n in target_names(t.target)]
                        op = self.act.op(small.value)
                        for n in targets:
                            if n in self.restore and n in bound:
                                if self.branch_saves:
                                    sv = self.names.fresh(f"{n}_before")
                                    lines.append(f"{pad}{sv} = {n}")
                                    self.pushed[(id(small), n)] = sv
                                    self.branch_saves[-1].append((sv, n))
                                    if self.loop_saves:
                                        self.loop_saves[-1].append(sv)
                                else:
                                    lines.append(f"{pad}{self.tape}.append({n})")
                                    self.pushed[(id(small), n)] = f"{self.tape}.pop()"
                        bound.update(targets)
                        if op.kind == "custom":
                            line = custom_rules.primal_line(self, small, op, pad)
                            if line is not None:
                                lines.append(line)
                                continue
                        if op.kind == "call" and self.call_active(op) and id(small) not in self.no_bar:
                            fwd, _ = self.call_names(op)
                            lines.append(f"{pad}{code(small.targets[0].target)} = {fwd}"
                                         f"({', '.join(call_arguments(op, [self.tape]))})")
                            continue
                    lines.append(pad + code(small))
            elif isinstance(s, cst.If):
                self.primal_if(s, ind, lines, bound)
            elif isinstance(s, (cst.For, cst.While)):
                body_lines: list[str] = []
                inner = set(bound)
                if isinstance(s, cst.For):
                    inner.update(target_names(s.target))
                self.loop_saves.append([])
                self.primal(s.body.body, ind + 1, body_lines, inner)
                in_branches = self.loop_saves.pop()
                # names first bound inside the body: saved at the end of every iteration
                local = sorted(n for n in self.assigned_in(s.body.body) - bound if n in self.restore) + in_branches
                self.loop_locals[id(s)] = local
                # bound only by a nested loop, which may run no iterations (`for k in range(j)`): declared
                # at the top of the function, so the save has a value (read only where it was bound)
                self.declared.update(n for n in local if n not in inner)
                if local:
                    body_lines.append(f"{pad}    {self.tape}.append(({', '.join(local)},))")
                if isinstance(s, cst.For):
                    it = self.loop_iters.get(id(s))
                    # an active loop's sequences are names the loop does not change: its adjoint iterates
                    # over them again (so forward mode can follow it: hessian)
                    reuse = bool(active_loop(s, self.act.active)) and \
                        not set(names_in(s.iter)) & self.assigned_in(s.body.body)
                    if it is None:
                        it = self.loop_iters[id(s)] = code(s.iter) if reuse else self.names.fresh("loop_items")
                    if not reuse:  # an iterator (enumerate, zip, ...) is saved as a list: the adjoint reverses it
                        lines.append(f"{pad}{it} = {_saved_iterable(s.iter)}")
                        bound.add(it)
                        if self.loop_saves and it not in self.loop_saves[-1]:
                            self.loop_saves[-1].append(it)  # per iteration of the enclosing loop (range(j, n))
                    lines.append(f"{pad}for {code(s.target)} in {it}:")
                else:
                    c = self.counters.get(id(s))
                    if c is None:
                        c = self.counters[id(s)] = self.names.fresh("loop_count")
                    if self.loop_saves and c not in self.loop_saves[-1]:
                        self.loop_saves[-1].append(c)  # the trip count of each run of a nested while
                    lines.append(f"{pad}{c} = 0")
                    bound.add(c)
                    lines.append(f"{pad}while {code(s.test)}:")
                    body_lines.append(f"{pad}    {c} = {c} + 1")
                lines += body_lines or [f"{pad}    pass"]

    def primal_if(self, s: cst.If, ind: int, lines: list[str], bound: set[str]) -> None:
        """An ``if``; on data, values the adjoint restores are saved in names both branches bind."""
        from ..frontend.functionalize import STATIC

        pad = "    " * ind
        data = self.bta.of(s.test) != STATIC
        if data:
            self.branch_saves.append([])
        lines.append(f"{pad}if {code(s.test)}:")
        b1 = set(bound)
        first: list[str] = []
        self.primal(s.body.body, ind + 1, first, b1)
        saves1 = self.branch_saves[-1][:] if data else []
        b2 = set(bound)
        second: list[str] = []
        if s.orelse is not None:
            self.primal([s.orelse] if isinstance(s.orelse, cst.If) else s.orelse.body.body, ind + 1, second, b2)
        if data:
            saves = self.branch_saves.pop()
            saves2 = saves[len(saves1):]
            for mine, other in ((first, saves2), (second, saves1)):
                # the other branch's saved names, bound here too: to the value at the `if` (read only
                # on the other branch, but giving the join a value), or UNSET if there is none yet
                mine[:0] = [f"{pad}    {sv} = {n if n in bound else 'UNSET'}" for sv, n in other]
            if self.branch_saves:
                self.branch_saves[-1] += saves
            bound.update(sv for sv, _ in saves)  # both branches bind every saved name
        if self.loop_saves:
            # a loop saves what its body binds at the end of every iteration: a name the adjoint
            # needs that one branch binds is UNSET on the others (read only under the same test,
            # static or on data: `if j != k` in a comprehension's loops)
            for mine, b_mine, b_other in ((first, b1, b2), (second, b2, b1)):
                for n in sorted((b_other - b_mine - bound) & self.restore):
                    mine.append(f"{pad}    {n} = UNSET")
                    b_mine.add(n)
        elif data:
            # bound on one path only (outside loops): the adjoint's zero cotangent for such a name on
            # the other path reads it, so the function binds it to UNSET first (zeros_like(UNSET) is UNSET)
            self.partial |= (b1 ^ b2) - bound
        lines += first or [f"{pad}    pass"]
        if second:
            lines.append(f"{pad}else:")
            lines += second
        bound |= b1 & b2

    def assigned_in(self, stmts: Sequence[Any]) -> set[str]:
        return {n for st, _ in _walk(stmts) if isinstance(st, cst.Assign)
                for t in st.targets for n in target_names(t.target)}

    # -- adjoint sweep ------------------------------------------------------------------------
    def accumulate(self, v: str, contrib: str, lines: list[str], pad: str, defined: set[str]) -> None:
        b = self.bname(v)
        scatter = f"index_add(zeros_like({v}), "
        if v in defined and contrib.startswith(scatter):  # add into the accumulator in place
            lines.append(f"{pad}{b} = index_add({b}, {contrib[len(scatter):]}")
        elif v in defined and v not in self.arrays:  # may be a container: `+` would concatenate lists
            lines.append(f"{pad}{b} = tree_add({b}, {contrib})")
        elif v in defined:
            lines.append(f"{pad}{b} = {b} + {_paren(contrib)}")
        else:
            lines.append(f"{pad}{b} = {contrib}")
            defined.add(v)

    def adjoint(self, stmts: Sequence[Any], ind: int, lines: list[str], defined: set[str]) -> None:
        pad = "    " * ind
        for s in reversed(stmts):
            if isinstance(s, cst.SimpleStatementLine):
                for small in reversed(s.body):
                    self.adjoint_small(small, ind, lines, defined)
            elif isinstance(s, cst.If):
                b1: list[str] = []
                d1 = set(defined)
                self.adjoint(s.body.body, ind + 1, b1, d1)
                b2: list[str] = []
                d2 = set(defined)
                if s.orelse is not None:
                    self.adjoint([s.orelse] if isinstance(s.orelse, cst.If) else s.orelse.body.body, ind + 1, b2, d2)
                union = d1 | d2
                for bl, d in ((b1, d1), (b2, d2)):
                    for v in sorted(union - d):
                        bl.append(f"{pad}    {self.bname(v)} = zeros_like({v})")
                defined.clear()
                defined |= union
                lines.append(f"{pad}if {code(s.test)}:")
                lines += b1 or [f"{pad}    pass"]
                if b2:
                    lines.append(f"{pad}else:")
                    lines += b2
            elif isinstance(s, (cst.For, cst.While)):
                body: list[str] = []
                inner = set(defined)
                # cotangents the body accumulates into outer variables must exist before the loop
                touched = self.contributed(s.body.body)
                srcs = active_loop(s, self.act.active) if isinstance(s, cst.For) else []
                values_key = None
                if isinstance(s, cst.For) and isinstance(s.iter, cst.Call) and isinstance(s.iter.func, cst.Attribute) \
                        and s.iter.func.attr.value == "values" and not s.iter.args and len(srcs) == 1:
                    # `for v in d.values()`: the adjoint walks d.items(), so it has each key at hand
                    values_key = self.loop_index.setdefault(id(s), self.names.fresh("key"))
                    srcs = [LoopSource(srcs[0].target, srcs[0].seq, values_key)]
                touched |= {code(src.seq) for src in srcs if code(src.seq) in self.act.active}
                touched |= {lst for lst in self.appended_in(s.body.body) if self.read_before(lst, s)}
                local = self.assigned_in(s.body.body)
                items = set(target_names(s.target)) if srcs else set()  # type: ignore[union-attr]
                pre: list[str] = []
                carried = _upward_exposed(s.body.body)  # read before the body assigns them: loop-carried
                for v in sorted(touched - defined - items):  # (items are rebound every iteration)
                    if v not in local or v in self.params or v in carried:
                        pre.append(f"{pad}{self.bname(v)} = zeros_like({v})")
                        inner.add(v)
                start = set(inner)
                saved = self.loop_locals.get(id(s), [])
                if saved:
                    names = ", ".join(saved)
                    body.append(f"{pad}    {names}, = {self.tape}.pop()" if len(saved) == 1
                                else f"{pad}    {names} = {self.tape}.pop()")
                self.adjoint(s.body.body, ind + 1, body, inner)
                index = None
                if srcs:  # the items' cotangents into their sequences' (at position INDEX, if needed)
                    items_lines: list[str] = []
                    self.item_cotangents(srcs, INDEX, items_lines, pad + "    ", inner)
                    if any(INDEX in ln for ln in items_lines):
                        index = self.loop_index.setdefault(id(s), self.names.fresh("i"))
                    body += [ln.replace(INDEX, index or INDEX) for ln in items_lines]
                for v in sorted(start - inner):
                    body.append(f"{pad}    {self.bname(v)} = zeros_like({v})")
                lines += pre
                if isinstance(s, cst.For) and index is not None:
                    lines.append(f"{pad}for {index}, {_tuple_target_code(s.target, str)} in "
                                 f"reversed(list(enumerate({self.loop_iters[id(s)]}))):")
                elif isinstance(s, cst.For) and values_key is not None:
                    lines.append(f"{pad}for {values_key}, {_tuple_target_code(s.target, str)} in "
                                 f"reversed(list({code(s.iter.func.value)}.items())):")  # type: ignore[attr-defined]
                elif isinstance(s, cst.For) and srcs:
                    lines.append(f"{pad}for {code(s.target)} in reversed(list({self.loop_iters[id(s)]})):")
                elif isinstance(s, cst.For):
                    lines.append(f"{pad}for {code(s.target)} in reversed({self.loop_iters[id(s)]}):")
                else:
                    lines.append(f"{pad}for _ in range({self.counters[id(s)]}):")
                lines += body or [f"{pad}    pass"]
                defined.clear()
                defined |= start

    def item_cotangents(self, srcs: list[LoopSource], index: str, lines: list[str], pad: str,
                        defined: set[str]) -> None:
        """At the end of an adjoint loop iteration: the loop items' cotangents into their sequences'."""
        for src in srcs:
            names = target_names(src.target)
            seq = code(src.seq)
            if any(n in defined for n in names) and seq in self.act.active:
                bar = _tuple_target_code(src.target, lambda n: self.bname(n) if n in defined else f"zeros_like({n})")
                self.accumulate(seq, f"index_add(zeros_like({seq}), {loop_key(src, index)}, {bar})", lines, pad,
                                defined)
            for n in names:
                defined.discard(n)

    def appended_in(self, stmts: Sequence[Any]) -> set[str]:
        """Active lists the statements append to."""
        return {code(st.value.func.value) for st, _ in _walk(stmts) if _is_append(st)} & self.act.active

    def read_before(self, lst: str, st: cst.CSTNode) -> bool:
        """Whether the list ``lst`` is read (not appended to) before the statement ``st``: then its
        cotangent may start before (in the adjoint: after) appends that see none."""
        first = self.first_reads.get(lst)
        return first is not None and first < self.order[id(st)]

    def contributed(self, stmts: Sequence[Any]) -> set[str]:
        out: set[str] = set()
        for s, _ in _walk(stmts):
            if isinstance(s, cst.Assign):
                op = self.act.op(s.value)
                out |= {n for n in op.reads if n in self.act.active}
        return out

    def adjoint_small(self, s: Any, ind: int, lines: list[str], defined: set[str]) -> None:
        pad = "    " * ind
        if isinstance(s, cst.Expr):
            call = s.value
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and \
                    call.func.attr.value == "append":
                lst = code(call.func.value)
                node = call.args[0].value
                arg = code(node)
                if lst not in defined and lst in self.act.active and self.read_before(lst, s):
                    # the list's last append, read before it (`b = items[0]`, then appends): its cotangent
                    # starts here, as long as the list is now; what this append added gets none
                    lines.append(f"{pad}{self.bname(lst)} = zeros_like({lst}[:-1])")
                    defined.add(lst)
                    return
                if lst not in defined:  # no cotangent reached this binding of the list (a result not used)
                    return
                if lst not in self.act.active:
                    return
                lb = self.bname(lst)
                if isinstance(node, cst.Tuple):  # `_tape.append((a, b,))` (derivative code): per element
                    elems = [(k, e) for k, e in ((k, code(e.value)) for k, e in enumerate(node.elements))
                             if e.isidentifier() and e in self.act.active]
                    if len(node.elements) == 1 and elems:
                        self.accumulate(elems[0][1], f"{lb}.pop()[0]", lines, pad, defined)
                    elif elems:
                        row = self.names.fresh("saved_bar")
                        lines.append(f"{pad}{row} = {lb}.pop()")
                        for k, e in elems:
                            self.accumulate(e, f"{row}[{k}]", lines, pad, defined)
                    else:
                        lines.append(f"{pad}{lb}.pop()")
                elif arg in self.act.active:
                    self.accumulate(arg, f"{lb}.pop()", lines, pad, defined)
                else:
                    lines.append(f"{pad}{lb}.pop()")
            return
        if not isinstance(s, cst.Assign):
            return
        target = s.targets[0].target
        names = target_names(target)
        op = self.act.op(s.value)
        restore = [n for n in names if (id(s), n) in self.pushed]
        old = {n: self.pushed[(id(s), n)] for n in restore}
        has_bar = any(n in defined and n in self.act.active for n in names)
        if not has_bar:
            if op.kind in ("call", "custom"):
                self.no_bar.add(id(s))  # its forward half would leave residuals on the tape: not used
            if op.kind == "tape_pop" and op.callee in self.act.active:
                # a zero cotangent for what was popped: the append this pop undoes adds it (a stack of
                # cotangents, in step with the list)
                self.cotangent_list(op.callee, lines, pad, defined)
                zeros = _tuple_target_code(target, lambda n: f"zeros_like({n})")
                lines.append(f"{pad}{self.bname(op.callee)}.append({zeros})")
            for n in reversed(restore):  # the last pushed comes off the tape first
                lines.append(f"{pad}{n} = {old[n]}")
            for n in names:
                defined.discard(n)
            return
        if op.kind == "custom":
            custom_rules.adjoint(self, s, op, [(n, old[n]) for n in reversed(restore)], lines, pad, defined)
            return
        reads_target = any(n in op.operands.values() or n in op.reads for n in names)
        if restore and reads_target and op.kind != "call" and not isinstance(target, cst.Name):
            # the old values come back before the rule runs (below): a result without a cotangent gets
            # its zeros now, shaped like the result (`a, b = b, a`: the old `b` may have another shape)
            for n in names:
                if n not in defined:
                    lines.append(f"{pad}{self.bname(n)} = zeros_like({n})")
                    defined.add(n)
        tcode = code(target)
        # the result's cotangent, consumed by this statement
        if isinstance(target, cst.Name):
            gexpr = self.bname(tcode)
        elif any(isinstance(e.value, (cst.Tuple, cst.List)) for e in target.elements):  # type: ignore[attr-defined]
            gexpr = _tuple_target_code(target, lambda n: self.bname(n) if n in defined else f"zeros_like({n})")
        else:
            gexpr = "(" + ", ".join(self.bname(n) if n in defined else f"zeros_like({n})" for n in names) + ",)"
        parts = None  # `a, b = c, d`: each element's cotangent
        if op.kind == "pack" and isinstance(target, (cst.Tuple, cst.List)) and \
                len(target.elements) == len(op.elements):
            parts = [_tuple_target_code(e.value, lambda n: self.bname(n) if n in defined else f"zeros_like({n})")
                     for e in target.elements]
        out_ref = tcode
        if restore:
            if op.kind != "call" and reads_target:
                # the operands are the old values: restore them first, keeping what the rule needs
                if op.kind == "prim" and self.uses_out(op):
                    out_ref = self.names.fresh(f"{tcode}_out")
                    lines.append(f"{pad}{out_ref} = {tcode}")
                if op.kind != "call" and isinstance(target, cst.Name):
                    gsave = self.names.fresh(f"{tcode}_bar_out")
                    lines.append(f"{pad}{gsave} = {gexpr}")
                    gexpr = gsave
                for n in reversed(restore):
                    lines.append(f"{pad}{n} = {old[n]}")
                restore = []
        elif op.kind in ("prim", "copy", "pack") and isinstance(target, cst.Name) and \
                (tcode in op.operands.values() or tcode in op.elements):
            # `y = f(y, ...)`: the rule accumulates into y's cotangent, which it also reads
            gsave = self.names.fresh(f"{tcode}_bar_out")
            lines.append(f"{pad}{gsave} = {gexpr}")
            gexpr = gsave
        for n in names:
            defined.discard(n)
        if op.kind == "prim":
            self.prim_adjoint(op, out_ref, gexpr, lines, pad, defined)
        elif op.kind == "copy":
            src = op.operands["x"]
            if src in self.act.active:  # `a, b = x`: the cotangents packed like x (a list, an array, ...)
                self.accumulate(src, gexpr if isinstance(target, cst.Name) else f"pack_like({src}, {gexpr})",
                                lines, pad, defined)
        elif op.kind in ("dict", "getattr", "tree_add", "pack_like"):
            self.container_adjoint(op, gexpr, lines, pad, defined)
        elif op.kind == "convert" and op.operands["x"] in self.act.active:  # tuple(items)
            src = op.operands["x"]
            self.accumulate(src, f"pack_like({src}, {gexpr})", lines, pad, defined)
        elif op.kind == "pack":
            if set(op.elements) & set(names):  # `p, q = q, p`: every part read before any is replaced
                saved = self.names.fresh("parts_bar")
                value = f"({', '.join(parts)},)" if parts is not None else gexpr
                lines.append(f"{pad}{saved} = {value}")
                parts = [f"{saved}[{k}]" for k in range(len(op.elements))]
            assert isinstance(s.value, (cst.Tuple, cst.List))
            for k, el in enumerate(s.value.elements):
                self.element_adjoint(el.value, parts[k] if parts is not None else f"{gexpr}[{k}]", lines, pad,
                                     defined)
        elif op.kind == "tape_pop":
            self.cotangent_list(op.callee, lines, pad, defined)  # type: ignore[arg-type]
            lines.append(f"{pad}{self.bname(op.callee)}.append({gexpr})")  # type: ignore[arg-type]
        elif op.kind == "call":
            self.call_adjoint(op, gexpr, lines, pad, defined)
        for n in reversed(restore):
            lines.append(f"{pad}{n} = {old[n]}")

    def element_adjoint(self, node: cst.BaseExpression, g: str, lines: list[str], pad: str,
                        defined: set[str]) -> None:
        """The cotangent ``g`` of one element of a tuple or list literal into what it reads: a name,
        or each element of a nested literal (``(y, (x, c))``: ``g[1][0]`` into x)."""
        if isinstance(node, cst.Name) and node.value in self.act.active:
            self.accumulate(node.value, g, lines, pad, defined)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for k, el in enumerate(node.elements):
                self.element_adjoint(el.value, f"{g}[{k}]", lines, pad, defined)

    def cotangent_list(self, lst: str, lines: list[str], pad: str, defined: set[str]) -> None:
        """``lst_bar`` exists before the adjoint of ``v = lst.pop()`` appends to it: one zero per item
        left in ``lst`` (none, for a derivative's tape, which the primal empties)."""
        if lst not in defined:
            lines.append(f"{pad}{self.bname(lst)} = zeros_like({lst})")
            defined.add(lst)

    def container_adjoint(self, op: Op, g: str, lines: list[str], pad: str, defined: set[str]) -> None:
        """Cotangents of a dict literal's values, of ``p`` in ``p.w``, of tree_add's and pack_like's operands."""
        if op.kind == "dict":
            for k, e in zip(op.keys, op.elements):
                self.element_adjoint(cst.parse_expression(e), f"{g}[{k}]", lines, pad, defined)
        elif op.kind == "getattr":
            x = op.operands["x"]
            if x in self.act.active:
                self.accumulate(x, f'index_add(zeros_like({x}), "{op.args["attr"]}", {g})', lines, pad, defined)
        elif op.kind == "tree_add":
            for e in op.elements:
                if e in self.act.active:
                    self.accumulate(e, g, lines, pad, defined)
        elif op.elements and op.elements[0] in self.act.active:  # pack_like(x, items)
            self.accumulate(op.elements[0], f"tuple({g})", lines, pad, defined)
        elif op.elements:  # pack_like(x, (a_bar, (b_bar, c_bar))): each item's cotangent into its name
            items = cst.parse_expression(op.elements[0])
            if isinstance(items, (cst.Tuple, cst.List)):
                self.element_adjoint(items, g, lines, pad, defined)

    def uses_out(self, op: Op) -> bool:
        assert op.prim is not None
        return any(_mentions(t, "out") for t in rules.VJP.get(op.prim.name, {}).values())

    def prim_adjoint(self, op: Op, out: str, g: str, lines: list[str], pad: str, defined: set[str]) -> None:
        prim = op.prim
        assert prim is not None
        if prim.name in rules.NONDIFF or (prim.name == "astype" and _is_int_dtype(op.args.get("dtype", ""))):
            return
        templates = rules.VJP.get(prim.name)
        if templates is None:
            raise DifferentiationError(f"no derivative rule for {prim.path} yet",
                                       hint="file an issue; or wrap it in srcjax.custom_vjp (issue #5)")
        mapping = {k: v if isinstance(v, str) else "[" + ", ".join(v) + "]" for k, v in op.args.items()}
        mapping["out"] = out
        mapping["out_bar"] = g
        for p, tmpl in templates.items():
            if p in prim.array_seqs:
                seq = op.args.get(p)
                if isinstance(seq, str) and seq.isidentifier() and seq in self.act.active:  # np.stack(xs)
                    tmp = self.names.fresh(f"{p}_bars")
                    lines.append(f"{pad}{tmp} = {instantiate(tmpl, mapping)}")
                    self.accumulate(seq, f"pack_like({seq}, {tmp})", lines, pad, defined)
                if not isinstance(seq, list):
                    continue
                parts = instantiate(tmpl, mapping)
                tmp = self.names.fresh(f"{p}_bars")
                lines.append(f"{pad}{tmp} = {parts}")
                for k, e in enumerate(seq):  # a name, or a nested literal (`np.array([[a, b], [c, d]])`)
                    self.element_adjoint(cst.parse_expression(e), f"{tmp}[{k}]", lines, pad, defined)
                continue
            a = op.operands.get(p)
            lit = _literal_container(op.args.get(p)) if a is None else None
            if lit is not None and any(n in self.act.active for n in names_in(lit)):
                # `(a, b)` as an array: element k of its cotangent into the k-th name
                tmp = self.names.fresh(f"{p}_bar")
                lines.append(f"{pad}{tmp} = {instantiate(tmpl, mapping)}")
                self.element_adjoint(lit, tmp, lines, pad, defined)
                continue
            if a is None or a not in self.act.active:
                continue
            self.accumulate(a, instantiate(tmpl, mapping), lines, pad, defined)

    # -- helper calls ---------------------------------------------------------------------------
    def call_bound(self, op: Op) -> tuple[NormalizedFunction, list[str], dict[str, str]]:
        callee = self.program.functions[op.callee]  # type: ignore[index]
        params = all_params(callee)
        bound = dict(zip(params, op.call_args))
        bound.update(op.call_kwargs)
        return callee, params, bound

    def call_active(self, op: Op) -> tuple[str, ...]:
        """The callee's params that receive active values, if any cotangent flows back through them."""
        callee, params, bound = self.call_bound(op)
        active = tuple(p for p in params if p in bound and any(
            n in self.act.active for n in names_in(_expr(bound[p]))))
        if not active:
            return ()
        pair = vjp_helper(self.program, callee, active, self.helpers, self.out_lines, self.max_iters)
        if set(HELPER_ZEROS.get(pair, ())) >= set(active):
            return ()  # nothing flows back (e.g. ones_like(x)): call the plain function
        return active

    def call_names(self, op: Op) -> tuple[str, str]:
        callee, _, _ = self.call_bound(op)
        return vjp_helper(self.program, callee, self.call_active(op), self.helpers, self.out_lines, self.max_iters)

    def call_adjoint(self, op: Op, g: str, lines: list[str], pad: str, defined: set[str]) -> None:
        active = self.call_active(op)
        if not active:
            return
        _, bwd = self.call_names(op)
        callee, params, bound = self.call_bound(op)
        zeros = HELPER_ZEROS.get(self.call_names(op), ())
        nonzero = [p for p in active if p not in zeros]
        if not nonzero:
            lines.append(f"{pad}{bwd}({g}, {self.tape})")
            return
        tmp = self.names.fresh(f"{op.callee}_bars")
        lines.append(f"{pad}{tmp} = {bwd}({g}, {self.tape})")
        for k, p in enumerate(nonzero):
            node = cst.parse_expression(bound[p])
            if isinstance(node, (cst.Tuple, cst.List)):  # a literal tuple argument: its elements
                for j, e in enumerate(node.elements):
                    n = code(e.value)
                    if n.isidentifier() and n in self.act.active:
                        self.accumulate(n, f"{tmp}[{k}][{j}]", lines, pad, defined)
            elif bound[p] in self.act.active:
                self.accumulate(bound[p], f"{tmp}[{k}]", lines, pad, defined)

    # -- assembling ---------------------------------------------------------------------------
    def sweeps(self, seed: str | None) -> tuple[list[str], list[str], str, set[str]]:
        """(primal lines, adjoint lines, output atom, defined cotangents after)."""
        # pass 1 finds which saved names the adjoint reads and which calls get no cotangent;
        # pass 2 saves only those, and calls those plainly
        taken = set(self.names.taken)
        for _ in range(2):
            self.bar = {}
            self.names.taken = set(taken)
            self.pushed = {}
            primal: list[str] = []
            self.final_bound = set(self.params)
            self.declared: set[str] = set()
            self.partial: set[str] = set()
            self.primal(self.body, 1, primal, self.final_bound)
            primal[:0] = [f"    {n} = None" for n in sorted(self.declared - set(self.params))]
            out = code(self.ret.value) if self.ret.value is not None else "None"
            adj: list[str] = []
            defined: set[str] = set()
            if seed is not None:
                self.seed(out, seed, adj, defined)
            self.adjoint(self.body, 1, adj, defined)
            # finish_bars reads a parameter that got no cotangent (zeros_like(p)): its value on entry
            needed = _reads(adj) | {p for p in self.active_params if p not in defined}
            unset = sorted((self.partial & needed) - self.final_bound - self.declared)
            primal[:0] = [f"    {n} = UNSET" for n in unset]
            self.final_bound.update(unset)
            self.restore = {n for n in self.saved if n in needed}
        return primal, adj, out, defined

    def seed(self, out: str, g: str, adj: list[str], defined: set[str]) -> None:
        node = cst.parse_expression(out)
        if isinstance(node, cst.Name):
            if out in self.act.active:
                adj.append(f"    {self.bname(out)} = {self.seed_expr or g}")
                defined.add(out)
        else:
            self.seed_parts(node, g, adj, defined)

    def seed_parts(self, node: cst.BaseExpression, g: str, adj: list[str], defined: set[str]) -> None:
        """``return a, {"h": h, "pair": (s, m)}``: each returned name gets its part of ``g``."""
        if isinstance(node, cst.Name):
            if node.value in self.act.active:
                self.accumulate(node.value, g, adj, "    ", defined)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for k, e in enumerate(node.elements):
                self.seed_parts(e.value, f"{g}[{k}]", adj, defined)
        elif isinstance(node, cst.Dict) and all(isinstance(e, cst.DictElement) for e in node.elements):
            for de in node.elements:
                self.seed_parts(de.value, f"{g}[{code(de.key)}]", adj, defined)  # type: ignore[attr-defined]
        elif any(v in self.act.active for v in names_in(node)):
            raise DifferentiationError(f"cannot differentiate `return {code(node)}` yet",
                                       hint="assign the result to a variable and return that")

    def finish_bars(self, adj: list[str], defined: set[str], skip_zeros: bool = False) -> list[str]:
        """Cotangent names of the active params (zeros where nothing flowed back).

        With ``skip_zeros`` (helpers), params without any cotangent are left out and
        recorded in ``self.zero_params`` so callers skip them.
        """
        outs = []
        self.zero_params = [p for p in self.active_params if p not in defined]
        for p in self.active_params:
            if p not in defined:
                if skip_zeros:
                    continue
                adj.append(f"    {self.bname(p)} = zeros_like({p})")
            outs.append(self.bname(p))
        return outs


# calls whose result carries no derivative even when they read an active value (shapes, types, counts)
_STATIC_RESULT_CALLS = {
    "len", "range", "isinstance", "type", "int", "bool", "float", "tuple", "list", "enumerate", "zip",
    "reversed", "str", "repr", "np.shape", "np.ndim", "np.size", "np.result_type", "np.dtype", "dict",
    "slice", "sorted", "divmod", "min", "max", "any", "all", "map", "is_tree",
    "zeros_like", "ones_like",  # (srcjax.adjoint's: classify_container)
}


def _saved_iterable(it: cst.BaseExpression) -> str:
    """What the primal keeps of a loop's iterable for the adjoint: iterators become lists."""
    if not isinstance(it, cst.Call):
        return code(it)
    f = it.func
    if isinstance(f, cst.Name) and f.value in _ITERATOR_CALLS | {"reversed"} and not (
            f.value == "reversed" and it.args and _call_name(it.args[0].value) == "range") or \
            isinstance(f, cst.Attribute) and f.attr.value in ("items", "values", "keys"):
        return f"list({code(it)})"
    return code(it)


def inline_calls_in_data_branches(program: Program, nf: NormalizedFunction, body: list[Any],
                                   depth: int = 0) -> list[Any]:
    """Helper calls inside ``if``s on data, written out in place (reverse mode).

    A helper's forward half pushes its saved values on the tape, which a branch
    on data cannot do; its statements in the branch save them like the
    branch's own (in names both branches bind).
    """
    from ..frontend.functionalize import DYNAMIC, STATIC, BindingTimes

    def inlinable(v: cst.BaseExpression) -> bool:  # a helper call; custom rules keep their own call
        return isinstance(v, cst.Call) and isinstance(v.func, cst.Name) and v.func.value in program.functions \
            and custom_rules.custom_callee(program, v.func.value) is None

    calls = [st for st, _ in _walk(body) if isinstance(st, cst.Assign) and inlinable(st.value)]
    if not calls:
        return body
    bta = BindingTimes(nf, nf.plain_fdef, body)
    inl = Inliner(nf, set(names_in(nf.plain_fdef)) | set(names_in(cst.Module(body=body))))
    changed = False

    def block(stmts: Sequence[Any], data: int) -> list[Any]:  # data: the binding time of the tests around
        nonlocal changed
        out: list[Any] = []
        for st in stmts:
            if isinstance(st, cst.If):
                d = max(data, bta.of(st.test))
                orelse = st.orelse
                if isinstance(orelse, cst.If):
                    orelse = block([orelse], d)[0]
                elif orelse is not None:
                    orelse = orelse.with_changes(body=orelse.body.with_changes(body=block(orelse.body.body, d)))
                out.append(st.with_changes(body=st.body.with_changes(body=block(st.body.body, d)), orelse=orelse))
            elif isinstance(st, (cst.For, cst.While)):
                out.append(st.with_changes(body=st.body.with_changes(body=block(st.body.body, data))))
            elif data != STATIC and isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 and \
                    isinstance(st.body[0], cst.Assign) and inlinable(st.body[0].value):
                inlined = inline_one(st.body[0], st, data)
                out += inlined if inlined is not None else [st]
                changed = changed or inlined is not None
            else:
                out.append(st)
        return out

    def inline_one(a: cst.Assign, line: Any, data: int) -> list[Any] | None:
        op = classify(a.value, program, nf)
        if op.kind != "call":  # a srcjax.adjoint helper in derivative code (zeros_like, tree_add, ...)
            return None
        callee = program.functions[op.callee]  # type: ignore[index]
        where = f"a call of `{callee.name}` inside an `if` on array data"
        if not _reads_same_globals(program, callee, nf) or callee.source.closure or depth > 8 or \
                callee is nf or _find_nested_def(callee.plain_fdef.body) is not None:
            if data != DYNAMIC:
                return None  # the test may turn out static (recursion on a Python int): call it as usual
            raise DifferentiationError(f"reverse mode through {where} (a helper from another module, a closure, "
                                       "or recursion) is not supported yet", span=nf.spans.get(id(line)),
                                       hint=f"call {callee.name} before the `if` and select the result with "
                                            "np.where, or move the `if` into the helper")
        ps = callee.plain_fdef.params
        params = [*ps.params, *ps.kwonly_params]  # inlined: every parameter bound by position
        npos = len(ps.params)
        args: list[str] = []
        for k, p in enumerate(params):
            name = p.name.value
            if k < min(len(op.call_args), npos):
                args.append(op.call_args[k])
            elif name in op.call_kwargs:
                args.append(op.call_kwargs[name])
            elif p.default is not None:
                args.append(code(p.default))
            else:
                raise DifferentiationError(f"{callee.name}() is missing the argument `{name}`",
                                           span=nf.spans.get(id(line)))
        inner = inline_calls_in_data_branches(program, callee, list(callee.plain_fdef.body.body), depth + 1)
        fdef = callee.plain_fdef.with_changes(body=callee.plain_fdef.body.with_changes(body=inner),
                                              params=ps.with_changes(params=params, kwonly_params=[],
                                                                     star_arg=cst.MaybeSentinel.DEFAULT))
        return inl.inline(fdef, args, code(a.targets[0].target), line)

    new = block(body, STATIC)
    return new if changed else body


def _local_sequences(body: Sequence[Any]) -> set[str]:
    """Names bound to lists or tuples built here: literals (``items = []``), and ``tuple``/``list``
    of those."""
    out: set[str] = set()
    for st, _ in _walk(body):
        if isinstance(st, cst.Assign) and len(st.targets) == 1 and isinstance(st.targets[0].target, cst.Name):
            v = st.value
            if isinstance(v, (cst.List, cst.Tuple)) or (
                    _call_name(v) in ("tuple", "list") and len(v.args) == 1  # type: ignore[attr-defined]
                    and isinstance(v.args[0].value, cst.Name) and v.args[0].value.value in out):  # type: ignore[attr-defined]
                out.add(st.targets[0].target.value)
    return out


def _is_append(st: cst.CSTNode) -> bool:
    return isinstance(st, cst.Expr) and isinstance(st.value, cst.Call) and \
        isinstance(st.value.func, cst.Attribute) and st.value.func.attr.value == "append" and \
        isinstance(st.value.func.value, cst.Name) and len(st.value.args) == 1


def _first_reads(body: Sequence[Any]) -> dict[str, int]:
    """Lists appended to -> the program-order position (of :func:`_walk`) of their first read that is
    not an append (``b = items[0]``, ``for v in items``, ``np.stack(items)``)."""
    lists = {code(st.value.func.value) for st, _ in _walk(body) if _is_append(st)}
    out: dict[str, int] = {}
    for k, (st, _) in enumerate(_walk(body)):
        if isinstance(st, cst.Assign):
            node: Any = st.value
        elif isinstance(st, (cst.If, cst.While)):
            node = st.test
        elif isinstance(st, cst.For):
            node = st.iter
        elif _is_append(st):
            node = st.value.args[0].value
        else:
            node = st
        for n in names_in(node):
            if n in lists and n not in out:
                out[n] = k
    return out


def _reads_same_globals(program: Program, callee: NormalizedFunction, nf: NormalizedFunction) -> bool:
    """Whether ``callee``'s body, written out inside ``nf``, reads the same globals there: one module, or
    a helper of :mod:`srcjax.adjoint` (``unbroadcast``) called by derivative code, which imports what it reads."""
    if callee.source.globals is nf.source.globals:
        return True
    fdef = callee.plain_fdef
    local = {p.name.value for p in fdef.params.params} | set(assigned_names(fdef.body.body)) | set(program.functions)
    mine, theirs = callee.source.globals, nf.source.globals
    return all(theirs.get(n) is mine[n] for n in set(names_in(fdef.body)) - local if n in mine)


def _find_nested_def(node: cst.CSTNode) -> cst.FunctionDef | None:
    found: list[cst.FunctionDef] = []

    class V(Visitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            found.append(n)
            return False

    V().walk(node)
    return found[0] if found else None


def _upward_exposed(stmts: Sequence[Any]) -> set[str]:
    """Names the statements may read before assigning them (an ``if`` assigns what both
    branches assign; a loop's body may run zero times)."""
    return _exposed(stmts, set())[0]


def _exposed(stmts: Sequence[Any], killed: set[str]) -> tuple[set[str], set[str]]:
    exposed: set[str] = set()
    killed = set(killed)
    for s in stmts:
        if isinstance(s, cst.SimpleStatementLine):
            for small in s.body:
                if isinstance(small, cst.Assign):
                    exposed |= set(names_in(small.value)) - killed
                    for t in small.targets:
                        killed |= set(target_names(t.target))
                else:
                    exposed |= set(names_in(small)) - killed
        elif isinstance(s, cst.If):
            exposed |= set(names_in(s.test)) - killed
            e1, k1 = _exposed(s.body.body, killed)
            other = [] if s.orelse is None else [s.orelse] if isinstance(s.orelse, cst.If) else s.orelse.body.body
            e2, k2 = _exposed(other, killed)
            exposed |= e1 | e2
            killed = k1 & k2
        elif isinstance(s, cst.For):
            exposed |= set(names_in(s.iter)) - killed
            exposed |= _exposed(s.body.body, killed | set(target_names(s.target)))[0]
        elif isinstance(s, cst.While):
            exposed |= set(names_in(s.test)) - killed
            exposed |= _exposed(s.body.body, killed)[0]
        else:
            exposed |= set(names_in(s)) - killed
    return exposed, killed


def _free_of_loop_targets(module: cst.Module) -> set[str]:
    """Names in ``module`` except where a ``for`` around them binds them (an adjoint loop rebinds
    the primal loop's target: ``for i, p in reversed(...)``), so they need not be saved."""
    out: set[str] = set()
    bound: list[set[str]] = []

    class V(Visitor):
        def visit_Name(self, n: cst.Name) -> None:
            if not any(n.value in b for b in bound):
                out.add(n.value)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            self.walk(n.value)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            self.walk(n.value)
            return False

        def visit_For(self, n: cst.For) -> bool:
            self.walk(n.iter)
            bound.append(set(target_names(n.target)))
            self.walk(n.body)
            bound.pop()
            return False

    V().walk(module)
    return out


def _mentions(template: str, name: str) -> bool:
    return name in names_in(_expr(template))


def _reads(lines: list[str]) -> set[str]:
    """Names read (not just assigned) by these statements."""
    if not lines:
        return set()
    return names_read(_dedent_block("\n".join(lines)))


def _dedent_block(text: str) -> str:
    import textwrap

    return textwrap.dedent(text) + "\n"


HELPER_ZEROS: dict[tuple[str, str], tuple[str, ...]] = {}


def vjp_helper(program: Program, nf: NormalizedFunction, active: tuple[str, ...],
               helpers: dict[tuple[str, tuple[str, ...]], tuple[str, str]], out_lines: list[str],
               max_iters: int | None = None) -> tuple[str, str]:
    key = (nf.name, active)
    names = helpers.get(key)
    if names is not None:
        return names
    taken = {n for pair in helpers.values() for n in pair} | set(program.functions)
    nm = Names(taken)
    fwd, bwd = nm.fresh(f"{nf.name}_fwd"), nm.fresh(f"{nf.name}_bwd")
    helpers[key] = (fwd, bwd)
    v = VJP(program, nf, active, helpers, out_lines, max_iters)
    out_bar = v.names.fresh("out_bar")
    primal, adj, out, defined = v.sweeps(out_bar)
    bars = v.finish_bars(adj, defined, skip_zeros=True)
    HELPER_ZEROS[(fwd, bwd)] = tuple(v.zero_params)
    # values the adjoint reads that the caller does not have: saved at the end of the forward half
    adj_reads = _free_of_loop_targets(cst.parse_module(_dedent_block("\n".join(adj)))) if adj else set()
    assigned = {n for s, _ in _walk(v.body) if isinstance(s, cst.Assign)
                for t in s.targets for n in target_names(t.target)}
    assigned |= {n for s, _ in _walk(v.body) if isinstance(s, cst.For) for n in target_names(s.target)}
    assigned |= set(v.loop_iters.values()) | set(v.counters.values())
    # and the names the primal half binds for the adjoint: a value saved inside an `if` on data (`g_before`)
    assigned |= {sv for sv in v.pushed.values() if not sv.endswith(".pop()")}
    # the forward half saves everything the backward half reads, parameters included: the
    # caller restores its own variables only after the backward half has popped these
    residuals = sorted(n for n in adj_reads if (n in assigned or n in v.params) and n not in v.bar.values()
                       and n != out_bar and n != v.tape)
    tape = v.tape
    res = ", ".join(residuals)
    unbound = [n for n in residuals if n not in v.final_bound]
    fwd_lines = [f"def {fwd}({signature(nf, [tape])}):"]
    fwd_lines += [f"    {n} = UNSET" for n in unbound]  # bound on some paths only (read under the same test)
    fwd_lines += primal
    if residuals:
        fwd_lines.append(f"    {tape}.append(({res},))")
    fwd_lines.append(f"    return {out}")
    bwd_lines = [f"def {bwd}({out_bar}, {tape}):"]
    if residuals:
        bwd_lines.append(f"    {res}, = {tape}.pop()" if len(residuals) == 1 else f"    {res} = {tape}.pop()")
    bwd_lines += adj
    bwd_lines.append(f"    return ({', '.join(bars)},)" if bars else "    return ()")
    out_lines.append("\n".join(fwd_lines) + "\n")
    out_lines.append("\n".join(bwd_lines) + "\n")
    return fwd, bwd


def _record_origins(helpers: dict[Any, Any], origins: dict[str, str] | None) -> None:
    """``origins[generated helper] = the program function it derives from`` (whose namespace it needs)."""
    if origins is not None:
        for (fname, _), names in helpers.items():
            for n in names if isinstance(names, tuple) else (names,):
                origins[n] = fname


def grad_source(program: Program, argnums: Sequence[int], name: str, *, value: bool, has_aux: bool,
                single: bool = True, origins: dict[str, str] | None = None, max_iters: int | None = None) -> str:
    """Source of ``def name(params...)`` returning the gradient (and value/aux)."""
    nf = program.entry
    params = [p.name.value for p in nf.plain_fdef.params.params]
    active = [params[i] for i in argnums]
    helpers: dict[tuple[str, tuple[str, ...]], tuple[str, str]] = {}
    extra: list[str] = []
    v = VJP(program, nf, active, helpers, extra, max_iters)
    seed_holder = v.names.fresh("out_bar")
    out_node = v.ret.value
    if has_aux:
        if not isinstance(out_node, (cst.Tuple, cst.List)) or len(out_node.elements) != 2:
            raise DifferentiationError("has_aux=True needs the function to return a pair (output, aux)")
        main = code(out_node.elements[0].value)
        aux = code(out_node.elements[1].value)
    else:
        main, aux = code(out_node) if out_node is not None else "None", None
    main_node = cst.parse_expression(main)
    if isinstance(main_node, (cst.Tuple, cst.List, cst.Dict, cst.Set)):  # a container: never a scalar
        kind = {cst.Tuple: "a tuple", cst.List: "a list", cst.Dict: "a dict", cst.Set: "a set"}[type(main_node)]
        raise ShapeError(  # located at the user's return by autodiff (which knows the function)
            f"srcjax.{'value_and_grad' if value else 'grad'} needs a scalar output, but {nf.name} returns {kind}"
            + (" as its output (the first of has_aux's pair)" if has_aux else ""),
            hint="reduce it to a scalar (np.sum, np.mean), or use srcjax.jacrev or srcjax.vjp for a "
                 "non-scalar output" + ("" if has_aux else "; has_aux=True if the rest is auxiliary data"))
    v.ret = cst.Return(value=main_node)
    v.seed_expr = f"ones_like({main})"
    primal, adj, out, defined = v.sweeps(seed_holder)
    bars = v.finish_bars(adj, defined)
    lines = [f"def {name}({signature(nf)}):"]  # the same parameters, defaults included
    if any(v.tape in ln for ln in primal + adj) or helpers:
        lines.append(f"    {v.tape} = []")
    lines += primal
    lines.append(f"    assert np.ndim({main}) == 0 and is_float({main}), "
                 "'grad requires a real scalar output; use jacrev or vjp'")
    if value or has_aux:
        kept = _kept(v, [main, aux], adj, lines)
        main, aux = kept[0] or main, kept[1]
    lines += adj
    g = bars[0] if single else "(" + ", ".join(bars) + ",)"
    result = g
    if has_aux:
        result = f"{result}, {aux}"
        if value:
            result = f"({main}, {aux}), {g}"
    elif value:
        result = f"{main}, {g}"
    lines.append(f"    return {result}")
    _record_origins(helpers, origins)
    return "\n".join(lines) + "\n" + ("\n\n" + "\n\n".join(extra) if extra else "")


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


def _kept(v: VJP, exprs: list[str | None], adj: list[str], lines: list[str]) -> list[str | None]:
    """``exprs`` (results returned after the adjoint) reading copies of the names the adjoint
    restores from the tape (``s`` of a loop ``s = s + ...``: the adjoint rewinds it)."""
    rebound: set[str] = set()
    if adj:
        for st, _ in _walk(cst.parse_module(_dedent_block("\n".join(adj))).body):
            if isinstance(st, cst.Assign):
                rebound.update(n for t in st.targets for n in target_names(t.target))
            elif isinstance(st, cst.For):
                rebound.update(target_names(st.target))
    mapping: dict[str, str] = {}
    for e in exprs:
        for n in names_in(_expr(e)) if e is not None else []:
            if n in rebound and n not in mapping:
                mapping[n] = v.names.fresh(f"{n}_value")
                lines.append(f"    {mapping[n]} = {n}")
    return [code(cst.parse_expression(e).visit(RenameNames(mapping)))  # type: ignore[arg-type]
            if e is not None and mapping else e for e in exprs]


def vjp_source(program: Program, argnums: Sequence[int], name: str, origins: dict[str, str] | None = None,
               max_iters: int | None = None) -> str:
    """Source of ``def name(params..., out_bar)`` returning ``(out, cotangents)``."""
    nf = program.entry
    params = [p.name.value for p in nf.plain_fdef.params.params]
    active = [params[i] for i in argnums]
    helpers: dict[tuple[str, tuple[str, ...]], tuple[str, str]] = {}
    extra: list[str] = []
    v = VJP(program, nf, active, helpers, extra, max_iters)
    out_bar = v.names.fresh("out_bar")
    primal, adj, out, defined = v.sweeps(out_bar)
    bars = v.finish_bars(adj, defined)
    lines = [f"def {name}({signature(nf, [out_bar])}):", f"    {v.tape} = []"] + primal
    out = _kept(v, [out, None], adj, lines)[0] or out
    lines += adj
    lines.append(f"    return {out}, ({', '.join(bars)},)")
    _record_origins(helpers, origins)
    return "\n".join(lines) + "\n" + ("\n\n" + "\n\n".join(extra) if extra else "")


def jvp_source(program: Program, argnums: Sequence[int], name: str, origins: dict[str, str] | None = None) -> str:
    nf = program.entry
    params = [p.name.value for p in nf.plain_fdef.params.params]
    active = [params[i] for i in argnums]
    helpers: dict[tuple[str, tuple[str, ...]], str] = {}
    extra: list[str] = []
    text = JVP(program, nf, active, name, helpers, extra).build()
    _record_origins(helpers, origins)
    return text + ("\n\n" + "\n\n".join(extra) if extra else "")
