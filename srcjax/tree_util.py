"""``srcjax.tree_util``: JAX's pytree functions over the containers srcjax knows.

Containers are tuples, lists, dicts (in sorted key order), NamedTuples, dataclasses and the classes
registered with :func:`register_pytree_node` / :func:`register_dataclass`; ``None`` is an empty
container (no leaves), as in JAX; everything else (arrays, ``srcjax.Array``, numbers) is a leaf.
Outside compiled code these run in Python (an optimizer step on a dict of parameters:
``tree_map(lambda p, g: p - lr * g, params, grads)``); inside a compiled function ``tree_map``,
``tree_leaves``, ``tree_flatten`` and ``tree_unflatten`` run while srcjax specializes it, calling
the function on each leaf.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import pytree
from .pytree import TreeDef

__all__ = ["TreeDef", "register_dataclass", "register_pytree_node", "tree_flatten", "tree_leaves", "tree_map",
           "tree_reduce", "tree_structure", "tree_unflatten"]


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], TreeDef]:
    """The leaves of ``tree`` (depth first; a dict's in sorted key order) and its structure."""
    return pytree.flatten(tree, is_leaf)


def tree_unflatten(treedef: TreeDef, leaves: Any) -> Any:
    """The container of structure ``treedef`` holding ``leaves`` in order."""
    return pytree.unflatten(treedef, list(leaves))


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    return pytree.flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> TreeDef:
    return pytree.flatten(tree, is_leaf)[1]


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``f`` of each leaf of ``tree`` and the leaves at the same place in each of ``rest`` (which must
    have ``tree``'s structure); the results in ``tree``'s structure."""
    leaves, treedef = pytree.flatten(tree, is_leaf)
    others = []
    for k, r in enumerate(rest):
        r_leaves, r_def = pytree.flatten(r, is_leaf)
        if r_def != treedef:
            raise ValueError(f"tree_map: argument {k + 2} has structure {r_def}, but the first tree has {treedef}")
        others.append(r_leaves)
    return pytree.unflatten(treedef, [f(x, *[o[i] for o in others]) for i, x in enumerate(leaves)])


def tree_reduce(f: Callable[[Any, Any], Any], tree: Any, *initializer: Any,
                is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``f`` folded over the leaves, left to right (from ``initializer`` when given)."""
    leaves = pytree.flatten(tree, is_leaf)[0]
    if len(initializer) > 1:
        raise TypeError("tree_reduce takes at most one initializer")
    if not leaves and not initializer:
        raise TypeError("tree_reduce of a tree without leaves needs an initializer")
    acc, start = (initializer[0], 0) if initializer else (leaves[0], 1)
    for x in leaves[start:]:
        acc = f(acc, x)
    return acc


def register_pytree_node(nodetype: type, flatten_func: Callable[[Any], tuple[Any, Any]],
                         unflatten_func: Callable[[Any, Any], Any]) -> None:
    """Make ``nodetype`` a container, as ``jax.tree_util.register_pytree_node``: ``flatten_func(x)``
    gives ``(children, aux_data)`` (``aux_data`` hashable: it is part of a compiled signature) and
    ``unflatten_func(aux_data, children)`` rebuilds it. Its objects are then arguments and results
    of compiled code, and its fields are differentiated and batched, when ``flatten_func`` returns
    the attributes themselves (``p.w`` is read by finding the child that is ``p.w``)."""
    pytree.register_node(nodetype, flatten_func, unflatten_func)


def register_dataclass(nodetype: type, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None) -> type:
    """``jax.tree_util.register_dataclass``: ``data_fields`` are children (arrays), ``meta_fields``
    static (part of the signature); by default every field is data. Returns ``nodetype`` (a decorator)."""
    import dataclasses

    names = [f.name for f in dataclasses.fields(nodetype)]
    data = list(names if data_fields is None else data_fields)
    meta = [n for n in names if n not in data] if meta_fields is None else list(meta_fields)

    def flatten(x: Any) -> tuple[list[Any], tuple[Any, ...]]:
        return [getattr(x, n) for n in data], tuple(getattr(x, n) for n in meta)

    def unflatten(aux: tuple[Any, ...], children: Sequence[Any]) -> Any:
        return nodetype(**dict(zip(data, children)), **dict(zip(meta, aux)))

    pytree.register_node(nodetype, flatten, unflatten)
    pytree.DATA_FIELDS[nodetype] = tuple(data)  # (vmap: in_axes/out_axes of this class name its data fields)
    return nodetype
