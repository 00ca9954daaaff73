"""Running StableHLO on XLA through jaxlib's PJRT client (the only jaxlib user, with ``lower``)."""

import os

# before jaxlib loads (spmd imports it first): XLA reads this once, and otherwise logs its startup lines
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from . import spmd  # noqa: E402,F401,I001  (Array.sharding, .addressable_shards; sharded arrays and programs)
from .xla import Array, Executable, compile_text, device_put, devices, get_backend

__all__ = ["Array", "Executable", "compile_text", "device_put", "devices", "get_backend"]
