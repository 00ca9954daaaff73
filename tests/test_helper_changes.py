"""A user's helper that changes its argument array in place (frontend/changed_arguments.py, aliasing.py):
npbench's cavity_flow calls ``build_up_b(b, ...)`` and ``pressure_poisson(nit, p, ..., b)``, which write into
the caller's ``b`` and ``p`` (``b[1:-1, 1:-1] = ...``), then reads them. Silently wrong before: srcjax's helper
bound its own ``b`` again and the caller kept zeros (jit returned ``[1, 1, 1, 1]`` where NumPy gives
``[1, 3, 5, 1]``). Refused (session 42) at the call, with the helper's line; since session 43 a call after which
the caller reads the argument under that name only runs (``fill_result, b = _fill(b, x)``: a variant of the helper
that returns ``b`` too), and where the caller binds the result again, or never reads the argument after the call,
the program runs as before."""

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


@pytest.mark.parametrize(("fn", "line"), [(_reads_after_bump, "_bump(x)"), (_reads_after_sweeps, "_bump(p)")])
def test_a_helper_changing_an_argument_read_after_the_call_is_refused(fn: Any, line: str) -> None:
    x = np.arange(4.0)
    with pytest.raises(srcjax.TranspileError, match="changes the caller's array") as e:
        srcjax.jit(fn)(x.copy())
    head, *rest = str(e.value).splitlines()
    assert "test_helper_changes.py" in head and line in "\n".join(rest)
    assert "hint: return the new array from the helper" in str(e.value)


@pytest.mark.parametrize("fn", [_rebound, _not_read_after, _scalar_argument, _reads_after_fill, _alias_read_after_fill])
def test_a_helper_whose_change_the_caller_does_not_read_or_binds_again_runs(fn: Any) -> None:
    """(session 43) ``_fill(b, x)`` then ``b`` read: the call is ``fill_1, b = _fill(b, x)`` of a variant of the
    helper that returns ``b`` too (frontend/helper_checks.py), so NumPy's change reaches the caller."""
    x = np.arange(4.0)
    np.testing.assert_allclose(np.asarray(srcjax.jit(fn)(x.copy())), fn(x.copy()))
    loss = lambda x: np.sum(fn(x) ** 2)  # noqa: E731
    fd = [(loss(x + 1e-6 * e) - loss(x - 1e-6 * e)) / 2e-6 for e in np.eye(4)]
    np.testing.assert_allclose(np.asarray(srcjax.grad(loss)(x.copy())), fd, rtol=1e-6, atol=1e-6)


# (session 43) writes the helper makes through another name, a view, a container or a NumPy function: silently
# lost before (jit returned the caller's zeros + 1); each refused at the call now, with the helper's line
def _through_alias(b: Any, x: Any) -> Any:
    v = b
    v[1:-1] = x[1:-1]
    return 0


def _through_slice(b: Any, x: Any) -> Any:
    v = b[1:]
    v[0] = x[0]
    return 0


def _through_reshape(b: Any, x: Any) -> Any:
    v = b.reshape(2, 2)
    v[0, 0] = x[0]
    return 0


def _through_column(b: Any, x: Any) -> Any:
    v = b.reshape(2, 2)[:, 0]
    v[...] = x[:2]
    return 0


def _through_transpose(b: Any, x: Any) -> Any:
    v = b.T
    v[0] = x[0]
    return 0


def _copyto(b: Any, x: Any) -> Any:
    np.copyto(b, x)
    return 0


def _fill_method(b: Any, x: Any) -> Any:
    b.fill(3.0)
    return 0


def _out_argument(b: Any, x: Any) -> Any:
    np.multiply(x, 2.0, out=b)
    return 0


def _add_at(b: Any, x: Any) -> Any:
    np.add.at(b, np.array([0, 1]), 1.0)
    return 0


def _nested_alias(b: Any, x: Any) -> Any:
    v = b
    _through_alias(v, x)
    return 0


def _in_a_loop_and_if(b: Any, x: Any) -> Any:
    for i in range(2):
        if i > 0:
            b[i] = x[i]
    return 0


def _through_a_list(b: Any, x: Any) -> Any:
    s = [b]
    s[0][1] = 2.0
    return 0


def _view_argument(b: Any, x: Any) -> Any:
    _through_alias(b[1:], x[1:])
    return 0


def _item_argument(b: Any, x: Any) -> Any:
    box = [b]
    _fill_method(box[0], x)
    return 0


def _aug_view(b: Any, x: Any) -> Any:
    v = b[1:]
    v += 1.0
    return 0


def _own_copy(b: Any, x: Any) -> Any:
    b = b.copy()
    b[0] = 5.0
    return b


def _keyword_only(x: Any, *, b: Any) -> Any:
    b[0] = 7.0
    return 0


# writes the helper's variant returning `b` carries to the caller (they run), and writes through another name
# (refused: in the helper's variant, where `b` is read at its return, or at the call)
_RETURNED = [_copyto, _fill_method, _out_argument, _add_at, _in_a_loop_and_if]
_WRITERS = [_through_alias, _through_slice, _through_reshape, _through_column, _through_transpose, _nested_alias,
            _through_a_list, _view_argument, _item_argument, _aug_view]


def _caller_of(helper: Any) -> Any:
    def caller(x: Any) -> Any:
        b = np.zeros(4)
        helper(b, x)
        return b + 1.0
    return caller


def _keyword_caller(x: Any) -> Any:
    b = np.zeros(4)
    _keyword_only(x, b=b)
    return b + 1.0


def _read_in_the_same_statement(x: Any) -> Any:
    b = np.zeros(4)
    return _through_alias(b, x) + b


@pytest.mark.parametrize("helper", _WRITERS, ids=lambda h: h.__name__)
def test_a_helper_writing_through_an_alias_view_or_container_is_refused(helper: Any) -> None:
    x = np.arange(4.0) + 1.0
    caller = _caller_of(helper)
    assert not np.array_equal(caller(x.copy()), np.ones(4))  # (NumPy sees the helper's change)
    with pytest.raises(srcjax.TranspileError, match="changes the caller's array|changes|would keep the old") as e:
        srcjax.jit(caller)(x.copy())
    head = str(e.value).splitlines()[0]
    assert "test_helper_changes.py" in head


@pytest.mark.parametrize("helper", _RETURNED, ids=lambda h: h.__name__)
def test_a_helper_writing_into_its_argument_runs_and_the_caller_sees_the_change(helper: Any) -> None:
    """Lost silently before session 43 (the caller's zeros); refused, then run by the helper's variant that returns
    the argument too: against NumPy, the generated source run by NumPy, finite differences."""
    x = np.arange(4.0) + 1.0
    caller = _caller_of(helper)
    want = caller(x.copy())
    assert not np.array_equal(want, np.ones(4))  # (NumPy sees the helper's change)
    np.testing.assert_allclose(np.asarray(srcjax.jit(caller)(x.copy())), want)
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(srcjax.jit(caller))(x.copy())), want)
    loss = lambda x: np.sum(np.sin(caller(x)))  # noqa: E731
    fd = [(loss(x + 1e-6 * e) - loss(x - 1e-6 * e)) / 2e-6 for e in np.eye(4)]
    np.testing.assert_allclose(np.asarray(srcjax.grad(loss)(x.copy())), fd, rtol=1e-6, atol=1e-8)
    assert f", b = {helper.__name__}(b, x)" in srcjax.source(srcjax.jit(caller))


def test_a_keyword_argument_runs_and_a_read_in_the_calls_statement_is_refused() -> None:
    x = np.arange(4.0)
    np.testing.assert_allclose(np.asarray(srcjax.jit(_keyword_caller)(x)), _keyword_caller(x.copy()))
    with pytest.raises(srcjax.TranspileError, match="changes the caller's array"):
        srcjax.jit(_read_in_the_same_statement)(x)


def test_a_helper_changing_its_own_copy_runs() -> None:
    fn = _caller_of(_own_copy)
    x = np.arange(4.0)
    np.testing.assert_allclose(np.asarray(srcjax.jit(fn)(x.copy())), fn(x.copy()))


# (session 43) `t *= s` in the helper on a Python number binds the helper's own name again (the caller's t is
# unchanged): refused before wherever the caller read t after the call; an array (a 0-d one too) changes in place
def _number_parameter(x: Any, t: Any) -> Any:
    y = _scale(t, 3.0)
    return x * t + y


def test_a_helpers_augmented_assignment_to_a_number_runs_and_to_an_array_is_refused() -> None:
    x = np.arange(3.0)
    f = srcjax.jit(_number_parameter)
    np.testing.assert_allclose(np.asarray(f(x, 2.0)), _number_parameter(x, 2.0))
    np.testing.assert_allclose(np.asarray(srcjax.numpy_function(f)(x, 2.0)), _number_parameter(x, 2.0))
    g = srcjax.grad(lambda x, t: np.sum(_number_parameter(x, t)), argnums=(0, 1))(x, 2.0)
    np.testing.assert_allclose(np.asarray(g[0]), np.full(3, 2.0))
    np.testing.assert_allclose(float(g[1]), np.sum(x) + 9.0)  # (d/dt of sum(x * t + 3 t))
    for t in (np.array(2.0), np.ones(3)):  # (NumPy changes the caller's t: a 0-d ndarray too)
        assert not np.allclose(_number_parameter(x, t.copy()), _number_parameter(x, float(t.flat[0])))
        with pytest.raises(srcjax.TranspileError, match="changes the caller's array in place") as e:
            f(x, t)
        assert "y = _scale(t, 3.0)" in str(e.value) and "line" in str(e.value).splitlines()[0]


def _bump_item(d: Any, x: Any) -> Any:
    w = d["w"]
    w += x
    return 0


def _dict_caller(x: Any) -> Any:
    d = {"w": np.zeros(3)}
    _bump_item(d, x)
    return d["w"] + 1.0


def _dict_argument(d: Any, x: Any) -> Any:
    _bump_item(d, x)
    return d["w"] * 2.0


def test_a_helper_changing_an_item_of_a_dict_argument_is_refused() -> None:
    """``w = d["w"]; w += x`` in the helper changes the caller's dict's array in NumPy: silently lost before (jit
    returned ones, NumPy ``x + 1``)."""
    x = np.arange(3.0) + 1.0
    for fn, args in ((_dict_caller, (x,)), (_dict_argument, ({"w": np.zeros(3)}, x))):
        with pytest.raises(srcjax.TranspileError, match="changes") as e:
            srcjax.jit(fn)(*args)
        assert "test_helper_changes.py" in str(e.value).splitlines()[0]
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
    (_list_item, "_relu_out(acts[1])"), (_local_callee, "hidden_activation(y)"),
    (_dict_item_callee, "_ACTIVATIONS[activation](y)"), (_row_view, "_relu_out(W[1])"),
    (_forms, "_relu_out(X[0])")])  # (_forms: K, a, b, c run as returned changes; d's helper writes an item)
def test_a_helper_writing_through_numpy_calls_or_called_through_a_dict_is_refused(fn: Any, line: str) -> None:
    x = np.arange(4.0) - 1.5
    with pytest.raises(srcjax.TranspileError, match="changes the caller's array") as e:
        srcjax.jit(fn)(x.copy())
    head, *rest = str(e.value).splitlines()
    assert "test_helper_changes.py" in head and line in "\n".join(rest)


@pytest.mark.parametrize("helper", [_fill_ones, _copy_into, _scatter, _through_item, _tanh_positional])
def test_each_numpy_write_into_a_parameter_is_a_change(helper: Any) -> None:
    from srcjax.frontend.changed_arguments import changed_parameters

    assert helper.__code__.co_varnames[0] in changed_parameters(helper)


@pytest.mark.parametrize("fn", [_out_keyword, "loop"])
def test_a_helper_writing_through_a_numpy_call_runs_where_its_change_can_be_returned(fn: Any) -> None:
    """(merge of alias25 and hunt25) `_relu_out(y)` then `y` read: the helper's variant returns `y` too
    (frontend/helper_checks.py), so the write reaches the caller as in NumPy; a loop over two such helpers too."""
    fn = _loop_over_callees if fn == "loop" else fn
    x = np.arange(4.0) - 1.5
    np.testing.assert_allclose(np.asarray(srcjax.jit(fn)(x.copy())), fn(x.copy()))


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


@pytest.mark.parametrize(("fn", "line"), [(_module_attribute, "hp25._inplace_relu(y)"), (_default_callee, "act(y)")])
def test_a_helper_named_through_a_module_a_default_or_a_loop_is_followed(fn: Any, line: str) -> None:
    x = np.arange(4.0) - 1.5
    with pytest.raises(srcjax.TranspileError, match="changes the caller's array") as e:
        srcjax.jit(fn)(x.copy())
    assert line in str(e.value)


# (session 43, merge review) a helper changing a list or dict it is passed, written on one line (an internal error
# after alias25: the scan's copy of a one-line body), and a dict's `update` (silently lost before: the caller's dict
# kept its old entries); a list's `+=` refused with the helper's line (was: an internal `rebound()` message)
def _append_one_line(xs: Any, v: Any) -> None: xs.append(v)  # noqa: E704


def _update_keywords(d: Any, v: Any) -> None:
    d.update(b=v)


def _update_display(d: Any, v: Any) -> None:
    d.update({"b": v})


def _list_iadd(xs: Any, v: Any) -> None:
    xs += [v]


def _appends_list(x: Any) -> Any:
    ys = [x, 2.0 * x]
    _append_one_line(ys, 5.0 * x)
    return ys[-1] + len(ys)


def _updates_keywords(x: Any) -> Any:
    d = {"a": x}
    _update_keywords(d, x)
    return d["a"] + len(d) + d["b"]


def _updates_display(x: Any) -> Any:
    d = {"a": x}
    _update_display(d, 3.0 * x)
    return d["a"] + len(d) + d["b"]


@pytest.mark.parametrize("fn", [_appends_list, _updates_keywords, _updates_display])
def test_a_helper_changing_a_list_or_dict_it_is_passed_agrees_with_numpy(fn: Any) -> None:
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(np.asarray(srcjax.jit(fn)(x.copy())), fn(x.copy()))


def test_a_helpers_iadd_of_a_list_it_is_passed_is_refused_at_the_call() -> None:
    def f(x: Any) -> Any:
        ys = [x]
        _list_iadd(ys, 2.0 * x)
        return ys[-1] + len(ys)

    with pytest.raises(srcjax.TranspileError, match="changes the caller's array") as e:
        srcjax.jit(f)(np.array([1.0, 2.0]))
    assert "_list_iadd(ys" in str(e.value)


def _dict_ior(d: Any, v: Any) -> None:
    d |= {"b": v}


def _tuple_iadd(t: Any, v: Any) -> Any:
    t += (v,)
    return t[-1]


def _list_param_iadd(xs: Any, x: Any) -> Any:
    _list_iadd(xs, 2.0 * x)
    return xs[-1] + len(xs)


def _dict_param_ior(d: Any, x: Any) -> Any:
    _dict_ior(d, 2.0 * x)
    return d["b"] + x


def _tuple_param_iadd(t: Any, x: Any) -> Any:
    last = _tuple_iadd(t, 2.0 * x)
    return last + t[-1] + len(t)  # (the caller's tuple is unchanged in Python: `+=` binds the helper's name again)


@pytest.mark.parametrize("fn, arg, kind", [(_list_param_iadd, "list", "list"), (_dict_param_ior, "dict", "dict")])
@pytest.mark.parametrize("transform", ["jit", "grad", "vmap"])
def test_a_helpers_iadd_of_a_list_or_dict_argument_is_refused_at_the_call(fn: Any, arg: str, kind: str,
                                                                          transform: str) -> None:
    # (was an internal-looking "rebound(): got an unexpected keyword argument 'alias'"; NumPy appends to the
    # caller's own list / merges into its dict, which srcjax's helper cannot reach)
    x = np.array([1.0, 2.0])
    a: Any = [x] if arg == "list" else {"a": x}
    t = {"jit": srcjax.jit, "grad": lambda f: srcjax.grad(lambda a, x: np.sum(f(a, x)), argnums=1),
         "vmap": lambda f: srcjax.vmap(f, in_axes=(None, 0))}[transform]
    with pytest.raises(srcjax.TranspileError, match=f"changes the caller's {kind} in place") as e:
        t(fn)(a, x if transform != "vmap" else np.stack([x, x]))
    helper = _list_iadd if kind == "list" else _dict_ior  # (the helper's line, the caller's call)
    assert f"(line {helper.__code__.co_firstlineno + 1} of {helper.__name__})" in str(e.value)
    assert f"{helper.__name__}({'xs' if kind == 'list' else 'd'}, 2.0 * x)\n" in str(e.value)


def test_a_helpers_iadd_of_a_tuple_argument_rebinds_as_python_does() -> None:
    x = np.array([1.0, 2.0])
    want = _tuple_param_iadd((x,), x)
    np.testing.assert_allclose(np.asarray(srcjax.jit(_tuple_param_iadd)((x,), x)), want)
    f = srcjax.jit(_tuple_param_iadd)
    np.testing.assert_allclose(srcjax.numpy_function(f)((x,), x), want)
