"""srcjax: a source-to-source array compiler for NumPy-style Python.

It reads your function's source, infers every shape and dtype statically,
writes readable Python (``srcjax.source``), lowers it to StableHLO and runs it
on XLA through jaxlib.
"""

from __future__ import annotations

import os
from typing import Any

# XLA reads this once, when jaxlib loads (from runtime/ or lower/, whichever comes first); without it
# every process logs PJRT's startup lines on stderr
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from . import distributed, lax, multihost_utils, random, sharding, tree_util
from . import primitives as _primitives  # noqa: F401  (registers the primitive table)
from .api import Compiled, Lowered, compile, eval_shape, jit, lower, numpy_function
from .autodiff import grad, jvp, value_and_grad
from .core import (
    ArgumentError,
    CustomRuleError,
    DistributedError,
    DTypeError,
    DynamicControlFlowError,
    OpaqueCallError,
    ShapeDtypeStruct,
    ShapeError,
    ShardingError,
    StaticValueError,
    TranspileError,
    UnboundAxisNameError,
    UnknownFunctionError,
    UnsupportedSyntaxError,
)
from .custom import custom_jvp, custom_vjp
from .jacobian import hessian, jacfwd, jacrev
from .multihost_utils import make_array_from_process_local_data
from .placement import device_put
from .pmap import pmap
from .printing import source
from .sharding import make_mesh
from .split_vjp import vjp
from .spmd import device_count, devices, local_device_count, local_devices, process_count, process_index
from .vmap import vmap

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "Array":
        from .runtime import Array

        return Array
    if name in ("nn", "scipy"):  # (imported when first read: `import srcjax` stays as it was)
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'srcjax' has no attribute {name!r}")


__all__ = [
    "ArgumentError", "Compiled", "CustomRuleError", "DTypeError", "DynamicControlFlowError", "Lowered",
    "OpaqueCallError", "ShapeDtypeStruct", "ShapeError", "StaticValueError", "TranspileError",
    "UnknownFunctionError", "UnsupportedSyntaxError", "compile", "jit", "tree_util", "custom_jvp", "custom_vjp",
    "device_put", "devices", "lax", "eval_shape", "grad", "hessian", "jacfwd", "jacrev", "jvp", "lower",
    "numpy_function", "random", "source", "value_and_grad", "vjp", "vmap", "sharding", "make_mesh", "device_count",
    "local_device_count", "local_devices", "process_count", "process_index", "ShardingError",
    "UnboundAxisNameError", "pmap", "distributed", "multihost_utils", "make_array_from_process_local_data",
    "DistributedError",
]
