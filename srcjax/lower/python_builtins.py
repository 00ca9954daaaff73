"""Python's builtins and operators as the specializer runs them, on static and dynamic values.

A static operand is computed right here, as Python would. Builtins with array-aware behaviour have a
rule (:data:`BUILTIN_RULES`): ``len`` and ``np.shape`` read the abstract value, ``abs``/``round``/
``sum`` apply primitives, ``zip``/``enumerate``/``list`` iterate an array row by row, ``map``/
``sorted``/``pytree.tree_map`` call (trace) a function per item, ``min``/``max``/``int``/... need
static values. :func:`accepts_dynamic` names the callables that only move values around.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import pytree, tree_util
from ..core import ArgumentError, DTypeError, NeedStatic, ShapeError, StaticValueError
from ..primitives import registry
from .hlo import HloValue
from .host_print import lower_print
from .values import contains_dynamic, is_dynamic

if TYPE_CHECKING:  # annotations only: the specializer imports this module, not the other way round
    from .specialize import Specializer


BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "Add": operator.add, "Subtract": operator.sub, "Multiply": operator.mul, "Divide": operator.truediv,
    "FloorDivide": operator.floordiv, "Modulo": operator.mod, "Power": operator.pow,
    "MatrixMultiply": operator.matmul, "BitAnd": operator.and_, "BitOr": operator.or_,
    "BitXor": operator.xor, "LeftShift": operator.lshift, "RightShift": operator.rshift,
}
CMPOPS: dict[str, Callable[[Any, Any], Any]] = {
    "LessThan": operator.lt, "LessThanEqual": operator.le, "GreaterThan": operator.gt,
    "GreaterThanEqual": operator.ge, "Equal": operator.eq, "NotEqual": operator.ne,
    "Is": operator.is_, "IsNot": operator.is_not,
    "In": lambda a, b: a in b, "NotIn": lambda a, b: a not in b,
}
UNOPS: dict[str, Callable[[Any], Any]] = {
    "Minus": operator.neg, "Plus": operator.pos, "BitInvert": operator.invert, "Not": operator.not_,
}


CONTAINER_BUILTINS = {tuple, list, dict, enumerate, zip, reversed, isinstance, len, type, map,
                       pytree.is_tree, pytree.by_leaves, pytree.tree_get, pytree.tree_set, pytree.tree_like,
                       pytree.tree_has, pytree.tree_without, pytree.item_keys, pytree.from_leaves, pytree.leaves_like,
                       tree_util.tree_leaves, tree_util.tree_flatten, tree_util.tree_unflatten,
                       tree_util.tree_structure}


def accepts_dynamic(fv: Any) -> bool:
    """Callables that only move values around (containers, bound methods of static objects)."""
    if fv in CONTAINER_BUILTINS:
        return True
    if isinstance(fv, type) and issubclass(fv, tuple) and hasattr(fv, "_fields"):  # a NamedTuple class
        return True
    if isinstance(fv, type) and fv in pytree.REGISTERED:  # a class registered as a container: its __init__ runs
        return True
    if isinstance(fv, type) and _plain_dataclass(fv):  # its generated __init__ only stores the fields
        return True
    self_obj = getattr(fv, "__self__", None)
    return isinstance(self_obj, (list, dict, tuple))


def _plain_dataclass(cls: type) -> bool:
    """A dataclass whose ``__init__`` is the one ``dataclasses`` wrote (no ``__post_init__``)."""
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__"):
        return False
    init = cls.__dict__.get("__init__")
    code = getattr(init, "__code__", None)
    return code is not None and code.co_filename == "<string>" and all(f.init for f in dataclasses.fields(cls))


def _b_len(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    (x,) = args
    if is_dynamic(x):
        if x.ndim == 0:
            raise ShapeError("len() of a 0-d array")
        return x.shape[0]
    return len(x)


def _b_range(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    for a in args:
        sp.need_static(a, "a range() bound")
    try:
        return range(*[operator.index(a) for a in args])
    except TypeError as e:
        raise StaticValueError(f"range(): {e}") from None


def _b_abs(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    (x,) = args
    if is_dynamic(x):
        out = sp.apply(registry.PRIMITIVES["absolute"], [x], {})
        if x.aval.weak_type and x.dtype.kind != "c" and not out.aval.weak_type:
            # (Python's abs of a Python number is one, weakly typed as jax's abs keeps it; NumPy's is a
            # NumPy scalar: ``x32 * abs(s)`` stays float32 for a float ``s``)
            return type(out)(out.name, out.aval.update(weak_type=True))
        return out
    return abs(x)


def _b_round(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if args and is_dynamic(args[0]):
        return sp.apply(registry.PRIMITIVES["round"], args, kwargs)
    return round(*args, **kwargs)


def _b_sum(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    items = sp.iterate(args[0])
    acc = args[1] if len(args) > 1 else kwargs.get("start", 0)
    for it in items:
        acc = sp.binop("Add", acc, it)
    return acc


def _selected(sp: Specializer, fn: Callable[..., Any], args: list[Any]) -> Any:
    """Python's ``max(a, b, ...)`` (``min``) of single values, some known only at run time (nussinov's
    ``max(table[i, j], table[i, j - 1])``): each next value where it compares greater (less) than the one kept,
    else the one kept (``np.where(b > a, b, a)``: the first of equal values, and a NaN kept or skipped as Python's
    comparisons do). jax refuses it (a traced value's truth)."""
    where = registry.lookup(np.where)
    assert where is not None
    kept = args[0]
    for b in args[1:]:
        if type(kept) is not HloValue and type(b) is not HloValue:
            kept = fn(kept, b)
            continue
        test = sp.apply(registry.PRIMITIVES["greater" if fn is max else "less"], [b, kept],
                        {}, operator=True)
        kept = sp.apply(where, [test, b, kept], {})
    return kept


def _b_minmax(fn: Callable[..., Any]) -> Callable[[Specializer, list[Any], dict[str, Any]], Any]:
    def rule(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
        # (one dict: its keys are compared, static whatever its values: `max(params, key=len)`)
        compared = [list(args[0])] if len(args) == 1 and isinstance(args[0], dict) else args
        if contains_dynamic(compared) and "key" not in kwargs:  # (a key may be static: `key=len`; below)
            leaves = [v for v in pytree.flatten(compared)[0] if is_dynamic(v)]
            origin = frozenset().union(*(v.aval.origin for v in leaves))
            if origin:  # `min(progress, 1.0)` of a rolled loop's counter (or a Python int argument): static
                raise NeedStatic(origin)
            if len(args) >= 2 and not kwargs and all(np.ndim(a) == 0 if type(a) is not HloValue else a.aval.ndim == 0
                                                     for a in args):
                return _selected(sp, fn, args)
            several = len(args) >= 2 and any(np.ndim(a) > 0 if type(a) is not HloValue else a.aval.ndim > 0
                                             for a in args)
            raise StaticValueError(
                f"the builtin {fn.__name__}() compares values known only at run time" + (
                    " (arrays of several elements: NumPy refuses their truth value too)" if several else ""),
                hint=f"use np.{'maximum' if fn is max else 'minimum'}(a, b) or np.{fn.__name__}(x); several arrays: "
                     f"np.{fn.__name__}(np.stack([...]), axis=0)")
        try:
            return fn(*args, **kwargs)
        except TypeError as e:  # (a key computed from data, `key=np.sum` of a call the front end left: fix50)
            if "HloValue" not in str(e):
                raise
            raise StaticValueError(f"the builtin {fn.__name__}() compares keys known only at run time here",
                                   hint=f"write {fn.__name__}(xs, key=f) with key= alone (no default=), of a list, "
                                        f"a comprehension or d.values() (a parameter's items: {fn.__name__}(list(xs), "
                                        "key=f))") from None

    return rule


def _b_concrete(fn: type) -> Callable[[Specializer, list[Any], dict[str, Any]], Any]:
    def rule(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if args and is_dynamic(args[0]):
            sp.need_static(args[0], f"{fn.__name__}(...)")
        return fn(*args, **kwargs)

    return rule


def _b_number(fn: type) -> Callable[[Specializer, list[Any], dict[str, Any]], Any]:
    """``float(x)`` / ``int(x)`` of a one-element array computed from data: a Python number *as data*
    (weakly typed, as Python numbers are; ``int`` truncates toward zero). A Python int argument that
    may be static instead makes the function specialize on it, as before; used where a static value
    is needed (a shape, a range bound), the number is refused there."""
    concrete = _b_concrete(fn)

    def rule(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if len(args) != 1 or kwargs or not is_dynamic(args[0]) or args[0].aval.origin:
            return concrete(sp, args, kwargs)
        x = args[0]
        assert sp.b is not None
        if int(np.prod(x.shape)) != 1:
            raise ShapeError(f"{fn.__name__}() of an array of shape {x.shape}: only one-element arrays convert to "
                             "a Python number", hint="index one element first (x[0]), or reduce (np.sum(x))")
        if x.shape:
            x = sp.b.reshape(x, ())
        out = sp.b.convert(x, np.dtype(np.float64 if fn is float else np.int64))
        return type(out)(out.name, out.aval.update(weak_type=True))

    return rule


def _b_isinstance(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """An array stands for an ``np.ndarray`` in the user's NumPy program; a 0-d result may also be a
    NumPy scalar there, so asking about it is refused rather than answered wrongly."""
    x, cls = args
    if not is_dynamic(x):
        return isinstance(x, cls)
    if x.ndim == 0 and x.aval.weak_type:  # a Python number argument (or arithmetic on them): its type is known
        return isinstance({"b": False, "i": 0, "u": 0, "f": 0.0}[x.aval.dtype.kind], cls)
    if x.ndim == 0:
        as_array, as_scalar = issubclass(np.ndarray, cls), issubclass(x.aval.dtype.type, cls)
        if as_array == as_scalar:  # e.g. isinstance(x, (tuple, list, dict)): False either way
            return as_array
        if x.aval.origin:  # a Python int/bool argument: make it static and ask again
            raise NeedStatic(x.aval.origin)
        raise StaticValueError(f"isinstance() of a 0-d array ({x.aval.str_short()}) is not decided: NumPy "
                               "may hold it as a scalar or as an array",
                               hint="test x.ndim or x.shape instead")
    return issubclass(np.ndarray, cls)


def _b_iterating(fn: Callable[..., Any]) -> Callable[[Specializer, list[Any], dict[str, Any]], Any]:
    """``zip``/``enumerate``/``list``/...: a dynamic array argument is iterated row by row (unrolled)."""

    def rule(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if fn is reversed and len(args) == 1 and isinstance(args[0], range):
            return args[0][::-1]  # still a range: a loop over it can be rolled
        n_iterables = len(args) if fn is zip else 1
        args = [sp.iterate(a) if i < n_iterables and is_dynamic(a) else a for i, a in enumerate(args)]
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            raise StaticValueError(f"{fn.__name__}(): {e}") from None

    return rule


def _b_tree_map(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``pytree.tree_map`` run here: the structure is static, ``f`` is called (traced) per leaf."""
    f, *trees = args
    try:
        return pytree.tree_map(lambda *leaves: sp.call_value(f, list(leaves), {}), *trees)
    except pytree.TreeMismatch as e:
        raise ArgumentError(f"container structures do not match: {e}") from None


def _b_util_tree_map(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``srcjax.tree_util.tree_map`` run here: ``f`` is called (traced) per leaf."""
    f, *trees = args
    is_leaf = kwargs.get("is_leaf")
    if is_leaf is not None:  # (a function of the program: called here on the structure's static nodes)
        def static_test(v: Any) -> bool:
            out = sp.call_value(is_leaf, [v], {})
            if not isinstance(out, (bool, np.bool_)):
                raise ArgumentError("tree_map: is_leaf must give a Python bool for each node (it decides the "
                                    "structure, which is static)")
            return bool(out)
        kwargs = {**kwargs, "is_leaf": static_test}
    try:
        return tree_util.tree_map(lambda *leaves: sp.call_value(f, list(leaves), {}), *trees, **kwargs)
    except ValueError as e:
        raise ArgumentError(str(e)) from None


def _b_util_tree_reduce(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    f, *rest = args
    return tree_util.tree_reduce(lambda a, b: sp.call_value(f, [a, b], {}), *rest, **kwargs)


def _b_map(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``map(f, xs, ...)``: ``f`` called (traced) per item, eagerly (the items are static in number)."""
    if len(args) < 2 or kwargs:
        raise StaticValueError("map() takes a function and at least one iterable")
    f, *seqs = args
    seqs = [sp.iterate(a) if is_dynamic(a) else a for a in seqs]
    return iter([sp.call_value(f, list(items), {}) for items in zip(*seqs)])


def _b_sorted(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``sorted(xs, key=f)``: ``f`` called (traced) per item; its results must be static to order by."""
    key = kwargs.pop("key", None)
    (seq,) = args
    items = list(sp.iterate(seq) if is_dynamic(seq) else seq)
    if key is None:
        keys = items
    else:
        keys = [sp.call_value(key, [v], {}) for v in items]
    if any(is_dynamic(k) for k in keys):
        raise StaticValueError("sorted() orders by values known at transpile time, but the key is array data",
                               hint="sort by a shape or a static value, or use np.sort/np.argsort on one array")
    order = sorted(range(len(items)), key=lambda i: keys[i], reverse=bool(kwargs.pop("reverse", False)))
    return [items[i] for i in order]


def _aval_dummy(v: Any) -> Any:
    """A NumPy stand-in with the dtype (and NEP 50 weakness) of ``v``, for dtype queries."""
    if is_dynamic(v):
        a = v.aval
        if a.weak_type:
            return {"b": False, "i": 0, "u": 0, "f": 0.0}.get(a.dtype.kind, np.zeros((), a.dtype))
        return np.zeros((), a.dtype)
    return v


def _shape_of(x: Any) -> tuple[int, ...]:
    """``np.shape(x)`` where ``x`` may be a list or tuple holding arrays: its length, then its items' common
    shape, as NumPy stacks them (NumPy read such a list as objects: ``np.shape([a, b])`` was ``(2,)``)."""
    if is_dynamic(x):
        return tuple(x.shape)
    if isinstance(x, (list, tuple)) and contains_dynamic(x):
        shapes = {_shape_of(e) for e in x}
        if len(shapes) > 1:
            raise ShapeError(f"np.shape of a sequence of arrays of different shapes {sorted(shapes)}: NumPy "
                             "cannot stack them into one array", hint="stack arrays of one shape")
        return (len(x), *next(iter(shapes), ()))
    return np.shape(x)


def _b_shape_query(fn: Callable[..., Any]) -> Callable[[Specializer, list[Any], dict[str, Any]], Any]:
    """np.shape / np.ndim / np.size of arrays (and of lists of them) are static: read off the abstract values."""
    what = fn.__name__

    def rule(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
        (x,) = args
        if not (is_dynamic(x) or isinstance(x, (list, tuple)) and contains_dynamic(x)):
            return fn(x)
        shape = _shape_of(x)
        if what == "shape":
            return shape
        return len(shape) if what == "ndim" else int(np.prod(shape, dtype=np.int64))  # (np.prod only for a size)

    return rule


def _b_result_type(sp: Specializer, args: list[Any], kwargs: dict[str, Any]) -> Any:
    for a in args:  # (NumPy reads a dict as a record dtype's fields: an internal TypeError on traced values)
        if pytree.is_tree(a) and contains_dynamic(a):
            raise DTypeError(f"cannot use a value of type {type(a).__name__} (object) as an array",
                             hint="pass its arrays one by one (srcjax.tree_util.tree_map)")
    return np.result_type(*[_aval_dummy(a) for a in args])


BUILTIN_RULES: dict[Any, Callable[[Specializer, list[Any], dict[str, Any]], Any]] = {
    np.shape: _b_shape_query(np.shape), np.ndim: _b_shape_query(np.ndim), np.size: _b_shape_query(np.size),
    np.result_type: _b_result_type, pytree.tree_map: _b_tree_map, map: _b_map,
    tree_util.tree_map: _b_util_tree_map, tree_util.tree_reduce: _b_util_tree_reduce, sorted: _b_sorted,
    isinstance: _b_isinstance, zip: _b_iterating(zip), enumerate: _b_iterating(enumerate),
    reversed: _b_iterating(reversed), list: _b_iterating(list), tuple: _b_iterating(tuple),
    len: _b_len, range: _b_range, abs: _b_abs, round: _b_round, sum: _b_sum,
    min: _b_minmax(min), max: _b_minmax(max),
    float: _b_number(float), int: _b_number(int), bool: _b_concrete(bool), print: lower_print,
}
