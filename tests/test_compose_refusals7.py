"""Refusals and internal errors under composed transformations (issue #15, session 26): each agrees with jax
now, or is refused at the user's line.

- ``vmap(grad(f))`` of an ``f`` calling ``srcjax.vmap(inner, in_axes=(1, None))``: the batched ``inner``'s
  ``batch_moveaxis`` is a recursive helper (it recurses into containers), whose tape vmap took as one state
  for every value, all batched: the static ``source=`` it saved came back batched ("np.moveaxis's source=
  argument must be the same for every example, but it depends on `_tape`", located in srcjax's source). A
  recursive helper's tape batched at every level is batched slot by slot like any tape batched whole
  (``transforms/batch_tapes``).
- ``vmap(grad(f))`` of an ``f`` calling ``srcjax.jacrev(g)``: see its test.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import srcjax  # noqa: E402

from .twins import jax_twin, jitted  # noqa: E402
from .unseen_oracle import agree  # noqa: E402

jax.config.update("jax_enable_x64", True)


def inner_row(c, x):
    return np.sin(c @ x) + 0.1 * np.sum(c * c)


def rows_loss(x, w):
    h = np.tanh(x @ w)
    rows = srcjax.vmap(inner_row, in_axes=(1, None))(w, x)
    h = h + 0.5 * rows
    return np.sum(h * h)


@pytest.mark.parametrize("argnums", [0, 1])
def test_vmap_of_grad_through_a_vmap_moving_an_axis(argnums) -> None:  # type: ignore[no-untyped-def]
    """(~2.6 CPU s an argument: the default tier differentiates by x, the thorough tier by w too)"""
    rng = np.random.default_rng(136)
    x, w = rng.standard_normal((5, 4)), rng.standard_normal((5, 4, 3))
    twin = jax_twin(rows_loss, helpers=[inner_row])
    got = srcjax.vmap(srcjax.grad(rows_loss, argnums=argnums))(x, w)
    want = jitted(jax.vmap(jax.grad(twin, argnums=argnums)))(x, w)
    agree(got, want, rtol=1e-10, what=f"vmap(grad(argnums={argnums}))")
    # (vmap(jacrev) of it was refused: "cannot batch '(a + 1 if a >= 0 else a for a in axis)'")
    got = srcjax.vmap(srcjax.jacrev(rows_loss, argnums=argnums))(x, w)
    agree(got, want, rtol=1e-10, what=f"vmap(jacrev(argnums={argnums}))")


def inner_vec(x, w):
    return np.tanh(x @ w)


def jac_loss(x, w):
    h = np.tanh(x @ w)
    jac = srcjax.jacrev(inner_vec)(x, w)
    h = h + 0.5 * jac @ x
    return np.sum(h * h)


@pytest.mark.parametrize("argnums", [0, 1])
def test_vmap_of_grad_through_a_jacrev_in_the_body(argnums) -> None:  # type: ignore[no-untyped-def]
    """The jacobian's helper binds a list on one branch of a static ``if`` only (``list(enumerate(leaves))``,
    some items batched): the branch join broadcast it whole for the other path, which never binds it ("a list
    holding batched and unbatched values is used as a whole", located in srcjax's source). A name bound on one
    path only, and not before, keeps its one binding's state. (~3.4 CPU s an argument: the default tier
    differentiates by x, the thorough tier by w too.)"""
    rng = np.random.default_rng(128)
    x, w = rng.standard_normal((5, 4)), rng.standard_normal((5, 4, 3))
    twin = jax_twin(jac_loss, helpers=[inner_vec])
    got = srcjax.vmap(srcjax.grad(jac_loss, argnums=argnums))(x, w)
    want = jitted(jax.vmap(jax.grad(twin, argnums=argnums)))(x, w)
    agree(got, want, rtol=1e-10, what=f"vmap(grad(argnums={argnums}))")


def grads_loss(x, w):
    h = np.tanh(x @ w)
    gs = srcjax.vmap(srcjax.grad(inner_row), in_axes=(1, None), out_axes=1)(w, x)
    h = h + 0.5 * np.sum(gs * w, axis=0)
    return np.sum(h * h)


def rows_grads_loss(x, w):
    h = np.tanh(x @ w)
    rows = srcjax.vmap(inner_row, in_axes=(1, None))(w, x)
    h = h + 0.5 * rows
    gs = srcjax.vmap(srcjax.grad(inner_row), in_axes=(1, None), out_axes=1)(w, x)
    h = h + 0.5 * np.sum(gs * w, axis=0)
    return np.sum(h * h)


@pytest.mark.parametrize("how", ["hessian", "jacfwd_grad"])
@pytest.mark.parametrize("f", [grads_loss, rows_grads_loss])
def test_hessian_through_a_vmap_of_grad(f, how) -> None:  # type: ignore[no-untyped-def]
    """Forward mode over reverse: a helper taking the tape whose result carries no derivative was called as
    it is, so it popped the tape but not its tangent list, and a later pop of the tangent list took another
    helper's row ("cannot unpack 25 values into 26 names", or a broadcast error of shapes no one wrote, at
    the user's line). Such a call is the helper's JVP, which moves both lists in step. (Each ~5 CPU s: the
    default tier runs jacfwd(grad) of grads_loss, the mixed second derivative.)"""
    rng = np.random.default_rng(1117)
    x, w = rng.standard_normal(4), rng.standard_normal((4, 3))
    twin = jax_twin(f, helpers=[inner_row])
    if how == "hessian":
        got = srcjax.jit(srcjax.hessian(f, argnums=1))(x, w)
        agree(got, jitted(jax.hessian(twin, argnums=1))(x, w), rtol=1e-9, what="hessian")
    else:
        got = srcjax.jacfwd(srcjax.grad(f), argnums=1)(x, w)
        agree(got, jitted(jax.jacfwd(jax.grad(twin), argnums=1))(x, w), rtol=1e-9, what="jacfwd(grad)")


class Params(NamedTuple):
    w: Any
    b: Any


@dataclasses.dataclass
class Layer:
    w: Any
    b: Any


srcjax.tree_util.register_dataclass(Layer, data_fields=["w", "b"], meta_fields=[])
jax.tree_util.register_dataclass(Layer, data_fields=["w", "b"], meta_fields=[])


def dense(x, w, p):
    h = np.tanh(x @ w)
    h = np.tanh(h @ p.w + p.b)
    return {"out": np.tanh(h), "s": np.sum(h) * x}


def jac_rows_layer(x, w, p):
    return srcjax.vmap(srcjax.jacrev(dense, argnums=2), in_axes=(0, 0, Layer(0, None)))(x, w, p)


def jac_rows_params(x, w, p):
    return srcjax.vmap(srcjax.jacrev(dense, argnums=1), in_axes=(0, 0, Params(w=0, b=None)))(x, w, p)


def batch_loss(p, xs):
    return np.sum(srcjax.vmap(dense, in_axes=(0, None, Params(None, 0)))(xs, p.w, p)["out"])


@pytest.mark.parametrize("body", [jac_rows_layer, jac_rows_params])
def test_a_record_of_axes_written_in_the_call_under_jit(body) -> None:  # type: ignore[no-untyped-def]
    """``in_axes=(0, 0, Layer(0, None))`` written in a compiled body: the record's call was not read as a
    constant, so the transformation ran while lowering, on srcjax's own form of ``dense`` ("cannot compile
    NormalizedFunction(name='dense', ...)": 200 lines of repr). NamedTuples and dataclasses of constants are
    constants, as literals are."""
    rng = np.random.default_rng(1277)
    cls = Layer if body is jac_rows_layer else Params
    p = cls(rng.standard_normal((5, 3, 3)), rng.standard_normal(3))
    x, w = rng.standard_normal((5, 3)), rng.standard_normal((5, 3, 3))
    twin = jax_twin(body, helpers=[dense], Layer=Layer, Params=Params)
    agree(srcjax.jit(body)(x, w, p), jax.jit(twin)(x, w, p), rtol=1e-10, what="jit")


def test_grad_of_a_vmap_with_a_record_of_axes_written_in_the_call() -> None:
    """Was "cannot differentiate through `vmap(...)`" (the vmap was not seen as one with constant axes)."""
    rng = np.random.default_rng(1278)
    p = Params(rng.standard_normal((3, 3)), rng.standard_normal((5, 3)))
    xs = rng.standard_normal((5, 3))
    twin = jax_twin(batch_loss, helpers=[dense], Params=Params)
    agree(srcjax.grad(batch_loss)(p, xs), jax.jit(jax.grad(twin))(p, xs), rtol=1e-10, what="grad")


def logsumexp(v, axis=-1):
    m = np.max(v, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(v - m), axis=axis))


def early_exit(x, w):
    h = np.tanh(x @ w)
    if np.max(np.abs(h)) > 0.6:
        return np.sum(h * h)
    logits = h @ w
    return -np.sum(logits - logsumexp(logits))


def test_vmap_of_grad_of_an_early_return_before_a_static_axis() -> None:
    """The ``if`` on data becomes a ``cond`` carrying what the other path computes, ``logsumexp``'s ``axis``
    included (``UNSET`` where the early return is taken). vmap selected every output per example, so the
    static axis became batched data ("expand_reduced's axis= argument must be the same for every example").
    An unbatched value one branch sets and the other passes through ``UNSET`` is that branch's, unbatched.
    Oracle: jax.grad one example at a time (jax.vmap refuses the ``if`` on data)."""
    rng = np.random.default_rng(206)
    x, w = rng.standard_normal((8, 3)), 0.5 * rng.standard_normal((3, 3))
    taken = np.max(np.abs(np.tanh(x @ w)), axis=1) > 0.6
    assert taken.any() and not taken.all()
    twin = jax_twin(early_exit, helpers=[logsumexp])
    for argnums, axes in ((0, (0, None)), (1, (0, None)), (1, (0, 0))):
        ws = np.stack([w * (1 + 0.1 * i) for i in range(8)]) if axes[1] == 0 else w
        got = srcjax.vmap(srcjax.grad(early_exit, argnums=argnums), in_axes=axes)(x, ws)
        want = np.stack([jax.grad(twin, argnums=argnums)(x[i], ws[i] if axes[1] == 0 else ws) for i in range(8)])
        agree(got, want, rtol=1e-10, what=f"vmap(grad(argnums={argnums}), in_axes={axes})")


def early_exit_params(p, x):
    h = np.tanh(x @ p["w"])
    if np.max(np.abs(h)) > 0.6:
        return np.sum(h * h)
    logits = h @ p["out"]
    return -np.sum(logits - logsumexp(logits)) + 0.01 * np.sum(p["out"] ** 2)


def test_vmap_of_grad_by_a_dict_through_an_early_return() -> None:
    """The gradient by an unmapped dict of parameters is selected per example at the ``if``'s join: the
    select took the dict for an array ("internal error: ValueError: entry not a 2- or 3- tuple" from
    ``np.result_type``, located at the user's def line). A cotangent that may be a container (zeros of one,
    or what is added into those) is selected by ``batch_select_items``, leaf by leaf; ``batch_select`` stays
    one function of arrays (reverse mode writes it out in branches on data: a recursive one it refuses)."""
    rng = np.random.default_rng(210)
    x = rng.standard_normal((8, 3))
    p = {"w": 0.5 * rng.standard_normal((3, 3)), "out": rng.standard_normal((3, 3))}
    twin = jax_twin(early_exit_params, helpers=[logsumexp])
    got = srcjax.vmap(srcjax.grad(early_exit_params), in_axes=(None, 0))(p, x)
    each = [jax.grad(twin)(p, x[i]) for i in range(8)]
    assert 0 < sum(bool(np.max(np.abs(np.tanh(x[i] @ p["w"]))) > 0.6) for i in range(8)) < 8
    want = {k: np.stack([np.asarray(e[k]) for e in each]) for k in p}
    agree(got, want, rtol=1e-10, what="vmap(grad) by a dict")
    vg = srcjax.vmap(srcjax.grad(early_exit_params), in_axes=(None, 0))  # reverse mode through the select

    def outer(p, x):
        g = vg(p, x)
        return np.sum(g["out"] ** 2) + np.sum(np.tanh(g["w"]))

    def outer_twin(p):
        gs = [jax.grad(twin)(p, x[i]) for i in range(8)]
        return sum(jax.numpy.sum(g["out"] ** 2) + jax.numpy.sum(jax.numpy.tanh(g["w"])) for g in gs)

    agree(srcjax.grad(outer)(p, x), jax.grad(outer_twin)(p), rtol=1e-9, what="grad of vmap(grad) by a dict")


def times(a, b):
    return a * b


def calls_times(x, w):
    h = np.tanh(x) + w
    return np.sum(times(h, x[:2]))


@pytest.mark.parametrize("how", ["vmap", "jvp", "grad"])
def test_a_shape_error_in_a_helper_is_located_at_its_line(how: str) -> None:
    """A helper whose generated copy folds its body into one ``return`` expression of its parameters (the
    batched ``return batch_align_b(a, b) * batch_align_b(b, a)``) had every line mapped to its ``def`` (the
    parameters' binding): a shape error there was shown at ``def times(a, b):`` (vmap, jvp, and the CLI's
    ``--vmap``/``--jvp``). A generated ``return`` found nowhere else is the user's only ``return``."""
    import inspect
    x = w = np.ones((3, 4))
    run = {"vmap": lambda: srcjax.vmap(calls_times)(np.ones((2, 3, 4)), np.ones((2, 3, 4))),
           "jvp": lambda: srcjax.jvp(calls_times, (x, w), (x, w)),
           "grad": lambda: srcjax.grad(calls_times)(x, w)}[how]
    with pytest.raises(srcjax.TranspileError, match="could not be broadcast") as e:
        run()
    lines, first = inspect.getsourcelines(times)
    assert e.value.span is not None and e.value.span.line == first + 1, str(e.value)


@pytest.mark.parametrize("how", [["--vmap", "--in-axes", "0,0"], ["--jvp"]])
def test_the_clis_shape_error_in_a_helper_is_located_at_its_line(how: list[str], tmp_path: Any,
                                                                 capsys: Any) -> None:
    """``srcjax-transpile FILE::FUNC --vmap/--jvp --emit hlo`` with shapes that do not fit: the error names the
    helper's ``return`` line (was its ``def`` line)."""
    from srcjax.cli import main
    path = tmp_path / "bad_shapes.py"
    path.write_text("import numpy as np\n\n\ndef times(a, b):\n    return a * b\n\n\n"
                    "def f(x, w):\n    h = np.tanh(x) + w\n    return np.sum(times(h, x[:2]))\n")
    code = main([f"{path}::f", "--arg", "x=f64[3,4]", "--arg", "w=f64[3,4]", "--emit", "hlo", *how])
    err = capsys.readouterr().err
    assert code != 0 and f"{path}:5:" in err and "could not be broadcast" in err, err


def norm_of_both_axes(x):
    return np.linalg.norm(np.tanh(x), axis=(0, 1))


def fro_norm_of_both_axes(x):
    return np.linalg.norm(np.tanh(x), ord="fro", axis=(1, 0))


def vmapped_norms(xs):
    return srcjax.vmap(norm_of_both_axes)(xs).sum()


def vmapped_fro_norms(xs):
    return srcjax.vmap(fro_norm_of_both_axes)(xs).sum()


@pytest.mark.parametrize("ord_", [None, "fro"])
def test_hessian_of_a_vmapped_norm_over_two_axes(ord_: Any) -> None:
    """hessian of ``vmap(g)(xs).sum()`` with ``np.linalg.norm(.., axis=(0, 1))``: the second derivative went
    through the static ``norm_axes(ndim, axis)`` helper given a batched axis from the tape, and refused its
    comprehension located in srcjax/adjoint.py; with ``ord="fro"`` the saved string got a zero tangent
    (``zeros_like("fro")``: an internal error). Oracle: jax.hessian of jax.vmap."""
    xs = np.random.default_rng(0).standard_normal((2, 3, 4))
    fn = vmapped_norms if ord_ is None else vmapped_fro_norms
    got = srcjax.hessian(fn)(xs)
    want = jitted(jax.hessian(lambda v: jax.vmap(lambda x: jax.numpy.linalg.norm(
        jax.numpy.tanh(x), ord=ord_, axis=(0, 1)))(v).sum()))(xs)
    agree(got, want, rtol=1e-9, what=f"hessian of vmapped norm(ord={ord_})")


def diff_append_after_a_loop(x, w):
    y = x * w
    for _ in range(2):
        y = np.tanh(y) + x * w
    return np.sum(np.diff(y, axis=1, append=x[:, :1]) ** 2)


def test_jacrev_of_vmap_of_jacfwd_saves_inside_a_loop_in_an_if() -> None:
    """jacrev(vmap(jacfwd(f))) with ``np.diff(.., append=...)``: the forward half of the batched diff helper
    saved a value (``y_3_before``) in an ``if`` on data nested in a loop inside another ``if`` on data; the
    outer ``if`` counted it bound on its branch though the loop may not bind it, so neither that branch nor the
    function's top bound it, and the tape read it unbound ("name 'y_3_before' is not defined")."""
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4))
    twin = jax_twin(diff_append_after_a_loop)
    got = srcjax.jacrev(srcjax.vmap(srcjax.jacfwd(diff_append_after_a_loop)))(x, w)
    agree(got, jitted(jax.jacrev(jax.vmap(jax.jacfwd(twin))))(x, w), rtol=1e-9, what="jacrev(vmap(jacfwd))")
