"""srcjax.vjp: ``(fn(*primals), vjp_fn)`` as two compiled programs, the forward half (output and
residuals) and the backward half (the adjoint sweep over them), as JAX's ``vjp``; or one program that
recomputes the forward pass where the split does not apply (:mod:`srcjax.transforms.split` writes the
halves; :mod:`srcjax.autodiff` the derivatives they come from)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import pytree, star_args, warm_cache, warm_transforms

# api's underscore names are srcjax-internal, shared with srcjax.compile on purpose (not public API)
from .api import Compiled, _as_compiled, _clean, _is_leaf, _leaf_aval

# vjp is built on autodiff's derivative machinery; these underscore names are internal to srcjax's AD
# and shared by the two modules on purpose (not public API)
from .autodiff import (  # noqa: I001
    _called_parameters,
    _Derived,
    _float_positions,
    _hashable,
    _matching,
    _refuse_required_keywords,
    _with_defaults,
    _wrap,
    derivative_function,
    jvp,
)
from .aux_output import checked_pair, inline_output, output_of
from .core import TranspileError
from .lifetimes import PerFunction
from .transforms import ad

__all__ = ["vjp"]


def vjp(fn: Callable[..., Any], *primals: Any, has_aux: bool = False,
        max_iters: int | None = None) -> Any:
    """Reverse mode: ``(fn(*primals), vjp_fn)``; ``vjp_fn(cotangent)`` gives one cotangent per primal.

    ``has_aux=True``: ``fn`` returns a pair ``(output, aux)``, and ``vjp`` returns ``(output, vjp_fn,
    aux)`` (JAX's): the derivative is of ``output``; ``aux`` (any pytree) is not differentiated. ``aux``
    comes from one more run of the compiled ``fn`` (the derivative's programs do not return it).

    Two compiled programs, as JAX's ``vjp``: ``vjp`` runs the forward half, which returns the
    output and the residuals (the values the adjoint sweep reads), and ``vjp_fn`` runs the
    backward half on them; residuals stay on the device in between, and ``vjp_fn`` may be
    called again with other cotangents. ``srcjax.source(vjp_fn)`` shows both halves
    (``f_vjp_fwd``, ``f_vjp_bwd``; see :mod:`srcjax.transforms.split`).

    Falls back to one program that recomputes the forward pass before the adjoint sweep
    (``vjp_fn.recomputes`` is then True) where the split does not apply: a function calling a
    function-valued parameter, fewer primals than parameters, ``device="numpy"``, or when the
    backward half cannot take what the forward half saved (a value saved in a loop that the
    adjoint needs as a static Python int: one program can re-specialize the loop unrolled,
    two cannot). ``max_iters`` as in :func:`grad`.
    """
    fn = star_args.for_args(fn, len(primals))  # (`def f(*xs)`: its copy taking these)
    _refuse_required_keywords(fn, "srcjax.vjp")
    if has_aux:
        aux = checked_pair(fn, primals, {}, "srcjax.vjp")[1]
        out, vjp_fn = vjp(output_of(fn), *primals, max_iters=max_iters)
        return out, vjp_fn, aux
    try:
        return _vjp(fn, primals, max_iters)
    except ad.DifferentiationError:  # reverse over a derivative srcjax cannot write: forward mode, as jacrev
        if getattr(_as_compiled(fn).fn, "__srcjax_derived__", None) is None or \
                any(pytree.is_tree(p) or not np.issubdtype(np.result_type(p), np.floating) for p in primals):
            raise
        return _forward_vjp(fn, primals)


# srcjax.vjp(f, x) inside compiled code: f's output and a nested function calling the generated vjp of f
# (jax_spellings.flat_vjp)
# (has_aux: the vjp of the first of f's literal pair)
vjp.__srcjax_inline_vjp__ = lambda fn, n, has_aux=False, max_iters=None: _wrap(  # type: ignore[attr-defined]
    inline_output(fn, "srcjax.vjp") if has_aux else fn, "vjp", tuple(range(n)), False, max_iters)


def _forward_vjp(fn: Callable[..., Any], primals: tuple[Any, ...]) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """``vjp`` of a derivative whose reverse mode srcjax cannot write (helpers handing saved values through
    the tape: ``vjp(hessian(f))``): forward mode, one JVP per element of each primal, dotted with the
    cotangent (one compiled program, as jacfwd's loop form)."""
    out = _as_compiled(fn)(*primals)
    zeros = [np.zeros(np.shape(p), dtype=np.result_type(p)) for p in primals]

    def vjp_fn(ct: Any) -> tuple[Any, ...]:
        g = np.asarray(_cotangent(out, ct))
        bars = []
        for i, p in enumerate(primals):
            bar = np.zeros(np.size(p), dtype=np.result_type(p))
            for j in range(np.size(p)):
                e = np.zeros(np.size(p), dtype=np.result_type(p))
                e[j] = 1.0
                tangents = (*zeros[:i], np.reshape(e, np.shape(p)), *zeros[i + 1:])
                bar[j] = np.sum(g * np.asarray(jvp(fn, primals, tangents)[1]))
            bars.append(np.reshape(bar, np.shape(p)))
        return tuple(bars)
    return out, vjp_fn


def _vjp(fn: Callable[..., Any], primals: tuple[Any, ...],
         max_iters: int | None) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    diff = _float_positions(primals)
    if len(diff) < len(primals):  # integer arguments (a count, labels): their cotangent is None, as JAX's float0
        out = _as_compiled(fn)(*primals)
        f = _wrap(fn, "vjp", diff, False, max_iters)
        return out, _RecomputingVJP(f, out, _with_defaults(fn, primals), positions=(diff, len(primals)))
    halves = _split_vjp(fn, max_iters, len(primals))
    failure: TranspileError | None = None
    if halves is not None and halves.recompute is None:
        try:
            return halves.forward(primals)
        except TranspileError as e:
            failure = e
    out = _as_compiled(fn)(*primals)
    f = _wrap(fn, "vjp", tuple(range(len(primals))), False, max_iters)
    full = _with_defaults(fn, primals)  # the generated vjp takes every parameter, then the cotangent
    return out, _RecomputingVJP(f, out, full, halves if failure is not None else None, failure)


def _cotangent(out: Any, ct: Any) -> Any:
    """``ct`` checked against the output: a Python number for a floating-point array output takes
    its dtype (the cotangent of a float32 output is float32, as in JAX, whatever ``1.0`` is)."""
    return _matching("vjp: the cotangent", "the output", out, ct)


class _RecomputingVJP:
    """``vjp_fn`` as one program: the forward pass again, then the adjoint sweep."""

    recomputes = True

    def __init__(self, f: Compiled, out: Any, primals: tuple[Any, ...], halves: _SplitVJP | None = None,
                 failure: TranspileError | None = None, kwargs: dict[str, Any] | None = None,
                 positions: tuple[tuple[int, ...], int] | None = None) -> None:
        self._f, self._out, self._primals, self._halves, self._failure = f, out, primals, halves, failure
        self._kwargs = kwargs or {}
        self._positions = positions  # (the differentiated primals, how many): None in the others

    def __call__(self, ct: Any) -> tuple[Any, ...]:
        try:
            ct = _cotangent(self._out, ct)
        except TranspileError as e:
            raise _clean(e) from None
        _, bars = self._f(*self._primals, ct, **self._kwargs)
        if self._halves is not None and self._halves.recompute is None:  # the split failed where one program works
            self._halves.recompute = f"the forward half: {type(self._failure).__name__}: {self._failure}"
        if self._positions is not None:
            diff, n = self._positions
            got = dict(zip(diff, bars if len(diff) > 1 or isinstance(bars, tuple) else (bars,)))
            return tuple(got.get(i) for i in range(n))
        return tuple(bars)

    def __srcjax_source__(self, form: str = "readable") -> str:
        from .printing import source

        return source(self._f, form=form)


class _SplitHalf(_Derived):
    """One half of a split VJP, in the level-2 cache under its own identity (``warm_transforms.split_identity``);
    lazy (``fn`` a stand-in of its signature) in a process that found the halves written before."""

    _split: _SplitVJP
    _half: str  # "fwd" or "bwd"

    def _materialize(self) -> None:
        fwd, layout = self._split.write()
        if layout != self._split.layout:
            raise TranspileError("srcjax.vjp: the function's split VJP changed since its forward half ran")
        self._install(fwd if self._half == "fwd" else fwd.__srcjax_split__[0])

    def _warm_identity(self) -> list[Any] | None:
        return warm_transforms.split_identity(self._half, self._split.max_iters, self._split.fn, self.static)

    def _warm_reads(self) -> warm_cache.Reads:
        return warm_transforms.merged(self._reads, self._split.written, _as_compiled(self._split.fn)._warm_reads(),
                                      *(() if self._lazy else (self.program.reads,)))


class _SplitVJP:
    """The two compiled halves of ``fn``'s VJP (each caches its executables per argument signature); written
    now, or (``layout``, from the level-2 cache's marker) when a call's program is not in that cache."""

    def __init__(self, fn: Callable[..., Any], c: Compiled, max_iters: int | None,
                 layout: list[Any] | None = None) -> None:
        self.fn, self.max_iters, self.n = fn, max_iters, len(c.params)
        self.written, self.layout = warm_cache.Reads(), layout  # (what writing the halves read)
        self._fwd: tuple[Any, list[Any] | None] | None = None
        if layout is None:
            bwd, reads, residuals = (fwd := self.write()[0]).__srcjax_split__
            fns, self.reads, self.nres = [fwd, bwd], tuple(reads), len(residuals)
        else:
            fns = [warm_transforms.stand_in(layout[0]), warm_transforms.stand_in(layout[1])]
            self.reads, self.nres = tuple(layout[2]), layout[3]
        statics = tuple(i for i, p in enumerate(c.params) if p in c.static)
        self.fwd = _SplitHalf(fns[0], tuple(range(self.n)), "srcjax.vjp", static_argnums=statics, device=c.device)
        self.fwd._primal = fn  # the same arguments: the function's own errors, at its line
        self.bwd = _SplitHalf(fns[1], (), "srcjax.vjp", static_argnums=tuple(
            k for k, i in enumerate(self.reads) if i in statics), device=c.device)
        for h, half in ((self.fwd, "fwd"), (self.bwd, "bwd")):
            h._split, h._half, h._lazy = self, half, layout is not None
        self.recompute: str | None = None  # why this function's VJP recomputes the forward pass instead

    def write(self) -> tuple[Any, list[Any] | None]:
        """The forward half's function (the backward half's hangs on it), written once, and the halves' layout."""
        if self._fwd is None:
            with warm_cache.recording(self.written):
                fwd = derivative_function(self.fn, "vjp_split", tuple(range(self.n)), max_iters=self.max_iters)
            bwd, reads, residuals = fwd.__srcjax_split__  # type: ignore[attr-defined]
            self._fwd = fwd, warm_transforms.split_layout(fwd, bwd, reads, len(residuals))
        return self._fwd

    def forward(self, primals: tuple[Any, ...]) -> tuple[Any, _SplitVJPFunction]:
        if self.reads:  # arguments the backward half takes again: on the device once, for both halves
            primals = tuple(_on_device(p, self.fwd.device) if i in self.reads else p for i, p in enumerate(primals))
        out, res = self.fwd(*primals)
        saved = [primals[i] for i in self.reads]
        saved += [_static_leaves(r) for r in res]
        return out, _SplitVJPFunction(self, out, primals, saved)

    def source(self, form: str = "readable") -> str:
        from .printing import source

        imports: dict[str, None] = {}
        bodies = []
        for f in (self.fwd, self.bwd):
            lines = source(f, form=form).splitlines()
            k = next(i for i, ln in enumerate(lines) if ln and not ln.startswith(("import ", "from ")))
            imports.update(dict.fromkeys(ln for ln in lines[:k] if ln))
            bodies.append("\n".join(lines[k:]).strip("\n"))
        return "\n".join(imports) + "\n\n\n" + "\n\n\n".join(bodies) + "\n"


class _SplitVJPFunction:
    """``vjp_fn`` of a split VJP: the backward program on the saved residuals and a cotangent."""

    recomputes = False

    def __init__(self, halves: _SplitVJP, out: Any, primals: tuple[Any, ...], saved: list[Any]) -> None:
        self._halves, self._out, self._primals, self._saved = halves, out, primals, saved

    def __call__(self, ct: Any) -> tuple[Any, ...]:
        h = self._halves
        try:
            ct = _cotangent(self._out, ct)
        except TranspileError as e:
            raise _clean(e) from None
        if h.recompute is None:
            try:
                return tuple(h.bwd(*self._saved, ct))
            except TranspileError as e:
                failure = e
        f = _wrap(h.fn, "vjp", tuple(range(len(self._primals))), False, h.max_iters)
        _, bars = f(*self._primals, ct)
        if h.recompute is None:  # the backward half failed where one program works: recompute from now on
            h.recompute = f"the backward half: {type(failure).__name__}: {failure}"
        return tuple(bars)

    def __srcjax_source__(self, form: str = "readable") -> str:
        h = self._halves
        if h.recompute is None:
            return h.source(form)
        from .printing import source

        return source(_wrap(h.fn, "vjp", tuple(range(len(self._primals))), False, h.max_iters), form=form)


_SPLITS: PerFunction[_SplitVJP | None] = PerFunction("split")


def _split_vjp(fn: Callable[..., Any], max_iters: int | None, n: int) -> _SplitVJP | None:
    """The split VJP of ``fn`` with ``n`` primals (cached), or None where it does not apply."""
    try:
        key = (max_iters, n)
        hit = _SPLITS.get(fn, key, False)
    except TypeError:  # an unhashable callable
        return None
    if hit is not False:
        return hit  # type: ignore[return-value]
    halves = None
    try:
        c = _as_compiled(fn)
        # (written before from these sources: made lazily)
        if (layout := warm_transforms.marked_split(marker := warm_transforms.split_marker(max_iters, n, fn, c.device))):
            halves = _SplitVJP(fn, c, max_iters, layout)
        elif c.device != "numpy" and n == len(c.params) and c._simple and not _called_parameters(c):
            halves = _SplitVJP(fn, c, max_iters)
            warm_transforms.mark_split(marker, halves.write()[1], halves.written, c._warm_reads())
    except TranspileError:  # one program reports it (or manages)
        halves = None
    _SPLITS.set(fn, key, halves)
    return halves


def _on_device(v: Any, device: str | None) -> Any:
    """``v`` with its NumPy array leaves uploaded (once, for both halves of a VJP)."""
    from .runtime import device_put, get_backend, wrap

    if type(v) is np.ndarray:
        a = _leaf_aval(v)
        assert a is not None
        return wrap(device_put(v, a, get_backend(device)), a)
    if not pytree.is_tree(v):
        return v
    leaves, tree = pytree.flatten(v, is_leaf=_is_leaf)
    return pytree.unflatten(tree, [_on_device(x, device) if type(x) is np.ndarray else x for x in leaves])


def _static_leaves(r: Any) -> Any:
    """A residual with its non-array leaves static: the backward half sees the same Python values
    (an int on the tape, a ``range``) as the forward half had, not run-time numbers."""
    from .api import Static

    if _is_leaf(r):
        return r
    leaves, tree = pytree.flatten(r, is_leaf=_is_leaf, nodes=True)
    return pytree.unflatten(tree, [x if _is_leaf(x) or isinstance(x, (str, Static)) or not _hashable(Static(x))
                                   else Static(x) for x in leaves])
