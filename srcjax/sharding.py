"""Shardings, with JAX's names and meaning: how an array is laid out over several devices.

A :class:`Mesh` arranges devices in an n-dimensional grid with named axes; a
:class:`NamedSharding` says, with a :class:`PartitionSpec`, which mesh axes split which array
dimension (the others replicate it); a :class:`SingleDeviceSharding` puts the whole array on one
device. ``srcjax.device_put(x, sharding)`` lays an array out; ``srcjax.compile(f,
in_shardings=..., out_shardings=...)`` compiles one program for all the mesh's devices, which XLA's
SPMD partitioner splits (see ``docs/many_devices.md``).

Pure Python: nothing here touches jaxlib (``runtime/spmd.py`` turns these into XLA's shardings).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .core import ShardingError

__all__ = ["Mesh", "NamedSharding", "P", "PartitionSpec", "Sharding", "SingleDeviceSharding", "make_mesh"]


class PartitionSpec(tuple):  # type: ignore[type-arg]
    """One entry per leading array dimension: ``None`` (not split), a mesh axis name, or a tuple of
    names (split over their product, the first the major one). Missing trailing entries are ``None``."""

    def __new__(cls, *parts: Any) -> PartitionSpec:
        norm: list[Any] = []
        for p in parts:
            if isinstance(p, list):
                p = tuple(p)
            if isinstance(p, tuple):
                if not all(isinstance(a, str) for a in p):
                    raise ShardingError(f"PartitionSpec: a tuple entry holds mesh axis names, got {p!r}")
                p = p[0] if len(p) == 1 else (p or None)
            elif p is not None and not isinstance(p, str):
                raise ShardingError(f"PartitionSpec: each entry is None, a mesh axis name or a tuple of names, "
                                    f"got {p!r}", hint="write P('data', None) or P(('data', 'model'),)")
            norm.append(p)
        return super().__new__(cls, norm)

    def __repr__(self) -> str:
        return "PartitionSpec(" + ", ".join(map(repr, self)) + ")"

    def axes(self, ndim: int) -> tuple[tuple[str, ...], ...]:
        """The mesh axes splitting each of ``ndim`` dimensions (``()`` for none)."""
        out = [() if p is None else (p,) if isinstance(p, str) else tuple(p) for p in self]
        return tuple(out + [()] * (ndim - len(out)))


P = PartitionSpec


class Mesh:
    """Devices in a grid with named axes (JAX's ``jax.sharding.Mesh``)."""

    def __init__(self, devices: Any, axis_names: str | Sequence[str]) -> None:
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        arr = np.empty(np.shape(devices), dtype=object)
        arr[...] = devices if isinstance(devices, np.ndarray) else _nested(devices)
        if arr.ndim != len(axis_names):
            raise ShardingError(f"Mesh: {arr.ndim}-dimensional devices but {len(axis_names)} axis names "
                                f"{tuple(axis_names)}", hint="give one name per axis of the device grid")
        if len(set(axis_names)) != len(axis_names):
            raise ShardingError(f"Mesh: axis names repeat: {tuple(axis_names)}")
        ids = [d.id for d in arr.flat]
        if len(set(ids)) != len(ids):
            raise ShardingError("Mesh: a device appears twice")
        self.devices = arr
        self.axis_names: tuple[str, ...] = tuple(axis_names)
        self._key = (tuple(ids), arr.shape, self.axis_names)

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    def device_list(self) -> list[Any]:
        """The devices in mesh order (row-major): the executable's device assignment."""
        return list(self.devices.flat)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mesh) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        sizes = ", ".join(f"'{n}': {s}" for n, s in self.shape.items())
        return f"Mesh({sizes}, devices={self.device_ids.tolist()})"


def _nested(devices: Any) -> Any:
    out = np.empty(np.shape(np.array(devices, dtype=object)), dtype=object)
    for idx in np.ndindex(out.shape):
        d: Any = devices
        for i in idx:
            d = d[i]
        out[idx] = d
    return out


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str], *, devices: Sequence[Any] | None = None) -> Mesh:
    """A mesh of the first ``prod(axis_shapes)`` devices (or of ``devices``), JAX's ``jax.make_mesh``."""
    from .runtime.xla import devices as all_devices

    axis_shapes = tuple(int(s) for s in axis_shapes)
    n = math.prod(axis_shapes)
    pool = list(devices) if devices is not None else sorted(all_devices(), key=lambda d: d.id)
    if len(pool) < n:
        raise ShardingError(f"make_mesh: a {'x'.join(map(str, axis_shapes))} mesh needs {n} devices, "
                            f"there are {len(pool)}",
                            hint=f"on CPU, set SRCJAX_NUM_CPU_DEVICES={n} (or XLA_FLAGS="
                                 f"--xla_force_host_platform_device_count={n}) before the first srcjax call")
    arr = np.empty(n, dtype=object)
    arr[:] = pool[:n]
    return Mesh(arr.reshape(axis_shapes), tuple(axis_names))


class Sharding:
    """What every sharding answers (JAX's ``jax.sharding.Sharding``)."""

    mesh: Mesh
    spec: PartitionSpec

    @property
    def device_set(self) -> set[Any]:
        return set(self.mesh.devices.flat)

    @property
    def addressable_devices(self) -> set[Any]:
        """The devices this process drives (all of them, unless ``srcjax.distributed`` spans processes)."""
        me = _this_process(self)
        return {d for d in self.device_set if d.process_index == me}

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    @property
    def is_fully_replicated(self) -> bool:
        return all(not self.mesh.shape[a] > 1 for a in _used(self.spec))

    def is_fully_addressable(self) -> bool:
        """Whether this process drives every device of the sharding (else it holds only some shards)."""
        me = _this_process(self)
        return all(d.process_index == me for d in self.mesh.devices.flat)

    @property
    def memory_kind(self) -> None:
        return None

    def check(self, shape: Sequence[int], what: str = "array") -> None:
        """Raise :class:`ShardingError` unless this sharding fits an array of ``shape``."""
        shape = tuple(shape)
        if len(self.spec) > len(shape):
            raise ShardingError(f"{self!r} has {len(self.spec)} entries, longer than the rank {len(shape)} of "
                                f"the {what} (shape {shape})",
                                hint=f"give at most {len(shape)} entries, one per dimension")
        for d, axes in enumerate(self.spec.axes(len(shape))):
            n = math.prod(self.mesh.shape[a] for a in axes)
            if shape[d] % n:
                raise ShardingError(f"{self!r}: dimension {d} of the {what} (size {shape[d]}, shape {shape}) is "
                                    f"split over mesh axes {axes} of {n} devices, which does not divide it",
                                    hint=f"make dimension {d} a multiple of {n}, or shard another dimension")

    def shard_shape(self, global_shape: Sequence[int]) -> tuple[int, ...]:
        shape = tuple(global_shape)
        self.check(shape)
        sizes = self.mesh.shape
        return tuple(s // math.prod(sizes[a] for a in axes) for s, axes in zip(shape, self.spec.axes(len(shape))))

    def devices_indices_map(self, global_shape: Sequence[int]) -> dict[Any, tuple[slice, ...]]:
        """Each device -> the index (a tuple of slices) of its shard in the global array."""
        shape = tuple(global_shape)
        local = self.shard_shape(shape)
        names = self.mesh.axis_names
        sizes = self.mesh.shape
        out: dict[Any, tuple[slice, ...]] = {}
        for pos in np.ndindex(self.mesh.devices.shape):
            coord = dict(zip(names, pos))
            idx = []
            for d, axes in enumerate(self.spec.axes(len(shape))):
                t = 0
                for a in axes:  # mixed radix, the first axis the major one
                    t = t * sizes[a] + coord[a]
                idx.append(slice(t * local[d], (t + 1) * local[d]) if axes else slice(None))
            out[self.mesh.devices[pos]] = tuple(idx)
        return out

    def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
        """The same devices holding the same pieces."""
        if self.num_devices == 1 == other.num_devices:
            return bool(self.mesh.devices.flat[0] == other.mesh.devices.flat[0])
        return self.mesh == other.mesh and self.spec.axes(ndim) == other.spec.axes(ndim)


def _this_process(s: Sharding) -> int:
    """This process's index, as the client of the sharding's devices knows it."""
    return int(s.mesh.devices.flat[0].client.process_index())


def _used(spec: PartitionSpec) -> list[str]:
    return [a for axes in spec.axes(len(spec)) for a in axes]


class NamedSharding(Sharding):
    """``mesh`` and a :class:`PartitionSpec` over its axis names (JAX's ``NamedSharding``)."""

    def __init__(self, mesh: Mesh, spec: PartitionSpec | Sequence[Any] = ()) -> None:
        if not isinstance(mesh, Mesh):
            raise ShardingError(f"NamedSharding: the first argument is a srcjax.sharding.Mesh, got "
                                f"{type(mesh).__name__}", hint="mesh = srcjax.make_mesh((4,), ('data',))")
        if not isinstance(spec, PartitionSpec):
            spec = PartitionSpec(*spec)
        used = _used(spec)
        for a in used:
            if a not in mesh.axis_names:
                raise ShardingError(f"NamedSharding: {spec!r} names axis {a!r}, which the mesh does not have "
                                    f"(its axes: {mesh.axis_names})", hint="use the mesh's axis names")
        if len(set(used)) != len(used):
            raise ShardingError(f"NamedSharding: {spec!r} uses a mesh axis twice")
        self.mesh = mesh
        self.spec = spec

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NamedSharding) and other.mesh == self.mesh and \
            other.spec.axes(max(len(self.spec), len(other.spec))) == self.spec.axes(
                max(len(self.spec), len(other.spec)))

    def __hash__(self) -> int:
        h = self.__dict__.get("_hash")
        if h is None:
            spec = list(self.spec)
            while spec and spec[-1] is None:
                spec.pop()
            h = self._hash = hash((self.mesh, tuple(spec)))
        return h

    def __repr__(self) -> str:
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"


class SingleDeviceSharding(Sharding):
    """The whole array on one device (JAX's ``SingleDeviceSharding``)."""

    def __init__(self, device: Any) -> None:
        self.device = device
        arr = np.empty(1, dtype=object)
        arr[0] = device
        self.mesh = Mesh(arr, ("device",))
        self.spec = PartitionSpec()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SingleDeviceSharding) and other.device == self.device

    def __hash__(self) -> int:
        return hash(("single", self.device.id))

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self.device!r})"


def as_sharding(x: Any, what: str = "sharding") -> Sharding:
    """A :class:`Sharding` from a sharding or a device (``device_put(x, device)``)."""
    if isinstance(x, Sharding):
        return x
    if hasattr(x, "id") and hasattr(x, "platform"):
        return SingleDeviceSharding(x)
    raise ShardingError(f"{what}: expected a srcjax.sharding.NamedSharding, SingleDeviceSharding or a device, "
                        f"got {type(x).__name__}", hint="NamedSharding(mesh, P('data', None))")
