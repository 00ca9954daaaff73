"""A user's helper that changes its argument array in place (frontend/changed_arguments.py, aliasing.py):
npbench's cavity_flow calls ``build_up_b(b, ...)`` and ``pressure_poisson(nit, p, ..., b)``, which write into
the caller's ``b`` and ``p`` (``b[1:-1, 1:-1] = ...``), then reads them. Silently wrong before: srcjax's helper
bound its own ``b`` again and the caller kept zeros (jit returned ``[1, 1, 1, 1]`` where NumPy gives
``[1, 3, 5, 1]``). Refused now at the call, with the helper's line; where the caller binds the result again, or
never reads the argument after the call, the program runs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import srcjax

from . import hunt25_programs as hp25


def _fill(b: Any, x: Any) -> None:
    b[1:-1] = x[1:-1] * 2.0


def _fill_returned(b: Any, x: Any) -> Any:
    b[1:-1] = x[1:-1] * 2.0
    return b


def _bump(p: Any) -> None:
    p += 1.0


def _sweeps(p: Any, n: int) -> None:
    for _ in range(n):
        _bump(p)  # (through another helper)


def _reads_after_fill(x: Any) -> Any:
    b = np.zeros(4)
    _fill(b, x)
    return b + 1.0


def _reads_after_bump(x: Any) -> Any:
    _bump(x)
    return x * 2.0


def _reads_after_sweeps(x: Any) -> Any:
    p = x.copy()
    for _ in range(2):
        _sweeps(p, 2)
    return p


def _alias_read_after_fill(x: Any) -> Any:
    b = np.zeros(4)
    c = _fill_returned(b, x)
    return c + b


def _rebound(x: Any) -> Any:
    b = np.zeros(4)
    b = _fill_returned(b, x)
    return b + 1.0


def _not_read_after(x: Any) -> Any:
    b = np.zeros(4)
    c = _fill_returned(b, x)
    return c + 1.0


def _scale(t: Any, s: Any) -> Any:
    t *= s
    return t


def _scalar_argument(x: Any) -> Any:
    t = 2.0
    y = _scale(t, 3.0)
    return x * y


@pytest.mark.parametrize(("fn", "line"), [(_reads_after_fill, "_fill(b, x)"), (_reads_after_bump, "_bump(x)"),
                                          (_reads_after_sweeps, "_sweeps(p, 2)"),
                                          (_alias_read_after_fill, "c = _fill_returned(b, x)")])
def test_a_helper_changing_an_argument_read_after_the_call_is_refused(fn: Any, line: str) -> None:
    x = np.arange(4.0)
    with pytest.raises(srcjax.TranspileError, match="changes the caller's array") as e:
        srcjax.jit(fn)(x.copy())
    head, *rest = str(e.value).splitlines()
    assert "test_helper_changes.py" in head and line in "\n".join(rest)
    assert "hint: return the new array from the helper" in str(e.value)


@pytest.mark.parametrize("fn", [_rebound, _not_read_after, _scalar_argument])
def test_a_helper_whose_change_the_caller_does_not_read_runs(fn: Any) -> None:
    x = np.arange(4.0)
    np.testing.assert_allclose(np.asarray(srcjax.jit(fn)(x.copy())), fn(x.copy()))
    loss = lambda x: np.sum(fn(x) ** 2)  # noqa: E731
    fd = [(loss(x + 1e-6 * e) - loss(x - 1e-6 * e)) / 2e-6 for e in np.eye(4)]
    np.testing.assert_allclose(np.asarray(srcjax.grad(loss)(x.copy())), fd, rtol=1e-6, atol=1e-6)


# -- hunt25: scikit-learn's in-place activations (neural_network/_base.py) picked from a dict of functions and
# applied to an item of a list of layers; silently wrong before (jit gave the layers without their activations):
# changed_parameters did not see NumPy calls that write into a parameter, the caller's argument was read only when
# written as a name, and a callee only when named by a module's name


def _relu_out(X: Any) -> None:
    np.maximum(X, 0, out=X)


def _tanh_positional(X: Any) -> None:
    np.tanh(X, X)  # (a ufunc's positional output)


def _zero_diagonal(K: Any) -> None:
    np.fill_diagonal(K, 0.0)


def _fill_ones(X: Any) -> None:
    X.fill(1.0)


def _copy_into(X: Any, v: Any) -> None:
    np.copyto(X, v)


def _scatter(X: Any) -> None:
    np.add.at(X, [0, 0], 1.0)


def _through_item(X: Any) -> None:
    _relu_out(X[0])  # (an item, or a view, of the parameter)


_ACTIVATIONS = {"relu": _relu_out, "tanh": _tanh_positional}


def _out_keyword(x: Any) -> Any:
    y = x * 2.0
    _relu_out(y)
    return y


def _list_item(x: Any) -> Any:
    acts = [x, x * 2.0]
    _relu_out(acts[1])
    return acts[1]


def _local_callee(x: Any, activation: str = "relu") -> Any:
    y = x * 2.0
    hidden_activation = _ACTIVATIONS[activation]
    hidden_activation(y)
    return y


def _dict_item_callee(x: Any, activation: str = "tanh") -> Any:
    y = x * 2.0
    _ACTIVATIONS[activation](y)
    return y


def _row_view(x: Any) -> Any:
    W = np.outer(x, x)
    _relu_out(W[1])
    return W


def _forms(x: Any) -> Any:
    K = np.outer(x, x)
    _zero_diagonal(K)
    a = x * 1.0
    _fill_ones(a)
    b = x * 1.0
    _copy_into(b, x + 1.0)
    c = x * 1.0
    _scatter(c)
    d = np.outer(x, x)
    _through_item(d)
    return K, a, b, c, d


@pytest.mark.parametrize(("fn", "line"), [
    (_out_keyword, "_relu_out(y)"), (_list_item, "_relu_out(acts[1])"), (_local_callee, "hidden_activation(y)"),
    (_dict_item_callee, "_ACTIVATIONS[activation](y)"), (_row_view, "_relu_out(W[1])"),
    (_forms, "_zero_diagonal(K)")])
def test_a_helper_writing_through_numpy_calls_or_called_through_a_dict_is_refused(fn: Any, line: str) -> None:
    x = np.arange(4.0) - 1.5
    with pytest.raises(srcjax.TranspileError, match="changes the caller's array") as e:
        srcjax.jit(fn)(x.copy())
    head, *rest = str(e.value).splitlines()
    assert "test_helper_changes.py" in head and line in "\n".join(rest)


@pytest.mark.parametrize("helper", [_fill_ones, _copy_into, _scatter, _through_item, _tanh_positional])
def test_each_numpy_write_into_a_parameter_is_a_change(helper: Any) -> None:
    from srcjax.frontend.changed_arguments import changed_parameters

    assert 0 in changed_parameters(helper)


def _module_attribute(x: Any) -> Any:
    y = x * 2.0
    hp25._inplace_relu(y)  # (a helper of another module of the user's)
    return y


def _default_callee(x: Any, act: Any = _relu_out) -> Any:
    y = x * 2.0
    act(y)
    return y


def _loop_over_callees(x: Any) -> Any:
    y = x * 2.0
    for h in (_tanh_positional, _relu_out):
        h(y)
    return y


@pytest.mark.parametrize(("fn", "line"), [(_module_attribute, "hp25._inplace_relu(y)"), (_default_callee, "act(y)"),
                                          (_loop_over_callees, "h(y)")])
def test_a_helper_named_through_a_module_a_default_or_a_loop_is_followed(fn: Any, line: str) -> None:
    x = np.arange(4.0) - 1.5
    with pytest.raises(srcjax.TranspileError, match="changes the caller's array") as e:
        srcjax.jit(fn)(x.copy())
    assert line in str(e.value)
