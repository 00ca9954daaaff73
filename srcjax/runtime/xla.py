"""PJRT through jaxlib alone: clients, compilation, upload, execution, results.

Every private jaxlib API srcjax relies on is used in this file, behind four
names: :func:`get_backend`, :func:`compile_text`, :func:`device_put` and
:class:`Executable`. ``tests/test_runtime.py`` pins their behaviour so that a
jaxlib upgrade that changes them fails loudly.

Fast path (see shared/RUNTIME_FACTS.md): ``execute_sharded`` + result
handlers, uploads with ``batched_device_put`` copying the host buffer
(``IMMUTABLE_ONLY_DURING_CALL``) so later NumPy mutation cannot leak in.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from jaxlib import _jax, xla_client  # type: ignore[attr-defined]

from ..core import ArgumentError, DistributedError, InternalError, ShapedArray, TranspileError, canonical_dtype
from ..lower import host_print
from . import compile_worker, disk_cache, distributed, host_upload

_COPY = xla_client.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL


_REPLICATED = xla_client.HloSharding.replicate()


def _to_xla_hlo_sharding(self: Any, ndim: int) -> Any:
    return _REPLICATED


def plain_put_sharding(sharding: Any) -> Any:
    """``sharding`` (jaxlib's own ``SingleDeviceSharding``) as what uploads lay their buffers out as.

    ``batched_device_put`` reads one method of the sharding jax defines in Python,
    ``_to_xla_hlo_sharding``; jax adds it to jaxlib's class itself when imported (replacing this
    one), and srcjax adds it where jax has not. The upload's buffers then carry jaxlib's own class,
    which the C++ dispatcher checks faster than a Python subclass of it (srcjax's before): measured
    0.1-0.15 us a device argument, 4-8% of a training step of ``benchmarks/bench_models.py``."""
    cls = type(sharding)
    if not hasattr(cls, "_to_xla_hlo_sharding"):
        cls._to_xla_hlo_sharding = _to_xla_hlo_sharding
    return sharding


class Backend:
    """One PJRT client and its default device."""

    def __init__(self, platform: str) -> None:
        self.platform = platform
        self.client: Any
        if platform == "cpu":
            n = cpu_device_count()
            if distributed.current() is not None:  # every process's devices (srcjax.distributed.initialize)
                self.client = distributed.make_cpu_client(n)
            else:
                # (without a count XLA reads XLA_FLAGS=--xla_force_host_platform_device_count=N itself, as jax)
                self.client = xla_client.make_cpu_client() if n is None else xla_client.make_cpu_client(num_devices=n)
        elif platform in ("gpu", "cuda"):
            if distributed.current() is not None:
                raise DistributedError("several processes (srcjax.distributed) run on CPU only for now",
                                     hint="set SRCJAX_PLATFORM=cpu in every process")
            self.client = _make_cuda_client()
        else:
            raise ValueError(f"unknown platform {platform!r} (use 'cpu' or 'gpu')")
        self.device = self.client.local_devices()[0]  # (this process's first: devices()[0] is process 0's)
        self.device_list = xla_client.DeviceList((self.device,))
        self.result_sharding = _jax.SingleDeviceSharding(self.device)
        self.put_sharding = plain_put_sharding(self.result_sharding)

    def __repr__(self) -> str:
        return f"Backend({self.platform}: {self.device})"

    def compile_with_callbacks(self, text: str, callbacks: list[Any]) -> Any:
        """:func:`compile_callbacks_cached` for this backend."""
        return compile_callbacks_cached(text, self, callbacks)

    def result_handler(self, aval: ShapedArray) -> Any:
        """The handler that wraps a result of ``aval`` on this backend's device."""
        return result_handler(aval, self.result_sharding)


def cpu_device_count() -> int | None:
    """``SRCJAX_NUM_CPU_DEVICES``: how many CPU devices the client has (read once, when it is made)."""
    raw = os.environ.get("SRCJAX_NUM_CPU_DEVICES", "").strip()
    if not raw:
        return None
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise TranspileError(f"SRCJAX_NUM_CPU_DEVICES={raw!r} is not a positive number of devices",
                             hint="SRCJAX_NUM_CPU_DEVICES=4 gives 4 CPU devices")
    return n


_CUDA_C_API: Any = None  # the CUDA plugin's PJRT C API, when srcjax loaded the plugin (not jax)


def _make_cuda_client() -> Any:
    for plugin in ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12"):
        try:
            spec = importlib.util.find_spec(plugin)
        except ModuleNotFoundError:
            spec = None
        if spec is None or not spec.submodule_search_locations:
            continue
        path = os.path.join(list(spec.submodule_search_locations)[0], "xla_cuda_plugin.so")
        if os.path.exists(path):
            # jax registers the same plugin under the same name; reuse it when jax
            # got there first (jax must be imported and initialized first when
            # both run in one process: its own registration refuses a second).
            if not xla_client.pjrt_plugin_loaded("cuda"):
                global _CUDA_C_API
                _CUDA_C_API = xla_client.load_pjrt_plugin_dynamically("cuda", path)
            if not xla_client.pjrt_plugin_initialized("cuda"):
                xla_client.initialize_pjrt_plugin("cuda")
            return xla_client.make_c_api_client("cuda", xla_client.generate_pjrt_gpu_plugin_options(), None)
    raise RuntimeError("no GPU PJRT plugin found: pip install jax-cuda13-pjrt (or jax-cuda12-pjrt)")


def result_handler(aval: ShapedArray, sharding: Any) -> Any:
    """``array_result_handler``: jaxlib 0.10 takes (aval, sharding, committed, _skip_checks), 0.11 drops the last."""
    try:
        return _jax.array_result_handler(aval, sharding, True, True)
    except TypeError:
        return _jax.array_result_handler(aval, sharding, True)


_result_handler = result_handler  # (the sharded path's name for it)

_BACKENDS: dict[str, Backend] = {}
_LOCK = threading.Lock()


def get_backend(platform: str | None = None) -> Backend:
    platform = platform or os.environ.get("SRCJAX_PLATFORM", "cpu")
    if platform == "cuda":
        platform = "gpu"
    b = _BACKENDS.get(platform)
    if b is None:
        with _LOCK:
            b = _BACKENDS.get(platform)
            if b is None:
                b = _BACKENDS[platform] = Backend(platform)
    return b


def backends_initialized() -> bool:
    """Whether this process has made a client (its devices are fixed from then on)."""
    return bool(_BACKENDS)


def devices(platform: str | None = None) -> list[Any]:
    return list(get_backend(platform).client.devices())


def _buf_device(buf: Any) -> Any:
    return buf._sharding._device


class _HostView:
    """Exposes a CPU device buffer to NumPy by pointer; keeps the buffer alive."""

    __slots__ = ("buf", "__array_interface__")

    def __init__(self, buf: Any, aval: ShapedArray, typestr: str) -> None:
        self.buf = buf
        self.__array_interface__ = {
            "data": (buf.unsafe_buffer_pointer(), True), "shape": aval.shape, "typestr": typestr, "version": 3,
        }


_BUFFER_PROTOCOL_DTYPES = {np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128)}


def buffer_platform(buf: Any) -> str:
    p = buf.platform
    return str(p() if callable(p) else p)


def _to_numpy(buf: Any, aval: ShapedArray) -> np.ndarray:
    """A read-only NumPy view of a result (zero-copy on CPU), without importing jax."""
    d = aval.dtype
    if aval.size == 0:
        v = np.empty(aval.shape, d)
    elif buffer_platform(buf) == "cpu":
        if d in _BUFFER_PROTOCOL_DTYPES:  # native dtypes: the Python buffer protocol
            v = np.asarray(buf)
        else:  # bfloat16 and friends: same-size unsigned ints, viewed as the real dtype
            v = np.asarray(_HostView(buf, aval, f"<u{d.itemsize}")).view(d)
    else:
        v = buf._single_device_array_to_np_array_did_copy()[0]
    if v.dtype != d:
        v = v.astype(d)
    if v.flags.writeable:
        v.flags.writeable = False
    return v


class Array:
    """A result living on the device. ``np.asarray(a)`` reads it (zero-copy on CPU);
    passing it back into a compiled function costs no host round trip.

    Made by :func:`wrap`. No ``__init__``: ``Array()`` then allocates one in C, without a Python frame,
    which is how the results of jaxlib's C++ dispatcher are built (``cpp_dispatch``: ~360 of ~2400
    instructions per result, against ``object.__new__(Array)``)."""

    __slots__ = ("_buf", "aval", "_np")
    __array_priority__ = 100
    _buf: Any
    aval: ShapedArray
    _np: np.ndarray | None

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    @property
    def size(self) -> int:
        return self.aval.size

    def _value(self) -> np.ndarray:
        v = self._np
        if v is None:
            if self._buf.is_deleted():
                raise donated_error()
            v = self._np = _to_numpy(self._buf, self.aval)
        return v

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        v = self._value()
        if dtype is not None and np.dtype(dtype) != v.dtype:
            return v.astype(dtype)
        if copy:
            return v.copy()
        return v

    @property
    def __array_struct__(self) -> Any:
        """NumPy's first question to an array-like: answered with the read-only view's own (a native dtype;
        NumPy then builds its array without asking for ``__array_interface__`` and ``__array__``, whose
        misses went through ``__getattr__`` and its AttributeError: ``np.asarray`` of a fresh result 8.7 ->
        6.9 us). A dtype the interface cannot spell (bfloat16, float8) is read through :meth:`__array__`."""
        v = self._value()
        if v.dtype in _BUFFER_PROTOCOL_DTYPES:
            return v.__array_struct__
        raise AttributeError("__array_struct__")

    def block_until_ready(self) -> Array:
        self._buf.block_until_ready()
        return self

    def __repr__(self) -> str:
        return "srcjax.Array(" + np.array2string(self._value(), separator=", ", prefix="srcjax.Array(") + \
            f", dtype={self.dtype.name})"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Any:
        return iter(self._value())

    def __getitem__(self, key: Any) -> Any:
        return self._value()[key]

    def __float__(self) -> float:
        return float(self._value())

    def __int__(self) -> int:
        return int(self._value())

    def __bool__(self) -> bool:
        return bool(self._value())

    def __index__(self) -> int:
        return int(self._value())

    def item(self) -> Any:
        return self._value().item()

    def tolist(self) -> Any:
        return self._value().tolist()

    if TYPE_CHECKING:  # (NumPy's other attributes, forwarded by _forwarded below)
        def __getattr__(self, name: str) -> Any: ...

    @property
    def at(self) -> _HostAt:
        """JAX's functional updates, run on the host: ``a.at[k].set(v)`` is a NumPy copy of ``a`` with
        ``[k]`` set to ``v`` (``add``/``multiply``/``min``/``max`` combine repeated indices, as JAX does)."""
        return _HostAt(self._value())

    def __format__(self, spec: str) -> str:
        v = self._value()
        return format(v.item() if v.ndim == 0 else v, spec) if spec else str(v)

    # NumPy semantics for convenience (results are NumPy arrays).
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        conv = [np.asarray(x) if isinstance(x, Array) else x for x in inputs]
        return getattr(ufunc, method)(*conv, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        def conv(x: Any) -> Any:
            if isinstance(x, Array):
                return np.asarray(x)
            if isinstance(x, (list, tuple)):
                return type(x)(conv(y) for y in x)
            if isinstance(x, dict):
                return {k: conv(y) for k, y in x.items()}
            return x
        return func(*conv(args), **conv(kwargs))


def wrap(buf: Any, aval: ShapedArray | None = None) -> Array:
    """The srcjax.Array around the device buffer ``buf`` (of ``aval``; the buffer's own by default)."""
    a = Array()
    a._buf = buf
    a.aval = buf.aval if aval is None else aval
    a._np = None
    return a


class _HostAt:
    __slots__ = ("_v",)

    def __init__(self, v: np.ndarray) -> None:
        self._v = v

    def __getitem__(self, key: Any) -> _HostUpdate:
        return _HostUpdate(self._v, key)


class _HostUpdate:
    __slots__ = ("_v", "_key")
    _UFUNCS = {"add": np.add, "multiply": np.multiply, "mul": np.multiply, "divide": np.true_divide,
               "power": np.power, "min": np.minimum, "max": np.maximum}

    def __init__(self, v: np.ndarray, key: Any) -> None:
        self._v, self._key = v, key

    def get(self, **_: Any) -> Any:
        return self._v[self._key]

    def set(self, value: Any, **_: Any) -> np.ndarray:
        out = self._v.copy()
        out[self._key] = np.asarray(value)
        return out

    def __getattr__(self, name: str) -> Any:
        ufunc = _HostUpdate._UFUNCS.get(name)
        if ufunc is None:
            raise AttributeError(f"'.at[...]' has no update '{name}'")

        def update(value: Any, **_: Any) -> np.ndarray:
            out = self._v.copy()
            ufunc.at(out, self._key, np.asarray(value).astype(out.dtype, copy=False))
            return out
        return update


def _np_op(name: str) -> Any:
    ufunc = getattr(np, name)

    def op(self: Array, other: Any) -> Any:
        return ufunc(self._value(), np.asarray(other) if isinstance(other, Array) else other)

    def rop(self: Array, other: Any) -> Any:
        return ufunc(other, self._value())

    return op, rop


for _dunder, _uf in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "true_divide"),
                     ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "power"),
                     ("matmul", "matmul"), ("and", "bitwise_and"), ("or", "bitwise_or"),
                     ("xor", "bitwise_xor")]:
    _op, _rop = _np_op(_uf)
    setattr(Array, f"__{_dunder}__", _op)
    setattr(Array, f"__r{_dunder}__", _rop)
for _dunder, _uf in [("lt", "less"), ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal"),
                     ("eq", "equal"), ("ne", "not_equal")]:
    setattr(Array, f"__{_dunder}__", _np_op(_uf)[0])


def _forwarded(name: str) -> property:
    """NumPy's attribute ``name`` (``.T``, ``.sum``, ``.reshape``, ``.astype``...) read from the host copy, as
    the operators above do. Class attributes, not a ``__getattr__``: a class with one gets CPython's slower
    attribute hook for every attribute read, ``_buf`` too, which jaxlib's C++ dispatcher reads from each
    srcjax.Array argument of a call (``cpp_dispatch``: ~130 of ~1000 instructions per argument)."""

    def read(self: Array) -> Any:
        return getattr(self._value(), name)

    read.__name__ = name
    return property(read, doc=f"``numpy.ndarray.{name}`` of the host copy.")


for _name in dir(np.ndarray):
    if _name[:1] != "_" and not hasattr(Array, _name):
        setattr(Array, _name, _forwarded(_name))
Array.__neg__ = lambda self: np.negative(self._value())  # type: ignore
Array.__abs__ = lambda self: np.absolute(self._value())  # type: ignore
Array.__hash__ = None  # type: ignore[assignment]


def donated_error() -> ArgumentError:
    """Using an array whose buffer a call took (``donate_argnums``: ``srcjax/donation.py``)."""
    return ArgumentError("this srcjax.Array was donated to a compiled function (donate_argnums / donate_argnames): "
                         "its buffer now holds a result, and the array can no longer be read or passed",
                         hint="use the function's result in its place (params = step(params, ...)), or do not "
                              "donate this argument")


def _execute_error(e: Exception, bufs: Sequence[Any]) -> Exception:
    """The error for a failed execution: srcjax's own when an argument's buffer was donated (taken by
    an earlier call, or released after one: ``cpp_calls.release_donated``)."""
    if "donated" in str(e) or any(b.is_deleted() for b in bufs):
        return donated_error()
    return e


def device_put(x: Any, aval: ShapedArray, backend: Backend) -> Any:
    """Upload a host value (copied) and return the device buffer."""
    if isinstance(x, Array):
        return x._buf
    arr = np.asarray(x, dtype=aval.dtype)
    if host_upload.active():  # (before ml_dtypes is imported: see runtime/host_upload.py)
        bufs = host_upload.upload([arr], [aval], backend)
        if bufs is not None:
            return bufs[0]
    return xla_client.batched_device_put(aval, backend.put_sharding, [arr], [backend.device], True, False,
                                         _COPY, True)


class Executable:
    """A compiled program: uploads arguments, runs, wraps results as :class:`Array`."""

    def __init__(self, text: str, out_avals: Sequence[ShapedArray], backend: Backend,
                 meanwhile: Callable[[], Any] | None = None) -> None:
        self.text = text
        self.backend = backend
        self.out_avals = list(out_avals)
        if host_print.CALLBACK_TARGET in text:  # print(...) inside: the module with its host callbacks
            self.loaded = _compile_with_callbacks(text, backend)
            if meanwhile is not None:
                meanwhile()
        else:
            self.loaded = _compile_cached(text, backend, meanwhile=meanwhile)
        self.handlers = [result_handler(a, backend.result_sharding) for a in out_avals]
        self.array_type = Array
        sharding, dev = backend.put_sharding, [backend.device]
        put = xla_client.batched_device_put

        def put_one(x: Any, aval: ShapedArray) -> Any:
            if type(x) is not np.ndarray or x.dtype != aval.dtype:
                if isinstance(x, Array):
                    return x._buf
                x = np.asarray(x, dtype=aval.dtype)
            return put(aval, sharding, [x], dev, True, False, _COPY, True)

        self.put = put_one

    def put_many(self, leaves: Sequence[Any], avals: Sequence[ShapedArray]) -> list[Any]:
        """Device buffers of a call's arguments. The host leaves go up two or more together, in one
        execution (``runtime/host_upload.py``: ~4.5 us + 1.7 us a leaf, against ~4.6 us a leaf one
        by one), and a single one that way too while ml_dtypes is not imported (with it imported, a
        signature's first uploads go leaf by leaf: ``host_upload._young``)."""
        if len(leaves) >= 2 and Array not in map(type, leaves):  # all on the host: one upload, no lists
            up = host_upload.upload(leaves, avals, self.backend)  # (the plan's avals: its program remembered)
            if up is not None:
                return up
            return [self.put(x, a) for x, a in zip(leaves, avals)]  # (asked once: the answer would not change)
        bufs: list[Any] = []
        host: list[int] = []
        for i, x in enumerate(leaves):  # (no `None in bufs`: jax, when imported, gives buffers an array __eq__)
            if type(x) is Array:
                bufs.append(x._buf)
            else:
                bufs.append(None)
                host.append(i)
        if len(host) >= 2 or (host and host_upload.active()):
            up = host_upload.upload([leaves[i] for i in host], [avals[i] for i in host], self.backend)
            if up is not None:
                for i, b in zip(host, up):
                    bufs[i] = b
                return bufs
        for i in host:
            bufs[i] = self.put(leaves[i], avals[i])
        return bufs

    def run_one(self, bufs: list[Any]) -> Array:
        """:meth:`run` of a program with one result."""
        try:
            return wrap(self.loaded.execute_sharded(bufs).consume_with_handlers(self.handlers)[0], self.out_avals[0])
        except _jax.JaxRuntimeError as e:
            raise _execute_error(e, bufs) from None

    def run(self, bufs: list[Any]) -> list[Array]:
        try:
            res = self.loaded.execute_sharded(bufs).consume_with_handlers(self.handlers)
        except _jax.JaxRuntimeError as e:
            raise _execute_error(e, bufs) from None
        avals = self.out_avals
        if len(res) == 1:
            return [wrap(res[0], avals[0])]
        return list(map(wrap, res, avals))

    def as_text(self) -> str:
        """Optimized HLO after XLA's passes."""
        return str(self.loaded.hlo_modules()[0].to_string())

    def cost_analysis(self) -> Any:
        return self.loaded.cost_analysis()

    _inline: bool | None = None

    def runs_inline(self) -> bool:
        """Whether XLA's CPU client runs this program on the calling thread, so that its results are
        ready when ``execute_sharded`` returns: a program of fewer than :data:`INLINE_FLOPS` flops by
        XLA's cost analysis (its ``cheap_computation_`` rule, ``xla/pjrt/cpu/cpu_client.cc``); any other
        runs on XLA's threads, asynchronously. Computed once (~0.1 ms)."""
        if self._inline is None:
            try:
                flops = float(self.loaded.cost_analysis().get("flops", INLINE_FLOPS))
            except Exception:  # (a jaxlib without the analysis for this program: say asynchronous)
                flops = INLINE_FLOPS
            self._inline = self.backend.platform == "cpu" and flops < INLINE_FLOPS
        return self._inline


INLINE_FLOPS = 1000.0  # (XLA:CPU's threshold for running a program inline: Executable.runs_inline)

_LAPACK_REGISTERED = False


def _register_lapack(backend: Backend) -> None:
    """Make jaxlib's LAPACK FFI kernels (``@lapack_*_ffi``, ``np.linalg``) callable, once per process.

    Registered the first time a program calls one (most programs never do); on a GPU, where they
    would be cuSOLVER's, np.linalg is refused with a clear error instead."""
    global _LAPACK_REGISTERED
    if backend.platform != "cpu":
        raise TranspileError(f"np.linalg decompositions (solve, inv, det, cholesky, eigh, svd, qr, ...) run on "
                             f"CPU only for now, not on {backend.platform!r}",
                             hint="compile this function with device='cpu'")
    with _LOCK:
        if not _LAPACK_REGISTERED:
            from jaxlib import lapack  # (imports without jax: shared/RUNTIME_FACTS.md)

            for name, fn, api in lapack.registrations()["cpu"]:
                xla_client.register_custom_call_target(name, fn, "cpu", api)
            lapack._lapack.initialize()
            _LAPACK_REGISTERED = True


_CUSOLVER_REGISTERED = False
# NVIDIA's libraries the plugin's solver module links, in dependency order, by the pip package holding
# them (jax_plugins/cuda preloads the same from the same places before importing its kernel modules)
_CUDA_LIBRARIES = [("nvidia.cu13", ["libcudart.so.13", "libnvJitLink.so.13", "libcublasLt.so.13", "libcublas.so.13",
                                    "libcusparse.so.12", "libcusolver.so.12"]),
                   ("nvidia.cuda_runtime", ["libcudart.so.12"]), ("nvidia.nvjitlink", ["libnvJitLink.so.12"]),
                   ("nvidia.cublas", ["libcublasLt.so.12", "libcublas.so.12"]),
                   ("nvidia.cusparse", ["libcusparse.so.12"]), ("nvidia.cusolver", ["libcusolver.so.11"])]


def _preload_cuda_libraries() -> None:
    """Load NVIDIA's pip-installed CUDA libraries, for a plugin solver module that did not find them on
    its own search path; a library not there is skipped."""
    import ctypes

    for package, names in _CUDA_LIBRARIES:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.submodule_search_locations:
            continue
        for name in names:
            path = os.path.join(list(spec.submodule_search_locations)[0], "lib", name)
            if os.path.exists(path):
                try:
                    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                except OSError:
                    pass


def _register_cusolver(backend: Backend) -> None:
    """Make the CUDA plugin's cuSOLVER kernels (``@cusolver_*_ffi``, ``@cu_lu_pivots_to_permutation``:
    np.linalg on a GPU) callable, once per process, as jax does (``jax_plugins/cuda``: a custom-call
    handler for "CUDA" that registers through the plugin's C API; jax/_src/lax/linalg.py: the kernels of
    ``jaxlib.gpu_solver`` and ``jaxlib.gpu_linalg``, which import the ``jax_cuda13_plugin`` package's
    nanobind modules, never jax). In a process where jax registered them first, nothing is registered
    twice."""
    global _CUSOLVER_REGISTERED
    if backend.platform != "gpu":
        raise InternalError(f"internal error: cuSOLVER kernels in a module compiled for {backend.platform!r}",
                            hint="this is a bug in srcjax; please report it with this program")
    import sys

    with _LOCK:
        if _CUSOLVER_REGISTERED:
            return
        try:
            from jaxlib import gpu_linalg, gpu_solver  # (import the CUDA plugin's kernel modules, not jax)

            targets = gpu_solver.registrations()["CUDA"] + gpu_linalg.registrations()["CUDA"]
            if not any(name == "cusolver_getrf_ffi" for name, _, _ in targets):  # (a library not found, maybe)
                _preload_cuda_libraries()
                gpu_solver, gpu_linalg = importlib.reload(gpu_solver), importlib.reload(gpu_linalg)
                targets = gpu_solver.registrations()["CUDA"] + gpu_linalg.registrations()["CUDA"]
        except (ImportError, KeyError, AttributeError):  # (a jaxlib without these modules)
            targets = []
        if not any(name == "cusolver_getrf_ffi" for name, _, _ in targets):
            raise TranspileError("np.linalg on a GPU needs the CUDA plugin's cuSOLVER kernels, which were not "
                                 "found (or their version differs from jaxlib's)",
                                 hint="pip install jax-cuda13-plugin of jaxlib's version, or compile with "
                                      "device='cpu'")
        # (xla_client's private tables: the "CUDA" handler, and what waits for one; jax queues its own
        # registrations there when imported, and makes the handler when it starts the plugin)
        handlers = getattr(xla_client, "_custom_callback_handler", {})
        queued = getattr(xla_client, "_custom_callback", {})
        jax_has_them = "jax._src.lax.linalg" in sys.modules
        waiting = {entry[0] for entry in queued.get("CUDA", ())}
        if "CUDA" not in handlers:
            ext = None
            for pkg in ("jax_cuda13_plugin", "jax_cuda12_plugin"):
                try:
                    ext = importlib.import_module(f"{pkg}.cuda_plugin_extension")
                    break
                except ImportError:
                    continue
            if ext is None or _CUDA_C_API is None:
                raise TranspileError("np.linalg on a GPU needs the CUDA plugin's extension module "
                                     "(jax_cuda13_plugin.cuda_plugin_extension), which was not found",
                                     hint="pip install jax-cuda13-plugin, or compile with device='cpu'")
            xla_client.register_custom_call_handler(
                "CUDA", functools.partial(ext.register_custom_call_target, _CUDA_C_API))  # (registers `waiting`)
        elif jax_has_them:
            waiting = {name for name, _, _ in targets}  # (jax registered them when it started the plugin)
        for name, fn, api in targets:
            if name not in waiting:
                xla_client.register_custom_call_target(name, fn, "CUDA", api)
        _CUSOLVER_REGISTERED = True


def register_kernels(text: str, backend: Backend) -> None:
    """Make the custom-call kernels ``text`` calls callable on ``backend`` (np.linalg: LAPACK's on CPU,
    cuSOLVER's on a GPU), before XLA compiles it: every compile of a module srcjax wrote calls this."""
    if "@lapack_" in text:
        _register_lapack(backend)
    if "@cusolver_" in text or "@cu_lu_pivots_to_permutation" in text:
        _register_cusolver(backend)


_MLIR_CONTEXT: Any = None


def _compile_cached(text: str, backend: Backend, options: Any = None, device_list: Any = None,
                    meanwhile: Callable[[], Any] | None = None) -> Any:
    """XLA's executable for ``text``: from the persistent cache when a run compiled it before
    (``runtime/disk_cache.py``), else compiled and stored there. ``options`` and ``device_list``
    default to one device's (an SPMD program passes its partitions and its mesh's devices).
    ``meanwhile()`` runs on this thread while XLA compiles (``compile_worker.overlapped``), or loads."""
    if options is None:
        options = xla_client.CompileOptions()
    if device_list is None:
        device_list = backend.device_list

    def compile() -> Any:
        return backend.client.compile_and_load(text, device_list, options)

    if disk_cache.cache_dir() is None:
        return compile_worker.overlapped(compile, meanwhile)
    key = disk_cache.program_key(text, backend, options)
    blob = disk_cache.load(key)
    if blob is not None:
        def deserialize() -> Any:
            try:
                return backend.client.deserialize_executable(blob, device_list, options)
            except Exception:  # noqa: BLE001 - an entry XLA cannot load: compile it again, and replace it
                return None

        loaded = compile_worker.overlapped(deserialize, meanwhile)
        if loaded is not None:
            return loaded
        meanwhile = None  # (it ran)
    loaded = compile_worker.overlapped(compile, meanwhile)
    # stored on a thread of its own: the first call returns without waiting for serialize + disk (3-5 ms)
    disk_cache.store_later(key, lambda: backend.client.serialize_executable(loaded))
    return loaded


def _mlir_module(text: str) -> Any:
    """``text`` parsed into an ``ir.Module`` (only a module takes ``host_callbacks``); call under ``_LOCK``."""
    global _MLIR_CONTEXT
    from jaxlib.mlir import ir  # (imports without jax)
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext  # type: ignore[attr-defined]
    from jaxlib.mlir.dialects import stablehlo

    if _MLIR_CONTEXT is None:
        registry = ir.DialectRegistry()
        _jax_mlir_ext.register_dialects(registry)
        ctx = ir.Context()
        ctx.append_dialect_registry(registry)
        ctx.load_all_available_dialects()
        stablehlo.register_dialect(ctx)
        _MLIR_CONTEXT = ctx
    with _MLIR_CONTEXT:
        return ir.Module.parse(text)


def _compile_with_callbacks(text: str, backend: Backend) -> Any:
    """Compile a module that calls Python (``print``): only an ``ir.Module`` takes ``host_callbacks``
    (``shared/RUNTIME_FACTS.md``, "Host callbacks"); the callables stay alive with the executable."""
    if backend.platform != "cpu":
        raise TranspileError(f"print() inside compiled code runs on CPU only for now, not on {backend.platform!r}",
                             hint="remove the print, or compile with device='cpu' (or device='numpy') to debug")
    text, callbacks = host_print.host_callbacks(text)
    with _LOCK:
        module = _mlir_module(text)
        with _MLIR_CONTEXT:
            return backend.client.compile_and_load(module, backend.device_list, xla_client.CompileOptions(),
                                                   host_callbacks=callbacks)


def compile_callbacks_cached(text: str, backend: Backend, callbacks: list[Any]) -> Any:
    """XLA's executable for ``text``, whose host callback ``index = k`` calls ``callbacks[k]``: loaded
    from the persistent cache with these callables bound when a run compiled it before, else compiled
    and stored (the serialized executable names callbacks by index, not the callables)."""
    options = xla_client.CompileOptions()
    key = disk_cache.program_key("host-callbacks\n" + text, backend, options) \
        if disk_cache.cache_dir() is not None else None
    blob = disk_cache.load(key, count=False, kind="helper") if key is not None else None
    if blob is not None:
        try:
            return backend.client.deserialize_executable(blob, backend.device_list, options,
                                                         host_callbacks=callbacks)
        except Exception:  # noqa: BLE001 - an entry XLA cannot load: compile it again, and replace it
            pass
    with _LOCK:
        module = _mlir_module(text)
        with _MLIR_CONTEXT:
            loaded = backend.client.compile_and_load(module, backend.device_list, options, host_callbacks=callbacks)
    if key is not None:  # (on the writer thread, as _compile_cached's: a first call does not wait for the disk)
        disk_cache.store_later(key, lambda: backend.client.serialize_executable(loaded), kind="helper")
    return loaded


def prepare_upload(leaves: Sequence[Any], avals: Sequence[ShapedArray], platform: str | None = None) -> None:
    """Ahead of a first :meth:`Executable.put_many` of ``leaves`` (while XLA compiles its program): the upload
    program it will use made ready (``host_upload.prepare``), where it will use one."""
    host = [i for i, x in enumerate(leaves) if type(x) is not Array]
    if len(host) >= 2 or (host and host_upload.active()):
        host_upload.prepare(avals if len(host) == len(leaves) else [avals[i] for i in host], get_backend(platform))


def compile_text(text: str, out_avals: Sequence[ShapedArray], platform: str | None = None,
                 meanwhile: Callable[[], Any] | None = None) -> Executable:
    """Compile StableHLO text; a rejected module is srcjax's bug, reported with the text.

    ``meanwhile()`` (work that does not need the executable) runs on this thread while XLA compiles on
    srcjax's compile worker (``runtime/compile_worker.py``), at most once (when the compile fails, its
    error is raised, never ``meanwhile``'s)."""
    backend = get_backend(platform)
    register_kernels(text, backend)
    try:
        return Executable(text, out_avals, backend, meanwhile)
    except _jax.JaxRuntimeError as e:
        numbered = "\n".join(f"{i + 1:4d}  {line}" for i, line in enumerate(text.splitlines()))
        raise InternalError(f"internal error: XLA rejected the generated StableHLO: {e}\n{numbered}",
                            hint="this is a bug in srcjax; please report it with this program") from e


def host_aval(x: Any) -> ShapedArray:
    """Abstract value of a host argument."""
    if isinstance(x, Array):
        return x.aval
    arr = np.asarray(x)
    return ShapedArray(arr.shape, canonical_dtype(arr.dtype))
