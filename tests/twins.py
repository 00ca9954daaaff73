"""The jax oracle of a test program: the program's own source, run again with ``np`` bound to jax.numpy.

Test programs are plain NumPy functions; their jax twin is the same text executed in a namespace where
``np`` is ``jax.numpy`` and ``srcjax.lax`` / ``srcjax.custom_jvp`` / ``srcjax.custom_vjp`` / ``srcjax.vmap``
are jax's, so a test never writes a program twice (once with ``np``, once with ``jnp``).
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Iterable
from typing import Any

import jax
import jax.numpy as jnp

SRCJAX_AS_JAX = types.SimpleNamespace(lax=jax.lax, custom_jvp=jax.custom_jvp, custom_vjp=jax.custom_vjp,
                                      vmap=jax.vmap, grad=jax.grad, jacfwd=jax.jacfwd, jacrev=jax.jacrev)


def module_functions(module: types.ModuleType) -> list[Callable[..., Any]]:
    """The functions defined (not imported) in ``module``, in definition order."""
    return [obj for obj in vars(module).values() if inspect.isfunction(obj) and obj.__module__ == module.__name__]


def jax_twin(fn: Callable[..., Any], *, helpers: Iterable[Callable[..., Any]] = (), np_module: Any = None,
             **names: Any) -> Callable[..., Any]:
    """``fn``'s source (after ``helpers``' sources, which it may call) executed with ``np`` as jax.numpy.

    ``names`` adds or replaces globals of the twin (module constants, a hand-written twin of a helper);
    ``np_module`` replaces jax.numpy itself (e.g. a wrapper whose reductions also take lists)."""
    ns: dict[str, Any] = {"np": jnp if np_module is None else np_module, "srcjax": SRCJAX_AS_JAX, **names}
    for f in [*helpers, fn]:
        if f is fn:
            ns.update(names)  # hand-written twins given by name win over helpers' sources
        f = getattr(f, "fun", f)  # a srcjax.custom_jvp / custom_vjp record: its primal function
        exec(compile(inspect.getsource(f), inspect.getsourcefile(f) or "<twin>", "exec"), ns)
    return ns[getattr(fn, "fun", fn).__name__]


def jitted(fn: Callable[..., Any], **jit_options: Any) -> Callable[..., Any]:
    """``fn`` (jax's transformation of a twin: the oracle) run under ``jax.jit``: one XLA compilation per
    argument signature instead of one per primitive that jax's eager mode dispatches (the eager oracle was
    most of the suite's time: a list's Hessian took 16 s eagerly, 1.5 s jitted). Where jit cannot trace
    ``fn`` (Python control flow on values, an argument used as a shape, an output that is not an array),
    ``fn`` itself runs, as before: the oracle's value and its errors are eager jax's. So does a program
    longer than :data:`JIT_MAX_LINES` (an unrolled loop of 200 steps: XLA compiles it in tens of seconds,
    eager jax reuses each step's compiled primitives)."""
    compiled = jax.jit(fn, **jit_options)
    state = ["unknown"]  # -> "jit" or "eager" at the first call

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if state[0] != "eager":
            try:
                if state[0] == "unknown":
                    short = len(str(compiled.trace(*args, **kwargs).jaxpr).splitlines()) <= JIT_MAX_LINES
                    state[0] = "jit" if short else "eager"
                if state[0] == "jit":
                    return compiled(*args, **kwargs)
            except Exception:  # noqa: BLE001 - (not traceable: the eager oracle decides)
                state[0] = "eager"
        return fn(*args, **kwargs)

    return call


JIT_MAX_LINES = 1000  # (the jaxpr's printed lines, nested ones included)


def jvp(fn: Callable[..., Any], primals: Any, tangents: Any) -> Any:
    """``jax.jvp(fn, primals, tangents)`` under :func:`jitted`."""
    return jitted(lambda p, t: jax.jvp(fn, p, t))(tuple(primals), tuple(tangents))


def _jitted_transform(transform: Callable[..., Any]) -> Callable[..., Any]:
    return functools.wraps(transform)(lambda fn, *args, **kwargs: jitted(transform(fn, *args, **kwargs)))


# jax's transformations whose results run under :func:`jitted` (``JAX.jacrev(JAX.grad(f))(x)``: the oracle,
# compiled once per argument signature)
JAX = types.SimpleNamespace(**{name: _jitted_transform(getattr(jax, name))
                               for name in ("grad", "value_and_grad", "jacfwd", "jacrev", "hessian", "vmap")}, jvp=jvp)
