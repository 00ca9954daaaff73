"""A lambda handed to a transformation inside a compiled function, reading the caller's locals:
``srcjax.value_and_grad(lambda p: loss(p, x, y))(w)``, JAX users' way of fixing the data.

The transformation needs a function with source of its own, so the lambda is lifted: its body
becomes ``def lambda_fn(p, x, y): return loss(p, x, y)`` (text srcjax registers, read like any
generated function, in the user's module globals), the locals it reads are extra parameters, and
the call passes them (``value_and_grad(lambda_fn)(w, x, y)``): what a closure reads at its call, as
Python's late binding does. ``vmap``'s ``in_axes`` gets ``None`` for each extra parameter; the
derivatives' ``argnums`` already count the lambda's own parameters only.
"""

from __future__ import annotations

import itertools
import linecache
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import libcst as cst

from .names import body_bindings, code, names_in, walk

if TYPE_CHECKING:
    from .resolve import Resolver

__all__ = ["lift_function", "lift_lambda", "with_extra_axes"]

_COUNTER = itertools.count()


def lift_lambda(res: Resolver, lam: cst.Lambda, local_names: Callable[[cst.FunctionDef], set[str]]
                ) -> tuple[Any, list[str]] | None:
    """(the lifted function, the caller's locals it takes after the lambda's own parameters, maybe
    none); None when the lambda takes more than plain positional parameters. A function the caller
    defines and the lambda reads (``lambda v: srcjax.jvp(f, (x,), (v,))`` of a nested ``def f``) is
    written in the lifted function's body (:func:`_nested_defs`), not passed as a value."""
    ps = lam.params
    if ps.posonly_params or ps.kwonly_params or ps.star_kwarg is not None or \
            (ps.star_arg is not None and not isinstance(ps.star_arg, cst.MaybeSentinel)) or \
            any(p.default is not None for p in ps.params):
        return None
    own = [p.name.value for p in ps.params]
    read = _read_in(lam.body)
    free, defs = _nested_defs(res, [n for n in dict.fromkeys(read) if n in res.locals and n not in own],
                              set(own), local_names)
    read = read + [n for d in defs for n in names_in(d)]
    # (names of the caller's closure: the lifted function's closure too)
    closed = {n: res.src.closure[n] for n in read if n not in own and n not in res.locals
              and n in res.src.closure}
    name = "lambda_fn"
    text = f"def {name}({', '.join(own + free)}):\n{_indented(defs)}    return {code(lam.body)}\n"
    return _defined(res, name, "lambda", text, closed), free


def _nested_defs(res: Resolver, free: list[str], own: set[str], local_names: Callable[[cst.FunctionDef], set[str]]
                 ) -> tuple[list[str], list[cst.FunctionDef]]:
    """``free`` (the caller's locals a lifted function reads) less the functions the caller defines with a
    plain ``def`` (one, undecorated, not bound otherwise), with the locals those read in turn; and those defs,
    to be written in the lifted function's body. Passed as values, they were parameters holding a function,
    which a transformation called on them (``srcjax.jvp(f, ...)``) cannot read the source of."""
    free = list(free)
    defs: list[cst.FunctionDef] = []
    pending = list(free)
    while pending:
        n = pending.pop(0)
        found = body_bindings(res.src.fdef.body).defs.get(n, [])
        if len(found) != 1 or found[0].decorators or n in res.bindings or n in own:
            continue
        fdef = found[0]
        defs.append(fdef.with_changes(leading_lines=[]))
        free.remove(n)
        inner = local_names(fdef)
        for m in dict.fromkeys(names_in(fdef.body)):
            if m in res.locals and m not in inner and m != n and m not in free and m not in own and \
                    all(d.name.value != m for d in defs):
                free.append(m)
                pending.append(m)
    return free, defs


def _indented(defs: list[cst.FunctionDef]) -> str:
    return "".join("    " + ln for d in defs for ln in cst.Module(body=[d]).code.splitlines(True))


def _read_in(node: cst.CSTNode, bound: frozenset[str] = frozenset()) -> list[str]:
    """The names ``node`` reads, in source order, less a nested lambda's own parameters inside it
    (``lambda a: vmap(lambda b: k(a, b))(x)`` reads ``k``, ``a`` and ``x``, not ``b``)."""
    if isinstance(node, cst.Name):
        return [] if node.value in bound else [node.value]
    if not any(isinstance(n, cst.Lambda) for n in walk(node)):  # (no lambda inside: every name it reads)
        return [n for n in names_in(node) if n not in bound]
    if isinstance(node, (cst.Attribute, cst.Arg)):  # (an attribute's or a keyword's name is not read)
        return _read_in(node.value, bound)
    if isinstance(node, cst.Lambda):
        inner = bound | {p.name.value for p in node.params.params}
        return [n for p in node.params.params if p.default is not None for n in _read_in(p.default, bound)] + \
            _read_in(node.body, inner)
    return [n for c in node.children for n in _read_in(c, bound)]


def lift_function(res: Resolver, name: str, local_names: Callable[[cst.FunctionDef], set[str]]
                  ) -> tuple[Any, list[str]] | None:
    """A function defined in the caller's body (``def loss(w): ...`` reading the caller's ``x``),
    lifted like a lambda: (the function, the caller's locals it takes after its own parameters);
    ``local_names`` gives a function's own names."""
    defs = body_bindings(res.src.fdef.body).defs.get(name, [])
    made = res.made_defs.get(name) if not defs else None
    if len(defs) != 1 and made is None:
        return None
    fdef, statics = (defs[0], {}) if made is None else made
    ps = fdef.params
    if ps.posonly_params or ps.kwonly_params or ps.star_kwarg is not None or fdef.decorators or \
            (ps.star_arg is not None and not isinstance(ps.star_arg, cst.MaybeSentinel)):
        return None
    own = local_names(fdef)
    # (a def srcjax made reads its temporaries too: every name but its own and the functions it calls)
    free, defs = _nested_defs(
        res, [n for n in dict.fromkeys(names_in(fdef.body)) if (n in res.locals or made is not None) and
              n not in own and n != name and n not in statics], own | {name}, local_names)
    read = names_in(fdef.body) + [n for d in defs for n in names_in(d)]
    # (names of the caller's closure: the lifted function's closure too)
    closed = {n: res.src.closure[n] for n in read if n not in own and n not in res.locals
              and n in res.src.closure} | statics
    params = list(ps.params) + [cst.Param(cst.Name(n)) for n in free]
    body = fdef.body
    if defs:
        body = body.with_changes(body=[*defs, *body.body])
    # (named apart from the def, which stays in the caller's body: a call of the lifted function by its name,
    # `y, vjp_fn = srcjax.vjp(model, w)`'s `model_lifted(w, x)`, is not a call of the caller's `model`)
    lifted = f"{name}_lifted"
    text = cst.Module(body=[fdef.with_changes(name=cst.Name(lifted), params=ps.with_changes(params=params),
                                              body=body, leading_lines=[])]).code
    return _defined(res, lifted, name, text, closed), free


def _defined(res: Resolver, name: str, what: str, text: str, closed: dict[str, Any] | None = None) -> Any:
    """The function ``name`` that ``text`` defines, in the caller's module globals (and with the
    caller's closure values ``closed`` as its closure), with its text registered (srcjax reads it
    like any generated function)."""
    filename = f"<srcjax.{what} in {res.src.fn.__qualname__} #{next(_COUNTER)}>"
    if closed:  # defined inside a function taking them: they are its closure
        inner = "".join("    " + ln for ln in text.splitlines(True))
        text = f"def _closing({', '.join(closed)}):\n{inner}    return {name}\n"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    made: dict[str, Any] = {}
    exec(compile(text, filename, "exec"), res.src.globals, made)  # noqa: S102 - srcjax's own text
    return made["_closing"](*closed.values()) if closed else made[name]


def with_extra_axes(fv: Any, args: list[Any], kwargs: dict[str, Any], n_own: int, n_extra: int) -> bool:
    """``vmap``'s ``in_axes`` extended with ``None`` for the extra parameters (in place); False when
    ``fv`` is a transformation whose arguments cannot be extended this way."""
    name = getattr(fv, "__name__", "")
    if name in ("grad", "value_and_grad", "jacfwd", "jacrev", "hessian", "jit", "compile"):
        return True
    if name != "vmap":
        return False
    if "in_axes" in kwargs:
        axes = kwargs["in_axes"]
    elif len(args) > 1:
        axes = args[1]
    else:
        axes = 0
    if isinstance(axes, (tuple, list)):
        if len(axes) != n_own:
            return False
        axes = tuple(axes) + (None,) * n_extra
    else:
        axes = (axes,) * n_own + (None,) * n_extra
    if len(args) > 1:
        args[1] = axes
    else:
        kwargs["in_axes"] = axes
    return True
