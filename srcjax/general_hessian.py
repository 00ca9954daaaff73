"""Transformations of a hessian whose function's output is not a scalar (issue #15).

``srcjax.hessian(f)`` is forward mode over ``f``'s generated gradient source: that is what another
transformation of it reads (``jit``, ``vmap``, ``jacfwd``, ``jvp``, ``eval_shape``, ...). For an output
that is not a scalar that source stops at its check; JAX's hessian there is ``jacfwd(jacrev(f))`` (the
hessian's ``_general``). A transformation ``T`` of a hessian (or of a transformation of one) keeps ``T``
of that general form as ``_or_general`` (made when first needed), and what it transforms with how its
call's arguments give that function's (``_general_from``: the same arguments for ``jit`` and the
Jacobians, the primals of ``jvp``/``vjp``, one example's for ``vmap``).

The decision is the output's inferred type, never an error's text: where ``T``'s own path fails for
some arguments, :func:`instead` follows ``_general_from`` down to the hessian and asks it
(``needs_general``: ``f``'s output on those arguments, by ``eval_shape``, is not of grad's scalar
shape, ``grad_output.scalar_shaped``). A scalar output keeps ``T``'s own error (forward over reverse:
an integer or complex output gets grad's error, located at the ``return``); any other output runs ``T``
of the general form.

Nothing here imports the transformations: they pass ``T`` in (:func:`remade`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

Call = tuple[tuple[Any, ...], dict[str, Any]]
ArgsOf = Callable[[tuple[Any, ...], dict[str, Any]], "Call | None"]


def general_of(fn: Any) -> Callable[[], Any] | None:
    """The maker of ``fn``'s general form, where ``fn`` is a hessian or a transformation of one; else None."""
    g = getattr(fn, "_general", None)
    if g is None:
        g = getattr(fn, "_or_general", None)
    return g if callable(g) else None


def remade(obj: Any, fn: Any, transform: Callable[[Any], Any], args_of: ArgsOf | None = None) -> Any:
    """``obj`` (``transform(fn)``), given ``transform`` of ``fn``'s general form for the calls that need it,
    where ``fn`` has one (made once, when first needed). ``args_of``: ``fn``'s arguments in a call of
    ``obj`` with these (None: they are the same; a result of None: not known)."""
    general = general_of(fn)
    if general is None or obj is fn:
        return obj
    made: list[Any] = []

    def or_general() -> Any:
        if not made:
            made.append(transform(general()))
        return made[0]

    try:
        obj._or_general = or_general
        obj._general_from = (fn, args_of)
    except AttributeError:  # pragma: no cover - an object that takes no attributes
        pass
    return obj


def takes_general(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether a call of ``obj`` (a hessian or a transformation of one) with these arguments is one of
    the hessian's general form: the hessian's function's output on the arguments it gets there is not
    a scalar (an array with dimensions, a container)."""
    at, call = obj, (args, kwargs)
    while getattr(at, "_general", None) is None:  # (down to the hessian, the arguments it is given)
        inner, args_of = getattr(at, "_general_from", (None, None))
        if inner is None:
            return False
        mapped = args_of(*call) if args_of is not None else call
        if mapped is None:
            return False
        at, call = inner, mapped
    needs = getattr(at, "needs_general", None)
    return bool(needs(*call)) if needs is not None else False


def instead(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any | None:
    """What runs instead of ``obj`` (whose own path failed for these arguments) where ``obj`` transforms
    a hessian and the arguments are those of its general form (:func:`takes_general`); else None (the
    failure stands)."""
    other = general_of(obj)
    if other is None or not takes_general(obj, args, kwargs):
        return None
    return other()


def per_call(obj: Any, run: Callable[..., Any], transform: Callable[[Any], Callable[..., Any]]) -> Callable[..., Any]:
    """``run`` (``transform(obj)``, e.g. ``srcjax.numpy_function``'s: the generated source run by NumPy), except
    for a call taking ``obj``'s general form (:func:`takes_general`): ``transform`` of that form runs instead (the
    generic form's source stops at grad's check there: a raw AssertionError under NumPy)."""
    general = general_of(obj)
    if general is None:
        return run

    @functools.wraps(run)
    def either(*args: Any, **kwargs: Any) -> Any:
        if takes_general(obj, args, kwargs):
            return transform(general())(*args, **kwargs)
        return run(*args, **kwargs)

    return either
