"""custom_vjp and custom_jvp: derivative rules written by the user (JAX's API).

A decorated function is an ordinary srcjax helper: called directly it runs its
own body with NumPy; inside compiled code it is transpiled like any helper
(``srcjax.source`` shows it). Only differentiation treats it differently: the
AD pass (:mod:`srcjax.transforms.custom_rules`) writes *calls* to the user's
rule functions instead of differentiating the body, so the generated
derivative reads

    y, log1pexp_res = log1pexp_fwd(x)          # custom_vjp, primal sweep
    x_bar, = log1pexp_bwd(log1pexp_res, y_bar)  # custom_vjp, adjoint sweep
    y, y_dot = safe_norm_jvp((x,), (x_dot,))    # custom_jvp, forward mode

and the rules are transpiled like any other helper (normalized,
shape-checked, lowered). :func:`check_rule_result` is what the specializer
runs after each call to a rule: it checks the structure and shapes the
conventions below require, and reports a :class:`CustomRuleError` at the
rule's ``return``.

Conventions (JAX's):
- ``custom_vjp``: ``fwd(*args) -> (out, residuals)``;
  ``bwd(*nondiff_args, residuals, out_bar) -> tuple`` with one cotangent per
  differentiable argument (in order; ``nondiff_argnums`` are left out).
- ``custom_jvp``: ``jvp(*nondiff_args, primals, tangents) -> (out, out_dot)``
  where ``primals``/``tangents`` are tuples of the differentiable arguments.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Sequence
from typing import Any

from .core import CustomRuleError, Span, TranspileError
from .lifetimes import PerFunction

__all__ = ["custom_vjp", "custom_jvp"]

# rule function -> (role, owner): role is "fwd", "bwd", "jvp", or "transpose" (generated from a jvp rule)
_ROLES: PerFunction[tuple[str, Any]] = PerFunction("role")  # rule -> (its role, its owner): on the rule, dies with it


class _Custom:
    """What custom_vjp and custom_jvp share: the primal, and how srcjax sees it."""

    kind = ""

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        fun = getattr(fun, "__srcjax_fn__", fun)
        if not isinstance(fun, types.FunctionType):
            raise TypeError(f"srcjax.{self.kind} needs a Python function written with `def`, got {fun!r}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        nparams = len(inspect.signature(fun).parameters)
        bad = [i for i in nondiff_argnums if not -nparams <= i < nparams]
        if bad:
            raise ValueError(f"nondiff_argnums {tuple(bad)} out of range for {fun.__name__} with {nparams} parameters")
        self.nondiff_argnums = tuple(sorted({i % nparams for i in nondiff_argnums}))
        # What srcjax transpiles: a twin of ``fun`` (same code, globals and closure) that carries
        # this rule, so ``fun`` itself stays an ordinary function.
        twin = types.FunctionType(fun.__code__, fun.__globals__, fun.__name__, fun.__defaults__, fun.__closure__)
        twin.__kwdefaults__ = fun.__kwdefaults__
        twin.__qualname__ = fun.__qualname__
        twin.__module__ = fun.__module__
        twin.__doc__ = fun.__doc__
        twin.__srcjax_custom__ = self  # type: ignore[attr-defined]
        self.__srcjax_fn__ = twin

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the primal (NumPy semantics, like any undecorated function)."""
        return self.fun(*args, **kwargs)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else types.MethodType(self, obj)

    # -- what the AD pass needs ----------------------------------------------------------------
    @property
    def params(self) -> list[str]:
        return list(inspect.signature(self.fun).parameters)

    def diff_params(self) -> list[str]:
        return [p for i, p in enumerate(self.params) if i not in self.nondiff_argnums]

    def nondiff_params(self) -> list[str]:
        return [self.params[i] for i in self.nondiff_argnums]

    def span(self) -> Span | None:
        return def_span(self.fun)

    def _register(self, fn: Any, role: str, what: str) -> Callable[..., Any]:
        fn = getattr(fn, "__srcjax_fn__", fn)
        if not isinstance(fn, types.FunctionType):
            raise TypeError(f"{self.__name__}.{what}: the {role} rule must be a Python function written with "  # type: ignore[attr-defined]
                            f"`def` (srcjax transpiles it), got {fn!r}")
        register_role(fn, role, self)
        return fn


class custom_vjp(_Custom):
    """A function with a user-written reverse-mode rule: ``f.defvjp(fwd, bwd)`` (as ``jax.custom_vjp``)."""

    kind = "custom_vjp"

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        super().__init__(fun, nondiff_argnums)
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        """``fwd(*args) -> (out, residuals)``; ``bwd(*nondiff_args, residuals, out_bar) -> cotangents``."""
        self.fwd = self._register(fwd, "fwd", "defvjp")
        self.bwd = self._register(bwd, "bwd", "defvjp")


class custom_jvp(_Custom):
    """A function with a user-written forward-mode rule: ``@f.defjvp`` (as ``jax.custom_jvp``).

    Reverse mode differentiates the rule's tangent output with respect to the
    tangents (the rule must be linear in them, as in JAX); higher orders
    differentiate the rule itself.
    """

    kind = "custom_jvp"

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        super().__init__(fun, nondiff_argnums)
        self.jvp: Callable[..., Any] | None = None

    def defjvp(self, jvp: Callable[..., Any]) -> Callable[..., Any]:
        """``jvp(*nondiff_args, primals, tangents) -> (out, out_dot)``; usable as a decorator."""
        self.jvp = self._register(jvp, "jvp", "defjvp")
        return jvp


def owner_of(fn: Any) -> _Custom | None:
    """The custom_vjp/custom_jvp a transpiled function stands for (None for ordinary functions)."""
    return getattr(fn, "__srcjax_custom__", None)


def def_span(fn: Callable[..., Any]) -> Span | None:
    """Where ``fn``'s ``def`` line is (for errors about a rule as a whole)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    try:
        from .frontend.read import read_function

        src = read_function(fn)
        return src.span(src.fdef.name)
    except (TranspileError, OSError, TypeError):  # (no source to read: the code object's first line)
        return Span(code.co_filename, code.co_firstlineno, 0, code.co_firstlineno, 0)


# -- checks the specializer runs after calling a rule ---------------------------------------------

def register_role(fn: Callable[..., Any], role: str, owner: _Custom) -> None:
    _ROLES.set(fn, None, (role, owner))


def rule_role(fn: Any) -> tuple[str, _Custom] | None:
    try:
        return _ROLES.get(fn)  # type: ignore[no-any-return]
    except TypeError:
        return None


def _aval(v: Any) -> Any:
    a = getattr(v, "aval", None)
    if a is not None:
        return a
    import numpy as np

    if isinstance(v, (bool, int, float, np.generic, np.ndarray)):
        return np.shape(v)
    return None


def _shape(v: Any) -> tuple[int, ...] | None:
    a = _aval(v)
    if a is None:
        return None
    return tuple(a.shape) if hasattr(a, "shape") else tuple(a)


def _describe(v: Any) -> str:
    a = getattr(v, "aval", None)
    if a is not None:
        return f"an array {a.str_short()}"
    if isinstance(v, (tuple, list)):
        return f"a {type(v).__name__} of {len(v)}"
    return f"a {type(v).__name__}"


def _leaves(v: Any) -> list[Any]:
    if isinstance(v, (tuple, list)):
        return [x for e in v for x in _leaves(e)]
    if isinstance(v, dict):
        return [x for k in v for x in _leaves(v[k])]
    return [v]


def check_rule_result(role: str, owner: _Custom, span: Span | None, args: Sequence[Any],
                      kwargs: dict[str, Any], result: Any, primal_calls: dict[int, list[Any]]) -> None:
    """Raise :class:`CustomRuleError` when a rule's result breaks its convention.

    ``primal_calls`` (one per specialization) remembers the differentiable
    arguments of each ``fwd`` call, to check the shapes ``bwd`` returns.
    """
    name = owner.__name__  # type: ignore[attr-defined]
    if role in ("fwd", "jvp"):
        what = "(output, residuals)" if role == "fwd" else "(output, output_tangent)"
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise CustomRuleError(
                f"the {role} rule of {name} must return a pair {what}, but it returned {_describe(result)}",
                span=span, hint=("return log1pexp(x), (x,)  -- the primal output, then anything bwd needs"
                                 if role == "fwd" else "return f(x), f_dot  -- the primal output and its tangent"))
    if role == "fwd":
        bound = _bind(owner, args, kwargs)
        primal_calls.setdefault(id(owner), []).append([bound.get(p) for p in owner.diff_params()])
    elif role == "jvp":
        out, out_dot = result
        lo, lt = _leaves(out), _leaves(out_dot)
        shapes = [(_shape(a), _shape(b)) for a, b in zip(lo, lt)]
        if len(lo) != len(lt) or any(a is not None and b is not None and a != b for a, b in shapes):
            raise CustomRuleError(
                f"the jvp rule of {name} returned a tangent that does not match its output: output is "
                f"{_describe_tree(out)}, tangent is {_describe_tree(out_dot)}",
                span=span, hint="the tangent output must have the structure and shape of the primal output")
    elif role == "bwd":
        diff = owner.diff_params()
        if not isinstance(result, (tuple, list)):
            raise CustomRuleError(
                f"the bwd rule of {name} must return a tuple with one cotangent per differentiable argument "
                f"({', '.join(diff)}), but it returned {_describe(result)}", span=span,
                hint=f"return ({diff[0]}_bar,)  -- a tuple, even for one argument" if len(diff) == 1 else
                     f"return ({', '.join(p + '_bar' for p in diff)})")
        if len(result) != len(diff):
            extra = f" (nondiff_argnums {owner.nondiff_argnums} get none)" if owner.nondiff_argnums else ""
            raise CustomRuleError(
                f"the bwd rule of {name} returned {len(result)} cotangent{'s' if len(result) != 1 else ''}, but "
                f"{name} has {len(diff)} differentiable argument{'s' if len(diff) != 1 else ''} "
                f"({', '.join(diff)}){extra}", span=span,
                hint="return one cotangent per differentiable argument, in order, as a tuple")
        literal = none_cotangents(owner)
        for k, (p, ct) in enumerate(zip(diff, result)):
            if ct is None and k not in literal:
                raise CustomRuleError(
                    f"the bwd rule of {name} returned None as the cotangent of {p} from a `return` that does "
                    "not write it; srcjax reads a zero cotangent only from a literal None written in every "
                    "`return` of the rule", span=span,
                    hint=f"write None in the returned tuple itself, or return zeros_like({p}) (np.zeros_like)")
        calls = primal_calls.get(id(owner), [])
        for k, (p, ct) in enumerate(zip(diff, result)):
            if ct is None:
                continue
            want = {_shape_tree(c[k]) for c in calls if c[k] is not None}
            got = _shape_tree(ct)
            if want and got is not None and got not in want:
                exp = " or ".join(str(w) for w in sorted(want, key=str))
                raise CustomRuleError(
                    f"the bwd rule of {name} returned a cotangent for {p} of shape {got}, but {p} has shape {exp}",
                    span=span, hint=f"the cotangent of {p} must have {p}'s shape (sum over broadcast axes)")


def none_cotangents(owner: _Custom) -> frozenset[int]:
    """Positions where every ``return`` of ``owner``'s bwd rule writes the literal ``None``.

    JAX takes ``None`` in a bwd's result as a zero cotangent for that argument; the
    derivative's call site then gives that argument no cotangent (read as zeros). Only a
    literal ``None`` in a tuple written at every ``return`` counts: the call site is
    written before the rule runs, so the ``None`` must be visible in its source.
    """
    fn = getattr(owner, "bwd", None)
    if fn is None:
        return frozenset()
    try:
        from .frontend.read import read_function

        fdef = read_function(fn).fdef
    except (TranspileError, OSError, TypeError):  # (no source to read: no literal None seen)
        return frozenset()
    import libcst as cst

    from .frontend.names import Visitor

    returns: list[cst.Return] = []

    class _Returns(Visitor):
        def visit_Return(self, node: cst.Return) -> None:
            returns.append(node)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fdef  # (a nested def's returns are its own)

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    _Returns().walk(fdef)
    n = len(owner.diff_params())
    common: set[int] | None = None
    for r in returns:
        if not isinstance(r.value, (cst.Tuple, cst.List)) or len(r.value.elements) != n or \
                any(isinstance(e, cst.StarredElement) for e in r.value.elements):
            return frozenset()
        nones = {k for k, e in enumerate(r.value.elements)
                 if isinstance(e.value, cst.Name) and e.value.value == "None"}
        common = nones if common is None else common & nones
    return frozenset(common or ())


def transpose_error(owner: _Custom, e: Exception) -> CustomRuleError:
    """A shape error inside the transpose of a jvp rule is the rule's: report it at the rule."""
    name = owner.__name__  # type: ignore[attr-defined]
    jvp = getattr(owner, "jvp", None)
    return CustomRuleError(
        f"reverse mode through {name} transposes its jvp rule, and that failed: {getattr(e, 'message', e)}",
        span=def_span(jvp) if jvp is not None else owner.span(),
        hint="the tangent output must have the primal output's shape and be linear in the tangents")


def _shape_tree(v: Any) -> Any:
    if isinstance(v, (tuple, list)):
        return tuple(_shape_tree(e) for e in v)
    return _shape(v)


def _describe_tree(v: Any) -> str:
    if isinstance(v, (tuple, list)):
        return "(" + ", ".join(_describe_tree(e) for e in v) + ("," if len(v) == 1 else "") + ")"
    a = getattr(v, "aval", None)
    if a is not None:
        return a.str_short()
    return repr(v) if isinstance(v, (int, float, bool)) else type(v).__name__


def _bind(owner: _Custom, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    try:
        ba = inspect.signature(owner.fun).bind(*args, **kwargs)
    except TypeError:
        return {}
    ba.apply_defaults()
    return dict(ba.arguments)
