"""Programs calling methods of module-level objects of plain classes (ML-From-Scratch's style): the corpus of
tests/test_object_methods.py, run by NumPy as written and, with ``np`` as jax.numpy, by jax."""

# ruff: noqa: UP039, UP008 - (the authors' style: `class Sigmoid():`, `super(Shifted, self)`)

from __future__ import annotations

import numpy as np


class Sigmoid():
    def __call__(self, x): return 1 / (1 + np.exp(-x))

    def gradient(self, x):
        return self.__call__(x) * (1 - self(x))


class Leaky():
    def __init__(self, alpha=0.2):
        self.alpha = alpha

    def __call__(self, x):
        return np.where(x >= 0, x, self.alpha * x)

    def gradient(self, x):
        return np.where(x >= 0, 1.0, self.alpha)


class SoftLeaky(Leaky):
    """A subclass overriding ``__call__`` (its object must not be read with ``Leaky``'s method)."""

    def __call__(self, x):
        return self.alpha * x + (1 - self.alpha) * np.log(1 + np.exp(x))


class GaussianLoss():
    def __init__(self, scale):
        self.scale = scale
        self.centers = np.array([-1.0, 0.0, 1.5])

    @staticmethod
    def _kernel(d, width):
        return np.exp(-0.5 * (d / width) ** 2)

    def features(self, x):
        return self._kernel(x[:, None] - self.centers, self.scale)

    def loss(self, w, x, y):
        r = self.features(x) @ w - y
        return 0.5 * np.mean(r ** 2)


sigmoid = Sigmoid()
ACTS = [Sigmoid(), Leaky(0.1), SoftLeaky(0.3), Leaky(0.2)]
gauss = GaussianLoss(0.8)


def direct(x):
    return np.sum(sigmoid(x) ** 2 + sigmoid.gradient(x))


def zoo(x):
    total = 0.0
    for act in ACTS:
        total = total + np.sum(act(x) * act.gradient(x))
    return total


def regression(w, x, y):
    return gauss.loss(w, x, y)


# -- objects held by objects: a layer's activation and optimizer (ML-From-Scratch's Dense), a net of layers --


class SGD():
    def __init__(self, lr=0.1):
        self.lr = lr

    def update(self, w, grad_w):
        return w - self.lr * grad_w


class Dense():
    def __init__(self, scale, activation):
        self.activation = activation
        self.optimizer = SGD(0.5)
        self.scale = scale

    def forward(self, x):
        return self.activation(x * self.scale)

    def backward(self, z):
        return self.activation.gradient(z)

    def step(self, w, g):
        return self.optimizer.update(w, g)


class Net():
    def __init__(self):
        self.hidden = Dense(2.0, Sigmoid())
        self.out = Dense(0.5, Leaky(0.1))

    def __call__(self, x):
        return self.out.forward(self.hidden.forward(x)) + self.hidden.activation(x)


layer = Dense(1.5, Sigmoid())
net = Net()


def through_attributes(x):
    return np.sum(layer.forward(x) * layer.backward(x))


def optimizer_step(w):
    return np.sum(layer.step(w, np.sin(w)) ** 2)


def nested_objects(x):
    return np.sum(net(x) ** 2 + net.out.activation.gradient(x))


# -- inheritance: super().__call__(x), a base's method calling an overridden one; properties, class methods --


class Scaled(Sigmoid):
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return self.k * super().__call__(x)


class Shifted(Scaled):
    """Three levels: ``super(Shifted, self)`` is ``Scaled``'s, whose ``super()`` is ``Sigmoid``'s."""

    def __call__(self, x):
        return super(Shifted, self).__call__(x) + self.offset

    @property
    def offset(self):
        return 0.5 * self.k

    @classmethod
    def factor(cls):
        return 3.0

    @staticmethod
    def squash(x):
        return np.tanh(x)


shifted = Shifted(2.0)


def inherited(x):
    # Sigmoid.gradient's `self.__call__(x)` is Shifted's on a Shifted
    return np.sum(shifted(x) * shifted.gradient(x)) + np.sum(Shifted.squash(x) * shifted.factor())


# -- an object passed as a (static) argument --


class Scaler():
    def __init__(self, w):
        self.w = w

    def run(self, x):
        return np.tanh(self.w * x)


def passed_object(x, sc):
    return np.sum(sc.run(x) ** 2)


def passed_loss(w, x, y, loss):
    return loss.loss(w, x, y)
