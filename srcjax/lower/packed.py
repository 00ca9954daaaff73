"""A program taking a call's NumPy arguments packed into one flat array per dtype (issue #18).

jaxlib's C++ dispatcher uploads each NumPy argument on its own (~2 us a leaf on the CPU, the same
for jax.jit), and srcjax must first copy each one (``cpp_calls.py``: the C++ upload aliases NumPy
memory, which the program reads asynchronously). One ``np.concatenate`` per dtype is that copy for
all the host leaves at once, and one upload; the program then cuts the flat array back into its
arguments (``stablehlo.slice`` + ``reshape``, which XLA fuses into their uses) and calls the original
``@main``, renamed private (``srcjax/packed_calls.py`` decides when, and checks each call's leaves).

    func.func public @main(%pack0: tensor<Nxf32>, %arg1: tensor<4xf32>) -> (...) {
      %s0 = stablehlo.slice %pack0 [0:512] : (tensor<Nxf32>) -> tensor<512xf32>
      %a0 = stablehlo.reshape %s0 : (tensor<512xf32>) -> tensor<16x32xf32>
      %r:2 = func.call @srcjax_unpacked(%a0, %arg1) : (...) -> (...)
      func.return %r#0, %r#1 : ...
    }
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..core import ShapedArray
from .hlo import aval_type, tensor_type

__all__ = ["packed_text"]

_MAIN = "func.func public @main("
_INNER = "srcjax_unpacked"


def packed_text(text: str, in_avals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray],
                groups: Sequence[tuple[np.dtype, Sequence[int]]]) -> str | None:
    """``text`` (a one-device module whose ``@main`` takes ``in_avals``) as a module whose ``@main``
    takes, first, one flat array per group of ``groups`` (a dtype and the positions of the arguments
    packed into it, in order, each flattened in C order), then the other arguments in order; or None
    where ``text`` is not of that form (one public ``@main``, no function named like the inner one)."""
    if text.count(_MAIN) != 1 or f"@{_INNER}" in text or not out_avals:
        return None
    end = text.rstrip().rfind("}")
    if end < 0:
        return None
    packed = {i for _, idx in groups for i in idx}
    params: list[str] = []
    body: list[str] = []
    names = [f"%arg{i}" for i in range(len(in_avals))]
    for g, (dtype, idx) in enumerate(groups):
        total = sum(math.prod(in_avals[i].shape) for i in idx)
        flat = tensor_type((total,), dtype)
        params.append(f"%pack{g}: {flat}")
        offset = 0
        for i in idx:
            aval = in_avals[i]
            if aval.dtype != dtype or aval.weak_type:
                return None
            n = math.prod(aval.shape)
            piece = tensor_type((n,), dtype)
            body.append(f"    %s{i} = stablehlo.slice %pack{g} [{offset}:{offset + n}] : ({flat}) -> {piece}")
            body.append(f"    %a{i} = stablehlo.reshape %s{i} : ({piece}) -> {aval_type(aval)}")
            names[i] = f"%a{i}"
            offset += n
    params += [f"%arg{i}: {aval_type(a)}" for i, a in enumerate(in_avals) if i not in packed]
    outs = ", ".join(aval_type(a) for a in out_avals)
    ins = ", ".join(aval_type(a) for a in in_avals)
    n_out = len(out_avals)
    result = "%r" if n_out == 1 else f"%r:{n_out}"
    returned = "%r" if n_out == 1 else ", ".join(f"%r#{j}" for j in range(n_out))
    main = [f"  func.func public @main({', '.join(params)}) -> ({outs}) {{", *body,
            f"    {result} = func.call @{_INNER}({', '.join(names)}) : ({ins}) -> ({outs})",
            f"    func.return {returned} : {outs}", "  }"]
    inner = text[:end].replace(_MAIN, f"func.func private @{_INNER}(")
    return inner + "\n".join(main) + "\n}\n"
