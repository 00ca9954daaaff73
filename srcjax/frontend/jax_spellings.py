"""JAX habits the normalizer writes in srcjax's terms: ``x.at[key].set(v)`` and the other ``.at``
updates become srcjax's functional updates (``srcjax.lax.index_update``, ``index_add``), so code
written for ``jax.numpy`` runs unchanged; ``srcjax.jvp(f, (x,), (t,))`` inside compiled code is a call
of the generated jvp, ``srcjax.vjp(f, x)`` the output and a nested function calling the generated vjp;
and the values an f-string in ``print`` formats become atoms.

``x.at[k].set(v)``       ->  ``srcjax.lax.index_update(x, k, v)``
``x.at[k].add(v)``       ->  ``index_add(x, k, v)`` (repeated indices accumulate, an index out of range
                            adds nothing, as in JAX), cast back to ``x``'s dtype
``x.at[k].multiply(v)``  ->  ``srcjax.lax.index_update(x, k, x[k] * v)`` (likewise ``divide``,
                            ``power``, ``min``, ``max``)
``x.at[k].get()``        ->  ``x[k]``

Records updated as JAX code updates its NamedTuple and dataclass parameters, as functional updates
of their fields (which derivatives and batching follow like ``out["w"] = v``):

``p._replace(w=v)``             ->  ``srcjax.lax.index_update(p, "w", v)`` (a NamedTuple's fields)
``dataclasses.replace(p, w=v)`` ->  the same, for a dataclass

``tree_map(f, p, g)`` (``srcjax.tree_util``'s, under any alias) as a list comprehension over the
leaves, which derivatives, batching and the lowering follow like any other (a lambda's body written
out, its parameters the comprehension's targets):

``tree_map(lambda a, b: a - lr * b, p, g)``  ->  ``srcjax.pytree.from_leaves(p, [a - lr * b for a, b in
zip(srcjax.tree_util.tree_leaves(p), srcjax.pytree.leaves_like(g, p))])``
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import libcst as cst
import numpy as np

from ..core import TranspileError
from . import closures
from .names import code
from .resolve import called, local_names, unwrap
from .syntax import dotted

if TYPE_CHECKING:
    from .normalize import Normalizer

__all__ = ["AT_METHODS", "at_parts", "flat_at", "flat_jvp", "flat_replace", "formatted_atoms", "lazy_at"]

# method -> how the selected elements combine with the value: an operator, a NumPy ufunc, or a
# special form ("set", "add", "get")
AT_METHODS: dict[str, type[cst.BaseBinaryOp] | np.ufunc | str] = {
    "set": "set", "add": "add", "get": "get", "multiply": cst.Multiply, "mul": cst.Multiply,
    "divide": cst.Divide, "power": cst.Power, "min": np.minimum, "max": np.maximum}
# keyword arguments of JAX's `.at[...]` methods that change nothing here
_IGNORED_KEYWORDS = frozenset({"indices_are_sorted", "unique_indices"})


def at_parts(call: cst.Call) -> tuple[cst.BaseExpression, cst.Subscript, str] | None:
    """``(x, x.at[key] subscript, method)`` when ``call`` is ``x.at[key].method(...)``; else None."""
    f = call.func
    if not (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Subscript)):
        return None
    at = f.value.value
    if not (isinstance(at, cst.Attribute) and at.attr.value == "at"):
        return None
    return at.value, f.value, f.attr.value


def _arguments(norm: Normalizer, call: cst.Call, method: str) -> cst.BaseExpression | None:
    """The update's value (None for ``get``), after checking the method and its keywords."""
    if method not in AT_METHODS:
        raise norm.unsupported(call.func, f"the update .at[...].{method}()",
                               "srcjax supports .at[...].set/add/multiply/divide/power/min/max/get")
    pos = [a.value for a in call.args if a.keyword is None]
    for a in call.args:
        if a.keyword is None or a.keyword.value in _IGNORED_KEYWORDS:
            continue
        if a.keyword.value == "mode" and isinstance(a.value, cst.SimpleString) and \
                a.value.evaluated_value in ("promise_in_bounds", "clip"):
            continue  # srcjax's indices are checked or clipped like NumPy's, never dropped
        raise norm.unsupported(a, f"the keyword {a.keyword.value}= of .at[...].{method}()",
                               "remove it: out-of-bounds indices are an error (static) or clipped")
    want = 0 if method == "get" else 1
    if len(pos) != want:
        raise norm.unsupported(call, f".at[...].{method}() with {len(pos)} positional arguments",
                               f"write x.at[i].{method}({'' if want == 0 else 'value'})")
    return pos[0] if pos else None


def _key(elems: list[cst.SubscriptElement]) -> cst.BaseExpression:
    """The run-time key of subscript elements: ``1:3`` -> ``slice(1, 3)``; several -> a tuple."""
    keys: list[cst.BaseExpression] = []
    for e in elems:
        s = e.slice
        if isinstance(s, cst.Index):
            keys.append(s.value)
        else:
            assert isinstance(s, cst.Slice)
            parts = [p if p is not None else cst.Name("None") for p in (s.lower, s.upper, s.step)]
            while len(parts) > 2 and isinstance(parts[-1], cst.Name) and parts[-1].value == "None":
                parts.pop()
            keys.append(cst.Call(func=cst.Name("slice"), args=[cst.Arg(p) for p in parts]))
    return keys[0] if len(keys) == 1 else cst.Tuple(elements=[cst.Element(k) for k in keys])


def _update(x: cst.BaseExpression, key: cst.BaseExpression, value: cst.BaseExpression) -> cst.Call:
    return cst.Call(func=dotted("srcjax.lax.index_update"), args=[cst.Arg(x), cst.Arg(key), cst.Arg(value)])


def _add(x: cst.BaseExpression, key: cst.BaseExpression, value: cst.BaseExpression) -> cst.Call:
    return cst.Call(func=cst.Name("index_add"), args=[cst.Arg(x), cst.Arg(key), cst.Arg(value)])


def _cast_like(v: cst.BaseExpression, x: cst.BaseExpression) -> cst.Call:
    return cst.Call(func=cst.Attribute(value=v, attr=cst.Name("astype")),
                    args=[cst.Arg(cst.Attribute(value=x, attr=cst.Name("dtype")))])


def flat_at(norm: Normalizer, call: cst.Call) -> tuple[cst.BaseExpression, str | None] | None:
    """``x.at[key].method(v)`` as flat statements (the result: one operation on atoms and a name
    hint); None when ``call`` is not such an update."""
    parts = at_parts(call)
    if parts is None:
        return None
    x, sub, method = parts
    value = _arguments(norm, call, method)
    base = norm.atom(x)
    elems = [norm.slice_element(e) for e in sub.slice]
    read = cst.Subscript(value=base, slice=elems)
    if method == "get":
        return read, "getitem"
    assert value is not None
    v = norm.atom(value)
    key = _key(elems)  # kept whole, as for `y[k] = v` (a key is static structure around atoms)
    how = AT_METHODS[method]
    if how == "set":
        return _update(base, key, v), "update"
    if how == "add":  # (one scatter-add: repeated indices accumulate, one out of range is dropped, as JAX's)
        added = cst.Name(norm.fresh("update"))
        norm.assign(added, _add(base, key, v), call)
        return norm.flat(_cast_like(added, base))[0], "update"
    from .. import composites  # (library code the normalizer calls into, as for np.isclose)

    # multiply/divide/power/min/max: repeated integer indices combine, as JAX's scatter_mul/min/max; an index out
    # of range writes nothing (srcjax/scatter_combine.py)
    name = norm.helper_call_name(composites.AT_COMBINE[method], call)
    return cst.Call(func=name, args=[cst.Arg(base), cst.Arg(norm.atom(key)), cst.Arg(v)]), "update"


def flat_transformed(norm: Normalizer, call: cst.Call) -> tuple[cst.BaseExpression, str | None] | None:
    """``srcjax.grad(h)`` read as a value, not called at once (``g = srcjax.grad(h) if flag else srcjax.grad(k)``,
    a branch of an ``if``): the generated function's name, as a name bound to it by its own statement reads
    (was: the transformation applied while compiling, to srcjax's normalized copy of ``h``: "cannot transform
    NormalizedFunction(...)" and 40 kB of its tree). Not one that takes the caller's locals or follows the call's
    arguments (a lifted lambda, a vmap of ``in_axes`` per call): those need the call."""
    made = norm.transformed(call)
    if made is None or norm.closure_args.get(id(unwrap(made))) or getattr(made, "_one_axis", None) is not None:
        return None
    return norm.helper_call_name(unwrap(made), call), None


def flat_replace(norm: Normalizer, call: cst.Call) -> tuple[cst.BaseExpression, str | None] | None:
    """``p._replace(w=v, ...)`` / ``dataclasses.replace(p, w=v, ...)`` as field updates (the result: one
    operation on atoms); None when ``call`` is neither."""
    import dataclasses

    func, args = call.func, list(call.args)
    if isinstance(func, cst.Attribute) and func.attr.value == "_replace":
        record = func.value
    elif args and args[0].keyword is None and norm.static_value(func)[1] is dataclasses.replace:
        record, args = args[0].value, args[1:]
    else:
        return None
    if not args or any(a.keyword is None or a.star for a in args):
        return None
    out = norm.atom(record)
    for a in args[:-1]:
        made = cst.Name(norm.fresh("replace"))
        norm.assign(made, _update(out, cst.SimpleString(repr(a.keyword.value)), norm.atom(a.value)), call)  # type: ignore[union-attr]
        out = made
    last = args[-1]
    return _update(out, cst.SimpleString(repr(last.keyword.value)), norm.atom(last.value)), "replace"  # type: ignore[union-attr]


def formatted_atoms(norm: Normalizer, node: cst.BaseExpression) -> cst.BaseExpression:
    """An f-string (``print(f"loss {np.sum(l):.3f}")``) with the values it formats computed into atoms
    first, like any other argument; anything else unchanged."""
    if not isinstance(node, cst.FormattedString):
        return node
    parts = [p.with_changes(expression=norm.atom(p.expression)) if isinstance(p, cst.FormattedStringExpression)
             else p for p in node.parts]
    return node.with_changes(parts=parts)


def lazy_at(norm: Normalizer, original: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
    """``x.at[key].method(v)`` kept as one nested expression (``updated``: its parts already
    rewritten); None when it is not such an update."""
    parts = at_parts(updated)
    if parts is None:
        return None
    x, sub, method = parts
    _arguments(norm, original, method)
    v = next((a.value for a in updated.args if a.keyword is None), None)
    read = cst.Subscript(value=x, slice=sub.slice)
    if method == "get":
        return read
    assert v is not None
    key = _key(list(sub.slice))
    how = AT_METHODS[method]
    if how == "set":
        return _update(x, key, v)
    if how == "add":
        return _cast_like(_add(x, key, v), x)
    if isinstance(how, np.ufunc):
        return _update(x, key, cst.Call(func=dotted(f"np.{how.__name__}"), args=[cst.Arg(read), cst.Arg(v)]))
    assert isinstance(how, type)
    return _update(x, key, cst.BinaryOperation(left=read, operator=how(), right=v))


def _inlined_function(res: Normalizer, f: cst.BaseExpression) -> tuple[Any, list[str]] | None:
    """The function ``srcjax.jvp``/``srcjax.vjp`` inside compiled code differentiates, and the locals it
    reads (passed after the primals): a lambda or def reading locals (lifted), a nested transformation, or
    a known function; None: not known while normalizing."""
    lifted = res.lifted(f)
    if lifted is not None:
        return lifted
    if isinstance(f, cst.Call) and (inner := res.transformed(f)) is not None:
        return inner, res.closure_args.get(id(unwrap(inner)), [])
    known, fn = res.constant(f)
    return (fn, []) if known else None


def flat_jvp(res: Normalizer, call: cst.Call) -> tuple[cst.BaseExpression, str | None] | None:
    """``srcjax.jvp(f, (x, ...), (t, ...))`` inside compiled code (a Hessian-vector product:
    ``srcjax.jvp(srcjax.grad(f), (x,), (v,))``): a call of the generated jvp of ``f`` (a function
    name, a nested transformation, or a lambda or def reading locals) on the primals, the locals, then
    the tangents. None: not such a call."""
    try:
        ok, fv = res.static_value(call.func)
    except TranspileError:
        return None
    inline = getattr(fv, "__srcjax_inline_jvp__", None) if ok else None
    has_aux, positional = _has_aux(res, call)
    if inline is None or has_aux is None or len(positional) != 3 or any(a.keyword is not None or a.star
                                                                          for a in positional):
        return None
    f, primals, tangents = (a.value for a in positional)
    if not isinstance(primals, (cst.Tuple, cst.List)) or not isinstance(tangents, (cst.Tuple, cst.List)) or \
            len(primals.elements) != len(tangents.elements):
        return None
    target = _inlined_function(res, f)
    if target is None:
        return None
    fn, extra = target
    made = inline(fn, len(primals.elements), has_aux)  # (with has_aux: the jvp of the first of f's pair)
    name = res.helper_call_name(unwrap(made), call)
    atoms = [cst.Arg(res.atom(e.value)) for e in primals.elements] + _defaults(res, call, fn, len(primals.elements)) + \
        [cst.Arg(cst.Name(n)) for n in extra]
    args = atoms + [cst.Arg(res.atom(e.value)) for e in tangents.elements]  # type: ignore[attr-defined]
    if not has_aux:
        return cst.Call(func=name, args=args), "jvp"
    # (out, tangent_out, aux): the jvp of f's output, and aux from a call of f (its literal pair's second)
    pair, whole = cst.Name(res.fresh("jvp_out")), cst.Name(res.fresh("out"))
    res.assign(pair, cst.Call(func=name, args=args), call)
    res.assign(whole, cst.Call(func=res.helper_call_name(called(fn), call), args=atoms), call)
    parts = [_named(res, _item(pair, 0), "out", call), _named(res, _item(pair, 1), "out_dot", call),
             _named(res, _item(whole, 1), "aux", call)]
    return cst.Tuple([cst.Element(p) for p in parts]), None


def _defaults(res: Normalizer, call: cst.Call, fn: Any, n: int, what: str = "jvp") -> list[cst.Arg]:
    """The default values of ``fn``'s positional parameters after its first ``n`` (``def f(x, tau=0.3)`` under
    ``srcjax.jvp(f, (x,), (t,))``, ``what``: "jvp"; ``srcjax.vjp(f, x)``: "vjp"): its generated jvp (vjp) takes
    every parameter, then the tangents (the cotangent): a call with the primals and tangents only bound the first
    tangent to ``tau``, "missing a required argument: 'x_dot'".
    Numbers, strings, booleans and None, and tuples, lists and dicts of them (``taps=(0.25, 0.5, 0.25)``),
    written as literals; [] where there are none. Another default (an array) is refused at the call: the
    generated code cannot spell it."""
    import inspect

    f = unwrap(fn)
    if not inspect.isfunction(f):
        return []
    params = [p for p in inspect.signature(f).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][n:]
    if not params or any(p.default is p.empty for p in params):
        return []
    for p in params:
        if not _spelled(p.default):
            spelled = "(x,), (t,)" if what == "jvp" else "x"
            raise res.unsupported(call, f"srcjax.{what} of {f.__name__}, whose parameter `{p.name}` keeps its "
                                        f"default ({type(p.default).__name__}), inside compiled code",
                                  f"pass it: srcjax.{what}(lambda x: {f.__name__}(x, {p.name}), {spelled})")
    return [cst.Arg(cst.parse_expression(repr(p.default))) for p in params]


def _spelled(v: Any) -> bool:
    """Whether ``repr(v)`` is a literal that reads back as ``v``: a number, string, bool or None, or a tuple, list
    or dict of them."""
    if v is None or type(v) in (int, float, str, bool):
        return type(v) is not float or np.isfinite(v)
    if type(v) in (tuple, list):
        return all(_spelled(x) for x in v)
    if type(v) is dict:
        return all(_spelled(k) and _spelled(x) for k, x in v.items())
    return False


def _item(v: cst.Name, i: int) -> cst.Subscript:
    return cst.Subscript(value=v, slice=[cst.SubscriptElement(cst.Index(cst.Integer(str(i))))])


def _named(res: Normalizer, value: cst.BaseExpression, stem: str, origin: cst.CSTNode) -> cst.Name:
    """``value`` assigned to a fresh name (a tuple the normalizer emits holds atoms: derivatives read them
    as names; a subscript in it had no derivative, a silent zero)."""
    name = cst.Name(res.fresh(stem))
    res.assign(name, value, origin)
    return name


def _has_aux(res: Normalizer, call: cst.Call) -> tuple[bool | None, list[cst.Arg]]:
    """(``has_aux=`` of ``call``, a static bool, False where absent; None: another keyword or a value
    not known; the other arguments)."""
    rest = [a for a in call.args if a.keyword is None or a.keyword.value != "has_aux"]
    given = [a for a in call.args if a.keyword is not None and a.keyword.value == "has_aux"]
    if not given:
        return False, rest
    known, v = res.constant(given[0].value)
    return (v if known and isinstance(v, bool) else None), rest


def _max_iters(res: Normalizer, args: list[cst.Arg]) -> tuple[int | None | bool, list[cst.Arg]]:
    """(``max_iters=`` among ``args``, a static positive int, None where absent; False: a value not known or
    not such an int, left to the call's own check; the other arguments)."""
    rest = [a for a in args if a.keyword is None or a.keyword.value != "max_iters"]
    given = [a for a in args if a.keyword is not None and a.keyword.value == "max_iters"]
    if not given:
        return None, rest
    known, v = res.constant(given[0].value)
    ok = known and isinstance(v, int) and not isinstance(v, bool) and v >= 1
    return (v if ok else False), rest


def vjp_targets(target: cst.BaseAssignTargetExpression) -> tuple[str, ...] | None:
    """``y, vjp_fn`` (two names; ``y, vjp_fn, aux`` with ``has_aux``) as the target of ``srcjax.vjp(...)``:
    the names :func:`flat_vjp` binds."""
    if target.__class__ in (cst.Tuple, cst.List) and len(target.elements) in (2, 3) and \
            all(e.__class__ is cst.Element and e.value.__class__ is cst.Name for e in target.elements):
        return tuple(e.value.value for e in target.elements)  # type: ignore[attr-defined]
    return None


def flat_vjp(res: Normalizer, call: cst.Call,
             into: tuple[str, ...] | None = None) -> tuple[cst.BaseExpression, str | None] | None:
    """``srcjax.vjp(f, x, ...)`` inside compiled code: the pair of ``f``'s output (a call of ``f``) and a
    nested function of the cotangent calling the generated vjp of ``f`` (``f`` a function name, a nested
    transformation, or a lambda or def reading locals) on the primals, the locals, then the cotangent:
    ``def vjp_fn(ct): return f_vjp(x, ct)[1]`` (JAX's ``vjp_fn``: one cotangent per primal). None: not
    such a call. ``into``: the statement ``y, vjp_fn = srcjax.vjp(...)`` binds these two names (the nested
    function is ``vjp_fn`` itself: calls of it are calls of a function vmap and derivatives can follow).
    ``has_aux=True``: ``y, vjp_fn, aux``, the vjp of the first of ``f``'s literal pair; ``max_iters=N`` (a static
    int) as in ``srcjax.vjp``."""
    try:
        ok, fv = res.static_value(call.func)
    except TranspileError:
        return None
    inline = getattr(fv, "__srcjax_inline_vjp__", None) if ok else None
    has_aux, with_max = _has_aux(res, call)
    max_iters, positional = _max_iters(res, with_max)
    if inline is None or has_aux is None or max_iters is False or len(positional) < 2 or \
            any(a.keyword is not None or a.star for a in positional) or \
            (into is not None and len(into) != (3 if has_aux else 2)):
        return None
    f, primals = positional[0].value, [a.value for a in positional[1:]]
    target = _inlined_function(res, f)
    if target is None or not callable(target[0]):
        return None
    fn, extra = target
    made = inline(fn, len(primals), has_aux, max_iters)  # (with has_aux: the vjp of the first of f's pair)
    atoms = [cst.Arg(res.atom(p)) for p in primals] + _defaults(res, call, fn, len(primals), "vjp") + \
        [cst.Arg(cst.Name(n)) for n in extra]
    primal = cst.Call(func=res.helper_call_name(called(fn), call), args=atoms)
    # (emitted as it is: its arguments are atoms already, and its callee a name normalizing would not find
    # again, a lambda lifted to a nested function)
    out = cst.Name(into[0] if into is not None else res.fresh("out"))
    aux: cst.BaseExpression | None = None
    if has_aux:  # f's pair: out its first, aux its second
        whole = cst.Name(res.fresh("pair"))
        res.assign(whole, primal, call)
        res.assign(out, _item(whole, 0), call)
        if into is not None:
            res.assign(cst.Name(into[2]), _item(whole, 1), call)
        else:
            aux = _named(res, _item(whole, 1), "aux", call)
    else:
        res.assign(out, primal, call)
    derived = res.fresh(f"{getattr(unwrap(made), '__name__', 'vjp')}")
    res.bindings[derived] = made  # (the nested function calls the generated vjp through this name)
    ct = res.fresh("ct")
    lam = cst.Lambda(params=cst.Parameters(params=[cst.Param(cst.Name(ct))]), body=cst.Subscript(
        value=cst.Call(func=cst.Name(derived), args=[*atoms, cst.Arg(cst.Name(ct))]),
        slice=[cst.SubscriptElement(cst.Index(cst.Integer("1")))]))
    pull = res.lambda_function(lam, into[1] if into is not None else res.fresh("vjp_fn"))
    if into is not None:  # (`srcjax.vmap(vjp_fn)(cts)`, the cookbook's Jacobian by rows: lifted from this def)
        res.made_defs[pull] = (cst.FunctionDef(name=cst.Name(pull), params=lam.params, body=cst.IndentedBlock(
            body=[cst.SimpleStatementLine(body=[cst.Return(value=lam.body)])])), {derived: made})
        return out, None
    parts = [out, cst.Name(pull)] + ([aux] if aux is not None else [])
    return cst.Tuple([cst.Element(p) for p in parts]), "vjp"


def tree_map_call(norm: Normalizer, call: cst.Call) -> cst.BaseExpression | None:
    """``srcjax.tree_util.tree_map(f, t, *rest)`` (no ``is_leaf``) with ``f`` a lambda of one parameter
    per tree, or a function's name, as ``from_leaves(t, [f(a, b, ...) for a, b, ... in zip(leaves)])``
    (see the module docstring); None for anything else."""
    from .. import tree_util

    if norm.static_value(call.func)[1] is not tree_util.tree_map or len(call.args) < 2 or \
            any(a.keyword is not None or a.star for a in call.args):
        return None
    f, trees = call.args[0].value, [a.value for a in call.args[1:]]
    if isinstance(f, cst.Lambda):
        ps = f.params
        if len(ps.params) != len(trees) or ps.posonly_params or ps.kwonly_params or ps.star_kwarg is not None or \
                isinstance(ps.star_arg, cst.Param) or any(p.default is not None for p in ps.params):
            return None
        targets = [cst.Name(p.name.value) for p in ps.params]
        body: cst.BaseExpression = f.body.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    elif isinstance(f, (cst.Name, cst.Attribute)) and not norm.static_value(f)[0] or \
            isinstance(f, (cst.Name, cst.Attribute)) and callable(norm.static_value(f)[1]):
        targets = [cst.Name(norm.fresh("leaf")) for _ in trees]
        body = cst.Call(func=f, args=[cst.Arg(t) for t in targets])
    else:
        return None
    names: list[cst.BaseExpression] = []
    for t in trees:
        a = norm.atom(t)
        if not isinstance(a, cst.Name):
            made = cst.Name(norm.fresh("tree"))
            norm.assign(made, a, call)
            a = made
        names.append(a)
    first = names[0]
    leaves = [cst.Call(func=dotted("srcjax.tree_util.tree_leaves"), args=[cst.Arg(first)])] + \
        [cst.Call(func=dotted("srcjax.pytree.leaves_like"), args=[cst.Arg(t), cst.Arg(first)]) for t in names[1:]]
    it: cst.BaseExpression = leaves[0] if len(leaves) == 1 else \
        cst.Call(func=cst.Name("zip"), args=[cst.Arg(v) for v in leaves])
    target: cst.BaseAssignTargetExpression = targets[0] if len(targets) == 1 else \
        cst.Tuple([cst.Element(t) for t in targets], lpar=[], rpar=[])
    comp = cst.ListComp(elt=body, for_in=cst.CompFor(target=target, iter=it))
    return cst.Call(func=dotted("srcjax.pytree.from_leaves"), args=[cst.Arg(first), cst.Arg(comp)])


def lax_map_call(norm: Normalizer, call: cst.Call) -> cst.BaseExpression | None:
    """``srcjax.lax.map(f, xs)`` (JAX's ``lax.map``: ``f`` of each leading slice of ``xs``, the results
    stacked; ``batch_size`` changes no value) as the ``scan`` it is: ``srcjax.lax.scan(lambda carry, item:
    (carry, f(item)), 0, xs)[1]`` (a lambda of one parameter: its body, that parameter the item); None
    for anything else."""
    from .. import lax

    if norm.static_value(call.func)[1] is not lax.map or any(a.star for a in call.args):
        return None
    given = dict(zip(("f", "xs"), (a.value for a in call.args if a.keyword is None)))
    given.update({a.keyword.value: a.value for a in call.args if a.keyword is not None})
    f, xs = given.get("f"), given.get("xs")
    if f is None or xs is None or set(given) - {"f", "xs", "batch_size"}:
        return None
    carry = norm.fresh("carry")  # (names of this function's: the nested def the lambda becomes reads them)
    ps = f.params if isinstance(f, cst.Lambda) else None
    if isinstance(f, cst.Lambda) and ps is not None and len(ps.params) == 1 and ps.params[0].default is None and \
            not ps.kwonly_params and not ps.posonly_params and not isinstance(ps.star_arg, cst.Param) and \
            ps.star_kwarg is None:
        item, body = ps.params[0].name.value, f.body
    else:
        item = norm.fresh("item")
        body = cst.Call(func=f, args=[cst.Arg(cst.Name(item))])
    step = cst.Lambda(params=cst.Parameters(params=[cst.Param(cst.Name(carry)), cst.Param(cst.Name(item))]),
                      body=cst.Tuple([cst.Element(cst.Name(carry)), cst.Element(body)]))
    scan = cst.Call(func=dotted("srcjax.lax.scan"), args=[cst.Arg(step), cst.Arg(cst.Integer("0")), cst.Arg(xs)])
    return cst.Subscript(value=scan, slice=[cst.SubscriptElement(cst.Index(cst.Integer("1")))])


_MONOID_NAMES = {"add": "srcjax.lax.add", "mul": "srcjax.lax.mul", "max": "srcjax.lax.max", "min": "srcjax.lax.min"}


def reduce_window_call(norm: Normalizer, call: cst.Call) -> cst.Call | None:
    """``srcjax.lax.reduce_window(x, init, lambda a, b: a + b, ...)`` (and ``associative_scan(lambda a, b: a + b,
    x)``, ``lax.reduce``) with the lambda named as the monoid it computes (``srcjax.lax.add``), so derivatives and
    batching see a reduction and no function (a lambda passed into srcjax's Python is a local function derivatives
    refused inside srcjax's source); another lambda of ``associative_scan`` or ``reduce`` reading none of the
    caller's locals as a helper (``associative_scan(lambda a, b: a * 0.5 + b, x)``: differentiated like a
    module-level function); None for anything else."""
    from .. import lax_reduce, windows

    callee = norm.static_value(call.func)[1]
    takes = {windows.reduce_window: ("computation", 2), lax_reduce.associative_scan: ("fn", 0),
             lax_reduce.reduce: ("computation", 2)}
    if not any(callee is f for f in takes):
        return None
    keyword, position = next(v for f, v in takes.items() if callee is f)
    args = list(call.args)
    at = next((i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == keyword), None)
    if at is None:
        at = position if len(args) > position and all(a.keyword is None and not a.star
                                                      for a in args[:position + 1]) else None
    lam = args[at].value if at is not None else None
    if at is None or not isinstance(lam, cst.Lambda):
        return None
    ps = lam.params
    if ps.posonly_params or ps.kwonly_params or ps.star_kwarg is not None or isinstance(ps.star_arg, cst.Param) or \
            any(p.default is not None for p in ps.params):
        return None
    kind = windows.monoid_of({p.name.value for p in ps.params}, lam.body)
    if kind is None and callee is not windows.reduce_window:
        # (any other combination: a helper, as a module-level function is)
        lifted = closures.lift_lambda(norm, lam, local_names)
        if lifted is None or lifted[1]:  # (one reading the caller's locals stays a local function)
            return None
        name = norm.fresh("lambda_fn")
        norm.bindings[name] = lifted[0]  # (read as a function-valued name fixed to it)
        args[at] = args[at].with_changes(value=cst.Name(name))
        return call.with_changes(args=args)
    if kind is None:
        return None
    args[at] = args[at].with_changes(value=dotted(_MONOID_NAMES[kind]))
    return call.with_changes(args=args)


_CONTROL = ("cond", "switch", "fori_loop", "while_loop", "scan")


def lax_control_call(norm: Normalizer, call: cst.Call) -> cst.Call | None:
    """A call of ``srcjax.lax.cond/switch/fori_loop/while_loop/scan`` by another spelling (``lax.scan``
    after ``from srcjax import lax``, ``fl`` after ``from srcjax.lax import fori_loop as fl``) spelled
    ``srcjax.lax.<name>``, as the front end writes them: the transforms know them by that name and the
    printed module imports ``srcjax`` for it (it had no import of ``lax``); None for anything else."""
    from .. import lax

    fv = norm.static_value(call.func)[1]
    kind = next((k for k in _CONTROL if fv is getattr(lax, k)), None)
    if kind is None or isinstance(call.func, cst.Attribute) and code(call.func) == f"srcjax.lax.{kind}":
        return None
    return call.with_changes(func=dotted(f"srcjax.lax.{kind}"))
