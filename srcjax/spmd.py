"""Many devices, front end: the devices, ``device_put`` onto a sharding, and which shardings a call of a
compiled function has (from ``in_shardings`` and from its sharded arguments).

The program itself is unchanged by sharding: the same source, the same StableHLO with Shardy
annotations on ``@main`` (``lower/shardy.py``), compiled once for all of the mesh's devices
(``runtime/spmd.py``); XLA's SPMD partitioner splits it and inserts the collectives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import pytree
from .core import ShardingError
from .lower.shardy import ShardingPlan
from .sharding import Sharding, as_sharding

if TYPE_CHECKING:
    from .api import Compiled

__all__ = ["device_count", "devices", "local_device_count", "local_devices", "process_count", "process_index",
           "sharding_plan"]


def devices(backend: str | None = None) -> list[Any]:
    """Every device of the default (or given) platform, in id order (JAX's ``jax.devices()``)."""
    from .runtime import devices as _devices

    return sorted(_devices(backend), key=lambda d: d.id)


def local_devices(process_index: int | None = None, backend: str | None = None) -> list[Any]:
    """The devices this process drives (all of them in one process)."""
    p = globals()["process_index"](backend) if process_index is None else process_index
    return [d for d in devices(backend) if d.process_index == p]


def device_count(backend: str | None = None) -> int:
    return len(devices(backend))


def local_device_count(backend: str | None = None) -> int:
    return len(local_devices(backend=backend))


def process_index(backend: str | None = None) -> int:
    from .runtime import get_backend

    return int(get_backend(backend).client.process_index())


def process_count(backend: str | None = None) -> int:
    return len({d.process_index for d in devices(backend)})


def _is_sharding_leaf(v: Any) -> bool:
    return v is None or isinstance(v, Sharding) or (hasattr(v, "id") and hasattr(v, "platform"))


def _per_argument(c: Compiled, values: list[Any]) -> list[Any]:
    """``in_shardings`` as one entry per parameter (None where not given)."""
    given = c.in_shardings
    if given is None:
        return [None] * len(values)
    if _is_sharding_leaf(given):
        return [given] * len(values)
    if not isinstance(given, (tuple, list)):
        raise ShardingError(f"in_shardings: expected a sharding or a tuple of them, got {type(given).__name__}")
    dynamic = [i for i, p in enumerate(c.params) if p not in c._static_all]
    if len(given) == len(values):
        return list(given)
    if len(given) == len(dynamic):
        out: list[Any] = [None] * len(values)
        for i, s in zip(dynamic, given):
            out[i] = s
        return out
    raise ShardingError(f"in_shardings: {len(given)} entries for {c.fn.__name__}'s {len(values)} parameters",
                        hint="give one sharding for every argument, or one per argument (None: as passed)")


def sharding_plan(c: Compiled, values: list[Any], is_leaf: Callable[[Any], bool]) -> ShardingPlan:
    """The shardings of this call's dynamic leaves (``is_leaf``: api's array leaves): ``in_shardings``
    where given, else a sharded argument's own; and ``out_shardings``."""
    per_arg = _per_argument(c, values)
    static = c._static_all
    leaves_s: list[Sharding | None] = []
    for name, v, given in zip(c.params, values, per_arg):
        if name in static:
            continue
        leaves, _ = pytree.flatten(v, is_leaf=is_leaf, nodes=True)
        leaves = [x for x in leaves if not isinstance(x, str) and type(x).__name__ != "Static"]
        if given is None:
            wanted: list[Any] = [None] * len(leaves)
        elif _is_sharding_leaf(given):
            wanted = [given] * len(leaves)
        else:
            wanted, _ = pytree.flatten(given, is_leaf=_is_sharding_leaf)
            if len(wanted) != len(leaves):
                raise ShardingError(f"in_shardings for argument {name!r}: {len(wanted)} shardings for "
                                    f"{len(leaves)} arrays", hint="one sharding for the whole argument, or one "
                                                                  "per array in it")
        for x, w in zip(leaves, wanted):
            if w is not None:
                w = as_sharding(w, "in_shardings")
                w.check(np.shape(x) if not hasattr(x, "shape") else tuple(x.shape), f"argument {name!r}")
            elif type(x).__name__ == "ShardedArray":
                w = x.sharding
            leaves_s.append(w)
    if all(s is None for s in leaves_s) and c.out_shardings is None:
        return ShardingPlan()
    return ShardingPlan(leaves_s, c.out_shardings)


def device_put_sharded(x: Any, target: Any, is_leaf: Callable[[Any], bool], uploadable: Callable[[Any], Any]) -> Any:
    """``srcjax.device_put(x, sharding_or_device)``: each array leaf laid out as the sharding says
    (``is_leaf``, ``uploadable``: api's array leaves, and a leaf as an uploadable value with its abstract value)."""
    from .runtime import Array, get_backend, wrap
    from .runtime.spmd import ShardedArray, put_sharded

    s = as_sharding(target, "device_put")
    default = get_backend().device

    def put(leaf: Any) -> Any:
        if leaf is None or isinstance(leaf, str):
            return leaf
        if isinstance(leaf, Array):
            if isinstance(leaf, ShardedArray) and leaf.sharding == s:
                return leaf
            leaf = np.asarray(leaf)
        leaf, aval = uploadable(leaf)
        s.check(aval.shape, "value")
        if s.num_devices == 1 and s.mesh.devices.flat[0] == default:
            from .runtime import device_put as upload

            return wrap(upload(leaf, aval, get_backend()), aval)  # the default device: a plain array
        return ShardedArray(put_sharded(leaf, aval, s), aval, s)

    leaves, tree = pytree.flatten(x, is_leaf=lambda v: is_leaf(v) or v is None or isinstance(v, str))
    return pytree.unflatten(tree, [put(leaf) for leaf in leaves])
