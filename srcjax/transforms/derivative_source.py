"""The derivative functions srcjax writes, as source: the entry points of automatic differentiation.

:func:`grad_source` and :func:`vjp_source` (reverse mode, :mod:`.reverse_ad`) and
:func:`jvp_source` (forward mode, :mod:`.forward_ad`) each write one function of the
program's entry, followed by the derivatives of the helpers it calls;
:func:`record_origins` notes which program function each generated helper derives from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst

from ..core import not_scalar_output
from ..frontend.cst_expressions import parse_expression
from ..frontend.names import RenameNames, code, names_in
from ..frontend.program import Program
from .anf import DifferentiationError, lines_rebound, signature
from .forward_ad import JVP
from .reverse_ad import VJP
from .templates import expr
from .zero_cotangents import Halves


def record_origins(helpers: dict[Any, Any], origins: dict[str, str] | None) -> None:
    """``origins[generated helper] = the program function it derives from`` (whose namespace it needs)."""
    if origins is not None:
        for (fname, *_), names in helpers.items():
            for n in names if isinstance(names, tuple) else (names,):
                origins[n] = fname


def entry_vjp(program: Program, argnums: Sequence[int], max_iters: int | None
              ) -> tuple[VJP, Halves, list[str]]:
    """The reverse-mode writer of ``program.entry`` w.r.t. the positional parameters ``argnums``,
    with the helpers' derivatives it writes on the way (keyed by helper and active parameters)
    and their source (grad, vjp and the split vjp all start here)."""
    nf = program.entry
    params = [p.name.value for p in nf.plain_fdef.params.params]
    helpers: Halves = {}
    extra: list[str] = []
    return VJP(program, nf, [params[i] for i in argnums], helpers, extra, max_iters), helpers, extra


def grad_source(program: Program, argnums: Sequence[int], name: str, *, value: bool, has_aux: bool,
                single: bool = True, origins: dict[str, str] | None = None, max_iters: int | None = None) -> str:
    """Source of ``def name(params...)`` returning the gradient (and value/aux)."""
    nf = program.entry
    v, helpers, extra = entry_vjp(program, argnums, max_iters)
    seed_holder = v.names.fresh("out_bar")
    out_node = v.ret.value
    if has_aux:
        if not isinstance(out_node, (cst.Tuple, cst.List)) or len(out_node.elements) != 2:
            what = "value_and_grad" if value else "grad"
            err = DifferentiationError(f"srcjax.{what} with has_aux=True needs {nf.name} to return a pair "
                                       "(output, aux)", hint="return output, aux (or drop has_aux=True)")
            err.at_return = True  # (no place here: autodiff puts it at the user's return)
            raise err
        main = code(out_node.elements[0].value)
        aux = code(out_node.elements[1].value)
    else:
        main, aux = code(out_node) if out_node is not None else "None", None
    main_node = parse_expression(main)
    if isinstance(main_node, (cst.Tuple, cst.List, cst.Dict, cst.Set)):  # a container: never a scalar
        kind = {cst.Tuple: "a tuple", cst.List: "a list", cst.Dict: "a dict", cst.Set: "a set"}[type(main_node)]
        raise not_scalar_output(  # located at the user's return by autodiff (which knows the function)
            f"srcjax.{'value_and_grad' if value else 'grad'} needs a scalar output, but {nf.name} returns {kind}"
            + (" as its output (the first of has_aux's pair)" if has_aux else ""),
            hint="reduce it to a scalar (np.sum, np.mean), or use srcjax.jacrev or srcjax.vjp for a "
                 "non-scalar output" + ("" if has_aux else "; has_aux=True if the rest is auxiliary data"))
    v.ret = cst.Return(value=main_node)
    v.seed_expr = f"ones_like({main})"
    primal, adj, out, defined = v.sweeps(seed_holder)
    bars = v.finish_bars(adj, defined)
    lines = [f"def {name}({signature(nf)}):"]  # the same parameters, defaults included
    if any(v.tape in ln for ln in primal + adj) or helpers:
        lines.append(f"    {v.tape} = []")
    lines += primal
    lines.append(f"    assert np.ndim({main}) == 0 and is_float({main}), "
                 "'grad requires a real scalar output; use jacrev or vjp'")
    if value or has_aux:
        kept = _kept(v, [main, aux], adj, lines)
        main, aux = kept[0] or main, kept[1]
    lines += adj
    g = bars[0] if single else "(" + ", ".join(bars) + ",)"
    result = g
    if has_aux:
        result = f"{result}, {aux}"
        if value:
            result = f"({main}, {aux}), {g}"
    elif value:
        result = f"{main}, {g}"
    lines.append(f"    return {result}")
    record_origins(helpers, origins)
    return "\n".join(lines) + "\n" + ("\n\n" + "\n\n".join(extra) if extra else "")


def _kept(v: VJP, exprs: list[str | None], adj: list[str], lines: list[str]) -> list[str | None]:
    """``exprs`` (results returned after the adjoint) reading copies of the names the adjoint
    restores from the tape (``s`` of a loop ``s = s + ...``: the adjoint rewinds it)."""
    rebound = lines_rebound(adj)
    mapping: dict[str, str] = {}
    for e in exprs:
        for n in names_in(expr(e)) if e is not None else []:
            if n in rebound and n not in mapping:
                mapping[n] = v.names.fresh(f"{n}_value")
                lines.append(f"    {mapping[n]} = {n}")
    return [code(parse_expression(e).visit(RenameNames(mapping)))  # type: ignore[arg-type]
            if e is not None and mapping else e for e in exprs]


def vjp_source(program: Program, argnums: Sequence[int], name: str, origins: dict[str, str] | None = None,
               max_iters: int | None = None) -> str:
    """Source of ``def name(params..., out_bar)`` returning ``(out, cotangents)``."""
    nf = program.entry
    v, helpers, extra = entry_vjp(program, argnums, max_iters)
    out_bar = v.names.fresh("out_bar")
    primal, adj, out, defined = v.sweeps(out_bar)
    bars = v.finish_bars(adj, defined)
    lines = [f"def {name}({signature(nf, [out_bar])}):", f"    {v.tape} = []"] + primal
    out = _kept(v, [out, None], adj, lines)[0] or out
    lines += adj
    lines.append(f"    return {out}, ({', '.join(bars)},)")
    record_origins(helpers, origins)
    return "\n".join(lines) + "\n" + ("\n\n" + "\n\n".join(extra) if extra else "")


def jvp_source(program: Program, argnums: Sequence[int], name: str, origins: dict[str, str] | None = None) -> str:
    nf = program.entry
    params = [p.name.value for p in nf.plain_fdef.params.params]
    active = [params[i] for i in argnums]
    helpers: dict[tuple[str, tuple[str, ...]], str] = {}
    extra: list[str] = []
    text = JVP(program, nf, active, name, helpers, extra).build()
    record_origins(helpers, origins)
    return text + ("\n\n" + "\n\n".join(extra) if extra else "")
