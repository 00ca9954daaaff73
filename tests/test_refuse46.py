"""What jax runs and srcjax refused or got wrong (refuse46), against jax (tests/twins.py), the user's
function run by NumPy and finite differences: properties of NamedTuple and dataclass arguments under jit,
grad, jvp, hessian and vmap (the getter read as a helper: under vmap it had run on the batched fields, a
silent wrong answer, and jvp had taken the property of the tangent)."""

from __future__ import annotations

import dataclasses
import sys
import types
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest

import srcjax

from . import refuse46_programs as rp
from .corpus_harness import twin_namespace
from .twins import JAX, jitted

jax.config.update("jax_enable_x64", True)
sys.modules["refuse46_programs_twin"] = types.ModuleType("refuse46_programs_twin")  # (dataclasses look it up)
TWIN = twin_namespace(rp, jax.numpy)  # (the module's text with np as jax.numpy: its classes' twins too)
for _cls in (TWIN["Particle"], rp.Particle):  # (jax's transformations take the test's Particle, its twin inside)
    jax.tree_util.register_dataclass(_cls, data_fields=["pos", "vel"], meta_fields=[])


def close(got: Any, want: Any, what: str, rtol: float = 1e-7) -> None:
    gl, wl = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(gl) == len(wl), f"{what}: {got} != {want}"
    for g, w in zip(gl, wl):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=1e-10, err_msg=what)


def twin(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``'s jax twin, taking srcjax's arguments (a NamedTuple or dataclass of the module: its twin's)."""
    def to_twin(v: Any) -> Any:
        cls = TWIN.get(type(v).__name__)
        if isinstance(v, tuple) and not hasattr(v, "_fields"):
            return tuple(to_twin(u) for u in v)
        return cls(*(to_twin(getattr(v, f)) for f in _fields(v))) if cls is not None and cls is not type(v) else v
    return lambda *args: TWIN[fn.__name__](*(to_twin(a) for a in args))


def _fields(v: Any) -> tuple[str, ...]:
    return tuple(getattr(v, "_fields", ())) or tuple(f.name for f in dataclasses.fields(v))


def check(fn: Callable[..., Any], args: tuple[Any, ...], batched: tuple[Any, ...] | None = None,
          transforms: tuple[str, ...] = ("jit", "grad", "jvp", "hessian", "vmap", "vmap(grad)")) -> None:
    """``fn`` under each transformation against jax's (and, compiled, against NumPy running ``fn``)."""
    tw = twin(fn)
    for t in transforms:
        if t == "jit":
            close(srcjax.jit(fn)(*args), fn(*args), "jit vs NumPy")
            close(srcjax.jit(fn)(*args), jitted(tw)(*args), "jit vs jax")
        elif t == "grad":
            close(srcjax.grad(fn)(*args), JAX.grad(tw)(*args), "grad")
        elif t == "hessian":
            close(srcjax.hessian(fn)(*args), JAX.hessian(tw)(*args), "hessian")
        elif t == "jvp":
            tangents = jax.tree_util.tree_map(lambda v: np.cos(3.0 * v), args)
            close(srcjax.jvp(fn, args, tangents), JAX.jvp(tw, args, tangents), "jvp")
        elif t == "vmap":
            assert batched is not None
            close(srcjax.vmap(fn)(*batched), JAX.vmap(tw)(*batched), "vmap")
        elif t == "vmap(grad)":
            assert batched is not None
            close(srcjax.vmap(srcjax.grad(fn))(*batched), JAX.vmap(JAX.grad(tw))(*batched), "vmap(grad)")


R = np.random.default_rng(46)


def n(*shape: int) -> np.ndarray:
    return R.standard_normal(shape)


# -- 1. properties of NamedTuple and dataclass arguments --------------------------------------------------------

def test_property_of_a_namedtuple_argument_two_classes_define_it() -> None:
    """``b.energy``: Body and Particle both define it: read by the object's class (was an internal error under
    every transformation: the getter ran on the specializer's values)."""
    check(rp.body_weighted, (rp.Body(n(3), n(3)),), (rp.Body(n(4, 3), n(4, 3)),))


def test_property_of_a_dataclass_argument() -> None:
    """Particle's property and cached_property: vmap and jvp had been silently wrong (the getter summed over
    the batch; jvp took the property of the tangent), grad refused with a TypeError from the getter."""
    check(rp.particle_weighted, (rp.Particle(n(3), n(3)),), (rp.Particle(n(4, 3), n(4, 3)),))


def test_property_of_one_class_as_a_call_of_its_getter() -> None:
    check(rp.body_momentum, (rp.Body(n(2, 3), n(2, 3)),), (rp.Body(n(4, 2, 3), n(4, 2, 3)),))
    assert "Body_momentum(b)" in srcjax.source(rp.body_momentum)


def test_properties_read_by_a_method_and_by_each_other() -> None:
    g, x = rp.Gauss(n(3), 0.3 * n(3)), n(3)
    check(rp.gauss_nll, (g, x), transforms=("jit", "grad", "jvp", "hessian"))
    gs, xs = rp.Gauss(n(4, 3), 0.3 * n(4, 3)), n(4, 3)
    close(srcjax.vmap(rp.gauss_nll)(gs, xs), JAX.vmap(twin(rp.gauss_nll))(gs, xs), "vmap")


def test_property_of_an_object_built_in_the_function() -> None:
    check(rp.body_made, (n(3),), (n(4, 3),))


def test_property_of_an_item_of_a_tuple_argument() -> None:
    s = (rp.Body(n(3), n(3)), rp.Body(n(3), n(3)))
    check(rp.body_nested, (s,), transforms=("jit", "grad", "jvp"))


# -- 2. lambdas with defaults bound to a name ------------------------------------------------------------------

@pytest.mark.parametrize("fn", [rp.lambda_default, rp.lambda_default_local, rp.lambda_default_in_loop],
                         ids=lambda f: f.__name__)
def test_lambda_with_a_default(fn: Callable[..., Any]) -> None:
    """Refused before ("nested functions with defaults"), under jit too: the lambda is the nested ``def`` with
    its defaults kept in names where it is made (frontend/named_lambdas.py, nested_defaults.py)."""
    check(fn, (n(3),), (n(4, 3),))


# -- 3. history lists changed at the front ----------------------------------------------------------------------

@pytest.mark.parametrize("fn", [rp.history_insert_front, rp.history_slice_front, rp.history_window_pop_front,
                                rp.history_pop_values, rp.lbfgs_limited_memory], ids=lambda f: f.__name__)
def test_history_changed_at_the_front(fn: Callable[..., Any]) -> None:
    """``hist.pop(0)``, ``v = q.pop(2)`` (a literal place) and ``hist[:0] = [v]``: refused under derivatives and
    vmap ("cannot differentiate through `hist.pop(0)`"), ``hist[:0] = ...`` under jit too; read as slices and
    appends (frontend/list_methods.py), as ``hist.insert(0, v)`` was."""
    check(fn, (0.5 * n(3),), (0.5 * n(4, 3),), transforms=_HISTORY_TRANSFORMS.get(fn.__name__, _ALL))


_ALL = ("jit", "grad", "jvp", "hessian", "vmap", "vmap(grad)")
_HISTORY_TRANSFORMS = {
    # vmap(grad): "a list holding batched and unbatched values is used as a whole" (the histories hold the batched
    # steps beside the unbatched first ones' zeros; hunt26's lbfgs_sliced, a known refusal there)
    "lbfgs_limited_memory": _ALL[:-1]}


def test_vmap_of_grad_of_a_window_runs() -> None:
    """vmap(grad) of `hist = hist[1:]` under a static `if len(hist) > 2:` in a loop (was refused: "reverse mode
    through a loop inside an `if` on array data": the batched gradient's `batch_len(hist)` was taken for data), per
    example as grad's."""
    xs = n(4, 3)
    got = np.asarray(srcjax.vmap(srcjax.grad(rp.history_window_pop_front))(xs))
    for b in range(4):
        np.testing.assert_allclose(got[b], np.asarray(srcjax.grad(rp.history_window_pop_front)(xs[b])), rtol=1e-12)


# -- 4. forward over reverse through loops over views of history lists ---------------------------------------------

@pytest.mark.parametrize("fn", [rp.lbfgs_two_loop], ids=lambda f: f.__name__)
def test_hessian_through_loops_over_reversed_histories(fn: Callable[..., Any]) -> None:
    """reverse mode saves ``loop_items = list(zip(reversed(s_hist), reversed(y_hist)))`` for its backward loop;
    forward mode over it (hessian, jacrev(grad)) refused the ``list(...)`` of active lists; it is read as the loop of
    appends that builds it (transforms/view_lists.py), each part of a nested zip unpacked."""
    check(fn, (0.5 * n(3),), (0.5 * n(4, 3),))
    close(srcjax.jacrev(srcjax.grad(fn))(0.5 * np.ones(3)), JAX.hessian(twin(fn))(0.5 * np.ones(3)), "jacrev(grad)")


def test_a_zip_item_taken_whole_is_refused_not_wrong() -> None:
    """``for pair, z in zip(zip(xs, ys), zs)``: the derivative took ``pair`` for a constant (a silently wrong grad,
    jvp and hessian); refused at the loop until loop_sources follows a tuple item taken whole."""
    for t in (srcjax.grad, srcjax.hessian):
        with pytest.raises(srcjax.TranspileError, match="taken whole") as ei:
            t(rp.zip_taken_whole)(n(3))
        assert "refuse46_programs.py" in str(ei.value)
    close(srcjax.jit(rp.zip_taken_whole)(np.ones(3)), rp.zip_taken_whole(np.ones(3)), "jit")


# -- 6. a loop target name reused by a later loop under an `if` on data ---------------------------------------------

def test_a_loop_name_reused_under_a_test_on_data() -> None:
    """``for c in cs`` (data: numbers of a tuple argument) then ``for c in (1.0, 2.0, 3.0)`` with ``if c == 2.0:
    continue`` under an ``if`` on data: the binding-time analysis gave ``c`` one kind, data, and refused the
    ``continue`` in every mode; each later loop's name is its own now (frontend/loop_targets.py)."""
    x, cs = 0.5 * np.abs(n(3)), (1.0, 2.0)
    tw = twin(rp.loop_names_reused)
    close(srcjax.jit(rp.loop_names_reused)(x, cs), rp.loop_names_reused(x, cs), "jit vs NumPy")
    close(srcjax.grad(rp.loop_names_reused)(x, cs), jax.grad(tw)(x, cs), "grad")
    close(srcjax.hessian(rp.loop_names_reused)(x, cs), jax.hessian(tw)(x, cs), "hessian")
    close(srcjax.jvp(lambda v: rp.loop_names_reused(v, cs), (x,), (np.cos(x),)),
          jax.jvp(lambda v: tw(v, cs), (x,), (np.cos(x),)), "jvp")
    check(rp.loop_names_reused_nested, (n(3, 3),), transforms=("jit", "grad", "jvp", "hessian"))


# -- more programs in the same spirit ---------------------------------------------------------------------------

MORE = [rp.adam_props, rp.spring_energy, rp.anderson_like, rp.closures_with_defaults, rp.queue_of_states,
        rp.front_stack, rp.ema_window, rp.secant_history]
_HISTORY_TRANSFORMS["anderson_like"] = _ALL[:-1]  # (vmap(grad): the window's `if len(xs) > 2:`, as above)


@pytest.mark.parametrize("fn", MORE, ids=lambda f: f.__name__)
def test_more_programs_in_the_same_spirit(fn: Callable[..., Any]) -> None:
    check(fn, (np.array([0.3, -0.4, 0.6]),), (np.array([[0.3, -0.4, 0.6], [0.25, -0.1, 0.4], [-0.3, 0.4, -0.6]]),),
          transforms=_HISTORY_TRANSFORMS.get(fn.__name__, _ALL))
