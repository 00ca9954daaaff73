"""Running StableHLO on XLA through jaxlib's PJRT client (the only jaxlib user, with ``lower``)."""

from . import spmd  # noqa: E402,F401,I001  (Array.sharding, .addressable_shards; sharded arrays and programs)
from .xla import Array, Executable, compile_text, device_put, devices, get_backend, wrap

__all__ = ["Array", "Executable", "compile_text", "device_put", "devices", "get_backend", "wrap"]
