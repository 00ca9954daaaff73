"""grad, value_and_grad, jvp: transformations that write source (vjp: :mod:`srcjax.split_vjp`; the
Jacobians: :mod:`srcjax.jacobian`).

Each transformation reads the (normalized) program of ``fn``, writes the derivative as Python
source (:mod:`srcjax.transforms.ad`), executes that source into a real Python function (its text
registered with ``linecache`` so ``inspect`` — and therefore srcjax itself — can read it again), and
returns it compiled. ``srcjax.source(srcjax.grad(f))`` shows it; ``srcjax.grad(srcjax.grad(f))`` transforms it.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import types
from collections.abc import Callable, Sequence
from typing import Any

import libcst as cst
import numpy as np

from . import (
    adjoint,
    core,
    cpp_calls,
    gc_pause,
    general_hessian,
    pytree,
    reverse_over,
    star_args,
    warm_cache,
    warm_transforms,
)

# api's underscore names are srcjax-internal (api is a public module: no underscore would read as API);
# the transformations share them with srcjax.compile on purpose
from .api import Compiled, WrittenWhenRead, _as_compiled, _clean, _is_leaf, _leaf_aval, _tree_key, eval_shape
from .core import ArgumentError, DTypeError, ShapeError, TranspileError
from .custom import custom_vjp, owner_of
from .frontend import provenance
from .frontend.names import Names, walk
from .frontend.parsed import parse
from .frontend.program import Program
from .frontend.read import read_function
from .generated import exec_generated, load_module
from .grad_output import grad_output_error, return_span
from .jacobian_source import _positional_and_call, _then, jacobian_source  # (call helpers shared on purpose)
from .left_out import filled
from .lifetimes import PerFunction
from .transforms import ad, custom_rules, readable, split
from .transforms.simplify import simplify_source

__all__ = ["grad", "value_and_grad", "jvp", "derivative_function"]

_COUNTER = itertools.count()
_DERIVED: PerFunction[Callable[..., Any]] = PerFunction("derived")  # base -> key -> its derivative


def _argnums(argnums: int | Sequence[int], n: int) -> tuple[tuple[int, ...], bool]:
    single = isinstance(argnums, int)
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for a in nums:
        if not isinstance(a, int) or isinstance(a, bool):
            raise ArgumentError(f"argnums must be an int or a tuple of ints, not {argnums!r}")
        if not -n <= a < n:
            raise ArgumentError(f"argnums {a} is out of range for a function with {n} parameters",
                                hint=f"argnums counts the function's positional parameters from 0 (0 to {n - 1})")
    return tuple(a % n for a in nums), single


def derivative_function(fn: Callable[..., Any], kind: str, argnums: int | Sequence[int] = 0,
                        has_aux: bool = False, max_iters: int | None = None,
                        bindings: dict[str, Any] | None = None) -> Callable[..., Any]:
    """:func:`_derivative_function`; reverse mode of a Jacobian differentiates its loop form (one
    JVP/VJP per basis vector in a rolled loop): reverse mode through batched source's helpers inside
    branches on data is not supported yet, and the loop form's tapes are what it differentiates."""
    twin = getattr(_as_compiled(fn).fn, "__srcjax_loop_twin__", None)
    if twin is not None and kind in ("grad", "value_and_grad", "vjp", "vjp_split", "jacrev"):
        fn = twin()
    return _derivative_function(fn, kind, argnums, has_aux, max_iters, bindings)


def _derivative_function(fn: Callable[..., Any], kind: str, argnums: int | Sequence[int] = 0,
                         has_aux: bool = False, max_iters: int | None = None,
                         bindings: dict[str, Any] | None = None) -> Callable[..., Any]:
    """The plain Python function srcjax writes for ``kind`` in grad/value_and_grad/vjp/jvp.

    ``max_iters`` bounds reverse mode through ``while`` loops on data (see
    :mod:`srcjax.transforms.bounded`); forward mode needs no bound. ``bindings``
    fixes function-valued parameters (``act`` in ``f(x, act)``): the derivative
    calls that function where ``f`` calls ``act``, and is written once per function.
    """
    c = _as_compiled(fn)
    _refuse_unbound(c, kind)
    base = c.fn
    prog = c.program if not bindings else Program(base, bindings)
    nums, single = _argnums(argnums, len(c.params))
    if kind in ("jvp", "jvp_tangent"):
        max_iters = None
    elif max_iters is not None and (isinstance(max_iters, bool) or not isinstance(max_iters, int) or max_iters < 1):
        raise DTypeError(f"max_iters must be a positive int, not {max_iters!r}")
    key = (kind, nums, single, has_aux, max_iters, tuple(sorted((bindings or {}).items())))
    hit = _DERIVED.get(base, key)
    if hit is not None:
        return hit
    entry_name = prog.entry.name
    if owner_of(base) is not None:  # a custom_vjp/custom_jvp itself: differentiate a caller, so its rule applies
        prog = _custom_caller(base)
    custom_rules.add_rules(prog)  # before naming: a rule may be called f_jvp too
    name = Names(prog.functions).fresh(f"{entry_name}_{kind.removesuffix('_arrays').removesuffix('_tangent')}")
    header = "import numpy as np\nfrom srcjax.adjoint import *\n\n\n"  # (ad.ADJOINT_IMPORTS: its __all__)
    halves: split.Split | None = None
    origins: dict[str, str] = {}  # generated helper -> the program function it derives from
    extra: dict[str, Callable[..., Any]] = {}  # functions the generated source calls by name (other derivatives)
    if kind in ("grad", "value_and_grad") and getattr(base, "__srcjax_derived__", None) is not None and \
            not any(isinstance(owner_of(nf.fn), custom_vjp) for nf in prog.functions.values()):
        # Differentiating generated derivative code (grad of grad): its inputs must be scalars for a
        # scalar output, so forward mode over it gives the same numbers without a tape of tapes.
        # (Not through a custom_vjp, which has no forward mode: reverse over reverse, as JAX.)
        text = _forward_grad_source(base, name, nums, single, kind == "value_and_grad", has_aux, extra)
    elif kind in ("grad", "value_and_grad", "vjp", "vjp_split"):
        def reverse(prog: Program) -> str:
            nonlocal halves, name
            origins.clear()
            if kind == "vjp_split":
                name, bwd = split.fresh_names(prog, f"{entry_name}_vjp")
                halves = split.split_source(prog, nums, name, bwd, header, origins, max_iters)
                origins[bwd] = prog.entry.name
                return halves.text
            if kind == "vjp":
                return ad.vjp_source(prog, nums, name, origins, max_iters)
            try:
                return ad.grad_source(prog, nums, name, value=kind == "value_and_grad", has_aux=has_aux,
                                      single=single, origins=origins, max_iters=max_iters)
            except ShapeError as e:  # a container output: at the user's return
                raise e.with_span(return_span(base, has_aux)) from None
            except ad.DifferentiationError as e:  # (has_aux's pair missing: at the user's return too)
                raise e.with_span(return_span(base, False) if e.at_return else None) from None

        try:
            prog = reverse_over.inline_tape_calls(prog)  # (generated code's helper halves: written out)
            reverse_over.refuse_tapes_across_calls(base, prog)
            text = _as_loops_if_needed(base, bindings, prog, reverse)
        except ad.DifferentiationError as e:
            if kind not in ("vjp", "vjp_split") and getattr(base, "__srcjax_derived__", None) is not None:
                e.hint = ("a custom_vjp has no forward mode, so grad of grad through it runs reverse over "
                          "reverse (reverse mode of the generated gradient): give the function a srcjax.custom_jvp "
                          "rule to differentiate it in forward mode instead")
            raise
    elif kind.startswith(("jacfwd", "jacrev")):  # (_loop: the loop form; _arrays: the array form)
        text = jacobian_source(base, name, nums[0], kind[:6], max_iters, extra, derivative_function,
                               batched="_loop" not in kind, arrays=kind.endswith("_arrays"))
    elif kind in ("jvp", "jvp_tangent"):  # (jvp_tangent: the output's tangent alone, for a Jacobian's array form)
        text = _as_loops_if_needed(base, bindings, prog, lambda p: ad.jvp_source(p, nums, name, origins,
                                                                                 kind == "jvp_tangent"))
    else:  # pragma: no cover
        raise ValueError(kind)
    keep, pure = readable.user_names(prog), set(ad.ADJOINT_IMPORTS)  # (the user's names stay as written)
    if kind.startswith(("jacfwd", "jacrev")) and "_loop" not in kind:
        # (a Jacobian's batched form: jacobian_source's template, already one call per line with fresh names and
        # nothing to fold, which the text passes gave back unchanged, parsing it three times)
        anf_text = module_text = header + text
    else:
        # (the parameters read from the module the simplifier parses next: one parse, shared)
        floats = _float_parameters(header + text, name, c.params, nums, kind)
        # (jvp_tangent: a Jacobian's array form calls it with a basis of the argument's tangents, which has the
        # argument's shape and dtype; `broadcast_like(x_dot[1:], sub)` is then x_dot[1:] itself)
        alike = {name: _tangent_pairs(header + text, name, c.params, nums)} if kind == "jvp_tangent" else None
        anf_text = text if halves is not None else simplify_source(header + text, pure, floats, keep, alike=alike)
        module_text = readable.readable_source(anf_text, pure, keep)
    module_text, marked = provenance.unmark(module_text, same_tree=True)  # (each line's user statement)
    anf_text = provenance.strip(anf_text, same_tree=True)  # (the marked texts' trees serve: not parsed again)
    filename = f"<srcjax.{kind} of {base.__qualname__} #{next(_COUNTER)}>"
    owners = {g: prog.functions.get(origins.get(g, prog.entry.name), prog.entry) for g in [name, *origins]}
    if halves is not None:
        owners[halves.bwd] = prog.entry
    try:
        code = load_module(filename, module_text, owners, marked)
    except SyntaxError as e:  # pragma: no cover - a bug in the generator
        raise TranspileError(f"internal error: generated {kind} source does not parse: {e}\n{module_text}") from e
    functions = exec_generated(code, name, prog, origins, extra)
    readable.keep_anf(functions, anf_text, module_text)
    custom_rules.mark_transposes(prog, functions)
    derived: Any = functions[name]
    derived.__srcjax_derived__ = (kind, base, nums)
    if kind in ("jacfwd", "jacrev", "jacfwd_arrays", "jacrev_arrays"):  # (the loop form of the same form)
        derived.__srcjax_loop_twin__ = functools.partial(derivative_function, fn, kind[:6] + "_loop" + kind[6:],
                                                         argnums, max_iters=max_iters)
    if halves is not None:  # the forward half; the backward half and how to call it hang on it
        functions[halves.bwd].__srcjax_derived__ = (kind, base, nums)  # type: ignore[attr-defined]
        derived.__srcjax_split__ = (functions[halves.bwd], halves.reads, halves.residuals)
    _DERIVED.set(base, key, derived)
    return derived


def _tangent_pairs(text: str, name: str, params: list[str], nums: tuple[int, ...]) -> tuple[tuple[str, str], ...]:
    """``(x_dot, x)`` for each tangent parameter of the generated JVP ``name`` and its primal."""
    fdef = next((n for n in parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if fdef is None:  # pragma: no cover - the writer wrote it
        return ()
    return tuple((a.arg, params[i]) for a, i in zip(fdef.args.args[len(params):], nums))


def _float_parameters(text: str, name: str, params: list[str], nums: tuple[int, ...],
                      kind: str) -> dict[str, frozenset[str]]:
    """The parameters of the derivative ``name`` that are floating point (or containers) whenever it
    runs: the differentiated ones (``_Derived`` checks them), and for jvp and vjp the tangents and
    the output's cotangent after them. What the simplifier may assume (a float32 ``x`` times 2.0
    stays float32: no cast to keep). (Not that a tangent has its primal's dtype: grad of grad
    seeds a Python float's tangent with a float64 array, not a Python float.)"""
    floats = {params[i] for i in nums}
    if kind in ("jvp", "jvp_tangent", "vjp"):
        fdef = next((n for n in parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name), None)
        if fdef is not None:
            floats.update(a.arg for a in fdef.args.args[len(params):])
    return {name: frozenset(floats)}


def _as_loops_if_needed(base: Callable[..., Any], bindings: dict[str, Any] | None, prog: Program,
                        write: Callable[[Program], str]) -> str:
    """``write(prog)``; if it meets a comprehension, a generator expression or a builtin ``sum`` over
    differentiated values, ``write`` of the program read again with those written as loops (which
    derivatives follow: ``items.append(y)``, ``total = total + y``)."""
    try:
        return write(prog)
    except ad.ComprehensionError:
        if owner_of(base) is not None:
            raise
        prog = Program(base, bindings, comprehension_loops=True)
        custom_rules.add_rules(prog)
        # (read again: the generated helper halves handed the tape written out again, or refused, as for the
        # first read; without it reverse mode over them lost the derivative through the tape, a silent zero)
        prog = reverse_over.inline_tape_calls(prog)
        reverse_over.refuse_tapes_across_calls(base, prog)
        return write(prog)


_CALLERS: PerFunction[Program] = PerFunction("caller")


def _custom_caller(fn: Callable[..., Any]) -> Program:
    hit = _CALLERS.get(fn)
    if hit is None:
        hit = _CALLERS.set(fn, None, Program(custom_rules.trampoline(fn)))
    return hit


def _forward_grad_source(base: Callable[..., Any], name: str, nums: tuple[int, ...], single: bool,
                         value: bool, has_aux: bool, extra: dict[str, Callable[..., Any]]) -> str:
    if has_aux:
        raise ad.DifferentiationError("has_aux is not supported when differentiating a derivative")
    params, args = _positional_and_call(base)
    lines = [f"def {name}({ad.signature(_as_compiled(base).program.entry)}):"]
    dots = []
    for k in nums:
        jv = derivative_function(base, "jvp", (k,))
        p = params[k]
        lines.append(f"    assert not is_tree({p}) and np.ndim({p}) == 0, 'grad of a derivative needs scalar inputs: "
                     "use jacfwd or hessian'")
        lines.append(f"    out, {p}_dot = {jv.__name__}({_then(args, f'ones_like({p})')})")
        dots.append(f"{p}_dot")
        extra[jv.__name__] = jv
    g = dots[0] if single else "(" + ", ".join(dots) + ",)"
    lines.append(f"    return {'out, ' if value else ''}{g}")
    return "\n".join(lines) + "\n"


class _Derived(WrittenWhenRead, Compiled):  # type: ignore[misc]  # (fn: a property over Compiled's attribute)
    """A compiled derivative; checks that differentiated arguments are floating point.

    *Lazy* (``_lazy``) when a new process finds in the level-2 cache (``warm_cache.py``) that this
    derivative was written before from unchanged sources: ``fn`` is then the function differentiated,
    standing in, and the derivative is written only if a call's program is not in that cache (or
    when anything reads ``fn``: ``source()``, ``lower()``, another transformation)."""

    _lazy = False
    _unbound: str | None = None  # a parameter it calls with no function default: `fn` is the function, standing in

    def _write_pending(self) -> None:
        if self._lazy:
            self._materialize()

    def __init__(self, fn: Callable[..., Any], check: tuple[int, ...], what: str, **kw: Any) -> None:
        super().__init__(fn, **kw)
        self._check = check
        self._what = what
        self._origin: tuple[Any, ...] | None = None  # (fn, kind, argnums, has_aux, max_iters), for _bound
        self._primal: Callable[..., Any] | None = None  # the function differentiated
        self._primal_nargs: int | None = None  # jvp, vjp: the leading arguments are the primal's (then tangents)
        self._bound: dict[tuple[Any, ...], _Derived] = {}
        self._needs: set[str] = set()  # parameters called as functions: a function must be passed for each
        self._output_of: tuple[bool, str] | None = None  # grad: (has_aux, srcjax.grad): a real scalar output

    def _materialize(self) -> None:
        """Write the derivative (what :func:`_wrap_new` does unless lazy)."""
        fn, kind, argnums, has_aux, max_iters = self._origin  # type: ignore[misc]
        c = _as_compiled(fn)
        try:
            with warm_cache.recording(self._reads), gc_pause.paused():  # (gc_pause: first calls)
                needs = _called_parameters(c)
                # a function calling a parameter is differentiated once the caller says which function it is
                derived = _stand_in(c, needs, fn, kind, argnums, has_aux, max_iters)
        except TranspileError as e:
            raise _clean(e) from None
        self._needs = needs
        self._unbound = _unbound(c, needs)
        self._install(derived)

    def _install(self, derived: Callable[..., Any]) -> None:
        self._lazy = False
        self._fn = derived
        functools.update_wrapper(self, derived)
        signature = inspect.signature(derived)  # (not compared with `!=`: that reads array defaults' truth)
        self.signature, self.params = signature, list(signature.parameters)
        self._nparams = len(self.params)
        self._simple = all(p.kind == p.POSITIONAL_OR_KEYWORD for p in signature.parameters.values())

    def _function_arguments(self, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Function-valued arguments (an activation chosen by the caller), by parameter name."""
        if self._origin is None or not (self._needs or any(_is_function_value(v) for v in args)
                                        or any(_is_function_value(v) for v in kwargs.values())):
            return {}  # the common case, on every call: no function among the arguments
        named = dict(zip(self.params, args))
        named.update(kwargs)
        for p in self._needs - set(named):  # a function default (`f=np.sin`): a constant, as jax runs it
            default = self.signature.parameters[p].default if p in self.signature.parameters else None
            if _is_function_value(default):
                named[p] = default
        return {p: v for p, v in named.items() if _is_function_value(v)}

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:  # (Compiled.__call__: C++ first)
        if len(args) < self._by_position:
            raise _clean(self._by_keyword_error(args))
        if not kwargs and len(args) < self._nparams:
            args = filled(self, args)
        if not kwargs and not self._needs and len(args) == self._nparams and self._simple and \
                self.device != "numpy":
            plan = self._cache.get(self._fast_key(args))
            if plan is not None:  # arrays of dtypes already checked: no function among them
                return plan.run(args)
            if self._tree_cache and not self._static_all and (tree := _tree_key(args)) is not None:
                plan = self._tree_cache.get(tree[0])
                if plan is not None:  # containers of arrays seen before (so checked, as above)
                    return plan.run(tree[1])
        if self._lazy and (any(map(_is_function_value, args)) or any(map(_is_function_value, kwargs.values()))
                           or not self._warm_preload(args, kwargs)):
            self._materialize()  # (not in the level-2 cache: the derivative is written now)
        fns = self._function_arguments(args, kwargs)
        missing = sorted(self._needs - set(fns))
        if missing:
            raise _clean(ArgumentError(f"{self._what}: the function calls its parameter `{missing[0]}`, so it needs "
                                       f"a function there (got {len(args)} positional arguments)",
                                       hint=f"pass the function, e.g. f(x, {missing[0]}=np.tanh)"))
        if fns:  # the derivative of f with those parameters fixed: written (and cached) per function
            key = tuple(sorted(fns.items()))
            d = self._bound.get(key)
            if d is None:
                fn, kind, argnums, has_aux, max_iters = self._origin  # type: ignore[misc]
                try:
                    derived = derivative_function(fn, kind, argnums, has_aux, max_iters, bindings=fns)
                except TranspileError as e:
                    raise _clean(e) from None
                d = self._bound[key] = _Derived(derived, self._check, self._what, static_argnums=tuple(
                    i for i, p in enumerate(self.params) if p in self.static), device=self.device)
                d._primal, d._output_of = self._primal, self._output_of
            return d(*args, **kwargs)
        for i in self._check:
            if i < len(args):
                a = _leaf_aval(args[i])
                if a is not None and not (a.dtype.kind in "fc" or a.dtype.name == "bfloat16"):
                    raise _clean(DTypeError(
                        f"{self._what} requires floating-point inputs, but argument {i} has dtype {a.dtype.name}",
                        hint="pass x.astype(np.float32) (or float64), or differentiate with respect to another "
                             "argument via argnums"))
                _check_registered(args[i], self._what, self._primal)
        try:
            out = super()._call(args, kwargs)
        except TranspileError:
            if self._primal is not None:
                self._primal_error(args, kwargs)
            raise
        if self._cpp is None and not self._cpp_refused:  # (a lazy derivative's first call, served by a program
            # from the level-2 cache, never reaches Compiled._call's attach: C++ next, as for any other)
            cpp_calls.attach(self, Compiled.__call__)
        return out

    def _by_keyword_error(self, args: Sequence[Any]) -> ArgumentError:
        """The error for a call of ``grad``/``value_and_grad`` passing a differentiated argument by keyword
        (or leaving it out for its default): JAX's rule, its ``TypeError`` as srcjax's ``ArgumentError``."""
        nums = self._origin[2] if self._origin is not None else self._check
        names = [p for i, p in enumerate(self.params) if i in self._check and i >= len(args)]
        src = read_function(self._primal) if isinstance(self._primal, types.FunctionType) else None
        shown = ", ".join(self.params[:self._by_position])
        return ArgumentError(
            f"{self._what} differentiates with respect to argnums={nums!r}, so it needs at least "
            f"{self._by_position} positional argument(s), but got {len(args)}: "
            f"{', '.join(map(repr, names))} passed by keyword or left out",
            span=src.span(src.fdef.name) if src else None,
            hint=f"pass them by position, e.g. g({shown}, ...), or choose other argnums")

    def _primal_error(self, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
        """Raise the function's own error on these arguments, at its line, if it has one: its
        transpile error, or (grad) an output that is not a real scalar, which the derivative asserts."""
        primal_args = args if self._primal_nargs is None else args[:self._primal_nargs]
        try:
            out = eval_shape(self._primal, *primal_args, **kwargs)  # type: ignore[arg-type]
        except TranspileError:
            inner = self._primal
            if isinstance(inner, _Derived) and inner._primal is not None:
                inner._primal_error(primal_args, kwargs)  # a derivative of a derivative: the innermost function's
            raise
        if self._output_of is not None:
            has_aux, what = self._output_of
            bad = grad_output_error(self._primal, out, has_aux, what)  # type: ignore[arg-type]
            if bad is not None:
                raise _clean(bad) from None


def _is_function_value(v: Any) -> bool:
    """A Python function or NumPy function passed as an argument (not an array, not a number)."""
    return callable(v) and not isinstance(v, type) and not hasattr(v, "shape") and not isinstance(v, Compiled)


_WRAPPED: PerFunction[Compiled] = PerFunction("wrapped")  # fn -> key -> its compiled derivative


def _wrap(fn: Callable[..., Any], kind: str, argnums: int | Sequence[int], has_aux: bool,
          max_iters: int | None = None) -> Compiled:
    """The compiled derivative; cached, so repeated jvp/vjp calls reuse their executables."""
    if not isinstance(argnums, (int, tuple, list)):  # (JAX's TypeError: `argnums=0.5`, a range, a set)
        raise _clean(ArgumentError(f"argnums must be an int or a tuple of ints, not {argnums!r}"))
    key = (kind, argnums if isinstance(argnums, int) else tuple(argnums), has_aux, max_iters)
    hit = _WRAPPED.get(fn, key)
    if hit is None:
        d = gc_pause.pausing(_wrap_new)(fn, kind, argnums, has_aux, max_iters)
        n = d._primal_nargs if isinstance(d, _Derived) else None  # jvp, vjp: the primals come first
        hit = _WRAPPED.set(fn, key, general_hessian.remade(
            d, fn, lambda g: _wrap(g, kind, argnums, has_aux, max_iters),
            None if n is None else lambda args, kwargs: (args[:n], kwargs)))
    return hit


def _stand_in(c: Compiled, needs: set[str], fn: Callable[..., Any], kind: str, argnums: Any, has_aux: bool,
              max_iters: int | None) -> Callable[..., Any]:
    """The derivative's function: written now, with the parameters it calls (``needs``) fixed to their function
    defaults (``f=np.sin``: a constant, as jax runs it; what transformations of the derivative read, e.g.
    ``hessian``'s jvp of it); without such defaults, the function itself stands in until a call passes them."""
    if not needs or _unbound(c, needs):
        return c.fn if needs else derivative_function(fn, kind, argnums, has_aux, max_iters)
    defaults = {p: c.signature.parameters[p].default for p in needs}
    return derivative_function(fn, kind, argnums, has_aux, max_iters, bindings=defaults)


def _refuse_unbound(c: Compiled, kind: str) -> None:
    """A transformation of a derivative whose function calls a parameter with no function default: that
    derivative's ``fn`` is the function itself, standing in (was: ``hessian``/``jvp`` of it differentiated the
    function once, silently: the gradient came back as the Hessian)."""
    p, what = getattr(c, "_unbound", None), getattr(c, "_what", "srcjax.grad")
    if p:
        raise _clean(ArgumentError(
            f"srcjax.{kind.split('_')[0]}: cannot transform {what} of a function that calls its parameter `{p}` "
            "(its derivative is written per function passed there)",
            hint=f"fix the function first (`{what}(lambda x: f(x, np.tanh))`), or give `{p}` a function "
                 f"default (`{p}=np.tanh`)"))


def _unbound(c: Compiled, needs: set[str]) -> str | None:
    """The first parameter in ``needs`` without a function default (None: all have one)."""
    params = c.signature.parameters
    return next((p for p in sorted(needs) if p not in params or not _is_function_value(params[p].default)), None)


def _called_parameters(c: Compiled) -> set[str]:
    """Parameters the function calls (``act(x)``): function-valued arguments, fixed per call."""
    params = set(c.params)
    # (a walk, not a visitor class made per call: each class was garbage the cyclic collector freed)
    return {n.func.value for n in walk(c.program.entry.plain_fdef)
            if n.__class__ is cst.Call and n.func.__class__ is cst.Name and n.func.value in params}


def _wrap_new(fn: Callable[..., Any], kind: str, argnums: int | Sequence[int], has_aux: bool,
              max_iters: int | None) -> Compiled:
    c = _as_compiled(fn)
    _refuse_unbound(c, kind)
    stand_in = warm_transforms.jvp_stand_in(c.signature, argnums) if kind == "jvp" else None
    if kind in ("grad", "value_and_grad") or stand_in is not None:
        try:
            nums, _ = _argnums(argnums, len(c.params))
        except TranspileError as e:
            raise _clean(e) from None
        # the function itself stands in until the derivative is written (its signature is the derivative's;
        # of a vmap or a Jacobian not written yet, what stands in for it: reading `fn` would write it)
        d = _Derived(stand_in or c.__dict__.get("_fn") or c.fn, nums, f"srcjax.{kind}", static_argnums=tuple(
            i for i, p in enumerate(c.params) if p in c.static), device=c.device)
        d._lazy = True
        if stand_in is None:  # (JAX's rule: differentiated arguments are passed by position)
            d._by_position = max(nums, default=-1) + 1
        d._origin = (fn, kind, argnums, has_aux, max_iters)
        marker = d._warm_marker()
        if marker is None or not warm_cache.marked(marker):
            d._materialize()  # errors in the function are raised here, as without the cache
            if marker is not None and (stand_in is None or warm_transforms.same_parameters(stand_in, d.fn)):
                warm_cache.mark(marker, d._reads, c._warm_reads())
    else:
        try:
            needs = _called_parameters(c)
            derived = _stand_in(c, needs, fn, kind, argnums, has_aux, max_iters)
        except TranspileError as e:
            raise _clean(e) from None
        nums, _ = _argnums(argnums, len(c.params))
        d = _Derived(derived, nums, f"srcjax.{kind}", static_argnums=tuple(
            i for i, p in enumerate(c.params) if p in c.static), device=c.device)
        d._needs, d._unbound = needs, _unbound(c, needs)
    d._origin = (fn, kind, argnums, has_aux, max_iters)
    d._primal = fn
    if kind in ("jvp", "vjp"):  # (primals..., tangents or a cotangent): the function's own errors at its lines
        d._primal_nargs = sum(p.kind != inspect.Parameter.KEYWORD_ONLY
                              for p in inspect.signature(c.fn).parameters.values())
    d._output_of = (has_aux, f"srcjax.{kind}") if kind in ("grad", "value_and_grad") else None
    return d


@core.transformation
def grad(fn: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False, *,
         max_iters: int | None = None) -> Compiled:
    """The gradient of a scalar function, as a compiled function with the same arguments.

    ``max_iters``: an upper bound on the iterations of ``while`` loops on array
    data (needed to differentiate them in reverse mode, unless the test counts:
    ``while it < 100 and ...``). A loop still running after that many
    iterations stops there.
    """
    if (star := star_args.dispatch(fn, lambda g: grad(g, argnums, has_aux, max_iters=max_iters))) is not None:
        return star  # type: ignore[return-value]  # (`def f(*xs)`: one derivative per number of arguments)
    return _wrap(fn, "grad", argnums, has_aux, max_iters)


@core.transformation
def value_and_grad(fn: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False, *,
                   max_iters: int | None = None) -> Compiled:
    """``(value, gradient)`` (``((value, aux), gradient)`` with ``has_aux``); ``max_iters`` as in :func:`grad`."""
    if (star := star_args.dispatch(fn, lambda g: value_and_grad(g, argnums, has_aux, max_iters=max_iters))) is not None:
        return star  # type: ignore[return-value]
    return _wrap(fn, "value_and_grad", argnums, has_aux, max_iters)


def _check_registered(arg: Any, what: str, fn: Any) -> None:
    """A differentiated argument holding an object of a registered class whose flatten function does
    not return its attributes (``p.w`` names no child): refused here, at ``fn``'s definition, before
    anything is written."""
    if pytree.is_custom(arg) and not pytree.attribute_children(arg):
        src = read_function(fn) if isinstance(fn, types.FunctionType) else None
        raise _clean(ArgumentError(
            f"{what} with respect to an object of the registered class {type(arg).__name__}: its flatten does not "
            "return its attributes (each once), so srcjax cannot tell which child `x.<attribute>` is",
            span=src.span(src.fdef.name) if src is not None else None,
            hint="make flatten return the attributes themselves, e.g. lambda m: ((m.w, m.b), None)"))
    if pytree.is_tree(arg):
        for child in pytree.node_children(arg):
            _check_registered(child, what, fn)


def _is_float_leaf(v: Any) -> bool:
    a = _leaf_aval(v)
    return a is not None and (a.dtype.kind in "fc" or a.dtype.name == "bfloat16")


def _float_positions(values: Sequence[Any]) -> tuple[int, ...]:
    """The arguments with floating-point leaves (an array, a number, or a container holding some)."""
    return tuple(i for i, v in enumerate(values)
                 if any(_is_float_leaf(x) for x in pytree.flatten(v, is_leaf=_is_leaf)[0]))


def _matching(what: str, path: str, primal: Any, t: Any) -> Any:
    """The tangent (or cotangent) ``t`` checked against ``primal``'s structure, shapes and dtypes,
    with ``primal``'s container types. Leaves without a derivative (integers, booleans, strings,
    None) take zeros (None for strings and None), whatever was passed for them (None, zeros, ...).
    A Python number takes its primal's dtype; an array must have it (as in JAX: a float32 value's
    tangent is float32)."""
    if pytree.is_tree(primal):
        if type(primal) is dict:
            if type(t) is not dict or set(t) != set(primal):
                raise ArgumentError(f"{what} at {path} must be a dict with keys {sorted(primal, key=repr)}, like its "
                                    f"primal, but it is {pytree.describe(t)}")
            return {k: _matching(what, f"{path}[{k!r}]", primal[k], t[k]) for k in primal}
        if pytree.is_record(primal) or pytree.is_custom(primal):  # a dataclass, a registered class
            if type(t) is not type(primal):
                raise ArgumentError(f"{what} at {path} must be a {type(primal).__name__}, like its primal, but it "
                                    f"is {pytree.describe(t)}")
            ps, ts = pytree.node_children(primal), pytree.node_children(t)
            return pytree.tree_like(primal, [_matching(what, f"{path}[{i}]", p, x) for i, (p, x) in
                                             enumerate(zip(ps, ts))])
        if not isinstance(t, (tuple, list)) or len(t) != len(primal):
            raise ArgumentError(f"{what} at {path} must be a {type(primal).__name__} of {len(primal)}, like its "
                                f"primal, but it is {pytree.describe(t)}")
        return pytree.tree_like(primal, [_matching(what, f"{path}[{i}]", p, x) for i, (p, x) in
                                         enumerate(zip(primal, t))])
    if primal is None or isinstance(primal, str):
        return None
    if not _is_float_leaf(primal):  # an integer or boolean leaf: a zero tangent
        if type(primal) in (int, bool):
            return 0.0
        return adjoint.zeros_like(np.asarray(primal))
    pa, ta = _leaf_aval(primal), _leaf_aval(t)
    if ta is None or pytree.is_tree(t):
        raise ArgumentError(f"{what} at {path} must be an array like its primal ({pa.str_short()}), "  # type: ignore[union-attr]
                            f"but it is {pytree.describe(t)}")
    if pa is not None and pa.shape != ta.shape:
        raise ArgumentError(f"{what} at {path} has shape {ta.shape} but its primal has shape {pa.shape}")
    if pa is not None and ta.weak_type and type(t) in (float, int):
        return float(t) if pa.weak_type else np.asarray(t, dtype=pa.dtype)
    if pa is not None and ta.dtype != pa.dtype:
        raise ArgumentError(f"{what} at {path} has dtype {ta.dtype.name} but its primal has dtype "
                            f"{pa.dtype.name}: a tangent or cotangent has its primal's dtype",
                            hint=f"convert it: t.astype(np.{pa.dtype.name})")
    return t


def jvp(fn: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False) -> Any:
    """Forward mode: ``(fn(*primals), directional derivative along tangents)``.

    ``has_aux=True``: ``fn`` returns a pair ``(output, aux)``, and ``jvp`` returns ``(output,
    tangent_out, aux)`` (JAX's); ``aux`` (any pytree, not differentiated) comes from one more run of
    the compiled ``fn`` (the generated jvp does not return it).

    Primals may be containers (tuples, lists, dicts, NamedTuples); each tangent has its primal's
    structure. Leaves without a derivative (integers, booleans, strings) take zero tangents,
    whatever is passed for them (None is fine)."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):  # (JAX's TypeError)
        raise _clean(ArgumentError(f"jvp: primals and tangents must be tuples or lists, got "
                                   f"{type(primals).__name__} and {type(tangents).__name__}",
                                   hint="pass one entry per argument: srcjax.jvp(f, (x,), (t,))"))
    fn = star_args.for_args(fn, len(primals))  # (`def f(*xs)`: its copy taking these)
    if has_aux:
        from .aux_output import checked_pair, output_of  # (aux_output imports api, as this module: late, no cycle)
        aux = checked_pair(fn, tuple(primals), {}, "srcjax.jvp")[1]
        return (*_jvp(output_of(fn), primals, tangents, {}), aux)
    return _jvp(fn, primals, tangents, {})


# srcjax.jvp(f, (x,), (t,)) inside compiled code: the normalizer calls the generated jvp of f (jax_spellings.flat_jvp)
# (has_aux: the jvp of the first of f's literal pair, aux_output.inline_output)
jvp.__srcjax_inline_jvp__ = lambda fn, n, has_aux=False: _wrap(  # type: ignore[attr-defined]
    _inline_output(fn, "srcjax.jvp") if has_aux else fn, "jvp", tuple(range(n)), False)


def _inline_output(fn: Callable[..., Any], what: str) -> Callable[..., Any]:
    from .aux_output import inline_output  # (aux_output imports api, as this module: late, as jvp's)
    return inline_output(fn, what)


def _jvp(fn: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any],
         kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """jvp; ``kwargs``: keyword-only arguments (not differentiated; jacfwd passes them on)."""
    primals, tangents = tuple(primals), tuple(tangents)
    if not kwargs:
        _refuse_required_keywords(fn, "srcjax.jvp")
    if len(primals) != len(tangents):
        raise _clean(ArgumentError(f"jvp: {len(primals)} primals but {len(tangents)} tangents",
                                   hint="pass one tangent per primal, of its shape and dtype"))
    nums = _float_positions(primals)
    try:
        ts = [_matching("jvp: the tangent", f"tangents[{i}]", primals[i], tangents[i]) for i in nums]
    except TranspileError as e:
        raise _clean(e) from None
    if not nums:
        out = _as_compiled(fn)(*primals, **kwargs)
        return out, _zero_tangent(out)
    f = _wrap(fn, "jvp", nums, False)
    # the generated jvp takes every parameter, then the tangents: defaults written out (as vjp does)
    return f(*_with_defaults(fn, primals), *ts, **kwargs)  # type: ignore[no-any-return]


_REQUIRED_KEYWORDS: PerFunction[list[str]] = PerFunction("required")  # fn -> its keyword-only parameters, no default


def _refuse_required_keywords(fn: Callable[..., Any], what: str) -> None:
    """jvp and vjp pass primals by position (as JAX's): a keyword-only parameter needs a default."""
    try:
        required = _REQUIRED_KEYWORDS.get(fn)
        if required is None:
            params = inspect.signature(_as_compiled(fn).fn).parameters.values()
            required = _REQUIRED_KEYWORDS.set(fn, None, [
                p.name for p in params if p.kind == inspect.Parameter.KEYWORD_ONLY and p.default is p.empty])
    except (TranspileError, TypeError, ValueError):
        return
    if required:
        try:
            src = read_function(_as_compiled(fn).fn)
            span = src.span(src.fdef.name)
        except TranspileError:
            span = None
        name = getattr(fn, "__name__", "f")
        raise _clean(ArgumentError(
            f"{what} passes the primals by position, but {name} has the keyword-only parameter "
            f"`{required[0]}` without a default", span=span,
            hint=f"give `{required[0]}` a default, or wrap it: def g(x): return {name}(x, {required[0]}=...); "
                 "grad, jacfwd, jacrev and hessian pass keyword arguments on"))


def _zero_tangent(out: Any) -> Any:
    leaves, tree = pytree.flatten(out, is_leaf=_is_leaf)
    return pytree.unflatten(tree, [None if isinstance(x, str) else adjoint.zeros_like(np.asarray(x)) for x in leaves])


def _with_defaults(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` and the default values of the parameters after them."""
    c = _as_compiled(fn)
    if len(args) >= len(c.params):
        return args
    try:
        bound = inspect.signature(c.fn).bind_partial(*args)
    except TypeError:
        return args  # reported by the call
    bound.apply_defaults()
    return tuple(v for k, v in bound.arguments.items()
                 if bound.signature.parameters[k].kind != inspect.Parameter.KEYWORD_ONLY)


def _hashable(v: Any) -> bool:
    if hasattr(v, "shape"):
        return True
    try:
        hash(v)
    except TypeError:
        return False
    return True
