"""Specialize and lower: ANF program + argument specs -> one StableHLO module.

An interpreter over the normalized source (the only IR). Values are either
*static* (Python ints, tuples, dtypes, shapes: evaluated right here, exactly
as Python would) or *dynamic* (:class:`HloValue`: an SSA value with its
abstract value). This single walk is binding-time analysis, abstract
evaluation and lowering at once:

- static ``if``/``for``/``while`` are decided or unrolled here;
- every primitive application runs the primitive's abstract-evaluation rule
  (shape/dtype errors are raised here, pointing at the user's line) and then
  its lowering rule, which appends StableHLO to the function being built;
- user helper functions are interpreted in place (inlined);
- a Python int/bool argument that reaches a place needing a static value
  raises :class:`NeedStatic`; the caller re-specializes with it static.

Control flow on dynamic values raises :class:`DynamicControlFlowError`.

The interpreter is this module; the rest of ``lower/`` holds what it calls on:
:mod:`.values` (its values and signals), :mod:`.apply` (applying a primitive),
:mod:`.python_builtins` (Python's builtins and operators), and the control flow on
array data it turns into StableHLO regions: :mod:`.regions`, :mod:`.branches`
(``if``, ``lax.cond``/``switch``), :mod:`.loops` (``while``, ``lax.while_loop``/
``fori_loop``/``scan``), :mod:`.rolled_for` (``for`` over a static range).
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import itertools
import math
import sys
import types
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import libcst as cst
import numpy as np

from .. import pytree, warm_cache
from ..adjoint import UNSET
from ..core import (
    PYTHON_SCALAR_DTYPES,
    STATIC_EVAL_ERRORS,
    ArgumentError,
    DTypeError,
    DynamicControlFlowError,
    InternalError,
    NeedStatic,
    ShapedArray,
    ShapeError,
    Span,
    StaticValueError,
    TranspileError,
    UnknownFunctionError,
    UnsupportedSyntaxError,
    assertion_failed,
    canonical_dtype,
)
from ..custom import check_rule_result, rule_role, transpose_error
from ..frontend import callees
from ..frontend.locations import user_span
from ..frontend.names import names_in
from ..frontend.normalize import NormalizedFunction
from ..frontend.program import Program
from ..frontend.resolve import LIBRARY_MODULES, composite, is_user_function, unwrap
from ..lax_special import MATH_ON_ARRAYS
from ..primitives import registry
from ..primitives.elementwise import OPERATOR_PRIMS
from ..primitives.registry import Primitive
from . import branches, host_print, loops, python_errors, regions, replicas, rolled_for, shardy, static_calls
from .apply import apply_primitive
from .hlo import TARGET, FuncBuilder, HloValue, module_text
from .literal_evals import LiteralEvals
from .python_builtins import BINOPS, BUILTIN_RULES, CMPOPS, CONTAINER_BUILTINS, UNOPS, accepts_dynamic
from .returned import mlir_loc, return_span, split_result
from .signatures import plain_names, signature_of
from .values import (
    MAX_UNROLL,
    ROLL_ABOVE,
    TINY_TRIP,
    Break,
    Continue,
    LocalFunction,
    LoopOrigin,
    Return,
    StaticArange,
    Undefined,
    contains_dynamic,
    is_dynamic,
    is_loop_origin,
    item_at_counter,
    static_arange,
)

_IN_PLACE = {"sort": "x = np.sort(x, axis)", "partition": "x = np.partition(x, kth, axis)",
             "fill": "x = np.full_like(x, value)", "resize": "x = np.resize(x, shape)", "put": "x[idx] = values"}
"""Array methods that change the array in place, and what to write instead."""


def _one_bool(v: Any) -> bool:
    """A boolean scalar computed from data (a comparison's result)."""
    return type(v) is HloValue and v.aval.shape == () and v.aval.dtype == np.bool_


@dataclass
class ArgSpec:
    """How an entry argument enters the program."""

    static: bool
    value: Any = None  # the static value
    aval: ShapedArray | None = None  # for dynamic leaves (pytree of these for containers)
    default: bool = False  # a Python float the call left at its default: made static where its value is needed


_CONSTANT_NAMES = {"None": None, "True": True, "False": False}
MAX_DEPTH = 64


class Specializer(LiteralEvals):
    """Interprets a :class:`Program` for given argument specs, emitting StableHLO."""

    def __init__(self, program: Program, name: str = "main") -> None:
        self.program = program
        self.assign_stmt: cst.Assign | None = None  # the assignment being run (its names: regions.out_names)
        self.envs: list[dict[str, Any]] = []  # the scopes of the functions being interpreted
        self.on_branch: list[tuple[str, int]] = []  # (condition, branch) of the data branches being traced
        self.row_contexts: list[rolled_for.RowContext] = []  # rolled loops being traced (innermost last)
        self.fn_stack: list[NormalizedFunction] = []
        self.rule_calls: dict[int, list[Any]] = {}  # custom_vjp -> arguments of its fwd calls (checks bwd)
        self.b: FuncBuilder | None = None
        self.name = name
        self.here: Span | None = None  # the statement being run (where a call to a helper is made)
        # prints run in program order: each print's host call takes the last one's result (an i32 scalar,
        # carried through loops and branches: see host_print.ordered); None when the program has no print
        self.print_dep: HloValue | None = None
        # id of a function's spans (kept by it) -> id of a statement -> (its span, its MLIR location or None)
        self.located: dict[int, dict[int, tuple[Span | None, str | None]]] = {}

    # -- entry -----------------------------------------------------------------
    def lower(self, specs: list[ArgSpec]) -> tuple[str, list[ShapedArray], pytree.TreeDef, list[Any]]:
        """Returns (module text, output avals, output tree, output leaves template).

        The template holds static output leaves as themselves and ``None`` where a dynamic output (in order) goes.
        """
        arg_avals: list[ShapedArray] = []
        for s in specs:
            if not s.static:  # (strings inside a container are static leaves)
                leaves, _ = pytree.flatten(s.aval, is_leaf=lambda x: isinstance(x, ShapedArray), nodes=True)
                arg_avals += [a for a in leaves if isinstance(a, ShapedArray)]
        rep = replicas.plan_for(self.program)  # a pmapped program: @main takes and gives each device's piece
        self.b = FuncBuilder("main", rep.main_avals(arg_avals) if rep else arg_avals)
        if host_print.has_print(self.program):
            self.print_dep = self.b.full(0, (), np.dtype(np.int32))
        it = iter(rep.per_device(self.b) if rep else self.b.args)
        entry = self.program.entry
        params = inspect.signature(entry.fn).parameters
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for pname, s in zip(params, specs):
            if s.static:
                value = s.value
            else:
                leaves, tree = pytree.flatten(s.aval, is_leaf=lambda x: isinstance(x, ShapedArray), nodes=True)
                vals = []
                for a in leaves:
                    if not isinstance(a, ShapedArray):
                        vals.append(a)
                        continue
                    v = next(it)
                    if a.weak_type and (a.dtype.kind in "bi" or s.default):
                        v.aval = a.update(origin=frozenset({pname}))
                    vals.append(v)
                value = pytree.unflatten(tree, vals)
            if params[pname].kind == inspect.Parameter.KEYWORD_ONLY:
                kwargs[pname] = value
            else:
                args.append(value)
        result = self.call_function(entry, args, kwargs)
        with contextlib.suppress(pytree.UnsortableKeys):  # (split_result says where, at the return)
            leaves, rtree = pytree.flatten(result, nodes=True)
            if any(isinstance(v, StaticArange) for v in leaves):  # (an output array, as np.arange's was)
                result = pytree.unflatten(rtree, [self.lift(np.asarray(v)) if isinstance(v, StaticArange) else v
                                                  for v in leaves])
        outs, template, tree = split_result(result, lambda: return_span(entry))
        if rep is not None:
            return rep.module(self.b, result, outs, tree, template)
        plan = shardy.CURRENT.get()
        if plan is None or not plan.sharded:
            func = self.b.finish(outs)
            return module_text([func]), [o.aval for o in outs], tree, template
        out_shardings = plan.outputs(template, [o.aval for o in outs])
        func = self.b.finish(outs, arg_attrs=[plan.attr(s, a.ndim) for s, a in zip(plan.in_leaves, arg_avals)],
                             result_attrs=[plan.attr(s, o.aval.ndim) for s, o in zip(out_shardings, outs)])
        return module_text([func], num_partitions=plan.num_partitions, preamble=plan.preamble()), \
            [o.aval for o in outs], tree, template

    # -- functions ---------------------------------------------------------------
    def call_function(self, nf: NormalizedFunction, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        if len(self.fn_stack) >= MAX_DEPTH:
            raise UnsupportedSyntaxError(
                f"call depth exceeds {MAX_DEPTH} (recursion on data is not supported)",
                hint="recursion must end on a static condition (shapes, Python ints)")
        plain = plain_names(nf.fn)
        if plain is not None and not kwargs and len(args) == len(plain):  # (most calls: every parameter given)
            arguments = dict(zip(plain, args))
        else:
            try:
                bound = signature_of(nf.fn)[0].bind(*args, **kwargs)
            except TypeError as e:
                raise ArgumentError(f"{nf.name}(): {e}") from None
            bound.apply_defaults()
            arguments = dict(bound.arguments)
        if (ran := static_calls.run(nf, args, kwargs)) is not static_calls.NOT_RUN:
            return ran  # (a structural helper's static plan: Python runs it, as this would)
        role = rule_role(nf.fn)
        site = self.here
        try:
            result = self.run_body(nf, nf.fdef.body.body, arguments)
        except (ShapeError, DTypeError) as e:
            if role is None or role[0] != "transpose":
                e.called_from(site)
                raise
            raise transpose_error(role[1], e) from e
        except TranspileError as e:  # an error inside the callee: its place, and the call that led there
            e.called_from(site)
            raise
        if role is not None:  # a custom_vjp/custom_jvp rule: its result must follow the convention
            check_rule_result(role[0], role[1], return_span(nf), args, kwargs, result, self.rule_calls)
        return result

    def run_body(self, nf: NormalizedFunction, body: Sequence[Any], env: dict[str, Any]) -> Any:
        """Execute a function body (``nf``'s, or a nested ``def``'s) in ``env``; its return value."""
        self.fn_stack.append(nf)
        self.envs.append(env)
        loc = self.b.loc if self.b is not None else None
        try:
            self.exec_block(body, env)
        except Return as r:
            return r.value
        finally:
            self.fn_stack.pop()
            self.envs.pop()
            if self.b is not None:  # the rest of the calling statement is the caller's line
                self.b.loc = loc
        return None

    @property
    def nf(self) -> NormalizedFunction:
        return self.fn_stack[-1]

    # -- statements ---------------------------------------------------------------
    def exec_block(self, stmts: Sequence[Any], env: dict[str, Any]) -> None:
        outer = self.here
        spans = self.nf.spans  # (the function running this block throughout: calls pop what they push)
        located = self.located.get(id(spans))
        if located is None:
            located = self.located[id(spans)] = {}
        for s in stmts:
            sid = id(s)
            if sid in located:  # (a statement run again: a helper's, a loop's)
                span, loc = located[sid]
            else:  # derivative code: the user's line; srcjax's helpers: the caller's (None)
                span = spans.get(sid)
                loc = None if span is None or (u := user_span(span)) is None else mlir_loc(u)
                located[sid] = span, loc
            if loc is not None and self.b is not None:
                self.b.loc = loc
            self.here = span or outer
            try:
                self.exec_stmt(s, env)
            except (Return, Break, Continue, NeedStatic):
                raise
            except TranspileError as e:
                if e.at_caller and e.span is None and span is not None and user_span(span) is None:
                    raise  # (in srcjax's library code: the caller's statement places it)
                if e.span is None and e.note is None and isinstance(e, (ShapeError, DTypeError)):
                    e.note = self.operand_note(s, env)
                raise e.with_span(span) from e.__cause__
            except (RecursionError, MemoryError):  # (not a bug of srcjax's: the program's size, the machine's)
                raise
            except Exception as e:  # a bug: report it where it happened
                raise InternalError(f"internal error: {type(e).__name__}: {e}", span=span,
                                    hint="this is a bug in srcjax; please report it with this program") from e
            finally:
                self.here = outer

    def operand_note(self, s: cst.CSTNode, env: dict[str, Any]) -> str | None:
        """'x: f32[7,3], w: f32[4,2]' for the user's variables read by statement ``s``."""
        if type(s) is not cst.SimpleStatementLine:
            return None
        seen = list(dict.fromkeys(names_in(s, skip_targets=True)))
        parts = [f"{n}: {env[n].aval.str_short()}" for n in seen
                 if n in env and is_dynamic(env[n]) and n not in self.nf.temps]
        return ", ".join(parts) if parts else None

    def exec_stmt(self, s: cst.BaseStatement, env: dict[str, Any]) -> None:
        # (exact types here and below: libcst's node classes are final; isinstance against them (ABCMeta) ~5x)
        if type(s) is cst.SimpleStatementLine:
            for small in s.body:
                self.exec_small(small, env)
        elif type(s) is cst.If:
            test = self.eval(s.test, env)
            if regions.is_data(self, test):
                branches.data_if(self, s, test, env)
            elif self.truth(test, "an `if` condition"):
                self.exec_block(s.body.body, env)
            elif type(s.orelse) is cst.Else:
                self.exec_block(s.orelse.body.body, env)
            elif type(s.orelse) is cst.If:
                self.exec_block([s.orelse], env)
        elif type(s) is cst.FunctionDef:
            env[s.name.value] = LocalFunction(s, env, self.nf)
        elif type(s) is cst.For:
            seq = self.eval(s.iter, env)
            if isinstance(seq, (reversed, type(reversed([])), type(reversed(())))):
                seq = list(seq)  # (the loop consumes the iterator anyway)
            r = seq if isinstance(seq, range) else rolled_for.int_range(seq)
            if r is not None and len(r) > ROLL_ABOVE.get() and type(s.target) is cst.Name \
                    and rolled_for.roll_for(self, s, r, env):
                return
            it = self.iterate(seq)
            size = python_errors.walked_size(self.nf, s, seq)  # (`d[k + "_sq"] = v` in `for k in d:`)
            for k, item in enumerate(it):
                if k > MAX_UNROLL:
                    raise UnsupportedSyntaxError(f"loop has more than {MAX_UNROLL} iterations to unroll")
                self.bind_target(s.target, item, env)
                try:
                    self.exec_block(s.body.body, env)
                except Break:
                    break
                except Continue:
                    continue
                finally:
                    python_errors.check_walked(s, env, size)
        elif type(s) is cst.While:
            n = 0
            while True:
                test = self.eval(s.test, env)
                if regions.is_data(self, test):
                    loops.data_while(self, s, env)
                    break
                if not self.truth(test, "a `while` condition"):
                    break
                n += 1
                if n > MAX_UNROLL:
                    raise UnsupportedSyntaxError(f"static while loop ran more than {MAX_UNROLL} iterations")
                try:
                    self.exec_block(s.body.body, env)
                except Break:
                    break
                except Continue:
                    continue
        else:
            raise UnsupportedSyntaxError(f"the statement {type(s).__name__} is not supported")

    def exec_small(self, s: cst.BaseSmallStatement, env: dict[str, Any]) -> None:
        if type(s) is cst.Assign:
            self.assign_stmt = s  # (its names are read only for an error message: not walked here)
            value = self.eval(s.value, env)
            for t in s.targets:
                target = t.target
                if type(target) is cst.Name:  # (most assignments: one name)
                    env[target.value] = value
                else:
                    self.bind_target(target, value, env)
        elif type(s) is cst.Return:
            raise Return(self.eval(s.value, env) if s.value is not None else None)
        elif type(s) is cst.Expr:
            self.eval(s.value, env)
        elif type(s) is cst.Assert:
            ok = self.eval(s.test, env)
            if type(ok) is HloValue:
                self.need_static(ok, "an assert condition")
            if not ok:
                raise assertion_failed(self.eval(s.msg, env) if s.msg is not None else None)
        elif type(s) is cst.Raise:
            exc = self.eval(s.exc, env) if s.exc is not None else None
            if isinstance(exc, TranspileError) and self.here is not None and user_span(self.here) is None:
                # srcjax's library code (srcjax.random) refusing an argument: located at its caller's line
                exc.at_caller = True
                raise exc
            raise TranspileError(f"the program raised {exc!r} at transpile time" if not isinstance(
                exc, BaseException) else f"the program raised {type(exc).__name__}: {exc}")
        elif type(s) is cst.Break:
            raise Break()
        elif type(s) is cst.Continue:
            raise Continue()
        elif type(s) is cst.Pass:
            pass
        else:
            raise UnsupportedSyntaxError(f"the statement {type(s).__name__} is not supported")

    def bind_target(self, t: cst.BaseExpression, value: Any, env: dict[str, Any]) -> None:
        if type(t) is cst.Name:
            env[t.value] = value
            return
        if type(t) is cst.Tuple or type(t) is cst.List:
            items = self.iterate(value)
            if len(items) != len(t.elements):
                raise ShapeError(f"cannot unpack {len(items)} values into {len(t.elements)} names",
                                 hint=f"write {len(items)} names on the left, or take part of the value first "
                                      f"(`a, b = v[:2]` of a tuple)")
            for e, v in zip(t.elements, items):
                self.bind_target(e.value, v, env)
            return
        raise UnsupportedSyntaxError(f"assignment to {type(t).__name__} is not supported")

    def iterate(self, v: Any) -> list[Any]:
        if type(v) is HloValue:
            if v.ndim == 0:
                raise ShapeError("iteration over a 0-d array")
            return [self.getitem(v, (i,)) for i in range(v.shape[0])]
        if isinstance(v, (range, tuple, list, str, dict, types.GeneratorType, zip, enumerate, map)) or \
                isinstance(v, (reversed, type({}.items()), type({}.keys()), type({}.values()))):
            return list(v)
        if isinstance(v, np.ndarray):
            return list(v) if v.ndim == 1 and v.dtype.kind in "iu" else [self.lift(x) for x in v]  # (static ints)
        if hasattr(v, "__next__"):  # other static iterators (reversed(range(...)), itertools.count(), ...)
            return list(itertools.islice(v, MAX_UNROLL + 2))  # an endless one stops the unrolled loop there
        raise DTypeError(f"cannot iterate over {type(v).__name__}")

    def truth(self, v: Any, what: str) -> bool:
        if type(v) is HloValue:
            if v.aval.origin:
                raise NeedStatic(v.aval.origin)
            raise DynamicControlFlowError(
                f"{what} depends on array data ({v.aval.str_short()}); data-dependent control flow is not "
                "supported yet",
                hint="decide on shapes or static arguments, or compute both sides and use np.where(cond, a, b)")
        try:
            return bool(v)
        except STATIC_EVAL_ERRORS as e:
            raise StaticValueError(f"{what}: cannot take the truth value of {v!r}: {e}") from None

    def need_static(self, v: Any, what: str) -> Any:
        """``v`` if it holds no dynamic values; otherwise NeedStatic or a clear error."""
        if type(v) is HloValue:
            if v.aval.origin:
                raise NeedStatic(v.aval.origin)
            raise StaticValueError(
                f"{what} must be known at transpile time, but it is computed from array data "
                f"({v.aval.str_short()})",
                hint="compute it from shapes (x.shape), Python numbers, or static arguments")
        if isinstance(v, (tuple, list)):
            for x in v:
                self.need_static(x, what)
        return v

    # -- expressions ---------------------------------------------------------------
    def eval(self, node: cst.BaseExpression, env: dict[str, Any]) -> Any:
        t = type(node)
        evals = self._evals
        if t in evals:  # (a test and a subscript: no call but the method's)
            return evals[t](self, node, env)
        return self._eval_method(t)(self, node, env)

    _evals: dict[type, Callable[..., Any]] = {}  # a node type -> this class's method evaluating it (one per class)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._evals = {}

    def _eval_method(self, t: type) -> Callable[..., Any]:
        method = getattr(type(self), "eval_" + t.__name__, None)
        if method is None:
            raise UnsupportedSyntaxError(f"the expression {t.__name__} is not supported")
        self._evals[t] = method
        return method  # type: ignore[no-any-return]

    def eval_Name(self, node: cst.Name, env: dict[str, Any]) -> Any:
        name = node.value
        if name in env:
            v = env[name]
            if type(v) is Undefined:
                if v.readable(self.on_branch):
                    return v.value  # defined on this branch of an earlier `if` on the same condition
                if v.message:
                    raise StaticValueError(v.message)
                raise UnsupportedSyntaxError(f"{name!r} is assigned on only some paths of {v.why}, and read "
                                             "after it", hint=f"assign {name} before that statement or on every path")
            return v
        if name in _CONSTANT_NAMES:
            return _CONSTANT_NAMES[name]
        bare = registry.PRIMITIVES.get(name)
        if bare is not None and bare.path == name:  # a primitive generated source names bare (index_add)
            return bare.fn
        if name in self.program.functions:
            return self.program.functions[name]
        if name == "np":
            return np
        if name == "math":
            return math
        if name == "srcjax":  # the package as a value (loaded: it is what runs this), not an import
            return sys.modules["srcjax"]
        src = self.nf.source
        if name in src.closure or name in src.globals:
            return self.from_python(warm_cache.read_name(src.closure, src.globals, name))
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise UnknownFunctionError(f"name {name!r} is not defined")

    def from_python(self, v: Any) -> Any:
        if isinstance(v, np.ndarray):
            return self.lift(v)
        return v

    def eval_Tuple(self, node: cst.Tuple, env: dict[str, Any]) -> Any:
        return tuple(self.eval(e.value, env) for e in node.elements)

    def eval_List(self, node: cst.List, env: dict[str, Any]) -> Any:
        return [self.eval(e.value, env) for e in node.elements]

    def eval_Dict(self, node: cst.Dict, env: dict[str, Any]) -> Any:
        out = {}
        for e in node.elements:
            k = self.need_static(self.eval(e.key, env), "a dict key")  # type: ignore[attr-defined]
            out[k] = self.eval(e.value, env)
        return out

    def eval_Attribute(self, node: cst.Attribute, env: dict[str, Any]) -> Any:
        base = self.eval(node.value, env)
        attr = node.attr.value
        if base is UNSET:  # (a record's field of a value no path computed: vmap's join of it, field by field)
            return base
        if type(base) is HloValue:
            a = base.aval
            if attr == "shape":
                return a.shape
            if attr == "ndim":
                return a.ndim
            if attr == "dtype":
                return a.dtype
            if attr == "size":
                return a.size
            if attr == "T":
                return self.apply(registry.PRIMITIVES["transpose"], [base], {})
            if attr in _IN_PLACE:
                raise UnsupportedSyntaxError(f"the array method .{attr}() changes the array in place; compiled "
                                             "code is a pure function",
                                             hint=f"assign a new array instead: {_IN_PLACE[attr]}")
            raise UnknownFunctionError(f"arrays have no supported attribute or method {attr!r}",
                                       hint="see the supported NumPy subset in docs/numpy.md")
        if base is np:  # (most attributes read: NumPy's functions; no property, never noted for the level-2 cache)
            try:
                v = getattr(np, attr)
            except AttributeError as e:
                raise UnknownFunctionError(str(e)) from None
            return self.lift(v) if isinstance(v, np.ndarray) else v
        getter = callees.user_property(base, attr)
        if getter is not None:  # a property of the user's class: its getter is code, read like a method
            return self.call_method(getter, [base], {})
        try:
            return self.from_python(warm_cache.read_attr(base, attr))
        except AttributeError as e:
            raise UnknownFunctionError(str(e)) from None

    def eval_Subscript(self, node: cst.Subscript, env: dict[str, Any]) -> Any:
        base = self.eval(node.value, env)
        idx = []
        for e in node.slice:
            s = e.slice
            if type(s) is cst.Index:
                idx.append(self.eval(s.value, env))
            else:
                assert type(s) is cst.Slice
                parts = [self.eval(p, env) if p is not None else None for p in (s.lower, s.upper, s.step)]
                for p in parts:
                    self.need_static(p, "a slice bound")
                idx.append(slice(*parts))
        key: Any = idx[0] if len(idx) == 1 else tuple(idx)
        keys = key if isinstance(key, tuple) else (key,)
        if is_dynamic(base) or (isinstance(base, np.ndarray) and any(contains_dynamic(k) for k in keys)):
            return self.getitem(base, keys)  # (a constant array indexed by data too: a gather from it)
        self.need_static(key, "an index into a Python container")
        if base is UNSET:  # (an item of a value no path computed: vmap's join of a container, item by item)
            return base
        try:
            return self.from_python(base[key])
        except (IndexError, KeyError, TypeError) as e:
            raise StaticValueError(f"{type(e).__name__}: {e}") from None

    def getitem(self, x: HloValue, key: tuple[Any, ...]) -> Any:
        for k in key:
            if type(k) is HloValue and k.aval.origin:
                args = frozenset(o for o in k.aval.origin if not is_loop_origin(o))
                if args:  # a Python int argument as an index: try it static first
                    raise NeedStatic(args)
        return item_at_counter(x, key, self.apply(registry.PRIMITIVES["getitem"], [x, key], {}))

    def eval_BinaryOperation(self, node: cst.BinaryOperation, env: dict[str, Any]) -> Any:
        left = self.eval(node.left, env)
        right = self.eval(node.right, env)
        op = type(node.operator).__name__
        return self.binop(op, left, right)

    def binop(self, op: str, left: Any, right: Any) -> Any:
        if type(left) is not HloValue and type(right) is not HloValue and not isinstance(left, np.ndarray) \
                and not isinstance(right, np.ndarray):
            try:
                return BINOPS[op](left, right)
            except STATIC_EVAL_ERRORS as e:
                raise StaticValueError(f"{type(e).__name__}: {e}") from None
        prim_name = OPERATOR_PRIMS.get(op)
        if prim_name is None:
            raise UnsupportedSyntaxError(f"the operator {op} is not supported on arrays")
        return self.apply(registry.PRIMITIVES[prim_name], [left, right], {}, operator=True)

    def eval_UnaryOperation(self, node: cst.UnaryOperation, env: dict[str, Any]) -> Any:
        v = self.eval(node.expression, env)
        op = type(node.operator).__name__
        if type(v) is not HloValue:
            return UNOPS[op](v)
        if op == "Not":
            if v.aval.origin:  # `not flag` on a Python bool argument: make it static
                raise NeedStatic(v.aval.origin)
            if v.aval.shape == ():  # (one value computed from data: its negation, a boolean, as Python's `not`)
                return self.apply(registry.PRIMITIVES["logical_not"], [v], {})
            raise DynamicControlFlowError(f"`not` on an array ({v.aval.str_short()}) needs its value",
                                          hint="use np.logical_not(x) or ~x")
        return self.apply(registry.PRIMITIVES[OPERATOR_PRIMS[op]], [v], {}, operator=True)

    def eval_Comparison(self, node: cst.Comparison, env: dict[str, Any]) -> Any:
        left = self.eval(node.left, env)
        result: Any = True
        for c in node.comparisons:
            right = self.eval(c.comparator, env)
            op = type(c.operator).__name__
            if (type(left) is HloValue or type(right) is HloValue) and op in ("Is", "IsNot"):
                # identity is static (an array is never None/True/..., and is itself), except for a
                # Python int/bool argument, which must then become static: `flag is True`
                for v, w in ((left, right), (right, left)):
                    if is_dynamic(v) and v.aval.origin and (is_dynamic(w) or isinstance(w, int | np.generic)):
                        raise NeedStatic(v.aval.origin)  # (a Python number `is` None/UNSET: never)
                r = (left is right) == (op == "Is")
            elif type(left) is HloValue or type(right) is HloValue:
                if op in ("In", "NotIn"):
                    if isinstance(right, dict) and is_dynamic(left) and left.aval.origin:
                        raise NeedStatic(left.aval.origin)  # (`k in cache` of a rolled loop's counter: unrolled)
                    raise UnsupportedSyntaxError(f"`{'in' if op == 'In' else 'not in'}` on arrays is not supported",
                                                 hint="compare elements with == and combine with np.any")
                if len(node.comparisons) > 1:
                    raise UnsupportedSyntaxError("chained comparisons on arrays are ambiguous",
                                                 hint="write (a < b) & (b < c)")
                return self.apply(registry.PRIMITIVES[OPERATOR_PRIMS[op]], [left, right], {}, operator=True)
            else:
                r = CMPOPS[op](left, right)
            if isinstance(r, np.ndarray):
                return r
            if not r:
                return False
            result = r
            left = right
        return result

    def eval_BooleanOperation(self, node: cst.BooleanOperation, env: dict[str, Any]) -> Any:
        left = self.eval(node.left, env)
        is_and = type(node.operator) is cst.And
        if type(left) is HloValue:
            if not left.aval.origin and _one_bool(left):  # `v > 1.0 and not above` of data (an `if` test): both
                right = self.eval(node.right, env)  # sides booleans, so Python's value is np.logical_and's
                if _one_bool(right) or isinstance(right, (bool, np.bool_)):
                    return self.apply(registry.PRIMITIVES["logical_and" if is_and else "logical_or"], [left, right], {})
            self.truth(left, "`and`/`or` operand")
        if is_and and not left:
            return left
        if not is_and and left:
            return left
        return self.eval(node.right, env)

    def eval_IfExp(self, node: cst.IfExp, env: dict[str, Any]) -> Any:
        if self.truth(self.eval(node.test, env), "a conditional expression"):
            return self.eval(node.body, env)
        return self.eval(node.orelse, env)

    def _comprehension(self, node: cst.ListComp | cst.GeneratorExp, env: dict[str, Any]) -> list[Any]:
        out: list[Any] = []
        local = dict(env)
        fors: list[cst.CompFor] = []
        f: cst.CompFor | None = node.for_in
        while f is not None:
            fors.append(f)
            f = f.inner_for_in

        def go(k: int) -> None:
            if k == len(fors):
                out.append(self.eval(node.elt, local))
                return
            cf = fors[k]
            for item in self.iterate(self.eval(cf.iter, local)):
                self.bind_target(cf.target, item, local)
                if all(self.truth(self.eval(c.test, local), "a comprehension condition") for c in cf.ifs):
                    go(k + 1)

        go(0)
        return out

    def eval_ListComp(self, node: cst.ListComp, env: dict[str, Any]) -> Any:
        return self._comprehension(node, env)

    def eval_GeneratorExp(self, node: cst.GeneratorExp, env: dict[str, Any]) -> Any:
        return self._comprehension(node, env)

    def eval_Call(self, node: cst.Call, env: dict[str, Any]) -> Any:
        fv = self.eval(node.func, env)
        args = []
        kwargs = {}
        for a in node.args:
            v = self.eval(a.value, env)
            if a.keyword is not None:
                kwargs[a.keyword.value] = v
            elif a.star == "*":
                args += self.iterate(v)
            else:
                args.append(v)
        if fv is np.arange and getattr(getattr(self.nf, "fn", None), "__module__", None) not in LIBRARY_MODULES and \
                (static := static_arange(args, kwargs)) is not None:
            return static  # (the user's `for i in np.arange(n, 0, -1)`: static items; srcjax's helpers: an iota)
        return self.call_value(fv, args, kwargs)

    # -- calls -------------------------------------------------------------------
    def call_value(self, fv: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if isinstance(fv, NormalizedFunction):
            return self.call_function(fv, args, kwargs)
        rule = _RULES_BY_ID.get(id(fv))  # (first: half the calls of a library helper's static code, `ndim(x)`;
        if rule is not None and rule[0] is fv:  # no key is any other kind of callable below)
            return rule[1](self, args, kwargs)
        if isinstance(fv, LocalFunction):
            return regions.call_local(self, fv, args, kwargs)
        owner = getattr(fv, "__self__", None)
        if isinstance(owner, list) and owner and isinstance(owner[-1], rolled_for.Segment):
            if getattr(fv, "__name__", "") == "pop" and not args and not kwargs:
                return rolled_for.segment_pop(self, owner)
            if getattr(fv, "__name__", "") != "append":
                raise UnsupportedSyntaxError(f"list.{fv.__name__}() on a list that holds a rolled loop's saved "
                                             "values is not supported", hint="use append and pop")
        prim = registry.BY_CALLABLE.get(id(fv))  # (registry.lookup)
        if prim is not None:
            tree = prim.tree
            if tree is not None and args and pytree.is_tree(args[0]):  # e.g. index_add into a container
                return self.call_value(tree, args, kwargs)
            return apply_primitive(self, prim, args, kwargs)
        if is_user_function(fv):
            return self.call_function(self.program.function_for(unwrap(fv)), args, kwargs)
        if (impl := composite(fv)) is not fv:  # (np.vdot in a comprehension run here: in NumPy terms)
            return self.call_value(impl, args, kwargs)
        if isinstance(fv, type) and issubclass(fv, np.generic):
            (x,) = args
            if type(x) is HloValue:
                return self.apply(registry.PRIMITIVES["astype"], [x, fv], {})
            return fv(x)
        method = callees.user_method(fv)
        if method is not None:  # a method (or __call__) of the user's own class: read like a helper
            return self.call_method(method[0], [method[1], *args], kwargs)
        if not callable(fv):
            raise StaticValueError(f"a {type(fv).__name__} object is not callable")
        if fv not in CONTAINER_BUILTINS and not callees.is_static_pure(fv) and not accepts_dynamic(fv):
            # it would run once here, its result a constant of the compiled program, where NumPy calls it
            # again on every call
            raise callees.refusal(fv)
        if getattr(fv, "__srcjax_transform__", False) and any(type(a) is NormalizedFunction for a in args):
            raise UnsupportedSyntaxError(  # (`srcjax.grad(h if flag else k)`: was "cannot transform <function h>")
                f"srcjax.{getattr(fv, '__name__', 'transformation')} of a function chosen by a value: srcjax "
                "transforms a function it names", hint="transform each function by its name: "
                "g = srcjax.grad(h) if flag else srcjax.grad(k)")
        if (key := python_errors.array_key(fv, args)) is not None:  # (`d[x[0]] = v`: a key of run-time data)
            self.need_static(key, "an index into a Python container")
        dyn = [a for a in list(args) + list(kwargs.values()) if contains_dynamic(a)]
        if dyn and not accepts_dynamic(fv):
            origin = frozenset().union(*(_origins_deep(a) for a in dyn))
            if origin:  # a Python int argument, or an int a rolled loop computed: try it static
                raise NeedStatic(origin)
            name = getattr(fv, "__qualname__", None) or getattr(fv, "__name__", repr(fv))
            raise StaticValueError(f"{name}() needs values known at transpile time, but got an array "
                                   f"({_first_dynamic(dyn).aval.str_short()})",
                                   hint=MATH_ON_ARRAYS.get(fv, "use the NumPy equivalent on arrays"))
        try:
            return self.from_python(fv(*args, **kwargs))
        except TranspileError:
            raise
        except STATIC_EVAL_ERRORS as e:  # (the callable's refusal of these values; MemoryError, a bug: not)
            name = getattr(fv, "__qualname__", None) or repr(fv)
            raise python_errors.method_of_arrays(fv, name) or StaticValueError(f"{name}(): {type(e).__name__}: {e}") \
                from None

    def call_method(self, fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
        """A method, property getter or ``__call__`` of the user's own class: transpiled like a helper, with
        the object as its first argument. (Derivatives do not follow these calls: differentiating through
        one that reads a differentiated value is refused where it is called.)"""
        return self.call_function(self.program.method_for(fn), args, kwargs)

    def lift(self, v: Any) -> HloValue:
        """A static value as a program constant (Python scalars stay weakly typed)."""
        assert self.b is not None
        if isinstance(v, HloValue):
            return v
        if isinstance(v, bool) or isinstance(v, (int, float, complex)) and not isinstance(v, np.generic):
            kind = bool if isinstance(v, bool) else int if isinstance(v, int) else type(v)
            if isinstance(v, int) and not (-(2 ** 63) <= v < 2 ** 63):
                raise DTypeError(f"Python integer {v} does not fit in int64")
            aval = ShapedArray((), PYTHON_SCALAR_DTYPES[kind], weak_type=True)
            c = self.b.constant(np.asarray(v, aval.dtype), aval)
            return HloValue(c.name, aval, literal=v)
        if isinstance(v, np.ndarray):
            hit = self.b.lifted.get(id(v))
            if hit is not None and hit[0] is v:
                return hit[1]
        arr = np.asarray(v)
        if arr.dtype.kind in "US":  # (`"%.2f" % loss`, `x + "a"`)
            raise DTypeError(f"cannot use a value of type {type(v).__name__} ({arr.dtype}) as an array",
                             hint="compiled code computes numbers, not text: format array values after the call, "
                                  "or show them at run time with print(f\"{x}\")")
        if arr.dtype.kind in "OV":
            raise DTypeError(f"cannot use a value of type {type(v).__name__} ({arr.dtype}) as an array")
        dt = canonical_dtype(arr.dtype)
        c = self.b.constant(arr, ShapedArray(arr.shape, dt))
        if isinstance(v, np.ndarray):
            self.b.lifted[id(v)] = (v, c)
        return c

    def apply(self, prim: Primitive, args: list[Any], kwargs: dict[str, Any], operator: bool = False) -> Any:
        return apply_primitive(self, prim, args, kwargs, operator)


def _origins_deep(v: Any) -> frozenset[Hashable]:
    leaves, _ = pytree.flatten(v)
    return frozenset().union(*(x.aval.origin for x in leaves if isinstance(x, HloValue))) if leaves else frozenset()


def _first_dynamic(vs: list[Any]) -> HloValue:
    for v in vs:
        if type(v) is HloValue:
            return v
        if isinstance(v, (tuple, list)):
            r = _first_dynamic(list(v))
            if r is not None:
                return r
        if isinstance(v, dict):
            r = _first_dynamic(list(v.values()))
            if r is not None:
                return r
    return None  # type: ignore[return-value]


def _lax_rules() -> dict[Any, Callable[[Specializer, list[Any], dict[str, Any]], Any]]:
    from .. import lax

    return {
        lax.cond: branches.lax_cond, lax.switch: branches.lax_switch, lax.while_loop: loops.lax_while_loop,
        lax.fori_loop: loops.lax_fori_loop, lax.scan: loops.lax_scan,
    }


# the functions the specializer runs itself: srcjax.lax's control flow, and Python's builtins
_CALL_RULES: dict[Any, Callable[[Specializer, list[Any], dict[str, Any]], Any]] = {**_lax_rules(), **BUILTIN_RULES}
# the same by the function's id (a lookup of any callable, hashable or not: a NormalizedFunction is not)
_RULES_BY_ID: dict[int, tuple[Any, Callable[[Specializer, list[Any], dict[str, Any]], Any]]] = {
    id(fn): (fn, rule) for fn, rule in _CALL_RULES.items()}


def specialize(program: Program, specs: list[ArgSpec], sharding: shardy.ShardingPlan | None = None,
               roll_above: int | None = None, platform: str = "cpu") -> tuple[str, list[ShapedArray], Any, list[Any]]:
    """Lower ``program``; a rolled loop whose Python int results turn out to be needed static is unrolled on the
    next try (each loop at most once, so this ends: ``regions.unroll``), a function with an exit under a test on
    data functionalized again in a copy of its own (``regions.own_copy``). ``sharding``: the shardings of the args and
    results; it also collects the mesh of the program's sharding constraints (``lower/shardy.py``). ``roll_above``:
    a Python ``for`` over a static range of at most this many steps is unrolled (the target platform's:
    ``values.roll_above``; default CPU's). ``platform``: "cpu" or "gpu" (``hlo.TARGET``: which custom calls)."""
    shared = program
    while True:
        try:
            plan = shardy.ShardingPlan(sharding.in_leaves, sharding.out) if sharding is not None else \
                shardy.ShardingPlan()
            token = shardy.CURRENT.set(plan)
            trips = ROLL_ABOVE.set(roll_above if roll_above is not None else TINY_TRIP)
            target = TARGET.set("gpu" if platform in ("gpu", "cuda") else "cpu")
            try:
                out = Specializer(program).lower(specs)
            finally:
                TARGET.reset(target)
                ROLL_ABOVE.reset(trips)
                shardy.CURRENT.reset(token)
            if sharding is not None:  # (the caller reads the program's mesh there)
                sharding.mesh, sharding.out_leaves = plan.mesh, plan.out_leaves
            return out
        except regions.DataExit as e:  # `if x[i] > 0: break`: functionalized again, its test on data (or raised)
            program = e.functionalize_again(regions.own_copy(program, shared))
        except NeedStatic as ns:
            rolled = {o for o in ns.names if isinstance(o, LoopOrigin) and o.rolled_for}
            if not rolled:
                raise
            regions.unroll(program, shared, {o.key for o in rolled})
            rest = frozenset(n for n in ns.names if not is_loop_origin(n))
            if rest:
                raise NeedStatic(rest) from None

__all__ = ["ArgSpec", "Specializer", "specialize", "Span"]
