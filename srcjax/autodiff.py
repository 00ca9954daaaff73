"""grad, value_and_grad, jvp, vjp, jacfwd, jacrev, hessian: transformations that write source.

Each transformation reads the (normalized) program of ``fn``, writes the
derivative as Python source (:mod:`srcjax.transforms.ad`), executes that
source into a real Python function (its text registered with ``linecache``
so ``inspect`` — and therefore srcjax itself — can read it again), and
returns it compiled. ``srcjax.source(srcjax.grad(f))`` shows it;
``srcjax.grad(srcjax.grad(f))`` transforms it again.
"""

from __future__ import annotations

import itertools
import linecache
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import adjoint
from .api import Compiled, _as_compiled, _clean, _leaf_aval
from .core import DTypeError, TranspileError
from .custom import custom_vjp, owner_of
from .frontend.program import Program
from .transforms import ad, custom_rules
from .transforms.simplify import simplify_source

__all__ = ["grad", "value_and_grad", "jvp", "vjp", "jacfwd", "jacrev", "hessian", "derivative_function"]

_COUNTER = itertools.count()
_DERIVED: dict[tuple[Any, ...], Callable[..., Any]] = {}


def _argnums(argnums: int | Sequence[int], n: int) -> tuple[tuple[int, ...], bool]:
    single = isinstance(argnums, int)
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for a in nums:
        if not -n <= a < n:
            raise DTypeError(f"argnums {a} is out of range for a function with {n} parameters")
    return tuple(a % n for a in nums), single


def derivative_function(fn: Callable[..., Any], kind: str, argnums: int | Sequence[int] = 0,
                        has_aux: bool = False, max_iters: int | None = None) -> Callable[..., Any]:
    """The plain Python function srcjax writes for ``kind`` in grad/value_and_grad/vjp/jvp.

    ``max_iters`` bounds reverse mode through ``while`` loops on data (see
    :mod:`srcjax.transforms.bounded`); forward mode needs no bound.
    """
    c = _as_compiled(fn)
    base = c.fn
    prog = c.program
    nums, single = _argnums(argnums, len(c.params))
    if kind == "jvp":
        max_iters = None
    elif max_iters is not None and (isinstance(max_iters, bool) or not isinstance(max_iters, int) or max_iters < 1):
        raise DTypeError(f"max_iters must be a positive int, not {max_iters!r}")
    key = (base, kind, nums, single, has_aux, max_iters)
    hit = _DERIVED.get(key)
    if hit is not None:
        return hit
    entry_name = prog.entry.name
    if owner_of(base) is not None:  # a custom_vjp/custom_jvp itself: differentiate a caller, so its rule applies
        prog = _custom_caller(base)
    custom_rules.add_rules(prog)  # before naming: a rule may be called f_jvp too
    name = ad.Names(prog.functions).fresh(f"{entry_name}_{kind}")
    origins: dict[str, str] = {}  # generated helper -> the program function it derives from
    if kind in ("grad", "value_and_grad") and getattr(base, "__srcjax_derived__", None) is not None and \
            not any(isinstance(owner_of(nf.fn), custom_vjp) for nf in prog.functions.values()):
        # Differentiating generated derivative code (grad of grad): its inputs must be scalars for a
        # scalar output, so forward mode over it gives the same numbers without a tape of tapes.
        # (Not through a custom_vjp, which has no forward mode: reverse over reverse, as JAX.)
        text = _forward_grad_source(base, name, nums, single, kind == "value_and_grad", has_aux)
    elif kind in ("grad", "value_and_grad"):
        try:
            text = ad.grad_source(prog, nums, name, value=kind == "value_and_grad", has_aux=has_aux,
                                  single=single, origins=origins, max_iters=max_iters)
        except ad.DifferentiationError as e:
            if getattr(base, "__srcjax_derived__", None) is not None:  # reverse over reverse: custom_vjp
                e.hint = ("a custom_vjp has no forward mode, so grad of grad through it runs reverse over "
                          "reverse, which does not go through loops yet: unroll the loop, or give the "
                          "function a srcjax.custom_jvp rule")
            raise
    elif kind == "vjp":
        text = ad.vjp_source(prog, nums, name, origins, max_iters)
    elif kind == "jvp":
        text = ad.jvp_source(prog, nums, name, origins)
    else:  # pragma: no cover
        raise ValueError(kind)
    header = "import numpy as np\nfrom srcjax.adjoint import " + ", ".join(ad.ADJOINT_IMPORTS) + "\n\n\n"
    module_text = simplify_source(header + text, set(ad.ADJOINT_IMPORTS))
    filename = f"<srcjax.{kind} of {base.__qualname__} #{next(_COUNTER)}>"
    linecache.cache[filename] = (len(module_text), None, module_text.splitlines(True), filename)
    try:
        code = compile(module_text, filename, "exec")
    except SyntaxError as e:  # pragma: no cover - a bug in the generator
        raise TranspileError(f"internal error: generated {kind} source does not parse: {e}\n{module_text}") from e
    functions = _exec_derived(code, name, prog, origins)
    custom_rules.mark_transposes(prog, functions)
    derived: Any = functions[name]
    derived.__srcjax_derived__ = (kind, base, nums)
    _DERIVED[key] = derived
    return derived


def _exec_derived(code: Any, name: str, prog: Program, origins: dict[str, str]) -> dict[str, Callable[..., Any]]:
    """Execute the derivative module; each generated function in the namespace of the function it derives
    from (its module's globals and its closure: what its body reads), all of them linked by name."""
    functions = {nf.name: nf.fn for nf in prog.functions.values()}
    spaces: dict[tuple[Any, ...], dict[str, Any]] = {}
    chosen: dict[str, Callable[..., Any]] = {}
    for generated in [name, *origins]:
        nf = prog.functions.get(origins.get(generated, prog.entry.name), prog.entry)
        src = nf.source
        key = (id(src.globals), tuple(sorted((k, id(v)) for k, v in src.closure.items())))
        ns = spaces.get(key)
        if ns is None:
            ns = spaces[key] = dict(src.globals)
            ns.update(src.closure)
            ns.update(functions)
            ns.update(np=np, math=math, srcjax=sys.modules["srcjax"])
            ns.update(_FORWARD_NS)
            ns["__name__"] = getattr(nf.fn, "__module__", None) or prog.entry_fn.__module__
            exec(code, ns)
        chosen[generated] = ns[generated]
    for ns in spaces.values():
        ns.update(chosen)
    return chosen


_CALLERS: dict[Callable[..., Any], Program] = {}


def _custom_caller(fn: Callable[..., Any]) -> Program:
    hit = _CALLERS.get(fn)
    if hit is None:
        hit = _CALLERS[fn] = Program(custom_rules.trampoline(fn))
    return hit


def _forward_grad_source(base: Callable[..., Any], name: str, nums: tuple[int, ...], single: bool,
                         value: bool, has_aux: bool) -> str:
    if has_aux:
        raise ad.DifferentiationError("has_aux is not supported when differentiating a derivative")
    import inspect as _inspect

    params = list(_inspect.signature(base).parameters)
    lines = [f"def {name}({', '.join(params)}):"]
    dots = []
    for k in nums:
        jv = derivative_function(base, "jvp", (k,))
        p = params[k]
        lines.append(f"    assert np.ndim({p}) == 0, 'grad of a derivative needs scalar inputs: use jacfwd or hessian'")
        lines.append(f"    out, {p}_dot = {jv.__name__}({', '.join(params)}, ones_like({p}))")
        dots.append(f"{p}_dot")
        _FORWARD_NS[jv.__name__] = jv
    g = dots[0] if single else "(" + ", ".join(dots) + ",)"
    lines.append(f"    return {'out, ' if value else ''}{g}")
    return "\n".join(lines) + "\n"


_FORWARD_NS: dict[str, Callable[..., Any]] = {}


class _Derived(Compiled):
    """A compiled derivative; checks that differentiated arguments are floating point."""

    def __init__(self, fn: Callable[..., Any], check: tuple[int, ...], what: str, **kw: Any) -> None:
        super().__init__(fn, **kw)
        self._check = check
        self._what = what

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        for i in self._check:
            if i < len(args):
                a = _leaf_aval(args[i])
                if a is not None and not (a.dtype.kind == "f" or a.dtype.name == "bfloat16"):
                    raise _clean(DTypeError(
                        f"{self._what} requires floating-point inputs, but argument {i} has dtype {a.dtype.name}",
                        hint="pass x.astype(np.float32) (or float64), or differentiate with respect to another "
                             "argument via argnums"))
        return super().__call__(*args, **kwargs)


_WRAPPED: dict[tuple[Any, ...], Compiled] = {}


def _wrap(fn: Callable[..., Any], kind: str, argnums: int | Sequence[int], has_aux: bool,
          max_iters: int | None = None) -> Compiled:
    """The compiled derivative; cached, so repeated jvp/vjp calls reuse their executables."""
    key = (fn, kind, argnums if isinstance(argnums, int) else tuple(argnums), has_aux, max_iters)
    hit = _WRAPPED.get(key)
    if hit is None:
        hit = _WRAPPED[key] = _wrap_new(fn, kind, argnums, has_aux, max_iters)
    return hit


def _wrap_new(fn: Callable[..., Any], kind: str, argnums: int | Sequence[int], has_aux: bool,
              max_iters: int | None) -> Compiled:
    try:
        derived = derivative_function(fn, kind, argnums, has_aux, max_iters)
    except TranspileError as e:
        raise _clean(e) from None
    c = _as_compiled(fn)
    nums, _ = _argnums(argnums, len(c.params))
    return _Derived(derived, nums, f"srcjax.{kind}", static_argnums=tuple(
        i for i, p in enumerate(c.params) if p in c.static), device=c.device)


def grad(fn: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False, *,
         max_iters: int | None = None) -> Compiled:
    """The gradient of a scalar function, as a compiled function with the same arguments.

    ``max_iters``: an upper bound on the iterations of ``while`` loops on array
    data (needed to differentiate them in reverse mode, unless the test counts:
    ``while it < 100 and ...``). A loop still running after that many
    iterations stops there.
    """
    return _wrap(fn, "grad", argnums, has_aux, max_iters)


def value_and_grad(fn: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False, *,
                   max_iters: int | None = None) -> Compiled:
    """``(value, gradient)`` (``((value, aux), gradient)`` with ``has_aux``); ``max_iters`` as in :func:`grad`."""
    return _wrap(fn, "value_and_grad", argnums, has_aux, max_iters)


def _float_positions(values: Sequence[Any]) -> tuple[int, ...]:
    out = []
    for i, v in enumerate(values):
        a = _leaf_aval(v)
        if a is not None and (a.dtype.kind == "f" or a.dtype.name == "bfloat16"):
            out.append(i)
    return tuple(out)


def jvp(fn: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """Forward mode: ``(fn(*primals), directional derivative along tangents)``."""
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise _clean(DTypeError(f"jvp: {len(primals)} primals but {len(tangents)} tangents"))
    nums = _float_positions(primals)
    for i in nums:
        pa, ta = _leaf_aval(primals[i]), _leaf_aval(tangents[i])
        if pa is not None and ta is not None and pa.shape != ta.shape:
            raise _clean(DTypeError(f"jvp: tangent {i} has shape {ta.shape} but its primal has shape {pa.shape}"))
    if not nums:
        out = _as_compiled(fn)(*primals)
        return out, adjoint.zeros_like(np.asarray(out))
    f = _wrap(fn, "jvp", nums, False)
    return f(*primals, *[tangents[i] for i in nums])  # type: ignore[no-any-return]


def vjp(fn: Callable[..., Any], *primals: Any,
        max_iters: int | None = None) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """Reverse mode: ``(fn(*primals), vjp_fn)``; ``vjp_fn(cotangent)`` gives one cotangent per primal.

    The cotangent function re-runs the forward pass inside one compiled program
    (no residuals cross the Python boundary). ``max_iters`` as in :func:`grad`.
    """
    nums = tuple(range(len(primals)))
    out = _as_compiled(fn)(*primals)
    f = _wrap(fn, "vjp", nums, False, max_iters)

    def vjp_fn(ct: Any) -> tuple[Any, ...]:
        _, bars = f(*primals, ct)
        return tuple(bars)

    return out, vjp_fn


def _basis(shape: tuple[int, ...], dtype: Any) -> Any:
    n = math.prod(shape)
    for k in range(n):
        e = np.zeros(n, dtype=dtype)
        e[k] = 1
        yield e.reshape(shape)


def jacfwd(fn: Callable[..., Any], argnums: int = 0) -> Callable[..., Any]:
    """Jacobian by forward mode: shape ``out.shape + x.shape`` (one JVP per input element)."""
    def jac(*args: Any) -> np.ndarray:
        x = np.asarray(args[argnums])
        cols = []
        for e in _basis(x.shape, x.dtype if x.dtype.kind == "f" else np.float64):
            tangents = [np.zeros_like(np.asarray(a), dtype=e.dtype) if i != argnums else e
                        for i, a in enumerate(args)]
            _, t = jvp(fn, args, tangents)
            cols.append(np.asarray(t))
        out_shape = cols[0].shape if cols else ()
        return np.stack(cols, axis=-1).reshape(out_shape + x.shape) if cols else np.zeros(x.shape)

    return jac


def jacrev(fn: Callable[..., Any], argnums: int = 0, *, max_iters: int | None = None) -> Callable[..., Any]:
    """Jacobian by reverse mode: shape ``out.shape + x.shape`` (one VJP per output element)."""
    def jac(*args: Any) -> np.ndarray:
        out, f = vjp(fn, *args, max_iters=max_iters)
        o = np.asarray(out)
        x = np.asarray(args[argnums])
        rows = [np.asarray(f(e)[argnums]) for e in _basis(o.shape, o.dtype)]
        return np.stack(rows).reshape(o.shape + x.shape) if rows else np.zeros(o.shape + x.shape)

    return jac


def hessian(fn: Callable[..., Any], argnums: int = 0, *, max_iters: int | None = None) -> Callable[..., Any]:
    """Hessian of a scalar function: forward mode over the generated gradient source."""
    return jacfwd(grad(fn, argnums, max_iters=max_iters), argnums)
