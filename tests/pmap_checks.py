"""``srcjax.pmap`` checks on 4 CPU devices, run in one child process by tests/test_pmap.py (the XLA
client's device count is fixed when it is made). Prints one JSON line: {check name: "ok" or the
failure}. Oracles: a Python loop over the devices computing the same thing with NumPy, srcjax on one
device, and (last, after checking srcjax never imported it) ``jax.pmap`` on the same 4 CPU devices.
``SRCJAX_HYPOTHESIS=thorough`` runs the property check on more examples."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

os.environ["SRCJAX_NUM_CPU_DEVICES"] = "4"
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"  # (for jax, at the end)

import numpy as np  # noqa: E402

import srcjax  # noqa: E402
from srcjax.sharding import NamedSharding, P  # noqa: E402
from tests.child_checks import recorder  # noqa: E402

RESULTS: dict[str, str] = {}
N = 4


check = recorder(RESULTS)


RNG = np.random.default_rng(0)
X = RNG.standard_normal((N, 3, 2))
PERM = ((0, 1), (1, 2), (2, 0))  # device 3 receives nothing: zeros


def close(a: Any, b: Any, tol: float = 1e-12) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def collectives(x):
    s = srcjax.lax.psum(x, "i")
    m = srcjax.lax.pmean(x, "i")
    hi = srcjax.lax.pmax(x, "i")
    lo = srcjax.lax.pmin(x, "i")
    g0 = srcjax.lax.all_gather(x, "i")
    g1 = srcjax.lax.all_gather(x, "i", axis=1)
    gt = srcjax.lax.all_gather(x, "i", axis=1, tiled=True)
    k = srcjax.lax.axis_index("i")
    p = srcjax.lax.ppermute(x, "i", ((0, 1), (1, 2), (2, 0)))
    return s, m, hi, lo, g0, g1, gt, k, p


def collectives_loop(xs: np.ndarray) -> list[np.ndarray]:
    """What each device computes, with NumPy, stacked over the devices."""
    outs = []
    for d in range(N):
        received = [s for s, t in PERM if t == d]
        outs.append((xs.sum(0), xs.mean(0), xs.max(0), xs.min(0), xs, np.stack(list(xs), axis=1),
                     np.concatenate(list(xs), axis=1), np.int32(d),
                     xs[received[0]] if received else np.zeros_like(xs[d])))
    return [np.stack([o[k] for o in outs]) for k in range(len(outs[0]))]


@check
def every_collective_against_numpy() -> None:
    got = srcjax.pmap(collectives, "i")(X)
    for g, w in zip(got, collectives_loop(X)):
        close(g, w)
    assert got[7].dtype == np.int32


def scatter(x):
    return srcjax.lax.psum_scatter(x, "i"), srcjax.lax.psum_scatter(x, "i", scatter_dimension=1, tiled=True)


@check
def psum_scatter_against_numpy() -> None:
    x = RNG.standard_normal((N, N, 8))
    a, b = srcjax.pmap(scatter, "i")(x)
    total = x.sum(0)
    close(a, total)  # device d keeps row d of the sum
    close(b, np.stack([total[:, 2 * d:2 * d + 2] for d in range(N)]))


def grouped(x):
    return (srcjax.lax.psum(x, "i", axis_index_groups=[[0, 1], [2, 3]]),
            srcjax.lax.pmean(x, "i", axis_index_groups=[[0, 2], [1, 3]]),
            srcjax.lax.pmax(x, "i", axis_index_groups=[[0, 1], [2, 3]]),
            srcjax.lax.pmin(x, "i", axis_index_groups=[[3, 2], [1, 0]]),
            srcjax.lax.all_gather(x, "i", axis_index_groups=[[0, 1], [2, 3]]))


@check
def axis_index_groups() -> None:
    s, m, hi, lo, g = srcjax.pmap(grouped, "i")(X)
    close(s, np.stack([X[0] + X[1]] * 2 + [X[2] + X[3]] * 2))
    close(m, np.stack([(X[0] + X[2]) / 2, (X[1] + X[3]) / 2] * 2))
    close(hi, np.stack([np.maximum(X[0], X[1])] * 2 + [np.maximum(X[2], X[3])] * 2))
    close(lo, np.stack([np.minimum(X[0], X[1])] * 2 + [np.minimum(X[2], X[3])] * 2))
    close(g, np.stack([X[:2]] * 2 + [X[2:]] * 2))


def layer(x, w):
    h = np.tanh(x @ w)
    return h - srcjax.lax.pmean(h, "i"), srcjax.lax.psum(np.sum(h * h), "i")


@check
def in_axes_and_out_axes() -> None:
    w = RNG.standard_normal((2, 5))
    h, s = srcjax.pmap(layer, "i", in_axes=(0, None), out_axes=(0, None))(X, w)
    hs = np.tanh(X @ w)
    close(h, hs - hs.mean(0))
    close(s, np.sum(hs * hs))
    assert s.shape == () and s.sharding == NamedSharding(h.sharding.mesh, P())
    xt = np.moveaxis(X, 0, 1)  # the device axis second
    h1, s1 = srcjax.pmap(layer, "i", in_axes=(1, None), out_axes=(2, None))(xt, w)
    close(h1, np.moveaxis(hs - hs.mean(0), 0, 2))
    h2, _ = srcjax.pmap(layer, "i", in_axes=(-2, None), out_axes=-1)(xt, w)
    close(h2, np.moveaxis(hs - hs.mean(0), 0, -1))


def containers(params, batch):
    y = batch["x"] @ params[0] + params[1]
    return {"y": y, "total": srcjax.lax.psum(np.sum(y), "i")}


@check
def containers_and_static_arguments() -> None:
    params = (RNG.standard_normal((2, 3)), RNG.standard_normal((N, 3)))
    batch = {"x": X}
    out = srcjax.pmap(containers, "i", in_axes=((None, 0), {"x": 0}), out_axes={"y": 1, "total": None})(params, batch)
    ys = X @ params[0] + params[1][:, None, :]
    close(out["y"], np.moveaxis(ys, 0, 1))
    close(out["total"], ys.sum())

    def scaled(x, k, how):
        return x * k if how == "times" else x + k

    p = srcjax.pmap(scaled, "i", static_broadcasted_argnums=(1, 2))
    close(p(X, 3, "times"), X * 3)
    close(p(X, 3, "plus"), X + 3)


def lambda_step(x):
    return x * 0.5 + np.tanh(x) + srcjax.lax.pmean(x, "i")


def step_loop(xs: np.ndarray) -> np.ndarray:
    return np.stack([xs[d] * 0.5 + np.tanh(xs[d]) + xs.mean(0) for d in range(N)])


@check
def results_are_sharded_and_feed_back_without_the_host() -> None:
    from srcjax.runtime import spmd

    step = srcjax.pmap(lambda_step, "i")
    out = step(X)
    s = out.sharding
    assert isinstance(out, srcjax.Array) and s == NamedSharding(s.mesh, P("i")) and s.mesh.shape == {"i": N}
    assert list(s.mesh.devices.flat) == srcjax.devices()
    shards = out.addressable_shards
    assert [sh.device for sh in shards] == srcjax.devices()
    for d, sh in enumerate(shards):
        close(sh.data, step_loop(X)[d:d + 1])
    puts = []
    real = spmd.put_sharded
    spmd.put_sharded = lambda *a: puts.append(a) or real(*a)  # type: ignore[assignment]
    try:
        again = step(out)
    finally:
        spmd.put_sharded = real  # type: ignore[assignment]
    assert puts == [], "a pmapped result went through the host"
    close(again, step_loop(step_loop(X)))


@check
def devices_argument() -> None:
    devs = srcjax.devices()[::-1]
    out = srcjax.pmap(collectives, "i", devices=devs)(X)
    for g, w in zip(out, collectives_loop(X)):
        close(g, w)
    assert list(out[0].sharding.mesh.devices.flat) == devs
    two = srcjax.pmap(collectives, "i", devices=devs[:2])
    try:
        two(X)
    except srcjax.ArgumentError as e:
        assert "size 4" in str(e) and "2 devices" in str(e), e
    else:
        raise AssertionError("no error for 4 slices on 2 devices")
    half = srcjax.pmap(lambda x: srcjax.lax.psum(x, "i"), "i")(X[:2])  # the first 2 devices (JAX's default)
    close(half, np.stack([X[0] + X[1]] * 2))


def loss(p, x):
    return np.mean(np.tanh(x @ p) ** 2)


def update(p, x):
    g = srcjax.grad(loss)(p, x)
    return p - 0.1 * srcjax.lax.pmean(g, "i")


def psum_loss(x):
    return np.sum(np.sin(x) * srcjax.lax.psum(x, "i")) + np.sum(srcjax.lax.ppermute(x, "i", PERM) ** 2)


def sin_psum(x):
    return np.sin(x) * srcjax.lax.psum(x, "i")


@check
def grad_inside_pmap() -> None:
    p0 = RNG.standard_normal((2, 4))
    ps = np.stack([p0] * N)
    got = srcjax.pmap(update, "i")(ps, X)
    gs = np.stack([np.asarray(srcjax.grad(loss)(p0, X[d])) for d in range(N)])  # one device, each slice
    close(got, np.stack([p0 - 0.1 * gs.mean(0)] * N))
    # through psum and ppermute: against central differences of the whole (all-device) function
    g = np.asarray(srcjax.pmap(srcjax.grad(psum_loss), "i")(X))

    def total(xs: np.ndarray) -> float:  # sum over devices of each device's loss: what psum's transpose sums
        s = xs.sum(0)
        return float(sum(np.sum(np.sin(xs[d]) * s) for d in range(N)) +
                     sum(np.sum(xs[a] ** 2) for a, _ in PERM))

    eps = 1e-6
    fd = np.zeros_like(X)
    for idx in np.ndindex(*X.shape):
        e = np.zeros_like(X)
        e[idx] = eps
        fd[idx] = (total(X + e) - total(X - e)) / (2 * eps)
    close(g, fd, 1e-6)


def pm_centered(x):
    return x - srcjax.lax.pmean(x, "i")


PM_CENTERED = srcjax.pmap(pm_centered, "i")


def loss_of_a_pmap(x):
    return np.sum(PM_CENTERED(x) ** 3)


def loss_of_an_inline_pmap(x):
    return np.sum(srcjax.pmap(pm_centered, "i")(x) ** 3)


@check
def transforms_of_a_pmap() -> None:
    """grad/jit/vmap of a pmapped function (and a pmap written inside a transformed function): its vmap
    with the axis name, one program; against the formula and the pmap run itself."""
    c = X - X.mean(0)
    want = 3 * c ** 2 - (3 * c ** 2).mean(0)  # d/dx of sum((x - mean_d x) ** 3)
    for f in (loss_of_a_pmap, loss_of_an_inline_pmap):
        close(srcjax.grad(f)(X), want, 1e-10)
        close(srcjax.jit(f)(X), np.sum(c ** 3), 1e-10)
    close(srcjax.jit(PM_CENTERED)(X), PM_CENTERED(X))
    xs = np.stack([X, 2 * X])
    close(srcjax.vmap(PM_CENTERED)(xs), np.stack([PM_CENTERED(X), PM_CENTERED(2 * X)]))


def tree_loss(params, x):
    return np.mean((np.tanh(x @ params["w"]) + params["b"]) ** 2)


def tree_step(params, x):
    value, grads = srcjax.value_and_grad(tree_loss)(params, x)
    grads = srcjax.lax.pmean(grads, "i")  # a dict: the pmean of each leaf (JAX's collectives take pytrees)
    return srcjax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), srcjax.lax.pmean(value, "i")


@check
def collectives_of_containers_in_a_training_step() -> None:
    params = {"w": RNG.standard_normal((2, 3)), "b": np.zeros(3)}
    replicated = {k: np.stack([v] * N) for k, v in params.items()}
    step = srcjax.pmap(tree_step, "i", out_axes=(0, None))
    new, value = step(replicated, X)
    grads = [srcjax.grad(tree_loss)(params, X[d]) for d in range(N)]  # one device, each slice
    for k in params:
        close(new[k], np.stack([params[k] - 0.1 * np.mean([np.asarray(g[k]) for g in grads], 0)] * N))
    close(value, np.mean([float(tree_loss(params, X[d])) for d in range(N)]))
    again, _ = step(new, X)  # fed back: a dict of sharded arrays
    assert again["w"].sharding == new["w"].sharding
    both = srcjax.pmap(lambda t: srcjax.lax.psum(t, "i"), "i")((X, X[:, 0]))
    close(both[0], np.stack([X.sum(0)] * N))
    close(both[1], np.stack([X[:, 0].sum(0)] * N))


def center(r):
    return r - srcjax.lax.psum(r, "i") + srcjax.lax.axis_index("i")


def vmap_inside(x):
    return srcjax.vmap(center)(x)


def both_names(x):
    return x - srcjax.lax.pmean(x, "i") + srcjax.lax.psum(x, "j")


@check
def vmap_inside_and_pmap_of_vmap() -> None:
    got = srcjax.pmap(vmap_inside, "i")(X)
    close(got, X - X.sum(0) + np.arange(N)[:, None, None])
    got = srcjax.pmap(srcjax.vmap(both_names, axis_name="j"), "i")(X)
    close(got, X - X.mean(0) + X.sum(1, keepdims=True))


@check
def lowered_text_shows_the_collectives() -> None:
    low = srcjax.pmap(collectives, "i").lower(X)
    text = low.as_text()
    for op in ("stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.collective_permute",
               "stablehlo.replica_id", "replica_groups = dense<[[0, 1, 2, 3]]>", "mhlo.num_replicas = 4",
               "source_target_pairs = dense<[[0, 1], [1, 2], [2, 0]]>"):
        assert op in text, (op, text)
    assert "stablehlo.reduce_scatter" in srcjax.pmap(scatter, "i").lower(np.ones((N, N, 8))).as_text()
    hlo = low.compile().as_text()
    assert "all-reduce" in hlo and "collective-permute" in hlo and "replica_count=4" in hlo, hlo[:2000]
    src = srcjax.source(srcjax.pmap(update, "i"))
    assert "# srcjax.pmap(update, axis_name='i'" in src and 'srcjax.lax.pmean(g, "i")' in src, src


@check
def errors() -> None:
    def raises(fn: Callable[[], object], cls: type, *words: str) -> None:
        try:
            fn()
        except cls as e:
            assert isinstance(e, srcjax.TranspileError) and e.hint, e
            for w in words:
                assert w in str(e), (w, str(e))
            assert "Traceback" not in str(e)
            return
        raise AssertionError(f"no {cls.__name__} ({words})")

    f = srcjax.pmap(lambda_step, "i")
    raises(lambda: f(np.ones((5, 3))), srcjax.ArgumentError, "argument 'x' has size 5", "4 devices")
    raises(lambda: srcjax.pmap(layer, "i")(X, np.ones((3, 2, 5))), srcjax.ArgumentError,
           "different sizes", "x has 4", "w has 3")
    raises(lambda: srcjax.pmap(lambda_step, "j")(X), srcjax.UnboundAxisNameError, "pmean over 'i'",
           "pmap_checks.py")  # axis_name mismatch: located at the user's line
    raises(lambda: srcjax.pmap(lambda_step)(X), srcjax.UnboundAxisNameError, "unbound axis name")
    raises(lambda: srcjax.pmap(lambda x: srcjax.lax.ppermute(x, "i", [(0, 1), (0, 2)]), "i")(X),
           srcjax.ArgumentError, "source twice")
    raises(lambda: srcjax.pmap(lambda x: srcjax.lax.ppermute(x, "i", [(0, 4)]), "i")(X),
           srcjax.ArgumentError, "outside the axis of size 4")
    raises(lambda: srcjax.pmap(lambda x: srcjax.lax.psum(x, "i", axis_index_groups=[[0, 1], [2]]), "i")(X),
           srcjax.ArgumentError, "axis_index_groups")
    raises(lambda: srcjax.pmap(lambda x: srcjax.lax.psum_scatter(x, "i"), "i")(X), srcjax.ShapeError,
           "has size 3")
    raises(lambda: srcjax.pmap(lambda_step, "i", in_axes=3)(X), srcjax.ArgumentError, "in_axes 3")
    raises(lambda: srcjax.pmap(layer, "i", in_axes=(0,))(X, X), srcjax.ArgumentError, "in_axes has 1 entries")
    raises(lambda: srcjax.pmap(lambda_step, "i", in_axes=None)(X), srcjax.ArgumentError, "nothing is mapped")
    raises(lambda: srcjax.pmap(srcjax.pmap(lambda_step, "i"), "j"), srcjax.ArgumentError, "nested pmap")


@check
def property_against_a_loop() -> None:
    """Random per-device shapes, mapped axes and collectives, against a NumPy loop over the devices."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    thorough = os.environ.get("SRCJAX_HYPOTHESIS") == "thorough"
    ops = {
        "psum": (lambda x: srcjax.lax.psum(x, "i"), lambda xs, d: xs.sum(0)),
        "pmax": (lambda x: srcjax.lax.pmax(x, "i"), lambda xs, d: xs.max(0)),
        "gather": (lambda x: srcjax.lax.all_gather(x, "i"), lambda xs, d: xs),
        "shift": (lambda x: srcjax.lax.ppermute(x, "i", [(k, (k + 1) % 4) for k in range(4)]),
                  lambda xs, d: xs[(d - 1) % N]),
        "index": (lambda x: x * srcjax.lax.axis_index("i"), lambda xs, d: xs[d] * d),
    }

    @settings(max_examples=60 if thorough else 6, deadline=None, derandomize=not thorough)
    @given(shape=st.lists(st.integers(1, 3), min_size=0, max_size=2), data=st.data(),
           op=st.sampled_from(sorted(ops)))
    def prop(shape: list[int], data: Any, op: str) -> None:
        in_ax = data.draw(st.integers(-len(shape) - 1, len(shape)))
        out_ax = data.draw(st.integers(0, len(shape) + (op == "gather")))
        xs = RNG.standard_normal((N, *shape))
        fn, ref = ops[op]
        got = srcjax.pmap(fn, "i", in_axes=in_ax, out_axes=out_ax)(np.moveaxis(xs, 0, in_ax))
        want = np.stack([ref(xs, d) for d in range(N)])
        close(got, np.moveaxis(want, 0, out_ax))

    prop()


@check
def jax_not_imported() -> None:
    assert "jax" not in sys.modules, "srcjax imported jax"


@check
def same_as_jax_pmap() -> None:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    assert jax.device_count() == N

    def jcollectives(x):
        return (jax.lax.psum(x, "i"), jax.lax.pmean(x, "i"), jax.lax.pmax(x, "i"), jax.lax.pmin(x, "i"),
                jax.lax.all_gather(x, "i"), jax.lax.all_gather(x, "i", axis=1),
                jax.lax.all_gather(x, "i", axis=1, tiled=True), jax.lax.axis_index("i"),
                jax.lax.ppermute(x, "i", PERM))

    for g, w in zip(srcjax.pmap(collectives, "i")(X), jax.pmap(jcollectives, "i")(X)):
        close(g, w)

    def jscatter(x):
        return jax.lax.psum_scatter(x, "i"), jax.lax.psum_scatter(x, "i", scatter_dimension=1, tiled=True)

    x8 = RNG.standard_normal((N, N, 8))
    for g, w in zip(srcjax.pmap(scatter, "i")(x8), jax.pmap(jscatter, "i")(x8)):
        close(g, w)

    def jloss(p, x):
        return jnp.mean(jnp.tanh(x @ p) ** 2)

    def jupdate(p, x):
        return p - 0.1 * jax.lax.pmean(jax.grad(jloss)(p, x), "i")

    ps = np.stack([RNG.standard_normal((2, 4))] * N)
    close(srcjax.pmap(update, "i")(ps, X), jax.pmap(jupdate, "i")(ps, X))

    def jpsum_loss(x):
        return jnp.sum(jnp.sin(x) * jax.lax.psum(x, "i")) + jnp.sum(jax.lax.ppermute(x, "i", PERM) ** 2)

    close(srcjax.pmap(srcjax.grad(psum_loss), "i")(X), jax.pmap(jax.grad(jpsum_loss), "i")(X))

    def jsinpsum(x):
        return jnp.sin(x) * jax.lax.psum(x, "i")

    x2 = X[:, 0]  # jacobians inside the body, both modes (they differ: psum's transpose sums the devices' rows)
    close(srcjax.pmap(srcjax.jacrev(sin_psum), "i")(x2), jax.pmap(jax.jacrev(jsinpsum), "i")(x2))
    close(srcjax.pmap(srcjax.jacfwd(sin_psum), "i")(x2), jax.pmap(jax.jacfwd(jsinpsum), "i")(x2))
    w = RNG.standard_normal((2, 5))

    def jlayer(x, w):
        h = jnp.tanh(x @ w)
        return h - jax.lax.pmean(h, "i"), jax.lax.psum(jnp.sum(h * h), "i")

    for kw in ({"in_axes": (0, None), "out_axes": (0, None)}, {"in_axes": (1, None), "out_axes": (2, None)}):
        xin = X if kw["in_axes"][0] == 0 else np.moveaxis(X, 0, 1)
        for g, w_ in zip(srcjax.pmap(layer, "i", **kw)(xin, w), jax.pmap(jlayer, "i", **kw)(xin, w)):
            close(g, w_)


print(json.dumps(RESULTS))
