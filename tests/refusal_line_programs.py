"""Programs refused at one line after others whose names a derivative writes again (tests/test_refusal_lines.py).

Each offending line is marked ``# refused``; its construct is the text after ``# refused: ``.
"""

import numpy as np


def renumbered(x):
    sin = np.sin(x) * 2.0
    add = sin + np.sum(x * x)
    mul = np.sum(sin * x) + sin
    r = x * np.sum(np.ones(int(np.sum(sin))))  # refused: np.ones(int(np.sum(sin)))
    return np.sum(r) + np.sum(add) + np.sum(mul)


def renumbered_later(x):
    a = np.tanh(x) + x
    add = x + np.sum(a * a)
    b = np.sin(a) * 2.0
    sin = add * np.sum(np.ones(int(np.sum(a))))  # refused: np.ones(int(np.sum(a)))
    y = np.tanh(add) + sin
    return np.sum(y) + np.sum(b)


def rebound(x):
    c = x + np.sum(x * x)
    add = x * np.sum(np.ones(int(np.sum(c))))  # refused: np.ones(int(np.sum(c)))
    add = c * 3.0 + add
    a = add * 3.0
    return np.sum(np.sum(a) * a) + np.sum(c)


def sized_by_data(x):
    y = np.sin(x) * 2.0
    mul = y * y
    sum_1 = np.sum(mul)
    n = int(sum_1)
    z = np.zeros(n) + 1.0  # refused: np.zeros(n)
    return np.sum(z) * sum_1 + np.sum(mul)


def masked(x):
    sin = np.sin(x) * 2.0
    add = sin + np.sum(x * x)
    sum_1 = np.sum(add * sin)
    m = add[sin > 0.5]  # refused: add[sin > 0.5]
    return np.sum(m) + sum_1


def ranged(x):
    mul = x * x
    add = mul + np.sum(mul * x)
    k = np.arange(int(np.sum(add))) * 2.0  # refused: np.arange(int(np.sum(add)))
    return np.sum(k) * np.sum(add)
