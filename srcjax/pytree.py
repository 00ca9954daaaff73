"""Minimal pytrees: nested tuples, lists, dicts, NamedTuples and dataclasses with array (or static) leaves.

Besides flatten/unflatten (argument and result handling), the structural helpers that
derivative code uses on containers live here: :func:`is_tree`, :func:`tree_get`,
:func:`tree_set`, :func:`tree_like` only move values around, so they run unchanged on
NumPy leaves and, inside the specializer, on SSA values; :func:`tree_map` calls a function
on every leaf (the specializer runs it itself, calling back for each leaf).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

Leaf = Any


class TreeDef:
    """The structure of a nested container; ``None`` nodes mark leaves."""

    __slots__ = ("kind", "children", "keys")

    def __init__(self, kind: str, children: tuple[TreeDef, ...] = (), keys: tuple[Any, ...] = ()) -> None:
        self.kind = kind
        self.children = children
        self.keys = keys

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TreeDef) and self.kind == other.kind and self.keys == other.keys
                and self.children == other.children)

    def __hash__(self) -> int:
        return hash((self.kind, self.children, self.keys))

    def __repr__(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(map(repr, self.children))
        if self.kind == "dict":
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.keys, self.children))
            return "{" + inner + "}"
        if self.kind == "namedtuple":
            return f"{self.keys[0].__name__}({inner})"
        if self.kind in ("node", "custom"):
            return f"{self.keys[0].__name__}({inner})"
        if self.kind == "record":
            fields = ", ".join(f"{k}={c!r}" for k, c in zip(self.keys[1], self.children))
            return f"{self.keys[0].__name__}({fields})"
        return ("(" + inner + ",)") if self.kind == "tuple" else ("[" + inner + "]")

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)


# classes registered as containers (srcjax.tree_util.register_pytree_node): type -> (flatten, unflatten)
DATA_FIELDS: dict[type, tuple[str, ...]] = {}  # a class registered by tree_util.register_dataclass: its data fields
REGISTERED: dict[type, tuple[Callable[[Any], tuple[Any, Any]], Callable[[Any, Any], Any]]] = {}


def register_node(cls: type, flatten: Callable[[Any], tuple[Any, Any]], unflatten: Callable[[Any, Any], Any]) -> None:
    REGISTERED[cls] = (flatten, unflatten)
    DATA_FIELDS.pop(cls, None)  # (register_dataclass sets it again)


def is_custom(x: Any) -> bool:
    return type(x) in REGISTERED


def _custom_children(x: Any) -> tuple[list[Any], Any]:
    children, aux = REGISTERED[type(x)][0](x)
    return list(children), aux


def attribute_children(x: Any) -> bool:
    """Whether every child the flatten function of ``x``'s registered class returns is one of its
    attributes, once (then ``x.w`` names a child: what derivatives and ``vmap`` need)."""
    children, _ = _custom_children(x)
    attrs = list(getattr(x, "__dict__", {}).values())
    return all(sum(1 for a in attrs if a is c) == 1 for c in children)


def _custom_index(z: Any, key: Any) -> int:
    """Which child of the registered object ``z`` its attribute ``key`` is (the child that *is* it)."""
    children, _ = _custom_children(z)
    if isinstance(key, int):
        return key
    v = getattr(z, key)
    found = [i for i, c in enumerate(children) if c is v]
    if len(found) != 1:
        raise TypeError(f"cannot tell which of the children {type(z).__name__}'s flatten function returns is its "
                        f"attribute {key!r}: return the attributes themselves, each once")
    return found[0]


LEAF = TreeDef("leaf")
NONE = TreeDef("none")


class UnsortableKeys(TypeError):
    """A dict whose keys do not sort (keys of mixed types): its leaves would have no fixed order. jax
    refuses such a dict too; callers turn this into a located srcjax error."""


def sorted_keys(x: dict[Any, Any]) -> tuple[Any, ...]:
    """A dict's keys in pytree order (sorted, as jax's)."""
    try:
        return tuple(sorted(x))
    except TypeError:
        kinds = sorted({type(k).__name__ for k in x})
        raise UnsortableKeys(f"its keys {sorted(x, key=repr)} do not sort (keys of types {', '.join(kinds)})") \
            from None


def flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None,
            nodes: bool = False) -> tuple[list[Leaf], TreeDef]:
    """Leaves and structure. ``nodes``: srcjax's own node types (a rolled loop's saved values, see
    ``lower.rolled_for.Segment``) are containers too, as at a program's boundary (a split VJP's forward
    program returns one, its backward program takes it); elsewhere they are leaves."""
    leaves: list[Leaf] = []
    return leaves, _flatten(tree, is_leaf, leaves, nodes)


def _flatten(x: Any, is_leaf: Callable[[Any], bool] | None, leaves: list[Leaf], nodes: bool = False) -> TreeDef:
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return LEAF
    if x is None:
        return NONE
    if type(x) is tuple or type(x) is list:
        return TreeDef("tuple" if type(x) is tuple else "list", tuple(_flatten(c, is_leaf, leaves, nodes) for c in x))
    if type(x) is dict:
        keys = sorted_keys(x)
        return TreeDef("dict", tuple(_flatten(x[k], is_leaf, leaves, nodes) for k in keys), keys)
    if is_namedtuple(x):
        return TreeDef("namedtuple", tuple(_flatten(c, is_leaf, leaves, nodes) for c in x), (type(x),))
    if is_record(x):
        fields = record_fields(x)
        kids = tuple(_flatten(getattr(x, f), is_leaf, leaves, nodes) for f in fields)
        return TreeDef("record", kids, (type(x), fields))
    if type(x) in REGISTERED:  # a class the user registered (tree_util.register_pytree_node)
        children, aux = _custom_children(x)
        return TreeDef("custom", tuple(_flatten(c, is_leaf, leaves, nodes) for c in children), (type(x), aux))
    if nodes and getattr(type(x), "__srcjax_node__", False):  # srcjax's own node types (a loop's saved values)
        children, aux = x.tree_flatten()
        return TreeDef("node", tuple(_flatten(c, is_leaf, leaves, nodes) for c in children), (type(x), aux))
    leaves.append(x)
    return LEAF


def unflatten(treedef: TreeDef, leaves: list[Leaf]) -> Any:
    # No recursive closure here: a closure referring to itself is a reference cycle that would
    # keep the results (device buffers) alive until the cycle collector runs.
    return _build(treedef, iter(leaves))


def _build(t: TreeDef, it: Any) -> Any:
    if t.kind == "leaf":
        return next(it)
    if t.kind == "none":
        return None
    kids = [_build(c, it) for c in t.children]
    if t.kind == "tuple":
        return tuple(kids)
    if t.kind == "list":
        return kids
    if t.kind == "namedtuple":
        return t.keys[0](*kids)
    if t.kind == "record":
        return t.keys[0](**dict(zip(t.keys[1], kids)))
    if t.kind == "node":
        return t.keys[0].tree_unflatten(t.keys[1], kids)
    if t.kind == "custom":
        return REGISTERED[t.keys[0]][1](t.keys[1], kids)
    return dict(zip(t.keys, kids))


def leaf_path(tree: Any, index: int, base: str, is_leaf: Callable[[Any], bool] | None = None) -> str:
    """How to reach leaf number ``index`` (in flatten order) of ``tree``: ``params[0]['w']``."""
    paths: list[str] = []

    def go(x: Any, path: str) -> None:
        if is_leaf is not None and is_leaf(x):
            paths.append(path)
        elif x is None:
            pass
        elif type(x) is dict:
            for k in sorted(x):
                go(x[k], f"{path}[{k!r}]")
        elif is_namedtuple(x):
            for f, c in zip(x._fields, x):  # type: ignore[attr-defined]
                go(c, f"{path}.{f}")
        elif is_record(x):
            for f in record_fields(x):
                go(getattr(x, f), f"{path}.{f}")
        elif type(x) is tuple or type(x) is list:
            for i, c in enumerate(x):
                go(c, f"{path}[{i}]")
        else:
            paths.append(path)

    go(tree, base)
    return paths[index] if index < len(paths) else base


# -- structural helpers (derivative code on containers) -----------------------------------------

def is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and type(x) is not tuple and hasattr(type(x), "_fields")


def is_record(x: Any) -> bool:
    """A user's dataclass instance whose fields are all ``__init__`` parameters (rebuilt from them);
    srcjax's own dataclasses (SSA values, spans, ...) are leaves."""
    return dataclasses.is_dataclass(x) and not isinstance(x, type) and type(x) not in REGISTERED and \
        not type(x).__module__.startswith("srcjax.") and all(f.init for f in dataclasses.fields(x))


def record_fields(x: Any) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(x))


def node_children(x: Any) -> list[Any]:
    """The children of a container, in :func:`tree_like`'s order (a dataclass: its fields)."""
    if is_custom(x):
        return _custom_children(x)[0]
    if is_record(x):
        return [getattr(x, f) for f in record_fields(x)]
    if type(x) is dict:
        return list(x.values())
    return list(x)


def is_tree(x: Any) -> bool:
    """Whether ``x`` is a container: a tuple, list, dict, NamedTuple or dataclass (arrays and scalars are leaves)."""
    t = type(x)
    return t is tuple or t is list or t is dict or is_namedtuple(x) or is_record(x) or t in REGISTERED


def by_leaves(x: Any) -> bool:
    """:func:`is_tree`, the test of a generated Jacobian's container path (one batched JVP/VJP per leaf):
    a marker the transformations that read that source again recognise (vmap defers a refusal into
    that branch, to where it runs)."""
    return is_tree(x)


def tree_get(z: Any, key: Any) -> Any:
    """``z[key]``; a string key of a NamedTuple or dataclass names a field (``p.w`` is ``tree_get(p, "w")``)."""
    if isinstance(key, str) and (is_namedtuple(z) or is_record(z) or is_custom(z)):
        return getattr(z, key)
    if is_custom(z):
        return _custom_children(z)[0][key]
    return z[key]


def from_leaves(x: Any, leaves: Any) -> Any:
    """``x``'s structure holding ``leaves`` in flatten order: the cotangent of ``x`` in
    ``tree_leaves(x)`` from the cotangent of that list. Its dicts keep ``x``'s key order (derivative code zips
    ``x.items()`` with its tangent's: a basis of ``leaf_bases`` in sorted order paired the wrong items, silently,
    where NumPy runs the source on a dict not in sorted order)."""
    return _ordered_like(unflatten(flatten(x)[1], list(leaves)), x)


def _ordered_like(t: Any, x: Any) -> Any:
    if type(t) is dict and type(x) is dict and list(t) != list(x) and set(t) == set(x):
        return {k: _ordered_like(t[k], x[k]) for k in x}
    if type(t) is dict and type(x) is dict:
        return {k: _ordered_like(v, x[k]) if k in x else v for k, v in t.items()}
    if type(t) in (list, tuple) and type(x) is type(t) and len(t) == len(x):
        return type(t)(_ordered_like(a, b) for a, b in zip(t, x))
    return t


def leaves_like(t: Any, x: Any) -> list[Any]:
    """The parts of ``t`` (``x``'s tangent, of ``x``'s structure) at ``x``'s leaves, in flatten order:
    the tangent of ``tree_leaves(x)``."""
    out: list[Any] = []

    def go(a: Any, b: Any) -> None:
        if b is None:  # (no leaf)
            return
        if not is_tree(b):
            out.append(a)
            return
        kids = [b[k] for k in sorted(b)] if type(b) is dict else node_children(b)
        parts = [None] * len(kids) if a is None else [a[k] for k in sorted(b)] if type(b) is dict else \
            node_children(a)
        for ca, cb in zip(parts, kids):
            go(ca, cb)

    go(t, x)
    return out


def item_keys(z: Any) -> list[Any]:
    """The keys :func:`tree_get` and :func:`tree_set` take for each item of the container ``z``: a
    dict's keys, a dataclass's field names, positions otherwise."""
    if type(z) is dict:
        return list(z)
    if is_record(z):
        return list(record_fields(z))
    return list(range(len(_custom_children(z)[0] if is_custom(z) else z)))


def tree_has(z: Any, key: Any) -> bool:
    """Whether the container ``z`` has an item ``key`` (a dict key; every other container has its fields
    and indices)."""
    return key in z if type(z) is dict else True


def item_key(key: Any, flags: Any) -> Any:
    """A container's item key from vmap's index helpers (``batch_index_update``, ...): a key taken for batched
    (``flags`` not None: ``k`` of ``for k in params``, ``list(d)[i]`` of a mapped dict) comes as ``(k,)``."""
    return key[0] if flags is not None and type(key) is tuple and len(key) == 1 else key


def tree_without(z: Any, key: Any) -> Any:
    """A copy of the dict ``z`` without the item ``key`` (``z`` itself where it has none)."""
    return {k: v for k, v in z.items() if k != key} if type(z) is dict else z


def tree_like(x: Any, items: Any) -> Any:
    """The sequence ``items`` as a container of the same kind as ``x`` (a dataclass: its fields in order)."""
    if type(x) is list:
        return list(items)
    if is_namedtuple(x) or is_record(x):
        return type(x)(*items)
    if is_custom(x):
        return REGISTERED[type(x)][1](_custom_children(x)[1], list(items))
    return tuple(items)


def tree_set(z: Any, key: Any, value: Any) -> Any:
    """A copy of the container ``z`` with ``z[key]`` replaced by ``value`` (``z`` is left as it is).

    ``key``: a dict key, a sequence index or slice (then ``value`` is a sequence of the slice's
    length), or a NamedTuple field name."""
    if type(z) is dict:
        out = dict(z)
        out[key] = value
        return out
    if isinstance(key, str) and is_namedtuple(z):
        return z._replace(**{key: value})  # type: ignore[attr-defined]
    if isinstance(key, str) and is_record(z):
        return dataclasses.replace(z, **{key: value})
    if is_custom(z):
        children, aux = _custom_children(z)
        children[_custom_index(z, key)] = value
        return REGISTERED[type(z)][1](aux, children)
    items = list(z)
    if isinstance(key, slice):
        idx = range(len(items))[key]
        value = list(value)
        if len(value) != len(idx):
            raise ValueError(f"cannot set {len(value)} items into a slice of {len(idx)}")
        for i, v in zip(idx, value):
            items[i] = v
    else:
        items[key] = value
    return tree_like(z, items)


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """``f`` applied to the leaves of ``tree`` and the matching parts of ``rest``; the result has
    ``tree``'s structure. ``None`` is a leaf here (``f`` sees it); where ``tree`` has a container
    and another tree has ``None``, ``f`` sees ``None`` for each leaf below. Sequences match
    sequences of the same length whatever their kind (a tuple cotangent for a list)."""
    if not is_tree(tree):
        return f(tree, *rest)
    if type(tree) is dict:
        keys = list(tree)
        parts = [_children(r, keys, tree) for r in rest]
        return {k: tree_map(f, tree[k], *[p[i] for p in parts]) for i, k in enumerate(keys)}
    if is_record(tree):
        fields = record_fields(tree)
        parts = [_children(r, fields, tree) for r in rest]
        return type(tree)(**{k: tree_map(f, getattr(tree, k), *[p[i] for p in parts]) for i, k in enumerate(fields)})
    if is_custom(tree):
        children, aux = _custom_children(tree)
        parts = [_children(r, range(len(children)), tree) for r in rest]
        return REGISTERED[type(tree)][1](aux, [tree_map(f, c, *[p[i] for p in parts]) for i, c in enumerate(children)])
    n = len(tree)
    parts = [_children(r, range(n), tree) for r in rest]
    return tree_like(tree, [tree_map(f, tree[i], *[p[i] for p in parts]) for i in range(n)])


def _children(r: Any, keys: Any, like: Any) -> list[Any]:
    if r is None:
        return [None for _ in keys]
    if type(like) is dict:
        if type(r) is not dict or set(r) != set(like):
            raise TreeMismatch(f"expected a dict with keys {sorted(like, key=repr)}, got {describe(r)}")
        return [r[k] for k in keys]
    if is_record(like):
        if type(r) is not type(like):
            raise TreeMismatch(f"expected a {type(like).__name__}, got {describe(r)}")
        return [getattr(r, k) for k in keys]
    if is_custom(like):
        if type(r) is not type(like):
            raise TreeMismatch(f"expected a {type(like).__name__}, got {describe(r)}")
        return _custom_children(r)[0]
    if not (isinstance(r, (tuple, list))) or len(r) != len(like):
        raise TreeMismatch(f"expected a {type(like).__name__} of {len(like)}, got {describe(r)}")
    return list(r)


class TreeMismatch(ValueError):
    """Two containers that should have the same structure do not."""


def describe(x: Any) -> str:
    if type(x) is dict:
        return f"a dict with keys {sorted(x, key=repr)}"
    if is_record(x) or is_custom(x):
        return f"a {type(x).__name__}"
    if is_tree(x):
        return f"a {type(x).__name__} of {len(x)}"
    return f"a {type(x).__name__}"
