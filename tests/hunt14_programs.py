"""Programs srcjax had not seen (hunt 14): the corpus of tests/test_hunt14_programs.py.

Real NumPy code ported to the function a user hands to srcjax, in its authors' style: ML-From-Scratch's
activation, loss, regularization and layer classes (instances built at module level, methods called inside),
its optimizers' update rules (Adam, RMSprop, Adagrad, Adadelta, Nesterov), BatchNormalization, RNN, im2col
convolution and pooling, polynomial features (itertools); karpathy's min-char-rnn loss with its hand-written
backward pass and Pong's policy gradient (discounted rewards with resets); numpy-tutorials' MNIST from scratch and
LSTM cell (dicts of parameters); numpy-100 exercises (moving averages by cumsum, ``out=`` arithmetic, swapped
rows, ``np.add.outer``, ``.flat``, ``tensordot``); the Python Data Science Handbook's broadcasting, k nearest
neighbours (argpartition) and Gaussian basis features (a staticmethod); SciPy-style numerics written by hand
(Simpson, Romberg, RK4 with ``*args``, Newton's Kepler solver with a break, bisection, Thomas' tridiagonal
solver, a natural cubic spline, Clenshaw's recurrence, Gram-Schmidt, Doolittle's LU, Gauss-Seidel, conjugate
gradients, power iteration); and jax-examples / optax-style update rules written by hand (an MLP over a list of
(w, b) pairs, momentum and Adam over dicts of parameters, InfoNCE, label smoothing, focal loss).
"""

# ruff: noqa: UP039, B007 - (the authors' style: `class Sigmoid():`, `for i in range(n_iterations):`)

from __future__ import annotations

import math
from itertools import combinations_with_replacement

import numpy as np

# -- ML-From-Scratch: activation functions, losses, regularization (module-level instances) --------------------


class Sigmoid():
    def __init__(self): pass

    def __call__(self, x):
        return 1 / (1 + np.exp(-x))

    def gradient(self, x):
        return self.__call__(x) * (1 - self.__call__(x))


class Softmax():
    def __init__(self): pass

    def __call__(self, x):
        e_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e_x / np.sum(e_x, axis=-1, keepdims=True)

    def gradient(self, x):
        p = self.__call__(x)
        return p * (1 - p)


class TanH():
    def __init__(self): pass

    def __call__(self, x):
        return 2 / (1 + np.exp(-2 * x)) - 1

    def gradient(self, x):
        return 1 - np.power(self.__call__(x), 2)


class LeakyReLU():
    def __init__(self, alpha=0.2):
        self.alpha = alpha

    def __call__(self, x):
        return np.where(x >= 0, x, self.alpha * x)

    def gradient(self, x):
        return np.where(x >= 0, 1, self.alpha)


class ELU():
    def __init__(self, alpha=0.1):
        self.alpha = alpha

    def __call__(self, x):
        return np.where(x >= 0.0, x, self.alpha * (np.exp(x) - 1))

    def gradient(self, x):
        return np.where(x >= 0.0, 1, self.__call__(x) + self.alpha)


class SELU():
    def __init__(self):
        self.alpha = 1.6732632423543772848170429916717
        self.scale = 1.0507009873554804934193349852946

    def __call__(self, x):
        return self.scale * np.where(x >= 0.0, x, self.alpha * (np.exp(x) - 1))

    def gradient(self, x):
        return self.scale * np.where(x >= 0.0, 1, self.alpha * np.exp(x))


class SoftPlus():
    def __init__(self): pass

    def __call__(self, x):
        return np.log(1 + np.exp(x))

    def gradient(self, x):
        return 1 / (1 + np.exp(-x))


ACTIVATIONS = [Sigmoid(), TanH(), LeakyReLU(), ELU(alpha=0.1), SELU(), SoftPlus()]
sigmoid_act = Sigmoid()
softmax_act = Softmax()


def activation_zoo(x):
    total = 0
    for act in ACTIVATIONS:
        total = total + np.sum(act(x) ** 2)
    return total


def activation_gradients(x, v):
    # the hand-written derivatives, weighted: a first derivative under grad is a second one
    out = []
    for act in ACTIVATIONS:
        out.append(np.sum(act.gradient(x) * v))
    return np.array(out)


class SquareLoss():
    def __init__(self): pass

    def loss(self, y, y_pred):
        return 0.5 * np.power((y - y_pred), 2)

    def gradient(self, y, y_pred):
        return -(y - y_pred)


class CrossEntropy():
    def __init__(self): pass

    def loss(self, y, p):
        p = np.clip(p, 1e-15, 1 - 1e-15)
        return - y * np.log(p) - (1 - y) * np.log(1 - p)

    def gradient(self, y, p):
        p = np.clip(p, 1e-15, 1 - 1e-15)
        return - (y / p) + (1 - y) / (1 - p)


cross_entropy = CrossEntropy()
square_loss = SquareLoss()


def softmax_cross_entropy(logits, y):
    p = softmax_act(logits)
    return np.mean(cross_entropy.loss(y, p))


def square_loss_and_hand_grad(y, y_pred):
    return np.sum(square_loss.loss(y, y_pred)), square_loss.gradient(y, y_pred)


class MdnLoss():
    def __init__(self, num_components, output_dim):
        self.mixtures = num_components
        self.output = output_dim
        self.eps = 1e-5
        self.ypred = None

    def gaussian_pdf(self, x, mu, sigma):
        denominator = np.sqrt(math.pi * 2) * sigma + self.eps
        numerator = np.exp(-((x - mu)**2) / (2 * sigma**2))
        kernel = numerator / denominator
        return kernel

    def loss(self, y_true, y_pred):
        components = y_pred.reshape(-1, 2 + self.output, self.mixtures)
        pi = components[:, :self.output, :]
        pi = np.reshape(pi, (-1, np.prod(pi.shape[1:])))
        mu = components[:, self.output, :]
        sigma = components[:, self.output + 1, :]
        result = self.gaussian_pdf(y_true, mu, sigma) * pi
        result = np.sum(result, axis=1, keepdims=True)
        result = -np.log(result + self.eps)
        loss = np.mean(result)
        return loss


mdn = MdnLoss(num_components=3, output_dim=1)


def mdn_loss(y_true, y_pred):
    return mdn.loss(y_true, y_pred)


class l1_l2_regularization():
    """ Regularization for Elastic Net Regression """
    def __init__(self, alpha, l1_ratio=0.5):
        self.alpha = alpha
        self.l1_ratio = l1_ratio

    def __call__(self, w):
        l1_contr = self.l1_ratio * np.linalg.norm(w)
        l2_contr = (1 - self.l1_ratio) * 0.5 * w.T.dot(w)
        return self.alpha * (l1_contr + l2_contr)

    def grad(self, w):
        l1_contr = self.l1_ratio * np.sign(w)
        l2_contr = (1 - self.l1_ratio) * w
        return self.alpha * (l1_contr + l2_contr)


elastic = l1_l2_regularization(alpha=0.3, l1_ratio=0.4)


def elastic_net_loss(w, X, y):
    y_pred = X.dot(w)
    mse = np.mean(0.5 * (y - y_pred)**2 + elastic(w))
    return mse


def elastic_net_steps(w, X, y, learning_rate=0.05, n_iterations=4):
    w = w.copy()
    for i in range(n_iterations):
        y_pred = X.dot(w)
        grad_w = -(y - y_pred).dot(X) + elastic.grad(w)
        w -= learning_rate * grad_w
    return w


# -- ML-From-Scratch: optimizers' update rules, run for a few steps on a least-squares loss ----------------------

def lsq_grad(w, X, y):
    return X.T.dot(X.dot(w) - y) / len(y)


def adam_steps(w, X, y, learning_rate=0.1, b1=0.9, b2=0.999, steps=4):
    eps = 1e-8
    m = np.zeros(np.shape(w))
    v = np.zeros(np.shape(w))
    for _ in range(steps):
        grad_wrt_w = lsq_grad(w, X, y)
        m = b1 * m + (1 - b1) * grad_wrt_w
        v = b2 * v + (1 - b2) * np.power(grad_wrt_w, 2)
        m_hat = m / (1 - b1)
        v_hat = v / (1 - b2)
        w_updt = learning_rate * m_hat / (np.sqrt(v_hat) + eps)
        w = w - w_updt
    return np.sum((X.dot(w) - y) ** 2)


def adagrad_rmsprop_steps(w, X, y, learning_rate=0.05, rho=0.9, steps=3):
    G = np.zeros(np.shape(w))
    Eg = np.zeros(np.shape(w))
    eps = 1e-8
    w1 = w.copy()
    w2 = w.copy()
    for _ in range(steps):
        g1 = lsq_grad(w1, X, y)
        G += np.power(g1, 2)
        w1 = w1 - learning_rate * g1 / np.sqrt(G + eps)
        g2 = lsq_grad(w2, X, y)
        Eg = rho * Eg + (1 - rho) * np.power(g2, 2)
        w2 = w2 - learning_rate * g2 / np.sqrt(Eg + eps)
    return w1, w2


def adadelta_steps(w, X, y, rho=0.95, eps=1e-6, steps=3):
    w_updt = None
    for _ in range(steps):
        grad_wrt_w = lsq_grad(w, X, y)
        if w_updt is None:
            w_updt = np.zeros(np.shape(w))
            E_w_updt = np.zeros(np.shape(w))
            E_grad = np.zeros(np.shape(grad_wrt_w))
        E_grad = rho * E_grad + (1 - rho) * np.power(grad_wrt_w, 2)
        RMS_delta_w = np.sqrt(E_w_updt + eps)
        RMS_grad = np.sqrt(E_grad + eps)
        adaptive_lr = RMS_delta_w / RMS_grad
        w_updt = adaptive_lr * grad_wrt_w
        E_w_updt = rho * E_w_updt + (1 - rho) * np.power(w_updt, 2)
        w = w - w_updt
    return w


def nag_update(w, w_updt, grad_func, learning_rate=0.1, momentum=0.4):
    approx_future_grad = np.clip(grad_func(w - momentum * w_updt), -1, 1)
    if not w_updt.any():
        w_updt = np.zeros(np.shape(w))
    w_updt = momentum * w_updt + learning_rate * approx_future_grad
    return w - w_updt, w_updt


def nesterov_quadratic(w, A, b):
    def grad_func(w):
        return A.dot(w) - b
    w_updt = np.zeros_like(w)
    for _ in range(3):
        w, w_updt = nag_update(w, w_updt, grad_func)
    return 0.5 * w.dot(A.dot(w)) - b.dot(w)


# -- ML-From-Scratch: regressions, layers ---------------------------------------------------------------------

def logistic_regression_fit(param0, X, y, learning_rate=0.1, n_iterations=5):
    param = param0.copy()
    for i in range(n_iterations):
        y_pred = sigmoid_act(X.dot(param))
        param -= learning_rate * -(y - y_pred).dot(X)
    return param


def polynomial_features(X, degree):
    n_samples, n_features = np.shape(X)

    def index_combinations():
        combs = [combinations_with_replacement(range(n_features), i) for i in range(0, degree + 1)]
        flat_combs = [item for sublist in combs for item in sublist]
        return flat_combs

    combinations = index_combinations()
    n_output_features = len(combinations)
    X_new = np.empty((n_samples, n_output_features))
    for i, index_combs in enumerate(combinations):
        X_new[:, i] = np.prod(X[:, index_combs], axis=1)
    return X_new


def polynomial_ridge_loss(w, X, y):
    X_poly = polynomial_features(X, degree=2)
    y_pred = X_poly.dot(w)
    return np.mean(0.5 * (y - y_pred) ** 2) + 0.1 * 0.5 * w.T.dot(w)


def batchnorm_forward(X, gamma, beta, running_mean, running_var, momentum=0.99, eps=0.01):
    mean = np.mean(X, axis=0)
    var = np.var(X, axis=0)
    running_mean = momentum * running_mean + (1 - momentum) * mean
    running_var = momentum * running_var + (1 - momentum) * var
    X_centered = X - mean
    stddev_inv = 1 / np.sqrt(var + eps)
    X_norm = X_centered * stddev_inv
    output = gamma * X_norm + beta
    return output, running_mean, running_var


def rnn_forward(X, U, W, V):
    batch_size, timesteps, input_dim = X.shape
    n_units = W.shape[0]
    state_input = np.zeros((batch_size, timesteps, n_units))
    states = np.zeros((batch_size, timesteps + 1, n_units))
    outputs = np.zeros((batch_size, timesteps, input_dim))
    states[:, -1] = np.zeros((batch_size, n_units))
    for t in range(timesteps):
        state_input[:, t] = X[:, t].dot(U.T) + states[:, t - 1].dot(W.T)
        states[:, t] = np.tanh(state_input[:, t])
        outputs[:, t] = states[:, t].dot(V.T)
    return outputs


def determine_padding(filter_shape, output_shape="same"):
    if output_shape == "valid":
        return (0, 0), (0, 0)
    elif output_shape == "same":
        filter_height, filter_width = filter_shape
        pad_h1 = int(math.floor((filter_height - 1) / 2))
        pad_h2 = int(math.ceil((filter_height - 1) / 2))
        pad_w1 = int(math.floor((filter_width - 1) / 2))
        pad_w2 = int(math.ceil((filter_width - 1) / 2))
        return (pad_h1, pad_h2), (pad_w1, pad_w2)


def get_im2col_indices(images_shape, filter_shape, padding, stride=1):
    batch_size, channels, height, width = images_shape
    filter_height, filter_width = filter_shape
    pad_h, pad_w = padding
    out_height = int((height + np.sum(pad_h) - filter_height) / stride + 1)
    out_width = int((width + np.sum(pad_w) - filter_width) / stride + 1)
    i0 = np.repeat(np.arange(filter_height), filter_width)
    i0 = np.tile(i0, channels)
    i1 = stride * np.repeat(np.arange(out_height), out_width)
    j0 = np.tile(np.arange(filter_width), filter_height * channels)
    j1 = stride * np.tile(np.arange(out_width), out_height)
    i = i0.reshape(-1, 1) + i1.reshape(1, -1)
    j = j0.reshape(-1, 1) + j1.reshape(1, -1)
    k = np.repeat(np.arange(channels), filter_height * filter_width).reshape(-1, 1)
    return (k, i, j)


def image_to_column(images, filter_shape, stride, output_shape='same'):
    filter_height, filter_width = filter_shape
    pad_h, pad_w = determine_padding(filter_shape, output_shape)
    images_padded = np.pad(images, ((0, 0), (0, 0), pad_h, pad_w), mode='constant')
    k, i, j = get_im2col_indices(images.shape, filter_shape, (pad_h, pad_w), stride)
    cols = images_padded[:, k, i, j]
    channels = images.shape[1]
    cols = cols.transpose(1, 2, 0).reshape(filter_height * filter_width * channels, -1)
    return cols


def conv2d_im2col(X, W, w0):
    batch_size, channels, height, width = X.shape
    n_filters = W.shape[0]
    filter_shape = W.shape[2:]
    X_col = image_to_column(X, filter_shape, stride=1, output_shape="same")
    W_col = W.reshape((n_filters, -1))
    output = W_col.dot(X_col) + w0
    output = output.reshape((n_filters, height, width, batch_size))
    return output.transpose(3, 0, 1, 2)


def maxpool_im2col(X):
    batch_size, channels, height, width = X.shape
    pool_shape = (2, 2)
    X = X.reshape(batch_size * channels, 1, height, width)
    X_col = image_to_column(X, pool_shape, stride=2, output_shape="valid")
    arg_max = np.argmax(X_col, axis=0).flatten()
    output = X_col[arg_max, range(arg_max.size)]
    output = output.reshape(height // 2, width // 2, batch_size, channels)
    output = output.transpose(2, 3, 0, 1)
    return np.sum(output ** 2)


def column_to_image(cols, images_shape, filter_shape, stride, output_shape='same'):
    batch_size, channels, height, width = images_shape
    pad_h, pad_w = determine_padding(filter_shape, output_shape)
    height_padded = height + np.sum(pad_h)
    width_padded = width + np.sum(pad_w)
    images_padded = np.zeros((batch_size, channels, height_padded, width_padded))
    k, i, j = get_im2col_indices(images_shape, filter_shape, (pad_h, pad_w), stride)
    cols = cols.reshape(channels * np.prod(filter_shape), -1, batch_size)
    cols = cols.transpose(2, 0, 1)
    np.add.at(images_padded, (slice(None), k, i, j), cols)
    return images_padded[:, :, pad_h[0]:height + pad_h[0], pad_w[0]:width + pad_w[0]]


def conv2d_backward_input(X, W, grad):
    # the layer's backward pass for its input: W_col.T.dot(grad) folded back into an image
    filter_shape = W.shape[2:]
    n_filters = W.shape[0]
    W_col = W.reshape((n_filters, -1))
    accum_grad = grad.transpose(1, 2, 3, 0).reshape(n_filters, -1)
    accum_grad = W_col.T.dot(accum_grad)
    return column_to_image(accum_grad, X.shape, filter_shape, stride=1, output_shape="same")


# -- karpathy: min-char-rnn (loss and its hand-written backward pass), Pong's policy gradient -------------------

CHARS_IN = [0, 2, 1, 3, 2]
CHARS_OUT = [2, 1, 3, 2, 0]
vocab_size = 4


def char_rnn_loss_fun(inputs, targets, hprev, Wxh, Whh, Why, bh, by):
    xs, hs, ys, ps = {}, {}, {}, {}
    hs[-1] = np.copy(hprev)
    loss = 0
    for t in range(len(inputs)):
        xs[t] = np.zeros((vocab_size, 1))
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t - 1]) + bh)
        ys[t] = np.dot(Why, hs[t]) + by
        ps[t] = np.exp(ys[t]) / np.sum(np.exp(ys[t]))
        loss += -np.log(ps[t][targets[t], 0])
    dWxh, dWhh, dWhy = np.zeros_like(Wxh), np.zeros_like(Whh), np.zeros_like(Why)
    dbh, dby = np.zeros_like(bh), np.zeros_like(by)
    dhnext = np.zeros_like(hs[0])
    for t in reversed(range(len(inputs))):
        dy = np.copy(ps[t])
        dy[targets[t]] -= 1
        dWhy += np.dot(dy, hs[t].T)
        dby += dy
        dh = np.dot(Why.T, dy) + dhnext
        dhraw = (1 - hs[t] * hs[t]) * dh
        dbh += dhraw
        dWxh += np.dot(dhraw, xs[t].T)
        dWhh += np.dot(dhraw, hs[t - 1].T)
        dhnext = np.dot(Whh.T, dhraw)
    for dparam in [dWxh, dWhh, dWhy, dbh, dby]:
        np.clip(dparam, -5, 5, out=dparam)
    return loss, dWxh, dWhh, dWhy, dbh, dby, hs[len(inputs) - 1]


def char_rnn_loss(Wxh, Whh, Why, bh, by, hprev):
    return char_rnn_loss_fun(CHARS_IN, CHARS_OUT, hprev, Wxh, Whh, Why, bh, by)[0]


def char_rnn_hand_grads(Wxh, Whh, Why, bh, by, hprev):
    return char_rnn_loss_fun(CHARS_IN, CHARS_OUT, hprev, Wxh, Whh, Why, bh, by)[1:]


gamma = 0.99


def discount_rewards(r):
    discounted_r = np.zeros_like(r)
    running_add = 0
    for t in reversed(range(0, r.size)):
        if r[t] != 0:
            running_add = 0  # reset the sum, since this was a game boundary (pong specific!)
        running_add = running_add * gamma + r[t]
        discounted_r[t] = running_add
    return discounted_r


def policy_forward(model, x):
    h = np.dot(model['W1'], x)
    h[h < 0] = 0  # ReLU nonlinearity
    logp = np.dot(model['W2'], h)
    p = 1.0 / (1.0 + np.exp(-logp))
    return p, h


def pong_policy_loss(model, epx, epr, actions):
    discounted_epr = discount_rewards(epr)
    discounted_epr -= np.mean(discounted_epr)
    discounted_epr /= np.std(discounted_epr)
    loss = 0.0
    for t in range(epx.shape[0]):
        aprob, _ = policy_forward(model, epx[t])
        y = actions[t]
        loss += -discounted_epr[t] * (y * np.log(aprob) + (1 - y) * np.log(1 - aprob))
    return loss


def pong_discount(epr):
    return discount_rewards(epr)


# -- numpy-tutorials: MNIST from scratch, LSTM cell over a dict of parameters ----------------------------------

def relu(x):
    return (x >= 0) * x


def relu2deriv(output):
    return output >= 0


def mnist_sgd_epoch(weights_1, weights_2, training_images, training_labels, dropout_masks, learning_rate=0.005):
    weights_1 = weights_1.copy()
    weights_2 = weights_2.copy()
    training_loss = 0.0
    for i in range(len(training_images)):
        layer_0 = training_images[i]
        layer_1 = np.dot(layer_0, weights_1)
        layer_1 = relu(layer_1)
        dropout_mask = dropout_masks[i]
        layer_1 *= dropout_mask * 2
        layer_2 = np.dot(layer_1, weights_2)
        training_loss += np.sum((training_labels[i] - layer_2) ** 2)
        layer_2_delta = training_labels[i] - layer_2
        layer_1_delta = np.dot(weights_2, layer_2_delta) * relu2deriv(layer_1)
        layer_1_delta *= dropout_mask
        weights_1 += learning_rate * np.outer(layer_0, layer_1_delta)
        weights_2 += learning_rate * np.outer(layer_1, layer_2_delta)
    return training_loss, weights_1, weights_2


def sigmoid(x):
    n = np.exp(np.fmin(x, 0))
    d = (1 + np.exp(-np.abs(x)))
    return n / d


def fp_lstm(x, h_prev, c_prev, parameters):
    Wf = parameters['Wf']
    bf = parameters['bf']
    Wi = parameters['Wi']
    bi = parameters['bi']
    Wcc = parameters['Wcc']
    bcc = parameters['bcc']
    Wo = parameters['Wo']
    bo = parameters['bo']
    concat = np.vstack((h_prev, x))
    ft = sigmoid(np.dot(Wf, concat) + bf)
    it = sigmoid(np.dot(Wi, concat) + bi)
    cct = np.tanh(np.dot(Wcc, concat) + bcc)
    c_next = ft * c_prev + it * cct
    ot = sigmoid(np.dot(Wo, concat) + bo)
    h_next = ot * np.tanh(c_next)
    return h_next, c_next


def lstm_sequence_loss(parameters, xs, w_out):
    hidden_dim = parameters['Wf'].shape[0]
    h = np.zeros((hidden_dim, 1))
    c = np.zeros((hidden_dim, 1))
    caches = []
    for t in range(xs.shape[1]):
        x = xs[:, t:t + 1]
        h, c = fp_lstm(x, h, c, parameters)
        caches.append((h, c))
    y_pred = sigmoid(np.dot(w_out, caches[-1][0]))
    return -np.log(y_pred[0, 0] + 1e-8)


# -- numpy-100 ---------------------------------------------------------------------------------------------------

def moving_average(a, n=3):
    ret = np.cumsum(a, dtype=float)
    ret[n:] = ret[n:] - ret[:-n]
    return ret[n - 1:] / n


def out_arithmetic(A, B):
    # ((A+B)*(-A/2)) in place
    A = A.copy()
    B = B.copy()
    np.add(A, B, out=B)
    np.divide(A, 2, out=A)
    np.negative(A, out=A)
    np.multiply(A, B, out=A)
    return A


def swap_rows(A):
    A = A.copy()
    A[[0, 1]] = A[[1, 0]]
    return A * np.arange(1, A.shape[0] + 1)[:, None]


def outer_distances(X, Y):
    D = np.sqrt(np.subtract.outer(X, X) ** 2 + np.subtract.outer(Y, Y) ** 2 + 1e-3)
    return np.sum(D * np.add.outer(X, Y))


def closest_value(Z, z):
    m = Z.flat[np.abs(Z - z).argmin()]
    return m * z + np.sum(Z.flat[[0, 3]])


def normalize_and_tensordot(Z, M, V):
    Z = (Z - np.mean(Z)) / (np.std(Z))
    S = np.tensordot(M, V, axes=[[0, 2], [0, 1]])
    return np.sum(Z ** 3) + np.sum(S * np.diag(np.dot(Z, Z.T))[:S.shape[0]])


def sum_last_two_axes(A):
    s1 = A.sum(axis=(-2, -1))
    s2 = A.reshape(A.shape[:-2] + (-1,)).sum(axis=-1)
    return s1 * s2


def row_centering_rank(X):
    Y = X - X.mean(axis=1, keepdims=True)
    U, S, V = np.linalg.svd(Y)
    rank = np.sum(S > 1e-10)
    return np.sum(S ** 2) / rank


def checkerboard_weights(x):
    Z = np.zeros((4, 4), dtype=int)
    Z[1::2, ::2] = 1
    Z[::2, 1::2] = 1
    return np.sum(x * Z) - np.sum(x[Z == 0] ** 2)


def diag_of_product(A, B):
    d1 = np.diag(np.dot(A, B))
    d2 = np.sum(A * B.T, axis=1)
    d3 = np.einsum("ij,ji->i", A, B)
    return d1 * d2 + d3


# -- Python Data Science Handbook -------------------------------------------------------------------------------

def two_d_function_grid(x, y):
    z = np.sin(x) ** 10 + np.cos(10 + y[:, np.newaxis] * x) * np.cos(x)
    X_centered = z - z.mean(0)
    return np.sum(X_centered ** 2)


def knn_partition_distance(X, K=2):
    dist_sq = np.sum((X[:, np.newaxis, :] - X[np.newaxis, :, :]) ** 2, axis=-1)
    nearest_partition = np.argpartition(dist_sq, K + 1, axis=1)
    near = np.take_along_axis(dist_sq, nearest_partition[:, :K + 1], axis=1)
    return np.sum(near)


def histogram_by_add_at(x, w):
    bins = np.linspace(-3, 3, 8)
    counts = np.zeros_like(bins)
    i = np.searchsorted(bins, x)
    np.add.at(counts, i, w)
    return counts


class GaussianFeatures():
    """Uniformly spaced Gaussian features for one-dimensional input"""

    def __init__(self, N, width_factor=2.0):
        self.N = N
        self.width_factor = width_factor

    @staticmethod
    def _gauss_basis(x, y, width, axis=None):
        arg = (x - y) / width
        return np.exp(-0.5 * np.sum(arg ** 2, axis))

    def fit(self, X):
        self.centers_ = np.linspace(X.min(), X.max(), self.N)
        self.width_ = self.width_factor * (self.centers_[1] - self.centers_[0])
        return self

    def transform(self, X):
        return self._gauss_basis(X[:, :, np.newaxis], self.centers_, self.width_, axis=1)


gauss_features = GaussianFeatures(5).fit(np.array([0.0, 10.0]))


def gaussian_basis_regression(x, w):
    F = gauss_features.transform(x[:, np.newaxis])
    return F.dot(w)


# -- SciPy-style numerics, written by hand ----------------------------------------------------------------------

def simpson(y, dx):
    return dx / 3 * (y[0] + 4 * np.sum(y[1:-1:2]) + 2 * np.sum(y[2:-1:2]) + y[-1])


def simpson_moments(theta):
    x = np.linspace(0.0, 2.0, 9)
    y = np.exp(-theta[0] * x) * np.cos(theta[1] * x)
    return np.array([simpson(y, x[1] - x[0]), simpson(x * y, x[1] - x[0])])


def integrand(x, a):
    return np.exp(-a * x ** 2)


def romberg(a, lo=0.0, hi=1.0, n=4):
    R = np.zeros((n, n))
    h = hi - lo
    R[0, 0] = 0.5 * h * (integrand(lo, a) + integrand(hi, a))
    for i in range(1, n):
        h = h / 2
        s = 0
        for k in range(1, 2 ** i, 2):
            s = s + integrand(lo + k * h, a)
        R[i, 0] = 0.5 * R[i - 1, 0] + s * h
        for j in range(1, i + 1):
            R[i, j] = R[i, j - 1] + (R[i, j - 1] - R[i - 1, j - 1]) / (4 ** j - 1)
    return R[n - 1, n - 1]


def lotka_volterra(y, t, alpha, beta):
    prey, pred = y
    return np.array([alpha * prey - beta * prey * pred, beta * prey * pred - pred])


def rk4(f, y0, t, args=()):
    n = len(t)
    y = np.zeros((n, len(y0)))
    y[0] = y0
    for i in range(n - 1):
        h = t[i + 1] - t[i]
        k1 = f(y[i], t[i], *args)
        k2 = f(y[i] + k1 * h / 2., t[i] + h / 2., *args)
        k3 = f(y[i] + k2 * h / 2., t[i] + h / 2., *args)
        k4 = f(y[i] + k3 * h, t[i] + h, *args)
        y[i + 1] = y[i] + (h / 6.) * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def rk4_lotka_volterra(y0, alpha, beta):
    t = np.linspace(0, 1.0, 6)
    return rk4(lotka_volterra, y0, t, args=(alpha, beta))


def newton(f, fprime, x0, tol=1e-12, maxiter=50):
    x = x0
    for _ in range(maxiter):
        dx = f(x) / fprime(x)
        x = x - dx
        if abs(dx) < tol:
            break
    return x


def kepler_eccentric_anomaly(M, e):
    f = lambda E: E - e * np.sin(E) - M  # noqa: E731
    fprime = lambda E: 1 - e * np.cos(E)  # noqa: E731
    return newton(f, fprime, M)


def bisect_sqrt(a, tol=1e-6):
    lo, hi = 0.0, max(1.0, a)
    while hi - lo > tol:
        mid = (lo + hi) / 2
        if mid * mid - a > 0:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def thomas_solve(a, b, c, d):
    # tridiagonal system: a sub-diagonal (a[0] unused), b diagonal, c super-diagonal (c[-1] unused)
    n = len(d)
    cp = np.zeros(n)
    dp = np.zeros(n)
    cp[0] = c[0] / b[0]
    dp[0] = d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    x = np.zeros(n)
    x[-1] = dp[-1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return x


SPLINE_X = np.array([0.0, 0.5, 1.2, 2.0, 2.6, 3.0])


def natural_cubic_spline(y, xq):
    x = SPLINE_X
    n = len(x)
    h = np.diff(x)
    A = np.zeros((n, n))
    rhs = np.zeros(n)
    A[0, 0] = 1.0
    A[-1, -1] = 1.0
    for i in range(1, n - 1):
        A[i, i - 1] = h[i - 1]
        A[i, i] = 2 * (h[i - 1] + h[i])
        A[i, i + 1] = h[i]
        rhs[i] = 3 * ((y[i + 1] - y[i]) / h[i] - (y[i] - y[i - 1]) / h[i - 1])
    c = np.linalg.solve(A, rhs)
    b = (y[1:] - y[:-1]) / h - h * (2 * c[:-1] + c[1:]) / 3
    d = (c[1:] - c[:-1]) / (3 * h)
    idx = np.clip(np.searchsorted(x, xq) - 1, 0, n - 2)
    dx = xq - x[idx]
    return y[idx] + b[idx] * dx + c[idx] * dx ** 2 + d[idx] * dx ** 3


def clenshaw_chebyshev(c, x):
    b1 = np.zeros_like(x)
    b2 = np.zeros_like(x)
    for k in range(len(c) - 1, 0, -1):
        b1, b2 = c[k] + 2 * x * b1 - b2, b1
    return c[0] + x * b1 - b2


def gram_schmidt(A):
    m, n = A.shape
    Q = np.zeros((m, n))
    R = np.zeros((n, n))
    for j in range(n):
        v = A[:, j]
        for i in range(j):
            R[i, j] = Q[:, i] @ A[:, j]
            v = v - R[i, j] * Q[:, i]
        R[j, j] = np.linalg.norm(v)
        Q[:, j] = v / R[j, j]
    return Q, R


def doolittle_lu_det(A):
    n = A.shape[0]
    L = np.eye(n)
    U = np.zeros((n, n))
    for i in range(n):
        for k in range(i, n):
            U[i, k] = A[i, k] - sum(L[i, j] * U[j, k] for j in range(i))
        for k in range(i + 1, n):
            L[k, i] = (A[k, i] - sum(L[k, j] * U[j, i] for j in range(i))) / U[i, i]
    return np.prod(np.diag(U))


def gauss_seidel(A, b, iterations=6):
    x = np.zeros_like(b)
    n = len(b)
    for _ in range(iterations):
        for i in range(n):
            s1 = np.dot(A[i, :i], x[:i])
            s2 = np.dot(A[i, i + 1:], x[i + 1:])
            x[i] = (b[i] - s1 - s2) / A[i, i]
    return x


def conjugate_gradient(A, b, tol=1e-10):
    x = np.zeros_like(b)
    r = b - A @ x
    p = r
    rsold = r @ r
    for i in range(len(b)):
        Ap = A @ p
        alpha = rsold / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rsnew = r @ r
        if np.sqrt(rsnew) < tol:
            break
        p = r + (rsnew / rsold) * p
        rsold = rsnew
    return x


def power_iteration(A, num_iters=30):
    b_k = np.ones(A.shape[1])
    for _ in range(num_iters):
        b_k1 = np.dot(A, b_k)
        b_k1_norm = np.linalg.norm(b_k1)
        b_k = b_k1 / b_k1_norm
    return b_k @ A @ b_k


def golden_section_min(c, tol=1e-8):
    invphi = (math.sqrt(5) - 1) / 2
    a, b = -3.0, 3.0
    f = lambda x: (x - c) ** 2 + 0.1 * x ** 4  # noqa: E731
    while abs(b - a) > tol:
        x1 = b - (b - a) * invphi
        x2 = a + (b - a) * invphi
        if f(x1) < f(x2):
            b = x2
        else:
            a = x1
    return f((b + a) / 2)


def central_difference_gradient(x, A):
    # the gradient of a quadratic by central differences, written by hand (a loop over coordinates)
    f = lambda z: 0.5 * z @ A @ z + np.sum(np.sin(z))  # noqa: E731
    h = 1e-4
    grad = np.zeros_like(x)
    for i in range(x.size):
        x_plus = x.copy()
        x_minus = x.copy()
        x_plus[i] += h
        x_minus[i] -= h
        grad[i] = (f(x_plus) - f(x_minus)) / (2 * h)
    return grad


# -- jax examples, optax-style update rules written by hand -----------------------------------------------------

def logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return out if keepdims else np.squeeze(out, axis=axis)


def mlp_predict(params, inputs):
    activations = inputs
    for w, b in params[:-1]:
        outputs = np.dot(activations, w) + b
        activations = np.tanh(outputs)
    final_w, final_b = params[-1]
    logits = np.dot(activations, final_w) + final_b
    return logits - logsumexp(logits, axis=1, keepdims=True)


def mlp_loss(params, inputs, targets):
    preds = mlp_predict(params, inputs)
    return -np.mean(np.sum(preds * targets, axis=1))


def momentum_sgd_dict(params, x, y, lr=0.1, mass=0.9, steps=3):
    velocity = {k: np.zeros_like(v) for k, v in params.items()}
    for _ in range(steps):
        r = x @ params["w"] + params["b"] - y
        grads = {"w": x.T @ r / len(y), "b": np.mean(r)}
        velocity = {k: mass * velocity[k] + grads[k] for k in params}
        params = {k: params[k] - lr * velocity[k] for k in params}
    return np.sum((x @ params["w"] + params["b"] - y) ** 2)


def adam_dict_bias_corrected(params, x, y, lr=0.05, b1=0.9, b2=0.999, eps=1e-8, steps=3):
    state = {"count": 0, "mu": {k: np.zeros_like(v) for k, v in params.items()},
             "nu": {k: np.zeros_like(v) for k, v in params.items()}}
    for _ in range(steps):
        r = x @ params["w"] + params["b"] - y
        grads = {"w": x.T @ r / len(y), "b": np.mean(r)}
        state["count"] += 1
        for k in params:
            state["mu"][k] = b1 * state["mu"][k] + (1 - b1) * grads[k]
            state["nu"][k] = b2 * state["nu"][k] + (1 - b2) * grads[k] ** 2
        c = state["count"]
        mu_hat = {k: v / (1 - b1 ** c) for k, v in state["mu"].items()}
        nu_hat = {k: v / (1 - b2 ** c) for k, v in state["nu"].items()}
        params = {k: params[k] - lr * mu_hat[k] / (np.sqrt(nu_hat[k]) + eps) for k in params}
    return params


def gmm_log_likelihood(x, means, log_sigmas, logits):
    log_w = logits - logsumexp(logits)
    sig = np.exp(log_sigmas)
    z = (x[:, None] - means[None, :]) / sig[None, :]
    comp = -0.5 * z ** 2 - log_sigmas[None, :] - 0.5 * np.log(2 * np.pi)
    return np.sum(logsumexp(comp + log_w[None, :], axis=1))


def info_nce(za, zb, temperature=0.5):
    za = za / np.linalg.norm(za, axis=1, keepdims=True)
    zb = zb / np.linalg.norm(zb, axis=1, keepdims=True)
    logits = za @ zb.T / temperature
    labels = np.arange(za.shape[0])
    logprobs = logits - logsumexp(logits, axis=1, keepdims=True)
    return -np.mean(logprobs[labels, labels])


def label_smoothing_ce(logits, labels, smoothing=0.1):
    n_classes = logits.shape[-1]
    onehot = np.eye(n_classes)[labels]
    targets = onehot * (1 - smoothing) + smoothing / n_classes
    logp = logits - logsumexp(logits, axis=-1, keepdims=True)
    return -np.sum(targets * logp, axis=-1).mean()


def focal_loss(logits, y, alpha=0.25, gamma=2.0):
    p = 1 / (1 + np.exp(-logits))
    p_t = p * y + (1 - p) * (1 - y)
    alpha_t = alpha * y + (1 - alpha) * (1 - y)
    return np.sum(-alpha_t * (1 - p_t) ** gamma * np.log(p_t))


def welford_variance(xs):
    n = 0
    mean = 0.0
    M2 = 0.0
    for x in xs:
        n += 1
        delta = x - mean
        mean += delta / n
        M2 += delta * (x - mean)
    return M2 / (n - 1)


def kl_diag_gaussians(mu1, logvar1, mu2, logvar2):
    return 0.5 * np.sum(logvar2 - logvar1 + (np.exp(logvar1) + (mu1 - mu2) ** 2) / np.exp(logvar2) - 1.0)


def triplet_margin(anchor, positive, negative, margin=1.0):
    d_pos = np.sum((anchor - positive) ** 2, axis=-1)
    d_neg = np.sum((anchor - negative) ** 2, axis=-1)
    return np.mean(np.maximum(d_pos - d_neg + margin, 0.0))
