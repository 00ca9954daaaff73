"""Many devices through jaxlib alone: sharded uploads, one SPMD executable for a mesh, sharded results.

A sharded :class:`ShardedArray` holds one jaxlib ``ArrayImpl`` spanning its mesh's devices (shards
in mesh order), so it goes straight back into the next execution. Two jaxlib behaviours shape this
file (``docs/many_devices.md``):

- Splitting an ``ArrayImpl`` into its per-device arrays (``_arrays``, also what ``disassemble`` and
  Python result handlers do) makes jaxlib ``import jax.core`` once, for the shards' abstract
  values. :func:`_device_arrays` lets that one lookup find a module holding srcjax's own
  ``ShapedArray`` instead (only when jax is not imported yet), so reading a sharded array never
  imports jax.
- XLA's CPU runtime deadlocks, then aborts the process after 40 s, when several SPMD executions with
  collectives are queued at once on a small machine (jax does the same). :func:`_one_at_a_time`
  waits for the previous multi-device execution before starting the next.
"""

from __future__ import annotations

import itertools
import math
import sys
import threading
import types
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib import _jax, xla_client  # type: ignore[attr-defined]

from ..core import DistributedError, InternalError, ShapedArray, ShardingError
from ..sharding import NamedSharding, PartitionSpec, Sharding, SingleDeviceSharding

# (xla.py's upload, compile, result and host-read steps, shared by one-device and sharded programs)
from .xla import (
    _COPY,
    Array,
    Backend,
    _buf_device,
    _compile_cached,
    _result_handler,
    _to_numpy,
    plain_put_sharding,
    wrap,
)

__all__ = ["Shard", "ShardedArray", "ShardedExecutable", "assemble", "put_sharded"]


class _XlaSharding(_jax.GSPMDSharding):  # type: ignore[misc]
    """jaxlib's sharding of a multi-device array, with what jaxlib asks jax's shardings for."""

    memory_kind = None

    def _to_xla_hlo_sharding(self, ndim: int) -> Any:
        return self._hlo_sharding

    @property
    def _device_assignment(self) -> tuple[Any, ...]:
        return tuple(self._devices)

    @property
    def device_set(self) -> set[Any]:
        return set(self._devices)

    def is_fully_addressable(self) -> bool:
        me = self._devices[0].client.process_index()
        return all(d.process_index == me for d in self._devices)

    @property
    def is_fully_replicated(self) -> bool:
        return bool(self._hlo_sharding.is_replicated())

    @property
    def num_devices(self) -> int:
        return len(self._devices)


def hlo_sharding(s: Sharding, ndim: int) -> Any:
    """XLA's ``HloSharding`` of ``s`` for an array of rank ``ndim`` (devices numbered in mesh order)."""
    sizes = s.mesh.shape
    names = list(s.mesh.axis_names)
    parts = s.spec.axes(ndim)
    tiles = [math.prod(sizes[a] for a in axes) for axes in parts]
    if all(t == 1 for t in tiles):
        return xla_client.HloSharding.replicate()
    used = [a for axes in parts for a in axes]
    rest = [a for a in names if a not in used and sizes[a] > 1]
    perm = [names.index(a) for a in used] + [names.index(a) for a in rest] + \
        [names.index(a) for a in names if a not in used and a not in rest]
    dims = list(tiles)
    groups = []
    if rest:
        dims.append(math.prod(sizes[a] for a in rest))
        groups = [xla_client.OpSharding.Type.REPLICATED]
    return xla_client.HloSharding.iota_tile(dims, list(s.mesh.axis_sizes), perm, groups)


_XLA: dict[tuple[Sharding, int], _XlaSharding] = {}


def xla_sharding(s: Sharding, ndim: int) -> _XlaSharding:
    key = (s, ndim)
    hit = _XLA.get(key)
    if hit is None:
        hit = _XLA[key] = _XlaSharding(xla_client.DeviceList(tuple(s.mesh.device_list())), hlo_sharding(s, ndim))
    return hit


class Shard:
    """One device's piece of an array: ``device``, ``index`` (slices into the global array), ``data``."""

    __slots__ = ("device", "index", "data", "replica_id")

    def __init__(self, device: Any, index: tuple[slice, ...], data: Any, replica_id: int = 0) -> None:
        self.device, self.index, self.data, self.replica_id = device, index, data, replica_id

    def __repr__(self) -> str:
        return f"Shard(device={self.device!r}, index={self.index!r}, replica_id={self.replica_id})"


_SHARD_LOCK = threading.Lock()


def _stand_ins() -> dict[str, types.ModuleType]:
    """Modules standing in for jax's during :func:`_device_arrays`: ``jax.core`` with srcjax's
    ``ShapedArray`` (the shards' abstract values), and ``jax``/``jax._src`` without submodules (jaxlib
    looks for ``jax._src.sharding_impls``, does without it when missing)."""
    jax, src, core = types.ModuleType("jax"), types.ModuleType("jax._src"), types.ModuleType("jax.core")
    jax.__path__ = []  # type: ignore[attr-defined]
    src.__path__ = []  # type: ignore[attr-defined]
    core.ShapedArray = ShapedArray  # type: ignore[attr-defined]
    jax.core, jax._src = core, src  # type: ignore[attr-defined]
    return {"jax": jax, "jax._src": src, "jax.core": core}


def _device_arrays(buf: Any) -> list[Any]:
    """The per-device arrays of a multi-device ``ArrayImpl``, in its sharding's device order, without
    importing jax (see the module doc): while jaxlib splits it, ``sys.modules`` holds stand-ins for
    the three modules it looks up; a process that imported jax uses jax's own."""
    if "jax" in sys.modules:
        return list(buf._arrays)
    with _SHARD_LOCK:
        added = {k: v for k, v in _stand_ins().items() if k not in sys.modules}
        sys.modules.update(added)
        try:
            return list(buf._arrays)
        finally:
            for k, v in added.items():
                if sys.modules.get(k) is v:
                    del sys.modules[k]


class ShardedArray(Array):
    """A :class:`srcjax.Array` laid out over several devices (or committed to one device that is not
    the default): ``.sharding``, ``.addressable_shards``; ``np.asarray`` assembles it on the host."""

    __slots__ = ("_sharding",)

    def __init__(self, buf: Any, aval: ShapedArray, sharding: Sharding) -> None:
        self._buf = buf
        self.aval = aval
        self._np = None
        self._sharding = sharding

    @property
    def sharding(self) -> Any:
        return self._sharding

    def devices(self) -> set[Any]:
        return self._sharding.device_set

    def _value(self) -> np.ndarray:
        v = self._np
        if v is None:
            s, aval = self._sharding, self.aval
            if not s.is_fully_replicated and not s.is_fully_addressable():  # (a replicated one is read here)
                raise DistributedError(
                    f"reading an array that spans non-addressable (other processes') devices is not possible: "
                    f"this process holds {len(s.addressable_devices)} of its {s.num_devices} shards ({s!r})",
                    hint="srcjax.multihost_utils.process_allgather(x, tiled=True) gathers the whole array into every "
                         "process; "
                         "x.addressable_shards are this process's pieces; or compile with out_shardings="
                         "NamedSharding(mesh, P()) to replicate a result")
            if s.num_devices == 1:
                v = _to_numpy(self._buf, aval)
            else:
                bufs = _device_arrays(self._buf)
                if s.is_fully_replicated:
                    v = _to_numpy(bufs[0], aval)
                else:
                    index = s.devices_indices_map(aval.shape)
                    out = np.empty(aval.shape, aval.dtype)
                    shard = ShapedArray(s.shard_shape(aval.shape), aval.dtype)
                    for b in bufs:
                        out[index[b._sharding._device]] = _to_numpy(b, shard)
                    out.flags.writeable = False
                    v = out
            self._np = v
        return v

    @property
    def addressable_shards(self) -> list[Shard]:
        s, aval = self._sharding, self.aval
        bufs = [self._buf] if s.num_devices == 1 else _device_arrays(self._buf)
        index = s.devices_indices_map(aval.shape)
        shard = ShapedArray(s.shard_shape(aval.shape), aval.dtype, weak_type=aval.weak_type)
        out = []
        seen: dict[Any, int] = {}
        for b in bufs:
            d = b._sharding._device
            idx = index[d]
            key = tuple((i.start, i.stop) for i in idx)
            seen[key] = seen.get(key, -1) + 1
            out.append(Shard(d, idx, ShardedArray(b, shard, SingleDeviceSharding(d)), seen[key]))
        return out

    def __repr__(self) -> str:
        s = self._sharding
        if not s.is_fully_replicated and not s.is_fully_addressable():  # (no values: some live in other processes)
            return f"srcjax.Array(shape={self.shape}, dtype={self.dtype.name}, sharding={self._sharding!r})"
        return super().__repr__()[:-1] + f", sharding={self._sharding!r})"


def put_sharded(x: Any, aval: ShapedArray, s: Sharding) -> Any:
    """Upload the host value ``x`` laid out as ``s`` (each of this process's devices gets a copy of its
    piece: with several processes, each passes the same whole value and uploads its own pieces)."""
    s.check(aval.shape, "value")
    arr = np.asarray(x, dtype=aval.dtype)
    index = s.devices_indices_map(aval.shape)
    return assemble(aval, s, {d: arr[index[d]] for d in local_devices(s)})


def local_devices(s: Sharding) -> list[Any]:
    """The devices of ``s`` this process drives, in mesh order."""
    devs = s.mesh.device_list()
    me = devs[0].client.process_index()
    return [d for d in devs if d.process_index == me]


def assemble(aval: ShapedArray, s: Sharding, pieces: dict[Any, Any]) -> Any:
    """One array laid out as ``s`` from the host pieces of this process's devices (``pieces``: device ->
    its shard's value): one upload per device, then one ``ArrayImpl`` over all of them
    (``batched_device_put`` of a partly replicated layout fails in jaxlib 0.10 with ``bad_function_call``)."""
    piece = ShapedArray(s.shard_shape(aval.shape), aval.dtype, weak_type=aval.weak_type)
    put = xla_client.batched_device_put
    singles = [put(piece, _single(d), [np.ascontiguousarray(pieces[d], dtype=aval.dtype)], [d], True, False, _COPY,
                   True) for d in local_devices(s)]
    return _jax.ArrayImpl(aval, xla_sharding(s, aval.ndim), singles, True, True)


_SINGLE: dict[Any, Any] = {}


def _single(device: Any) -> Any:
    hit = _SINGLE.get(device)
    if hit is None:
        hit = _SINGLE[device] = plain_put_sharding(_jax.SingleDeviceSharding(device))
    return hit


def upload(x: Any, aval: ShapedArray, s: Sharding) -> Any:
    """``x`` (a host value or an array) laid out as ``s``: its buffer when it already is, else through
    the host (a change of layout)."""
    if type(x) is ShardedArray and (x._sharding is s or x._sharding == s):
        return x._buf
    if isinstance(x, ShardedArray) and x._sharding.is_equivalent_to(s, aval.ndim):
        return x._buf
    if type(x) is Array and s.num_devices == 1 and _buf_device(x._buf) == s.mesh.devices.flat[0]:
        return x._buf
    if isinstance(x, ShardedArray) and not x._sharding.is_fully_addressable():
        raise ShardingError(f"an array spanning several processes, laid out as {x._sharding!r}, passed where the "
                            f"program expects {s!r}: it cannot be laid out anew through the host",
                            hint="give in_shardings matching the array's sharding, or device_put it that way first")
    return put_sharded(np.asarray(x) if isinstance(x, Array) else x, aval, s)


_INFLIGHT: list[Any] = [None]


def _one_at_a_time() -> None:
    """Wait for the last multi-device execution before starting another (see the module doc)."""
    last = _INFLIGHT[0]
    if last is not None:
        _INFLIGHT[0] = None
        last.block_until_ready()


def spmd_options(mesh: Any) -> Any:
    n = mesh.size
    options = xla_client.CompileOptions()
    if n == 1:  # one device: a one-device program (bench_spmd measured its step at 4.7 ms with an explicit
        # device assignment on device 0, 2.8 ms without: not understood, so device 0 keeps the defaults)
        dev = mesh.device_list()[0]
        if dev.id != 0:
            options.device_assignment = xla_client.DeviceAssignment.create(np.array([[dev.id]], dtype=np.int32))
        return options
    options.num_replicas = 1
    options.num_partitions = n
    build = options.executable_build_options
    build.use_spmd_partitioning = n > 1
    if hasattr(build, "use_shardy_partitioner"):
        build.use_shardy_partitioner = True
    options.device_assignment = xla_client.DeviceAssignment.create(
        np.array([[d.id for d in mesh.device_list()]], dtype=np.int32))
    return options


def replica_options(mesh: Any) -> Any:
    """Replica mode (a pmapped program, ``lower/replicas.py``): replica ``k`` on the mesh's ``k``-th device."""
    options = xla_client.CompileOptions()
    options.num_replicas = mesh.size
    options.num_partitions = 1
    options.executable_build_options.use_spmd_partitioning = False
    options.device_assignment = xla_client.DeviceAssignment.create(
        np.array([[d.id] for d in mesh.device_list()], dtype=np.int32))
    return options


class ShardedExecutable:
    """A program compiled once for all devices of ``mesh`` (XLA's SPMD partitioner splits it), or
    (``replicas``) a per-device program run by each of them (``srcjax.pmap``)."""

    array_type = None  # (every argument goes through upload: its layout is checked)

    def __init__(self, text: str, in_avals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray], backend: Backend,
                 mesh: Any, in_shardings: Sequence[Sharding | None], out_shardings: Sequence[Sharding | None],
                 replicas: bool = False) -> None:
        self.text = text
        self.in_avals = list(in_avals)
        self.backend = backend
        self.mesh = mesh
        self.out_avals = list(out_avals)
        devs = mesh.device_list()
        options = replica_options(mesh) if replicas and mesh.size > 1 else spmd_options(mesh)
        self.loaded = _compile_cached(text, backend, options, xla_client.DeviceList(tuple(devs)))
        replicated = NamedSharding(mesh, PartitionSpec())
        in_shardings = list(in_shardings) or [None] * len(self.in_avals)
        if any(s is None for s in in_shardings) and mesh.size > 1:  # as XLA's propagation chose
            chosen = [_from_hlo(mesh, p, a.ndim) for p, a in zip(self.loaded.get_parameter_shardings(), self.in_avals)]
            in_shardings = [s if s is not None else c for s, c in zip(in_shardings, chosen)]
        self.in_shardings = [s if s is not None else replicated for s in in_shardings]
        if any(s is None for s in out_shardings) and mesh.size > 1:
            chosen = [_from_hlo(mesh, p, a.ndim) for p, a in zip(self.loaded.get_output_shardings(), out_avals)]
            out_shardings = [s if s is not None else c for s, c in zip(out_shardings, chosen)]
        if mesh.size == 1:
            one = SingleDeviceSharding(devs[0])
            out_shardings = [one] * len(self.out_avals)
            self.in_shardings = [one] * len(self.in_shardings)
        self.out_shardings: list[Sharding] = [s if s is not None else replicated for s in out_shardings]
        if mesh.size == 1:
            one_dev = _jax.SingleDeviceSharding(devs[0])
            self.handlers = [_result_handler(a, one_dev) for a in out_avals]
        else:
            self.handlers = [_result_handler(a, xla_sharding(s, a.ndim)) for a, s in zip(out_avals, self.out_shardings)]
        self.many = mesh.size > 1
        self.plain = mesh.size == 1 and devs[0] == backend.device  # results: plain arrays on the default device

    def upload(self, leaves: Sequence[Any]) -> list[Any]:
        return [upload(x, a, s) for x, a, s in zip(leaves, self.in_avals, self.in_shardings)]

    def put(self, x: Any, aval: ShapedArray) -> Any:  # (unused: upload takes each leaf's sharding)
        raise InternalError("a sharded program uploads its arguments with upload()")

    def run(self, bufs: list[Any]) -> list[Array]:
        if self.many:
            _one_at_a_time()
        res = self.loaded.execute_sharded(bufs).consume_with_handlers(self.handlers)
        if self.many and res:
            _INFLIGHT[0] = res[0]
        if self.plain:
            return list(map(wrap, res, self.out_avals))
        return [ShardedArray(b, a, s) for b, a, s in zip(res, self.out_avals, self.out_shardings)]

    def as_text(self) -> str:
        """The partitioned, optimized HLO (one device's program, with its collectives)."""
        return str(self.loaded.hlo_modules()[0].to_string())

    def cost_analysis(self) -> Any:
        return self.loaded.cost_analysis()


def _from_hlo(mesh: Any, proto: Any, ndim: int) -> Sharding:
    """The NamedSharding over ``mesh`` whose layout is XLA's ``proto`` (what XLA chose for an output
    whose sharding was left open)."""
    hlo = xla_client.HloSharding.from_proto(proto)
    if hlo.is_replicated():
        return NamedSharding(mesh, PartitionSpec())
    axes = [a for a in mesh.axis_names if mesh.shape[a] > 1]
    options: list[list[Any]] = []
    for _ in range(ndim):
        opts: list[Any] = [None]
        for k in range(1, len(axes) + 1):
            opts += [p if len(p) > 1 else p[0] for p in itertools.permutations(axes, k)]
        options.append(opts)
    for combo in itertools.product(*options):
        flat = [a for c in combo if c is not None for a in ((c,) if isinstance(c, str) else c)]
        if len(set(flat)) != len(flat):
            continue
        s = NamedSharding(mesh, PartitionSpec(*combo))
        if hlo_sharding(s, ndim) == hlo:
            return s
    raise InternalError(f"internal error: XLA chose a layout {hlo} for an output that no PartitionSpec over "
                        f"{mesh!r} describes", hint="give out_shardings to srcjax.compile")


def compile_sharded(text: str, in_avals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray],
                    platform: str | None, plan: Any) -> ShardedExecutable:
    """Compile an annotated module (``lower/shardy.py``) for the devices of ``plan.mesh``."""
    from .xla import get_backend, register_kernels

    check_same_mesh(plan.in_leaves)
    backend = get_backend(platform)
    register_kernels(text, backend)
    try:
        return ShardedExecutable(text, in_avals, out_avals, backend, plan.mesh, plan.in_leaves, plan.out_leaves,
                                 getattr(plan, "replicas", False))
    except _jax.JaxRuntimeError as e:
        numbered = "\n".join(f"{i + 1:4d}  {line}" for i, line in enumerate(text.splitlines()))
        raise InternalError(f"internal error: XLA rejected the generated StableHLO: {e}\n{numbered}",
                            hint="this is a bug in srcjax; please report it with this program") from e


def check_same_mesh(shardings: Sequence[Sharding | None]) -> None:
    meshes = {s.mesh for s in shardings if s is not None}
    if len(meshes) > 1:
        raise ShardingError(f"arguments on different meshes: {sorted(map(repr, meshes))}",
                            hint="device_put every argument of one call onto the same mesh")


def _single_sharding(self: Array) -> Any:
    """Where a one-device array lives: a ``SingleDeviceSharding``."""
    return SingleDeviceSharding(_buf_device(self._buf))


def _single_shards(self: Array) -> list[Shard]:
    """The pieces on each device (``.device``, ``.index``, ``.data``): here the whole array on its device."""
    return [Shard(_buf_device(self._buf), tuple(slice(None) for _ in self.shape), self)]


Array.sharding = property(_single_sharding)  # type: ignore[attr-defined]
Array.addressable_shards = property(_single_shards)  # type: ignore[attr-defined]
Array.devices = lambda self: {_buf_device(self._buf)}  # type: ignore[attr-defined]
