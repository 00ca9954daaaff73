"""Python's functional builtins written as the comprehensions and loops they are (issue #15), so derivatives,
batching and the lowering follow them like any other (jax traces them the same way: unrolled):

- ``map(f, xs, ys)`` (the builtin) -> ``[f(x, y) for x, y in zip(xs, ys)]``; a lambda's body is written in
  place, its parameters the comprehension's targets (``map(lambda a: a * w, xs)`` -> ``[a * w for a in xs]``:
  no nested function, which derivatives and vmap do not follow);
- ``functools.reduce(f, xs[, init])`` -> before the statement, ``reduced = init`` (``reduced = xs[0]``) and
  ``for item in xs: reduced = f(reduced, item)`` (over ``xs[1:]``), a lambda's body written in place with its
  parameters renamed to fresh names, ``operator.add`` & co. as their operators;
- ``np.ndindex(shape)`` -> ``list(np.ndindex(shape))`` (the index tuples, static: read again backwards by
  reverse mode);
- ``zip(*xs)`` (rows of ``xs``, which may be a list of tuples or an array) -> ``[tuple([r[j] for r in xs]) for j
  in range(min([len(r) for r in xs], default=0))]`` (Python's: tuples, as long as the shortest row);
- ``min(a, b, c)`` / ``min([a, b, c])`` (``max`` alike; the values written out) -> ``min(min(a, b), c)``;
  ``min(xs)`` of a list, tuple, comprehension or generator (not of sizes: ``min(x.shape)``) -> the loop
  ``functools.reduce(min, xs)`` is.

Each function returns None for a call it does not rewrite (the usual path then handles or refuses it).
"""

from __future__ import annotations

import builtins
import functools
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import libcst as cst
import numpy as np

from .names import code, walk

if TYPE_CHECKING:
    from .normalize import Normalizer

N = TypeVar("N", bound=cst.CSTNode)

__all__ = ["lazy_maps", "map_call", "ndindex_list", "reduce_call", "rewrite", "selection_pairs", "zip_rows"]

_OPERATORS: dict[object, type[cst.BaseBinaryOp]] = {
    operator.add: cst.Add, operator.sub: cst.Subtract, operator.mul: cst.Multiply, operator.truediv: cst.Divide,
    operator.floordiv: cst.FloorDivide, operator.mod: cst.Modulo, operator.pow: cst.Power,
    operator.matmul: cst.MatrixMultiply,
}


def _plain(args: list[cst.Arg]) -> bool:
    return not any(a.keyword is not None or a.star for a in args)


def _lambda_params(f: cst.BaseExpression, count: int) -> list[str] | None:
    """The parameter names of ``f``, a lambda taking ``count`` plain positional parameters (None: another)."""
    if not isinstance(f, cst.Lambda):
        return None
    ps = f.params
    if len(ps.params) != count or ps.posonly_params or ps.kwonly_params or ps.star_kwarg is not None or \
            isinstance(ps.star_arg, cst.Param) or any(p.default is not None for p in ps.params):
        return None
    return [p.name.value for p in ps.params]


def _applied(norm: Normalizer, f: cst.BaseExpression, args: list[cst.BaseExpression]) -> cst.BaseExpression:
    """``f(*args)`` spelled for the normalizer: ``a + b`` for ``operator.add``, else the call."""
    op = _OPERATORS.get(norm.static_value(f)[1]) if isinstance(f, (cst.Name, cst.Attribute)) else None
    if op is not None and len(args) == 2:
        return cst.BinaryOperation(left=args[0], operator=op(), right=args[1])
    return cst.Call(func=f, args=[cst.Arg(a) for a in args])


def _callable(norm: Normalizer, f: cst.BaseExpression) -> bool:
    """A function named by ``f``: a local name (a function the program holds), or a global that is callable."""
    if not isinstance(f, (cst.Name, cst.Attribute)):
        return False
    known, v = norm.static_value(f)
    return not known or callable(v)


def map_call(norm: Normalizer, call: cst.Call) -> cst.BaseExpression | None:
    """``map(f, *seqs)`` as a list comprehension (see the module docstring)."""
    if len(call.args) < 2 or not _plain(list(call.args)) or norm.static_value(call.func)[1] is not builtins.map:
        return None
    f, seqs = call.args[0].value, [a.value for a in call.args[1:]]
    params = _lambda_params(f, len(seqs))
    if params is not None:
        assert isinstance(f, cst.Lambda)
        targets = [cst.Name(p) for p in params]
        body: cst.BaseExpression = f.body.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    elif _callable(norm, f):
        targets = [cst.Name(norm.fresh("item")) for _ in seqs]
        body = _applied(norm, f, list(targets))
    else:
        return None
    it: cst.BaseExpression = seqs[0] if len(seqs) == 1 else \
        cst.Call(func=cst.Name("zip"), args=[cst.Arg(s) for s in seqs])
    target: cst.BaseAssignTargetExpression = targets[0] if len(targets) == 1 else \
        cst.Tuple([cst.Element(t) for t in targets], lpar=[], rpar=[])
    return cst.ListComp(elt=body, for_in=cst.CompFor(target=target, iter=it))


class _Rename(cst.CSTTransformer):
    """Names renamed (never an attribute's or a keyword's name)."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        new = self.names.get(original.value)
        return updated.with_changes(value=new) if new is not None else updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)


def _scoped(e: cst.BaseExpression) -> bool:
    """Whether ``e`` binds names of its own (a lambda, a comprehension): then renaming in it is not plain."""
    return any(type(n) in _SCOPES for n in walk(e))  # (read-only: libcst's visitor rebuilt every node)


_SCOPES = frozenset({cst.Lambda, cst.ListComp, cst.GeneratorExp, cst.DictComp, cst.SetComp})


def reduce_call(norm: Normalizer, call: cst.Call) -> cst.BaseExpression | None:
    """``functools.reduce(f, xs[, init])`` as statements emitted before the call's, the name of the reduced value
    returned (see the module docstring)."""
    if not 2 <= len(call.args) <= 3 or not _plain(list(call.args)) or \
            norm.static_value(call.func)[1] is not functools.reduce:
        return None
    f, seq = call.args[0].value, call.args[1].value
    params = _lambda_params(f, 2)
    if not (params is not None and not _scoped(f.body) or _callable(norm, f)):  # type: ignore[attr-defined]
        return None

    def body(acc: str, item: str) -> cst.BaseExpression:
        if params is None:
            return _applied(norm, f, [cst.Name(acc), cst.Name(item)])
        out = f.body.visit(_Rename(dict(zip(params, (acc, item)))))  # type: ignore[attr-defined]
        assert isinstance(out, cst.BaseExpression)
        return out

    init = call.args[2].value if len(call.args) == 3 else None
    return _fold(norm, call, seq, init, body, "reduce() of empty iterable with no initial value")


def _fold(norm: Normalizer, call: cst.Call, seq: cst.BaseExpression, init: cst.BaseExpression | None,
          body: Callable[[str, str], cst.BaseExpression], message: str, kept: str = "reduced",
          key: tuple[Callable[[str], cst.BaseExpression], type[cst.BaseCompOp]] | None = None) -> cst.Name:
    """``reduced = init`` (``reduced = items[0]`` after an ``assert`` that ``seq`` has items, ``message``) and ``for
    item in items: reduced = <body(reduced, item)>`` (over ``items[1:]``) emitted before the statement of ``call``;
    the name of the reduced value returned. ``key``: ``(f, op)`` of ``min(xs, key=f)`` (``op``: ``<``; ``max``'s
    ``>``): the step is ``item_key = f(item)`` and ``if item_key < reduced_key: reduced = item; reduced_key =
    item_key`` (Python's: the first of equal keys kept), a test on data where the keys are (a ``cond``)."""
    positions = norm.src.positions
    where = positions.get(call)

    def placed(node: N) -> N:
        if where is not None:
            positions[node] = where
        return node

    items = norm.atom(seq)
    if not isinstance(items, cst.Name):  # (read twice: a name)
        made = cst.Name(norm.fresh("items"))
        norm.assign(made, items, call)
        items = made
    acc = norm.fresh(kept)
    item = norm.fresh("item")
    if init is not None:
        norm.assign(cst.Name(acc), norm.flat(init)[0], call)
        over: cst.BaseExpression = items
    else:
        test = norm.atom(placed(cst.parse_expression(f"len({items.value}) > 0")))  # type: ignore[arg-type]
        norm.emit(cst.Assert(test=test, msg=cst.SimpleString(repr(message))), call)
        norm.assign(cst.Name(acc), norm.flat(placed(cst.parse_expression(f"{items.value}[0]")))[0], call)  # type: ignore[arg-type]
        over = cst.Name(norm.fresh("rest"))  # (a name: vmap batches the loop over a batched array's rows)
        norm.assign(over, norm.flat(placed(cst.parse_expression(f"{items.value}[1:]")))[0], call)
    if key is None:
        steps: list[cst.BaseStatement] = [_assigned(acc, placed(body(acc, item)))]
    else:
        f, op = key
        acc_key, item_key = norm.fresh(f"{kept}_key"), norm.fresh("item_key")
        norm.assign(cst.Name(acc_key), norm.flat(placed(f(acc)))[0], call)
        test = cst.Comparison(left=cst.Name(item_key), comparisons=[cst.ComparisonTarget(op(), cst.Name(acc_key))])
        steps = [_assigned(item_key, placed(f(item))), cst.If(test=placed(test), body=cst.IndentedBlock(body=[
            placed(_assigned(acc, cst.Name(item))), placed(_assigned(acc_key, cst.Name(item_key)))]))]
    loop = cst.For(target=cst.Name(item), iter=placed(over), body=cst.IndentedBlock(body=[placed(s) for s in steps]))
    norm.statement(placed(loop))
    return cst.Name(acc)


def _assigned(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=value)])


def zip_rows(norm: Normalizer, call: cst.Call) -> cst.BaseExpression | None:
    """``zip(*xs)`` (one starred argument, the builtin) as the comprehension of its rows (module docstring)."""
    if len(call.args) != 1 or call.args[0].star != "*" or call.args[0].keyword is not None or \
            norm.static_value(call.func)[1] is not builtins.zip:
        return None
    rows = norm.atom(call.args[0].value)
    if not isinstance(rows, cst.Name):
        made = cst.Name(norm.fresh("rows"))
        norm.assign(made, rows, call)
        rows = made
    r, j = norm.fresh("row"), norm.fresh("j")
    text = (f"[tuple([{r}[{j}] for {r} in {rows.value}]) for {j} in "
            f"range(min([len({r}) for {r} in {rows.value}], default=0))]")
    out = cst.parse_expression(text)
    if call in norm.src.positions:
        norm.src.positions[out] = norm.src.positions[call]
    return out



def lazy_maps(norm: Normalizer, node: cst.BaseExpression) -> cst.BaseExpression:
    """``node``, an expression kept nested (a generator's iterable, a ``while`` test), with its ``map(...)`` calls
    written as comprehensions (``sum(np.sum(a) for a in map(lambda t: t * x, xs))``: no lambda left in it)."""

    # (a transformer rebuilds the nodes, losing the user's positions: only where a map(...) is; and libcst's
    # read-only visitor rebuilt every node it passed: names.walk reads them)
    if not any(type(n) is cst.Call and type(n.func) is cst.Name and n.func.value == "map"  # type: ignore[attr-defined]
               for n in walk(node)):
        return node

    class Maps(cst.CSTTransformer):
        def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
            made = map_call(norm, updated)
            return updated if made is None else made

    out = node.visit(Maps())
    assert isinstance(out, cst.BaseExpression)
    return out


def ndindex_list(norm: Normalizer, call: cst.Call) -> cst.BaseExpression | None:
    """``np.ndindex(shape)`` (hunt24's local_maxima ``for pos in np.ndindex(data.shape)``) -> ``ndindex =
    np.ndindex(shape)`` before the statement, ``list(ndindex)`` in place: its index tuples (static, as the shape
    is) as a list, which the loop reads once and derivative code again, backwards (``reversed(...)``: an iterator
    would be used up)."""
    if any(a.star for a in call.args) or not norm.static_value(call.func) == (True, np.ndindex):
        return None
    args = [a.with_changes(value=norm.atom(a.value)) for a in call.args]
    name = cst.Name(norm.fresh("ndindex"))
    norm.assign(name, cst.Call(func=cst.parse_expression("np.ndindex"), args=args), call)
    return cst.Call(func=cst.Name("list"), args=[cst.Arg(name)])


def selection_pairs(norm: Normalizer, call: cst.Call) -> cst.BaseExpression | None:
    """``min(a, b, c)`` and ``min([a, b, c])`` (a list or tuple written out; ``max`` alike) -> ``min(min(a, b),
    c)``: Python's own order (the value kept is replaced by each next one that compares less), so each call compares
    two values, which derivatives follow (transforms/anf.py: the first of equal values) and the lowering selects.
    ``min(xs)`` of one iterable not written out (a list or tuple variable, a comprehension, a generator) -> the loop
    ``smallest = xs[0]; for item in xs[1:]: smallest = min(smallest, item)`` (:func:`_fold`; its length static, as
    jax's trace unrolls it); an iterable of sizes (``min(x.shape)``, ``max(len(r) for r in rows)``) is left as it is."""
    if norm.static_value(call.func)[1] not in (builtins.min, builtins.max):
        return None
    if not _plain(list(call.args)):
        return _keyed_selection(norm, call)
    values = [a.value for a in call.args]
    if len(values) == 1 and isinstance(values[0], (cst.List, cst.Tuple)) and \
            all(type(e) is cst.Element for e in values[0].elements):
        values = [e.value for e in values[0].elements]
    elif len(values) == 1 and not _sizes(norm, values[0]) and not _dict_bound(norm, values[0]):
        return _fold(norm, call, _listed(norm, values[0]), None, lambda acc, item: cst.Call(
            func=call.func, args=[cst.Arg(cst.Name(acc)), cst.Arg(cst.Name(item))]), *_selection_names(norm, call))
    elif len(values) < 3:
        return None
    if len(values) < 2:
        return None
    kept = values[0]
    for v in values[1:]:
        kept = cst.Call(func=call.func, args=[cst.Arg(kept), cst.Arg(v)])
    return kept


def _listed(norm: Normalizer, seq: cst.BaseExpression) -> cst.BaseExpression:
    """``seq``, the one iterable of ``min``/``max``, as a sequence ``xs[0]`` and ``xs[1:]`` read: a generator as a list
    (read twice); a view, an iterator or a name that may be a dict (a parameter: ``max(d)`` iterates its keys) as
    the list comprehension of its items."""
    if isinstance(seq, cst.GeneratorExp):
        return cst.ListComp(elt=seq.elt, for_in=seq.for_in)
    if _iterator(seq) or type(seq) is cst.Name and not _sequence_bound(norm, seq):
        return cst.parse_expression(f"[{(it := norm.fresh('item'))} for {it} in {code(seq)}]")
    return seq


def _selection_names(norm: Normalizer, call: cst.Call) -> tuple[str, str]:
    """Python's message for ``min()``/``max()`` of nothing, and the name of the value kept."""
    name = norm.static_value(call.func)[1].__name__
    return f"{name}() iterable argument is empty", "smallest" if name == "min" else "largest"


def _keyed_selection(norm: Normalizer, call: cst.Call) -> cst.BaseExpression | None:
    """``min(xs, key=f)`` / ``min(a, b, key=f)`` (``max`` alike; ``f`` a function or a one-parameter lambda) -> the
    loop of :func:`_fold` with a key: each item kept where its key compares less (greater) than the kept one's, a
    test on data where the keys are (was an internal error: Python's ``min`` comparing traced keys). Sizes, a dict's
    keys and a name this function does not bind to a list (a parameter) stay Python's."""
    keys = [a for a in call.args if a.keyword is not None]
    values = [a.value for a in call.args if a.keyword is None]
    if any(a.star for a in call.args) or len(keys) != 1 or keys[0].keyword.value != "key" or not values:  # type: ignore[union-attr]
        return None
    f = keys[0].value
    params = _lambda_params(f, 1)
    if not (params is not None and not _scoped(f.body) or _callable(norm, f)):  # type: ignore[attr-defined]
        return None
    if len(values) == 1 and (_sizes(norm, values[0]) or _dict_bound(norm, values[0]) or
                             type(values[0]) is cst.Name and not _sequence_bound(norm, values[0])):
        return None  # (a parameter may be a dict: `max(params, key=len)` compares its keys, Python's)
    seq = _listed(norm, values[0]) if len(values) == 1 else cst.List([cst.Element(v) for v in values])

    def keyed(item: str) -> cst.BaseExpression:
        if params is None:
            return _applied(norm, f, [cst.Name(item)])
        out = f.body.visit(_Rename({params[0]: item}))  # type: ignore[attr-defined]
        assert isinstance(out, cst.BaseExpression)
        return out

    message, kept = _selection_names(norm, call)
    return _fold(norm, call, seq, None, lambda acc, item: cst.Name(item), message, kept,
                 (keyed, cst.LessThan if kept == "smallest" else cst.GreaterThan))


_SIZE_ATTRIBUTES = frozenset({"shape", "ndim", "size"})


def _sizes(norm: Normalizer, seq: cst.BaseExpression) -> bool:
    """Whether ``seq`` is known here to hold sizes or other Python values known at transpile time (``x.shape``,
    ``range(n)``, ``[len(r) for r in rows]``, ``(w.shape[0] for w in ws)``, a module constant): its ``min``/``max``
    is Python's, left as it is."""
    if isinstance(seq, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
        seq = seq.elt
    elif type(seq) is cst.Call and type(seq.func) is cst.Name and seq.func.value == "range":  # type: ignore[attr-defined]
        return True
    while type(seq) is cst.Subscript:  # (w.shape[0])
        seq = seq.value  # type: ignore[attr-defined]
    if type(seq) is cst.Attribute and seq.attr.value in _SIZE_ATTRIBUTES:  # type: ignore[attr-defined]
        return True
    return type(seq) is cst.Call and type(seq.func) is cst.Name and seq.func.value == "len" or \
        norm.static_value(seq)[0]  # type: ignore[attr-defined]


_ITERATORS = frozenset({"zip", "reversed", "map", "filter", "enumerate", "iter", "set", "frozenset"})


def _iterator(seq: cst.BaseExpression) -> bool:
    """Whether ``seq`` is a view or an iterator (``d.values()``, ``zip(a, b)``, ``reversed(xs)``), which ``seq[0]``
    does not read: its items are listed first."""
    if type(seq) is cst.SetComp or type(seq) is cst.Set:
        return True
    if type(seq) is not cst.Call:
        return False
    f = seq.func  # type: ignore[attr-defined]
    return type(f) is cst.Attribute and f.attr.value in ("values", "keys", "items") or \
        type(f) is cst.Name and f.value in _ITERATORS


_ORDERED = frozenset({cst.List, cst.Tuple, cst.ListComp})


def _sequence_bound(norm: Normalizer, seq: cst.Name) -> bool:
    """Whether this function binds ``seq`` only to list or tuple displays or list comprehensions (``xs[0]`` reads
    its first item; a parameter may be a dict, whose items ``min`` iterates are its keys)."""
    values = [n.value for n in walk(norm.src.fdef) if type(n) is cst.Assign and  # type: ignore[attr-defined]
              any(type(t.target) is cst.Name and t.target.value == seq.value for t in n.targets)]  # type: ignore[attr-defined]
    return bool(values) and all(type(v) in _ORDERED for v in values) and \
        seq.value not in {p.name.value for p in norm.src.fdef.params.params}  # type: ignore[attr-defined]


_UNORDERED = frozenset({cst.Dict, cst.DictComp, cst.Set, cst.SetComp})


def _dict_bound(norm: Normalizer, seq: cst.BaseExpression) -> bool:
    """Whether ``seq`` is a name this function binds to a dict or a set (``d = {...}``, a comprehension, ``dict(...)``,
    ``set(...)``), which ``xs[0]`` does not read: ``max(d)`` compares its keys, known at transpile time (Python's, left
    as it is)."""
    if type(seq) is not cst.Name:
        return False
    return any(type(n) is cst.Assign and any(type(t.target) is cst.Name and t.target.value == seq.value  # type: ignore[attr-defined]
                                              for t in n.targets) and  # type: ignore[attr-defined]
               (type(n.value) in _UNORDERED or code(n.value).startswith(("dict(", "set(")))  # type: ignore[attr-defined]
               for n in walk(norm.src.fdef))


def rewrite(norm: Normalizer, call: cst.Call) -> cst.BaseExpression | None:
    """``call`` written as its comprehension or loop, if it is one of this module's builtins (None: it is not)."""
    return zip_rows(norm, call) or map_call(norm, call) or reduce_call(norm, call) or ndindex_list(norm, call) or \
        selection_pairs(norm, call)
