"""Jacobians: ``jacfwd``, ``jacrev`` and ``hessian``.

An array argument and an array output take one compiled program: the generated JVP (VJP) in a
loop over basis vectors (``jacobian_source.jacobian_source`` writes it; ``srcjax.source`` shows it).
Containers, Python scalars and function-valued arguments take the general path: one compiled
JVP (VJP) call per element from Python, laid out as JAX lays out a Jacobian of containers.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import cpp_calls, gc_pause, general_hessian, pytree, reuse, star_args, warm_cache, warm_transforms

# api's underscore names are srcjax-internal, shared with srcjax.compile on purpose (not public API)
from .api import Compiled, _as_compiled, _is_leaf, _leaf_aval, eval_shape

# The Jacobians are built on autodiff's derivative machinery; these underscore names are internal
# to srcjax's AD and shared by the two modules on purpose (not public API).
from .autodiff import (  # noqa: I001
    _called_parameters,
    _clean,
    _Derived,
    _hashable,
    _is_float_leaf,
    _is_function_value,
    _jvp,
    _positional_and_call,
    _then,
    _with_defaults,
    _wrap,
    derivative_function,
    grad,
)
from .aux_output import AuxJacobian, output_of
from .core import ArgumentError, DTypeError, ShapeError, TranspileError, transformation
from .frontend.names import Names
from .generated import exec_generated, load_module
from .grad_output import grad_output_error, real_output_error, scalar_shaped, surely_scalar
from .split_vjp import _RecomputingVJP, vjp  # (vjp_fn as one program, shared on purpose)
from .transforms import ad
from .transforms.anf import ADJOINT_IMPORTS
from .transforms.batch_errors import BatchingError

# (each generated module's own file name: its registrations are dropped by name when its functions die, so
# a second module of the same name registered meanwhile lost its source: OSError reading it)
_MODULES = itertools.count()


def _basis(shape: tuple[int, ...], dtype: Any) -> Any:
    n = math.prod(shape)
    for k in range(n):
        e = np.zeros(n, dtype=dtype)
        e[k] = 1
        yield e.reshape(shape)


def _float_dtype(x: Any) -> Any:
    a = _leaf_aval(x)
    return a.dtype if a is not None and _is_float_leaf(x) else np.dtype(np.float64)


def _leaves(v: Any) -> tuple[list[Any], pytree.TreeDef]:
    """Leaves of a value or of its (co)tangent, None included (a leaf without a derivative)."""
    return pytree.flatten(v, is_leaf=lambda x: x is None or _is_leaf(x))


def _jacobian(out: Any, x: Any, block: Callable[[int, int], Any]) -> Any:
    """JAX's layout: ``out``'s structure outside, ``x``'s inside; ``block(k, j)`` is the array of
    output leaf ``k`` by the floating-point leaf ``j`` of ``x`` (other leaves of ``x``: None)."""
    ol, ot = _leaves(out)
    xl, xt = _leaves(x)
    # (an output leaf that is None, e.g. a gradient's for a None parameter: JAX's empty subtree, None)
    return pytree.unflatten(ot, [None if ol[k] is None else pytree.unflatten(
        xt, [block(k, j) if _is_float_leaf(v) else None for j, v in enumerate(xl)]) for k in range(len(ol))])


def _check_float(x: Any, what: str) -> None:
    if not pytree.is_tree(x) and not _is_float_leaf(x):
        a = _leaf_aval(x)
        raise _clean(DTypeError(f"{what} requires floating-point inputs, but the argument has "
                                f"{'dtype ' + a.dtype.name if a is not None else 'type ' + type(x).__name__}",
                                hint="pass x.astype(np.float32) (or float64)"))


def _jacfwd_loop(fn: Callable[..., Any], argnums: int = 0) -> Callable[..., Any]:
    """jacfwd from Python: one compiled JVP call per element (containers, scalars, function arguments)."""
    def jac(*args: Any, **kwargs: Any) -> Any:
        x = args[argnums]
        _check_float(x, "srcjax.jacfwd")
        xl, xt = _leaves(x)
        zeros = [pytree.unflatten(t, [np.zeros(np.shape(v), _float_dtype(v)) if _is_float_leaf(v) else None
                                      for v in ls]) for ls, t in map(_leaves, args)]  # zero tangents
        cols: dict[int, list[list[Any]]] = {}  # float leaf of x -> per element: flat output tangent leaves
        out: Any = None
        for j, v in enumerate(xl):
            if not _is_float_leaf(v):
                continue
            cols[j] = []
            for e in _basis(np.shape(v), _float_dtype(v)):
                tl = _leaves(zeros[argnums])[0]
                tl[j] = e
                tangents = list(zeros)
                tangents[argnums] = pytree.unflatten(xt, tl)
                out, t = _jvp(fn, args, tangents, kwargs)
                cols[j].append(_leaves(t)[0])
        if out is None:
            out = _as_compiled(fn)(*args, **kwargs)

        def block(k: int, j: int) -> Any:
            o, shape = _leaves(out)[0][k], np.shape(xl[j])
            if not cols[j]:
                return np.zeros(np.shape(o) + shape)
            return np.stack([np.asarray(c[k]) for c in cols[j]], axis=-1).reshape(np.shape(o) + shape)

        return _jacobian(out, x, block)

    return jac


def _jacrev_loop(fn: Callable[..., Any], argnums: int = 0, *, max_iters: int | None = None) -> Callable[..., Any]:
    """jacrev from Python: one compiled VJP call per output element (containers, scalars, function arguments)."""
    def jac(*args: Any, **kwargs: Any) -> Any:
        x = args[argnums]
        _check_float(x, "srcjax.jacrev")
        if kwargs:  # keyword-only arguments: one program per cotangent, the forward pass again each time
            out = _as_compiled(fn)(*args, **kwargs)
            whole = _wrap(fn, "vjp", tuple(range(len(args))), False, max_iters)
            f: Callable[[Any], tuple[Any, ...]] = _RecomputingVJP(whole, out, _with_defaults(fn, args),
                                                                   kwargs=kwargs)
        else:
            out, f = vjp(fn, *args, max_iters=max_iters)
        ol, ot = _leaves(out)
        xl, _ = _leaves(x)
        rows: list[list[list[Any]]] = []  # per output leaf, per element: flat cotangent leaves of x
        for k, o in enumerate(ol):
            rows.append([])
            for e in _basis(np.shape(o), _float_dtype(o)):
                cl = [np.zeros(np.shape(v), _float_dtype(v)) for v in ol]
                cl[k] = e
                rows[k].append(_leaves(f(pytree.unflatten(ot, cl))[argnums])[0])

        def block(k: int, j: int) -> Any:
            shape = np.shape(ol[k]) + np.shape(xl[j])
            if not rows[k]:
                return np.zeros(shape)
            return np.stack([np.asarray(r[j]) for r in rows[k]]).reshape(shape)

        return _jacobian(out, x, block)

    return jac


def _derived(fn: Callable[..., Any], kind: str, argnums: int, max_iters: int | None,
             arrays: bool = False) -> Callable[..., Any]:
    """The Jacobian's generated function: the JVP/VJP batched over the basis, or, where vmap refuses to
    batch it (a recursion whose derivative tape is batched at some depths only), the loop over the basis
    vectors in one program (never a refusal that a loop of JVPs/VJPs would not give). ``arrays``: its
    array form (``jacobian_source.jacobian_source``)."""
    form = "_arrays" if arrays else ""
    try:
        return gc_pause.pausing(derivative_function)(fn, kind + form, (argnums,), max_iters=max_iters)
    except BatchingError:
        return gc_pause.pausing(derivative_function)(fn, f"{kind}_loop{form}", (argnums,), max_iters=max_iters)


def _array_form(fn: Callable[..., Any]) -> Callable[..., Any]:
    """What a Jacobian's array form differentiates: of a Jacobian, that Jacobian's own array form (its own
    compiled path is taken only where the inner one's is: an array argument, an array output)."""
    if isinstance(fn, _Jacobian) and fn._arrays is not None:
        return fn._arrays.fn
    return fn


def _gradient_of_array(base: Any, args: tuple[Any, ...]) -> bool | None:
    """True where ``base`` is a gradient (``grad``, one int ``argnums``, no aux) by an array argument: its
    output is an array of that argument's shape, known without specializing the gradient (``hessian``'s
    first call did, ~3 ms, only to learn this); None: not known so."""
    origin = base._origin if type(base) is _Derived else None
    if origin is None:
        return None
    _, kind, argnums, has_aux, _ = origin
    if kind != "grad" or has_aux or type(argnums) is not int or not -len(args) <= argnums < len(args):
        return None
    x = args[argnums]
    return True if hasattr(x, "shape") and hasattr(x, "dtype") and not pytree.is_tree(x) else None


class _Jacobian(_Derived):
    """A compiled Jacobian: generated source that loops over basis vectors inside one program.

    Arrays in, an array out: the generated function's array form runs as one executable (``_arrays``:
    the array path alone; of a Jacobian, written from that Jacobian's array form). Its generic form
    (``fn``: a container branch too, for an argument or output that may be a container), what
    ``srcjax.source`` shows and other transformations read, is written when first read. A container
    argument or output, a Python scalar argument, or a function-valued argument takes the general
    path instead: one compiled JVP/VJP call per element."""

    _generic: Callable[[], Callable[..., Any]] | None = None  # writes the generic form (fn) when first read
    _pending = False  # written before from unchanged sources (warm_transforms.py): its derivative written when read

    @property  # type: ignore[override]
    def fn(self) -> Callable[..., Any]:
        if self._pending:
            self._materialize_jacobian()
        write = self._generic
        if write is not None:
            try:
                self._fn = write()
            except TranspileError as e:
                raise _clean(e) from None
            self._generic = None
            functools.update_wrapper(self, self._fn)  # (its marks: __srcjax_derived__, the loop twin...)
        return self._fn  # type: ignore[no-any-return]

    @fn.setter
    def fn(self, v: Callable[..., Any]) -> None:
        self._fn = v

    @property  # type: ignore[override]
    def _needs(self) -> set[str]:  # (parameters called as functions: known once the derivative is written)
        if self._pending:
            self._materialize_jacobian()
        return self._needs_of

    @_needs.setter
    def _needs(self, v: set[str]) -> None:
        self._needs_of = v

    def __init__(self, fn: Callable[..., Any], kind: str, argnums: int, max_iters: int | None,
                 loop: Callable[..., Any]) -> None:
        c = _as_compiled(fn)
        self._kind, self._argnum, self._loop, self._base = kind, argnums, loop, c
        self._of, self._max_iters = fn, max_iters
        static = tuple(i for i, p in enumerate(c.params) if p in c.static)
        # hessian: the function, not its gradient (a derivative takes its function's arguments; a vmap's
        # function takes one example's, so a vmapped function is its own)
        primal = (c._primal if isinstance(c, _Derived) else None) or fn
        marker = warm_transforms.written_key(kind, argnums, max_iters, c, c.device)
        lazy = warm_transforms.marked(marker)
        if lazy:  # (written before: what stands in for the function until a call needs the derivative)
            arrays = c.__dict__.get("_fn") or c.fn
        else:
            needs, arrays = self._written(c, fn)
        super().__init__(arrays, (argnums,), f"srcjax.{kind}", static_argnums=static, device=c.device)
        self._primal = primal
        self._by_position = argnums + 1 if argnums >= 0 else 0  # (JAX's rule, as grad's: _Derived._by_keyword_error)
        self._output_of = getattr(c, "_output_of", None)  # hessian: its gradient's output must be a real scalar
        self._arrays: _ArrayForm | None = None  # what a call on the compiled path runs
        if lazy:
            for k in [k for k in vars(self) if k.startswith("__srcjax")]:  # (the stand-in's marks)
                del self.__dict__[k]
            self._pending = True
            self._arrays = _ArrayForm(arrays, (argnums,), self._what, static_argnums=static, device=c.device)
            self._arrays._lazy, self._arrays._owner = True, self
            self._arrays._primal, self._arrays._output_of = self._primal, self._output_of
        else:
            self._adopt(needs, arrays)
            warm_transforms.mark_written(marker, c)
        self._array_out: dict[Any, bool] = {}
        self._fallback: _Derived | None = None  # the loop form, where the batched form does not compile
        self._checked: set[tuple[Any, ...]] = set()  # signatures of arrays a call took the batched form with
        # hessian: jacfwd(jacrev(fn)) (JAX's hessian), for a function whose output is not a scalar
        self._general: Callable[[], Callable[..., Any]] | None = None
        self._switch: Callable[..., Any] | bool | None = None  # hessian: what compiled code calls (_hessian_switch)
        self._general_keys: set[Any] = set()  # signatures whose output is not a scalar
        self._real_ok: set[Any] = set()  # signatures whose output reverse mode checked (no integer leaf)

    def _written(self, c: Any, fn: Callable[..., Any]) -> tuple[set[str], Callable[..., Any]]:
        """(the parameters called as functions, the array form's generated function) written now."""
        try:
            needs = c._needs if isinstance(c, _Jacobian) else _called_parameters(c)  # (its generic form unread)
            arrays = c.fn if needs else _derived(_array_form(fn), self._kind, self._argnum, self._max_iters,
                                                 arrays=True)
        except TranspileError as e:
            raise _clean(e) from None
        return needs, arrays

    def _adopt(self, needs: set[str], arrays: Callable[..., Any]) -> None:
        """Take the written array form (``arrays``) as this Jacobian's function and its ``_arrays``'."""
        for copied in [k for k in vars(arrays) if k.startswith("__srcjax") and not needs]:  # (the array form's)
            self.__dict__.pop(copied, None)
        self._needs = needs
        if needs:
            self._arrays = None
            return
        self._generic = functools.partial(_derived, self._of, self._kind, self._argnum, self._max_iters)
        if self._arrays is None:
            self._arrays = _ArrayForm(arrays, (self._argnum,), self._what, static_argnums=tuple(
                i for i, p in enumerate(self.params) if p in self.static), device=self.device)
            self._arrays._primal, self._arrays._output_of = self._primal, self._output_of
        else:
            _become(self._arrays, arrays)
            self._arrays._lazy = False
        self._arrays._owner = self

    def _materialize_jacobian(self) -> None:
        """Write the derivative of a Jacobian made lazily (a call whose program is not in the level-2 cache,
        or anything reading ``fn``, ``_needs`` or the array form's function)."""
        self._pending = False
        try:
            needs, arrays = self._written(self._base, self._of)
        except TranspileError:
            self._pending = True
            raise
        _become(self, arrays)
        self._adopt(needs, arrays)

    def _warm_identity(self) -> list[Any] | None:
        return warm_transforms.jacobian_identity(self._kind, self._argnum, self._max_iters, self._general is not None,
                                                 self._base)

    def _warm_reads(self) -> Any:
        """What the front end read for this Jacobian's programs (its generic form's, if written: reading it
        would write it), its array form's, and its function's (the files and names below it)."""
        reads = warm_cache.Reads()
        for c in (self, self._arrays):
            if c is not None:
                reads.merge(c._reads)
                prog = c.__dict__.get("_program")
                if prog is not None:
                    reads.merge(prog.reads)
        reads.merge(warm_transforms.reads_of(self._base))
        return reads

    def _compiled_path(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        if self._needs or not -len(args) <= self._argnum < len(args):
            return False
        x = args[self._argnum]
        if not hasattr(x, "shape") or not hasattr(x, "dtype") or pytree.is_tree(x):
            return False
        leaves = pytree.flatten([*args, *(kwargs[k] for k in sorted(kwargs))], is_leaf=_is_leaf)[0]
        if any(_is_function_value(v) for v in leaves):
            return False
        key = (*sorted(kwargs),) + tuple(
            (type(v), np.shape(v), getattr(v, "dtype", None)) if hasattr(v, "shape") else (type(v), v)
            for v in leaves) if all(_hashable(v) for v in leaves) else None
        hit = self._array_out.get(key) if key is not None else None
        if hit is None:
            hit = _gradient_of_array(self._base, args)
        if hit is None and isinstance(self._base, _Jacobian) and self._base._compiled_path(args, kwargs):
            hit = True  # (a Jacobian of a Jacobian: the inner one's argument and output are arrays, so its own)
        if hit is None:
            try:
                out = eval_shape(self._base, *args, **kwargs)
            except TranspileError:
                self._primal_error(args, kwargs)  # the function's own errors, at its line
                raise
            hit = not pytree.is_tree(out)
            if key is not None:
                self._array_out[key] = hit
        return hit

    def needs_general(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """A hessian: whether these arguments take its general form (general_hessian.takes_general)."""
        return self._general is not None and self._primal is not None and _takes_general(self._primal, args, kwargs)

    @property
    def __srcjax_called__(self) -> Callable[..., Any] | None:
        """What compiled code calling this Jacobian reads (``frontend.resolve.called``): of a hessian, a
        static branch on its function's output (:func:`_hessian_switch`); else None (its generic form)."""
        if self._general is None or self._primal is None:
            return None
        if self._switch is None and surely_scalar(self._primal):
            self._switch = False  # (a loss: forward over reverse, its generic form, with nothing more to write)
        if self._switch is None:
            try:
                self._switch = _hessian_switch(self._primal, self.fn, self._general, (self._argnum,))
            except TranspileError:  # (no jacfwd(jacrev(fn)) to write: the generic form, and its errors)
                self._switch = False
        return self._switch if callable(self._switch) else None

    def has_array_form(self) -> bool:
        """Whether some calls take the array form (:meth:`array_form_for`): not a hessian, nor a Jacobian of
        one (their general form is decided by the generic one), nor one written per function argument."""
        return self._arrays is not None and self._general is None and self._or_general is None

    def array_form_for(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Callable[..., Any] | None:
        """The array form's generated function where a call with these arguments (arrays or
        ShapeDtypeStructs) takes it, so that a transformation of this Jacobian for them (vmap: one
        example's) may read it instead of the generic form; else None."""
        if self._arrays is None or not self.has_array_form():
            return None
        try:
            return self._arrays.fn if self._compiled_path(args, kwargs) else None
        except TranspileError:
            return None

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A call through srcjax's Python path (``Compiled.__call__``: jaxlib's C++ dispatcher first, once
        attached; it comes here for a signature it has no record of). Its records serve only signatures
        this path checked and ran on the array form (:meth:`_served_plan`), so every check below (float
        arguments, array output, a hessian's scalar output) was made for each call the C++ side serves."""
        if len(args) < self._by_position:  # (the argument differentiated passed by keyword or left out)
            raise _clean(self._by_keyword_error(args))
        try:
            out = self._own_call(args, kwargs)
        except TranspileError:
            other = general_hessian.instead(self, args, kwargs) if self._or_general is not None else None
            if other is None:
                raise
            return other(*args, **kwargs)  # (a Jacobian of a hessian of an output that is not a scalar)
        if self._cpp is None and not self._cpp_refused and self._checked:
            cpp_calls.attach(self, Compiled.__call__)  # (after a call served by the array form: C++ next)
        return out

    def _served_plan(self, args: tuple[Any, ...]) -> Any:
        """The array form's plan the C++ dispatcher may serve calls like ``args`` with (``cpp_calls._plan``),
        or None: only a signature of arrays this Jacobian's Python path checked and ran on the array form
        (``_checked``), without static arguments (those keep the Python path)."""
        arrays = self._arrays
        if arrays is None or self._fallback is not None or self._static_all or arrays._static_all:
            return None
        key = self._fast_key(args)
        if key is None or key not in self._checked:
            return None
        return arrays._cache.get(key)

    def _own_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        key = self._fast_key(args) if not kwargs and (self._pending or not self._needs) and self._fallback is None \
            and len(args) == self._nparams and self._simple and self.device != "numpy" else None
        if key is not None and key in self._checked:  # arrays of a signature checked before: the cache-hit path
            plan = self._arrays._cache.get(key)  # type: ignore[union-attr]
            if plan is not None:
                return plan.run(args)
        if self._pending:
            # an earlier process called it with these arguments' signature: the array form's program then
            # passed this call's checks (they depend on the signature alone), and is in the level-2 cache
            arrays = self._arrays
            assert arrays is not None
            if not any(map(_is_function_value, args)) and arrays._warm_preload(args, kwargs):
                out = arrays(*args, **kwargs)
                if key is not None and all(type(k) is tuple for k in key):
                    self._checked.add(key)
                return out
            self._materialize_jacobian()
        if self._general is None or self._primal is None:
            if self._kind == "jacrev":
                self._real_output(self._base, args, kwargs, key)
            return self._jacobian_call(args, kwargs, key)
        if key is not None and key in self._general_keys:
            return self._general()(*args, **kwargs)
        try:  # (a hessian: its gradient's path first, which needs no look at the output when it compiles)
            return self._jacobian_call(args, kwargs, key)
        except TranspileError:
            if _scalar_output(self._primal, args, kwargs):
                raise
        self._real_output(self._primal, args, kwargs, key)  # (as JAX's jacrev inside: no integer output)
        if key is not None:  # an output that is not a scalar: jacfwd(jacrev(fn))
            self._general_keys.add(key)
        return self._general()(*args, **kwargs)

    def _real_output(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], key: Any) -> None:
        """Reverse mode's check of ``fn``'s output on these arguments (once per signature): an integer or
        boolean output is a DTypeError at its ``return``, as JAX refuses it (grad_output.real_output_error)."""
        if key is not None and key in self._real_ok:
            return
        try:
            out = eval_shape(fn, *args, **kwargs)
        except TranspileError:
            return  # (the call reports the function's own error at its line)
        bad = real_output_error(fn, out, "srcjax.hessian" if self._general is not None else self._what)
        if bad is not None:
            raise _clean(bad) from None
        if key is not None:
            self._real_ok.add(key)

    def _jacobian_call(self, args: tuple[Any, ...], kwargs: dict[str, Any], key: Any) -> Any:
        if self._compiled_path(args, kwargs):
            _check_float(args[self._argnum], self._what)
            if self._fallback is not None:
                return self._fallback(*args, **kwargs)
            try:
                out = self._arrays(*args, **kwargs)  # type: ignore[misc]
                if key is not None and all(type(k) is tuple for k in key):  # (a Python scalar's value may matter)
                    self._checked.add(key)
                return out
            except TranspileError:
                # the batched JVP/VJP could not be compiled for these arguments (a container srcjax.vmap
                # cannot batch yet): the loop over basis vectors, which can (and reports the function's
                # own errors at its lines)
                twin = getattr(self._arrays.fn, "__srcjax_loop_twin__", None)  # type: ignore[union-attr]
                if twin is None:
                    raise
                self._fallback = _Derived(twin(), (self._argnum,), self._what, static_argnums=tuple(
                    i for i, p in enumerate(self.params) if p in self.static), device=self.device)
                self._fallback._primal, self._fallback._output_of = self._primal, self._output_of
                return self._fallback(*args, **kwargs)
        return self._loop(*args, **kwargs)


def _become(d: _Derived, derived: Callable[..., Any]) -> None:
    """``d`` now compiles ``derived`` (a lazy derivative's function, written)."""
    d._fn = derived
    functools.update_wrapper(d, derived)
    signature = inspect.signature(derived)
    d.signature, d.params = signature, list(signature.parameters)
    d._nparams = len(d.params)
    d._simple = all(p.kind == p.POSITIONAL_OR_KEYWORD for p in signature.parameters.values())


class _ArrayForm(_Derived):
    """A Jacobian's array form (``_Jacobian._arrays``), in the level-2 cache under the Jacobian's identity;
    made lazily, its owner writes it when read."""

    _owner: _Jacobian

    def _materialize(self) -> None:
        self._owner._materialize_jacobian()

    def _warm_identity(self) -> list[Any] | None:
        ident = self._owner._warm_identity()
        return None if ident is None else ["arrays", ident]

    def _warm_reads(self) -> Any:
        reads = super()._warm_reads()
        reads.merge(warm_transforms.reads_of(self._owner._base))
        return reads


class _TupleArgnums:
    """A Jacobian with respect to several arguments (``argnums=(0, 1)``): JAX's layout, the output's
    structure outside, a tuple with one Jacobian per argument inside; one Jacobian per argument.

    Transformed again (vmap) or called in a compiled function, it is its generated source
    (:func:`_tuple_source`): the tuple of the per-argument Jacobians' generated functions' results
    (``hessian``: the tuple of rows of blocks ``blocks``), for an output that is an array."""

    def __init__(self, base: Callable[..., Any], parts: list[Callable[..., Any]], nums: tuple[int, ...],
                 kind: str, blocks: tuple[Any, ...] | None = None, primal: Callable[..., Any] | None = None) -> None:
        self._base, self._parts, self._nums, self._primal = base, parts, nums, primal or base
        self._kind, self._blocks, self._source_fn = kind, blocks, None
        self._general: Callable[[], Callable[..., Any]] | None = None  # (as _Jacobian's)
        self._switch: Callable[..., Any] | bool | None = None  # (as _Jacobian's)
        self._outputs: dict[Any, tuple[bool, int, Any]] = {}  # signature: (general form?, output leaves, structure)
        # (without generated source: a part takes function-valued arguments)
        self.srcjax_refusal = ("a Jacobian with respect to a tuple of argnums of a function that takes functions "
                               "cannot be transformed again or called inside a compiled function yet", "take one "
                               "Jacobian per argument (argnums=0, then argnums=1) there")

    @property
    def __srcjax_fn__(self) -> Callable[..., Any] | None:  # (what srcjax reads: frontend.resolve.unwrap)
        if self._source_fn is None:
            self._source_fn = _tuple_source(self._primal, self._blocks or tuple(self._parts), self._kind,
                                            self._kind != "hessian")
        return self._source_fn or None

    def needs_general(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """A hessian: whether these arguments take its general form (general_hessian.takes_general)."""
        return self._general is not None and _takes_general(self._primal, args, kwargs)

    @property
    def __srcjax_called__(self) -> Callable[..., Any] | None:  # (as _Jacobian's)
        if self._general is None:
            return None
        if self._switch is None and surely_scalar(self._primal):
            self._switch = False
        own = self.__srcjax_fn__ if self._switch is None else None
        if self._switch is None and callable(own):
            try:
                self._switch = _hessian_switch(self._primal, own, self._general, self._nums)
            except TranspileError:
                self._switch = False
        return self._switch if callable(self._switch) else None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # the output's structure (and, for a hessian, whether it is a scalar) by the signature of array arguments:
        # eval_shape at every call cost ~270 us (jacrev(f, (0, 1)) of an f64[8] layer, device inputs; jax 5)
        key = None if kwargs else _as_compiled(self._base)._fast_key(args)
        if key is not None and not all(type(k) is tuple for k in key):
            key = None  # (a Python scalar's value may matter)
        known = self._outputs.get(key) if key is not None else None
        if known is None:
            if self._general is not None and not _scalar_output(self._primal, args, kwargs):
                if key is not None:
                    self._outputs[key] = (True, 0, None)
                return self._general()(*args, **kwargs)
            blocks = [p(*args, **kwargs) for p in self._parts]
            ol, ot = _leaves(eval_shape(self._base, *args, **kwargs))
            known = (False, len(ol), ot)
            if key is not None:
                self._outputs[key] = known
        elif known[0] and self._general is not None:
            return self._general()(*args, **kwargs)
        else:
            blocks = [p(*args, **kwargs) for p in self._parts]
        _, n_out, ot = known
        per_leaf: list[list[Any]] = [[] for _ in range(n_out)]
        for a, b in zip(self._nums, blocks):
            xt = _leaves(args[a])[1]
            bl = _leaves(b)[0]
            m = len(bl) // max(n_out, 1)
            for k in range(n_out):
                per_leaf[k].append(pytree.unflatten(xt, bl[k * m:(k + 1) * m]))
        return pytree.unflatten(ot, [tuple(js) for js in per_leaf])


def _tuple_source(base: Callable[..., Any], blocks: tuple[Any, ...], kind: str, container_out: bool) -> Any:
    """``def f_jacfwd(a, b): return f_jacfwd_1(a, b), f_jacfwd_2(a, b)``: the generated function of a
    Jacobian by a tuple of argnums (``blocks``: its per-argument Jacobians, a tuple of tuples for a
    hessian); ``container_out``: ``base``'s output may be a container (not a hessian's blocks: a
    gradient's output is its argument's structure). False where a block has no generated source (a
    function-valued argument)."""
    flat = [b for row in blocks for b in (row if isinstance(row, tuple) else (row,))]
    if any(not isinstance(b, _Jacobian) or b._needs for b in flat):
        return False
    c = _as_compiled(base)
    prog, plain = c.program, c.fn
    params, args = _positional_and_call(plain)
    names = Names([*params, *plain.__globals__, *ADJOINT_IMPORTS])
    stem = plain.__name__ if plain.__name__.isidentifier() else "primal"
    name, primal = names.fresh(f"{stem}_{kind}"), names.fresh(stem)
    extra: dict[str, Callable[..., Any]] = {primal: plain}

    def calls(node: Any) -> str:
        if isinstance(node, tuple):
            return "(" + ", ".join(calls(b) for b in node) + ("," if len(node) == 1 else "") + ")"
        callee = names.fresh(node.fn.__name__)
        extra[callee] = node.fn
        return f"{callee}({_then(args)})"

    lines = ["import numpy as np", "from srcjax.adjoint import *", "", "",
             f"def {name}({ad.signature(prog.entry)}):"]
    if container_out:
        jacs, out = names.fresh("jacobians"), names.fresh("out")
        lines += [f"    {jacs} = {calls(blocks)}  # one Jacobian per argument",
                  f"    {out} = {primal}({', '.join(args[0] + args[1])})",
                  f"    if by_leaves({out}):  # (a container output: its structure outside, the tuple inside)",
                  f"        return argnums_blocks({jacs}, {out})",
                  f"    return {jacs}"]
    else:
        lines.append(f"    return {calls(blocks)}  # one Jacobian per argument")
    text = "\n".join(lines) + "\n"
    code = load_module(f"<srcjax.{kind} of {plain.__qualname__} by argnums #{next(_MODULES)}>", text,
                       {name: prog.entry})
    derived = exec_generated(code, name, prog, {}, extra)[name]
    derived.__srcjax_derived__ = (kind, base, tuple(range(len(params))))  # type: ignore[attr-defined]
    return derived


def _hessian_switch(fn: Callable[..., Any], own: Callable[..., Any], general: Callable[[], Callable[..., Any]],
                    nums: tuple[int, ...]) -> Callable[..., Any]:
    """``def f_hessian(x)``: what compiled code (``jit``, ``vmap``, a derivative) runs for ``hessian(fn)``
    called in it, where only the specializer knows the arguments' shapes: ``own`` (forward mode over
    the gradient) for a scalar output, JAX's ``jacfwd(jacrev(fn))`` (``general``) for any other (an
    array with dimensions, a container), a branch on the output's shape decided at transpile time."""
    c = _as_compiled(fn)
    prog, plain = c.program, c.fn
    params, args = _positional_and_call(plain)
    names = Names([*params, *plain.__globals__, *ADJOINT_IMPORTS])
    stem = plain.__name__ if plain.__name__.isidentifier() else "primal"
    name, primal, out = names.fresh(f"{stem}_hessian"), names.fresh(stem), names.fresh("out")
    other = general().__srcjax_fn__  # type: ignore[attr-defined]
    if not callable(other):  # (a tuple of argnums of a function taking functions: no generated source)
        raise _clean(ArgumentError("no generated source for jacfwd(jacrev(f))"))
    by_grad, by_jacobians = names.fresh(own.__name__), names.fresh(other.__name__)
    extra: dict[str, Callable[..., Any]] = {primal: plain, by_grad: own, by_jacobians: other}
    call = _then(args)
    text = "\n".join([
        "import numpy as np", "from srcjax.adjoint import *", "", "", f"def {name}({ad.signature(prog.entry)}):",
        f"    {out} = {primal}({', '.join(args[0] + args[1])})",
        f"    if by_leaves({out}) or np.ndim({out}) != 0:  # (not a scalar output: JAX's hessian, jacfwd(jacrev))",
        f"        return {by_jacobians}({call})",
        f"    return {by_grad}({call})  # (a scalar output: forward mode over the gradient)"]) + "\n"
    code = load_module(f"<srcjax.hessian of {plain.__qualname__} called in compiled code #{next(_MODULES)}>", text,
                       {name: prog.entry})
    switch = exec_generated(code, name, prog, {}, extra)[name]
    switch.__srcjax_derived__ = ("hessian", fn, nums)  # type: ignore[attr-defined]
    return switch


def _per_argnum(fn: Callable[..., Any], argnums: int | tuple[int, ...],
                make: Callable[[int], Callable[..., Any]], kind: str) -> Callable[..., Any]:
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        return make(argnums)
    if not isinstance(argnums, (tuple, list)) or not all(isinstance(a, int) and not isinstance(a, bool)
                                                         for a in argnums):
        raise _clean(ArgumentError(f"argnums must be an int or a tuple of ints, not {argnums!r}"))
    return _TupleArgnums(fn, [make(a) for a in argnums], tuple(argnums), kind)


def _argnums_key(argnums: Any) -> Any:
    return tuple(argnums) if isinstance(argnums, list) else argnums


@transformation
def jacfwd(fn: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """Jacobian by forward mode: shape ``out.shape + x.shape`` (one JVP per input element).

    ``has_aux=True``: ``fn`` returns a pair ``(output, aux)``; the Jacobian is of ``output`` and the
    call returns ``(jacobian, aux)`` (JAX's; :class:`srcjax.aux_output.AuxJacobian`).

    For an array argument and an array output the Jacobian is one compiled program (the JVP in a
    loop over basis vectors; ``srcjax.source`` shows it). For containers, JAX's layout: the
    output's structure outside, the argument's inside; a tuple of ``argnums``: a tuple of Jacobians
    inside (one per argument)."""
    if (star := star_args.dispatch(fn, lambda g: jacfwd(g, argnums, has_aux))) is not None:
        return star
    if has_aux:
        return reuse.reused(fn, "jacfwd", (_argnums_key(argnums), "has_aux"),
                            lambda: AuxJacobian(fn, jacfwd(output_of(fn), argnums), "jacfwd"))
    return reuse.reused(fn, "jacfwd", _argnums_key(argnums), lambda: _new_jacfwd(fn, argnums))


def _new_jacfwd(fn: Callable[..., Any], argnums: int | tuple[int, ...]) -> Any:
    """A jacfwd object of its own (not the one :func:`jacfwd` hands out for ``fn``: a hessian changes its own)."""
    return general_hessian.remade(_per_argnum(
        fn, argnums, lambda a: _Jacobian(fn, "jacfwd", a, None, _jacfwd_loop(fn, a)), "jacfwd"), fn,
        lambda g: jacfwd(g, argnums))


@transformation
def jacrev(fn: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           max_iters: int | None = None) -> Callable[..., Any]:
    """Jacobian by reverse mode: shape ``out.shape + x.shape`` (one VJP per output element).

    For an array argument and an array output the Jacobian is one compiled program (the VJP in a
    loop over basis cotangents; ``srcjax.source`` shows it). For containers, JAX's layout: the
    output's structure outside, the argument's inside (a tuple of ``argnums``: a tuple of Jacobians).
    ``max_iters`` as in :func:`grad`; ``has_aux`` as in :func:`jacfwd`."""
    if (star := star_args.dispatch(fn, lambda g: jacrev(g, argnums, has_aux, max_iters=max_iters))) is not None:
        return star
    if has_aux:
        return reuse.reused(fn, "jacrev", (_argnums_key(argnums), max_iters, "has_aux"),
                            lambda: AuxJacobian(fn, jacrev(output_of(fn), argnums, max_iters=max_iters), "jacrev"))
    return reuse.reused(fn, "jacrev", (_argnums_key(argnums), max_iters), lambda: general_hessian.remade(_per_argnum(
        fn, argnums, lambda a: _reverse_or_forward(fn, a, max_iters), "jacrev"), fn,
        lambda g: jacrev(g, argnums, max_iters=max_iters)))



def _reverse_or_forward(fn: Callable[..., Any], argnum: int, max_iters: int | None) -> _Jacobian:
    """jacrev by argument ``argnum``; of a derivative whose reverse mode srcjax cannot write (values a
    composite saves for its adjoint on the tape: ``np.vdot``, ``np.interp``), the same Jacobian by
    forward mode (jacfwd), as grad of grad is."""
    try:
        return _Jacobian(fn, "jacrev", argnum, max_iters, _jacrev_loop(fn, argnum, max_iters=max_iters))
    except ad.DifferentiationError:
        if getattr(_as_compiled(fn).fn, "__srcjax_derived__", None) is None:
            raise
        try:
            return _Jacobian(fn, "jacfwd", argnum, None, _jacfwd_loop(fn, argnum))
        except TranspileError:
            pass
        raise


def _scalar_output(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``fn``'s output on these arguments has grad's scalar shape, so that its hessian is forward
    over reverse (and grad's check reports a dtype it refuses at the return), or its type cannot be
    inferred (the function's own error, which the gradient's path reports at its line); else (an array
    with dimensions, a container) the hessian is ``jacfwd(jacrev(fn))``."""
    try:
        out = eval_shape(fn, *args, **kwargs)
    except TranspileError:
        return True
    return scalar_shaped(out)


def _takes_general(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """What a transformation of ``hessian(fn)`` runs for these arguments of ``fn`` when its own path
    (forward over reverse) failed: True, ``jacfwd(jacrev(fn))`` (an output that is not a scalar); False,
    that failure (the function's own error); grad's error for a scalar output of a dtype it refuses
    (integer, boolean, complex), located at the ``return`` (raised)."""
    try:
        out = eval_shape(fn, *args, **kwargs)
    except TranspileError:
        return False
    if not scalar_shaped(out):
        return True
    bad = grad_output_error(fn, out, False, "srcjax.grad")
    if bad is not None:
        raise _clean(bad) from None
    return False


def _general_hessian(fn: Callable[..., Any], argnums: int | tuple[int, ...],
                     max_iters: int | None) -> Callable[[], Callable[..., Any]]:
    """``jacfwd(jacrev(fn))``, JAX's hessian, written the first time a call needs it (an output that is
    not a scalar: an array, a container)."""
    made: list[Callable[..., Any]] = []

    def general() -> Callable[..., Any]:
        if not made:
            made.append(jacfwd(jacrev(fn, argnums, max_iters=max_iters), argnums))
        return made[0]

    return general


@transformation
def hessian(fn: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *,
            max_iters: int | None = None) -> Callable[..., Any]:
    """Hessian: shape ``out.shape + x.shape + x.shape``; JAX's layout for containers and a tuple of
    ``argnums`` (``jacfwd(jacrev(fn))``). Of a scalar function: forward mode over the generated
    gradient source (what another transformation of it reads, too); of another output, called
    directly: ``jacfwd(jacrev(fn))``."""
    if (star := star_args.dispatch(fn, lambda g: hessian(g, argnums, max_iters=max_iters))) is not None:
        return star
    return reuse.reused(fn, "hessian", (_argnums_key(argnums), max_iters), lambda: _hessian(fn, argnums, max_iters))


def _hessian(fn: Callable[..., Any], argnums: int | tuple[int, ...], max_iters: int | None) -> Callable[..., Any]:
    try:
        # (a jacfwd object of its own: `_general` below must not change the user's jacfwd(grad(fn)))
        h = _new_jacfwd(grad(fn, argnums, max_iters=max_iters), argnums)
    except ShapeError as e:  # a container output (a literal one at the return): no gradient to write
        if not e.not_scalar_output:
            raise
        return jacfwd(jacrev(fn, argnums, max_iters=max_iters), argnums)
    if isinstance(h, _TupleArgnums):  # (its generated source: the blocks jacfwd(grad(fn, i), j))
        nums = h._nums
        h = _TupleArgnums(h._base, h._parts, nums, "hessian", tuple(
            tuple(jacfwd(grad(fn, i, max_iters=max_iters), j) for j in nums) for i in nums), fn)
    h._general = _general_hessian(fn, argnums, max_iters)  # type: ignore[union-attr]
    return h


__all__ = ["hessian", "jacfwd", "jacrev"]
