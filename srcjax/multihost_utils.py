"""Arrays over several processes, JAX's names: :func:`make_array_from_process_local_data` (also
``srcjax.make_array_from_process_local_data``), :func:`process_allgather`, :func:`sync_global_devices`.

After ``srcjax.distributed.initialize``, an array laid out over a mesh of every process's devices
is *global*: each process holds only its own devices' shards, and ``np.asarray`` of it is an error.
These build such arrays from each process's part of the data and bring them back whole. In one
process they reduce to ``srcjax.device_put`` and ``np.asarray``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import pytree
from .core import ShapedArray, ShardingError, canonical_dtype
from .sharding import Mesh, NamedSharding, P, Sharding, as_sharding

__all__ = ["make_array_from_process_local_data", "process_allgather", "sync_global_devices"]


def _bounds(sl: slice, size: int) -> tuple[int, int]:
    return (sl.start or 0, size if sl.stop is None else sl.stop)


def _global_shape(s: Sharding, local_shape: tuple[int, ...], mine: list[Any]) -> tuple[int, ...]:
    """jax's ``local_to_global_shape``: each dimension scaled by how many of its pieces live in all
    processes per piece in this one."""
    tiles = [int(np.prod([s.mesh.shape[a] for a in axes])) for axes in s.spec.axes(len(local_shape))]
    probe = s.devices_indices_map(tuple(tiles))  # (a shape with one element per piece)
    out = []
    for dim, size in enumerate(local_shape):
        here = len({_bounds(probe[d][dim], tiles[dim]) for d in mine})
        out.append(size * tiles[dim] // here)
    return tuple(out)


def local_pieces(s: Sharding, arr: np.ndarray, global_shape: Sequence[int] | None,
                 mine: list[Any]) -> tuple[tuple[int, ...], dict[Any, np.ndarray]]:
    """The global shape, and each of ``mine`` (this process's devices of ``s``) -> its piece of the
    process-local data ``arr`` (see :func:`make_array_from_process_local_data`)."""
    shape = tuple(int(n) for n in global_shape) if global_shape is not None else _global_shape(s, arr.shape, mine)
    if len(shape) != arr.ndim:
        raise ShardingError(f"make_array_from_process_local_data: local data of rank {arr.ndim} (shape {arr.shape}) "
                            f"for a global shape {shape} of rank {len(shape)}")
    s.check(shape, "global array")
    index = s.devices_indices_map(shape)
    offsets: list[dict[tuple[int, int], int] | None] = []
    for dim, size in enumerate(shape):
        if arr.shape[dim] == size:  # the whole dimension: indexed as in the global array
            offsets.append(None)
            continue
        spans = sorted({_bounds(index[d][dim], size) for d in mine})
        if sum(b - a for a, b in spans) != arr.shape[dim]:
            raise ShardingError(
                f"make_array_from_process_local_data: dimension {dim} of the local data has {arr.shape[dim]} "
                f"elements, but this process's devices hold {sum(b - a for a, b in spans)} of the global "
                f"{size} ({s!r})", hint="give this process's own rows, or the whole dimension")
        starts, o = {}, 0
        for a, b in spans:
            starts[(a, b)] = o
            o += b - a
        offsets.append(starts)
    pieces = {}
    for d in mine:
        idx = []
        for dim, sl in enumerate(index[d]):
            a, b = _bounds(sl, shape[dim])
            at = offsets[dim]
            idx.append(slice(a, b) if at is None else slice(at[(a, b)], at[(a, b)] + b - a))
        pieces[d] = arr[tuple(idx)]
    return shape, pieces


def make_array_from_process_local_data(sharding: Any, local_data: Any,
                                       global_shape: Sequence[int] | None = None) -> Any:
    """A global :class:`srcjax.Array` laid out as ``sharding`` from this process's part of the data
    (JAX's ``jax.make_array_from_process_local_data``).

    ``local_data`` holds the rows (and columns...) that this process's devices hold, in order: along
    each dimension it is either the whole global dimension or the concatenation of the distinct
    pieces of that dimension on this process's devices. ``global_shape`` defaults to the local shape
    scaled by the number of processes sharing each dimension (e.g. a batch of 64 rows per process,
    sharded over the devices of 2 processes, makes 128 rows)."""
    from .runtime.spmd import ShardedArray, assemble, local_devices

    s = as_sharding(sharding, "make_array_from_process_local_data")
    arr = np.asarray(local_data)
    dtype = canonical_dtype(arr.dtype)
    shape, pieces = local_pieces(s, arr, global_shape, local_devices(s))
    aval = ShapedArray(shape, dtype)
    return ShardedArray(assemble(aval, s, pieces), aval, s)


def _identity(x: Any) -> Any:  # (compiled by srcjax: the reshard is the whole program)
    return x


_REPLICATE: dict[Mesh, Any] = {}


def _replicated(x: Any) -> np.ndarray:
    """The whole value of a (possibly global) array, in every process: XLA all-gathers it."""
    from . import api

    mesh = x.sharding.mesh
    f = _REPLICATE.get(mesh)
    if f is None:
        f = _REPLICATE[mesh] = api.jit(_identity, out_shardings=NamedSharding(mesh, P()))
    return np.asarray(f(x))


def _process_mesh() -> Mesh:
    """Every device in a (processes, local) grid, each process one row."""
    from .spmd import devices

    devs = sorted(devices(), key=lambda d: (d.process_index, d.id))
    n = len({d.process_index for d in devs})
    if len(devs) % n:
        raise ShardingError("process_allgather needs the same number of devices in every process")
    grid = np.empty(len(devs), dtype=object)
    grid[:] = devs
    return Mesh(grid.reshape(n, len(devs) // n), ("processes", "local"))


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Every process's values, in every process, as NumPy arrays (JAX's
    ``multihost_utils.process_allgather``). A global array (spanning several processes) comes back
    whole, and needs ``tiled=True`` (as in jax). A process-local value (a NumPy array, or an array on
    this process's devices) comes back stacked along a new first axis in process order, or
    concatenated along its first axis with ``tiled=True`` (scalars are always stacked). Every
    process must call it, with the same structure and shapes."""
    from .runtime.spmd import ShardedArray

    def gather(x: Any) -> np.ndarray:
        if isinstance(x, ShardedArray) and not x.sharding.is_fully_addressable():
            if not tiled:
                raise ShardingError("Gathering global non-fully-addressable arrays only supports tiled=True",
                                    hint="process_allgather(x, tiled=True) returns the whole global array")
            return _replicated(x)
        local = np.asarray(x)
        if local.ndim == 0 or not tiled:
            local = local[None]
        mesh = _process_mesh()
        if mesh.devices.shape[0] == 1:
            return local.copy()
        out = make_array_from_process_local_data(NamedSharding(mesh, P("processes")), local)
        return _replicated(out)

    leaves, tree = pytree.flatten(in_tree, is_leaf=lambda v: isinstance(v, ShardedArray))
    return pytree.unflatten(tree, [gather(leaf) for leaf in leaves])


def sync_global_devices(name: str, timeout_seconds: float | None = None) -> None:
    """Wait until every process reaches the barrier ``name`` (JAX's ``multihost_utils.sync_global_devices``),
    at most ``timeout_seconds`` (default: the initialization timeout). A no-op in one process."""
    from .runtime import distributed

    state = distributed.current()
    if state is not None:
        distributed.barrier(name, state.init_timeout if timeout_seconds is None else timeout_seconds)
