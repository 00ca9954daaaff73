"""Name resolution for normalization: what each name a user function refers to is.

:class:`Resolver` (the base of :class:`~srcjax.frontend.normalize.Normalizer`)
knows a function's locals and its globals and closure: it resolves a global
name to its canonical spelling in generated code (``numpy`` under any alias ->
``np``, ``from numpy import tanh`` -> ``np.tanh``, another user function -> the
name of its generated helper, recorded in ``calls``), the value of a
module-rooted chain (``np.linalg.norm``), and refuses callees and globals that
compiled code cannot use (functions srcjax cannot read, changing a global
list). It also invents fresh temporaries (``fresh``), never a local's, a
helper's or a name derivative code imports from :mod:`srcjax.adjoint`.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import inspect
import math
import re
import sys
import types
from collections.abc import Callable
from typing import Any

import libcst as cst
import numpy as np

from .. import adjoint as _adjoint
from .. import batched as _batched
from .. import composites as _composites
from .. import pytree, warm_cache
from ..core import Span, TranspileError, UnknownFunctionError, UnsupportedSyntaxError
from ..primitives import registry
from . import callees, closures, kwargs_params, star_params, tuple_params
from .callees import ALLOWED_BUILTINS
from .names import NODE_CLASSES, REVERSED_GETTERS, Visitor, code, reversed_getter, target_names
from .read import FunctionSource
from .syntax import attr_chain, dotted

__all__ = ["LIBRARY_MODULES", "REEXPORTED_MODULES", "RESERVED", "Resolver", "is_user_function", "local_names", "unwrap"]

# Names generated derivative and batched code imports from srcjax.adjoint and srcjax.batched:
# never used for temporaries.
RESERVED = {n for n in dir(_adjoint) if not n.startswith("_")} | {n for n in dir(_batched) if not n.startswith("_")}

REEXPORTED_MODULES = ("srcjax.order_stats", "srcjax.construction", "srcjax.collective_trees", "srcjax.index_writes",
                      "srcjax.lax_slicing", "srcjax.lax_numpy", "srcjax.lax_reduce", "srcjax.batch_keys",
                      "srcjax.batch_sums", "srcjax.batch_products")
LIBRARY_MODULES = ("srcjax.adjoint", "srcjax.batched", "srcjax.composites", "srcjax.numpy_extras", "srcjax.numpy_bits",
                   "srcjax.linalg_names", "srcjax.polynomials", "srcjax.scatter_combine",
                   "srcjax.random", "srcjax.nn", "srcjax.scipy.special", "srcjax.scipy.stats.norm", *REEXPORTED_MODULES)
"""The helpers generated source calls: transpiled like user code, shown as imports (those of
:data:`REEXPORTED_MODULES` from the module that re-exports them: ``srcjax.adjoint`` or ``srcjax.batched``)."""
STRUCTURAL_MODULES = ("srcjax.adjoint", "srcjax.batched", "srcjax.batch_sums", "srcjax.batch_products")
"""Derivatives' and vmap's own helpers: their tests and loop counts read a container's structure and flags, the
same in every example (vmap reads one its batch broadcast from the first row: ``batch_static``)."""

_MUTATING_METHODS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
                               "popitem", "add", "discard", "sort", "reverse", "fill", "resize", "itemset", "put",
                               "__setitem__", "__delitem__"})


# NumPy functions srcjax does not write, and what to write instead
_PER_SLICE = "loop over the axis (for row in x: ...; np.stack the results), or srcjax.vmap(f, in_axes=axis)"
_INSTEAD = {
    "apply_along_axis": _PER_SLICE, "apply_over_axes": _PER_SLICE, "vectorize": _PER_SLICE,
    "frompyfunc": _PER_SLICE,
    "histogram2d": "np.histogram of a combined bin index (np.digitize of each coordinate)",
    "histogramdd": "np.histogram of a combined bin index (np.digitize of each coordinate)",
}

# NumPy functions whose result has a size that depends on the data (srcjax's shapes are static), and
# what to write instead
_MASK = "keep the shape and mask instead: np.where(cond, x, fill), or np.sum(np.where(cond, x, 0))"
_DATA_SIZED = {
    "nonzero": _MASK, "flatnonzero": _MASK, "argwhere": _MASK, "compress": _MASK, "extract": _MASK,
    "trim_zeros": _MASK,
    "histogram_bin_edges": "give the bins as a number or an array of edges to np.histogram",
}

_UFUNC_METHODS = ("accumulate", "reduce", "at", "outer", "reduceat")


def composite(v: Any) -> Any:
    """``v``, or srcjax's implementation of it in NumPy terms when ``v`` is a NumPy function srcjax
    writes that way (``np.isclose``: :mod:`srcjax.composites`)."""
    try:
        return _composites.IMPLEMENTS.get(v, v)
    except TypeError:  # unhashable: not a function
        return v


def is_user_function(v: Any) -> bool:
    if getattr(v, "__srcjax_fn__", None) is not None:
        return True
    if not isinstance(v, types.FunctionType):
        return False
    mod = getattr(v, "__module__", "") or ""
    if mod in LIBRARY_MODULES:  # derivative and batching helpers are transpiled like user code
        return True
    if mod in ("numpy", "srcjax") or mod.startswith(("numpy.", "srcjax.")):
        return False
    return callees.origin(v) is None  # the standard library and installed packages are not the user's code


def unwrap(v: Any) -> Any:
    """A user function behind a srcjax wrapper (``@srcjax.compile``)."""
    inner = getattr(v, "__srcjax_fn__", None)
    return inner if inner is not None else v


def called(v: Any) -> Any:
    """What compiled code calling ``v`` reads: :func:`unwrap`'s function, or the one ``v`` names for
    being called inside compiled code (``__srcjax_called__``: a hessian's branch on its function's
    output shape, which only the caller's specialization knows)."""
    inner = getattr(v, "__srcjax_called__", None)
    return inner if inner is not None else unwrap(v)


def local_names(fdef: cst.FunctionDef) -> set[str]:
    """The names ``fdef`` binds: its parameters, assignment and ``for`` targets, a lambda's parameters (it
    becomes a nested def), and a nested ``def``'s name and locals (one flat namespace). One loop over a stack
    of the code nodes, as :func:`~.names.names_in` (a ``Visitor``'s walk made two calls a node)."""
    names: set[str] = set()
    p = fdef.params
    for prm in list(p.params) + list(p.posonly_params) + list(p.kwonly_params):
        names.add(prm.name.value)
    if isinstance(p.star_arg, cst.Param):
        names.add(p.star_arg.name.value)
    if p.star_kwarg is not None:
        names.add(p.star_kwarg.name.value)
    getters, nodes = REVERSED_GETTERS, NODE_CLASSES
    stack: list[Any] = [fdef]
    pop, push = stack.pop, stack.append
    name_t, attr_t, arg_t = cst.Name, cst.Attribute, cst.Arg
    while stack:
        n = pop()
        t = n.__class__
        if t is name_t:  # (no code under it)
            continue
        if t is attr_t or t is arg_t:  # (an attribute's or a keyword's name binds nothing: only the value is read)
            push(n.value)
            continue
        if t in _BINDS_TARGET:
            names.update(target_names(n.target))
        elif t is cst.FunctionDef and n is not fdef:  # a nested def: its name, and its own locals
            names.add(n.name.value)
            names.update(local_names(n))
            continue
        elif t is cst.Lambda:  # becomes a nested def (see lambda_function)
            names.update(prm.name.value for prm in n.params.params)
        try:
            getter, single = getters[t]
        except KeyError:
            getter, single = reversed_getter(t)
        got = getter(n)
        for v in (got,) if single else got:
            c = v.__class__
            if c in nodes:
                push(v)
            elif c is tuple or c is list:
                for x in v[::-1]:
                    if x.__class__ in nodes:
                        push(x)
    return names


_BINDS_TARGET = frozenset({cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For})


def rebound_parameters(fdef: cst.FunctionDef) -> set[str]:
    """The parameters of ``fdef`` its body assigns again (or a nested function or comprehension binds)."""
    return local_names(fdef.with_changes(params=cst.Parameters())) & local_names(
        fdef.with_changes(body=cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Pass()])])))


class Resolver:
    """The names of one user function (see the module docstring)."""

    def __init__(self, src: FunctionSource, helper_name: Callable[..., str],
                 bindings: dict[str, Any] | None = None) -> None:
        self.src = src
        # parameters fixed to a function (an activation passed by the caller); never one the body assigns
        # (`act = np.sin` in it: calls through `act` are not all calls of what was passed)
        rebound = rebound_parameters(src.fdef) if bindings else set()
        self.bindings = {k: v for k, v in (bindings or {}).items() if k not in rebound}
        self.helper_name = helper_name
        self.calls: list[Callable[..., Any]] = []
        self.unreserved: set[str] = set()  # helpers called only through variants (frontend/helper_checks.py)
        self.call_sites: dict[Callable[..., Any], Span | None] = {}  # where each of `calls` is first named
        built = src.built_names()  # (a tree built from ast: the names its builder met, no walk of the tree)
        self.locals = set(built.bound) if built is not None else local_names(src.fdef)
        self.used = set(self.locals) | src.name_set() | {"np", "math", "srcjax"}
        self.counts: dict[str, int] = {}
        self.temps: set[str] = set()
        self.closure_args: dict[int, list[str]] = {}  # id(a function made from a lambda) -> the locals it takes
        # nested functions srcjax writes for a name the user binds (`y, vjp_fn = srcjax.vjp(f, x)`): name -> (the
        # def, the static functions it calls by name); a transformation of the name lifts it (closures)
        self.made_defs: dict[str, tuple[cst.FunctionDef, dict[str, Any]]] = {}
        self._static: dict[int, tuple[Any, Any, tuple[bool, Any]]] = {}  # id(node) -> (node, reads, static_value)
        self._found: dict[str, tuple[Any, tuple[bool, Any]]] = {}  # name -> (recording, lookup's answer) if found

    # -- errors and spans ---------------------------------------------------------
    def span(self, node: cst.CSTNode) -> Span | None:
        return self.src.span(node)

    def unsupported(self, node: cst.CSTNode, what: str, hint: str | None = None) -> UnsupportedSyntaxError:
        return UnsupportedSyntaxError(f"{what} is not supported", span=self.span(node), hint=hint)

    # -- names -----------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        base = re.sub(r"\W", "_", hint) or "t"
        if base[0].isdigit():
            base = "t" + base
        if base not in self.used and not hasattr(builtins, base) and base not in RESERVED:
            self.used.add(base)
            self.temps.add(base)
            return base
        k = self.counts.get(base, 0)
        while True:
            k += 1
            name = f"{base}_{k}"
            if name not in self.used and name not in RESERVED:
                self.counts[base] = k
                self.used.add(name)
                self.temps.add(name)
                return name

    def lookup(self, name: str) -> tuple[bool, Any]:
        """``(True, value)`` of ``name`` in the function's closure, globals or builtins. A name found is remembered
        while this function is read, under the same recording of reads (as :meth:`static_value`: one opened
        meanwhile gets the read noted again; in the same one, a later look-up's note would be one made already)."""
        hit = self._found.get(name)
        top = warm_cache.current()
        if hit is not None and hit[0] is top:
            return hit[1]  # type: ignore[no-any-return]
        found = self._lookup(name)
        if found[0]:
            self._found[name] = (top, found)
        return found

    def _lookup(self, name: str) -> tuple[bool, Any]:
        if name in self.src.closure:
            warm_cache.note_closure(name, self.src.closure[name])
            return True, self.src.closure[name]
        if name in self.src.globals:
            warm_cache.note_global(self.src.globals, name, self.src.globals[name])
            return True, self.src.globals[name]
        if hasattr(builtins, name):
            return True, getattr(builtins, name)
        if name == "srcjax":  # (the spelling the front end writes, `srcjax.lax.cond`, where the user imported
            return True, sys.modules["srcjax"]  # `lax` or `cond` alone: jax_spellings.lax_control_call)
        return False, None

    def bound_builtin(self, name: str) -> str | None:
        """The builtin's own name where the parameter ``name`` of a bound helper is fixed to a builtin
        (``_apply(print, x)``: ``act`` is ``print``) that its name still means here; None otherwise."""
        if not self.bindings:  # (most functions, every one srcjax wrote: resolve_name asks for every name)
            return None
        v = self.bindings.get(name)
        own = getattr(v, "__name__", None)
        if not isinstance(v, types.BuiltinFunctionType) or not isinstance(own, str) or own == name or \
                getattr(builtins, own, None) is not v or own in self.locals or self.lookup(own)[1] is not v:
            return None
        return own

    def resolve_name(self, node: cst.Name) -> cst.BaseExpression:
        name = node.value
        if (own := self.bound_builtin(name)) is not None:
            return self.resolve_name(cst.Name(own))
        if name in self.bindings:  # a function-valued parameter, fixed: calls through it are calls of it
            found, v = True, self.bindings[name]
        elif name in self.locals or name in self.temps or name in ("None", "True", "False"):
            return node
        else:
            found, v = self.lookup(name)
        if not found:
            raise UnknownFunctionError(f"name {name!r} is not defined", span=self.span(node))
        v = composite(v)
        if v is None:  # e.g. `from numpy import newaxis`
            return cst.Name("None")
        if v is np:
            return cst.Name("np")
        if v is math:
            return cst.Name("math")
        if isinstance(v, types.ModuleType) and v.__name__.startswith("numpy."):
            return dotted("np" + v.__name__[len("numpy"):])
        prim = registry.lookup(v) if callable(v) else None
        if prim is not None:
            return dotted(prim.path)
        if is_user_function(v):
            fn = called(v)
            if fn not in self.calls:
                self.calls.append(fn)
                self.call_sites[fn] = self.span(node)
            helper = self.helper_name(fn, self.used)
            # no temporary may shadow it (`f = srcjax.jit(srcjax.vmap(lambda x: ...))`, then `f(X)`: the call's
            # result was named `lambda_fn_vmap`, after the helper it calls, which NumPy then could not call)
            self.used.add(helper)
            return cst.Name(helper)
        if hasattr(builtins, name) and v is getattr(builtins, name) and name not in ALLOWED_BUILTINS:
            raise UnknownFunctionError(f"the builtin {name}() is not supported in compiled code",
                                       span=self.span(node), hint="compute with NumPy on arrays (np.unique, "
                                       "np.sort, ...), or call it outside and pass the result in as an argument")
        return node

    def reserve_helpers(self, fdef: cst.FunctionDef) -> None:
        """Name every user function the body refers to before any temporary is made, so that no
        temporary takes a helper's name (``cube_1 = cube_1(x)`` when another module's ``cube``
        becomes ``cube_1``). The body's code nodes in source order (helpers are named in the order met),
        by one loop over a stack; a name chain with a static value (``np.tanh``, ``helpers.f``) is one
        reference, an attribute's and a keyword's own name none. A name a comprehension's ``for`` binds in the
        function (``[x * k for k in ks]``) is that comprehension's, never a module's function ``k``: not reserved
        (it was, and ``srcjax.source`` printed ``k`` as a helper). A tree built from ``ast`` (the text srcjax
        writes, most often) is not walked: its builder noted its names and attributes in this order."""
        refs = self.src.built_refs(fdef)
        met, comp = self._met_by_walk(fdef) if refs is None else (self._met_in(refs), set())
        for name, v in met:  # (after the walk: a comprehension's element is met before its `for`)
            if name is None:
                self._reserve(v)
            elif name not in comp and name not in self.unreserved:
                found, v = self.lookup(name)
                if found:
                    self._reserve(v)

    def _met_in(self, refs: tuple[Any, ...]) -> list[tuple[str | None, Any]]:
        """:meth:`_met_by_walk`'s names and values met, from a built tree's ``refs`` (``cst_functions.BuiltNames``:
        no comprehension in such a tree); an attribute with a static value skips the names in it, as the walk
        does not go into it."""
        seen: set[str] = set()
        met: list[tuple[str | None, Any]] = []
        bindings, locals_ = self.bindings, self.locals
        i, end = 0, len(refs)
        while i < end:
            r = refs[i]
            i += 1
            if r.__class__ is tuple:
                try:
                    ok, v = self.static_value(r[0])
                except UnknownFunctionError:
                    ok = False
                if ok:
                    met.append((None, v))
                    i = r[1]
                continue
            name = r.value
            if name not in seen:
                seen.add(name)
                if name in bindings:
                    met.append((None, bindings[name]))
                elif name not in locals_:
                    met.append((name, None))
        return met

    def _met_by_walk(self, fdef: cst.FunctionDef) -> tuple[list[tuple[str | None, Any]], set[str]]:
        """(:meth:`reserve_helpers`) the names not local met in ``fdef``'s body (``(name, None)``, or ``(None,
        value)`` for a parameter fixed to a function) and the values of name chains, in the order of source;
        and the names comprehensions bind."""
        seen: set[str] = set()  # (the names met: a name means the same wherever it is read in the function)
        met: list[tuple[str | None, Any]] = []  # (name, None) of a name not local, (None, value) of a chain's value
        comp: set[str] = set()  # names a comprehension's `for` binds: its own, never a module's function
        bindings, locals_ = self.bindings, self.locals
        getters, nodes = REVERSED_GETTERS, NODE_CLASSES
        name_t, attr_t, arg_t, for_t = cst.Name, cst.Attribute, cst.Arg, cst.CompFor
        stack: list[Any] = [fdef.body]
        pop, push = stack.pop, stack.append
        while stack:
            n = pop()
            t = n.__class__
            if t is name_t:
                if n.value not in seen:
                    seen.add(n.value)
                    if n.value in bindings:  # (a parameter fixed to a function: calls through it call that one)
                        met.append((None, bindings[n.value]))
                    elif n.value not in locals_:
                        met.append((n.value, None))
                continue
            if t is for_t:
                comp.update(target_names(n.target))
            elif t is attr_t:
                try:
                    ok, v = self.static_value(n)
                except UnknownFunctionError:
                    ok = False
                if ok:
                    met.append((None, v))
                else:
                    push(n.value)
                continue
            elif t is arg_t:
                push(n.value)
                continue
            try:
                getter, single = getters[t]
            except KeyError:
                getter, single = reversed_getter(t)
            got = getter(n)
            for c in (got,) if single else got:
                k = c.__class__
                if k in nodes:
                    push(c)
                elif k is tuple or k is list:
                    for x in c[::-1]:
                        if x.__class__ in nodes:
                            push(x)
        return met, comp

    def _reserve(self, v: Any) -> None:
        """(:meth:`reserve_helpers`) the helper name of ``v`` where it is a user function."""
        if is_user_function(v) and not (callable(v) and registry.lookup(v) is not None):
            if star_params.star_parameter(unwrap(v)) is not None or tuple_params.spreads(unwrap(v)) or \
                    kwargs_params.kwargs_parameter(unwrap(v)) is not None:
                # (`def f(*xs)`, `f(y, *args)` of a parameter, `def f(x, **kw)`: its calls name copies of it)
                self.used.add(unwrap(v).__name__)
                return
            self.used.add(self.helper_name(unwrap(v)))

    def static_value(self, node: cst.BaseExpression) -> tuple[bool, Any]:
        """The value of a module-rooted name chain (``np.tanh``), if it has one. Remembered per node while this
        function is read (its names do not change meanwhile; a call's spelling checks ask it of the same callee
        again and again: ~8 times a node in a first call), under the same recording of reads
        (``warm_cache.recording``: one opened meanwhile gets the reads noted again)."""
        hit = self._static.get(id(node))
        top = warm_cache.current()
        if hit is not None and hit[0] is node and hit[1] is top:
            return hit[2]  # type: ignore[no-any-return]
        found = self._static_value(node)
        self._static[id(node)] = (node, top, found)  # (the node kept: its id is not reused meanwhile)
        return found

    def _static_value(self, node: cst.BaseExpression) -> tuple[bool, Any]:
        chain = attr_chain(node)
        if chain is None or chain[0] in self.locals:
            return False, None
        found, v = self.lookup(chain[0])
        if not found:
            return False, None
        for part in chain[1:]:
            if isinstance(v, np.ufunc) and part in _UFUNC_METHODS:  # np.maximum.accumulate
                v = getattr(v, part)
                continue
            if not isinstance(v, types.ModuleType) and not isinstance(v, type):
                return False, None
            if not hasattr(v, part):
                raise UnknownFunctionError(f"{'.'.join(chain)} does not exist", span=self.span(node))
            base, v = v, getattr(v, part)
            warm_cache.note_attr(base, part, v)
        return True, composite(v)

    def helper_call_name(self, fn: Callable[..., Any], node: cst.CSTNode) -> cst.Name:
        """The name generated code calls the user function (or generated derivative) ``fn`` by."""
        if fn not in self.calls:
            self.calls.append(fn)
            self.call_sites[fn] = self.span(node)
        callee = cst.Name(self.helper_name(fn, self.used))  # (a new copy's name is none of this function's names)
        self.used.add(callee.value)  # no temporary may shadow it
        return callee

    def transformed(self, node: cst.Call) -> Any:
        """``srcjax.grad(f)``, ``srcjax.vmap(f, in_axes=(0, None))`` (any srcjax transformation) with
        static arguments, applied now: the function it writes (None: not such a call)."""
        ok, fv = self.static_value(node.func)
        if not ok or not getattr(fv, "__srcjax_transform__", False):
            return None
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        extra: list[str] = []
        for i, a in enumerate(node.args):
            if a.star:
                return None
            if i == 0 and a.keyword is None and (lifted := self.lifted(a.value)) is not None:
                args.append(lifted[0])  # lambda p: loss(p, x), or a def in the body reading locals
                extra = lifted[1]
                continue
            if i == 0 and a.keyword is None and isinstance(a.value, cst.Call) and \
                    (inner := self.transformed(a.value)) is not None:  # vmap(grad(f)): grad applied first
                args.append(inner)
                extra = self.closure_args.get(id(unwrap(inner)), [])
                continue
            known, v = self.constant(a.value)
            if not known:
                return None
            if a.keyword is not None:
                kwargs[a.keyword.value] = v
            else:
                args.append(v)
                if i == 0 and isinstance(a.value, cst.Name) and a.value.value in self.bindings:
                    # (a parameter of a bound variant fixed to a lifted function: it takes the variant's own
                    # parameters for the locals it reads, `srcjax.vmap(fn)(xs)` in `map_rows(fn, xs)`)
                    extra = self.closure_args.get(id(unwrap(v)), [])
        if extra and not closures.with_extra_axes(fv, args, kwargs, _own_params(args[0], len(extra)), len(extra)):
            return None
        try:
            made = fv(*args, **kwargs)
            made = getattr(made, "__srcjax_called__", None) or made  # (a hessian: its branch on the output)
        except TranspileError as e:
            if e.span is None:
                raise e.with_span(self.span(node)) from None
            raise
        if getattr(unwrap(made), "__srcjax_derived__", None) is None and unwrap(made) is made:
            return None  # (srcjax.jit(f)(x) inside: a call of f, as the jit of an already compiled function is)
        if extra:
            self.closure_args[id(unwrap(made))] = extra
        return made

    def for_passing(self, made: Any, call: cst.Call) -> Any:
        """``made`` (a transformation's result that ``call`` calls), or the vmap serving a call passing
        its arguments as ``call`` does (``vmap.Vmapped.for_passing``: in_axes that follow what a call
        passes, keyword arguments mapped over their axis 0)."""
        pick = getattr(made, "for_passing", None)
        if pick is None or any(a.star for a in call.args):
            return made
        try:
            return pick(sum(a.keyword is None for a in call.args),
                        [a.keyword.value for a in call.args if a.keyword is not None])
        except TranspileError as e:
            raise e.with_span(self.span(call)) from None

    def passing(self, func: cst.Name, call: cst.Call) -> Any:
        """The vmap serving ``call`` where ``func`` names one whose in_axes follow what a call passes
        (:meth:`for_passing`), else None."""
        v = self.bindings[func.value] if func.value in self.bindings else self.lookup(func.value)[1]
        return None if getattr(v, "_one_axis", None) is None else self.for_passing(v, call)

    def lifted(self, node: cst.BaseExpression) -> tuple[Any, list[str]] | None:
        """A lambda, or the name of a function defined in this body, that reads this function's locals:
        lifted to a function taking them as extra arguments (:mod:`.closures`); None otherwise."""
        if isinstance(node, cst.Lambda):
            return closures.lift_lambda(self, node, local_names)
        if isinstance(node, cst.Name) and node.value in self.locals and node.value not in self.bindings:
            return closures.lift_function(self, node.value, local_names)
        return None

    def closure_call_args(self, made: Any) -> list[cst.Arg]:
        """The caller's locals a function made from a lambda takes after its own arguments."""
        return [cst.Arg(cst.Name(n)) for n in self.closure_args.get(id(unwrap(made)), [])]

    def constant(self, node: cst.BaseExpression) -> tuple[bool, Any]:
        """The value of a literal (``(0, None)``, ``-1``) or of a global name (a function, a constant)."""
        chain = attr_chain(node)
        if chain is not None:
            if chain[0] in self.locals or chain[0] in self.bindings:
                return (True, self.bindings[chain[0]]) if len(chain) == 1 and chain[0] in self.bindings \
                    else (False, None)
            try:
                return self.static_value(node)
            except TranspileError:
                return False, None
        if isinstance(node, (cst.Tuple, cst.List)) and any(
                isinstance(e.value, cst.Call) for e in node.elements if isinstance(e, cst.Element)):
            items = [self.constant(e.value) if isinstance(e, cst.Element) else (False, None) for e in node.elements]
            if not all(k for k, _ in items):
                return False, None
            vals = [v for _, v in items]
            return True, (tuple(vals) if isinstance(node, cst.Tuple) else vals)
        if isinstance(node, cst.Call):
            return self.record_constant(node)
        try:
            return True, ast.literal_eval(code(node))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return False, None

    def record_constant(self, node: cst.Call) -> tuple[bool, Any]:
        """``Params(-1, 0)``, ``Layer(w=None, b=0)``: a NamedTuple or plain dataclass (or one registered with
        ``register_dataclass``) of constants, built now (a transformation's ``in_axes``/``out_axes``)."""
        try:
            ok, cls = self.static_value(node.func)
        except TranspileError:
            return False, None
        if not ok or not isinstance(cls, type) or not (
                (issubclass(cls, tuple) and hasattr(cls, "_fields")) or cls in pytree.DATA_FIELDS or
                (dataclasses.is_dataclass(cls) and not hasattr(cls, "__post_init__"))):
            return False, None
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for a in node.args:
            if a.star:
                return False, None
            known, v = self.constant(a.value)
            if not known:
                return False, None
            if a.keyword is not None:
                kwargs[a.keyword.value] = v
            else:
                args.append(v)
        try:
            return True, cls(*args, **kwargs)
        except Exception:  # noqa: BLE001 - (wrong arguments: left to the call as written, and its error)
            return False, None

    def assigned_once(self, name: str) -> bool:
        """Whether the function binds ``name`` in exactly one plain assignment (and nowhere else)."""
        plain = 0
        other = name in {p.name.value for p in (*self.src.fdef.params.params, *self.src.fdef.params.posonly_params,
                                                 *self.src.fdef.params.kwonly_params)}

        class V(Visitor):
            def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
                nonlocal plain
                plain += target_names(n.target).count(name)

            def visit_AugAssign(self, n: cst.AugAssign) -> None:
                nonlocal other
                other = other or name in target_names(n.target)

            def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
                nonlocal other
                other = other or name in target_names(n.target)

            def visit_For(self, n: cst.For) -> None:
                nonlocal other
                other = other or name in target_names(n.target)

            def visit_FunctionDef(self, n: cst.FunctionDef) -> None:
                nonlocal other
                other = other or n.name.value == name

        V().walk(self.src.fdef.body)
        return plain == 1 and not other

    def check_callee(self, node: cst.Call, fv: Any) -> None:
        """Refuse calls to NumPy functions outside the table and to callees srcjax cannot read (library
        code, C functions, methods of other objects): see :mod:`srcjax.frontend.callees`."""
        if _HELPERS_PASSED.get(id(fv)) is fv:  # (a helper of srcjax's that passed: the same answer)
            return
        if isinstance(fv, type) and fv in pytree.REGISTERED:  # a registered container class: built while specializing
            return
        mod = getattr(fv, "__module__", None) or ""
        name = ".".join(attr_chain(node.func) or ["?"])
        if callable(fv) and callees.is_random(fv) and not isinstance(fv, type):  # np.random.normal, random.random
            raise callees.refusal(fv, span=self.span(node), name=name if name.startswith("np.") else None)
        if (callable(fv) and (mod == "numpy" or mod.startswith("numpy."))
                and not isinstance(fv, type) and fv not in callees.STATIC_NUMPY):
            short = name.split(".")[-1]
            hint = _DATA_SIZED.get(short) or _INSTEAD.get(short) or "see the supported NumPy subset in docs/numpy.md"
            raise UnknownFunctionError(f"{name} is not supported by srcjax (yet)"
                                       + (": its result's size depends on the data" if short in _DATA_SIZED else ""),
                                       span=self.span(node), hint=hint)
        if fv is builtins.print:  # run-time values printed at every call (srcjax/lower/host_print.py)
            return
        if (isinstance(fv, (types.BuiltinFunctionType, types.MethodType)) or callees.library_function(fv)) \
                and not callees.is_static_pure(fv) and callees.user_method(fv) is None:
            raise callees.refusal(fv, span=self.span(node))
        if type(fv) is types.FunctionType and fv.__module__ in LIBRARY_MODULES and \
                getattr(sys.modules.get(fv.__module__), fv.__name__, None) is fv:
            _HELPERS_PASSED[id(fv)] = fv  # (its module's own helper, not a copy: alive as long as the process)

    def check_global_mutation(self, call: cst.Call) -> None:
        """``G.append(x)`` on a module global (or closure) list/dict/set/array: refused, not run at transpile time."""
        f = call.func
        if not (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name)):
            return
        name = f.value.value
        if name in self.locals or name in self.temps:
            return
        found, v = self.lookup(name)
        if found and isinstance(v, list | dict | set | np.ndarray) and f.attr.value in _MUTATING_METHODS:
            raise UnsupportedSyntaxError(
                f"`{name}.{f.attr.value}(...)` changes the global `{name}`; compiled code is a pure function "
                "and would change it once, while transpiling, not on every call", span=self.span(call),
                hint=f"return the new value instead (or pass {name} in as an argument and return its update)")


# id() -> a library helper check_callee let through (every check reads the function alone: its answer never changes;
# generated sources call index_add, unbroadcast, batch_align... in nearly every line)
_HELPERS_PASSED: dict[int, Any] = {}


def _own_params(fn: Any, n_extra: int) -> int:
    """How many parameters of a lifted function are its own (the rest are the caller's locals)."""
    return len(inspect.signature(unwrap(fn)).parameters) - n_extra
