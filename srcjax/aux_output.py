"""``has_aux`` for vjp, jvp, jacfwd and jacrev (JAX's semantics): ``fn`` returns a pair ``(output, aux)``;
the derivative is of ``output`` and ``aux`` (any pytree) comes back as it is, not differentiated.

The derivative is taken of a generated caller of ``fn`` keeping the first of the pair
(``def f_output(x, y): return f(x, y)[0]``, text srcjax registers and reads like any function), so
every path of the plain transformation applies; ``aux`` is computed by the compiled ``fn`` (one more
run of its forward pass). A jacfwd/jacrev with ``has_aux`` is a generated function too
(``return jac(x, y), f(x, y)[1]``), compiled, so it can be called under jit and vmap.
"""

from __future__ import annotations

import inspect
import itertools
import linecache
from collections.abc import Callable
from typing import Any

import libcst as cst

from .api import _as_compiled, _clean  # (srcjax's compiled-call entry and its error cleaner: used as vjp's)
from .core import TranspileError
from .frontend.names import Visitor
from .frontend.read import read_function
from .frontend.resolve import local_names
from .grad_output import return_span
from .lifetimes import PerFunction
from .transforms.anf import DifferentiationError
from .transforms.custom_rules import forwarding_signature

__all__ = ["AuxJacobian", "aux_pair", "checked_pair", "inline_output", "literal_pairs", "not_literal_pair", "output_of"]

_COUNTER = itertools.count()
_OUTPUTS: PerFunction[Callable[..., Any]] = PerFunction("aux output")


def aux_pair(fn: Callable[..., Any], out: Any, what: str) -> tuple[Any, Any]:
    """``out`` (``fn``'s result) as ``(output, aux)``; a located error where it is not a pair."""
    if isinstance(out, (tuple, list)) and len(out) == 2:
        return out[0], out[1]
    name = getattr(fn, "__name__", "the function")
    raise _clean(DifferentiationError(
        f"{what} with has_aux=True needs {name} to return a pair (output, aux), but it returns "
        f"{type(out).__name__}" + (f" of length {len(out)}" if isinstance(out, (tuple, list)) else ""),
        span=return_span(fn, False), hint="return output, aux (or drop has_aux=True)"))


def checked_pair(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> tuple[Any, Any]:
    """``fn(*args, **kwargs)`` run compiled, as ``(output, aux)``."""
    return aux_pair(fn, _as_compiled(fn)(*args, **kwargs), what)


def _signature(fn: Callable[..., Any], ns: dict[str, Any]) -> tuple[str, str]:
    """(``fn``'s parameter list without annotations, defaults as names in ``ns``; the call passing them on)."""
    sig = inspect.signature(_as_compiled(fn).fn)
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values()):
        raise TranspileError(f"has_aux: {getattr(fn, '__name__', 'the function')} takes *args or **kwargs",
                             hint="list the parameters explicitly")
    return forwarding_signature(sig, ns)


def _define(name: str, text: str, ns: dict[str, Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    filename = f"<srcjax.has_aux {name} #{next(_COUNTER)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    ns["__name__"] = getattr(fn, "__module__", None) or __name__
    exec(compile(text, filename, "exec"), ns)  # noqa: S102 - srcjax's own text
    return ns[name]  # type: ignore[no-any-return]


def output_of(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``def f_output(...): return f(...)[0]``: the first of ``fn``'s pair, a function srcjax reads."""
    hit = _OUTPUTS.get(fn)
    if hit is not None:
        return hit
    # (fn's globals too: reverse mode writes fn's body out in f_output's, where it reads the same names)
    ns: dict[str, Any] = {**getattr(_as_compiled(fn).fn, "__globals__", {}), "_aux_function": fn}
    head, call = _signature(fn, ns)
    name = f"{getattr(fn, '__name__', 'f')}_output"
    out = _define(name, f"def {name}{head}:\n    return _aux_function({call})[0]\n", ns, fn)
    out.__srcjax_aux_output__ = True  # type: ignore[attr-defined]  # (transforms/inline_calls.py reads it)
    return _OUTPUTS.set(fn, None, out)


def literal_pairs(fn: Callable[..., Any], depth: int = 4) -> bool:
    """Whether every ``return`` of ``fn`` (not a nested function's) returns a literal pair ``out, aux``, or
    the result of a call of a function that does (``lambda v: loss(v, x)``, a global or closure name, up
    to ``depth`` calls down): its output is then a pair whatever its arguments, with no run to check it."""
    try:
        src = read_function(_as_compiled(fn).fn)
    except TranspileError:
        return False
    returns: list[cst.Return] = []

    class V(Visitor):
        def visit_Return(self, n: cst.Return) -> None:
            returns.append(n)

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is src.fdef

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

    V().walk(src.fdef)

    def pair(r: cst.Return) -> bool:
        if isinstance(r.value, (cst.Tuple, cst.List)):
            return len(r.value.elements) == 2 and not any(isinstance(e, cst.StarredElement) for e in r.value.elements)
        if depth > 0 and isinstance(r.value, cst.Call) and isinstance(r.value.func, cst.Name):
            name = r.value.func.value
            callee = src.closure.get(name, src.globals.get(name)) if name not in local_names(src.fdef) else None
            return callee is not None and callable(callee) and literal_pairs(callee, depth - 1)
        return False

    return bool(returns) and all(pair(r) for r in returns)


def not_literal_pair(fn: Callable[..., Any], what: str) -> TranspileError:
    """The error for ``what`` with ``has_aux`` in compiled code (jit, vmap, a caller) of an ``fn`` that does
    not return a literal pair in every ``return``: the pair cannot be checked there."""
    name = getattr(fn, "__name__", "the function")
    return _clean(DifferentiationError(
        f"{what} with has_aux=True inside jit/vmap or compiled code needs {name} to return a literal pair "
        "(return output, aux) in every return", span=return_span(fn, False),
        hint=f"write return output, aux, or call {what} outside compiled code"))


def inline_output(fn: Callable[..., Any], what: str) -> Callable[..., Any]:
    """:func:`output_of` ``fn`` for ``what`` with ``has_aux`` inside compiled code (jax_spellings.flat_jvp,
    flat_vjp), where every ``return`` of ``fn`` is a literal pair; else a located error."""
    if not literal_pairs(fn):
        raise not_literal_pair(fn, what)
    return output_of(fn)


class AuxJacobian:
    """A jacfwd/jacrev with ``has_aux``: ``(jacobian, aux)``. Called, :func:`checked_pair` checks ``fn``'s
    output is a pair (once per argument signature), then the compiled ``def f_jacrev(...): return
    jac(...), f(...)[1]`` runs. Read by srcjax (under vmap, jit, called in compiled code) it is that
    function, where ``fn`` returns a literal pair in every ``return`` (:func:`literal_pairs`); else a
    located error (the pair cannot be checked there: an array's ``[1]`` would be read as aux)."""

    def __init__(self, fn: Callable[..., Any], jac: Callable[..., Any], kind: str) -> None:
        from .api import jit  # (api defines jit; late, as jacobian's own import of it)
        ns: dict[str, Any] = {"_aux_function": fn, "_jacobian": jac}
        head, call = _signature(fn, ns)
        name = f"{getattr(fn, '__name__', 'f')}_{kind}"
        self._fn, self._kind = fn, kind
        self._checked: set[Any] = set()
        self._g = _define(name, f"def {name}{head}:\n    return _jacobian({call}), _aux_function({call})[1]\n",
                          ns, fn)
        # (a derivative srcjax wrote: resolve.transformed calls it where compiled code applies the transformation)
        self._g.__srcjax_derived__ = (f"{kind}_aux", fn, ())  # type: ignore[attr-defined]
        self._compiled = jit(self._g)
        self._literal = literal_pairs(fn)
        self.__name__ = name

    @property
    def __srcjax_fn__(self) -> Callable[..., Any]:  # (what srcjax reads: frontend.resolve.unwrap)
        if not self._literal:
            raise not_literal_pair(self._fn, f"srcjax.{self._kind}")
        return self._g

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self._literal:
            key = None if kwargs else _as_compiled(self._fn)._fast_key(args)
            if key is None or key not in self._checked:
                checked_pair(self._fn, args, kwargs, f"srcjax.{self._kind}")
                if key is not None:
                    self._checked.add(key)
        return self._compiled(*args, **kwargs)
