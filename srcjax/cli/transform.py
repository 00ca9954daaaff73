"""The transformation srcjax-transpile is asked for (``--grad``, ``--value-and-grad``, ``--jvp``,
``--vjp``) and ``--argnums``; the arguments a function is checked and lowered with (shapes, defaults,
a derivative's tangents and cotangent); what ``srcjax.grad`` would refuse, found without calling it.
"""

from __future__ import annotations

import argparse
import inspect
from typing import Any

from ..core import DTypeError, ShapeDtypeStruct, ShapeError, dtype_short_name
from .loading import UsageError
from .shapes import FunctionDecl, ShapeSpec, SpecError, missing_message, resolve

KINDS = {"grad": "--grad", "value_and_grad": "--value-and-grad", "jvp": "--jvp", "vjp": "--vjp"}


def requested_kind(ns: argparse.Namespace) -> str | None:
    return next((k for k in KINDS if getattr(ns, k)), None)


def parse_argnums(text: str | None, kind: str | None, decl: FunctionDecl) -> tuple[int, ...] | int:
    """``--argnums``: grad's default 0 (an int: a single gradient), jvp/vjp's default every parameter."""
    n = len(decl.params)
    if text is None:
        return 0 if kind in (None, "grad", "value_and_grad") else tuple(range(n))
    try:
        nums = tuple(int(a) for a in text.split(","))
    except ValueError:
        raise UsageError(f"--argnums {text!r}: expected integers like 0 or 0,1") from None
    bad = [a for a in nums if not -n <= a < n]
    if bad:
        raise UsageError(f"--argnums {text}: {decl.name} has {n} parameter{'s' if n != 1 else ''} "
                         f"({', '.join(decl.params)}), so argnums are 0..{n - 1}")
    nums = tuple(a % n for a in nums)
    return nums[0] if len(nums) == 1 and kind in (None, "grad", "value_and_grad") else nums


def transformed(fn: Any, kind: str | None, argnums: tuple[int, ...] | int) -> Any:
    """The function srcjax writes for ``kind`` (a plain Python function with source), or ``fn``."""
    if kind is None:
        return fn
    from ..autodiff import derivative_function

    return derivative_function(fn, kind, argnums)


def primal_args(decl: FunctionDecl, overrides: dict[str, Any], dims: dict[str, int], why: str,
                stand_ins: bool = False) -> tuple[dict[str, Any], dict[str, int]]:
    """Concrete arguments of the user's function (keyword -> ShapeDtypeStruct or number), stand-ins used."""
    try:
        r = resolve(decl, {k: v for k, v in overrides.items() if k in decl.params}, dims, stand_ins)
    except SpecError as e:
        raise UsageError(str(e)) from None
    if r.missing:
        raise UsageError(missing_message(decl, r.missing, why))
    return r.args, r.stand_ins


def with_defaults(fn: Any, args: dict[str, Any]) -> dict[str, Any]:
    """``args`` and the defaults of the parameters it leaves out: derivatives are written without defaults."""
    out = dict(args)
    for p, prm in inspect.signature(fn).parameters.items():
        if p not in out and prm.default is not prm.empty:
            out[p] = prm.default
    return out


def check_differentiable(fn: Any, decl: FunctionDecl, kind: str, nums: tuple[int, ...], args: dict[str, Any],
                         names: dict[int, str] | None = None) -> None:
    """What ``srcjax.grad`` would refuse when called: integer inputs, a non-scalar output (for grad)."""
    from .. import api

    flag = KINDS[kind]
    for i in nums:
        p = decl.params[i]
        a = args.get(p)
        if isinstance(a, ShapeDtypeStruct) and not (a.dtype.kind == "f" or a.dtype.name == "bfloat16"):
            shown = f"{dtype_short_name(a.dtype)}[{','.join(map(str, a.shape))}]"
            raise DTypeError(f"{flag} needs floating-point inputs, but argument {p!r} is {shown}",
                             span=decl.spans.get(p),
                             hint=f"annotate it as float (\"f32[...]\"), pass --arg {p}=f32[...], or choose other "
                                  "parameters with --argnums")
    if kind in ("grad", "value_and_grad"):
        from ..autodiff import grad_output_error

        bad = grad_output_error(fn, api.eval_shape(fn, **args), False, flag, lambda o: describe(o, names))
        if bad is not None:  # at the function's return, as srcjax.grad reports it
            bad.hint = "use --vjp for a non-scalar output" if isinstance(bad, ShapeError) else bad.hint
            raise bad


def describe(out: Any, names: dict[int, str] | None = None) -> str:
    """``f32[3,4]`` for one array, ``(f32[], f32[3])`` for a tuple of them; dims in ``names`` by name."""
    if isinstance(out, ShapeDtypeStruct):
        dims = ",".join(names.get(d, str(d)) if names else str(d) for d in out.shape)
        return f"{dtype_short_name(out.dtype)}[{dims}]"
    if isinstance(out, (tuple, list)):
        inner = ", ".join(describe(o, names) for o in out)
        return f"({inner},)" if isinstance(out, tuple) and len(out) == 1 else \
            f"({inner})" if isinstance(out, tuple) else f"[{inner}]"
    if isinstance(out, dict):
        return "{" + ", ".join(f"{k!r}: {describe(v, names)}" for k, v in out.items()) + "}"
    return repr(out)


def derived_args(fn: Any, derived: Any, kind: str | None, nums: tuple[int, ...], decl: FunctionDecl,
                 args: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Arguments of the transformed function: jvp tangents take their primal's shape, vjp's
    cotangent the output's; ``--arg`` may give them too."""
    from .. import api

    extra = list(inspect.signature(derived).parameters)[len(decl.params):]
    out = dict(args)
    for i, p in enumerate(extra):
        given = overrides.get(p)
        if isinstance(given, ShapeSpec):
            if given.symbols():
                raise UsageError(f"--arg {p}={given}: give the shape of {p} with numbers")
            out[p] = given.resolve({})
        elif given is not None:
            out[p] = given
        elif kind == "jvp":
            out[p] = args[decl.params[nums[i]]]
        else:  # vjp: the cotangent of the output
            out[p] = api.eval_shape(fn, **args)
    return out
