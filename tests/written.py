"""Random programs written as text: imported from a file (srcjax reads their source) with a jax twin.

- :func:`numpy_and_jax`: a program's text as a module srcjax can read, and the same text run by jax;
- :func:`write_data_program`: a random, well-typed program with control flow on data that rebinds
  names from themselves (``y = e * y``), right after loops and branches on data, with ``while`` tests
  that combine a counter and data, loop locals nobody reads, names rebound in both branches,
  reductions with ``keepdims``, transposes and slices. It draws its choices from a :class:`Choices`
  (hypothesis' ``draw`` in the property tests, a seeded ``random.Random`` in ``tests/sweep.py``);
- :func:`check_transforms`: ``grad``, ``jvp``, ``vjp`` and ``hessian`` of such a program against jax,
  each run by XLA and as generated source by NumPy;
- :func:`examples`: hypothesis settings for the random-program tests (``SRCJAX_HYPOTHESIS=thorough``,
  ``SRCJAX_HYPOTHESIS_EXAMPLES=N``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import random
import warnings
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

T = TypeVar("T")

# The default profile is small and deterministic (CI). SRCJAX_HYPOTHESIS=thorough draws fresh random
# examples (reproducible with --hypothesis-seed) and `scale` times as many; SRCJAX_HYPOTHESIS_EXAMPLES=N
# draws N fresh examples in each random-program test.
THOROUGH = os.environ.get("SRCJAX_HYPOTHESIS") == "thorough"
EXAMPLES = int(os.environ.get("SRCJAX_HYPOTHESIS_EXAMPLES", "0") or 0)


def example_count(default: int, scale: int = 10) -> int:
    """How many examples a random-program test draws: ``default`` in CI, more when asked for."""
    return EXAMPLES or (default * scale if THOROUGH else default)


def examples(default: int, *, scale: int = 10, **kwargs: Any) -> Any:
    """Hypothesis settings for a random-program test (see :func:`example_count`)."""
    from hypothesis import HealthCheck, settings
    return settings(max_examples=example_count(default, scale), deadline=None,
                    derandomize=not (THOROUGH or EXAMPLES),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], **kwargs)


def numpy_and_jax(directory: Any, text: str, prefix: str) -> tuple[Any, Any]:
    """``text`` (a module that does ``import numpy as np`` and defines ``f``) written to ``directory``
    and imported, and the same source run with ``jax.numpy`` as ``np``: the two ``f``s."""
    path = directory / f"{prefix}_{hashlib.sha1(text.encode()).hexdigest()[:12]}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ns: dict[str, Any] = {}
    exec(compile(text.replace("import numpy as np", "import jax.numpy as np"), str(path), "exec"), ns)
    return mod.f, ns["f"]


# -- choices: hypothesis or a seeded random generator ----------------------------------------------

class Choices(Protocol):
    def integers(self, lo: int, hi: int) -> int: ...

    def choice(self, options: Sequence[T]) -> T: ...


class DrawChoices:
    """Choices drawn by hypothesis (they shrink towards the first option and the low end)."""

    def __init__(self, draw: Any) -> None:
        self.draw = draw

    def integers(self, lo: int, hi: int) -> int:
        from hypothesis import strategies as st
        return int(self.draw(st.integers(lo, hi)))

    def choice(self, options: Sequence[T]) -> T:
        from hypothesis import strategies as st
        return self.draw(st.sampled_from(list(options)))  # type: ignore[no-any-return]


class RandomChoices:
    """Choices from ``random.Random(seed)``: the program of a seed is always the same."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def integers(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]


# -- programs with control flow on data that rebind names ------------------------------------------

Shape = tuple[int, ...]

# elementwise, shape-preserving; values stay moderate
UNARY = ["np.tanh({0})", "np.sin({0})", "np.cos({0})", "-{0}", "np.exp(-{0} * {0})", "np.log(1.0 + {0} * {0})",
         "1.0 / (1.0 + {0} * {0})", "np.cos(np.exp(-{0} * {0}))", "np.sqrt({0} * {0} + 1.0)", "np.square(np.tanh({0}))",
         "np.abs({0})", "np.maximum({0}, 0.0)", "np.where({0} > 0, {0}, 0.1 * {0})", "np.clip({0}, -1.5, 1.5)",
         "np.exp(np.sin({0}))", "np.log(1.0 + np.tanh({0}) * np.tanh({0}))"]
# a shape-preserving rebinding of {a} from itself ({b} broadcasts into {a}; {u} is a unary of {b})
REBIND = ["{a} = {ua}", "{a} = {b} * {a}", "{a} = {a} + 0.5 * (1.5 + {u})", "{a} = {a} + {a} + 0.1",
          "{a} = {a} * {a} * np.tanh({a})", "{a} = -{a} + {a}", "{a} = {a} / (1.0 + {b} * {b})",
          "{a} = {a} + 0.3 * np.exp(np.sin({a}))", "{a} = np.sin({a} - {b})", "{a} += {b}", "{a} *= 0.75",
          "{a} -= 0.5 * {u}", "{a} = {a} * 0.5 + {a} * {b}"]
BINARY = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / (1.0 + {b} * {b})", "{a} - -{b}", "np.maximum({a}, {b})",
          "np.minimum({a}, {b})", "{a} * np.tanh({b})"]
REDUCE = ["np.sum", "np.mean", "np.max", "np.min"]
DATA_TEST = ["np.mean({a})", "np.sum({a})", "np.max({a})", "np.min({a})", "{a}.mean()", "{a}.sum()"]


def broadcast(s1: Shape, s2: Shape) -> Shape | None:
    try:
        return tuple(np.broadcast_shapes(s1, s2))
    except ValueError:
        return None


class DataProgram:
    """Writes ``def f(x, y, z)`` (a scalar) step by step, tracking each name's shape."""

    def __init__(self, c: Choices, max_steps: int = 8) -> None:
        self.c = c
        self.max_steps = max_steps
        m, n = c.integers(1, 4), c.integers(1, 4)
        self.shapes: dict[str, Shape] = {
            "x": c.choice([(m, n), (n,), (), (n, m)]),
            "y": c.choice([(n,), (n, n), (m, n), ()]),
            "z": c.choice([(m, n), (n,), (n, 1), ()]),
        }
        self.args = dict(self.shapes)
        self.lines: list[str] = []
        self.counter = 0
        self.last: list[str] = []  # names assigned most recently (the loss reads them)
        self.viewed: set[str] = set()  # names that may share an array with another (a view: y.T, y[1:])

    # helpers ---------------------------------------------------------------------------------------
    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * (depth + 1) + line)

    def new(self) -> str:
        self.counter += 1
        return f"v{self.counter}"

    def pick(self, names: Sequence[str] | None = None) -> str:
        return self.c.choice(sorted(names if names is not None else self.shapes))

    def into(self, a: str) -> str:
        """A name that broadcasts into ``a``'s shape (``a`` itself at worst)."""
        s = self.shapes[a]
        return self.pick([b for b in self.shapes if broadcast(self.shapes[b], s) == s])

    def unary(self, a: str) -> str:
        return self.c.choice(UNARY).format(a)

    def rebind(self, depth: int, a: str) -> None:
        """``a = op(a, ...)``: a shape-preserving rebinding from itself."""
        b = self.into(a)
        form = self.c.choice(REBIND)
        if form == "{a} = {b} * {a}" and b == a:
            form = "{a} = {ua}"
        if a in self.viewed and form.startswith(("{a} +=", "{a} -=", "{a} *=")):
            # in place on an array another name views: NumPy changes both (srcjax refuses that, as
            # it would keep the old view); the generated programs rebind instead
            form = "{a} = {a} " + form[4] + " " + form[7:]
        self.emit(depth, form.format(a=a, b=b, ua=self.unary(a), u=self.unary(b)))

    def test(self, a: str) -> str:
        cmp = self.c.choice(["<", ">"])
        return f"{self.c.choice(DATA_TEST).format(a=a)} {cmp} {self.c.choice(['0.5', '0.0', '-0.5', '1.0', '3.0'])}"

    def assigned(self, name: str) -> None:
        if name in self.last:
            self.last.remove(name)
        self.last.append(name)

    # steps -----------------------------------------------------------------------------------------
    def step(self) -> None:
        kind = self.c.choice(["rebind", "unary", "binary", "while", "if", "reduce", "transpose", "slice",
                              "for", "matmul", "reshape", "rebind_shape", "if_one", "while_counter"])
        getattr(self, "step_" + kind)()

    def step_rebind(self) -> None:
        a = self.pick()
        self.rebind(0, a)
        self.assigned(a)

    def step_unary(self) -> None:
        a, v = self.pick(), self.new()
        self.emit(0, f"{v} = {self.unary(a)}")
        self.shapes[v] = self.shapes[a]
        self.assigned(v)

    def step_binary(self) -> None:
        a = self.pick()
        b = self.pick([b for b in self.shapes if broadcast(self.shapes[a], self.shapes[b]) is not None])
        v = self.new()
        form = self.c.choice(BINARY)
        if a == b and form.startswith("np.m"):
            form = "{a} * {b}"  # maximum(a, a): a tie, where derivative conventions differ
        self.emit(0, f"{v} = {form.format(a=a, b=b)}")
        shape = broadcast(self.shapes[a], self.shapes[b])
        assert shape is not None
        self.shapes[v] = shape
        self.assigned(v)

    def step_reduce(self) -> None:
        a, v = self.pick(), self.new()
        s = self.shapes[a]
        red = self.c.choice(REDUCE)
        if not s or self.c.choice([False, True, True]) is False:
            self.emit(0, f"{v} = {self.c.choice([red + '({a})', '{a}.sum()', '{a}.mean()']).format(a=a)}")
            self.shapes[v] = ()
        else:
            axis = self.c.integers(-len(s), len(s) - 1)
            keep = self.c.choice([False, True])
            call = self.c.choice([f"{red}({a}, axis={axis}", f"{a}.{red[3:]}(axis={axis}"])
            self.emit(0, f"{v} = {call}{', keepdims=True' if keep else ''})")
            out = list(s)
            if keep:
                out[axis] = 1
            else:
                del out[axis]
            self.shapes[v] = tuple(out)
        self.assigned(v)

    def step_transpose(self) -> None:
        a, v = self.pick(), self.new()
        self.emit(0, f"{v} = {self.c.choice(['{a}.T', 'np.transpose({a})']).format(a=a)}")
        self.viewed |= {a, v}
        self.shapes[v] = self.shapes[a][::-1]
        self.assigned(v)

    def step_slice(self) -> None:
        a = self.pick()
        s = self.shapes[a]
        if not s:
            return self.step_unary()
        entries: list[str] = []
        out: list[int] = []
        for d in s:
            options: list[tuple[str, int | None]] = [(":", d), ("::-1", d)]
            options += [(f"{lo}:", len(range(d)[lo:])) for lo in (1, -2) if len(range(d)[lo:])]
            options += [(f":{hi}", hi) for hi in (1, 2) if hi <= d]
            options += [("-1", None), ("0", None)]
            key, size = self.c.choice(options)
            entries.append(key)
            if size is not None:
                out.append(size)
        v = self.new()
        self.emit(0, f"{v} = {a}[{', '.join(entries)}]")
        self.viewed |= {a, v}
        self.shapes[v] = tuple(out)
        self.assigned(v)

    def step_matmul(self) -> None:
        a = self.pick()
        s = self.shapes[a]
        partners = [b for b in self.shapes if s and self.shapes[b] and self.shapes[b][0] == s[-1]
                    and len(self.shapes[b]) <= 2]
        if not partners:
            return self.step_binary()
        b, v = self.pick(partners), self.new()
        self.emit(0, f"{v} = {self.c.choice(['{a} @ {b}', 'np.tanh({a} @ {b})']).format(a=a, b=b)}")
        self.shapes[v] = s[:-1] + self.shapes[b][1:]
        self.assigned(v)

    def step_reshape(self) -> None:
        a, v = self.pick(), self.new()
        size = int(np.prod(self.shapes[a], dtype=int))
        shape = self.c.choice([(size,), (size, 1), (1, size)])
        if self.c.choice([0, 1]):
            self.emit(0, f"{v} = np.reshape({a}, {shape})")
        else:
            self.emit(0, f"{v} = {a}.reshape(-1)")
            shape = (size,)
        self.shapes[v] = shape
        self.viewed |= {a, v}
        self.assigned(v)

    def step_rebind_shape(self) -> None:
        """A name rebound from itself with a new shape: ``z = z.T``, ``z = np.sum(z, 0, keepdims=True)``."""
        a = self.pick()
        s = self.shapes[a]
        if len(s) < 1:
            return self.step_rebind()
        if self.c.choice([0, 1]):
            self.emit(0, f"{a} = {a}.T")
            self.shapes[a] = s[::-1]
        else:
            self.emit(0, f"{a} = np.sum({a}, axis=0, keepdims=True) * 0.5")
            self.shapes[a] = (1,) + s[1:]
        self.assigned(a)

    def after(self, a: str) -> None:
        """Right after a loop or branch that assigned ``a``: often rebind it from itself."""
        if self.c.choice([False, True]):
            self.emit(0, f"{a} = {self.unary(a)}")

    def step_while(self) -> None:
        """``j = 0; while j < K and R(a) < c:`` with a rebinding body and maybe an unused local."""
        a = self.pick()
        t = self.pick()
        counter = self.c.choice(["j", "it"])
        k = self.c.integers(1, 3)
        self.emit(0, f"{counter} = 0")
        tests = [f"{counter} < {k}", self.test(t)]
        joined = " and ".join(tests if self.c.choice([0, 1]) else tests[::-1])
        self.emit(0, f"while {joined}:")
        if self.c.choice([False, True]):
            self.emit(1, f"{self.new()} = {self.unary(self.pick())}")  # a loop local, never read
        self.rebind(1, a)
        if self.c.choice([False, False, True]):
            self.branch(1, [a])
        self.emit(1, self.c.choice([f"{counter} = {counter} + 1", f"{counter} += 1"]))
        self.assigned(a)
        self.after(a)

    def step_while_counter(self) -> None:
        """``while j < K:`` (a static trip count): a loop local assigned and not read, a rebinding."""
        a = self.pick()
        k = self.c.integers(1, 3)
        self.emit(0, "j = 0")
        self.emit(0, f"while j < {k}:")
        local = self.new()
        self.emit(1, f"{local} = {self.c.choice(BINARY).format(a=self.pick(), b='0.5')}")
        self.rebind(1, a)
        self.emit(1, "j += 1")
        self.assigned(a)
        self.after(a)

    def step_for(self) -> None:
        a = self.pick()
        self.emit(0, f"for i in range({self.c.integers(1, 3)}):")
        how = self.c.choice(["rebind", "if", "break", "local"])
        if how == "local":
            self.emit(1, f"{self.new()} = {self.unary(a)} * i")  # a loop local, never read after
        self.rebind(1, a)
        if how == "if":
            self.branch(1, [a])
        elif how == "break":
            self.emit(1, f"if {self.test(a)}:")
            self.emit(2, "break")
        self.assigned(a)
        self.after(a)

    def branch(self, depth: int, targets: list[str], test_on: str | None = None) -> None:
        """``if R(t) < c: <rebind targets> else: <rebind targets>``: each target rebound in both branches."""
        t = test_on or self.pick()
        test = self.test(t)
        if self.c.integers(0, 7) == 7:  # two data tests joined (rarely, so that an error here hides little)
            test += f" {self.c.choice(['and', 'or'])} {self.test(self.pick())}"
        self.emit(depth, f"if {test}:")
        for a in targets:
            self.rebind(depth + 1, a)
        self.emit(depth, "else:")
        for a in targets:
            self.rebind(depth + 1, a)

    def step_if(self) -> None:
        a = self.pick()
        targets = [a]
        if self.c.choice([False, True]):
            b = self.pick()
            if b != a:
                targets.append(b)
        if self.c.choice([False, True]):  # a new name bound in both branches, read afterwards
            v = self.new()
            u = self.pick()
            self.emit(0, f"if {self.test(a)}:")
            self.emit(1, f"{v} = {self.unary(u)}")
            self.emit(0, "else:")
            self.emit(1, f"{v} = {self.unary(u)}")
            self.shapes[v] = self.shapes[u]
            self.assigned(v)
            self.after(v)
            return
        self.branch(0, targets)
        for b in targets:
            self.assigned(b)
        self.after(targets[-1])

    def step_if_one(self) -> None:
        """``if R(t) > c: a = op(a)`` with no ``else``."""
        a = self.pick()
        self.emit(0, f"if {self.test(self.pick())}:")
        self.rebind(1, a)
        self.assigned(a)
        self.after(a)

    # the whole function ----------------------------------------------------------------------------
    def write(self) -> str:
        for _ in range(self.c.integers(1, self.max_steps)):
            self.step()
        outs = self.last[-3:] or ["x"]
        if "x" not in outs and self.c.choice([False, True]):
            outs = ["x"] + outs[-2:]
        terms = [f"np.sum({outs[0]})"]
        for name, form in zip(outs[1:], ["0.6 * np.sum({0} * {0})", "0.1 * np.sum(np.tanh({0}))"]):
            terms.append(form.format(name))
        params = ", ".join(self.args)
        body = "\n".join(self.lines)
        return f"import numpy as np\n\n\ndef f({params}):\n{body}\n    return {' + '.join(terms)}\n"


def write_data_program(c: Choices, max_steps: int = 8) -> tuple[str, dict[str, Shape]]:
    """Source text of ``def f(x, y, z)`` (a scalar) and the argument shapes."""
    p = DataProgram(c, max_steps)
    return p.write(), p.args


def data_programs(max_steps: int = 8) -> Any:
    """The hypothesis strategy of :func:`write_data_program`."""
    from hypothesis import strategies as st
    return st.composite(lambda draw: write_data_program(DrawChoices(draw), max_steps))()


# -- the oracles ----------------------------------------------------------------------------------

TRANSFORMS = ("grad", "jvp", "vjp", "hessian")


def directions(args: tuple[np.ndarray, ...], seed: int) -> tuple[tuple[np.ndarray, ...], float]:
    """The tangents (for ``jvp``) and the cotangent (for ``vjp``) that go with ``seed``."""
    rng = np.random.default_rng(seed + 1)
    return tuple(rng.standard_normal(np.shape(a)) for a in args), float(rng.standard_normal())


def ours(what: str, f: Any, args: tuple[np.ndarray, ...], seed: int = 0) -> Any:
    """The transformation ``what`` of the scalar ``f`` at ``args`` by srcjax (``f`` may be
    ``srcjax.compile(g, device="numpy")``): grad and vjp give one array per argument, jvp the
    tangent, hessian the Hessian in the first argument."""
    import srcjax
    nums = tuple(range(len(args)))
    tangents, ct = directions(args, seed)
    if what == "grad":
        return srcjax.grad(f, argnums=nums)(*args)
    if what == "jvp":
        return srcjax.jvp(f, args, tangents)
    if what == "vjp":
        out, back = srcjax.vjp(f, *args)
        return (out,) + tuple(back(ct))
    if what == "hessian":
        return srcjax.hessian(f)(*args)
    raise ValueError(what)


def jax_reference(what: str, jf: Any, args: tuple[np.ndarray, ...], seed: int = 0) -> Any:
    """The same as :func:`ours` by jax, eagerly (Python control flow on data runs as it is)."""
    import jax
    jax.config.update("jax_enable_x64", True)
    nums = tuple(range(len(args)))
    tangents, ct = directions(args, seed)
    if what == "grad":
        return jax.grad(jf, argnums=nums)(*args)
    if what == "jvp":
        return jax.jvp(jf, args, tangents)
    if what == "vjp":
        out, back = jax.vjp(jf, *args)
        return (out,) + tuple(back(ct))
    if what == "hessian":  # jax.hessian is vmap over jvp: it cannot branch on data; one jvp per column
        x = args[0]
        g = jax.grad(lambda x: jf(x, *args[1:]))
        cols = [np.asarray(jax.jvp(g, (x,), (e.reshape(np.shape(x)),))[1]) for e in np.eye(np.size(x))]
        return np.stack(cols, axis=-1).reshape(np.shape(x) + np.shape(x))
    raise ValueError(what)


def fd_reference(what: str, f: Any, args: tuple[np.ndarray, ...], seed: int = 0) -> Any:
    """The same as :func:`ours` by central differences of ``f`` run by NumPy (float64): cheap, but
    wrong across a branch or a kink of ``f``; check a disagreement with :func:`jax_reference`."""
    tangents, ct = directions(args, seed)

    def at(*shifts: tuple[int, tuple[int, ...], float]) -> float:
        a = [np.array(v, dtype=np.float64) for v in args]
        for i, idx, h in shifts:
            a[i][idx] += h
        return float(f(*a))

    if what in ("grad", "vjp"):
        eps = 1e-6
        g = []
        for i, a in enumerate(args):
            g.append(np.array([(at((i, idx, eps)) - at((i, idx, -eps))) / (2 * eps) for idx in np.ndindex(np.shape(a))])
                     .reshape(np.shape(a)))
        return tuple(g) if what == "grad" else (f(*args),) + tuple(ct * v for v in g)
    if what == "jvp":
        eps = 1e-6
        up = f(*(a + eps * t for a, t in zip(args, tangents)))
        down = f(*(a - eps * t for a, t in zip(args, tangents)))
        return f(*args), (up - down) / (2 * eps)
    if what == "hessian":
        h, shape = 1e-4, np.shape(args[0])
        idxs: list[tuple[int, ...]] = list(np.ndindex(shape))
        hess = np.empty((len(idxs), len(idxs)))
        for p, ia in enumerate(idxs):
            for q, ib in enumerate(idxs):
                hess[p, q] = (at((0, ia, h), (0, ib, h)) - at((0, ia, h), (0, ib, -h)) - at((0, ia, -h), (0, ib, h))
                              + at((0, ia, -h), (0, ib, -h))) / (4 * h * h)
        return hess.reshape(shape + shape)
    raise ValueError(what)


def compare(what: str, got: Any, ref: Any, rtol: float = 1e-8) -> None:
    """``got`` (an array or a tuple of them) agrees with ``ref``; the assertion names ``what``."""
    if isinstance(ref, tuple):
        assert isinstance(got, tuple) and len(got) == len(ref), f"{what}: {got!r} against {ref!r}"
        for i, (a, b) in enumerate(zip(got, ref)):
            compare(f"{what} [{i}]", a, b, rtol)
        return
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    scale = max(1.0, float(np.max(np.abs(ref), initial=0.0)))
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * scale, err_msg=what)


def check_transforms(f: Any, jf: Any, args: tuple[np.ndarray, ...], seed: int = 0,
                     which: Sequence[str] = TRANSFORMS, hessian_size: int = 12, xla: bool = True,
                     screen: bool = True) -> None:
    """``grad``, ``jvp``, ``vjp`` and ``hessian`` (in the first argument, when it has at most
    ``hessian_size`` elements) of the scalar function ``f`` against jax's of its twin ``jf``: each
    compiled by XLA (unless ``xla`` is false) and run as generated source by NumPy. With ``screen``,
    a result that agrees with central differences (``rtol=1e-4``) is taken without asking jax (eager
    jax costs more than srcjax here); jax decides the rest. An assertion names the transformation,
    the oracle and the output (``[i]``: argument ``i``'s part)."""
    import srcjax
    runs: list[tuple[str, Any]] = [("XLA", f)] if xla else []
    runs.append(("generated source run by NumPy", srcjax.compile(f, device="numpy")))
    for what in which:
        if what == "hessian" and np.size(args[0]) > hessian_size:
            continue
        fd = fd_reference(what, f, args, seed) if screen else None
        ref = None
        for how, fn in runs:
            got = ours(what, fn, args, seed)
            if fd is not None:
                try:
                    compare(f"{what}, {how}", got, fd, rtol=1e-4)
                    continue
                except AssertionError:
                    pass
            if ref is None:
                ref = jax_reference(what, jf, args, seed)
            compare(f"{what}, {how}", got, ref)


def run_numpy(f: Any, args: tuple[Any, ...]) -> Any:
    """``f(*args)`` by NumPy with warnings silenced (None when it is not finite)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = f(*args)
    return out if np.all(np.isfinite(out)) else None


_DEFINED = __import__("itertools").count()


def define(body: str, params: str = "x", np_module: Any = np, tag: str = "test") -> Any:
    """``def f(params): return body`` as a function srcjax can read (its text registered with linecache);
    ``np_module`` is what ``np`` means in it (``jax.numpy`` for a jax twin)."""
    import linecache

    src = f"def f({params}):\n    return {body}\n"
    filename = f"<{tag} #{next(_DEFINED)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns: dict[str, Any] = {"np": np_module}
    exec(compile(src, filename, "exec"), ns)
    return ns["f"]
