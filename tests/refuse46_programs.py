"""Programs jax runs that srcjax refused or got wrong (refuse46): properties of NamedTuple and dataclass
arguments, lambdas with defaults, history lists changed at the front, L-BFGS two-loop recursions, loops over
what a branch on data builds. Each is checked by tests/test_refuse46.py against jax, NumPy and finite
differences."""

import dataclasses
import functools
from typing import Any, NamedTuple

import numpy as np


class Body(NamedTuple):
    pos: Any
    vel: Any

    @property
    def energy(self):
        return 0.5 * np.sum(self.vel ** 2)

    @property
    def momentum(self):  # (one class defines it: read as a call of its getter)
        return np.sum(self.vel, axis=-1)


@dataclasses.dataclass
class Particle:
    pos: Any
    vel: Any

    @property
    def energy(self):  # (Body defines `energy` too: read by the object's class)
        return np.sum(np.sin(self.vel) ** 2)

    @functools.cached_property
    def speed(self):
        return np.sqrt(np.sum(self.vel ** 2) + 1.0)


class Gauss(NamedTuple):
    mu: Any
    log_sigma: Any

    @property
    def sigma(self):
        return np.exp(self.log_sigma)

    @property
    def var(self):  # (a property reading another)
        return self.sigma ** 2

    def logpdf(self, x):  # (a method reading properties)
        return -0.5 * np.sum((x - self.mu) ** 2 / self.var) - np.sum(self.log_sigma)


def body_weighted(b):
    return np.sum(b.pos * b.energy)


def body_momentum(b):
    return np.sum(b.pos * b.momentum[..., None] + np.tanh(b.vel))


def particle_weighted(p):
    return np.sum(p.pos * p.energy) + p.speed


def gauss_nll(g, x):
    return -g.logpdf(x) + 0.1 * np.sum(g.var)


def body_made(x):
    b = Body(x, 2.0 * x)
    return b.energy * np.sum(np.cos(x))


def body_nested(s):
    return np.sum(s[0].energy * s[1].pos)


def lambda_default(x):
    f = lambda v, k=3: v ** k  # noqa: E731
    return np.sum(f(x) + f(x, 2) + f(x, k=1))


def lambda_default_local(x):
    c = np.sum(np.sin(x))
    f = lambda v, s=c: v * s  # noqa: E731
    c = 2.0 * c  # (the default is the value `c` had at the lambda)
    return np.sum(f(x)) + c


def lambda_default_in_loop(x):
    acc = 0.0
    for k in range(1, 4):
        g = lambda v, k=k: np.tanh(v * k)  # noqa: E731
        acc = acc + np.sum(g(x))
    return acc


def history_insert_front(x):
    hist = []
    v = x
    for _ in range(3):
        v = np.sin(v) + 0.5 * v
        hist.insert(0, v)
    return np.sum(hist[0] + 2.0 * hist[1] + 3.0 * hist[2])


def history_slice_front(x):
    hist = [x]
    v = x
    for _ in range(3):
        v = np.cos(v) * v
        hist[:0] = [v, 2.0 * v]
    return np.sum(hist[0] * hist[1] + hist[-1] + 0.5 * hist[3])


def history_window_pop_front(x):
    hist = []
    v = x
    for _ in range(5):
        v = np.tanh(v) + 0.3 * v
        hist.append(v)
        if len(hist) > 2:
            hist.pop(0)
    return np.sum(hist[0] * 2.0 + hist[1])


def history_pop_values(x):
    queue = [x, 2.0 * x, np.sin(x), x ** 2]
    first = queue.pop(0)
    middle = queue.pop(1)
    last = queue.pop(-1)
    return np.sum(first * middle + last * queue[0] + len(queue))


def lbfgs_limited_memory(w0):
    """L-BFGS with a memory of 2 (`s_hist.pop(0)` once it is full) on a smooth convex function."""
    s_hist, y_hist = [], []
    w = w0
    g = 2.0 * w + np.sin(w)
    for _ in range(4):
        q = g
        alphas = []
        for s, y in zip(reversed(s_hist), reversed(y_hist)):
            a = np.dot(s, q) / np.dot(y, s)
            q = q - a * y
            alphas.append(a)
        for (s, y), a in zip(zip(s_hist, y_hist), reversed(alphas)):
            b = np.dot(y, q) / np.dot(y, s)
            q = q + (a - b) * s
        w_new = w - 0.3 * q
        g_new = 2.0 * w_new + np.sin(w_new)
        s_hist.append(w_new - w)
        y_hist.append(g_new - g)
        if len(s_hist) > 2:
            s_hist.pop(0)
            y_hist.pop(0)
        w, g = w_new, g_new
    return np.sum(w ** 2 - np.cos(w))


def lbfgs_two_loop(w0):
    """L-BFGS's two-loop recursion (both loops) with the histories kept whole."""
    s_hist, y_hist = [], []
    w = w0
    g = 2.0 * w + np.sin(w)
    for _ in range(3):
        q = g
        alphas = []
        for s, y in zip(reversed(s_hist), reversed(y_hist)):
            a = np.dot(s, q) / np.dot(y, s)
            q = q - a * y
            alphas.append(a)
        for (s, y), a in zip(zip(s_hist, y_hist), reversed(alphas)):
            b = np.dot(y, q) / np.dot(y, s)
            q = q + (a - b) * s
        w_new = w - 0.3 * q
        g_new = 2.0 * w_new + np.sin(w_new)
        s_hist.append(w_new - w)
        y_hist.append(g_new - g)
        w, g = w_new, g_new
    return np.sum(w ** 2 - np.cos(w))


def zip_taken_whole(x):
    xs = [x, np.sin(x), 2.0 * x]
    ys = [np.cos(x), x, x ** 2]
    acc = 0.0
    for pair, z in zip(zip(xs, ys), xs):
        acc = acc + np.sum(pair[0] * pair[1] * z)
    return acc


def loop_names_reused(x, cs):
    t = 0.0
    for c in cs:
        t = t + c * np.sum(x)
    if np.sum(x) > 0:
        for c in (1.0, 2.0, 3.0):
            if c == 2.0:
                continue
            t = t + c * np.sum(x ** 2)
    return t


def loop_names_reused_nested(x):
    acc = 0.0
    for k in range(3):
        acc = acc + np.sum(x[k] * x)
    for row in x:
        if np.sum(row) > 0.0:
            for k in (0.5, 1.5):
                if k > 1.0:
                    continue
                acc = acc + k * np.sum(row ** 2)
    return acc


# -- more programs in the same spirit (optimizers with history lists, queues, closures with defaults, NamedTuple
# state with properties and methods) -------------------------------------------------------------------------------


class AdamState(NamedTuple):
    m: Any
    v: Any

    @property
    def ratio(self):
        return self.m / (np.sqrt(self.v) + 1e-8)


class Spring(NamedTuple):
    k: Any
    x0: Any

    @property
    def stiffness(self):
        return np.exp(self.k)

    def energy(self, x):
        return 0.5 * self.stiffness * np.sum((x - self.x0) ** 2)


def adam_props(w):
    st = AdamState(np.zeros_like(w), np.zeros_like(w))
    for _ in range(3):
        g = 2.0 * w + np.sin(w)
        st = AdamState(0.9 * st.m + 0.1 * g, 0.99 * st.v + 0.01 * g ** 2)
        w = w - 0.1 * st.ratio
    return np.sum(w ** 2)


def spring_energy(x):
    s = Spring(np.array(0.3), 0.5 * x)
    return s.energy(x) + s.stiffness


def anderson_like(x):
    xs, fs = [], []
    for _ in range(4):
        fx = np.cos(x) * 0.5
        xs.append(x)
        fs.append(fx - x)
        if len(xs) > 2:
            xs.pop(0)
            fs.pop(0)
        x = fx if len(fs) < 2 else fx + 0.1 * (fs[-1] - fs[-2])
    return np.sum(x)


def closures_with_defaults(x):
    scale = np.sum(x ** 2)
    act = lambda v, s=scale, p=2: np.tanh(v * s) ** p  # noqa: E731
    return np.sum(act(x) + act(x, 1.0) + act(x, p=3))


def queue_of_states(x):
    q = [x]
    out = 0.0
    for k in range(3):
        cur = q.pop(0)
        out = out + np.sum(cur * (k + 1.0))
        q.append(np.sin(cur))
        q.append(cur * 0.5)
    return out + np.sum(q[0] * q[-1])


def front_stack(x):
    stack = []
    for k in range(3):
        stack[:0] = [x * (k + 1.0)]
    total = 0.0
    for j, s in enumerate(stack):
        total = total + (j + 1.0) * np.sum(np.sin(s))
    return total


def ema_window(x):
    win = [x, x, x]
    y = x
    for _ in range(4):
        y = 0.5 * y + 0.5 * np.cos(y)
        win.pop(0)
        win.append(y)
    return np.sum(win[0] * win[1] * win[2])


def secant_history(x):
    hist = [x, x + 0.1]
    for _ in range(3):
        a, b = hist[-2], hist[-1]
        fa, fb = np.sin(a) - 0.3, np.sin(b) - 0.3
        hist.append(b - fb * (b - a) / (fb - fa))
        hist.pop(0)
    return np.sum(hist[-1])
