"""Training steps of small models with pytree parameters: the per-call path (issue #18).

    .venv/bin/python benchmarks/bench_models.py            # ~1-2 min
    .venv/bin/python benchmarks/bench_models.py --quick    # a smoke run
    .venv/bin/python benchmarks/bench_models.py --clock cpu   # the calling thread's CPU time per call

Each case is ``value_and_grad`` of a loss whose parameters are a container
(a list of dicts, a dict), called with the same arguments over and over: the
XLA programs are small, so what is measured is mostly each library's Python
call path (binding, flattening and keying the pytree of arguments, uploading,
wrapping the outputs). Models (float32):

* ``mlp``          a 3-layer tanh MLP, params a list of dicts ``{"w", "b"}`` (6 leaves), batch 32;
* ``lstm``         an LSTM cell run over 8 steps, params a dict of 12 arrays, batch 16;
* ``transformer``  one pre-norm transformer block (attention + MLP), params a dict of 16 leaves,
  sequence 16, width 32;
* ``mlp-wide``     a 20-layer MLP with 40 leaves (list of dicts), batch 8;
* ``mlp-nt``       the 3-layer MLP with its parameters a list of NamedTuples (6 leaves);
* ``mlp-static``   the 3-layer MLP with a static argument (``static_argnums``: the activation's name, a
  string), as ``jax.jit(..., static_argnums=3)``;
* ``mlp-default``  the 3-layer MLP whose last parameter (a Python float) is left out of every call;
* ``mlp-kw``       the 3-layer MLP called with its batch by keyword (``f(params, x=x, y=y)``);
* ``mlp-kw-order`` the same with the parameters declared ``(params, y, x)``: the keywords sorted by name
  (jaxlib's order) are not the parameters' order;
* ``mlp-kw-gap``   the 3-layer MLP declared ``(params, x, scale=0.5, y=0.0)``, called ``f(params, x=x, y=y)``
  (the defaulted parameter between them left out).

Modes: ``np``: NumPy arguments (uploaded every call), the same arguments every call (srcjax timed after
the calls that make it pack them, ``srcjax/packed_calls.py``: the steady state of a loop); ``dev``:
arguments already on the device (``srcjax.Array`` / ``jax.Array``), the same every call, through
srcjax's default call path (jaxlib's C++ dispatcher, ``srcjax/cpp_calls.py``; ``SRCJAX_CPP_DISPATCH=0``
measures srcjax's Python path there instead); ``dev-py``: the same through srcjax's Python path
explicitly; ``mixed``: the parameters on the device, the batch (``x``, ``y``) NumPy arrays, as a
training loop fed by a NumPy data loader; ``mixed-new`` (not run by default: ``--modes``): the same with a new
NumPy batch every call (``x.copy()``, ``y.copy()`` in the timed call of both libraries, as a data loader
hands out new arrays: jax then reads new memory in place too); ``loop``:
a training loop, ``params = step(params, x, y)`` with ``step`` the jitted ``value_and_grad`` and an
SGD update (``tree_map``), so each call waits for the last one's parameters (latency, not
throughput: the other two modes let asynchronous calls overlap). Median microseconds per call,
srcjax and jax measured interleaved (``bench_foundation.measure``); ``sj/jax`` above 1: srcjax
slower. Results are checked against jax before timing.

``--align`` places every NumPy argument's data at an address ``% 64`` of 0 (``a64``, the default: XLA's CPU
client reads such memory in place, so jax.jit copies nothing) or 16 (``a16``: it copies first); the same
arrays go to both libraries (before round np49 they were wherever ``malloc`` put them).

``--x64`` turns on ``jax_enable_x64`` (the models stay float32, checked): without it (jax's default),
jaxlib keys a float64 NumPy array as float32, so srcjax copies NumPy arguments for a second dispatcher
instead of letting the first read them in place (``srcjax/cpp_calls.py``).

``--clock cpu`` times each call by the calling thread's CPU time (``time.thread_time_ns``) instead
of the wall clock: what dispatching costs the caller, without the time XLA's threads (or other
processes, on a loaded machine) take; the programs run asynchronously in both libraries, so on a
busy machine the wall-clock rows of unblocked calls mostly measure contention. ``--stat min`` reports
the least disturbed batch of each instead of the median (on a loaded machine medians of thread CPU
time still swung 0.5-2.4x between runs, 2026-12-03).
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import time
from typing import Any, NamedTuple

import numpy as np

import srcjax  # noqa: E402
from srcjax import packed_calls  # noqa: E402

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover - jax is a test/benchmark-only dependency
    sys.exit("bench_models.py needs jax (pip install -e '.[test]'): it is the comparison oracle")

from bench_foundation import ALIGNMENTS, at_offset, environment, measure  # same directory as this script


def as_jax(fn: Any) -> Any:
    """``fn`` with ``np`` bound to ``jax.numpy``, and so are the helpers of this module it calls."""
    import types

    g = dict(fn.__globals__)
    g["np"] = jnp
    for k, v in list(g.items()):
        if isinstance(v, types.FunctionType) and v.__module__ == fn.__module__ and v is not fn:
            g[k] = types.FunctionType(v.__code__, g, v.__name__)
    return types.FunctionType(fn.__code__, g, fn.__name__ + "_jax", fn.__defaults__)


def mlp_loss(params, x, y):
    h = x
    for layer in params[:-1]:
        h = np.tanh(h @ layer["w"] + layer["b"])
    out = h @ params[-1]["w"] + params[-1]["b"]
    return np.mean((out - y) ** 2)


class Layer(NamedTuple):
    w: Any
    b: Any


def nt_loss(params, x, y):
    h = x
    for layer in params[:-1]:
        h = np.tanh(h @ layer.w + layer.b)
    out = h @ params[-1].w + params[-1].b
    return np.mean((out - y) ** 2)


def act_loss(params, x, y, act):
    h = x
    for layer in params[:-1]:
        h = h @ layer["w"] + layer["b"]
        h = np.tanh(h) if act == "tanh" else np.maximum(h, 0.0)
    out = h @ params[-1]["w"] + params[-1]["b"]
    return np.mean((out - y) ** 2)


def default_loss(params, x, y, scale=0.5):
    h = x
    for layer in params[:-1]:
        h = np.tanh(h @ layer["w"] + layer["b"])
    out = h @ params[-1]["w"] + params[-1]["b"]
    return scale * np.mean((out - y) ** 2)


def order_loss(params, y, x):  # (parameters whose names sorted are not in this order)
    return mlp_loss(params, x, y)


def gap_loss(params, x, scale=0.5, y=0.0):  # (called f(params, x=x, y=y): scale left out between them)
    h = x
    for layer in params[:-1]:
        h = np.tanh(h @ layer["w"] + layer["b"])
    out = h @ params[-1]["w"] + params[-1]["b"]
    return scale * np.mean((out - y) ** 2)


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def lstm_loss(p, xs, y):
    h = np.zeros((xs.shape[1], p["wi_h"].shape[0]), dtype=xs.dtype)
    c = h
    for t in range(xs.shape[0]):
        x = xs[t]
        i = sigmoid(x @ p["wi_x"] + h @ p["wi_h"] + p["bi"])
        f = sigmoid(x @ p["wf_x"] + h @ p["wf_h"] + p["bf"])
        o = sigmoid(x @ p["wo_x"] + h @ p["wo_h"] + p["bo"])
        g = np.tanh(x @ p["wg_x"] + h @ p["wg_h"] + p["bg"])
        c = f * c + i * g
        h = o * np.tanh(c)
    return np.mean((h - y) ** 2)


def layer_norm(x, g, b):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def softmax(z):
    z = z - np.max(z, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=-1, keepdims=True)


def block_loss(p, x, y):
    h = layer_norm(x, p["ln1_g"], p["ln1_b"])
    q = h @ p["wq"] + p["bq"]
    k = h @ p["wk"] + p["bk"]
    v = h @ p["wv"] + p["bv"]
    att = softmax(q @ k.T / np.sqrt(q.shape[-1]))
    x = x + (att @ v) @ p["wo"] + p["bo"]
    h = layer_norm(x, p["ln2_g"], p["ln2_b"])
    x = x + np.tanh(h @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
    return np.mean((x - y) ** 2)


def _mlp_params(rng: np.random.Generator, sizes: list[int]) -> list[dict[str, np.ndarray]]:
    f32 = np.float32
    return [{"w": (rng.standard_normal((a, b)) / np.sqrt(a)).astype(f32), "b": np.zeros(b, f32)}
            for a, b in zip(sizes[:-1], sizes[1:])]


def cases(rng: np.random.Generator, more: bool = False) -> list[tuple[str, Any, tuple[Any, ...]]]:
    """The models and their arguments; ``more``: also the MLP's other ways of taking them (``STATIC``
    lists the static argument positions of each)."""
    f32 = np.float32
    out: list[tuple[str, Any, tuple[Any, ...]]] = []
    mlp = (_mlp_params(rng, [16, 32, 32, 4]), rng.standard_normal((32, 16)).astype(f32),
           rng.standard_normal((32, 4)).astype(f32))
    out.append(("mlp 6 leaves", mlp_loss, mlp))
    if more:
        out.append(("mlp-nt 6 leaves", nt_loss, ([Layer(p["w"], p["b"]) for p in mlp[0]], *mlp[1:])))
        out.append(("mlp-static 6 leaves", act_loss, (*mlp, "tanh")))
        out.append(("mlp-default 6 leaves", default_loss, mlp))
        out.append(("mlp-kw 6 leaves", mlp_loss, mlp))
        out.append(("mlp-kw-order 6 leaves", order_loss, (mlp[0], mlp[2], mlp[1])))
        out.append(("mlp-kw-gap 6 leaves", gap_loss, mlp))  # (called f(params, x=x, y=y))
    d, hdim = 8, 16
    lstm = {}
    for gate in "ifog":
        lstm[f"w{gate}_x"] = (rng.standard_normal((d, hdim)) * 0.3).astype(f32)
        lstm[f"w{gate}_h"] = (rng.standard_normal((hdim, hdim)) * 0.3).astype(f32)
        lstm[f"b{gate}"] = np.zeros(hdim, f32)
    out.append(("lstm 12 leaves", lstm_loss, (lstm, rng.standard_normal((8, 16, d)).astype(f32),
                                              rng.standard_normal((16, hdim)).astype(f32))))
    w = 32
    blk = {"ln1_g": np.ones(w, f32), "ln1_b": np.zeros(w, f32), "ln2_g": np.ones(w, f32),
           "ln2_b": np.zeros(w, f32), "b1": np.zeros(2 * w, f32), "b2": np.zeros(w, f32),
           "w1": (rng.standard_normal((w, 2 * w)) * 0.1).astype(f32),
           "w2": (rng.standard_normal((2 * w, w)) * 0.1).astype(f32)}
    for n in "qkvo":
        blk[f"w{n}"] = (rng.standard_normal((w, w)) * 0.1).astype(f32)
        blk[f"b{n}"] = np.zeros(w, f32)
    out.append(("transformer 16 leaves", block_loss, (blk, rng.standard_normal((16, w)).astype(f32),
                                                      rng.standard_normal((16, w)).astype(f32))))
    out.append(("mlp-wide 40 leaves", mlp_loss, (_mlp_params(rng, [8] * 21),
                                                 rng.standard_normal((8, 8)).astype(f32),
                                                 rng.standard_normal((8, 8)).astype(f32))))
    return out


STATIC = {"mlp-static 6 leaves": (3,)}  # (static_argnums of the cases that have some)


def _agree(ours: Any, theirs: Any) -> None:
    a, ta = jax.tree_util.tree_flatten(jax.tree_util.tree_map(np.asarray, ours))
    b, tb = jax.tree_util.tree_flatten(jax.tree_util.tree_map(np.asarray, theirs))
    assert len(a) == len(b), (ta, tb)
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=2e-4, atol=2e-5)


def _sgd_step(loss: Any, value_and_grad: Any, tree_map: Any) -> Any:
    def step(params: Any, x: Any, y: Any) -> Any:
        value, grads = value_and_grad(loss)(params, x, y)
        return tree_map(lambda p, g: p - 0.01 * g, params, grads), value
    return step


def _looping(step: Any, params: Any, x: Any, y: Any) -> Any:
    state = [params]

    def run() -> None:
        state[0] = step(state[0], x, y)[0]
    return run


def _steady(call: Any, mode: str) -> None:
    """Bring srcjax's calls with NumPy leaves to their steady state before timing: after
    ``packed_calls.AFTER`` such calls a function packs its NumPy leaves (one copy and upload per dtype,
    for a program compiled on a thread of its own: ``srcjax/packed_calls.py``); a training loop gets
    there after its first few hundred steps."""
    if mode not in ("np", "mixed", "mixed-new"):
        return
    for _ in range(packed_calls.AFTER + 8):
        call()
    packed_calls.wait(120)
    call()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    ap.add_argument("--x64", action="store_true",
                    help="turn on jax_enable_x64 (the models stay float32): jaxlib's C++ dispatcher then keys "
                         "64-bit host values as they are, and srcjax's reads NumPy arguments in place")
    ap.add_argument("--stat", choices=("median", "min"), default="median",
                    help="the statistic over rounds of batches (min: the least disturbed one, on a loaded machine)")
    ap.add_argument("--more", action="store_true",
                    help="also the MLP with NamedTuple parameters, with a static argument, with a default left out, "
                         "called by keyword")
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    ap.add_argument("--align", choices=tuple(ALIGNMENTS), default="a64",
                    help="where the NumPy arguments' data start: a64 (address %% 64 == 0, which jax.jit reads in "
                         "place) or a16 (which it copies first); the same arrays for both libraries")
    ap.add_argument("--modes", default="np,dev,mixed,dev-py,loop",
                    help="the modes to run (comma-separated; also mixed-new)")
    ns = ap.parse_args(argv)
    stat = min if ns.stat == "min" else statistics.median
    modes = ns.modes.split(",")
    if ns.x64:
        jax.config.update("jax_enable_x64", True)
    clock = time.thread_time_ns if ns.clock == "cpu" else time.perf_counter_ns
    rounds, batch_ns = (3, 2e6) if ns.quick else (15, 2e7)
    rng = np.random.default_rng(0)
    print(environment())
    print(f"clock: {ns.clock}; statistic: {ns.stat}; jax_enable_x64: {jax.config.jax_enable_x64}; "
          f"NumPy arguments: {ns.align}")
    print("| case | mode | srcjax us | jax us | sj/jax |")
    print("|---|---|---:|---:|---:|")
    def placed(v: np.ndarray) -> np.ndarray:
        return at_offset(v, ALIGNMENTS[ns.align])

    for name, loss, args in cases(rng, ns.more):
        if ns.only not in name:
            continue
        args = tuple(a if isinstance(a, str) else jax.tree_util.tree_map(placed, a) for a in args)
        static = STATIC.get(name, ())
        sj = srcjax.jit(srcjax.value_and_grad(loss), static_argnums=static) if static else srcjax.value_and_grad(loss)
        jx = jax.jit(jax.value_and_grad(as_jax(loss)), static_argnums=static)
        if "-gap" not in name:  # (its calls pass the batch by keyword: checked below)
            _agree(sj(*args), jx(*args))
        sj_dev = tuple(a if i in static else jax.tree_util.tree_map(srcjax.device_put, a) for i, a in enumerate(args))
        jx_dev = tuple(a if i in static else jax.tree_util.tree_map(jax.device_put, a) for i, a in enumerate(args))
        python_path = (lambda *a, f=sj, **k: f._call(a, k))
        for mode, sa, ja, f in (("np", args, args, sj), ("dev", sj_dev, jx_dev, sj),
                                ("mixed", (sj_dev[0], *args[1:]), (jx_dev[0], *args[1:]), sj),
                                ("dev-py", sj_dev, jx_dev, python_path), ("mixed-new", None, None, sj)):
            if mode not in modes:
                continue
            if mode == "mixed-new":  # (a new NumPy batch every call, copied in the timed call by both)
                if static or "-kw" in name or "-default" in name:
                    continue
                def fresh(f: Any, p: Any, x: Any = args[1], y: Any = args[2]) -> Any:
                    return lambda: f(p, x.copy(), y.copy())
                _steady(fresh(sj, sj_dev[0]), mode)
                t = measure({"srcjax": fresh(sj, sj_dev[0]), "jax": fresh(jx, jx_dev[0])}, rounds, batch_ns, clock,
                            stat)
                print(f"| {name} | {mode} | {t['srcjax']:.1f} | {t['jax']:.1f} | {t['srcjax'] / t['jax']:.2f} |",
                      flush=True)
                continue
            if "-kw" in name:  # (the parameters positional, the others by name: jax differentiates by position)
                names = list(inspect.signature(loss).parameters)[1:]
                if "-gap" in name:  # (f(params, x=x, y=y): the default between them left out)
                    names = ["x", "y"]
                sk, jk = dict(zip(names, sa[1:])), dict(zip(names, ja[1:]))
                _agree(f(sa[0], **sk), jx(ja[0], **jk))
                _steady(lambda p=sa[0], sk=sk, f=f: f(p, **sk), mode)
                t = measure({"srcjax": lambda p=sa[0], sk=sk, f=f: f(p, **sk),
                             "jax": lambda p=ja[0], jk=jk, f=jx: f(p, **jk)}, rounds, batch_ns, clock, stat)
            else:
                _steady(lambda sa=sa, f=f: f(*sa), mode)
                t = measure({"srcjax": lambda sa=sa, f=f: f(*sa), "jax": lambda ja=ja, f=jx: f(*ja)}, rounds,
                            batch_ns, clock, stat)
            print(f"| {name} | {mode} | {t['srcjax']:.1f} | {t['jax']:.1f} | {t['srcjax'] / t['jax']:.2f} |",
                  flush=True)
        if static or name.startswith(("mlp-default", "mlp-kw")) or "loop" not in modes:
            continue  # (the loop of _sgd_step passes three arguments)
        sj_step = srcjax.jit(_sgd_step(loss, srcjax.value_and_grad, srcjax.tree_util.tree_map))
        jx_step = jax.jit(_sgd_step(as_jax(loss), jax.value_and_grad, jax.tree_util.tree_map))
        _agree(sj_step(*args), jx_step(*args))
        t = measure({"srcjax": _looping(sj_step, *sj_dev), "jax": _looping(jx_step, *jx_dev)}, rounds, batch_ns,
                    clock, stat)
        print(f"| {name} | loop | {t['srcjax']:.1f} | {t['jax']:.1f} | {t['srcjax'] / t['jax']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
