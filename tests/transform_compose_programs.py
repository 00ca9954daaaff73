"""The random programs and chains of transformations of tests/test_transform_compose_random.py (issue #15).

:func:`case` turns a seed into a :class:`Case`: a program ``f(x, y)`` written twice (as the user writes it, for
NumPy and srcjax, with in-place index updates; and its jax twin, the same with ``.at[...]``), module-level
helpers, and a chain of transformation levels ``g1``, ``g2``, ... each calling ``srcjax.<transformation>`` on
the level below. Program ``s`` is the same on every machine (``random.Random(s)``).

The programs mix what the other generators keep apart: ``for`` over ``range`` with carried values (and an
``if`` on data in the body), ``while`` on data, ``if``/``else`` on data, in-place updates at data indices
(``np.argmax``: batched indices under ``vmap``), reductions with ``axis``/``keepdims``, broadcasting of ranks
0, 1 and 2, float32/float64/integer mixes (``astype``, ``np.arange``, an index as a factor), helpers (tuple
and dict returns, an early ``return`` on data) and containers (lists walked by ``for``, dicts, tuples).
Integer and float32 values are never mixed where NumPy 2 and jax promote differently (an int64 array with a
float32 one), so jax's numbers are NumPy's.

The levels: ``vmap`` (random ``in_axes`` with ``None`` and negatives, random ``out_axes``), ``grad``,
``value_and_grad(has_aux=True)``, ``jacfwd``, ``jacrev``, ``hessian`` (``argnums`` 0 or 1), ``jvp``, ``vjp``
and ``jit``, in any order.
"""

from __future__ import annotations

import random
from typing import NamedTuple

import numpy as np

N_BATCH = 2
MAX_ITERS = 8  # reverse mode through `while` on data (the loops' counters stop them at 3)
MAX_JACOBIAN = 36  # the largest Jacobian a level may make (elements)

HELPERS = '''

def h_mix(u, v):
    return np.tanh(u) * v + np.sum(u * u)


def h_pair(u):
    return np.sin(u), np.cos(u) * 0.5


def h_dict(u, w):
    return {"p": u * w, "q": np.sum(u, axis=-1, keepdims=True)}


def h_early(u):
    if np.sum(u) > 0.1:
        return u * 2.0
    return np.sin(u) - 0.5
'''

Shape = tuple[int, ...]


class Var(NamedTuple):
    shape: Shape
    dtype: str  # "f64", "f32" or "int"


class Case(NamedTuple):
    seed: int
    text: str  # the module srcjax reads (NumPy runs its `f`)
    jax_text: str  # its jax twin (`np` is jax.numpy, `srcjax` the reference transformations)
    chain: tuple[str, ...]  # the levels, innermost first
    shapes: tuple[Shape, Shape]  # the outermost level's arguments
    dtypes: tuple[str, str]
    compiled: bool  # the outermost level compiled whole by srcjax
    f32: bool  # float32 somewhere: looser tolerance

    def describe(self) -> str:
        return (f"seed {self.seed}: {' -> '.join(self.chain)} shapes={self.shapes} dtypes={self.dtypes}"
                f"{' compiled' if self.compiled else ''}")


def _broadcast(a: Shape, b: Shape) -> Shape | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _float(dt_a: str, dt_b: str) -> str:
    return "f32" if dt_a == dt_b == "f32" else "f64"


class _Writer:
    """One program's statements, as the user writes them (``np``) and as jax's twin (``jx``)."""

    def __init__(self, r: random.Random, dtypes: tuple[str, str]) -> None:
        self.r = r
        self.vars: dict[str, Var] = {"x": Var((3,), dtypes[0]), "y": Var((2, 3), dtypes[1])}
        self.np: list[str] = []
        self.jx: list[str] = []
        self.count = 0
        self.has_while = False

    def fresh(self, stem: str = "v") -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def emit(self, np_lines: str, jax_lines: str | None = None) -> None:
        self.np.extend("    " + ln for ln in np_lines.split("\n"))
        self.jx.extend("    " + ln for ln in (np_lines if jax_lines is None else jax_lines).split("\n"))

    def floats(self, *, dtype: str | None = None, min_ndim: int = 0) -> list[str]:
        return [n for n, v in self.vars.items() if v.dtype != "int" and len(v.shape) >= min_ndim
                and (dtype is None or v.dtype == dtype)]

    def pick(self, names: list[str]) -> str:
        # the newest values more often: a long chain of dependencies
        weights = [1 + 2 * k for k in range(len(names))]
        return self.r.choices(names, weights)[0]

    def c(self) -> str:
        return self.r.choice(["0.5", "1.5", "-0.7", "2.0", "0.3"])

    # -- statements ---------------------------------------------------------------------------------------

    def unary(self) -> None:
        a = self.pick(self.floats())
        e = self.r.choice([f"np.sin({a})", f"np.tanh({a})", f"{a} * {a}", f"np.exp(-{a} * {a})",
                           f"np.cos({a}) * 0.5 + {a}", f"-{a} * {self.c()}"])
        n = self.fresh()
        self.emit(f"{n} = {e}")
        self.vars[n] = self.vars[a]

    def binary(self) -> None:
        fl = self.floats()
        a = self.pick(fl)
        others = [b for b in fl if _broadcast(self.vars[a].shape, self.vars[b].shape) is not None]
        b = self.pick(others)
        shape = _broadcast(self.vars[a].shape, self.vars[b].shape)
        assert shape is not None
        ops = [f"{a} + {b}", f"{a} - {b} * {self.c()}", f"{a} * {b}", f"{a} / (1.5 + {b} * {b})"]
        if a != b:
            ops.append(f"np.maximum({a}, {b})")
        n = self.fresh()
        self.emit(f"{n} = {self.r.choice(ops)}")
        self.vars[n] = Var(shape, _float(self.vars[a].dtype, self.vars[b].dtype))

    def reduce(self) -> None:
        a = self.pick(self.floats(min_ndim=1))
        v = self.vars[a]
        nd = len(v.shape)
        axis = self.r.choice([None, *range(-nd, nd)] + ([(0, 1)] if nd == 2 else []))
        keep = self.r.random() < 0.4
        fn = self.r.choice(["sum", "mean", "max", "sum"])
        axes = tuple(range(nd)) if axis is None else tuple(ax % nd for ax in (axis if isinstance(axis, tuple)
                                                                                  else (axis,)))
        shape = tuple(1 if k in axes else s for k, s in enumerate(v.shape)) if keep else \
            tuple(s for k, s in enumerate(v.shape) if k not in axes)
        kw = "" if axis is None else f", axis={axis}"
        kw += ", keepdims=True" if keep else ""
        n = self.fresh()
        self.emit(f"{n} = np.{fn}({a}{kw})")
        self.vars[n] = Var(shape, v.dtype)

    def int_mix(self) -> None:
        fl = self.floats(dtype="f64", min_ndim=1)
        if not fl:
            return self.unary()
        a = self.pick(fl)
        shape = self.vars[a].shape
        n = self.fresh()
        kind = self.r.randrange(3)
        if kind == 0:
            self.emit(f"{n} = {a} * np.arange({shape[-1]}) + {a}")
        elif kind == 1:
            k = self.fresh("k")
            self.emit(f"{k} = np.argmax({a})\n{n} = {a} * ({k} + 1)")
            self.vars[k] = Var((), "int")
        else:
            self.emit(f"{n} = ({a} > 0.0).astype(int) * {a} + np.where({a} > 0.0, 0.0, 0.1 * {a})")
        self.vars[n] = Var(shape, "f64")

    def cast(self) -> None:
        a = self.pick(self.floats())
        v = self.vars[a]
        n = self.fresh()
        to = "f64" if v.dtype == "f32" else "f32"
        self.emit(f"{n} = {a}.astype(np.{'float64' if to == 'f64' else 'float32'})")
        self.vars[n] = Var(v.shape, to)

    def for_carry(self) -> None:
        a = self.pick(self.floats())
        s = self.fresh("s")
        shape, dt = self.vars[a].shape, self.vars[a].dtype
        terms = []
        for b in self.floats():
            bv = self.vars[b]
            if bv.dtype != dt and dt == "f32":
                continue  # (the carry keeps its dtype)
            if bv.shape == (3,) and _broadcast(shape, ()) == shape:
                terms.append(f"np.sin({b}[i])")
            if bv.shape == (2, 3) and _broadcast(shape, (3,)) == shape:
                terms.append(f"np.sin({b}[i % 2])")
            if _broadcast(shape, bv.shape) == shape:
                terms.append(f"{b} * 0.1 * i")
        t = self.r.choice(terms) if terms else "0.1 * i"
        k = self.r.choice([2, 3])
        if self.r.random() < 0.35 and (ix := [b for b in self.floats() if self.vars[b].shape == (3,)]):
            b = self.r.choice(ix)
            body = (f"    if {b}[i] > 0.0:\n        {s} = {s} * {self.c()} + {t}\n    else:\n"
                    f"        {s} = np.tanh({s}) - 0.1 * {b}[i]")
            if dt == "f32" and self.vars[b].dtype != "f32":
                body = body.replace(f"- 0.1 * {b}[i]", "- 0.1")
        else:
            body = f"    {s} = np.tanh({s}) * {self.c()} + {t}"
        self.emit(f"{s} = {a} * 0.5\nfor i in range({k}):\n{body}")
        self.vars[s] = Var(shape, dt)

    def while_data(self) -> None:
        a = self.pick(self.floats())
        s, it = self.fresh("s"), self.fresh("it")
        bound = self.r.choice(["1.0", "4.0", "9.0"])
        self.emit(f"{s} = {a} * 0.5 + 0.1\n{it} = 0\nwhile {it} < 3 and np.sum({s} * {s}) < {bound}:\n"
                  f"    {s} = {s} * 1.3 + 0.1\n    {it} = {it} + 1")
        self.vars[s] = self.vars[a]
        self.has_while = True

    def if_data(self) -> None:
        a = self.pick(self.floats())
        b = self.pick(self.floats())
        test = self.r.choice([f"np.sum({a}) > {self.r.choice(['0.0', '0.5', '-0.5'])}",
                              f"np.max({a}) < 1.0"] + ([f"{a}[0] > 0.0"] if len(self.vars[a].shape) == 1 else []))
        if self.r.random() < 0.5:
            n = self.fresh()
            self.emit(f"if {test}:\n    {n} = np.sin({b}) * 2.0\nelse:\n    {n} = {b} * {b} - 1.0")
            self.vars[n] = self.vars[b]
        else:  # rebinds a value in one branch only
            self.emit(f"if {test}:\n    {b} = {b} * 1.5 + 0.2")

    def in_place(self) -> None:
        ints = [n for n, v in self.vars.items() if v.dtype == "int" and v.shape == ()]
        fl = self.floats(dtype="f64", min_ndim=1)
        if not fl:
            return self.binary()
        b = self.pick(fl)
        shape = self.vars[b].shape
        w = self.fresh("w")
        srcs = [a for a in self.floats(min_ndim=1) if self.vars[a].shape[-1] == shape[-1]]
        if ints and self.r.random() < 0.5:
            k = self.r.choice(ints)
            idx = f"{k} % {shape[-1]}"
        else:
            a = self.pick(srcs)
            k = self.fresh("k")
            self.emit(f"{k} = np.argmax({a})" if len(self.vars[a].shape) == 1 else
                      f"{k} = np.argmax({a}) % {shape[-1]}")
            self.vars[k] = Var((), "int")
            idx = k
        where = idx if len(shape) == 1 else f":, {idx}"
        val = self.pick([a for a in self.floats(dtype="f64") if self.vars[a].shape == ()] or ["1.0"])
        kind = self.r.randrange(3)
        if kind == 0:
            np_line = f"{w}[{where}] = {w}[{where}] * 0.5 + {val}"
            jax_line = f"{w} = {w}.at[{where}].set({w}[{where}] * 0.5 + {val})"
        elif kind == 1:
            np_line = f"{w}[{where}] += np.tanh({val})"
            jax_line = f"{w} = {w}.at[{where}].add(np.tanh({val}))"
        else:
            factor = self.c()
            np_line = f"{w}[{where}] *= {factor}"
            jax_line = f"{w} = {w}.at[{where}].multiply({factor})"
        self.emit(f"{w} = {b}.copy()\n{np_line}", f"{w} = {b}\n{jax_line}")
        self.vars[w] = Var(shape, "f64")

    def helper(self) -> None:
        kind = self.r.randrange(4)
        a = self.pick(self.floats(min_ndim=1) if kind == 2 else self.floats())
        av = self.vars[a]
        n = self.fresh()
        if kind == 0:
            b = self.pick([b for b in self.floats() if _broadcast(av.shape, self.vars[b].shape) is not None])
            shape = _broadcast(av.shape, self.vars[b].shape)
            assert shape is not None
            self.emit(f"{n} = h_mix({a}, {b})")
            self.vars[n] = Var(shape, _float(av.dtype, self.vars[b].dtype))
        elif kind == 1:
            m = self.fresh()
            self.emit(f"{n}, {m} = h_pair({a})")
            self.vars[n] = self.vars[m] = av
        elif kind == 2:
            b = self.pick([b for b in self.floats() if _broadcast(av.shape, self.vars[b].shape) is not None])
            p = _broadcast(av.shape, self.vars[b].shape)
            assert p is not None
            shape = _broadcast(p, av.shape[:-1] + (1,))
            assert shape is not None
            d = self.fresh("d")
            self.emit(f'{d} = h_dict({a}, {b})\n{n} = {d}["p"] + {d}["q"]')
            self.vars[n] = Var(shape, _float(av.dtype, self.vars[b].dtype))
        else:
            self.emit(f"{n} = h_early({a})")
            self.vars[n] = av

    def container(self) -> None:
        fl = self.floats()
        a, b = self.pick(fl), self.pick(fl)
        n = self.fresh()
        kind = self.r.randrange(3)
        dt = _float(self.vars[a].dtype, self.vars[b].dtype)
        if kind == 0:
            ls = self.fresh("ls")
            self.emit(f"{ls} = [{a}, {b}]\n{n} = 0.0\nfor e in {ls}:\n    {n} = {n} + np.sum(e * e)")
            self.vars[n] = Var((), dt)
        elif kind == 1:
            d = self.fresh("d")
            self.emit(f'{d} = {{"u": {a}, "v": {b}}}\n{n} = {d}["u"] * 2.0 + np.sum({d}["v"])')
            self.vars[n] = Var(self.vars[a].shape, dt)
        else:
            t, m = self.fresh("t"), self.fresh()
            self.emit(f"{t} = ({a}, {b} * 0.5)\n{m}, {n} = {t}")
            self.vars[m], self.vars[n] = self.vars[a], self.vars[b]

    STATEMENTS = ("unary", "binary", "binary", "reduce", "reduce", "int_mix", "cast", "for_carry", "for_carry",
                  "while_data", "if_data", "if_data", "in_place", "in_place", "helper", "helper", "container")

    def result(self, vector: bool) -> str:
        names = [n for n in self.vars if self.vars[n].dtype != "int"]
        last = names[-1]
        extra = self.r.sample(names, min(2, len(names)))
        total = " + ".join([f"np.sum({last} * {last})"] + [f"{self.c()} * np.mean({e})" for e in extra])
        if not vector:
            return total
        vecs = [n for n in names if self.vars[n].shape in ((3,), (2, 3), (1, 3))]
        v = self.r.choice(vecs) if vecs else "x"
        vec = v if self.vars[v].shape == (3,) else f"np.sum({v}, axis=0)"
        return f"np.tanh({total}) * x + {vec}"


def _write_program(r: random.Random, dtypes: tuple[str, str], vector: bool) -> tuple[str, str, bool]:
    w = _Writer(r, dtypes)
    for _ in range(r.randint(3, 7)):
        getattr(w, r.choice(_Writer.STATEMENTS))()
    ret = w.result(vector)
    head = "def f(x, y):\n"
    np_text = head + "\n".join(w.np) + f"\n    return {ret}\n"
    jax_text = head + "\n".join(w.jx) + f"\n    return {ret}\n"
    return np_text, jax_text, w.has_while


# -- the chain of transformations ----------------------------------------------------------------------------

def _insert(shape: Shape, axis: int) -> Shape:
    return shape[:axis] + (N_BATCH,) + shape[axis:]


def _size(shape: Shape) -> int:
    return int(np.prod(shape))


def _chain(r: random.Random, out: Shape, has_while: bool) -> tuple[list[str], list[str], list[Shape]]:
    """(the levels' source, their names, the outermost arguments' shapes)."""
    shapes: list[Shape] = [(3,), (2, 3)]
    levels: list[str] = []
    names: list[str] = []
    below = "f"
    mi = f", max_iters={MAX_ITERS}" if has_while else ""
    depth = r.choice([1, 2, 2, 3, 3])
    for k in range(depth):
        g = f"g{k + 1}"
        kinds = ["vmap", "vmap", "jvp", "jit", "vjp", "jacfwd", "jacrev"]
        if out == ():
            kinds += ["grad", "value_and_grad", "hessian"]
        how = r.choice(kinds)
        argnums = r.choice([0, 0, 1])
        wrt = shapes[argnums]
        if how in ("jacfwd", "jacrev") and _size(out + wrt) > MAX_JACOBIAN:
            how = "vmap"
        if how == "hessian" and _size(wrt) ** 2 > MAX_JACOBIAN:
            how = "grad"
        if how == "vmap":
            axes: list[int | None] = [r.choice([None, *range(-(len(s) + 1), len(s) + 1)]) for s in shapes]
            if all(a is None for a in axes):
                axes[r.randrange(2)] = 0
            o = r.randint(-(len(out) + 1), len(out))
            shapes = [s if a is None else _insert(s, a % (len(s) + 1)) for s, a in zip(shapes, axes)]
            out = _insert(out, o % (len(out) + 1))
            body = f"    return srcjax.vmap({below}, in_axes=({axes[0]}, {axes[1]}), out_axes={o})(x, y)"
            names.append(f"vmap(in_axes=({axes[0]}, {axes[1]}), out_axes={o})")
        elif how == "grad":
            body = f"    return srcjax.grad({below}, argnums={argnums}{mi})(x, y)"
            out = wrt
            names.append(f"grad({argnums})")
        elif how == "value_and_grad":
            arg = "xy"[argnums]
            levels.append(f"def a{k + 1}(x, y):\n    r = {below}(x, y)\n    return r, np.sin(r) * {arg}\n")
            body = (f"    (v, aux), gr = srcjax.value_and_grad(a{k + 1}, argnums={argnums}, has_aux=True{mi})(x, y)\n"
                    f"    return gr + v * aux")
            out = wrt
            names.append(f"value_and_grad({argnums}, has_aux)")
        elif how in ("jacfwd", "jacrev", "hessian"):
            kw = mi if how != "jacfwd" else ""
            body = f"    return srcjax.{how}({below}, argnums={argnums}{kw})(x, y)"
            out = out + wrt + (wrt if how == "hessian" else ())
            names.append(f"{how}({argnums})")
        elif how == "jvp":
            body = f"    return srcjax.jvp({below}, (x, y), (np.ones_like(x), 0.5 * np.ones_like(y)))[1]"
            names.append("jvp")
        elif how == "vjp":
            body = (f"    out, back = srcjax.vjp({below}, x, y{mi})\n"
                    f"    return back(np.ones_like(out))[{argnums}]")
            out = wrt
            names.append(f"vjp[{argnums}]")
        else:
            body = f"    return srcjax.jit({below})(x, y)"
            names.append("jit")
        levels.append(f"def {g}(x, y):\n{body}\n")
        below = g
    return levels, names, shapes


def case(seed: int) -> Case:
    r = random.Random(seed)
    dtypes = r.choice([("f64", "f64"), ("f64", "f64"), ("f64", "f64"), ("f32", "f32"), ("f32", "f64")])
    vector = r.random() < 0.3
    np_f, jax_f, has_while = _write_program(r, dtypes, vector)
    levels, names, shapes = _chain(r, (3,) if vector else (), has_while)
    compiled = r.random() < 0.4
    tail = "\n\n" + "\n\n".join(levels)
    text = "import numpy as np\nimport srcjax\n" + HELPERS + "\n\n" + np_f + tail
    jax_text = "import jax.numpy as np\n" + HELPERS + "\n\n" + jax_f + tail
    f32 = "f32" in dtypes or "float32" in np_f
    return Case(seed, text, jax_text, ("f", *names), (shapes[0], shapes[1]), dtypes, compiled, f32)
