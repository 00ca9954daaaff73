"""The source of the generated Jacobians (``jacfwd``/``jacrev`` transformed again: vmap, jit, a
derivative of them): :func:`jacobian_source` writes ``def f_jacfwd(params...)``, the JVP (VJP) batched
over a basis of the argument's tangents (the output's cotangents), one program with no loop over
elements; or, the form a derivative of a Jacobian differentiates, that JVP (VJP) in a rolled loop. A
container argument or output: one batched JVP (VJP) per leaf, JAX's layout (``jacobian_adjoint``'s
helpers assemble it).

``derive(fn, kind, argnums, max_iters=...)`` is ``autodiff.derivative_function`` (passed in: autodiff
calls this module, so this module does not import it).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import libcst as cst

from .api import _as_compiled  # (api's underscore names are srcjax-internal, shared on purpose)
from .frontend.names import Names
from .transforms import ad
from .transforms.batch_errors import BatchingError

Derive = Callable[..., Callable[..., Any]]


def jacobian_source(base: Callable[..., Any], name: str, k: int, kind: str, max_iters: int | None,
                    extra: dict[str, Callable[..., Any]], derive: Derive, batched: bool = True,
                    arrays: bool = False) -> str:
    """``def name(params...)``: the Jacobian w.r.t. parameter ``k`` as one batched JVP over the input's basis
    (jacfwd) or one batched VJP over the output's (jacrev): one program with no loop over elements.

    ``arrays``: the *array form*, for an array argument and an array output only (what a Jacobian's own
    call runs, and a Jacobian of it: ``jacobian._Jacobian``): the array path alone, no container branch
    for later transformations to read (a container there is refused by its first line)."""
    if not batched:
        return _jacobian_loop_source(base, name, k, kind, max_iters, extra, derive, arrays)
    params, args = _positional_and_call(base)
    names = Names([*inspect.signature(base).parameters, name, *base.__globals__])
    n, basis, out, t, bars = (names.fresh(v) for v in ("n", "basis", "out", "t", "bars"))
    x = params[k]
    lines = [f"def {name}({ad.signature(_as_compiled(base).program.entry)}):"]  # defaults included
    tree_out = not arrays and container_output(base)  # (then the array output's path would be dead code)
    if kind == "jacfwd" and arrays:  # (the output's tangent alone: the primal output's statements are dead code)
        bfun = _batched_over_tangent(derive(base, "jvp_tangent", (k,)), len(params), 0)
        extra[bfun.__name__] = bfun
        return "\n".join([*lines, _arrays_only(x),
                          f"    {n} = np.size({x})",
                          f"    {basis} = np.reshape(np.eye({n}, dtype=np.result_type({x})), ({n},) + np.shape({x}))",
                          f"    {t} = {bfun.__name__}({_then(args, basis)})  # one JVP per basis vector, batched",
                          _arrays_only(t),
                          f"    return np.reshape(np.moveaxis({t}, 0, -1), np.shape({t})[1:] + np.shape({x}))"]) + "\n"
    if kind == "jacfwd":
        jv = derive(base, "jvp", (k,))
        bfun = _batched_over_tangent(jv, len(params))
        extra[bfun.__name__] = bfun
        array_path = [f"    {n} = np.size({x})",
                      f"    {basis} = np.reshape(np.eye({n}, dtype=np.result_type({x})), ({n},) + np.shape({x}))",
                      f"    {out}, {t} = {bfun.__name__}({_then(args, basis)})  # one JVP per basis vector, batched"]
        if tree_out:
            lines += _jacfwd_by_leaves(names, x, f"{bfun.__name__}({_then(args, '{}')})")
            lines += _else([*array_path, f"    return jacfwd_blocks([{t}], {out}, {x})  # (a container output)"])
            return "\n".join(lines) + "\n"
        else:
            lines += _jacfwd_by_leaves(names, x, f"{bfun.__name__}({_then(args, '{}')})")
            lines += _else([*array_path, f"    if by_leaves({out}):  # (a container output: a block per leaf)",
                            f"        return jacfwd_blocks([{t}], {out}, {x})"])
        lines.append(f"        return np.reshape(np.moveaxis({t}, 0, -1), np.shape({out}) + np.shape({x}))")
    else:
        vj = derive(base, "vjp", (k,), max_iters=max_iters)
        bfun = _batched_over_tangent(vj, len(params))
        primal = names.fresh(base.__name__ if base.__name__.isidentifier() else "primal")  # (a lambda: <lambda>)
        extra[bfun.__name__] = bfun
        extra[primal] = base
        lines.append(f"    {out} = {primal}({', '.join(args[0] + args[1])})")
        array_path = [f"    {n} = np.size({out})",
                      f"    {basis} = np.reshape(np.eye({n}, dtype=np.result_type({out})), ({n},) + np.shape({out}))",
                      f"    _, {bars} = {bfun.__name__}({_then(args, basis)})  # one VJP per basis cotangent, batched",
                      f"    return jacobian_rows({bars}[0], {out})"]
        if arrays:
            return "\n".join([*lines, _arrays_only(x), _arrays_only(out), *array_path]) + "\n"
        by_leaves = _jacrev_by_leaves(names, out, f"{bfun.__name__}({_then(args, '{}')})")
        if tree_out:  # (the container path alone: no array path after it)
            return "\n".join([*lines, *(ln[4:] for ln in by_leaves[1:])]) + "\n"
        # (x a container: jacobian_rows writes a block per leaf)
        lines += [*by_leaves, *_else(array_path)]
    return "\n".join(lines) + "\n"


def container_output(fn: Callable[..., Any]) -> bool:
    """Whether ``fn``'s output is a container whatever its arguments: every ``return`` of its normalized
    entry function returns a tuple, list or dict display, or ``fn`` is a Jacobian (not its array form) of
    such a function (its output has the function's output's structure outside). False: not known so (a
    generated Jacobian then writes both the container path and the array path)."""
    derived = getattr(_as_compiled(fn).fn, "__srcjax_derived__", None)
    if derived is not None and str(derived[0]).startswith(("jacfwd", "jacrev")):
        return not str(derived[0]).endswith("_arrays") and container_output(derived[1])
    if derived is not None:
        return False  # (another derivative: its output's structure is not read from its text here)
    todo: list[Any] = [_as_compiled(fn).program.entry.fdef.body]
    returns = 0
    while todo:  # (every node but nested functions' and classes': a return anywhere in the function counts)
        node = todo.pop()
        if isinstance(node, cst.Return):
            if not isinstance(node.value, (cst.Tuple, cst.List, cst.Dict)):
                return False
            returns += 1
        elif not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            todo += node.children
    return returns > 0


def _containers_or_refusal(names: Names, derivative: Callable[..., Any], nparams: int,
                           args: tuple[list[str], list[str]], extra: dict[str, Callable[..., Any]], v: str,
                           kind: str, test: str) -> list[str]:
    """The loop form's lines for a container argument or output: the batched form's, one batched JVP
    (VJP) per leaf; where vmap cannot batch the derivative (why the loop form is used), a refusal."""
    try:
        bfun = _batched_over_tangent(derivative, nparams)
    except BatchingError:
        return [f"    assert not ({test}), 'a derivative of {kind} by a container or of a container output is not "
                f"supported yet here; hint: take {kind} by an array, of each output array'"]
    extra[bfun.__name__] = bfun
    write = _jacfwd_by_leaves if kind == "jacfwd" else _jacrev_by_leaves
    return write(names, v, f"{bfun.__name__}({_then(args, '{}')})", test)


def _arrays_only(v: str) -> str:
    """The array form's check of ``v`` (static: a container fails where the program is specialized)."""
    return f"    assert not is_tree({v}), 'internal: the array form of a Jacobian reached a container'"


def _else(lines: list[str]) -> list[str]:
    """``lines`` as the ``else`` of the ``if`` before them (not after an early ``return``: reverse mode of
    the Jacobian, vmapped, would read them for a container too)."""
    return ["    else:", *("    " + ln for ln in lines)]


def _batched_over_tangent(derivative: Callable[..., Any], nparams: int,
                          out_axes: Any = (None, 0)) -> Callable[..., Any]:
    """``derivative`` (a JVP or VJP of a function of ``nparams`` parameters) batched over its tangent
    (cotangent): the parameter after the function's. ``out_axes``: the pair's (the output's tangent alone: 0)."""
    from .vmap import batched_function  # (vmap builds on the derivatives: imported when used)

    dparams = list(inspect.signature(derivative).parameters)
    return batched_function(derivative, tuple(0 if i == nparams else None for i in range(len(dparams))), out_axes,
                            None)


def _jacfwd_by_leaves(names: Names, x: str, call: str, test: str = "") -> list[str]:
    """jacfwd by a container ``x``: one batched JVP (``call`` with its tangent for ``{}``) per leaf of ``x``
    (where ``test``, by default ``by_leaves(x)``: the container path's marker)."""
    ts, b, o, t = (names.fresh(v) for v in ("ts", "basis", "out", "t"))
    return [f"    if {test or f'by_leaves({x})'}:  # (a container: one batched JVP per leaf, JAX's layout)",
            f"        {ts} = []",
            f"        for {b} in leaf_bases({x}):",
            f"            {o}, {t} = {call.format(b)}",
            f"            {ts}.append({t})",
            f"        return jacfwd_blocks({ts}, {o}, {x})"]


def _jacrev_by_leaves(names: Names, out: str, call: str, test: str = "") -> list[str]:
    """jacrev of a container output ``out``: one batched VJP (``call`` with its cotangent for ``{}``) per leaf
    (where ``test``, by default ``by_leaves(out)``)."""
    rows, b, bars = (names.fresh(v) for v in ("rows", "basis", "bars"))
    return [f"    if {test or f'by_leaves({out})'}:  # (a container output: one batched VJP per leaf, JAX's layout)",
            f"        {rows} = []",
            f"        for {b} in leaf_bases({out}):",
            f"            _, {bars} = {call.format(b)}",
            f"            {rows}.append({bars}[0])",
            f"        return jacrev_blocks({rows}, {out})"]


def _jacobian_loop_source(base: Callable[..., Any], name: str, k: int, kind: str, max_iters: int | None,
                          extra: dict[str, Callable[..., Any]], derive: Derive, arrays: bool = False) -> str:
    """The Jacobian as one JVP per input element (jacfwd) or one VJP per output element (jacrev) in a rolled
    loop: what a derivative of a Jacobian differentiates when the batched form cannot be
    (autodiff.derivative_function)."""
    params, args = _positional_and_call(base)
    names = Names([*inspect.signature(base).parameters, name, *base.__globals__])
    n, i, jac, out, out_i, e, t, bars = (names.fresh(v) for v in ("n", "i", "jac", "out", "out_i", "e", "t", "bars"))
    x = params[k]
    lines = [f"def {name}({ad.signature(_as_compiled(base).program.entry)}):"]
    # (a container argument or output: one batched JVP/VJP per leaf, as the batched form)
    test = f"by_leaves({x}) or by_leaves({out})"
    if kind == "jacfwd":
        jv = derive(base, "jvp", (k,))
        extra[jv.__name__] = jv
        zero = f"zeros_like({x})"
        lines.append(f"    {out}, {t} = {jv.__name__}({_then(args, zero)})  # the output's shape and dtype")
        lines += [_arrays_only(x), _arrays_only(out)] if arrays else \
            _containers_or_refusal(names, jv, len(params), args, extra, x, kind, test)
        lines += [f"    {n} = np.size({x})",
                  f"    {jac} = np.zeros(({n},) + np.shape({out}), dtype=np.result_type({out}))",
                  f"    for {i} in range({n}):",
                  f"        {e} = np.reshape(np.arange({n}) == {i}, np.shape({x})).astype(np.result_type({x}))",
                  f"        {out_i}, {t} = {jv.__name__}({_then(args, e)})",
                  f"        {jac} = index_update({jac}, {i}, {t})",
                  f"    return np.reshape(np.moveaxis({jac}, 0, -1), np.shape({out}) + np.shape({x}))"]
    else:
        vj = derive(base, "vjp", (k,), max_iters=max_iters)
        primal = names.fresh(base.__name__ if base.__name__.isidentifier() else "primal")  # (a lambda: <lambda>)
        extra[vj.__name__] = vj
        extra[primal] = base
        lines.append(f"    {out} = {primal}({', '.join(args[0] + args[1])})")
        lines += [_arrays_only(x), _arrays_only(out)] if arrays else \
            _containers_or_refusal(names, vj, len(params), args, extra, out, kind, test)
        lines += [f"    {n} = np.size({out})",
                  f"    {jac} = np.zeros(({n},) + np.shape({x}), dtype=np.result_type({x}))",
                  f"    for {i} in range({n}):",
                  f"        {e} = np.reshape(np.arange({n}) == {i}, np.shape({out})).astype(np.result_type({out}))",
                  f"        {out_i}, {bars} = {vj.__name__}({_then(args, e)})",
                  f"        {jac} = index_update({jac}, {i}, {bars}[0])",
                  f"    return np.reshape({jac}, np.shape({out}) + np.shape({x}))"]
    return "\n".join(lines) + "\n"


def _positional_and_call(base: Callable[..., Any]) -> tuple[list[str], tuple[list[str], list[str]]]:
    """The positional parameter names, and a call's arguments passing every parameter on
    (positional names; ``scale=scale`` for a keyword-only one)."""
    ps = inspect.signature(base).parameters.values()
    pos = [p.name for p in ps if p.kind != inspect.Parameter.KEYWORD_ONLY]
    kw = [f"{p.name}={p.name}" for p in ps if p.kind == inspect.Parameter.KEYWORD_ONLY]
    return pos, (pos, kw)


def _then(args: tuple[list[str], list[str]], *more: str) -> str:
    """A derivative's call: the positional arguments, ``more`` (a tangent, a cotangent), the keywords."""
    return ", ".join([*args[0], *more, *args[1]])
