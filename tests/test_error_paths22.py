"""Error-path hygiene (lst22): what srcjax refuses is said at the user's line, briefly; what is not the user's fault
(MemoryError, a bug of srcjax's own) is never turned into a refusal of the user's program."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

import srcjax
from srcjax.primitives.registry import PRIMITIVES


@contextmanager
def _raising(name: str, exc: BaseException) -> Iterator[None]:
    """The primitive ``name``'s NumPy function raising ``exc`` (its records are frozen: set and restored)."""
    prim = PRIMITIVES[name]
    fn = prim.fn

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise exc

    object.__setattr__(prim, "fn", boom)
    try:
        yield
    finally:
        object.__setattr__(prim, "fn", fn)


def _static_tanh(x):
    c = np.tanh(2.0)  # (all static: NumPy evaluates it while compiling)
    return x * c


def test_memory_error_in_static_evaluation_is_not_a_refusal() -> None:
    # was: StaticValueError "np.tanh(): MemoryError: ..." at the user's line, as if the program were wrong
    with _raising("tanh", MemoryError("no memory")), pytest.raises(MemoryError):
        srcjax.jit(_static_tanh)(np.ones(2))


def test_a_bug_in_static_evaluation_is_an_internal_error() -> None:
    # was: StaticValueError (a refusal of the user's program) for srcjax's own AssertionError
    with _raising("tanh", AssertionError("a bug")), pytest.raises(srcjax.TranspileError) as info:
        srcjax.jit(_static_tanh)(np.ones(2))
    assert type(info.value).__name__ == "InternalError", info.value
    assert "this is a bug in srcjax" in str(info.value)


def test_numpy_refusing_static_inputs_is_still_the_users_error() -> None:
    with _raising("tanh", ValueError("bad input")), pytest.raises(srcjax.TranspileError) as info:
        srcjax.jit(_static_tanh)(np.ones(2))
    assert type(info.value).__name__ == "StaticValueError"
    assert "ValueError: bad input" in str(info.value)
    assert "c = np.tanh(2.0)" in str(info.value)
