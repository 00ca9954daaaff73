"""Weakly typed arrays for NumPy running generated source (``srcjax.numpy_function``, ``device="numpy"``).

A Python number is weakly typed (NEP 50, and JAX's weak types): ``0.5 * x32`` is float32. Batched source
(vmap's) repeats a number along the batch axis (``batch_broadcast(0.5, n)``, a loop carry ``s = 1.0``, a
polynomial's first coefficient): XLA keeps the repeat weakly typed (``lower/values.py``), but NumPy makes it a
float64 array, which then promotes float32 work to float64 (``vmap(lambda k: random.normal(k, (3,),
np.float32))`` gave float64 samples run by NumPy, float32 by XLA).

:class:`WeakArray` is that repeat under NumPy: an ``ndarray`` whose dtype gives way to the other operands'
as a Python number's does, following what NumPy does with the Python number of each example: Python's
operators between weak values give a weak value; an operation with a strong array casts the weak operands
first (to ``np.result_type(0.0, x32)``: NEP 50, NumPy's ufuncs and ``np.where``/``np.clip``/``np.select``/
``np.choose``); other NumPy functions of it give strong values (``np.sin(1.5)`` is float64, ``np.stack([x32,
1.5])`` too), except those that only move elements (the batch axis's ``moveaxis``, ``reshape``, ``take``, ...:
weak); an explicit ``dtype`` and ``np.asarray`` make it strong. An element read out of it is a Python number.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# NumPy functions that promote a Python number weakly (NEP 50) with arrays: the weak operands are cast first
_WEAK_AWARE = {np.where, np.clip, np.select, np.choose}
# functions that move a value's elements (batched source's per-example no-ops): a weak value's result is weak
_STRUCTURAL = {np.moveaxis, np.reshape, np.broadcast_to, np.expand_dims, np.squeeze, np.transpose, np.swapaxes,
               np.take, np.take_along_axis, np.copy, np.ascontiguousarray, np.repeat, np.tile, np.flip,
               np.stack, np.concatenate, np.broadcast_arrays, np.atleast_1d, np.atleast_2d, np.atleast_3d}
_STAND_IN = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}
# Python's operators on two Python numbers give a Python number (weak); NumPy's functions of one, a NumPy
# scalar (strong: `np.sin(1.5)` is float64, and so is `np.sum(c)`)
_OPERATORS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")


class WeakArray(np.ndarray):
    """An array that promotes as a Python number (see the module's docstring)."""

    def __getitem__(self, key: Any) -> Any:
        out = super().__getitem__(key)
        return out.item() if isinstance(out, np.generic) else out

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return np.asarray(self).astype(dtype, *args, **kwargs)

    def __neg__(self) -> Any:  # type: ignore[override]
        return weak(-np.asarray(self))

    def __pos__(self) -> Any:  # type: ignore[override]
        return self

    def __abs__(self) -> Any:  # type: ignore[override]
        return weak(abs(np.asarray(self)))

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if "out" in kwargs:
            kwargs["out"] = tuple(np.asarray(o) if isinstance(o, WeakArray) else o for o in kwargs["out"])
        return _promoting(getattr(ufunc, method), list(inputs), kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        arrays = _arrays(list(args)) + _arrays(list(kwargs.values()))
        if func is np.where and len(args) == 3 and not kwargs and \
                all(isinstance(a, WeakArray) and a.ndim > 0 for a in args[1:]):
            # two Python numbers per example (batch_select joining a counter `n = 0` of a batched while): the
            # choice stays weak, as XLA's (primitives/elementwise.py's where); the condition gives no dtype
            return _weak_result(np.where(_plain(args[0]), np.asarray(args[1]), np.asarray(args[2])))
        if func in _WEAK_AWARE and not _explicit_dtype(func, list(args), kwargs):
            return _promoting(func, list(args), dict(kwargs))
        out = func(*_convert(list(args), None), **{k: _convert(v, None) for k, v in kwargs.items()})
        if func in _STRUCTURAL and all(isinstance(a, WeakArray) for a in arrays) and \
                not _explicit_dtype(func, list(args), kwargs):
            return _weak_result(out)
        return out


def _operator(name: str, reflected: bool) -> Any:
    method = getattr(np.ndarray, f"__{'r' if reflected else ''}{name}__")

    def op(self: WeakArray, other: Any) -> Any:
        if isinstance(other, WeakArray) or (isinstance(other, (int, float, complex)) and
                                            not isinstance(other, np.generic)):
            return _weak_result(method(np.asarray(self), _plain(other)))  # (two Python numbers: a Python number)
        return method(self, other)  # (a strong operand: the ufunc, which promotes the weak one)
    return op


def _plain(v: Any) -> Any:
    return np.asarray(v) if isinstance(v, WeakArray) else v


for _name in _OPERATORS:
    setattr(WeakArray, f"__{_name}__", _operator(_name, False))
    setattr(WeakArray, f"__r{_name}__", _operator(_name, True))


def weak(x: Any) -> Any:
    """``x`` (an array holding a repeated Python number) marked weakly typed."""
    return np.asarray(x).view(WeakArray)


def broadcast_weak(t: Any, shape: tuple[int, ...]) -> Any:
    """``np.broadcast_to(t, shape)``, weakly typed where ``t`` is a Python number."""
    out = np.broadcast_to(t, shape)
    return weak(out) if isinstance(t, (int, float, complex)) and not isinstance(t, np.generic) else out


def _arrays(v: Any) -> list[Any]:
    if isinstance(v, (list, tuple)):
        return [a for e in v for a in _arrays(e)]
    return [v] if isinstance(v, (np.ndarray, np.generic)) else []


def _explicit_dtype(func: Any, args: list[Any], kwargs: dict[str, Any]) -> bool:
    if kwargs.get("dtype") is not None or getattr(func, "__name__", "") in ("astype", "result_type", "can_cast"):
        return True
    return any(isinstance(a, np.dtype) or (isinstance(a, type) and issubclass(a, np.generic)) for a in args)


def _convert(v: Any, dt: Any) -> Any:
    if isinstance(v, WeakArray):
        return np.asarray(v) if dt is None else np.asarray(v, dtype=dt)
    if isinstance(v, (list, tuple)) and any(isinstance(a, WeakArray) for a in _arrays(v)):
        return type(v)(_convert(e, dt) for e in v)
    return v


def _promoting(func: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``func`` with each weak operand cast to what NumPy gives a Python number with the strong ones (all weak:
    as they are); the result strong, as NumPy's functions of Python numbers give NumPy values."""
    arrays = _arrays(args) + _arrays(list(kwargs.values()))
    dt = None
    if any(not isinstance(a, WeakArray) for a in arrays) and not _explicit_dtype(func, args, kwargs):
        try:
            dt = np.result_type(*[_STAND_IN.get(a.dtype.kind, 0.0) if isinstance(a, WeakArray) else a
                                  for a in arrays])
        except TypeError:
            dt = None
    return func(*_convert(args, dt), **{k: _convert(v, dt) for k, v in kwargs.items()})


def _weak_result(out: Any) -> Any:
    if isinstance(out, tuple):
        return tuple(_weak_result(o) for o in out)
    if isinstance(out, np.ndarray) and out.dtype.kind in "iufc":  # (a comparison's booleans: strong)
        return out.view(WeakArray)
    if isinstance(out, np.generic) and out.dtype.kind in "biufc":
        return out.item()
    return out
