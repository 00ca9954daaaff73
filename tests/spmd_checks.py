"""Checks on 4 CPU devices, run in one child process by tests/test_spmd.py (the XLA client's device
count is fixed when it is made, so these cannot run in the test process). Prints one JSON line:
{check name: "ok" or the failure}. jax is imported only by the last checks, after srcjax's have
shown that it never imports jax itself."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable

os.environ["SRCJAX_NUM_CPU_DEVICES"] = "4"
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"  # (for jax, at the end)

import numpy as np  # noqa: E402

import srcjax  # noqa: E402
from srcjax.sharding import Mesh, NamedSharding, P, SingleDeviceSharding  # noqa: E402
from tests.child_checks import recorder  # noqa: E402

RESULTS: dict[str, str] = {}


check = recorder(RESULTS)


RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 4)).astype(np.float32)
W = RNG.standard_normal((4, 8)).astype(np.float32)
MESH1 = srcjax.make_mesh((4,), ("x",))
MESH2 = srcjax.make_mesh((2, 2), ("a", "b"))
SPECS1 = [P(), P("x"), P("x", None), P(None, "x")]
SPECS2 = [P(), P("a"), P("b"), P("a", "b"), P("b", "a"), P(("a", "b")), P(None, ("b", "a")), P(None, "a")]


def layer(x, w):
    h = np.tanh(x @ w)
    return h, np.sum(h * h, axis=0)


def loss(w, x):
    return np.mean(np.tanh(x @ w) ** 2)


def lambda_step(x):
    return x * 0.5 + np.tanh(x)


@check
def devices() -> None:
    assert srcjax.device_count() == 4 and len(srcjax.devices()) == 4
    assert srcjax.local_devices() == srcjax.devices() and srcjax.local_device_count() == 4
    assert srcjax.process_index() == 0 and srcjax.process_count() == 1
    assert [d.id for d in srcjax.devices()] == [0, 1, 2, 3]


@check
def device_put_and_read() -> None:
    for mesh, specs in ((MESH1, SPECS1), (MESH2, SPECS2)):
        for spec in specs:
            s = NamedSharding(mesh, spec)
            a = srcjax.device_put(X, s)
            assert isinstance(a, srcjax.Array) and a.sharding == s, (spec, a.sharding)
            assert np.array_equal(np.asarray(a), X), spec
            shards = a.addressable_shards
            assert len(shards) == 4 and {sh.device for sh in shards} == set(mesh.devices.flat)
            for sh in shards:
                assert np.array_equal(np.asarray(sh.data), X[sh.index]), (spec, sh)
                assert sh.data.sharding == SingleDeviceSharding(sh.device)
    one = srcjax.device_put(X, srcjax.devices()[2])
    assert one.sharding == SingleDeviceSharding(srcjax.devices()[2]) and np.array_equal(np.asarray(one), X)
    out = srcjax.compile(lambda_step)(one)  # runs on device 2, the argument's
    assert out.sharding == one.sharding and np.allclose(out, lambda_step(X))


@check
def sharded_forward_equals_numpy() -> None:
    want_h, want_s = layer(X, W)
    f = srcjax.compile(layer)
    for mesh, specs in ((MESH1, SPECS1), (MESH2, SPECS2)):
        for spec in specs:
            for wspec in (P(), P(None, spec[0] if len(spec) else None)):
                x = srcjax.device_put(X, NamedSharding(mesh, spec))
                w = srcjax.device_put(W, NamedSharding(mesh, wspec))
                h, s = f(x, w)
                assert np.allclose(h, want_h, atol=1e-5) and np.allclose(s, want_s, atol=1e-4), (spec, wspec)
                assert h.sharding.mesh == mesh
                h2, _ = f(h[:, :4] if False else srcjax.device_put(np.asarray(h)[:, :4], h.sharding), w)
                assert np.allclose(h2, layer(want_h[:, :4], W)[0], atol=1e-5)


@check
def outputs_feed_back_without_host() -> None:
    s = NamedSharding(MESH1, P("x"))
    step = srcjax.compile(lambda_step)
    x = srcjax.device_put(X, s)
    for _ in range(5):
        x = step(x)
    assert x.sharding == s, x.sharding
    want = X
    for _ in range(5):
        want = lambda_step(want)
    assert np.allclose(x, want, atol=1e-5)


@check
def in_and_out_shardings() -> None:
    sx, sw, so = NamedSharding(MESH2, P("a", None)), NamedSharding(MESH2, P(None, "b")), NamedSharding(MESH2, P())
    f = srcjax.compile(layer, in_shardings=(sx, sw), out_shardings=(NamedSharding(MESH2, P("a", "b")), so))
    h, s = f(X, W)  # NumPy arguments laid out by in_shardings
    assert h.sharding == NamedSharding(MESH2, P("a", "b")) and s.sharding == so
    assert np.allclose(h, layer(X, W)[0], atol=1e-5) and np.allclose(s, layer(X, W)[1], atol=1e-4)
    g = srcjax.jit(layer, out_shardings=so)
    h, s = g(srcjax.device_put(X, sx), W)
    assert h.sharding == so and np.allclose(h, layer(X, W)[0], atol=1e-5)


def dict_loss(params, x):
    return np.mean(np.tanh(x @ params["w"] + params["b"]) ** 2)


@check
def containers_of_sharded_arrays() -> None:
    rows, rep = NamedSharding(MESH2, P(("a", "b"))), NamedSharding(MESH2, P())
    params = {"w": W, "b": np.zeros(8, np.float32)}
    want_v, want_g = srcjax.value_and_grad(dict_loss)(params, X)
    f = srcjax.jit(srcjax.value_and_grad(dict_loss), in_shardings=({"w": rep, "b": rep}, rows),
                   out_shardings=(rep, {"w": rep, "b": NamedSharding(MESH2, P("b"))}))
    for _ in range(3):  # the second and third calls take the cached (C++ flattening) path
        v, g = f(srcjax.device_put(params, rep), srcjax.device_put(X, rows))
    assert np.allclose(v, want_v, atol=1e-6) and g["b"].sharding == NamedSharding(MESH2, P("b"))
    assert all(np.allclose(g[k], want_g[k], atol=1e-5) for k in params)
    low = f.lower(params, X)
    assert low.as_text().count("sdy.sharding") >= 4 and "all-reduce" in low.compile().as_text()


@check
def grad_of_sharded() -> None:
    want = srcjax.grad(loss)(W, X)
    for mesh, spec in ((MESH1, P("x")), (MESH2, P("a")), (MESH2, P(("a", "b"))), (MESH2, P("b", None))):
        x = srcjax.device_put(X, NamedSharding(mesh, spec))
        g = srcjax.grad(loss)(W, x)
        assert np.allclose(g, want, atol=1e-5), spec
        assert g.sharding.mesh == mesh
        v, g2 = srcjax.value_and_grad(loss)(srcjax.device_put(W, NamedSharding(mesh, P(None, spec[0]))), x)
        assert np.allclose(g2, want, atol=1e-5) and np.allclose(v, loss(W, X), atol=1e-6)


S_ROWS = NamedSharding(MESH1, P("x", None))
S_REP = NamedSharding(MESH1, P())


def constrained(x, w):
    h = srcjax.lax.with_sharding_constraint(np.tanh(x @ w), S_ROWS)
    return np.sum(srcjax.lax.with_sharding_constraint(h * h, S_REP))


@check
def sharding_constraint() -> None:
    assert "srcjax.lax.with_sharding_constraint(" in srcjax.source(constrained)
    text = srcjax.lower(constrained, X, W).as_text()
    assert text.count("sdy.sharding_constraint") == 2 and "sdy.mesh @mesh" in text, text
    assert np.allclose(srcjax.compile(constrained)(X, W), constrained(X, W), atol=1e-4)
    g = srcjax.grad(constrained, argnums=1)
    assert "with_sharding_constraint(" in srcjax.source(g)
    assert np.allclose(g(X, W), srcjax.numpy_function(g)(X.astype(np.float64), W.astype(np.float64)), atol=1e-4)


@check
def partitioned_hlo_shows_collectives() -> None:
    x = srcjax.device_put(X, NamedSharding(MESH1, P("x")))
    low = srcjax.compile(srcjax.grad(loss)).lower(W, x)
    assert '#sdy.sharding<@mesh, [{"x"}, {}]>' in low.as_text()
    hlo = low.compile().as_text()
    assert "all-reduce" in hlo and "f32[2,4]" in hlo, hlo[-2000:]


@check
def errors_are_sharding_errors() -> None:
    def raises(fn: Callable[[], object], words: str) -> None:
        try:
            fn()
        except srcjax.ShardingError as e:
            assert isinstance(e, srcjax.ArgumentError) and e.hint, e
            assert words in str(e), str(e)
            return
        raise AssertionError(f"no ShardingError ({words})")

    raises(lambda: srcjax.device_put(X, NamedSharding(MESH1, P("x", None, None))), "longer than the rank")
    raises(lambda: srcjax.device_put(np.ones(6), NamedSharding(MESH1, P("x"))), "does not divide")
    raises(lambda: NamedSharding(MESH1, P("y")), "does not have")
    raises(lambda: srcjax.make_mesh((8,), ("x",)), "needs 8 devices")
    other = Mesh(np.array(srcjax.devices()[::-1]), ("x",))
    a, b = srcjax.device_put(X, NamedSharding(MESH1, P("x"))), srcjax.device_put(W, NamedSharding(other, P()))
    raises(lambda: srcjax.compile(layer)(a, b), "another mesh")
    raises(lambda: srcjax.compile(layer, out_shardings=NamedSharding(MESH1, P(None, "x")))(X, W[:, :5]),
           "does not divide")


@check
def jax_not_imported() -> None:
    assert "jax" not in sys.modules, "srcjax imported jax"


@check
def same_as_jax() -> None:
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding as JNS
    from jax.sharding import PartitionSpec as JP

    jmesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 2), ("a", "b"))  # (Auto axes, as srcjax's)

    def jlayer(x, w):
        h = jnp.tanh(x @ w)
        return h, jnp.sum(h * h, axis=0)

    for spec, wspec in ((P("a"), P()), (P("a", "b"), P("b")), (P(("a", "b")), P(None, "a"))):
        jx = jax.device_put(X, JNS(jmesh, JP(*spec)))
        jw = jax.device_put(W, JNS(jmesh, JP(*wspec)))
        jh, js = jax.jit(jlayer)(jx, jw)
        h, s = srcjax.compile(layer)(srcjax.device_put(X, NamedSharding(MESH2, spec)),
                                     srcjax.device_put(W, NamedSharding(MESH2, wspec)))
        assert np.allclose(h, np.asarray(jh), atol=1e-5) and np.allclose(s, np.asarray(js), atol=1e-4)
        assert tuple(h.sharding.spec.axes(2)) == NamedSharding(MESH2, P(*jh.sharding.spec)).spec.axes(2), \
            (spec, h.sharding, jh.sharding)
    jg = jax.grad(lambda w, x: jnp.mean(jnp.tanh(x @ w) ** 2))(W, jax.device_put(X, JNS(jmesh, JP("a"))))
    g = srcjax.grad(loss)(W, srcjax.device_put(X, NamedSharding(MESH2, P("a"))))
    assert np.allclose(g, np.asarray(jg), atol=1e-5)


print(json.dumps(RESULTS))
