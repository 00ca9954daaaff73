"""Normalize: a parsed user function -> A-normal form (ANF), shape-agnostic.

Input: :class:`FunctionSource`. Output: :class:`NormalizedFunction`, whose
``fdef`` is a libcst ``FunctionDef`` in which

- every statement performs at most one operation, on *atoms* (names, literals, ``np.float32``-like
  constants, ``x.shape``/``x.ndim``/``x.dtype``, and tuples/lists/slices of atoms);
- fresh temporaries are named after what they hold (``matmul``, ``tanh_1``);
- ``numpy`` under any alias and ``from numpy import f`` become ``np.f``; array methods become NumPy
  calls (``x.sum(0)`` -> ``np.sum(x, axis=0)``), with every non-operand argument passed by keyword;
- augmented assignment, conditional expressions and chained assignment are desugared; docstrings and ``pass`` are
  dropped; a transformation that is not called at once (``g = srcjax.grad(h) if c else ...``) is its function's name;
- calls to other user functions name the generated helper.

Expressions that Python evaluates lazily (operands of ``and``/``or``, chained comparisons, ``while`` tests,
comprehensions) are kept nested: flattening them would change when they run. Unsupported syntax raises
:class:`UnsupportedSyntaxError` here, before any shapes are known.
"""

from __future__ import annotations

import builtins
import inspect
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
import numpy as np

from ..adjoint import SAVED_LIST_NAME
from ..core import ArgumentError, Span, UnknownFunctionError
from ..primitives import registry
from . import (
    bound_helpers,
    builtin_calls,
    class_methods,
    closure_bindings,
    comprehension_loops,
    constructed_objects,
    dict_merges,
    dict_methods,
    function_names,
    helper_checks,
    in_place_updates,
    jax_spellings,
    kwargs_params,
    list_copies,
    list_methods,
    literal_arrays,
    loop_else,
    loop_targets,
    methods,
    named_lambdas,
    nested_defaults,
    nested_writes,
    numpy_calls,
    object_methods,
    plain_calls,
    returned_closures,
    shadowing,
    sort_keys,
    star_params,
    starred,
    starred_displays,
    subscript_writes,
    tuple_params,
    unread_defs,
    view_copies,
    view_unpacking,
    view_updates,
)
from .cst_expressions import assign, line
from .cst_transform import transform
from .names import comprehension_targets
from .names import walk as walk_nodes
from .read import FunctionSource, is_generated, read_function
from .resolve import (
    LIBRARY_MODULES,
    Resolver,
    called,
    composite,
    is_user_function,
    local_names,
    rebound_parameters,
    unwrap,
)
from .syntax import (
    BINOP_HINT,
    LITERAL_TYPES,
    OneLine,
    attr_chain,
    dict_comprehensions,
    dict_keywords,
    dotted,
    keyword_dict,
    literal_code,
    power_base,
)
from .unsupported import UNSUPPORTED_EXPRESSIONS, UNSUPPORTED_STATEMENTS

# -- tables -------------------------------------------------------------------------

UNARY_HINT = {"Minus": "neg", "Plus": "pos", "BitInvert": "invert", "Not": "not_"}
COMPARE_HINT = {
    "LessThan": "lt", "LessThanEqual": "le", "GreaterThan": "gt", "GreaterThanEqual": "ge",
    "Equal": "eq", "NotEqual": "ne", "Is": "is_", "IsNot": "is_not", "In": "in_", "NotIn": "not_in",
}

# array method -> NumPy function; "pack" methods take their shape/axes as varargs too.
ARRAY_METHODS = {
    "sum": "sum", "mean": "mean", "prod": "prod", "max": "max", "min": "min", "all": "all", "any": "any",
    "argmax": "argmax", "argmin": "argmin", "var": "var", "std": "std", "cumsum": "cumsum", "cumprod": "cumprod",
    "trace": "trace", "clip": "clip", "round": "round", "dot": "dot", "repeat": "repeat", "squeeze": "squeeze",
    "swapaxes": "swapaxes", "ravel": "ravel", "flatten": "ravel", "astype": "astype", "reshape": "reshape",
    "transpose": "transpose", "copy": "copy", "argsort": "argsort", "argpartition": "argpartition",
    "searchsorted": "searchsorted", "diagonal": "diagonal", "conj": "conjugate", "conjugate": "conjugate",
}
PACK_METHODS = {"reshape", "transpose"}


_TIGHT_EQUAL = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))

@dataclass(repr=False)  # (its repr: the name; its tree is the source, srcjax.source prints it)
class NormalizedFunction:
    """One function of a program, in ANF."""

    name: str  # its name in the generated module
    fn: Callable[..., Any]  # the user's function
    fdef: cst.FunctionDef
    spans: dict[int, Span]  # id(statement node) -> where it came from
    source: FunctionSource
    calls: list[Callable[..., Any]] = field(default_factory=list)  # user functions it calls
    call_sites: dict[Callable[..., Any], Span | None] = field(default_factory=dict)  # where it names each
    temps: set[str] = field(default_factory=set)  # names the normalizer invented
    plain: cst.FunctionDef | None = None  # the ANF before data's control flow was functionalized (AD's); None: fdef
    # the sequences reverse mode names for its loops (``loop_items = range(0, n, 1)`` for ``while i < n``) -> the
    # user's loop (srcjax/frontend/locations.py places their lines there)
    loop_names: dict[str, Span] = field(default_factory=dict)

    def __repr__(self) -> str:  # (was the dataclass's: every node of the tree, 40-200 kB in an error message)
        return f"<function {self.fn.__qualname__ if hasattr(self.fn, '__qualname__') else self.name}>"

    @property
    def namespace(self) -> dict[str, Any]:
        return self.source.globals

    @property
    def plain_fdef(self) -> cst.FunctionDef:
        return self.plain if self.plain is not None else self.fdef


class Normalizer(Resolver):
    """Writes one user function in ANF (see the module docstring); names are resolved by :class:`Resolver`."""

    def __init__(self, src: FunctionSource, helper_name: Callable[..., str],
                 bindings: dict[str, Any] | None = None, comprehension_loops: bool = False) -> None:
        super().__init__(src, helper_name, bindings)
        self.comprehension_loops = comprehension_loops  # list comprehensions as append loops (reverse mode)
        self.spans: dict[int, Span] = {}
        self.updated: set[str] = set()  # names assigned into (y[k] = v)
        self.checked_in_place: dict[int, tuple[str, int]] = {}  # id(`w -= v`) -> what w is bound to (aliasing.scan)
        self.helper_calls = helper_checks.HelperCalls()  # (calls of helpers changing an argument: helper_checks)
        self.out: list[cst.BaseStatement] = []

    # -- emitting ---------------------------------------------------------------
    def emit(self, stmt: cst.BaseSmallStatement, origin: cst.CSTNode | None) -> None:
        sp = self.span(origin) if origin is not None else None
        if sp is not None and sp.end_line != sp.line:  # written over several lines: one line now
            stmt = stmt.visit(OneLine())  # type: ignore[assignment]
        self.out.append(made := line(stmt))  # (cst.SimpleStatementLine(body=[stmt]) without __init__: cst_expressions)
        if sp is not None:
            self.spans[id(made)] = sp

    def assign(self, target: cst.BaseAssignTargetExpression, value: cst.BaseExpression,
               origin: cst.CSTNode | None) -> None:
        self.emit(assign(target, value), origin)  # (cst.Assign(targets=[cst.AssignTarget(target)], value=value))

    # -- expressions --------------------------------------------------------------
    def atom(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """An atom for ``node``, emitting statements for whatever it computes."""
        flat, hint = self.flat(node)
        if hint is None:
            return flat
        name = self.fresh(hint)
        self.assign(cst.Name(name), flat, node)
        return cst.Name(name)

    def flat(self, node: cst.BaseExpression) -> tuple[cst.BaseExpression, str | None]:
        """One operation on atoms, and a name hint (None when already an atom)."""
        if type(node) is cst.Lambda:  # an argument `lambda i, c: ...`: a nested def before the statement
            return cst.Name(self.lambda_function(node, self.fresh("lambda_fn"))), None
        unsupported = UNSUPPORTED_EXPRESSIONS.get(type(node))  # (by exact type: libcst's are final classes,
        if unsupported is not None:                           # and isinstance on them goes through ABCMeta)
            raise self.unsupported(node, *unsupported)
        if getattr(node, "lpar", None) and not (isinstance(node, cst.Tuple) and not node.elements):
            node = node.with_changes(lpar=[], rpar=[])
        t = type(node)  # (exact types: see UNSUPPORTED_EXPRESSIONS)
        if t is cst.Name:
            return self.resolve_name(node), None  # type: ignore[arg-type]
        if t in LITERAL_TYPES:
            return node, None
        if t is cst.FormattedString:
            return self.lazy(node), None
        if t is cst.Attribute:
            return self.flat_attribute(node)  # type: ignore[arg-type]
        if (t is cst.Call or t is cst.List or t is cst.Tuple) and (copied := view_copies.rewrite(self, node)):
            return self.flat(copied)  # list(d.values()), [*d.items()]: a comprehension (frontend/view_copies.py)
        if type(node) is cst.Subscript:
            base = self.atom(node.value)
            elems = [self.slice_element(e) for e in node.slice]
            hint = "getitem"
            key = node.slice[0].slice if len(node.slice) == 1 else None
            if isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString) and isinstance(base, cst.Name):
                k = key.value.evaluated_value
                if isinstance(k, str) and k.isidentifier():
                    hint = f"{base.value}_{k}"  # p["w"] -> p_w (as p.w is)
            return node.with_changes(value=base, slice=elems), hint
        if type(node) is cst.BinaryOperation:
            left = power_base(self.atom(node.left), node.operator)
            right = self.atom(node.right)
            return node.with_changes(left=left, right=right), BINOP_HINT[type(node.operator).__name__]
        if type(node) is cst.UnaryOperation:
            if isinstance(node.operator, (cst.Minus, cst.Plus)) and \
                    isinstance(node.expression, (cst.Integer, cst.Float)):
                return node, None  # a negative literal is an atom
            return node.with_changes(expression=self.atom(node.expression)), \
                UNARY_HINT[type(node.operator).__name__]
        if type(node) is cst.Comparison:
            if len(node.comparisons) == 1:
                left = self.atom(node.left)
                c = node.comparisons[0]
                return node.with_changes(left=left, comparisons=[c.with_changes(
                    comparator=self.atom(c.comparator))]), COMPARE_HINT[type(c.operator).__name__]
            return self.lazy(node), "cmp"
        if type(node) is cst.BooleanOperation:
            return self.lazy(node), "and_" if isinstance(node.operator, cst.And) else "or_"
        if (type(node) is cst.ListComp or type(node) is cst.GeneratorExp) and self.comprehension_loops:
            return comprehension_loops.comprehension_loop(self, node)  # (for derivatives)
        if type(node) is cst.ListComp or type(node) is cst.GeneratorExp:
            node = self.lazy(node)
            if isinstance(node, cst.GeneratorExp):  # its own parentheses (it may have borrowed a call's)
                node = node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            return node, "items"
        if type(node) is cst.IfExp:
            return self.flat_ifexp(node)
        if type(node) is cst.Tuple or type(node) is cst.List:
            if any(isinstance(e, cst.StarredElement) for e in node.elements):  # [*ws], (x, *a): joins of copies
                return self.flat(starred_displays.joined(node))
            elems = []
            for e in node.elements:
                elems.append(e.with_changes(value=self.atom(e.value)))  # type: ignore[arg-type]
            if isinstance(node, cst.Tuple):
                return node.with_changes(elements=elems, lpar=[cst.LeftParen()], rpar=[cst.RightParen()]), None
            return node.with_changes(elements=elems), None
        if type(node) is cst.Dict:
            if any(isinstance(e, cst.StarredDictElement) for e in node.elements):  # {**p, "b": v}
                return comprehension_loops.merged_dict(self, node.elements, node)
            elems = []
            for e in node.elements:  # type: ignore[assignment]
                elems.append(e.with_changes(key=self.atom(e.key), value=self.atom(e.value)))  # type: ignore[arg-type, attr-defined]
            return node.with_changes(elements=elems), None
        if type(node) is cst.Call:
            return self.flat_call(node)
        raise self.unsupported(node, f"the expression {type(node).__name__}")

    def slice_element(self, e: cst.SubscriptElement) -> cst.SubscriptElement:
        s = e.slice
        if isinstance(s, cst.Index):
            if s.star is not None:
                raise self.unsupported(s, "starred indices")
            return e.with_changes(slice=s.with_changes(value=self.atom(s.value)))
        assert isinstance(s, cst.Slice)
        return e.with_changes(slice=s.with_changes(
            lower=self.atom(s.lower) if s.lower is not None else None,
            upper=self.atom(s.upper) if s.upper is not None else None,
            step=self.atom(s.step) if s.step is not None else None))

    def flat_attribute(self, node: cst.Attribute) -> tuple[cst.BaseExpression, str | None]:
        ok, v = self.static_value(node)
        if ok:
            if isinstance(v, types.ModuleType) and v.__name__.startswith("numpy"):
                return dotted("np" + v.__name__[len("numpy"):]), None
            prim = registry.lookup(v) if callable(v) else None
            if prim is not None:
                return dotted(prim.path), None
            chain = attr_chain(node)
            assert chain is not None
            head = self.resolve_name(cst.Name(chain[0]))
            return dotted(cst.Module([]).code_for_node(head) + "." + ".".join(chain[1:])), None
        base = self.atom(node.value)
        attr = node.attr.value
        if attr in ("shape", "ndim", "dtype", "size"):
            return node.with_changes(value=base), None
        if attr in ("real", "imag", "flat"):  # x.real -> np.real(x); x.flat[i], a read: np.ravel(x)[i]
            prim = registry.lookup(getattr(np, "ravel" if attr == "flat" else attr))
            assert prim is not None
            return self.prim_call(cst.Call(func=dotted(prim.path), args=[cst.Arg(value=base)]), prim,
                                  [cst.Arg(value=base)])
        if (getter := methods.property_read(self, node, base)) is not None:  # `b.energy`, a property: `energy(b)`
            return getter
        return node.with_changes(value=base), f"{base.value}_{attr}" if isinstance(base, cst.Name) else attr

    def flat_ifexp(self, node: cst.IfExp, branch: Callable[..., Any] | None = None) -> tuple[cst.BaseExpression, None]:
        """``node`` as an ``if`` assigning ``select`` (``branch``: how a branch's expression is flattened)."""
        test, name, saved = self.atom(node.test), self.fresh("select"), self.out
        self.out = []
        self.assign(cst.Name(name), (branch or (lambda e: self.flat(e)[0]))(node.body), node.body)
        body, self.out = self.out, []
        self.assign(cst.Name(name), (branch or (lambda e: self.flat(e)[0]))(node.orelse), node.orelse)
        orelse, self.out = self.out, saved
        stmt = cst.If(test=test, body=cst.IndentedBlock(body=body),
                      orelse=cst.Else(body=cst.IndentedBlock(body=orelse)))
        if (sp := self.span(node.test)) is not None:
            self.spans[id(stmt)] = sp
        self.out.append(stmt)
        return cst.Name(name), None

    def flat_call(self, node: cst.Call) -> tuple[cst.BaseExpression, str | None]:
        if (fv := plain_calls.plain_callee(self, node)) is not plain_calls.NOT_PLAIN:  # np.f(..), index_add(..)
            if (selected := numpy_calls.selection_reduction(self, node)) is not None:  # (the one check left)
                return selected
            if (isinstance(fv, np.ufunc) or fv is np.clip) and (written := numpy_calls.written_value(self, node)):
                return self.flat(written)  # `return np.sqrt(d, out=d)`: d[...] = np.sqrt(d), then d
            numpy_calls.check_sized(self, node, fv)
            return self.call_of(node, True, fv)
        if (rewritten := builtin_calls.rewrite(self, node)) is not None:  # map(f, xs), functools.reduce, zip(*xs)
            return self.flat(rewritten)
        node = star_params.spread(self.src, node)  # (`g(*xs)` of `def f(*xs)`, `g(*(a, b))`)
        if (keyed := sort_keys.rewrite(node, self.src.positions)) is not node:  # key=lambda kv: kv[0]
            return self.flat(keyed)
        if (method := object_methods.static_receiver_call(self, node, _NOT_METHODS) or  # `loss.gradient(y, p)`
                methods.receiver_call(self, node, _NOT_METHODS)) is not None:  # `params.energy(x)`
            return method, call_hint(method.func) if isinstance(method, cst.Call) else None
        for a in node.args:
            if a.star:
                raise self.unsupported(a, f"{a.star}-arguments in a call of a value whose length is not written in "
                                       "this function", star_params.SPREAD_HINT)
        func = node.func
        if isinstance(func, cst.Name) and (builtin := self.bound_builtin(func.value)) is not None:
            return self.flat(node.with_changes(func=cst.Name(builtin)))  # `act("s", y)` of `_apply(print, x)`
        at = jax_spellings.flat_at(self, node) or numpy_calls.selection_reduction(self, node) or \
            jax_spellings.flat_jvp(self, node) or jax_spellings.flat_vjp(self, node) or \
            jax_spellings.flat_replace(self, node) or jax_spellings.flat_transformed(self, node)
        # x.at[k].set(v); x[x > 0].sum(); srcjax.jvp(f, (x,), (v,)); p._replace(w=v); `srcjax.grad(h) if c else ..`
        if at is not None:
            return at
        made = self.transformed(func) if isinstance(func, cst.Call) else None
        if made is not None:  # srcjax.vmap(f, in_axes=(0, None))(x, y): a call of the generated function
            made = self.for_passing(made, node)
            name = self.helper_call_name(unwrap(made), node)
            args = [a.with_changes(value=self.atom(a.value)) for a in node.args] + self.closure_call_args(made)
            return node.with_changes(func=name, args=args), call_hint(name)
        ok, fv = self.static_value(func)
        if not ok and (got := dict_methods.get_call(self, node)) is not None:
            return self.flat(got)  # d.get(k, default): d[k] if k in d else default
        if ok:
            numpy_calls.check_sized(self, node, fv)  # (np.unique needs size=)
        if ok and (named := jax_spellings.reduce_window_call(self, node)) is not None:
            return self.flat(named)  # reduce_window(x, 0.0, lambda a, b: a + b, ...): srcjax.lax.add
        if ok and (rewritten := jax_spellings.tree_map_call(self, node) or jax_spellings.lax_map_call(self, node)):
            return self.flat(rewritten)  # a comprehension over the leaves (derivatives through lambdas); lax.map
        if ok and (spelled := jax_spellings.lax_control_call(self, node)) is not None:
            return self.flat(spelled)  # `lax.scan` (`from srcjax import lax`), `fl` (`fori_loop as fl`)
        if ok and fv is composite(np.piecewise) and (rewritten := numpy_calls.piecewise(self, node)) is not None:
            return self.flat(rewritten)  # np.select of the functions applied (derivatives through lambdas)
        if ok and fv is builtins.print:  # the values an f-string formats become atoms (then batched, ...)
            node = node.with_changes(args=[a.with_changes(value=jax_spellings.formatted_atoms(self, a.value))
                                           for a in node.args])
        return self.call_of(node, ok, fv)

    def call_of(self, node: cst.Call, ok: bool, fv: Any) -> tuple[cst.BaseExpression, str | None]:
        """``node`` read as a call of its callee (``ok, fv``: its static value), no spelling of it rewritten."""
        func = node.func
        if not ok and isinstance(func, cst.Attribute) and func.attr.value in ARRAY_METHODS:  # methods -> NumPy's
            prim, args = self.method_call(node, self.atom(func.value), node.args)
            return self.prim_call(node, prim, args)
        if ok:
            prim = registry.lookup(fv) if callable(fv) else None  # type: ignore[assignment]
            if prim is not None:
                return self.prim_call(node, prim, list(node.args))
            self.check_callee(node, fv)
            if isinstance(func, cst.Attribute) and (bound := self.bound_call(node, (ok, fv))) is not None:
                return bound
            if isinstance(func, cst.Attribute) and is_user_function(fv):  # `helpers.f(x)`: a helper like `f(x)`
                name = self.helper_call_name(called(fv), node)
                args = [a.with_changes(value=self.atom(a.value)) for a in node.args]
                return node.with_changes(func=name, args=args), call_hint(name)
        if isinstance(func, cst.Name) and comprehension_loops.looped_builtin(self, node, func.value):
            looped = comprehension_loops.builtin_loop(self, node, func.value)
            if looped is not None:
                return looped
        if isinstance(func, cst.Name) and func.value not in self.locals:
            bound = self.bound_call(node, self.constant(func))
            if bound is not None:
                return bound
        callee: cst.BaseExpression
        if isinstance(func, cst.Name) and func.value not in self.locals and (made := self.passing(func, node)):
            callee = self.helper_call_name(unwrap(made), node)  # (per_ex = srcjax.vmap(f, in_axes=(0,)))
        elif isinstance(func, cst.Name):
            callee = self.resolve_name(func)
        elif isinstance(func, cst.Attribute) and not ok:
            # a method of a (static) object, e.g. `outs.append(y)`: keep `recv.method(...)` together
            callee = func.with_changes(value=self.atom(func.value))
        else:
            callee = self.atom(func)
        args = [a.with_changes(value=self.atom(a.value)) for a in node.args] + self.closure_call_args(
            self.bindings.get(func.value) if isinstance(func, cst.Name) else fv)
        hint = call_hint(callee)
        return node.with_changes(func=callee, args=args), hint

    def bound_call(self, node: cst.Call, found: tuple[bool, Any]) -> tuple[cst.BaseExpression, str | None] | None:
        """A call of a user function fixing parameters of it to functions (``apply(np.tanh, x)``, a function
        default left alone): a call of its bound variant without them (frontend/bound_helpers.py). None:
        not such a call."""
        known, fv = found
        fv = class_methods.call_variant(fv) or fv  # (`Kernels.mix(r2, w)` of a classmethod: its `cls` fixed)
        take = plain_calls.TAKE_FUNCTIONS
        if not known or not isinstance(fv, types.FunctionType) or not is_user_function(fv) or is_generated(fv) \
                or getattr(fv, "__module__", "") in LIBRARY_MODULES and fv.__module__ not in take \
                or bound_helpers.bound_names(fv) is not None \
                or any(a.star for a in node.args):
            return None
        fv = kwargs_params.call_variant(fv, node) or fv  # (`def layer(x, **kw)`: the copy for these keywords)
        if star_params.star_parameter(fv) is not None:  # (`def f(x, *rest)`: the copy for this many arguments)
            fv = star_params.call_variant(fv, sum(a.keyword is None for a in node.args))
        copied = fv is not found[1]  # (called as its copy, also where no parameter is fixed to a function)
        node, fv = tuple_params.call_variant(node, fv)  # (`rk4(f, y0, t, args=(a, b))` of `f(y, t, *args)`)
        params = list(inspect.signature(fv).parameters)
        lifted = {(a.keyword.value if a.keyword is not None else params[i] if i < len(params) else ""): got
                  for i, a in enumerate(node.args) if (got := closure_bindings.lifted_argument(self, a.value))}
        positional = [(True, lifted[params[i]][0]) if i < len(params) and params[i] in lifted else
                      self.constant(a.value) for i, a in enumerate(node.args) if a.keyword is None]
        keywords = {a.keyword.value: (True, lifted[a.keyword.value][0]) if a.keyword.value in lifted else
                    self.constant(a.value) for a in node.args if a.keyword is not None}
        if len(positional) > len(params) or not set(keywords) <= set(params):
            return None  # (the call's own error: made by the usual path)
        bound = bound_helpers.call_bindings(fv, positional, keywords, set())
        if bound:  # (a parameter the helper assigns again is not fixed)
            bound = bound_helpers.call_bindings(fv, positional, keywords, rebound_parameters(read_function(fv).fdef))
        if not bound and not tuple_params.spelled_names(fv) and not copied:
            return None
        kept = [a.with_changes(value=self.atom(a.value)) for i, a in enumerate(node.args)
                if (a.keyword.value if a.keyword is not None else params[i]) not in bound]
        extras = {p: closure_bindings.extra_names(fv, p, lifted[p][1]) for p in bound if p in lifted and lifted[p][1]}
        kept += [cst.Arg(cst.Name(x), keyword=cst.Name(m), equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
            for p, names in extras.items() for m, x in zip(names, lifted[p][1])]
        if kept:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        callee = self.helper_call_name(bound_helpers.bound_variant(fv, bound, extras) if bound else fv, node)
        return node.with_changes(func=callee, args=kept), call_hint(callee)

    def method_call(self, node: cst.Call, recv: cst.BaseExpression,
                    args: Sequence[cst.Arg]) -> tuple[registry.Primitive, list[cst.Arg]]:
        """``recv.meth(args)`` -> the primitive and its arguments (``recv`` first)."""
        assert isinstance(node.func, cst.Attribute)
        meth = node.func.attr.value
        args = list(args)
        if meth in PACK_METHODS:
            pos = [a for a in args if a.keyword is None]
            kws = [a for a in args if a.keyword is not None]
            if len(pos) > 1:
                packed = cst.Tuple(elements=[cst.Element(value=a.value) for a in pos])
                pos = [cst.Arg(value=packed)]
            args = pos + kws
        prim = registry.lookup(getattr(np, ARRAY_METHODS[meth], None))
        if prim is None:
            raise UnknownFunctionError(f"the array method .{meth}() is not supported by srcjax (yet)",
                                       span=self.span(node), hint="see the supported NumPy subset in docs/numpy.md")
        return prim, [cst.Arg(value=recv)] + args

    def prim_call(self, node: cst.Call, prim: registry.Primitive,
                  args: list[cst.Arg]) -> tuple[cst.BaseExpression, str | None]:
        pos = [a.value for a in args if a.keyword is None]
        kws = numpy_calls.keywords(prim, args)
        if "where" in kws and "where" not in prim.signature.parameters and prim.name in numpy_calls.WHERE_FILL:
            return self.flat(numpy_calls.reduction_where(self, node, prim, pos, kws))
        if (rewritten := numpy_calls.keyword_forms(self, node, prim, pos, kws)) is not None:  # np.diff(append=)
            return self.flat(rewritten)
        try:
            bound = prim.bind(pos, kws)
        except TypeError as e:
            raise ArgumentError(f"{prim.path}(): {e}", span=self.span(node),
                                hint=f"srcjax supports {prim.path}{prim.signature}") from None
        out_args: list[cst.Arg] = []
        params = prim.signature.parameters
        index = {name: k for k, name in enumerate(params)}  # position in the signature, not in this call
        for pname, value in numpy_calls.emitted(prim, bound).items():
            p = params[pname]
            i = index[pname]
            if literal_arrays.listed_operand(self, prim, pname, value):
                # np.sum([y for ...]), np.mean([a, b]), np.array(outs): NumPy makes one array of the list, as
                # np.stack does (and derivatives follow np.stack of a list built by a loop)
                value = cst.Call(func=dotted("np.stack"), args=[cst.Arg(value)])
                r = self.src.positions.get(bound.arguments[pname])
                if r is not None:
                    self.src.positions[value] = r
            value = literal_arrays.operand_arrays(self, prim, pname, value, node)  # (np.concatenate(([0.0], x)))
            stacked = literal_arrays.stacked_call(self, value, node) if pname in prim.nested else None
            if stacked is not None:  # np.array([x, y]): the list literal is np.stack([x, y])
                if len(bound.arguments) == 1:  # nothing else to do: the stack is the array
                    return stacked, "stack"
                value = cst.Name(self.fresh("stack"))
                self.assign(value, stacked, node)
            if p.kind == inspect.Parameter.VAR_POSITIONAL:
                out_args += [cst.Arg(value=self.atom(v)) for v in value]
            elif p.kind == inspect.Parameter.POSITIONAL_ONLY or i < prim.positional:
                out_args.append(cst.Arg(value=self.atom(value)))
            else:
                out_args.append(cst.Arg(value=self.atom(value), keyword=cst.Name(pname),
                                        equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                              cst.SimpleWhitespace(""))))
        return cst.Call(func=dotted(prim.path), args=out_args), prim.name

    def lazy(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """An expression kept nested (evaluated lazily), in canonical spelling: not flattened, but checked
        (syntax, names) and rewritten like flattened code: names resolved (``np`` aliases, ``from numpy import
        f``, helpers), array methods turned into NumPy calls."""
        node = builtin_calls.lazy_maps(self, node)  # (`for a in map(lambda t: ..., xs)` in a generator: no lambda)
        return transform(node, _LazyRewriter(self, node))  # type: ignore[no-any-return]

    # -- statements ---------------------------------------------------------------
    def block(self, stmts: Sequence[Any], top: bool = False) -> list[cst.BaseStatement]:
        saved = self.out
        self.out = []
        for i, s in enumerate(stmts):
            if top and i == 0 and _is_docstring(s):
                continue
            self.statement(s)
        body = self.out or [cst.SimpleStatementLine(body=[cst.Pass()])]
        self.out = saved
        return body

    def statement(self, s: cst.BaseStatement) -> None:
        unsupported = UNSUPPORTED_STATEMENTS.get(type(s))  # (by exact type, as UNSUPPORTED_EXPRESSIONS: 16
        if unsupported is not None:                        # isinstance checks through ABCMeta a statement)
            raise self.unsupported(s, *unsupported)
        if isinstance(s, cst.SimpleStatementLine):
            for small in s.body:
                self.small_statement(small)
                helper_checks.statement_checks(self, small)  # (`scale(t, s)` of `t *= s`, t read after: t's type)
        elif isinstance(s, cst.BaseSmallStatement):  # a one-line body: `def f(x): return x`
            self.small_statement(s)
        elif isinstance(s, cst.If):
            self.if_statement(s)
        elif isinstance(s, cst.For):
            if s.asynchronous is not None:
                raise self.unsupported(s, "async for")
            it = self.atom_or_flat(s.iter)
            target = self.target(s.target)
            stmt = s.with_changes(target=target, iter=it, body=cst.IndentedBlock(body=self.block(s.body.body)))
            self.record(stmt, s.iter)
            self.out.append(stmt)
        elif isinstance(s, cst.While):
            stmt = s.with_changes(test=self.lazy(s.test), body=cst.IndentedBlock(body=self.block(s.body.body)))  # type: ignore[assignment]
            self.record(stmt, s.test)
            self.out.append(stmt)
        elif isinstance(s, cst.FunctionDef):
            self.nested_function(s)
        else:
            raise self.unsupported(s, f"the statement {type(s).__name__}")

    def nested_function(self, s: cst.FunctionDef) -> None:
        """A ``def`` inside the function (e.g. a loop body for ``srcjax.lax``): a closure, normalized in place."""
        if s.decorators:
            raise self.unsupported(s.decorators[0], "decorators on nested functions",
                                   "define the function without a decorator")
        if s.asynchronous is not None:
            raise self.unsupported(s, "async functions")
        p = s.params
        if p.posonly_params or p.kwonly_params or isinstance(p.star_arg, cst.Param) or p.star_kwarg is not None \
                or any(prm.default is not None for prm in p.params):
            raise self.unsupported(s.params, "nested functions with defaults, *args, **kwargs or keyword-only "
                                   "parameters", "give the nested function plain positional parameters")
        params = p.with_changes(params=[prm.with_changes(annotation=None) for prm in p.params])
        stmt = cst.FunctionDef(name=s.name, params=params, body=cst.IndentedBlock(body=self.block(s.body.body)))
        self.record(stmt, s.name)
        self.out.append(stmt)

    def lambda_function(self, lam: cst.Lambda, name: str) -> str:
        """``lambda params: body`` as the nested ``def name(params): return body`` (same closure
        semantics: both read enclosing names when called)."""
        ret = cst.Return(value=lam.body)
        fdef = cst.FunctionDef(name=cst.Name(name), params=lam.params,
                               body=cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[ret])]))
        positions = self.src.positions
        if lam in positions:  # errors in the body point at the lambda
            positions[fdef.name] = positions[lam]
            positions[ret] = positions[lam.body]
        self.nested_function(fdef)
        return name

    def record(self, stmt: cst.CSTNode, origin: cst.CSTNode) -> None:
        sp = self.span(origin)
        if sp is not None:
            self.spans[id(stmt)] = sp

    def atom_or_flat(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """Loop iterables stay one call (``range(n)``) rather than a temporary."""
        flat, hint = self.flat(node)
        return flat

    def if_statement(self, s: cst.If) -> None:
        test = self.atom(s.test)
        body = self.block(s.body.body)
        orelse: cst.If | cst.Else | None = None
        if isinstance(s.orelse, cst.Else):
            orelse = s.orelse.with_changes(body=cst.IndentedBlock(body=self.block(s.orelse.body.body)))
        elif isinstance(s.orelse, cst.If):
            saved = self.out
            self.out = []
            self.if_statement(s.orelse)
            inner = self.out
            self.out = saved
            if len(inner) == 1 and isinstance(inner[0], cst.If):
                orelse = inner[0]
            else:
                orelse = cst.Else(body=cst.IndentedBlock(body=inner))
        stmt = cst.If(test=test, body=cst.IndentedBlock(body=body), orelse=orelse)
        self.record(stmt, s.test)
        self.out.append(stmt)

    def target(self, t: cst.BaseExpression, nested: bool = False) -> cst.BaseAssignTargetExpression:
        if isinstance(t, cst.Name):
            return t
        if isinstance(t, (cst.Tuple, cst.List)):
            elems = []
            for e in t.elements:
                if isinstance(e, cst.StarredElement):
                    raise self.unsupported(e, "a starred target inside a nested or loop target ((a, *b), c = ...)",
                                           "unpack that level in an assignment of its own: t, c = ...; a, *b = t")
                elems.append(e.with_changes(value=self.target(e.value, nested=True)))
            if nested:
                return cst.Tuple(elements=elems, lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            return cst.Tuple(elements=elems, lpar=[], rpar=[])
        if isinstance(t, cst.Subscript):
            raise self.unsupported(t, "assignment to an array element inside a tuple target or chained assignment",
                                   "assign the element in a statement of its own: x[i] = v")
        raise self.unsupported(t, f"assignment to {type(t).__name__}")

    def small_statement(self, s: cst.BaseSmallStatement) -> None:
        unsupported = UNSUPPORTED_STATEMENTS.get(type(s))  # (by exact type: see statement)
        if unsupported is not None:
            raise self.unsupported(s, *unsupported)
        if subscript_writes.statement(self, s):  # y[k] = v, y[k] += v, y[mask] = v, a[i] = b[j] = v (subscript_writes)
            pass
        elif helper_checks.returned_call(self, s):  # fill(b, x) of a helper writing into b: fill_1, b = fill'(b, x)
            pass
        elif type(s) is cst.Assign and len(s.targets) == 1 and type(s.targets[0].target) is cst.Name \
                and type(s.value) is cst.Lambda:  # f = lambda y: ...  ->  def f(y): ...
            self.lambda_function(s.value, s.targets[0].target.value)
        elif type(s) is cst.Assign and len(s.targets) == 1 and type(s.targets[0].target) is cst.Name \
                and type(s.value) is cst.Call and (made := self.transformed(s.value)) is not None and \
                self.assigned_once(s.targets[0].target.value):  # per_ex = srcjax.vmap(f): calls of it are calls
            self.bindings[s.targets[0].target.value] = made  # of the generated function
        elif type(s) is cst.Assign and len(s.targets) == 1 and type(s.value) is cst.Call and \
                (pair := jax_spellings.vjp_targets(s.targets[0].target)) is not None and \
                jax_spellings.flat_vjp(self, s.value, pair) is not None:
            pass  # y, vjp_fn = srcjax.vjp(f, x): y = f(x), def vjp_fn(ct): ... (jax_spellings.flat_vjp)
        elif type(s) is cst.Assign and len(s.targets) == 1 and (starred.has_star(t := s.targets[0].target) or
                                                                   starred.has_nested_star(t)):
            starred.assign(self, t, s.value, s.value)  # (a, *b = v; (c, *d), e = v)
        elif type(s) is cst.Assign:
            targets = [self.target(t.target) for t in s.targets]
            flat, hint = self.flat(s.value)  # type: ignore[assignment]
            first = targets[0]
            self.assign(first, flat, s.value)
            for t in targets[1:]:
                self.assign(t, first, s.value)
        elif type(s) is cst.AnnAssign:
            if s.value is not None:
                self.assign(self.target(s.target), self.flat(s.value)[0], s.value)
        elif type(s) is cst.AugAssign:
            target = self.target(s.target)
            if not isinstance(target, cst.Name):
                raise self.unsupported(s.target, "augmented assignment to this target")
            in_place_updates.statement(self, s, target)  # w *= m: mul = w * m; w = in_place(w, mul)
        elif type(s) is cst.Return:
            value = self.atom(s.value) if s.value is not None else None  # type: ignore[assignment]
            self.emit(cst.Return(value=value), s)
        elif type(s) is cst.Expr:
            if isinstance(s.value, (cst.SimpleString, cst.ConcatenatedString)):
                return
            if type(s.value) is not cst.Call:
                self.lazy(s.value)  # no effect, so dropped; but `yield x` or an unknown name is still an error
                return
            if numpy_calls.ufunc_at(self, s.value) or numpy_calls.out_argument(self, s.value):  # np.add.at(a, i, b)
                return  # a = index_add(a, i, b); np.add(a, b, out=b): b[...] = np.add(a, b)
            self.check_global_mutation(s.value)
            if dict_methods.update_statement(self, s.value):  # d.update(k=v): d["k"] = v
                return
            flat, _ = self.flat(s.value)
            self.emit(cst.Expr(value=flat), s.value)
        elif type(s) is cst.Assert:
            test = self.atom(s.test)
            msg = self.lazy(s.msg) if s.msg is not None else None
            self.emit(s.with_changes(test=test, msg=msg), s.test)
        elif type(s) is cst.Raise:
            exc = self.lazy(s.exc) if s.exc is not None else None
            self.emit(s.with_changes(exc=exc), s)
        elif isinstance(s, (cst.Pass, cst.Break, cst.Continue)):
            if not isinstance(s, cst.Pass):
                self.emit(s, s)
        else:
            raise self.unsupported(s, f"the statement {type(s).__name__}")

    def index_assign(self, t: cst.Subscript, value: cst.BaseExpression, origin: cst.CSTNode) -> None:
        """``y[key] = value`` -> ``y = srcjax.lax.index_update(y, key, value)`` (a functional update)."""
        if type(t.value) is cst.Subscript and nested_writes.item_write(self, t, value, origin):  # xs[t][j] = v
            return
        if not isinstance(t.value, cst.Name) or t.value.value not in self.locals and t.value.value not in self.temps:
            raise self.unsupported(t, "assignment into an element of something other than a local array variable",
                                   "assign the array to a local name first, then update it")
        call = cst.Call(func=dotted("srcjax.lax.index_update"),
                        args=[cst.Arg(t.value), cst.Arg(self.subscript_key(t)), cst.Arg(value)])
        self.assign(cst.Name(t.value.value), call, origin)
        self.updated.add(t.value.value)

    def subscript_key(self, t: cst.Subscript) -> cst.BaseExpression:
        """The key of ``y[key]`` as an atom, a slice call or a tuple of them."""
        keys: list[cst.BaseExpression] = []
        for e in t.slice:
            sl = e.slice
            if isinstance(sl, cst.Index):
                if sl.star is not None:
                    raise self.unsupported(sl, "starred indices")
                keys.append(self.atom(sl.value))
            else:
                assert isinstance(sl, cst.Slice)
                parts = [self.atom(p) if p is not None else cst.Name("None") for p in (sl.lower, sl.upper, sl.step)]
                while len(parts) > 2 and isinstance(parts[-1], cst.Name) and parts[-1].value == "None":
                    parts.pop()
                keys.append(cst.Call(func=cst.Name("slice"), args=[cst.Arg(p) for p in parts]))
        return keys[0] if len(keys) == 1 else cst.Tuple(elements=[cst.Element(k) for k in keys])

    # -- the function ---------------------------------------------------------------
    def refuse_tape_names(self, fdef: cst.FunctionDef) -> None:
        """User code may not bind the names derivative code gives its tapes (``_tape``, ``_tape_1``,
        ``_tape_dot``): the compiler pops those lists row by row, so a user's list of that name
        would be read wrong."""
        if is_generated(self.src.fn):
            return
        taken = {n for n in local_names(fdef) if SAVED_LIST_NAME.match(n)}
        if not taken:
            return
        first = next(n for n in walk_nodes(fdef) if isinstance(n, cst.Name) and n.value in taken)
        raise self.unsupported(first, f"the name `{first.value}` (names like `_tape`, `_tape_1` and `_tape_dot` "
                                      "are the tapes of srcjax's derivative code)",
                               f"rename it, e.g. `{first.value.lstrip('_')}`")

    def function(self, name: str) -> cst.FunctionDef:
        fdef = helper_checks.returning(self.src)  # (a helper's variant returning what it changes: its returns)
        self.checked_in_place, self.helper_calls = helper_checks.scan(self, fdef)  # (in-place changes: refused)
        params = fdef.params
        if params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) and isinstance(params.star_arg, cst.Param):
            raise self.unsupported(params.star_arg, "*args parameters", "list the parameters explicitly")
        if params.star_kwarg is not None:
            raise self.unsupported(params.star_kwarg, "**kwargs parameters", "list the parameters explicitly")
        defaults = {k: v.default for k, v in inspect.signature(self.src.fn).parameters.items()
                    if v.default is not inspect.Parameter.empty}

        def clean_param(p: cst.Param) -> cst.Param:
            if p.annotation is not None and p.default is not None:  # (`a: T = v` -> `a=v`, as PEP 8 spaces it)
                p = p.with_changes(equal=_TIGHT_EQUAL)
            p = p.with_changes(annotation=None)
            # a default that is a plain literal is written as its value, so the generated
            # module does not depend on the names the default was spelled with
            lit = literal_code(defaults.get(p.name.value, _NO_DEFAULT))
            if p.default is not None and lit is not None:
                p = p.with_changes(default=cst.parse_expression(lit))
            return p

        fixed = bound_helpers.bound_names(self.src.fn) or {}  # (a bound variant: those parameters are functions)
        # positional-only parameters (`def f(x, /)`) as plain ones: the passes read `params` (the calls were
        # bound by Python's rules already; a pass that missed them gave a zero derivative)
        positional = [clean_param(p.with_changes(comma=cst.MaybeSentinel.DEFAULT)) if p is params.posonly_params[-1]
                      else clean_param(p) for p in params.posonly_params] + \
            [clean_param(p) for p in params.params if p.name.value not in fixed]
        if fixed and positional:
            positional[-1] = positional[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        clean = params.with_changes(
            params=positional,
            posonly_params=[], posonly_ind=cst.MaybeSentinel.DEFAULT,
            kwonly_params=[clean_param(p) for p in params.kwonly_params],
        )
        self.refuse_tape_names(fdef)
        self.reserve_helpers(fdef)
        stmts = fdef.body.body
        if cst.DictComp in {n.__class__ for n in tuple(self.src.positions)}:  # (a position per node of the source)
            stmts = [dict_comprehensions(st, self.src.positions) for st in stmts]
        if "dict" not in getattr(self.src.fn, "__globals__", {}) and "dict" in self.src.name_set() and \
                any(keyword_dict(n) for n in walk_nodes(fdef.body)):  # (the builtin's `dict(a=x)`: `{"a": x}`)
            stmts = [dict_keywords(st, self.src.positions) for st in stmts]
        body = unread_defs.without_unread_defs(self.block(stmts, top=True))  # (`def vjp_fun` a lift replaced)
        if self.updated:
            view_updates.check_views(body, self.updated, self.spans)
            nested_writes.check_item_sources(body, self.spans)
        out = cst.FunctionDef(name=cst.Name(name), params=clean, body=cst.IndentedBlock(body=body))
        if is_generated(self.src.fn) or getattr(self.src.fn, "__module__", "") in LIBRARY_MODULES:
            return out
        out = loop_targets.separate_targets(loop_targets.rebind_targets(out, self.spans, self.fresh), self.spans,
                                            self.fresh)  # (`for c in cs` twice: a name per loop)
        return shadowing.unshadow(out, self.spans, self.locals, self.used, self.span, fdef)


_NO_DEFAULT = object()
_NOT_METHODS = {*ARRAY_METHODS, *PACK_METHODS, "append", "extend", "insert", "pop", "items", "keys", "values", "get",
                "update", "copy", "index", "count", "setdefault", "at", "set", "add"}  # (never a user class's)


class _LazyRewriter(cst.CSTTransformer):
    """Rewrites an expression kept nested (see :meth:`Normalizer.lazy`)."""

    def __init__(self, norm: Normalizer, root: cst.CSTNode) -> None:
        self.norm = norm
        self.bound = comprehension_targets(root)  # names the expression binds itself

    def on_visit(self, node: cst.CSTNode) -> bool:
        unsupported = UNSUPPORTED_EXPRESSIONS.get(type(node))  # (by exact type, as in Normalizer.flat)
        if unsupported is not None:
            raise self.norm.unsupported(node, *unsupported)
        return super().on_visit(node)

    def local(self, name: str) -> bool:
        return name in self.bound or name in self.norm.locals or name in self.norm.temps

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if self.local(original.value):
            return updated
        return self.norm.resolve_name(original)

    # an attribute's name and a keyword's name are not variables: only their values are rewritten
    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return False

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        chain = attr_chain(original)
        if chain is not None and not self.local(chain[0]):
            ok, _ = self.norm.static_value(original)
            if ok:
                return self.norm.flat_attribute(original)[0]
        return updated.with_changes(value=transform(original.value, self))

    def visit_Arg(self, node: cst.Arg) -> bool:
        return False

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        if original.star:
            raise self.norm.unsupported(original, f"{original.star}-arguments in a comprehension or condition",
                                        star_params.SPREAD_HINT)
        return updated.with_changes(value=transform(original.value, self))

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = original.func
        at = jax_spellings.lazy_at(self.norm, original, updated)
        if at is not None:
            return at
        chain = attr_chain(func)
        ok, fv = (False, None) if chain is None or self.local(chain[0]) else self.norm.static_value(func)
        if not ok and (got := dict_methods.lazy_get(updated)) is not None:
            return got  # d.get(k, default): d[k] if k in d else default
        if not ok and isinstance(func, cst.Attribute) and func.attr.value in ARRAY_METHODS:
            assert isinstance(updated.func, cst.Attribute)
            prim, args = self.norm.method_call(original, updated.func.value, updated.args)
            return cst.Call(func=dotted(prim.path), args=args)
        if ok and (not callable(fv) or registry.lookup(fv) is None):
            self.norm.check_callee(original, fv)
        return updated


def _is_docstring(s: cst.BaseStatement) -> bool:
    return (isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Expr)
            and isinstance(s.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def call_hint(callee: cst.BaseExpression) -> str:
    chain = attr_chain(callee)
    if chain:
        return chain[-1]
    return "call"


def normalize(fn: Callable[..., Any], helper_name: Callable[..., str], name: str | None = None,
              bindings: dict[str, Any] | None = None, comprehension_loops: bool = False) -> NormalizedFunction:
    src = methods.guard(closure_bindings.expand(tuple_params.expand(star_params.expand(kwargs_params.expand(
        class_methods.expand(read_function(fn)))))))
    src = view_unpacking.rewrite(dict_merges.rewrite(nested_defaults.rewrite(src)))  # (`def g(v, k=k)` in a loop;
    src = constructed_objects.rewrite(returned_closures.rewrite(list_copies.rewrite(src)))  # `d | e` of dicts;
    # `a, b = d.values()`; `list(ws)` of a parameter); `g = make_scaler(a)` (a helper's closure: its body written
    # out); `p = Point(x, y)` (a plain class: its dataclass); `loss = lambda w: ...` (`def loss(w): ...`, a helper's
    src = list_methods.rewrite(named_lambdas.rewrite(function_names.rewrite(loop_else.rewrite(src))))  # too);
    # `extend`; fn = np.sin; `for ... else` (a flag)
    norm = Normalizer(src, helper_name, bindings, comprehension_loops)
    closure_bindings.register(norm)  # (calls through a parameter fixed to a lifted function pass its locals)
    fdef = norm.function(name or src.name)
    return NormalizedFunction(name=name or src.name, fn=fn, fdef=fdef, spans=norm.spans, source=src,
                              calls=norm.calls, call_sites=norm.call_sites, temps=norm.temps)
