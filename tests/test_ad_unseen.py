"""Programs written like users write them, under every derivative srcjax offers, against jax.

``ad_unseen_programs.py``: realistic NumPy programs (rebinding in loops, early returns, whiles on data,
kinks, linalg, sorting, mixed dtypes, ...): ``grad`` and ``hessian`` against jax (or finite
differences for in-place updates), and the printed ``srcjax.source(grad(f))`` and
``srcjax.source(grad(f), x)`` run by NumPy against the same numbers (they must import every helper
they call). ``unseen_names.py``: user functions and locals with the names of srcjax's helpers.
"""

import inspect
import os
import re

import numpy as np
import pytest

import srcjax
from tests import ad_unseen_programs, twins, unseen_custom, unseen_names, unseen_np_alias
from tests.twins import JAX

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

X = np.array([0.7, -0.4, 1.1, 0.25, -0.9, 0.55])
V = np.linspace(0.3, -0.2, 6)
PROGRAMS = [f for f in twins.module_functions(ad_unseen_programs) if not f.__name__.startswith("_")]
THOROUGH = os.environ.get("SRCJAX_HYPOTHESIS") == "thorough"  # (else every 4th program printed for X)
CONSTANTS = {k: v for k, v in vars(ad_unseen_programs).items() if k.isupper() and k != "IN_PLACE"}


def _twin(fn, module=ad_unseen_programs):
    return twins.jax_twin(fn, helpers=[h for h in twins.module_functions(module) if h is not fn], **CONSTANTS)


def _fd_grad(f, x, eps=1e-6):
    return np.array([(f(x + e) - f(x - e)) / (2 * eps) for e in np.eye(x.size) * eps])


def _printed(text, fn, *args):
    """Run the printed program ``text`` in ``fn``'s module (its constants) and call its entry."""
    ns = dict(fn.__globals__)
    exec(compile(text, "<printed>", "exec"), ns)
    return ns[re.search(r"^def (\w+)", text, re.M).group(1)](*args)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_program_derivatives_against_jax(fn):
    np.testing.assert_allclose(srcjax.jit(fn)(X), fn(X), rtol=1e-12, atol=1e-12)
    if fn.__name__ in ad_unseen_programs.IN_PLACE:  # (jax.numpy has no `y[i] = v`)
        want_g, want_h = _fd_grad(fn, X), _fd_grad(lambda x: srcjax.jvp(fn, (x,), (V,))[1], X)
        tol = 1e-6
    else:
        twin = _twin(fn)
        want_g, want_h = np.asarray(JAX.grad(twin)(X)), np.asarray(JAX.hessian(twin)(X)) @ V
        tol = 1e-6 if "float32" in fn.__name__ else 1e-9  # (float32 intermediates: jax rounds elsewhere)
    g = srcjax.grad(fn)
    np.testing.assert_allclose(g(X), want_g, rtol=tol, atol=tol)
    np.testing.assert_allclose(srcjax.jvp(g, (X,), (V,))[1], want_h, rtol=tol, atol=tol)
    # the printed programs run under NumPy (every helper they call imported) and agree
    np.testing.assert_allclose(_printed(srcjax.source(g), fn, X), want_g, rtol=tol, atol=tol)
    if THOROUGH or PROGRAMS.index(fn) % 4 == 0 or fn.__name__ in ("mixed_int_float", "sort_median"):
        np.testing.assert_allclose(_printed(srcjax.source(g, X), fn, X), want_g, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["sort_median", "tensordot_kron", "while_newton", "loop_branch_rebind"])
def test_hessian_and_its_print_against_jax(name):
    fn = getattr(ad_unseen_programs, name)
    want = np.asarray(JAX.hessian(_twin(fn))(X))
    h = srcjax.hessian(fn)
    np.testing.assert_allclose(h(X), want, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(srcjax.jacrev(srcjax.grad(fn))(X), want, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(_printed(srcjax.source(h, X), fn, X), want, rtol=1e-9, atol=1e-9)


def _median_squared(x):
    return np.median(x) ** 2 + np.sum(x ** 2)


def test_regression_a_printed_derivative_imports_the_private_helpers_it_calls():
    # `x[mask]` reduced: selection_fill's derivative, written out, calls srcjax.composites._aligned
    text = srcjax.source(srcjax.grad(ad_unseen_programs.mixed_int_float))
    assert "_aligned(" in text and re.search(r"^from srcjax\.composites import .*\b_aligned\b", text, re.M)
    # the Hessian of np.median squared: order_stat_bar's derivative calls quantile_plan.reduced_perm (for a
    # constant cotangent, `np.median(x) * 2.0`, its tangent is zero and the print no longer calls it)
    text = srcjax.source(srcjax.hessian(_median_squared), X)
    assert "reduced_perm(" in text and re.search(r"^from srcjax\.quantile_plan import .*\breduced_perm\b", text, re.M)
    np.testing.assert_allclose(_printed(text, _median_squared, X), srcjax.hessian(_median_squared)(X), rtol=1e-9,
                               atol=1e-9)
    # np.kron's: construction._kron_layout (was imported from srcjax.adjoint, which has none: an ImportError)
    text = srcjax.source(srcjax.hessian(ad_unseen_programs.tensordot_kron), X)
    assert "_kron_layout(" in text and re.search(r"^from srcjax\.construction import .*\b_kron_layout\b", text, re.M)


# -- names of srcjax's helpers taken by the user ----------------------------------------------------

NAMED = ["helpers_named_like_srcjax", "locals_named_like_srcjax", "loop_locals_named_like_srcjax"]


@pytest.mark.parametrize("name", NAMED)
def test_regression_user_names_like_srcjax_helpers(name):
    # before: ArgumentError "unbroadcast(): missing a required argument" (the user's function taken for
    # the primitive; with the primitive's arity it silently ran the primitive), "a HloValue object is
    # not callable" (a local `is_float` called by the derivative's output check)
    fn = getattr(unseen_names, name)
    twin = twins.jax_twin(fn, helpers=[h for h in twins.module_functions(unseen_names) if h is not fn])
    np.testing.assert_allclose(srcjax.jit(fn)(X), fn(X), rtol=1e-12)
    want_g, want_h = np.asarray(JAX.grad(twin)(X)), np.asarray(JAX.hessian(twin)(X))
    np.testing.assert_allclose(srcjax.grad(fn)(X), want_g, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(srcjax.hessian(fn)(X), want_h, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(srcjax.jacfwd(srcjax.grad(fn))(X), want_h, rtol=1e-10, atol=1e-10)
    for text in (srcjax.source(srcjax.grad(fn)), srcjax.source(srcjax.grad(fn), X), srcjax.source(srcjax.jit(fn))):
        got = _printed(text, fn, X)
        np.testing.assert_allclose(got, want_g if "_grad" in text else fn(X), rtol=1e-10, atol=1e-10)


def test_regression_helper_names_in_one_program_then_containers_in_another():
    # a user function named `zeros_like` in one program, then srcjax.adjoint's zeros_like/zero_leaf
    # (cotangents of containers) in later ones: each program calls its own
    p = {"w": X, "n": 3}
    twin = twins.jax_twin(unseen_names.tree_with_helper_names,
                          helpers=[unseen_names.zeros_like, unseen_names.unbroadcast])
    want = np.asarray(JAX.grad(twin)({"w": X, "n": 3.0})["w"])
    for _ in range(2):
        got = srcjax.grad(unseen_names.tree_with_helper_names)(p)
        np.testing.assert_allclose(got["w"], want, rtol=1e-12)
        assert got["n"] is None
        got = srcjax.grad(lambda q: np.sum(q["w"] ** 2))(p)
        np.testing.assert_allclose(got["w"], 2 * X)
        text = srcjax.source(srcjax.grad(unseen_names.tree_with_helper_names))
        np.testing.assert_allclose(_printed(text, unseen_names.tree_with_helper_names, p)["w"], want, rtol=1e-12)


def test_a_parameter_named_like_a_helper_is_refused_at_the_parameter():
    fn = unseen_names.parameter_named_like_srcjax
    np.testing.assert_allclose(srcjax.jit(fn)(X, X), fn(X, X))  # (no derivative: runs)
    line = inspect.getsourcelines(fn)[1]
    for run in (lambda: srcjax.grad(fn)(X, X), lambda: srcjax.jvp(fn, (X, X), (V, V))):
        with pytest.raises(srcjax.TranspileError, match="parameter `ones_like`") as e:
            run()
        assert e.value.span is not None and e.value.span.line == line
        assert "rename the parameter" in str(e.value)


def _split_parts(re, im):
    return np.sum(re ** 2 + 3.0 * im * re)


def test_regression_parameters_named_like_what_helper_modules_import_are_differentiated():
    """``re``, ``Any`` and ``annotations`` are imported by srcjax's helper modules for themselves;
    generated code never names them, so a parameter ``re`` is no helper's name (was refused)."""
    g = srcjax.grad(_split_parts)(X, V)
    np.testing.assert_allclose(np.asarray(g), 2 * X + 3.0 * V, rtol=1e-12)


def test_a_local_named_np_is_refused_at_its_line():
    fn = unseen_np_alias.local_named_np
    with pytest.raises(srcjax.UnsupportedSyntaxError, match="local variable named `np`") as e:
        srcjax.grad(fn)(X)
    assert e.value.span is not None and e.value.span.line == inspect.getsourcelines(fn)[1] + 1


# -- custom rules; Jacobians w.r.t. several arguments -----------------------------------------------

def _custom_twin(name):
    return twins.jax_twin(getattr(unseen_custom, name), helpers=[
        unseen_custom.softplus, unseen_custom.softplus_jvp, unseen_custom.clip_fwd, unseen_custom.clip_bwd],
        clip_gradient=_jax_clip_gradient())


def _jax_clip_gradient():
    f = jax.custom_vjp(lambda x: x)
    f.defvjp(lambda x: (x, None), lambda res, g: (jax.numpy.clip(g, -0.1, 0.1),))
    return f


@pytest.mark.parametrize("name", ["softplus_twice", "softplus_and_clip"])
def test_regression_a_custom_jvp_rule_calling_its_own_function(name):
    # before: KeyError <function softplus_jvp> (its transpose met the rule's own `softplus(x)` while being
    # written), then, once written in another program, a transpose calling itself: an internal error
    fn, twin = getattr(unseen_custom, name), _custom_twin(name)
    x = X[:4]
    for _ in range(2):
        np.testing.assert_allclose(srcjax.grad(fn)(x), JAX.grad(twin)(x), rtol=1e-12, atol=1e-12)
    if name == "softplus_twice":  # (forward mode through the custom_vjp is refused, as in jax)
        np.testing.assert_allclose(srcjax.hessian(fn)(x), JAX.hessian(twin)(x), rtol=1e-10, atol=1e-10)


def test_jacobians_and_hessian_with_a_tuple_of_argnums():
    # before: TypeError "'<=' not supported between instances of 'int' and 'tuple'" (an internal error)
    fn = unseen_custom.two_arguments
    twin = twins.jax_twin(fn)
    a, b = X[:3], X[3:]
    for ours, theirs in ((srcjax.jacfwd, jax.jacfwd), (srcjax.jacrev, jax.jacrev), (srcjax.hessian, jax.hessian)):
        got, want = ours(fn, argnums=(0, 1))(a, b), theirs(twin, argnums=(0, 1))(a, b)
        for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
        assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    # transformed again: its generated source (was a refusal: cannot be transformed again)
    got, want = srcjax.jacfwd(srcjax.jacrev(fn, argnums=(0, 1)))(a, b), JAX.jacfwd(JAX.jacrev(twin, argnums=(0, 1)))(a, b)
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    with pytest.raises(srcjax.TranspileError, match="argnums must be an int or a tuple of ints"):
        srcjax.jacfwd(fn, argnums="a")


def test_repeated_indices_in_an_assignment():
    # before: the value's cotangent read g[key] at every occurrence of a repeated index, though NumPy (and the
    # compiled primal) let the last write win (now masked by winning_writes; tests/test_repeated_index_updates.py)
    fn = ad_unseen_programs._repeated_index_set
    np.testing.assert_allclose(srcjax.jit(fn)(X), fn(X))  # (the value is right)
    np.testing.assert_allclose(srcjax.grad(fn)(X), _fd_grad(fn, X), atol=1e-6)


def _counter_while(x):
    y = np.zeros(6)
    i = 0
    while i < 4:  # a counter loop written as while: `i` is a Python int, restored from the tape in the adjoint
        y[i] = x[i] * x[i + 1]
        i += 1
    return np.sum(np.sin(y))


def test_grad_of_a_counter_loop_written_as_while():
    # before: UnsupportedSyntaxError "`_tape.append(...)` inside a `while` loop on array data": the binding-time
    # analysis of the gradient took `i = _tape.pop()` for array data (the tape also holds arrays)
    g = srcjax.grad(_counter_while)
    np.testing.assert_allclose(g(X), _fd_grad(_counter_while, X), atol=1e-6)
    h = np.stack([_fd_grad(lambda x, k=k: float(np.asarray(g(x))[k]), X) for k in range(6)])
    np.testing.assert_allclose(srcjax.hessian(_counter_while)(X), h, atol=1e-5)
    np.testing.assert_allclose(srcjax.jacrev(srcjax.grad(_counter_while))(X), h, atol=1e-5)


def test_vjp_of_grad_of_a_static_early_return():
    # before: UnknownFunctionError "name 'tanh_1' is not defined": the adjoint's join of the static `if` read
    # zeros_like(tanh_1) on the path that returns early (tests/test_vmap_unseen.py: jacrev(grad(f)) of it too)
    from tests.container_programs import none_leaf
    r = np.random.default_rng(3)
    p, x = {"w": r.standard_normal((3, 2)) * 0.3, "b": None}, r.standard_normal((4, 3))
    u = {"w": r.standard_normal((3, 2)), "b": None}
    _, pullback = srcjax.vjp(srcjax.grad(none_leaf), p, x)
    got = pullback(u)
    twin = twins.jax_twin(none_leaf)
    want = jax.vjp(JAX.grad(twin), p, x)[1](u)
    np.testing.assert_allclose(got[0]["w"], want[0]["w"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-10, atol=1e-12)
    assert got[0]["b"] is None
