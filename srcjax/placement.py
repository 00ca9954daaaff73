"""``srcjax.device_put``: values uploaded once to a device, or laid out over several (``jax.device_put``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import pytree
from .arguments import _is_leaf, _uploadable  # (the leaf checks every entry point shares: arguments.py)
from .core import ArgumentError, TranspileError
from .frontend.locations import user_error as _clean

__all__ = ["device_put"]


def device_put(x: Any, device: Any = None) -> Any:
    """``x`` uploaded once to the device (``"cpu"``/``"gpu"``; default: ``SRCJAX_PLATFORM`` or cpu),
    as :class:`srcjax.Array` leaves of the same structure (``x`` may be an array, a number, or a
    tuple/list/dict/NamedTuple/dataclass of them). Compiled functions and derivatives take such
    arrays without a host transfer per call, as ``jax.device_put``. Strings and None stay as they are.
    ``device`` may also be a ``srcjax.sharding`` sharding (``NamedSharding(mesh, P("data"))``) or a
    device object (``srcjax.devices()[1]``): the arrays are then laid out over those devices."""
    if device is not None and not isinstance(device, str):
        from .spmd import device_put_sharded

        try:
            return device_put_sharded(x, device, _is_leaf, _uploadable)
        except TranspileError as e:
            raise _clean(e) from None
    from .runtime import Array, get_backend, wrap
    from .runtime import device_put as upload
    from .runtime.xla import buffer_platform

    if device == "numpy":
        raise _clean(ArgumentError("device_put: the numpy device runs on the host; there is nothing to upload",
                                   hint="pass NumPy arrays to a function compiled with device='numpy'"))
    try:
        backend = get_backend(device)
    except ValueError as e:
        raise _clean(ArgumentError(f"device_put: {e}")) from None

    def put(leaf: Any) -> Any:
        if leaf is None or isinstance(leaf, str):
            return leaf
        if isinstance(leaf, Array):
            if buffer_platform(leaf._buf).replace("cuda", "gpu") == backend.platform:
                return leaf
            leaf = np.asarray(leaf)
        try:
            leaf, aval = _uploadable(leaf)
        except ArgumentError as e:
            raise _clean(e) from None
        return wrap(upload(leaf, aval, backend), aval)

    leaves, tree = pytree.flatten(x, is_leaf=lambda v: _is_leaf(v) or v is None or isinstance(v, str))
    return pytree.unflatten(tree, [put(leaf) for leaf in leaves])
