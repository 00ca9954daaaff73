"""The transformation srcjax-transpile is asked for (``--grad``, ``--value-and-grad``, ``--jvp``,
``--vjp``) and ``--argnums``, and ``--vmap`` of it with ``--in-axes``/``--out-axes`` (``--arg`` giving
batched shapes); the arguments a function is checked and lowered with (shapes, defaults,
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


def transformed(fn: Any, kind: str | None, argnums: tuple[int, ...] | int, max_iters: int | None = None) -> Any:
    """The function srcjax writes for ``kind`` (a plain Python function with source), or ``fn``."""
    if kind is None:
        return fn
    from ..autodiff import derivative_function

    return derivative_function(fn, kind, argnums, max_iters=max_iters)


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
        if isinstance(a, ShapeDtypeStruct) and not (a.dtype.kind in "fc" or a.dtype.name == "bfloat16"):
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


# ---------------------------------------------------------------------------
# --vmap: the batched program of FUNC (or of its derivative)
# ---------------------------------------------------------------------------


def _axis(text: str, flag: str, whole: str) -> int | None:
    t = text.strip()
    if t == "None":
        return None
    try:
        return int(t)
    except ValueError:
        raise UsageError(f"{flag} {whole!r}: expected an integer or None for each parameter, "
                         f"like 0,None, not {t!r}") from None


def parse_in_axes(text: str | None, name: str, params: list[str]) -> tuple[int | None, ...]:
    """``--in-axes 0,None``: one entry (an int or None) per positional parameter; default 0 for each."""
    if text is None:
        return (0,) * len(params)
    axes = tuple(_axis(t, "--in-axes", text) for t in text.split(","))
    if len(axes) != len(params):
        n = len(params)
        raise UsageError(f"--in-axes {text}: {name} has {n} parameter{'s' if n != 1 else ''} "
                         f"({', '.join(params)}), so --in-axes needs {n} entr{'ies' if n != 1 else 'y'} "
                         f"(an integer, or None for a parameter shared by every example), not {len(axes)}")
    return axes


def parse_out_axes(text: str | None) -> int | None:
    """``--out-axes N``: where the batch axis goes in every output (None: outputs not batched)."""
    return 0 if text is None else _axis(text, "--out-axes", text)


def vmapped(fn: Any, in_axes: tuple[int | None, ...], out_axes: int | None) -> Any:
    """``srcjax.vmap(fn, in_axes, out_axes)``: the compiled batched program, with source."""
    from ..vmap import vmap

    return vmap(fn, in_axes=in_axes, out_axes=out_axes)


def unbatched_overrides(overrides: dict[str, Any], params: list[str], in_axes: tuple[int | None, ...],
                        dims: dict[str, int]) -> tuple[dict[str, Any], int | None]:
    """With --vmap, ``--arg`` gives a mapped parameter's BATCHED shape: the shapes of one example
    (the mapped axis removed), and the batch size those arguments agree on (None when no ``--arg``
    gives a mapped parameter)."""
    axes = dict(zip(params, in_axes))
    out = dict(overrides)
    size: tuple[int, str] | None = None
    for p, spec in overrides.items():
        ax = axes.get(p)
        if ax is None:
            continue
        if not isinstance(spec, ShapeSpec):
            raise UsageError(f"--arg {p}={spec}: {p} is a number, so it cannot be mapped: "
                             f"give it None in --in-axes")
        nd = len(spec.dims)
        if not -nd <= ax < nd:
            raise UsageError(f"--in-axes maps axis {ax} of {p}, but --arg {p}={spec} has {nd} dimension"
                             f"{'s' if nd != 1 else ''} (with --vmap, --arg gives the batched shape)")
        d = spec.dims[ax]
        if isinstance(d, str):
            if d not in dims:
                raise UsageError(f"--arg {p}={spec}: the batch dimension {d} has no value: pass --dim {d}=32")
            d = dims[d]
        if size is not None and size[0] != d:
            raise UsageError(f"--vmap: mapped axes of different sizes: {size[1]} has {size[0]}, "
                             f"--arg {p}={spec} has {d} (axis {ax})")
        size = size or (d, f"--arg {p}={spec} (axis {ax})")
        out[p] = ShapeSpec(spec.dtype, spec.dims[:ax % nd] + spec.dims[ax % nd + 1:], spec.origin)
    return out, None if size is None else size[0]


def batched_args(args: dict[str, Any], params: list[str], in_axes: tuple[int | None, ...],
                 size: int | None) -> dict[str, Any]:
    """One example's arguments -> the vmapped program's: the batch axis of ``size`` inserted where
    ``in_axes`` maps it."""
    out = dict(args)
    for p, ax in zip(params, in_axes):
        if ax is None or p not in args:
            continue
        a = args[p]
        if not isinstance(a, ShapeDtypeStruct):
            raise UsageError(f"--vmap: {p} is {a!r}, not an array, so it cannot be mapped: give it None in --in-axes")
        if size is None:
            raise UsageError(f"--vmap --emit hlo needs the batch size: pass the batched shape of a mapped parameter, "
                             f"e.g. --arg {p}={_batched_example(a, ax)}")
        nd = len(a.shape) + 1
        if not -nd <= ax < nd:
            raise UsageError(f"--in-axes maps axis {ax} of {p}, which has {nd - 1} dimension"
                             f"{'s' if nd != 2 else ''} in one example")
        shape = list(a.shape)
        shape.insert(ax % nd, size)
        out[p] = ShapeDtypeStruct(tuple(shape), a.dtype)
    return out


def _batched_example(a: ShapeDtypeStruct, ax: int) -> str:
    nd = len(a.shape) + 1
    dims = [str(d) for d in a.shape]
    dims.insert(ax % nd if -nd <= ax < nd else 0, "32")
    return f"{dtype_short_name(a.dtype)}[{','.join(dims)}]"
