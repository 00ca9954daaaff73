"""Public API: compile, source, lower, eval_shape (transformations come later).

The pipeline, in order (each stage its own module):

1. ``frontend.read``       function -> libcst tree + positions        (shape-agnostic)
2. ``frontend.normalize``  -> A-normal form, names resolved            (shape-agnostic)
3. ``frontend.program``    entry + helpers -> the generated module     (``srcjax.source``)
4. ``lower.specialize``    + argument shapes/dtypes/static values: binding-time analysis,
                           abstract evaluation and StableHLO emission in one walk
5. ``runtime``             compile with PJRT, cache, upload, execute

Stages 1-3 run once per function; 4-5 once per argument signature.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import pytree
from .core import (
    ArgumentError, NeedStatic, PYTHON_SCALAR_DTYPES, ShapeDtypeStruct, ShapedArray, TranspileError,
    canonical_dtype,
)
from .frontend.normalize import unwrap
from .frontend.program import Program

__all__ = ["compile", "source", "lower", "eval_shape", "Compiled", "Lowered", "CompiledExecutable"]


def _clean(e: TranspileError) -> TranspileError:
    """Drop srcjax's own frames from a user-facing error (internal errors keep them)."""
    from .lower.specialize import InternalError

    if not isinstance(e, InternalError):
        e.__cause__ = None
        e.__suppress_context__ = True
        e.with_traceback(None)
    return e


def _is_leaf(x: Any) -> bool:
    return isinstance(x, (np.ndarray, np.generic, ShapeDtypeStruct, ShapedArray)) or \
        type(x).__name__ == "Array" and hasattr(x, "aval")


def _leaf_aval(x: Any) -> ShapedArray | None:
    """Abstract value of a dynamic leaf, or None when the leaf is static."""
    t = type(x)
    if t is np.ndarray or isinstance(x, np.generic):
        return ShapedArray(x.shape, canonical_dtype(x.dtype))
    if t is float or t is int or t is bool:
        return ShapedArray((), PYTHON_SCALAR_DTYPES[t], weak_type=True)
    if isinstance(x, ShapeDtypeStruct):
        return ShapedArray(x.shape, canonical_dtype(x.dtype))
    if isinstance(x, ShapedArray):
        return x
    aval = getattr(x, "aval", None)
    if isinstance(aval, ShapedArray):
        return aval
    if hasattr(x, "__array__") and hasattr(x, "shape") and hasattr(x, "dtype"):
        return ShapedArray(tuple(x.shape), canonical_dtype(x.dtype))
    return None


class _Plan:
    """What one specialization needs at call time."""

    __slots__ = ("exe", "out_tree", "template", "n_out", "in_avals")

    def __init__(self, exe: Any, out_tree: pytree.TreeDef, template: list[Any], in_avals: list[ShapedArray]):
        self.exe = exe
        self.out_tree = out_tree
        self.template = template
        self.n_out = sum(1 for t in template if t is None)
        self.in_avals = in_avals


class Compiled:
    """A function compiled by srcjax (what ``@srcjax.compile`` returns)."""

    def __init__(self, fn: Callable[..., Any], static_argnums: int | Sequence[int] = (),
                 static_argnames: str | Sequence[str] = (), device: str | None = None) -> None:
        fn = unwrap(fn)
        self.__srcjax_fn__ = fn
        self.fn = fn
        functools.update_wrapper(self, fn)
        self.signature = inspect.signature(fn)
        self.params = list(self.signature.parameters)
        if isinstance(static_argnums, int):
            static_argnums = (static_argnums,)
        if isinstance(static_argnames, str):
            static_argnames = (static_argnames,)
        static = {self.params[i] for i in static_argnums if -len(self.params) <= i < len(self.params)}
        bad = [i for i in static_argnums if not -len(self.params) <= i < len(self.params)]
        if bad:
            raise ArgumentError(f"static_argnums {tuple(bad)} out of range for {fn.__name__} with "
                                f"{len(self.params)} parameters")
        for n in static_argnames:
            if n not in self.params:
                raise ArgumentError(f"static_argnames: {fn.__name__} has no parameter {n!r}")
            static.add(n)
        self.static = frozenset(static)
        self.auto_static: frozenset[str] = frozenset()
        self.device = device
        self._program: Program | None = None
        self._cache: dict[Any, _Plan] = {}
        self._simple = all(p.kind == p.POSITIONAL_OR_KEYWORD for p in self.signature.parameters.values())

    @property
    def program(self) -> Program:
        if self._program is None:
            self._program = Program(self.fn)
        return self._program

    # -- argument handling ------------------------------------------------------------
    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        if not kwargs and self._simple and len(args) == len(self.params):
            return list(args)
        try:
            ba = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            src = None
            try:
                from .frontend.read import read_function

                s = read_function(self.fn)
                src = s.span(s.fdef.name)
            except TranspileError:
                pass
            raise ArgumentError(f"{self.fn.__name__}(): {e}", span=src,
                                hint=f"the signature is {self.fn.__name__}{self.signature}") from None
        ba.apply_defaults()
        return list(ba.arguments.values())

    def _key(self, values: list[Any]) -> tuple[tuple[Any, ...], list[Any]]:
        """(cache key, dynamic leaves in order)."""
        key: list[Any] = []
        leaves_out: list[Any] = []
        static = self.static | self.auto_static
        for name, v in zip(self.params, values):
            if name in static:
                try:
                    hash(v)
                except TypeError:
                    raise ArgumentError(f"static argument {name!r} must be hashable, got "
                                        f"{type(v).__name__}") from None
                key.append(("s", v))
                continue
            leaves, tree = pytree.flatten(v, is_leaf=_is_leaf)
            avals = []
            for leaf in leaves:
                a = _leaf_aval(leaf)
                if a is None:
                    raise ArgumentError(
                        f"argument {name!r}: cannot pass a value of type {type(leaf).__name__} as an array",
                        hint=f"mark it static: srcjax.compile(f, static_argnames=({name!r},))")
                avals.append(a)
                leaves_out.append(leaf)
            key.append((tree, tuple(avals)))
        return tuple(key), leaves_out

    def _specs(self, values: list[Any]) -> list[Any]:
        from .lower.specialize import ArgSpec

        static = self.static | self.auto_static
        specs = []
        for name, v in zip(self.params, values):
            if name in static:
                specs.append(ArgSpec(True, value=v))
            else:
                leaves, tree = pytree.flatten(v, is_leaf=_is_leaf)
                specs.append(ArgSpec(False, aval=pytree.unflatten(tree, [_leaf_aval(x) for x in leaves])))
        return specs

    def _specialize(self, values: list[Any]) -> tuple[str, list[ShapedArray], pytree.TreeDef, list[Any]]:
        from .lower.specialize import specialize

        while True:
            try:
                return specialize(self.program, self._specs(values))
            except NeedStatic as ns:
                new = self.auto_static | ns.names
                if new == self.auto_static:
                    raise
                self.auto_static = frozenset(new)

    def _plan(self, values: list[Any]) -> tuple[_Plan, list[Any]]:
        key, leaves = self._key(values)
        plan = self._cache.get(key)
        if plan is None:
            from .runtime import compile_text

            before = self.auto_static
            text, out_avals, tree, template = self._specialize(values)
            if self.auto_static != before:  # the key changed: some args became static
                key, leaves = self._key(values)
            exe = compile_text(text, out_avals, self.device)
            plan = self._cache[key] = _Plan(exe, tree, template, [a for _, avs in [] for a in avs])
        return plan, leaves

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            values = self._bind(args, kwargs)
            if self.device == "numpy":
                return self._run_numpy(values)
            plan, leaves = self._plan(values)
        except TranspileError as e:
            raise _clean(e) from None
        from .runtime.xla import device_put

        backend = plan.exe.backend
        bufs = []
        for leaf in leaves:
            buf = getattr(leaf, "_buf", None)
            bufs.append(buf if buf is not None else device_put(leaf, _leaf_aval(leaf), backend))  # type: ignore[arg-type]
        outs = plan.exe.run(bufs)
        if plan.n_out == len(plan.template):
            flat = outs
        else:
            it = iter(outs)
            flat = [next(it) if t is None else t for t in plan.template]
        return pytree.unflatten(plan.out_tree, flat)

    # -- NumPy execution mode ---------------------------------------------------------
    def _run_numpy(self, values: list[Any]) -> Any:
        fn = numpy_function(self.fn)
        return fn(*values)

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        try:
            values = self._bind(args, kwargs)
            text, out_avals, tree, template = self._specialize(values)
        except TranspileError as e:
            raise _clean(e) from None
        return Lowered(text, out_avals, tree, template, self, values)

    def __repr__(self) -> str:
        return f"<srcjax.compile of {self.fn.__qualname__}>"


class Lowered:
    """A specialized program: ``as_text()`` is its StableHLO."""

    def __init__(self, text: str, out_avals: list[ShapedArray], tree: pytree.TreeDef, template: list[Any],
                 compiled: Compiled, values: list[Any]) -> None:
        self.text = text
        self.out_avals = out_avals
        self.out_tree = tree
        self.template = template
        self._compiled = compiled
        self._values = values

    def as_text(self) -> str:
        return self.text

    def compile(self) -> CompiledExecutable:
        from .runtime import compile_text

        return CompiledExecutable(compile_text(self.text, self.out_avals, self._compiled.device), self)


class CompiledExecutable:
    def __init__(self, exe: Any, lowered: Lowered) -> None:
        self.exe = exe
        self.lowered = lowered

    def as_text(self) -> str:
        """The optimized HLO XLA produced."""
        return str(self.exe.as_text())

    def cost_analysis(self) -> Any:
        return self.exe.cost_analysis()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.lowered._compiled(*args, **kwargs)


def compile(fn: Callable[..., Any] | None = None, *, static_argnums: int | Sequence[int] = (),
            static_argnames: str | Sequence[str] = (), device: str | None = None) -> Any:
    """Compile ``fn`` with srcjax: ``@srcjax.compile`` or ``srcjax.compile(fn, ...)``.

    ``device`` is ``"cpu"`` (default), ``"gpu"``, or ``"numpy"`` to run the
    generated source with NumPy instead of XLA (for debugging).
    """
    if fn is None:
        return lambda f: Compiled(f, static_argnums, static_argnames, device)
    return Compiled(fn, static_argnums, static_argnames, device)


def _as_compiled(fn: Any) -> Compiled:
    if isinstance(fn, Compiled):
        return fn
    return Compiled(fn)


def source(fn: Callable[..., Any]) -> str:
    """The generated Python module for ``fn``: imports, the entry function, helpers."""
    try:
        return _as_compiled(fn).program.source()
    except TranspileError as e:
        raise _clean(e) from None


def numpy_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The generated source of ``fn`` executed by NumPy (in ``fn``'s globals)."""
    c = _as_compiled(fn)
    prog = c.program
    cached = getattr(prog, "_numpy_fn", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    ns = dict(c.fn.__globals__)
    ns.update(prog.functions[prog.entry.name].source.closure)
    exec(compile_source(prog.source(), f"<srcjax.source of {c.fn.__qualname__}>"), ns)
    f = ns[prog.entry.name]
    prog._numpy_fn = f  # type: ignore[attr-defined]
    return f  # type: ignore[no-any-return]


def compile_source(text: str, filename: str) -> Any:
    import builtins

    return builtins.compile(text, filename, "exec")


def lower(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Lowered:
    """Specialize ``fn`` for these arguments (arrays or ShapeDtypeStructs) and lower it to StableHLO."""
    return _as_compiled(fn).lower(*args, **kwargs)


def eval_shape(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Shapes and dtypes of ``fn``'s outputs, computed without running anything."""
    c = _as_compiled(fn)
    try:
        values = c._bind(args, kwargs)
        _, out_avals, tree, template = c._specialize(values)
    except TranspileError as e:
        raise _clean(e) from None
    it = iter(out_avals)
    leaves = [ShapeDtypeStruct(a.shape, a.dtype) if t is None else t
              for t, a in ((t, next(it) if t is None else None) for t in template)]
    return pytree.unflatten(tree, leaves)
