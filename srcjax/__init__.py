"""srcjax: a source-to-source array compiler for NumPy-style Python.

It reads your function's source, infers every shape and dtype statically,
writes readable Python (``srcjax.source``), lowers it to StableHLO and runs it
on XLA through jaxlib.
"""

from __future__ import annotations

from typing import Any

from . import lax, random, tree_util
from . import primitives as _primitives  # noqa: F401  (registers the primitive table)
from .api import Compiled, Lowered, compile, device_put, eval_shape, jit, lower, numpy_function, source
from .autodiff import grad, jvp, value_and_grad, vjp
from .core import (
    ArgumentError,
    CustomRuleError,
    DTypeError,
    DynamicControlFlowError,
    OpaqueCallError,
    ShapeDtypeStruct,
    ShapeError,
    StaticValueError,
    TranspileError,
    UnknownFunctionError,
    UnsupportedSyntaxError,
)
from .custom import custom_jvp, custom_vjp
from .jacobian import hessian, jacfwd, jacrev
from .vmap import vmap

__version__ = "0.1.0"


def devices(platform: str | None = None) -> list[Any]:
    """The devices of the default (or given) PJRT platform."""
    from .runtime import devices as _devices

    return _devices(platform)


def __getattr__(name: str) -> Any:
    if name == "Array":
        from .runtime import Array

        return Array
    raise AttributeError(f"module 'srcjax' has no attribute {name!r}")


__all__ = [
    "ArgumentError", "Compiled", "CustomRuleError", "DTypeError", "DynamicControlFlowError", "Lowered",
    "OpaqueCallError", "ShapeDtypeStruct", "ShapeError", "StaticValueError", "TranspileError",
    "UnknownFunctionError", "UnsupportedSyntaxError", "compile", "jit", "tree_util", "custom_jvp", "custom_vjp",
    "device_put", "devices", "lax", "eval_shape", "grad", "hessian", "jacfwd", "jacrev", "jvp", "lower",
    "numpy_function", "random", "source", "value_and_grad", "vjp", "vmap",
]
