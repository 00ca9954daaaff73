"""Methods of module-level objects of the user's plain classes (srcjax/frontend/object_methods.py):
``sigmoid(x)``, ``sigmoid.gradient(x)`` calling ``self(x)`` and ``self.__call__(x)``, ``gauss.loss(w, x, y)``
calling ``self.features`` and a staticmethod, and ``act(x)`` / ``act.gradient(x)`` in ``for act in ACTS`` over
a module-level list of objects of several classes (a subclass overriding ``__call__`` among them). Were refused
under grad ("srcjax does not know its derivative") and vmap ("vmap: cannot batch 'sigmoid(x)'"), as in hunt14's
ML-From-Scratch programs; checked under jit, grad, hessian, vmap and vmap(grad) against jax, the user's function
run by NumPy and the generated source run by NumPy."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import srcjax
from srcjax import TranspileError

from . import object_method_programs as op

jax = pytest.importorskip("jax")

from .twins import JAX  # noqa: E402

jax.config.update("jax_enable_x64", True)


def _twin() -> dict[str, Any]:
    text = inspect.getsource(op).replace("import numpy as np\n", "")
    ns: dict[str, Any] = {"np": jax.numpy, "__name__": "object_method_programs_twin"}
    exec(compile(text, inspect.getsourcefile(op) or "<twin>", "exec"), ns)  # noqa: S102
    return ns


TWIN = _twin()
RNG = np.random.default_rng(3)
X = RNG.standard_normal(5) * 2
W, XS, YS = RNG.standard_normal(3), RNG.standard_normal(6), RNG.standard_normal(6)
BATCH = RNG.standard_normal((3, 5)) * 2


def _agree(got: Any, want: Any, what: str) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("name", ["direct", "zoo"])
def test_methods_of_module_level_objects(name: str) -> None:
    f, twin = getattr(op, name), TWIN[name]
    _agree(srcjax.jit(f)(X), f(X), "jit vs NumPy")
    g = srcjax.grad(f)
    _agree(g(X), jax.jit(jax.grad(twin))(X), "grad vs jax")
    _agree(srcjax.numpy_function(g)(X), g(X), "grad's source run by NumPy")
    _agree(srcjax.vmap(f)(BATCH), [f(b) for b in BATCH], "vmap vs NumPy per example")
    _agree(srcjax.vmap(g)(BATCH), JAX.vmap(jax.grad(twin))(BATCH), "vmap(grad) vs jax")
    if name == "direct":
        _agree(srcjax.hessian(f)(X), JAX.hessian(twin)(X), "hessian vs jax")


def test_method_calling_methods_and_a_staticmethod() -> None:
    f, twin = op.regression, TWIN["regression"]
    _agree(srcjax.jit(f)(W, XS, YS), f(W, XS, YS), "jit vs NumPy")
    for k in (0, 1):
        _agree(srcjax.grad(f, argnums=k)(W, XS, YS), JAX.grad(twin, argnums=k)(W, XS, YS), f"grad(argnums={k})")
    xs = np.stack([XS, -XS, 0.5 * XS])
    _agree(srcjax.vmap(srcjax.grad(f), in_axes=(None, 0, None))(W, xs, YS),
           JAX.vmap(jax.grad(twin), in_axes=(None, 0, None))(W, xs, YS), "vmap(grad) over x vs jax")


def test_a_dispatch_over_the_objects_classes_is_written() -> None:
    """``act(x)`` of ``for act in ACTS``: one static test per class, a subclass before its base (``SoftLeaky``
    overrides ``Leaky.__call__``; its objects must never be read with ``Leaky``'s)."""
    text = srcjax.source(srcjax.jit(op.zoo))
    assert "isinstance(act, SoftLeaky)" in text and "SoftLeaky_call(act, x)" in text, text
    assert text.index("isinstance(act, SoftLeaky)") < text.index("Leaky_call(act, x)"), text
    assert "act(x)" not in text.replace("_call(act, x)", ""), text


def test_an_object_rebound_to_another_class_is_never_read_with_the_old_method() -> None:
    """``sigmoid`` rebound to an object of another class after a first compile: jit (a new wrapper) reads the new
    object; a derivative (kept per function, docs/limitations.md) specialized for a new shape either runs the program
    written before with its object or is refused by the method copy's check (``assert isinstance(self, Sigmoid)``,
    at the method's line): never the new object read with ``Sigmoid``'s method."""
    old = op.sigmoid
    try:
        _agree(srcjax.grad(op.direct)(X), JAX.grad(TWIN["direct"])(X), "grad before")
        op.sigmoid = op.Leaky(0.5)  # type: ignore[assignment]
        _agree(srcjax.jit(op.direct)(X), op.direct(X), "jit after the rebinding reads the new object")
        for g, x in ((srcjax.grad(op.direct), X[:3]), (srcjax.vmap(srcjax.grad(op.direct)), BATCH[:, :3])):
            try:
                got = g(x)
            except TranspileError as e:
                assert "is not a Sigmoid" in str(e) and "object_method_programs.py" in str(e), e
                continue
            op.sigmoid = old  # (the program written before the rebinding, with its object: never a mix)
            want = JAX.grad(TWIN["direct"])(x) if x.ndim == 1 else JAX.vmap(jax.grad(TWIN["direct"]))(x)
            _agree(got, want, "a derivative kept from before the rebinding")
            op.sigmoid = op.Leaky(0.5)  # type: ignore[assignment]
    finally:
        op.sigmoid = old


@pytest.mark.parametrize("name", ["through_attributes", "optimizer_step", "nested_objects"])
def test_objects_held_by_objects(name: str) -> None:
    """``self.activation(x)``, ``self.activation.gradient(z)`` and ``self.optimizer.update(w, g)`` inside a method
    of a module-level layer, a net's layers' (two levels) and ``net.out.activation.gradient(x)``: were refused under
    grad and vmap ("cannot differentiate through `self_optimizer.update(...)`"; ``update`` was also read as a
    dict's). The method's copy is bound to its object, whose attributes' classes are then known."""
    f, twin = getattr(op, name), TWIN[name]
    _agree(srcjax.jit(f)(X), f(X), "jit vs NumPy")
    g = srcjax.grad(f)
    _agree(g(X), jax.jit(jax.grad(twin))(X), "grad vs jax")
    _agree(srcjax.numpy_function(g)(X), g(X), "grad's source run by NumPy")
    _agree(srcjax.vmap(f)(BATCH), [f(b) for b in BATCH], "vmap vs NumPy per example")
    _agree(srcjax.vmap(g)(BATCH), JAX.vmap(jax.grad(twin))(BATCH), "vmap(grad) vs jax")


def test_a_held_object_of_another_class_is_refused_not_misread() -> None:
    """A copy bound to ``layer`` reads ``self.activation`` as a ``Sigmoid``: ``layer`` rebound to a layer whose
    activation is a ``Leaky`` is refused by that call's check (at the method's line) or runs the new object with
    its own method (jit, a new wrapper): never the new object read with ``Sigmoid``'s method."""
    old = op.layer
    try:
        g = srcjax.grad(op.through_attributes)
        _agree(g(X), JAX.grad(TWIN["through_attributes"])(X), "grad before")
        op.layer = op.Dense(1.5, op.Leaky(0.3))  # type: ignore[assignment]
        _agree(srcjax.jit(op.through_attributes)(X), op.through_attributes(X), "jit after the rebinding")
        try:
            got = g(X[:3])
        except TranspileError as e:
            assert "is not a Sigmoid" in str(e) and "object_method_programs.py" in str(e), e
        else:
            op.layer = old
            _agree(got, JAX.grad(TWIN["through_attributes"])(X[:3]), "a derivative kept from before the rebinding")
    finally:
        op.layer = old


def test_inheritance_super_properties_and_class_methods() -> None:
    """``super().__call__(x)`` and ``super(Shifted, self).__call__(x)`` in a method (was refused everywhere: "the
    builtin super() is not supported in compiled code"): the copy of the next class's method, run on ``self``, so a
    base's method calling ``self.__call__`` calls the object's class's (``Sigmoid.gradient`` on a ``Shifted``);
    a property, a classmethod and a staticmethod read through the object and the class."""
    f, twin = op.inherited, TWIN["inherited"]
    _agree(srcjax.jit(f)(X), f(X), "jit vs NumPy")
    g = srcjax.grad(f)
    _agree(g(X), jax.jit(jax.grad(twin))(X), "grad vs jax")
    _agree(srcjax.numpy_function(g)(X), g(X), "grad's source run by NumPy")
    _agree(srcjax.vmap(f)(BATCH), [f(b) for b in BATCH], "vmap vs NumPy per example")
    _agree(srcjax.vmap(g)(BATCH), JAX.vmap(jax.grad(twin))(BATCH), "vmap(grad) vs jax")
    text = srcjax.source(g)
    assert "super(" not in text and "Sigmoid_call" in text, text


def test_an_object_passed_as_an_argument() -> None:
    """``sc.run(x)`` of a parameter ``sc`` given an object (static in ``jit(f, static_argnums=1)``; srcjax also takes
    it as static unasked, where ``jax.jit`` refuses a non-array argument): the copy of ``run`` of the one class of
    the module defining it (was refused under grad and vmap: "cannot differentiate through `sc.run(...)`"). An
    object of another class, or an array, is refused by the copy's check at the method's line."""
    f, twin = op.passed_object, TWIN["passed_object"]
    sc, tsc = op.Scaler(1.7), TWIN["Scaler"](1.7)
    _agree(srcjax.jit(f, static_argnums=1)(X, sc), f(X, sc), "jit vs NumPy")
    g = srcjax.grad(f)
    _agree(g(X, sc), JAX.grad(twin)(X, tsc), "grad vs jax")
    _agree(srcjax.vmap(f, in_axes=(0, None))(BATCH, sc), [f(b, sc) for b in BATCH], "vmap vs NumPy")
    _agree(srcjax.vmap(g, in_axes=(0, None))(BATCH, sc), JAX.vmap(lambda b: jax.grad(twin)(b, tsc))(BATCH),
           "vmap(grad) vs jax")
    for other in (op.SGD(0.1), X):
        with pytest.raises(TranspileError, match="is not a Scaler") as e:
            g(X, other)
        assert "object_method_programs.py" in str(e.value), e.value


def test_an_object_holding_arrays_passed_unmarked_is_refused() -> None:
    """An object holding an array (``gauss.centers``) passed as an argument not marked static was taken as static
    unasked, keyed by its identity: ``loss.centers[0] = 5.0`` afterwards gave the old values, without an error (jit
    and grad; ``jax.jit`` refuses such an argument, ``jax.grad`` traces it again). Refused now, at the function's
    line, naming the attribute; marked static it runs (its arrays constants, as jax's static arguments)."""
    f = op.passed_loss
    for t in (srcjax.jit(f), srcjax.grad(f)):
        with pytest.raises(TranspileError, match=r"holding an array \(loss\.centers\)") as e:
            t(W, XS, YS, op.gauss)
        assert "object_method_programs.py" in str(e.value) and "pytree" in str(e.value), e.value
    _agree(srcjax.jit(f, static_argnames=("loss",))(W, XS, YS, op.gauss), f(W, XS, YS, op.gauss), "static: jit")
