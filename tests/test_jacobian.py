"""jacfwd / jacrev / hessian as one compiled program: generated source that loops over basis vectors.

Oracles: jax (jacfwd/jacrev/hessian of the jax.numpy twin), the generated source run by NumPy,
and the per-element path (one compiled JVP/VJP call per element) that containers take."""

import numpy as np
import pytest

import srcjax
from srcjax.jacobian import _jacfwd_loop, _jacrev_loop
from tests.twins import JAX

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

rng = np.random.default_rng(11)


def vec(x):
    return np.tanh(x) * x[::-1]


def mat(a, b):
    return np.sin(a @ b) + a.sum(axis=1, keepdims=True)


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def pair(x, y):
    return np.sum(x * y) + x[0], x * 2.0


def newton_sqrt(a):
    x = a
    while np.max(np.abs(x * x - a)) > 1e-12:
        x = 0.5 * (x + a / x)
    return x


def twin(fn):
    ns = {"np": jnp}
    import inspect

    exec(inspect.getsource(fn), ns)
    return ns[fn.__name__]


CASES = [
    (vec, (rng.normal(size=5),), 0),
    (mat, (rng.normal(size=(3, 4)), rng.normal(size=(4, 2))), 0),
    (mat, (rng.normal(size=(3, 4)), rng.normal(size=(4, 2))), 1),
    (rosen, (rng.normal(size=6),), 0),
]


@pytest.mark.parametrize("kind", ["jacfwd", "jacrev"])
@pytest.mark.parametrize("fn,args,argnum", CASES, ids=lambda v: getattr(v, "__name__", None) or str(v)[:6])
def test_compiled_jacobian_matches_jax_numpy_and_the_loop(kind, fn, args, argnum):
    j = getattr(srcjax, kind)(fn, argnum)
    ours = np.asarray(j(*args))
    ref = np.asarray(getattr(jax, kind)(twin(fn), argnum)(*args))
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-14)
    # the generated source, run by NumPy, is the same Jacobian
    np.testing.assert_allclose(srcjax.numpy_function(j)(*args), ref, rtol=1e-12, atol=1e-14)
    loop = (_jacfwd_loop if kind == "jacfwd" else _jacrev_loop)(fn, argnum)
    np.testing.assert_allclose(np.asarray(loop(*args)), ours, rtol=1e-12, atol=1e-14)
    # one program, no loop over basis vectors: the JVP (VJP) batched over the basis by vmap
    assert "stablehlo.while" not in srcjax.lower(j, *args).as_text()


def test_hessian_is_one_program_with_readable_source():
    h = srcjax.hessian(rosen)
    x = rng.normal(size=8)
    np.testing.assert_allclose(h(x), JAX.hessian(twin(rosen))(x), rtol=1e-10)
    text = srcjax.source(h)
    assert text.splitlines()[0].startswith("import numpy as np")
    first = next(line for line in text.splitlines() if line.startswith("def "))
    assert first == "def rosen_grad_jacfwd(x):"
    assert "def rosen_grad_jvp_vmap(x, x_dot):" in text  # the JVP of the gradient, batched over the basis
    assert "fori_loop" not in text and "while_loop" not in text
    # (the only Python loop: over the leaves of a container argument, in a branch an array never takes)
    assert [ln.strip() for ln in text.splitlines() if "for " in ln] == ["for basis_1 in leaf_bases(x):"]
    assert "stablehlo.while" not in srcjax.lower(h, x).as_text()
    np.testing.assert_allclose(srcjax.numpy_function(h)(x), h(x), rtol=1e-12)


def test_float32_stays_float32():
    x = rng.normal(size=4).astype(np.float32)
    for kind in ("jacfwd", "jacrev"):
        J = getattr(srcjax, kind)(vec)(x)
        assert J.dtype == np.float32
        np.testing.assert_allclose(J, getattr(jax, kind)(twin(vec))(x), rtol=1e-5)


def test_containers_and_tuple_outputs_take_the_element_path():
    x, y = rng.normal(size=3), rng.normal(size=3)
    for kind in ("jacfwd", "jacrev"):
        ours = getattr(srcjax, kind)(pair)(x, y)
        ref = getattr(jax, kind)(twin(pair))(x, y)
        assert isinstance(ours, tuple) and len(ours) == 2
        for a, b in zip(ours, ref):
            np.testing.assert_allclose(a, b, rtol=1e-12)

    def tree_in(p):
        return np.sum(p["w"] ** 2) * p["b"]

    p = {"w": rng.normal(size=3), "b": rng.normal(size=2)}
    ours = srcjax.jacrev(tree_in)(p)
    ns = {"np": jnp}
    exec("def tree_in(p):\n    return np.sum(p['w'] ** 2) * p['b']\n", ns)
    ref = JAX.jacrev(ns["tree_in"])(p)
    for k in p:
        np.testing.assert_allclose(ours[k], ref[k], rtol=1e-12)


def test_python_scalar_argument():
    def f(x):
        return np.sin(x) * np.arange(3.0)

    np.testing.assert_allclose(srcjax.jacfwd(f)(0.5), np.cos(0.5) * np.arange(3.0), rtol=1e-12)
    np.testing.assert_allclose(srcjax.jacrev(f)(0.5), np.cos(0.5) * np.arange(3.0), rtol=1e-12)


def test_jacrev_through_a_while_loop_with_max_iters():
    a = np.array([2.0, 3.0, 0.5])
    J = srcjax.jacrev(newton_sqrt, max_iters=60)(a)
    np.testing.assert_allclose(J, np.diag(0.5 / np.sqrt(a)), rtol=1e-8)


def test_integer_argument_is_refused():
    with pytest.raises(srcjax.DTypeError, match="floating-point"):
        srcjax.jacfwd(vec)(np.arange(4))
    with pytest.raises(srcjax.DTypeError, match="floating-point"):
        srcjax.jacrev(vec)(np.arange(4))


@pytest.mark.parametrize("kind", ["jacfwd", "jacrev"])
def test_repeated_calls_take_the_cache_hit_path_and_still_check_dtypes(kind):
    # the second call of a signature goes straight to the executable; a new signature is checked again
    def vec_here(x):  # (this test's own function: srcjax.jacfwd(vec) is one object, which other tests call)
        return np.tanh(x) * x[::-1]

    j = getattr(srcjax, kind)(vec_here)
    x = rng.normal(size=5)
    ref = np.asarray(getattr(jax, kind)(lambda v: jnp.tanh(v) * v[::-1])(x))
    for arg in (x, x, srcjax.device_put(x), srcjax.device_put(x)):
        np.testing.assert_allclose(np.asarray(j(arg)), ref, rtol=1e-12)
    assert len(j._checked) == 1  # (NumPy and device arrays of one shape and dtype: one signature)
    with pytest.raises(srcjax.DTypeError, match="floating-point"):
        j(np.arange(5))
    with pytest.raises(srcjax.DTypeError, match="floating-point"):
        j(np.arange(5))
    y = x.astype(np.float32)
    np.testing.assert_allclose(np.asarray(j(y)), np.asarray(j(y)), rtol=0)
    assert np.asarray(j(y)).dtype == np.float32


def _scalar_pair(x, y):
    return x * y + np.sin(x)


@pytest.mark.parametrize("kind", ["jacfwd", "jacrev", "hessian"])
def test_python_float_arguments_in_the_generated_source(kind):
    # regression: the generated Jacobian read `x.dtype` ('float' object has no attribute 'dtype')
    j = getattr(srcjax, kind)(_scalar_pair)
    ref = 0.5 + np.cos(0.3) if kind != "hessian" else -np.sin(0.3)  # d/dx, d2/dx2 of x * y + sin(x)
    np.testing.assert_allclose(float(j(0.3, 0.5)), float(ref), rtol=1e-12)
    np.testing.assert_allclose(float(srcjax.numpy_function(j)(0.3, 0.5)), float(ref), rtol=1e-12)
