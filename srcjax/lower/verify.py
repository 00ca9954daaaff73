"""Parse StableHLO text with jaxlib's MLIR bindings: line:col errors without compiling (~1 ms)."""

from __future__ import annotations

from typing import Any

_CTX: Any = None


def verify(text: str) -> None:
    """Raise ``ValueError`` with MLIR's diagnostics if ``text`` is not a valid module."""
    global _CTX
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext

    if _CTX is None:
        registry = ir.DialectRegistry()
        _jax_mlir_ext.register_dialects(registry)
        ctx = ir.Context()
        ctx.append_dialect_registry(registry)
        from jaxlib.mlir.dialects import chlo, stablehlo

        stablehlo.register_dialect(ctx)
        chlo.register_dialect(ctx)
        ctx.load_all_available_dialects()
        _CTX = ctx
    try:
        with _CTX:
            ir.Module.parse(text)
    except ir.MLIRError as e:
        raise ValueError(str(e)) from None
