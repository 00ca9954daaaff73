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

import builtins
import functools
import inspect
import linecache
import re
import types
from collections.abc import Callable, Sequence
from time import perf_counter
from typing import TYPE_CHECKING, Any

import numpy as np

from . import (
    call_route,
    cpp_budget,
    cpp_calls,
    example_errors,
    gc_pause,
    general_hessian,
    numpy_run,
    object_arguments,
    pytree,
    reuse,
    star_args,
    warm_cache,
)
from .arguments import (  # (api's names for them: the transformations import these from api)
    Static,
    _dynamic_leaves,
    _hashable,
    _is_leaf,
    _key_aval,
    _leaf_aval,
    _leaf_key,
)
from .core import (
    ArgumentError,
    NeedStatic,
    ShapedArray,
    ShapeDtypeStruct,
    Span,
    TranspileError,
    UnknownFunctionError,
    transformation,
)
from .donation import alias_text, donated_leaves, donated_names
from .frontend.locations import user_error as _clean  # (api's name for it: the transformations import it here)
from .frontend.program import Program
from .frontend.read import is_generated
from .frontend.resolve import unwrap
from .gc_pause import pausing
from .left_out import default_constant, filled
from .lifetimes import PerFunction
from .tree_calls import cpp_tree as _cpp_tree  # (api's names for them: the transformations import these)
from .tree_calls import tree_key as _tree_key

_LOC = re.compile(r' loc\("(?:[^"\\\\]|\\\\.)*":\d+:\d+\)')

__all__ = ["compile", "lower", "eval_shape", "Compiled", "Lowered", "CompiledExecutable"]


class _Plan:
    """What one specialization needs at call time."""

    __slots__ = ("exe", "out_tree", "template", "n_out", "in_avals", "run", "cpp_out")

    def __init__(self, exe: Any, out_tree: pytree.TreeDef, template: list[Any], in_avals: list[ShapedArray]):
        self.exe = exe
        self.out_tree = out_tree
        self.template = template
        self.n_out = sum(1 for t in template if t is None)
        self.in_avals = in_avals
        self.run = self._runner()
        self.cpp_out: Any = None  # the results' C++ structures, plain and waiting (cpp_calls.py), once known

    def _runner(self) -> Callable[[Sequence[Any]], Any]:
        """``run(leaves)``: upload, execute, rebuild the result's structure (the cache-hit path of a
        call, so everything it needs is bound here once)."""
        exe, in_avals, template, tree = self.exe, self.in_avals, self.template, self.out_tree
        put, array = exe.put, exe.array_type

        put_many = getattr(exe, "put_many", None)

        def upload(leaves: Sequence[Any]) -> list[Any]:
            if put_many is None:
                return [leaf._buf if type(leaf) is array else put(leaf, aval) for leaf, aval in zip(leaves, in_avals)]
            bufs = [leaf._buf for leaf in leaves if type(leaf) is array]
            if len(bufs) == len(leaves):
                return bufs
            return put_many(leaves, in_avals)  # type: ignore[no-any-return]  # host leaves: runtime/host_upload.py

        if hasattr(exe, "upload"):  # a sharded program: each argument laid out as its sharding says
            upload = exe.upload

        if tree is pytree.LEAF and self.n_out == len(template) == 1 and hasattr(exe, "run_one"):
            return lambda leaves: exe.run_one(upload(leaves))
        if self.n_out == len(template):
            fast = _cpp_tree(tree)
            if fast is not None:  # the result's structure rebuilt in C++
                build = fast.unflatten
                return lambda leaves: build(exe.run(upload(leaves)))
            return lambda leaves: pytree.unflatten(tree, exe.run(upload(leaves)))

        def rebuild(leaves: Sequence[Any]) -> Any:
            it = iter(exe.run(upload(leaves)))
            return pytree.unflatten(tree, [next(it) if t is None else t for t in template])

        return rebuild


class WrittenWhenRead:
    """A compiled function whose source is written when first read (``fn``, ``__srcjax_fn__``): the
    subclass's :meth:`_write_pending` writes it (vmap at its first call, a derivative found in the warm
    cache)."""

    _fn: Callable[..., Any]

    def _write_pending(self) -> None:  # pragma: no cover - each subclass has its own
        raise NotImplementedError

    @property
    def fn(self) -> Callable[..., Any]:
        self._write_pending()
        return self._fn

    @fn.setter
    def fn(self, v: Callable[..., Any]) -> None:
        self._fn = v

    @property
    def __srcjax_fn__(self) -> Any:
        return self.fn

    @__srcjax_fn__.setter
    def __srcjax_fn__(self, v: Callable[..., Any]) -> None:
        self._fn = v


class Compiled:
    """A function compiled by srcjax (what ``@srcjax.compile`` returns)."""

    # A call goes to what the ``__call__`` slot holds, with no Python frame of srcjax's in between: the
    # Python path (_python_dispatch) or, once attached, jaxlib's C++ dispatcher (cpp_calls.py), set through
    # the ``_dispatch`` property (call_route.py). Subclasses with their own __call__ use super().__call__.
    __slots__ = ("__call__", "__dict__", "__weakref__")
    _dispatch: Callable[..., Any]  # (call_route.route, set below the class)

    _cpp: Any = None  # jaxlib's C++ dispatcher for this function, once attached (cpp_calls.py)
    _cpp_host: Any = None  # its second one, for calls with host leaves (srcjax's copies of them)
    _cpp_top: Any = None  # its third, for calls with NumPy arrays as arguments (srcjax's copies of them)
    _cpp_refused = False
    _cpp_static: frozenset[str] = frozenset()  # (the static parameters of the attached dispatcher: cpp_calls.py)
    _cpp_attached = 0  # (dispatchers attached: cpp_calls.restatic)
    _cpp_wait = False  # (the dispatcher comes once ml_dtypes is imported: cpp_budget.BUDGET)
    _by_position = 0  # (grad, value_and_grad: calls pass at least this many arguments by position; autodiff.py)
    _or_general: Any = None  # a transformation of a hessian: the same of its general form (general_hessian.py)
    _shapes: dict[Any, tuple[list[Any], pytree.TreeDef, list[Any]]] | None = None  # (eval_shape's, by signature)

    def __init__(self, fn: Callable[..., Any], static_argnums: int | Sequence[int] = (),
                 static_argnames: str | Sequence[str] = (), device: str | None = None,
                 in_shardings: Any = None, out_shardings: Any = None, donate_argnums: int | Sequence[int] = (),
                 donate_argnames: str | Sequence[str] = ()) -> None:
        del self._dispatch  # (the Python path: _dispatch's deleter)
        self._inner = fn if isinstance(fn, Compiled) else None  # (a vmap jitted: its one example's errors)
        fn = _wrapped_numpy(unwrap(fn))
        own = getattr(fn, "srcjax_refusal", None)  # an object that says itself why (srcjax.jacobian._TupleArgnums)
        if isinstance(own, tuple) and not isinstance(fn, types.FunctionType):
            raise _clean(UnknownFunctionError(own[0], hint=own[1]))
        if not callable(fn):  # (`srcjax.jit(f(x))`: a value, JAX's "Expected a callable value")
            raise _clean(ArgumentError(f"cannot transform {fn!r}: it is of type {type(fn).__name__}, not a function",
                                       hint="pass the function itself: srcjax.grad(f)(x), not srcjax.grad(f(x))"))
        if not isinstance(fn, types.FunctionType):
            raise _clean(UnknownFunctionError(
                f"cannot compile {fn!r}: it has no Python source (srcjax transpiles functions written with `def`)",
                hint=f"use np.{fn.__name__}, which takes arrays" if getattr(fn, "__module__", None) == "math" and
                hasattr(np, fn.__name__) else "wrap it: def f(x): return np.tanh(x)"))
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
        self.donate = donated_names(self.params, donate_argnums, donate_argnames, fn.__name__) - self.static
        self._auto_static: frozenset[str] = frozenset()
        self._by_value: set[str] = set()  # made static for holding None / a non-array in some call
        self._static_all = self.static
        self._nparams = len(self.params)
        self.device = device
        self.in_shardings, self.out_shardings = in_shardings, out_shardings
        self._program: Program | None = None
        self._cache: dict[Any, _Plan] = {}
        # containers of arrays: (C++ structure, leaf signatures) -> plan, when the plan's leaves are exactly
        # the C++ flattening's (see _tree_key); filled by the full path, read by calls that hit it
        self._tree_cache: dict[Any, _Plan] = {}
        self._simple = all(p.kind == p.POSITIONAL_OR_KEYWORD for p in self.signature.parameters.values())
        self._defaults: tuple[Any, tuple[Any, ...]] = (None, ())  # (left_out.filled: signature, plain defaults)
        self._reads = warm_cache.Reads()  # what the front end read for this function (warm_cache.py)

    @property
    def auto_static(self) -> frozenset[str]:
        """Python int/bool arguments found to be needed as static values."""
        return self._auto_static

    @auto_static.setter
    def auto_static(self, v: frozenset[str]) -> None:
        changed = v != self._auto_static
        self._auto_static = v
        self._static_all = self.static | v
        if changed:  # (values of those arguments now pick the program: a dispatcher keying them as static)
            cpp_calls.restatic(self)

    @property
    def program(self) -> Program:
        if self._program is None:
            fn = self.fn
            generated = is_generated(fn)
            # a function srcjax wrote keeps its program, for every Compiled of it (a derivative's own and the
            # plain one that a transformation of it makes): normalized once. Its source never changes, and
            # what normalizing read is the program's own `reads` (merged by _warm_reads)
            shared = getattr(fn, "__srcjax_program__", None) if generated else None
            if isinstance(shared, Program):
                self._program = shared
                return shared
            with warm_cache.recording(self._reads), gc_pause.paused():
                self._program = Program(fn)
            if generated:
                try:
                    fn.__srcjax_program__ = self._program  # type: ignore[attr-defined]
                except AttributeError:  # pragma: no cover - not a plain function
                    pass
        return self._program

    # -- argument handling ------------------------------------------------------------
    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        if not kwargs and self._simple and len(args) == len(self.params):
            return list(args)
        try:
            ba = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise ArgumentError(f"{self.fn.__name__}(): {e}", span=self._def_span(),
                                hint=f"the signature is {self.fn.__name__}{self.signature}") from None
        ba.apply_defaults()
        return list(ba.arguments.values())

    def _def_span(self) -> Span | None:
        """The user's ``def`` line of the function: where an error about its arguments is shown."""
        try:
            from .frontend.read import read_function

            s = read_function(self.fn)
            return s.span(s.fdef.name)
        except TranspileError:
            return None

    def _left_default(self, name: str, v: Any) -> bool:
        """Whether ``v``, the value of parameter ``name``, is a Python float (or complex) the call left at its
        default (the default itself: binding and ``left_out.filled`` give it). Like JAX, which traces no
        default, the program then takes it as a constant where it needs its value (``math.lgamma(df)``)."""
        if type(v) not in (float, complex):
            return False
        p = self.signature.parameters.get(name)
        return p is not None and p.default is v

    def _key(self, values: list[Any]) -> tuple[tuple[Any, ...], list[Any], list[Any]]:
        """(cache key, dynamic leaves in order, their leaf keys)."""
        key: list[Any] = []
        leaves_out: list[Any] = []
        leaf_keys: list[Any] = []
        static = self._static_all
        for name, v in zip(self.params, values):
            if name in static and name not in self.static and not self._left_default(name, v) and (
                    type(v) in (float, complex) or name in self._by_value and  # (a float default: static left out)
                    (_is_leaf(v) or type(v) in (float, int, bool) or pytree.is_tree(v))):
                # static because an earlier call passed None (a default) or a string; now an array
                self._by_value.discard(name)
                self.auto_static = self.auto_static - {name}
                return self._key(values)
            if name in static:
                try:
                    hash(v)
                except TypeError:
                    if name not in self.static and pytree.is_tree(v):  # made static for a number inside it
                        if (frozen := default_constant(self.signature, name, v)) is not None:
                            key.append(("d", frozen))  # (a default container left out: a constant, as in JAX)
                            continue
                        raise ArgumentError(
                            f"argument {name!r}: a Python number inside this {type(v).__name__} is used where a "
                            "value known at transpile time is needed (a shape, a range bound, an index); numbers "
                            "inside containers are run-time values",
                            hint="pass that number as its own argument (a Python int argument used this way is "
                                 "made static automatically)") from None
                    raise ArgumentError(f"static argument {name!r} must be hashable, got {type(v).__name__}",
                                        span=self._def_span(),
                                        hint="pass a hashable value (a tuple instead of a list), or leave the "
                                             "argument out of static_argnums/static_argnames") from None
                key.append(("s", v))
                continue
            if _is_leaf(v) or type(v) in (float, int, bool):
                leaves, tree = [v], None
            else:
                try:
                    leaves, tree = pytree.flatten(v, is_leaf=_is_leaf, nodes=True)
                except pytree.UnsortableKeys as e:
                    raise ArgumentError(f"argument {name!r} is a dict that has no leaf order: {e}",
                                        hint="use dict keys of one type (all str, or all int): a pytree's "
                                             "leaves are ordered by its sorted keys, as in jax") from None
                if not leaves and tree is pytree.NONE:  # None: a static argument
                    self.auto_static = self.auto_static | {name}
                    self._by_value.add(name)
                    return self._key(values)
                if len(leaves) == 1 and tree is pytree.LEAF and _leaf_aval(v) is None and _hashable(v):
                    # not an array (a string, a function, ...): static, as JAX's static_argnames
                    if (held := object_arguments.held_array(v, name)) is not None:
                        raise object_arguments.refusal(v, name, held, self._def_span())
                    self.auto_static = self.auto_static | {name}
                    self._by_value.add(name)
                    return self._key(values)
            ks = []
            container = tree is not None and tree is not pytree.LEAF
            for j, leaf in enumerate(leaves):
                k = _leaf_key(leaf)
                if k is None and container and isinstance(leaf, (str, Static)):
                    ks.append(("s", leaf))  # a string inside a container: static (e.g. an activation's name)
                    continue
                if k is None:
                    where = pytree.leaf_path(v, j, name, is_leaf=_is_leaf) if container else name
                    raise ArgumentError(
                        f"argument {name!r}: cannot pass a value of type {type(leaf).__name__} "
                        f"{'at ' + where + ' ' if container else ''}as an array",
                        hint="containers hold arrays, numbers, strings and None" if container else
                        f"mark it static: srcjax.compile(f, static_argnames=({name!r},))")
                ks.append(k)
                leaves_out.append(leaf)
                leaf_keys.append(k)
            key.append(ks[0] if tree is None else (tree, tuple(ks)))
        return tuple(key), leaves_out, leaf_keys

    def _specs(self, values: list[Any]) -> list[Any]:
        from .lower.specialize import ArgSpec

        static = self.static | self.auto_static
        specs = []
        for name, v in zip(self.params, values):
            if name in static:
                specs.append(ArgSpec(True, value=v.value if isinstance(v, Static) else v))
            else:
                leaves, tree = pytree.flatten(v, is_leaf=_is_leaf, nodes=True)
                specs.append(ArgSpec(False, aval=pytree.unflatten(tree, [
                    x if isinstance(x, str) else x.value if isinstance(x, Static) else _leaf_aval(x) for x in leaves]),
                    default=self._left_default(name, v)))
        return specs

    def _specialize(self, values: list[Any]) -> tuple[str, list[ShapedArray], pytree.TreeDef, list[Any]]:
        return self._specialize_sharded(values)[:4]  # type: ignore[return-value]

    @pausing
    def _specialize_sharded(self, values: list[Any]) -> tuple[str, list[ShapedArray], pytree.TreeDef, list[Any], Any]:
        """:meth:`_specialize`, and the program's shardings (``lower.shardy.ShardingPlan``)."""
        from .lower import values as lowered_values
        from .lower.specialize import specialize
        from .spmd import sharding_plan

        self._key(values)  # validates arguments; non-array ones become static
        while True:
            try:
                plan = sharding_plan(self, values, _is_leaf)
                with warm_cache.recording(self._reads):
                    platform = self._platform()
                    return (*specialize(self.program, self._specs(values), plan, lowered_values.roll_above(platform),
                                        platform), plan)
            except TranspileError as e:  # (a vmap's: the function's own error for one example, if it has one)
                raise example_errors.behind(self, values, e, eval_shape) from None
            except NeedStatic as ns:
                new = self.auto_static | {str(n) for n in ns.names}  # (argument names; a loop's origin matches none)
                if new == self.auto_static:
                    raise
                self.auto_static = frozenset(new)

    def _platform(self) -> str:
        """The platform this function's program is lowered for ("cpu", "gpu" or "numpy"): Python ``for``
        loops over static ranges are rolled above ``lower.values.roll_above`` of it (GPUs unroll short
        ones), and np.linalg calls LAPACK on a CPU and cuSOLVER on a GPU."""
        from .runtime import get_backend

        if self.device == "numpy":
            return "numpy"
        return str(get_backend(self.device).platform)

    def _plan(self, values: list[Any]) -> tuple[_Plan, list[Any]]:
        key, leaves, leaf_keys = self._key(values)
        plan = self._cache.get(key)
        if plan is None:
            from .runtime import compile_text
            from .runtime.xla import prepare_upload

            before = self.auto_static  # (a level-2 entry read below can make arguments static, too)
            warm = self._warm_key(key)
            if warm is not None:
                hit = self._warm_plan(warm, values)
                if hit is not None:
                    return hit
            text, out_avals, tree, template, sharding = self._specialize_sharded(values)
            if self.auto_static != before:  # some arguments became static: the key changed
                key, leaves, leaf_keys = self._key(values)
            in_avals = [_key_aval(k) for k in leaf_keys]
            exe: Any
            if sharding.sharded:
                from .runtime.spmd import compile_sharded

                exe = compile_sharded(text, in_avals, out_avals, self.device, sharding)
            else:
                if self.donate:  # the donated arguments' buffers reused for results (donation.py)
                    text = alias_text(text, donated_leaves(self.params, values, self.donate, self._static_all,
                                                           len(leaves), _dynamic_leaves), in_avals, out_avals)
                entry: list[bytes | None] = []

                def meanwhile() -> None:  # (on this thread while XLA compiles: runtime/compile_worker.py)
                    prepare_upload(leaves, in_avals, self.device)
                    if warm is not None:
                        entry.append(self._warm_store(key, text, out_avals, tree, template, in_avals))

                exe = compile_text(text, out_avals, self.device, meanwhile)
                if entry and warm is not None:
                    warm_cache.store(warm, entry[0])  # (the entry of a program that compiled)
            plan = self._cache[key] = _Plan(exe, tree, template, in_avals)
        return plan, leaves

    # -- the level-2 persistent cache (warm_cache.py): a new process skips the front end ------------
    def _warm_identity(self) -> list[Any] | None:
        """This function's identity across processes, or None (not cached: a closure, shardings...)."""
        if self.in_shardings is not None or self.out_shardings is not None:
            return None
        origin = getattr(self, "_origin", None)
        if origin is not None:  # a derivative (autodiff._Derived): its transformation over its function's identity
            fn, kind, argnums, has_aux, max_iters = origin
            inner = None if getattr(self, "_needs", None) else _as_compiled(fn)._warm_identity()
            nums = argnums if isinstance(argnums, int) else list(argnums)
            return None if inner is None else ["derived", kind, nums, has_aux, max_iters, inner, sorted(self.static)]
        if getattr(self, "_primal", None) is not None:
            return None  # a derivative written for function-valued arguments
        ident = warm_cache.identity(self.fn)
        return None if ident is None else ["jit", ident, sorted(self.static), sorted(self.donate)]

    def _warm_reads(self) -> warm_cache.Reads:
        """Everything the front end read for this function's programs (and for its function's, if a derivative)."""
        reads = warm_cache.Reads()
        reads.merge(self._reads)
        reads.merge(self.program.reads)
        origin = getattr(self, "_origin", None)
        if origin is not None:
            reads.merge(_as_compiled(origin[0])._warm_reads())
        return reads

    def _warm_preload(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether this call's program is ready without the front end: in memory, or loaded from the
        level-2 cache (a derivative waits for this before writing its source: autodiff._Derived)."""
        try:
            values = Compiled._bind(self, args, kwargs)  # (not vmap's, which writes its source first)
            key = self._key(values)[0]
        except TranspileError:
            return False
        if key in self._cache:
            return True
        warm = self._warm_key(key)
        return warm is not None and self._warm_plan(warm, values) is not None

    def _warm_marker(self) -> str | None:
        """The level-2 key noting that this derivative was written before (``warm_cache.mark``)."""
        return self._warm_key(("written",))

    def _warm_key(self, key: tuple[Any, ...]) -> str | None:
        from .runtime import disk_cache, get_backend

        if disk_cache.cache_dir() is None:
            return None
        ident = self._warm_identity()
        if ident is None:
            return None
        try:
            return warm_cache.entry_key(ident, key, self.device, disk_cache.environment(get_backend(self.device)))
        except (TypeError, ValueError):
            return None

    def _warm_plan(self, warm: str, values: list[Any]) -> tuple[_Plan, list[Any]] | None:
        """The plan of a program an earlier process wrote, when nothing it read has changed."""
        from .runtime import compile_text

        entry = warm_cache.lookup(warm)
        if entry is None:
            return None
        auto = frozenset(entry["auto_static"])
        if not auto <= set(self.params):
            return None
        if auto - self.auto_static:
            self.auto_static = self.auto_static | auto
        key, leaves, leaf_keys = self._key(values)
        in_avals = [_key_aval(k) for k in leaf_keys]
        if in_avals != entry["in_avals"] or warm_cache.key_text(key) != entry["key"]:
            return None  # (another value of an argument made static: another program)
        from .runtime.xla import prepare_upload

        # (the upload program of the arguments loaded while XLA loads or compiles the program)
        exe = compile_text(entry["text"], entry["out_avals"], self.device,
                           lambda: prepare_upload(leaves, in_avals, self.device))
        warm_cache.note_entry(entry, self._reads)  # (what reusing this object checks: reuse.py)
        plan = self._cache[key] = _Plan(exe, entry["out_tree"], entry["template"], in_avals)
        return plan, leaves

    @pausing
    def _warm_store(self, key: tuple[Any, ...], text: str, out_avals: list[ShapedArray], tree: pytree.TreeDef,
                    template: list[Any], in_avals: list[ShapedArray]) -> bytes | None:
        """The level-2 entry of a program (``warm_cache.entry``), stored by the caller once it compiled."""
        try:
            source: str | None = self.program.source()
        except TranspileError:
            source = None
        return warm_cache.entry(self._warm_reads(), key, text, out_avals, tree, template, in_avals, self.auto_static,
                                source)

    def _fast_key(self, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The cache key when every argument is a bare array or Python scalar (the common case)."""
        if self._static_all:
            return None
        key: list[Any] = []
        for a in args:
            t = type(a)
            if t is np.ndarray:
                key.append((a.shape, a.dtype, False))
            elif t is float or t is int or t is bool:
                key.append(t)
            else:
                aval = getattr(a, "aval", None)
                if aval is None or a.__class__.__name__ != "Array":
                    if aval is not None and a.__class__.__name__ == "ShardedArray":  # (as _leaf_key)
                        key.append((aval.shape, aval.dtype, aval.weak_type, a._sharding))
                        continue
                    return None
                key.append((aval.shape, aval.dtype, aval.weak_type))
        return tuple(key)

    if TYPE_CHECKING:  # (the ``__call__`` slot, above)
        def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

    def _python_dispatch(self, *args: Any, **kwargs: Any) -> Any:
        if self._cpp_wait:  # (the dispatcher waits for ml_dtypes to be imported: cpp_budget.py)
            cpp_calls.waited(self, Compiled.__call__)
            if self._cpp is not None and not self.donate:
                return self._cpp(*args, **kwargs)
            if self._cpp_wait and not self.donate:
                start = perf_counter()
                try:
                    return self._call(args, kwargs)
                finally:
                    cpp_budget.took(perf_counter() - start)
        if self.donate:  # (the C++ dispatcher, when attached, then the donated buffers released)
            return cpp_calls.donating_call(self, args, kwargs, _clean)
        return self._call(args, kwargs)

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A call through srcjax's Python path."""
        plan = None
        tree: tuple[Any, list[Any]] | None = None
        if not kwargs and len(args) < self._nparams:
            args = filled(self, args)
        if not kwargs and len(args) == self._nparams and self._simple and self.device != "numpy":
            k = self._fast_key(args)
            if k is not None:
                plan = self._cache.get(k)
                if plan is not None:
                    return plan.run(args)
                leaves: Sequence[Any] = args
            elif not self._static_all:
                tree = _tree_key(args)
                if tree is not None:
                    plan = self._tree_cache.get(tree[0])
                    if plan is not None:
                        return plan.run(tree[1])
        if plan is None:
            try:
                values = self._bind(args, kwargs)
                if self.device == "numpy":
                    return self._run_numpy(values)
                plan, leaves = self._plan(values)
            except TranspileError as e:
                other = general_hessian.instead(self, args, kwargs)
                if other is not None:  # (a hessian's output is not a scalar: its general form)
                    return other(*args, **kwargs)
                raise _clean(e) from None
            if tree is not None:
                self._remember_tree(tree, plan, leaves)
            if self._cpp is None and not self._cpp_refused:
                out = self._run_plan(plan, leaves)
                cpp_calls.attach(self, Compiled.__call__)  # (after a call that worked: C++ next)
                return out
        return self._run_plan(plan, leaves)

    def _remember_tree(self, tree: tuple[Any, list[Any]], plan: _Plan, leaves: Sequence[Any]) -> None:
        """Serve later calls of this structure and these leaf signatures from ``plan`` when its leaves
        are exactly the C++ flattening's, in order (otherwise they keep taking the full path)."""
        fast = tree[1]
        if not self._static_all and len(fast) == len(leaves) and all(a is b for a, b in zip(fast, leaves)):
            self._tree_cache[tree[0]] = plan

    def _run_plan(self, plan: _Plan, leaves: Sequence[Any]) -> Any:
        """Upload, execute, and rebuild the result's structure (the cache-hit path of a call)."""
        return plan.run(leaves)

    # -- NumPy execution mode ---------------------------------------------------------
    def _run_numpy(self, values: list[Any]) -> Any:
        fn = numpy_function(self.fn)
        return fn(*values)

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        try:
            values = self._bind(args, kwargs)
            text, out_avals, tree, template, sharding = self._specialize_sharded(values)
            in_avals = [_key_aval(k) for k in self._key(values)[2]]
        except TranspileError as e:
            other = general_hessian.instead(self, args, kwargs)
            if other is not None:
                return lower(other, *args, **kwargs)
            raise _clean(e) from None
        lowered = Lowered(text, out_avals, tree, template, self, values)
        lowered.sharding, lowered.in_avals = sharding, in_avals
        return lowered

    def __repr__(self) -> str:
        return f"<srcjax.compile of {self.fn.__qualname__}>"


Compiled._dispatch = call_route.route(Compiled)  # type: ignore[assignment]


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

    def as_text(self, debug_info: bool = False) -> str:
        """The StableHLO module; ``debug_info=True`` keeps ``loc(file:line:col)`` of the user's source."""
        if debug_info:
            return self.text
        return _LOC.sub("", self.text)

    sharding: Any = None  # (lower.shardy.ShardingPlan: a sharded program's mesh and layouts)
    in_avals: list[ShapedArray] = []

    def compile(self) -> CompiledExecutable:
        """XLA's executable; ``.as_text()`` of a sharded program is one device's partitioned HLO,
        with the collectives XLA inserted."""
        from .runtime import compile_text

        if self.sharding is not None and self.sharding.sharded:
            from .runtime.spmd import compile_sharded

            try:
                exe = compile_sharded(self.text, self.in_avals, self.out_avals, self._compiled.device, self.sharding)
            except TranspileError as e:
                raise _clean(e) from None
            return CompiledExecutable(exe, self)
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
            static_argnames: str | Sequence[str] = (), donate_argnums: int | Sequence[int] = (),
            device: str | None = None, in_shardings: Any = None, out_shardings: Any = None,
            donate_argnames: str | Sequence[str] = ()) -> Any:
    """Compile ``fn`` with srcjax: ``@srcjax.compile`` or ``srcjax.compile(fn, ...)`` (``srcjax.jit``).

    ``device`` is ``"cpu"`` (default), ``"gpu"``, or ``"numpy"`` to run the
    generated source with NumPy instead of XLA (for debugging). ``donate_argnums``/``donate_argnames``
    (JAX's semantics): a donated argument's buffer is reused for a result of its shape and dtype, and
    the donated :class:`srcjax.Array` cannot be used after the call (``srcjax/donation.py``).
    ``in_shardings``/``out_shardings`` (``srcjax.sharding.NamedSharding``s: one for every argument
    or output, or one per argument / output, None for "as given" / "as XLA chooses") compile one
    program for all devices of their mesh; without them, arguments laid out by
    ``srcjax.device_put(x, sharding)`` give theirs (``docs/many_devices.md``).
    """
    def again(f: Any) -> Any:  # (these options, another function)
        return compile(f, static_argnums=static_argnums, static_argnames=static_argnames, donate_argnums=donate_argnums,
                       device=device, in_shardings=in_shardings, out_shardings=out_shardings,
                       donate_argnames=donate_argnames)
    if fn is None:
        return again
    if (star := star_args.dispatch(fn, again)) is not None:  # (`def f(*xs)`: per number of arguments)
        return star
    if getattr(fn, "_one_axis", None) is not None and not (static_argnums or static_argnames or donate_argnums or
                                                           donate_argnames or device or in_shardings or out_shardings):
        return fn  # (a vmap whose in_axes follow what a call passes: compiled already, it picks its program per call)
    # the same function and options: the same Compiled, with its executables (reuse.py)
    options = (*map(reuse.names_key, (static_argnums, static_argnames, donate_argnums, donate_argnames)), device,
               in_shardings, out_shardings)
    return reuse.reused(fn, "jit", options, lambda: general_hessian.remade(Compiled(
        fn, static_argnums, static_argnames, device, in_shardings, out_shardings, donate_argnums, donate_argnames),
        fn, again))


def jit(fn: Callable[..., Any] | None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), donate_argnums: int | Sequence[int] = (),
        donate_argnames: str | Sequence[str] = (), device: str | None = None, in_shardings: Any = None,
        out_shardings: Any = None) -> Any:
    """JAX's spelling of :func:`compile` (``@srcjax.jit``, ``srcjax.jit(f, static_argnums=...)``).

    ``donate_argnums``/``donate_argnames``: see :func:`compile`.
    """
    return compile(fn, static_argnums=static_argnums, static_argnames=static_argnames, donate_argnums=donate_argnums,
                   donate_argnames=donate_argnames, device=device, in_shardings=in_shardings,
                   out_shardings=out_shardings)


# `srcjax.jit(f)(x)` inside a function srcjax reads: a call of f (frontend/resolve.py's transformed)
transformation(compile)
transformation(jit)

_PLAIN: PerFunction[Compiled] = PerFunction("plain")  # fn -> its shared Compiled (dies with fn)


_NUMPY_WRAPPERS: dict[Any, Callable[..., Any]] = {}


def _wrapped_numpy(fn: Any) -> Any:
    """A NumPy function srcjax supports, passed as a function (``srcjax.grad(np.sin)``, JAX users'
    ``jax.jvp(jnp.sin, ...)``): a one-line Python function calling it (``def sin(x): return
    np.sin(x)``), with source srcjax reads; anything else unchanged."""

    from .primitives import registry

    if isinstance(fn, types.FunctionType) and not (getattr(fn, "__module__", None) or "").startswith("srcjax.lax"):
        return fn  # (srcjax.lax's special functions are Python functions: their records' references)
    if isinstance(fn, types.MethodType):  # (`Model().loss`: its object bound, as a partial's argument)
        from .partials import bound_method

        fn = bound_method(fn, _wrapped_numpy)
    if isinstance(fn, functools.partial):  # (its bound arguments constants of a generated function: partials.py)
        from .partials import as_function

        try:
            return as_function(fn, _wrapped_numpy)
        except TranspileError as e:
            raise _clean(e) from None
    try:
        hit = _NUMPY_WRAPPERS.get(fn)
    except TypeError:
        return fn
    if hit is not None:
        return hit
    prim = registry.lookup(fn) if callable(fn) else None
    if prim is None or not (prim.path.startswith("np.") or set(prim.signature.parameters) <= set(prim.arrays)):
        return fn  # (srcjax.lax.lgamma's record too, its operands all arrays; not psum's, whose axis is static)
    if isinstance(fn, np.ufunc):
        params = ["x"] if fn.nin == 1 else [f"x{k + 1}" for k in range(fn.nin)]
    else:
        params = [p.name for p in prim.signature.parameters.values()
                  if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    name = prim.path.rsplit(".", 1)[-1]
    text = (f"import numpy as np\nimport srcjax\n\n\ndef {name}({', '.join(params)}):\n"
            f"    return {prim.path}({', '.join(params)})\n")
    filename = f"<srcjax.{prim.path}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    ns: dict[str, Any] = {"__name__": "srcjax_numpy_wrappers"}  # (not "srcjax.": a library module's functions
    # are run while transpiling, not transformed: grad(grad(np.tanh)) of its derivatives failed)
    exec(builtins.compile(text, filename, "exec"), ns)  # noqa: S102 - srcjax's own text
    hit = _NUMPY_WRAPPERS[fn] = ns[name]
    hit.__srcjax_numpy__ = prim.path  # (what it calls: a partial of fn calls that, partials.py)
    return hit


def _as_compiled(fn: Any) -> Compiled:
    """``fn`` itself when compiled; for a plain function one shared ``Compiled`` (read and
    normalized once, whichever transformations ask for it)."""
    if isinstance(fn, Compiled):
        inner = getattr(fn, "as_transformed", None)  # (a pmapped function transformed: its vmap)
        return _as_compiled(inner()) if inner is not None else fn
    fn = _wrapped_numpy(fn)
    try:
        hit = _PLAIN.get(fn)
    except TypeError:  # unhashable: Compiled reports what it is
        return Compiled(fn)
    if hit is None:
        hit = _PLAIN.set(fn, None, Compiled(fn))
    return hit


def numpy_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The generated source of ``fn`` executed by NumPy (in ``fn``'s globals). A function taking ``*args``
    (or a transformation of one): the program for each call's number of positional arguments."""
    if star_args.source_refusal(fn) is not None:
        return lambda *args, **kwargs: numpy_function(star_args.for_args(fn, len(args)))(*args, **kwargs)
    c = _as_compiled(fn)
    run = numpy_run.sorted_entry(numpy_run.program_function(c.program, c.fn.__qualname__))
    return general_hessian.per_call(c, run, numpy_function)  # (a hessian of a vector output: its general form)


def lower(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Lowered:
    """Specialize ``fn`` for these arguments (arrays or ShapeDtypeStructs) and lower it to StableHLO."""
    fn = star_args.for_args(fn, len(args))  # (`def f(*xs)`: its copy taking these)
    return (fn if isinstance(fn, Compiled) else _as_compiled(fn)).lower(*args, **kwargs)


def eval_shape(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Shapes and dtypes of ``fn``'s outputs, computed without running anything."""
    fn = star_args.for_args(fn, len(args))
    c = fn if isinstance(fn, Compiled) else _as_compiled(fn)
    # (asked again for the same arrays' signature: jacrev's first call asks twice, for the output's dtype and
    # its structure, and each asking specialized the whole function; a Python scalar's value may matter: not kept)
    key = None if kwargs else c._fast_key(args)
    hit = c._shapes.get(key) if key is not None and c._shapes is not None else None
    if hit is not None and reuse.unchanged(c._reads.seen):  # (nothing it read since changed: a global rebound)
        out_avals, tree, template = hit
    else:
        try:
            values = c._bind(args, kwargs)
            _, out_avals, tree, template = c._specialize(values)
        except TranspileError as e:
            other = general_hessian.instead(c, args, kwargs)
            if other is not None:
                return eval_shape(other, *args, **kwargs)
            raise _clean(e) from None
        if key is not None and all(type(k) is tuple for k in key) and not c._static_all:
            if c._shapes is None:
                c._shapes = {}
            c._shapes[key] = (out_avals, tree, template)
    it = iter(out_avals)
    leaves: list[Any] = []
    for t in template:
        if t is None:
            a = next(it)
            leaves.append(ShapeDtypeStruct(a.shape, a.dtype))
        else:
            leaves.append(t.copy() if isinstance(t, np.ndarray) else t)  # (a kept static array: the caller's own)
    return pytree.unflatten(tree, leaves)
