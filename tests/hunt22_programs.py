"""Programs from sources no earlier hunt read (hunt 22): the corpus of tests/test_hunt22_programs.py.

What JAX users write in tutorials and example repositories, written again for srcjax with NumPy and ``srcjax``'s
names, as those users write it (each program is ours; nothing here is pasted):

- Flax's examples (``vae``, ``sst2``, ``wmt``, Apache-2.0) and the UvA deep learning tutorials' JAX notebooks
  (Phillip Lippe, MIT: the Transformer, energy-based models, normalizing flows): modules as pure functions over
  nested dicts of parameters, a VAE's ELBO with the reparameterization trick on given noise, multi-head
  attention with ``reshape``/``transpose``/``np.split`` and ``-9e15`` masking, sinusoidal positional encodings
  written into strided slices, an LSTM over padded sequences masked by length, an MLP-Mixer block, SwiGLU,
  grouped-query attention by ``np.repeat``, a key/value cache written at a position held in data, T5's
  relative-position buckets, GPT-NeoX rotary embeddings (``rotate_half``), sliding-window and linear attention,
  a blockwise (online) softmax, Perceiver's latent cross-attention, NeRF's volume rendering and positional
  encoding, SIREN, Langevin sampling of an energy model.
- optax (Apache-2.0) update rules it grew after those hunt 19 read, as dict comprehensions over parameter
  trees: Adan, Sophia's Hutchinson estimate (``jvp`` of ``grad``), sharpness-aware minimization, NFNets'
  adaptive gradient clipping by unit-wise norms, LARS, NovoGrad, cosine schedules with warm restarts,
  schedule-free SGD, gradient accumulation every ``k`` steps, a training loop under ``fori_loop`` with an EMA of
  the parameters.
- jax-md (Apache-2.0) and physics tutorials: periodic displacements with the minimum image, Lennard-Jones with a
  cutoff, FIRE descent (a branch on the power per step), BAOAB Langevin steps on given noise, Gray-Scott
  reaction-diffusion by ``np.roll``, 2D heat steps written into interior slices, a spring cloth with forces
  scattered by ``np.add.at``, gravitational n-body with Python double loops, the double pendulum of Lagrangian
  neural networks (Cranmer et al.: ``hessian`` and ``jacfwd`` inside the dynamics), Hamiltonian neural
  networks, an orbit integrated ``while`` above the axis, shallow water by Lax-Friedrichs.
- probabilistic programs (NumPyro/blackjax-style tutorials): a Gaussian-mixture log density by a hand-written
  logsumexp, a banana-shaped target under HMC with an accept step on given uniforms, a mean-field ELBO for
  Bayesian logistic regression with ``vmap`` over given noise inside, Stein variational gradient descent
  (``np.median`` bandwidth, ``vmap(grad(logp))``), annealed importance sampling, a mixture density network, a
  horseshoe prior through its transforms, an RTS smoother, batch renormalization with ``stop_gradient``.
- losses: CLIP's symmetric loss with a clipped logit scale, supervised contrastive loss, Lovász hinge (sort,
  ``cumsum``), QR-DQN's quantile Huber, Wing, Tversky, PolyLoss, Charbonnier, 1D earth mover's distance.
- ODE solvers: RK4 over a dict state, Dormand-Prince with a ``while`` on the error estimate, a neural ODE over
  ``zip(ts[:-1], ts[1:])``, implicit midpoint by fixed Newton iterations, leapfrog for a Hamiltonian.
- per-example gradients and Jacobians: the gradient noise scale, influence scores, the empirical NTK by ``jacrev``
  over a dict of parameters, Hutchinson's trace by ``vmap`` of Hessian-vector products, a flow's log-determinant
  by ``jacfwd`` inside, a Jacobian penalty per example, R1's penalty.
- programs written to be vmapped: histograms by in-place ``+=`` at indices from data, bubble passes with tuple
  swaps under ``if``, Viterbi's backtrace with integer writes, a ring buffer at a data position, k-means'
  in-place centroid rows, Euclid's ``while`` on integers, a dict state machine, argmax row updates.
"""

# ruff: noqa: B007, B023, E741, F841, N803, N806 - (the authors' style: `for i in range(n):`, `l`, `W`, `X`, unpacked
# names left unread, helpers defined in a loop and called in the same step)

from __future__ import annotations

import numpy as np

import srcjax

lax = srcjax.lax


def _lse(a, axis=-1):
    m = np.max(a, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(a - m), axis=axis))


def _softmax(x, axis=-1):
    z = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


def _dense(p, x):
    return x @ p["kernel"] + p["bias"]


def _layer_norm(p, x, eps=1e-6):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * p["scale"] + p["bias"]


def _gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


# == Flax examples, UvA DL tutorials: modules over nested dicts =====================================================


def vae_elbo(params, x, eps):
    # flax/examples/vae: Encoder -> (mean, logvar), reparameterize, Decoder logits, binary cross-entropy + KL
    h = np.maximum(_dense(params["encoder"]["fc1"], x), 0.0)
    mean = _dense(params["encoder"]["fc2_mean"], h)
    logvar = _dense(params["encoder"]["fc2_logvar"], h)
    std = np.exp(0.5 * logvar)
    z = mean + eps * std
    h = np.maximum(_dense(params["decoder"]["fc1"], z), 0.0)
    logits = _dense(params["decoder"]["fc2"], h)
    bce = -np.sum(x * logits - np.logaddexp(0.0, logits), axis=-1)
    kld = -0.5 * np.sum(1 + logvar - np.square(mean) - np.exp(logvar), axis=-1)
    return np.mean(bce + kld)


def lippe_mha(params, x, mask, num_heads=2):
    # UvA tutorial 6: qkv_proj, reshape to heads, np.split, scaled_dot_product with mask == 0 -> -9e15
    seq_len, embed_dim = x.shape
    qkv = _dense(params["qkv_proj"], x)
    qkv = qkv.reshape(seq_len, num_heads, -1)
    qkv = qkv.transpose(1, 0, 2)
    q, k, v = np.split(qkv, 3, axis=-1)
    d_k = q.shape[-1]
    attn_logits = q @ np.swapaxes(k, -2, -1) / np.sqrt(d_k)
    attn_logits = np.where(mask == 0, -9e15, attn_logits)
    attention = _softmax(attn_logits, axis=-1)
    values = attention @ v
    values = values.transpose(1, 0, 2).reshape(seq_len, embed_dim)
    return _dense(params["o_proj"], values), attention


def sinusoidal_encoding(x, max_len=8):
    # UvA tutorial 6's PositionalEncoding: pe[:, 0::2] = sin, pe[:, 1::2] = cos written in place
    seq_len, d_model = x.shape
    pe = np.zeros((max_len, d_model))
    position = np.arange(0, max_len)[:, None]
    div_term = np.exp(np.arange(0, d_model, 2) * (-np.log(10000.0) / d_model))
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term)
    return x + pe[:seq_len]


def t5_bucket_bias(q, k, table, num_buckets=8, max_distance=16):
    # T5's relative_position_bucket (bidirectional), then a bias per bucket added to the attention logits
    T = q.shape[0]
    rel = np.arange(T)[None, :] - np.arange(T)[:, None]
    nb = num_buckets // 2
    ret = (rel > 0).astype(np.int32) * nb
    n = np.abs(rel)
    max_exact = nb // 2
    is_small = n < max_exact
    val_if_large = max_exact + (np.log(np.maximum(n, 1) / max_exact) / np.log(max_distance / max_exact)
                                * (nb - max_exact)).astype(np.int32)
    val_if_large = np.minimum(val_if_large, nb - 1)
    buckets = ret + np.where(is_small, n, val_if_large)
    logits = q @ k.T + table[buckets]
    return np.sum(_softmax(logits) * (q @ k.T))


def _rotate_half(x):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([-x2, x1], axis=-1)


def neox_rotary(q, k, offset=0, base=10000.0):
    # GPT-NeoX's RotaryEmbedding: cos/sin cached over positions, q * cos + rotate_half(q) * sin
    T, d = q.shape
    inv_freq = 1.0 / base ** (np.arange(0, d, 2) / d)
    t = np.arange(offset, offset + T)
    freqs = np.einsum("i,j->ij", t, inv_freq)
    emb = np.concatenate((freqs, freqs), axis=-1)
    cos, sin = np.cos(emb), np.sin(emb)
    q_rot = q * cos + _rotate_half(q) * sin
    k_rot = k * cos + _rotate_half(k) * sin
    return q_rot @ k_rot.T


def gqa_attention(params, x, n_heads=4, n_kv=2):
    # grouped-query attention (Llama 2): kv heads repeated with np.repeat along the head axis
    T, D = x.shape
    hd = D // n_heads
    q = (x @ params["wq"]).reshape(T, n_heads, hd)
    k = (x @ params["wk"]).reshape(T, n_kv, hd)
    v = (x @ params["wv"]).reshape(T, n_kv, hd)
    k = np.repeat(k, n_heads // n_kv, axis=1)
    v = np.repeat(v, n_heads // n_kv, axis=1)
    scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(hd)
    causal = np.tril(np.ones((T, T), dtype=bool))
    scores = np.where(causal[None], scores, -np.inf)
    w = _softmax(scores, axis=-1)
    out = np.einsum("hqk,khd->qhd", w, v).reshape(T, D)
    return out @ params["wo"]


def sst2_masked_lstm(params, embedded, length):
    # flax/examples/sst2: an LSTM over a padded sequence, the carry kept past each example's length
    T, E = embedded.shape
    H = params["hh"].shape[0]
    h = np.zeros(H)
    c = np.zeros(H)
    for t in range(T):
        gates = embedded[t] @ params["ih"] + h @ params["hh"] + params["b"]
        i, f, g, o = np.split(gates, 4)
        new_c = 1 / (1 + np.exp(-f)) * c + 1 / (1 + np.exp(-i)) * np.tanh(g)
        new_h = 1 / (1 + np.exp(-o)) * np.tanh(new_c)
        keep = t < length
        c = np.where(keep, new_c, c)
        h = np.where(keep, new_h, h)
    return h @ params["out"]


def mixer_block(params, x):
    # MLP-Mixer: token mixing across the transposed patches, then channel mixing, both pre-LN and residual
    y = _layer_norm(params["ln1"], x)
    y = y.T
    y = _dense(params["tok2"], _gelu(_dense(params["tok1"], y)))
    x = x + y.T
    y = _layer_norm(params["ln2"], x)
    y = _dense(params["ch2"], _gelu(_dense(params["ch1"], y)))
    return x + y


def swiglu_ffn(params, x):
    # PaLM/Llama feed-forward: silu(x W) * (x V) then W2, a residual and an RMS norm in front
    h = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6) * params["norm"]
    a = h @ params["w1"]
    silu = a / (1.0 + np.exp(-a))
    return x + (silu * (h @ params["w3"])) @ params["w2"]


def kv_cache_decode(params, cache_k, cache_v, x, pos):
    # autoregressive decoding: write this step's key/value at `pos` (data) and attend to positions <= pos
    q = x @ params["wq"]
    cache_k = cache_k.at[pos].set(x @ params["wk"])
    cache_v = cache_v.at[pos].set(x @ params["wv"])
    scores = cache_k @ q / np.sqrt(q.shape[0])
    scores = np.where(np.arange(cache_k.shape[0]) <= pos, scores, -1e30)
    w = _softmax(scores)
    return w @ cache_v, cache_k, cache_v


def sliding_window_attention(q, k, v, window=2):
    # Longformer/Mistral's local causal attention: key j visible from query i when i - window < j <= i
    T = q.shape[0]
    i = np.arange(T)[:, None]
    j = np.arange(T)[None, :]
    visible = (j <= i) & (j > i - window)
    s = np.where(visible, q @ k.T / np.sqrt(q.shape[1]), -1e9)
    return _softmax(s) @ v


def linear_attention_causal(q, k, v):
    # "Transformers are RNNs": elu + 1 features, causal prefix sums of k v^T and of k
    phi_q = np.where(q > 0, q + 1.0, np.exp(q))
    phi_k = np.where(k > 0, k + 1.0, np.exp(k))
    kv = np.cumsum(phi_k[:, :, None] * v[:, None, :], axis=0)
    z = np.cumsum(phi_k, axis=0)
    num = np.einsum("td,tde->te", phi_q, kv)
    den = np.einsum("td,td->t", phi_q, z)
    return num / den[:, None]


def blockwise_softmax_attention(q, k, v, block=2):
    # flash attention's online softmax: key blocks in a Python loop, running max m, normaliser l, accumulator
    T = k.shape[0]
    m = np.full(q.shape[0], -np.inf)
    l = np.zeros(q.shape[0])
    acc = np.zeros((q.shape[0], v.shape[1]))
    for s in range(0, T, block):
        kb, vb = k[s:s + block], v[s:s + block]
        scores = q @ kb.T
        m_new = np.maximum(m, scores.max(axis=1))
        p = np.exp(scores - m_new[:, None])
        corr = np.exp(m - m_new)
        l = l * corr + p.sum(axis=1)
        acc = acc * corr[:, None] + p @ vb
        m = m_new
    return acc / l[:, None]


def perceiver_latents(params, inputs):
    # Perceiver: learned latents cross-attend to the inputs, then a latent self-attention with a residual
    lat = params["latents"]
    q = lat @ params["wq"]
    k = inputs @ params["wk"]
    v = inputs @ params["wv"]
    lat = lat + _softmax(q @ k.T / np.sqrt(q.shape[-1])) @ v
    s = lat @ lat.T / np.sqrt(lat.shape[-1])
    lat = lat + _softmax(s) @ lat
    return np.mean(lat, axis=0)


def nerf_render(raw, t_vals, white_bkgd=True):
    # NeRF's raw2outputs: alpha from densities over segment lengths, exclusive cumprod transmittance
    rgb = 1 / (1 + np.exp(-raw[..., :3]))
    sigma = np.maximum(raw[..., 3], 0.0)
    dists = np.concatenate([t_vals[1:] - t_vals[:-1], np.array([1e10])])
    alpha = 1.0 - np.exp(-sigma * dists)
    trans = np.cumprod(np.concatenate([np.ones(1), 1.0 - alpha + 1e-10])[:-1])
    weights = alpha * trans
    rgb_map = np.sum(weights[:, None] * rgb, axis=0)
    acc = np.sum(weights)
    if white_bkgd:
        rgb_map = rgb_map + (1.0 - acc)
    depth = np.sum(weights * t_vals) / (acc + 1e-10)
    return rgb_map, depth


def nerf_posenc_mlp(params, x, L=3):
    # NeRF's positional encoding [x, sin(2^k x), cos(2^k x)] by a list comprehension, then a SIREN-ish MLP
    feats = [x] + [f(2.0 ** k * x) for k in range(L) for f in (np.sin, np.cos)]
    h = np.concatenate(feats, axis=-1)
    h = np.sin(30.0 * (h @ params[0]["w"] + params[0]["b"]) / 30.0)
    return h @ params[1]["w"] + params[1]["b"]


def ebm_langevin(params, x0, noise, step=0.1):
    # UvA tutorial 8: Langevin samples x <- clip(x - step * dE/dx + noise), energies of data vs samples
    def energy(x):
        h = np.tanh(x @ params["w1"] + params["b1"])
        return np.sum(h @ params["w2"])

    x = x0
    for i in range(noise.shape[0]):
        x = x - step * srcjax.grad(energy)(x) + 0.01 * noise[i]
        x = np.clip(x, -1.0, 1.0)
    x = lax.stop_gradient(x)
    return energy(x0) - energy(x)


# == optax's later update rules as dict comprehensions ================================================================


def _mlp_loss(params, x, y):
    h = np.tanh(x @ params["w1"] + params["b1"])
    pred = h @ params["w2"]
    return np.mean((pred - y) ** 2)


def adan_step(params, grads, prev_grads, m, v, n, lr=0.01, b1=0.02, b2=0.08, b3=0.01, eps=1e-8):
    # optax.adan: moments of the gradient, of its difference and of the corrected square
    diff = {k: grads[k] - prev_grads[k] for k in grads}
    m = {k: (1 - b1) * m[k] + b1 * grads[k] for k in grads}
    v = {k: (1 - b2) * v[k] + b2 * diff[k] for k in grads}
    n = {k: (1 - b3) * n[k] + b3 * (grads[k] + (1 - b2) * diff[k]) ** 2 for k in grads}
    new = {k: params[k] - lr * (m[k] + (1 - b2) * v[k]) / (np.sqrt(n[k]) + eps) for k in params}
    return new, m, v, n


def sophia_step(params, x, y, u, m, h, lr=0.05, rho=0.04, b1=0.9, b2=0.99):
    # Sophia-H: Hutchinson's diagonal u * (H u) by jvp of grad, a clipped preconditioned step
    g = srcjax.grad(_mlp_loss)(params, x, y)
    _, hu = srcjax.jvp(lambda p: srcjax.grad(_mlp_loss)(p, x, y), (params,), (u,))
    m = {k: b1 * m[k] + (1 - b1) * g[k] for k in g}
    h = {k: b2 * h[k] + (1 - b2) * u[k] * hu[k] for k in g}
    step = {k: np.clip(m[k] / np.maximum(rho * h[k], 1e-12), -1.0, 1.0) for k in g}
    return {k: params[k] - lr * step[k] for k in params}, m, h


def sam_step(params, x, y, rho=0.05, lr=0.1):
    # sharpness-aware minimization: the gradient at the ascent point params + rho g / ||g||
    g = srcjax.grad(_mlp_loss)(params, x, y)
    norm = np.sqrt(sum(np.sum(gi ** 2) for gi in g.values()))
    e = {k: rho * g[k] / (norm + 1e-12) for k in g}
    g_adv = srcjax.grad(_mlp_loss)({k: params[k] + e[k] for k in params}, x, y)
    return {k: params[k] - lr * g_adv[k] for k in params}


def _unitwise_norm(x):
    if x.ndim <= 1:
        return np.sqrt(np.sum(x ** 2))
    return np.sqrt(np.sum(x ** 2, axis=0, keepdims=True))


def agc_clip(grads, params, clipping=0.05, eps=1e-3):
    # NFNets / optax.adaptive_grad_clip: unit-wise gradient norms clipped to a fraction of the parameter norms
    out = {}
    for k in grads:
        p_norm = np.maximum(_unitwise_norm(params[k]), eps)
        g_norm = _unitwise_norm(grads[k])
        max_norm = clipping * p_norm
        clipped = grads[k] * (max_norm / np.maximum(g_norm, 1e-6))
        out[k] = np.where(g_norm < max_norm, grads[k], clipped)
    return out


def lars_update(params, grads, momentum, lr=0.1, mu=0.9, wd=1e-4, eta=1e-3):
    # LARS: a trust ratio per layer, biases excluded by name
    new_p, new_m = {}, {}
    for name, w in params.items():
        g = grads[name]
        if name.startswith("b"):
            local = 1.0
        else:
            g = g + wd * w
            wn, gn = np.linalg.norm(w), np.linalg.norm(g)
            local = np.where((wn > 0) & (gn > 0), eta * wn / gn, 1.0)
        new_m[name] = mu * momentum[name] + lr * local * g
        new_p[name] = w - new_m[name]
    return new_p, new_m


def novograd_step(params, grads, m, v, step, lr=0.05, b1=0.95, b2=0.98, wd=0.001):
    # NovoGrad: a second moment per layer (the squared norm), the first moment of normalised gradients
    new_p, new_m, new_v = {}, {}, {}
    for k in sorted(params):
        gn2 = np.sum(grads[k] ** 2)
        new_v[k] = np.where(step == 0, gn2, b2 * v[k] + (1 - b2) * gn2)
        direction = grads[k] / (np.sqrt(new_v[k]) + 1e-8) + wd * params[k]
        new_m[k] = b1 * m[k] + direction
        new_p[k] = params[k] - lr * new_m[k]
    return new_p, new_m, new_v


def sgdr_schedule(step, base_lr=0.1, period=4.0, mult=2.0):
    # cosine annealing with warm restarts (period doubling) for a step count held in data
    lr = base_lr * np.ones(())
    t = step
    p = period
    done = step < 0
    for _ in range(3):
        here = ~done & (t < p)
        lr = np.where(here, 0.5 * base_lr * (1 + np.cos(np.pi * t / p)), lr)
        done = done | here
        t = t - p
        p = p * mult
    return lr


def schedule_free_sgd(params, xs, ys, lr=0.2, beta=0.9):
    # Defazio et al.: z takes SGD steps, x is the running average, gradients taken at y = (1 - beta) z + beta x
    z = dict(params)
    x = dict(params)
    for t in range(xs.shape[0]):
        y = {k: (1 - beta) * z[k] + beta * x[k] for k in z}
        g = srcjax.grad(_mlp_loss)(y, xs[t], ys[t])
        z = {k: z[k] - lr * g[k] for k in z}
        c = 1.0 / (t + 2)
        x = {k: (1 - c) * x[k] + c * z[k] for k in x}
    return _mlp_loss(x, xs[0], ys[0])


def accumulate_every_k(params, xs, ys, k=2, lr=0.1):
    # optax.MultiSteps: gradients summed and applied every k-th step (`if (t + 1) % k == 0` on the loop index)
    acc = {n: np.zeros_like(p) for n, p in params.items()}
    for t in range(xs.shape[0]):
        g = srcjax.grad(_mlp_loss)(params, xs[t], ys[t])
        acc = {n: acc[n] + g[n] for n in acc}
        if (t + 1) % k == 0:
            params = {n: params[n] - lr * acc[n] / k for n in params}
            acc = {n: np.zeros_like(a) for n, a in acc.items()}
    return params


def ema_train_fori(params, x, y, n_steps=4, lr=0.1, decay=0.9):
    # a training loop under fori_loop carrying (params, ema) dicts; optax.ema-style debiasing
    def body(i, carry):
        p, ema = carry
        g = srcjax.grad(_mlp_loss)(p, x, y)
        p = {k: p[k] - lr * g[k] for k in p}
        ema = {k: decay * ema[k] + (1 - decay) * p[k] for k in p}
        return p, ema

    p, ema = lax.fori_loop(0, n_steps, body, (params, {k: np.zeros_like(w) for k, w in params.items()}))
    debiased = {k: ema[k] / (1 - decay ** n_steps) for k in ema}
    return _mlp_loss(debiased, x, y)


# == jax-md and physics ===============================================================================================


def periodic_lj(R, box=3.0, sigma=1.0, eps=1.0, r_cut=2.5):
    # jax_md.space.periodic: minimum-image displacements; lennard_jones with a cutoff mask, pairs counted once
    dR = R[:, None, :] - R[None, :, :]
    dR = dR - box * np.round(dR / box)
    dr2 = np.sum(dR ** 2, axis=-1)
    n = R.shape[0]
    mask = (1.0 - np.eye(n)) * (dr2 < r_cut ** 2)
    safe = np.where(mask > 0, dr2, 1.0)
    inv6 = (sigma ** 2 / safe) ** 3
    e = 4.0 * eps * (inv6 ** 2 - inv6)
    return 0.5 * np.sum(np.where(mask > 0, e, 0.0))


def _soft_sphere(R):
    dR = R[:, None, :] - R[None, :, :]
    dr = np.sqrt(np.sum(dR ** 2, axis=-1) + np.eye(R.shape[0]))
    overlap = np.maximum(1.0 - dr, 0.0) * (1.0 - np.eye(R.shape[0]))
    return 0.5 * np.sum(overlap ** 2.5) / 2.5


def fire_descent(R, n_steps=6, dt_start=0.1, dt_max=0.4, alpha_start=0.1):
    # jax_md.minimize.fire_descent: mix velocity toward the force, grow dt while power > 0, else reset
    V = np.zeros_like(R)
    dt = dt_start
    alpha = alpha_start
    for i in range(n_steps):
        F = -srcjax.grad(_soft_sphere)(R)
        R = R + dt * V + 0.5 * dt ** 2 * F
        F_new = -srcjax.grad(_soft_sphere)(R)
        V = V + 0.5 * dt * (F + F_new)
        P = np.sum(F_new * V)
        f_norm = np.sqrt(np.sum(F_new ** 2)) + 1e-12
        v_norm = np.sqrt(np.sum(V ** 2))
        if P > 0:
            V = (1 - alpha) * V + alpha * F_new * v_norm / f_norm
            dt = np.minimum(dt * 1.1, dt_max)
            alpha = alpha * 0.99
        else:
            V = V * 0.0
            dt = dt * 0.5
            alpha = alpha_start
    return _soft_sphere(R), R


def baoab_langevin(x, v, noise, dt=0.05, gamma=1.0, kT=0.5):
    # BAOAB splitting for a double well on given normals
    def force(q):
        return -4.0 * q ** 3 + 4.0 * q

    c1 = np.exp(-gamma * dt)
    c2 = np.sqrt(1 - c1 ** 2) * np.sqrt(kT)
    for k in range(noise.shape[0]):
        v = v + 0.5 * dt * force(x)
        x = x + 0.5 * dt * v
        v = c1 * v + c2 * noise[k]
        x = x + 0.5 * dt * v
        v = v + 0.5 * dt * force(x)
    return x, v


def gray_scott(U, V, Du=0.16, Dv=0.08, F=0.035, k=0.065, steps=4):
    # Gray-Scott reaction-diffusion: the 5-point Laplacian by np.roll on a periodic grid
    def lap(Z):
        return (np.roll(Z, 1, 0) + np.roll(Z, -1, 0) + np.roll(Z, 1, 1) + np.roll(Z, -1, 1) - 4 * Z)

    for _ in range(steps):
        uvv = U * V * V
        U, V = U + Du * lap(U) - uvv + F * (1 - U), V + Dv * lap(V) + uvv - (F + k) * V
    return np.mean(U), V


def heat_2d_interior(u, alpha=0.2, steps=3):
    # explicit FTCS with fixed boundaries: the interior written in place each step
    u = u.copy()
    for _ in range(steps):
        un = u.copy()
        u[1:-1, 1:-1] = un[1:-1, 1:-1] + alpha * (un[2:, 1:-1] + un[:-2, 1:-1] + un[1:-1, 2:] + un[1:-1, :-2]
                                                  - 4 * un[1:-1, 1:-1])
    return u


def cloth_springs(X, rest, k=10.0):
    # a 2x3 spring cloth: edges as index arrays, forces scattered with np.add.at, one damped step
    i = np.array([0, 1, 3, 4, 0, 1, 2])
    j = np.array([1, 2, 4, 5, 3, 4, 5])
    d = X[j] - X[i]
    L = np.sqrt(np.sum(d ** 2, axis=1))
    f = (k * (L - rest) / L)[:, None] * d
    F = np.zeros_like(X)
    np.add.at(F, i, f)
    np.add.at(F, j, -f)
    F[:, 1] -= 9.81 * 0.01
    return X + 0.01 * F, 0.5 * k * np.sum((L - rest) ** 2)


def nbody_loops(pos, vel, masses, dt=0.01, steps=3, soft=0.1):
    # a first physics script: accelerations by a Python double loop with `if i != j`, kick-drift-kick
    n = pos.shape[0]

    def accel(p):
        a = []
        for i in range(n):
            ai = np.zeros(p.shape[1])
            for j in range(n):
                if i != j:
                    r = p[j] - p[i]
                    ai = ai + masses[j] * r / (np.sum(r ** 2) + soft ** 2) ** 1.5
            a.append(ai)
        return np.stack(a)

    for _ in range(steps):
        vel = vel + 0.5 * dt * accel(pos)
        pos = pos + dt * vel
        vel = vel + 0.5 * dt * accel(pos)
    ke = 0.5 * np.sum(masses[:, None] * vel ** 2)
    return pos, ke


def _double_pendulum_L(q, q_dot, m1=1.0, m2=1.0, l1=1.0, l2=1.0, g=9.8):
    t1, t2 = q
    w1, w2 = q_dot
    T1 = 0.5 * m1 * (l1 * w1) ** 2
    T2 = 0.5 * m2 * ((l1 * w1) ** 2 + (l2 * w2) ** 2 + 2 * l1 * l2 * w1 * w2 * np.cos(t1 - t2))
    V = -(m1 + m2) * g * l1 * np.cos(t1) - m2 * g * l2 * np.cos(t2)
    return T1 + T2 - V


def lnn_accel(q, q_dot):
    # Lagrangian neural networks (Cranmer et al.): q'' = H_qdot^-1 (dL/dq - (d2L/dqdot dq) q_dot)
    H = srcjax.hessian(_double_pendulum_L, argnums=1)(q, q_dot)
    gq = srcjax.grad(_double_pendulum_L, argnums=0)(q, q_dot)
    mixed = srcjax.jacfwd(srcjax.grad(_double_pendulum_L, argnums=1), argnums=0)(q, q_dot)
    return np.linalg.solve(H, gq - mixed @ q_dot)


def lnn_rollout(state, dt=0.01, steps=2):
    # RK4 of the Lagrangian's acceleration on state = [q, q_dot]
    def f(s):
        return np.concatenate([s[2:], lnn_accel(s[:2], s[2:])])

    for _ in range(steps):
        k1 = f(state)
        k2 = f(state + 0.5 * dt * k1)
        k3 = f(state + 0.5 * dt * k2)
        k4 = f(state + dt * k3)
        state = state + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return state


def hnn_loss(params, x, dx):
    # Hamiltonian neural networks: H by an MLP, the field (dH/dp, -dH/dq), squared error against dx
    def H(z):
        return np.sum(np.tanh(z @ params["w1"] + params["b1"]) @ params["w2"])

    g = srcjax.vmap(srcjax.grad(H))(x)
    field = np.stack([g[:, 1], -g[:, 0]], axis=1)
    return np.mean((field - dx) ** 2)


def orbit_until_crossing(y0, v0, dt=0.05):
    # integrate a Kepler orbit until it crosses y = 0 downwards (a `while` on data), then interpolate the time
    x, y, vx, vy = 1.0, y0, 0.0, v0
    t = 0.0
    y_prev = y
    x, y = x + dt * vx, y + dt * vy
    while y > 0.0 or y_prev <= 0.0:
        r3 = (x * x + y * y) ** 1.5
        vx = vx - dt * x / r3
        vy = vy - dt * y / r3
        y_prev = y
        x = x + dt * vx
        y = y + dt * vy
        t = t + dt
    return t - dt * y / (y - y_prev)


def shallow_water_lf(h, hu, dt=0.02, dx=0.1, g=9.81, steps=3):
    # 1D shallow water by Lax-Friedrichs with reflective walls (ghost cells by concatenation)
    for _ in range(steps):
        hp = np.concatenate([h[:1], h, h[-1:]])
        qp = np.concatenate([-hu[:1], hu, -hu[-1:]])
        F1 = qp
        F2 = qp ** 2 / hp + 0.5 * g * hp ** 2
        h = 0.5 * (hp[2:] + hp[:-2]) - dt / (2 * dx) * (F1[2:] - F1[:-2])
        hu = 0.5 * (qp[2:] + qp[:-2]) - dt / (2 * dx) * (F2[2:] - F2[:-2])
    return h, hu


# == probabilistic programs ===========================================================================================


def gmm_logdensity(x, logits, means, log_scales):
    # a 1D Gaussian mixture's log likelihood by a hand-written logsumexp over components
    log_w = logits - _lse(logits)
    z = (x[:, None] - means[None, :]) / np.exp(log_scales)[None, :]
    comp = -0.5 * z ** 2 - log_scales[None, :] - 0.5 * np.log(2 * np.pi)
    return np.sum(_lse(log_w[None, :] + comp, axis=1))


def _banana_logp(q, b=0.5):
    return -0.5 * q[0] ** 2 / 4.0 - 0.5 * (q[1] - b * q[0] ** 2 + 4.0 * b) ** 2


def banana_hmc(q, momenta, log_u, eps=0.15, n_leap=3):
    # HMC transitions on the banana target: leapfrog with grad inside, accept by np.where on given uniforms
    accepted = 0.0
    for t in range(momenta.shape[0]):
        p0 = momenta[t]
        qn = q
        p = p0 + 0.5 * eps * srcjax.grad(_banana_logp)(qn)
        for l in range(n_leap):
            qn = qn + eps * p
            if l < n_leap - 1:
                p = p + eps * srcjax.grad(_banana_logp)(qn)
        p = p + 0.5 * eps * srcjax.grad(_banana_logp)(qn)
        log_ratio = _banana_logp(qn) - 0.5 * np.sum(p ** 2) - _banana_logp(q) + 0.5 * np.sum(p0 ** 2)
        accept = log_u[t] < log_ratio
        q = np.where(accept, qn, q)
        accepted = accepted + accept
    return q, accepted


def bayes_logreg_elbo(mu, log_sigma, eps, X, y):
    # a mean-field Gaussian ELBO with the reparameterization trick: vmap of the log joint over given noise
    def log_joint(w):
        logits = X @ w
        return np.sum(y * logits - np.logaddexp(0.0, logits)) - 0.5 * np.sum(w ** 2)

    ws = mu + np.exp(log_sigma) * eps
    entropy = np.sum(log_sigma) + 0.5 * mu.shape[0] * (1.0 + np.log(2 * np.pi))
    return np.mean(srcjax.vmap(log_joint)(ws)) + entropy


def svgd_step(particles, step=0.1):
    # Stein variational gradient descent: RBF kernel with the median heuristic, vmap(grad(logp))
    def logp(x):
        return -0.5 * np.sum((x - 1.0) ** 2 / np.array([1.0, 0.5]))

    n = particles.shape[0]
    diff = particles[:, None, :] - particles[None, :, :]
    d2 = np.sum(diff ** 2, axis=-1)
    h = np.median(d2) / np.log(n + 1.0) + 1e-6
    K = np.exp(-d2 / h)
    grad_logp = srcjax.vmap(srcjax.grad(logp))(particles)
    grad_K = -2.0 / h * np.sum(K[:, :, None] * diff, axis=1)
    phi = (K @ grad_logp + grad_K) / n
    return particles + step * phi


def ais_log_weights(x0, noise, log_u, n_temps=4, step=0.4):
    # annealed importance sampling from N(0, 1) to an unnormalised bimodal target, one MH move per temperature
    def log_prior(x):
        return -0.5 * x ** 2

    def log_target(x):
        return np.logaddexp(-0.5 * (x - 2.0) ** 2 / 0.25, -0.5 * (x + 2.0) ** 2 / 0.25)

    betas = np.linspace(0.0, 1.0, n_temps + 1)
    x = x0
    logw = np.zeros_like(x0)
    for t in range(1, n_temps + 1):
        logw = logw + (betas[t] - betas[t - 1]) * (log_target(x) - log_prior(x))
        prop = x + step * noise[t - 1]
        def log_pi(z):
            return (1 - betas[t]) * log_prior(z) + betas[t] * log_target(z)
        acc = log_u[t - 1] < log_pi(prop) - log_pi(x)
        x = np.where(acc, prop, x)
    return _lse(logw) - np.log(x0.shape[0]), x


def mdn_nll(params, x, y, K=3):
    # a mixture density network: pi logits, means and log scales from one hidden layer
    h = np.tanh(x @ params["w"] + params["b"])
    out = h @ params["head"]
    logit_pi, mu, log_s = out[:, :K], out[:, K:2 * K], out[:, 2 * K:]
    log_pi = logit_pi - _lse(logit_pi, axis=1)[:, None]
    z = (y[:, None] - mu) / np.exp(log_s)
    log_comp = -0.5 * z * z - log_s - 0.5 * np.log(2 * np.pi)
    return -np.mean(_lse(log_pi + log_comp, axis=1))


def horseshoe_logdensity(unc, X, y):
    # NumPyro's horseshoe regression on unconstrained parameters: exp transforms with log-Jacobians
    D = X.shape[1]
    beta_raw = unc[:D]
    log_lam = unc[D:2 * D]
    log_tau = unc[2 * D]
    lam, tau = np.exp(log_lam), np.exp(log_tau)
    beta = beta_raw * lam * tau
    lp = -0.5 * np.sum(beta_raw ** 2)
    lp = lp + np.sum(-np.log1p(lam ** 2)) + np.sum(log_lam)
    lp = lp - np.log1p(tau ** 2) + log_tau
    resid = y - X @ beta
    return lp - 0.5 * np.sum(resid ** 2)


def rts_smoother(ys, q=0.1, r=0.5):
    # dynamax's linear-Gaussian smoother for a local-level model: a forward filter kept in lists, a backward pass
    m, P = 0.0, 1.0
    ms, Ps, mps, Pps = [], [], [], []
    for y in ys:
        mp, Pp = m, P + q
        K = Pp / (Pp + r)
        m = mp + K * (y - mp)
        P = (1 - K) * Pp
        ms.append(m)
        Ps.append(P)
        mps.append(mp)
        Pps.append(Pp)
    sm = [ms[-1]]
    for t in range(len(ms) - 2, -1, -1):
        G = Ps[t] / Pps[t + 1]
        sm.append(ms[t] + G * (sm[-1] - mps[t + 1]))
    sm.reverse()
    return np.stack(sm)


def batch_renorm(x, gamma, beta, running_mean, running_std, r_max=1.5, d_max=0.5):
    # batch renormalization (Ioffe 2017): r and d clipped and held out of the gradient
    mu = np.mean(x, axis=0)
    sigma = np.sqrt(np.var(x, axis=0) + 1e-5)
    r = lax.stop_gradient(np.clip(sigma / running_std, 1.0 / r_max, r_max))
    d = lax.stop_gradient(np.clip((mu - running_mean) / running_std, -d_max, d_max))
    xhat = (x - mu) / sigma * r + d
    return gamma * xhat + beta


def adain(content, style, eps=1e-5):
    # adaptive instance normalisation (style transfer): content features take the style's channel statistics
    c_mean = content.mean(axis=(0, 1), keepdims=True)
    c_std = np.sqrt(content.var(axis=(0, 1), keepdims=True) + eps)
    s_mean = style.mean(axis=(0, 1), keepdims=True)
    s_std = np.sqrt(style.var(axis=(0, 1), keepdims=True) + eps)
    return (content - c_mean) / c_std * s_std + s_mean


def weight_norm_dense(v, g, b, x):
    # weight normalisation: w = g * v / ||v|| per output unit
    w = g * v / np.linalg.norm(v, axis=0, keepdims=True)
    return np.tanh(x @ w + b)


# == losses ===========================================================================================================


def clip_loss(img, txt, log_scale):
    # CLIP: L2-normalised embeddings, a learned temperature clipped at 100, symmetric cross-entropy
    img = img / np.linalg.norm(img, axis=-1, keepdims=True)
    txt = txt / np.linalg.norm(txt, axis=-1, keepdims=True)
    scale = np.minimum(np.exp(log_scale), 100.0)
    logits = scale * img @ txt.T
    labels = np.arange(logits.shape[0])
    li = -np.mean(logits[labels, labels] - _lse(logits, axis=1))
    lt = -np.mean(logits[labels, labels] - _lse(logits, axis=0))
    return (li + lt) / 2


def supcon_loss(z, labels, tau=0.5):
    # supervised contrastive loss (Khosla et al.): positives share a label, self excluded
    z = z / np.sqrt(np.sum(z ** 2, axis=1, keepdims=True))
    n = z.shape[0]
    sim = z @ z.T / tau
    self_mask = np.eye(n, dtype=bool)
    sim = np.where(self_mask, -1e9, sim)
    log_prob = sim - _lse(sim, axis=1)[:, None]
    pos = (labels[:, None] == labels[None, :]) & ~self_mask
    n_pos = np.maximum(pos.sum(axis=1), 1)
    return -np.mean(np.sum(np.where(pos, log_prob, 0.0), axis=1) / n_pos)


def lovasz_hinge(logits, labels):
    # Lovász hinge (Berman et al.): errors sorted, the Jaccard loss's gradient by cumsums
    signs = 2.0 * labels - 1.0
    errors = 1.0 - logits * signs
    order = np.argsort(-errors)
    errors_sorted = errors[order]
    gt_sorted = labels[order]
    gts = gt_sorted.sum()
    intersection = gts - np.cumsum(gt_sorted)
    union = gts + np.cumsum(1.0 - gt_sorted)
    jaccard = 1.0 - intersection / union
    jaccard = np.concatenate([jaccard[:1], jaccard[1:] - jaccard[:-1]])
    return np.dot(np.maximum(errors_sorted, 0.0), jaccard)


def quantile_huber(pred_q, target, kappa=1.0):
    # QR-DQN: pairwise TD errors, Huber, weighted by |tau - 1{u < 0}|
    N = pred_q.shape[0]
    taus = (np.arange(N) + 0.5) / N
    u = target[None, :] - pred_q[:, None]
    huber = np.where(np.abs(u) <= kappa, 0.5 * u ** 2, kappa * (np.abs(u) - 0.5 * kappa))
    w = np.abs(taus[:, None] - (u < 0).astype(u.dtype))
    return np.sum(np.mean(w * huber / kappa, axis=1))


def wing_loss(pred, target, w=0.5, eps=0.2):
    # Wing loss for landmark regression: logarithmic near zero, linear beyond w
    x = np.abs(pred - target)
    C = w - w * np.log(1 + w / eps)
    return np.mean(np.where(x < w, w * np.log(1 + x / eps), x - C))


def tversky_poly(probs, target, alpha=0.7, beta=0.3, eps=1.0):
    # the Tversky index as a loss, with PolyLoss-1's correction of the cross-entropy
    tp = np.sum(probs * target)
    fp = np.sum(probs * (1 - target))
    fn = np.sum((1 - probs) * target)
    tversky = 1 - (tp + 1.0) / (tp + alpha * fp + beta * fn + 1.0)
    pt = np.where(target > 0.5, probs, 1 - probs)
    poly = np.mean(-np.log(pt) + eps * (1 - pt))
    return tversky + poly


def charbonnier_emd(p, q, eps=1e-3):
    # optical-flow's Charbonnier penalty beside the 1D earth mover's distance between histograms by cumsums
    char = np.mean(np.sqrt((p - q) ** 2 + eps ** 2))
    pn, qn = p / np.sum(p), q / np.sum(q)
    emd = np.sum(np.abs(np.cumsum(pn) - np.cumsum(qn)))
    return char + emd


# == ODE solvers ======================================================================================================


def rk4_dict_state(state, params, dt=0.1, n=4):
    # RK4 over a dict state with dict comprehensions (a damped spring-pendulum)
    def field(s):
        r, th, pr, pth = s["r"], s["th"], s["pr"], s["pth"]
        return {"r": pr, "th": pth, "pr": r * pth ** 2 - params["k"] * (r - 1.0) + np.cos(th) - params["c"] * pr,
                "pth": -(np.sin(th) + 2 * pr * pth) / r}

    for _ in range(n):
        k1 = field(state)
        k2 = field({key: state[key] + 0.5 * dt * k1[key] for key in state})
        k3 = field({key: state[key] + 0.5 * dt * k2[key] for key in state})
        k4 = field({key: state[key] + dt * k3[key] for key in state})
        state = {key: state[key] + dt / 6 * (k1[key] + 2 * k2[key] + 2 * k3[key] + k4[key]) for key in state}
    return state["r"] * np.cos(state["th"]), state["r"] * np.sin(state["th"])


DP_A = [[], [1 / 5], [3 / 40, 9 / 40], [44 / 45, -56 / 15, 32 / 9],
        [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
        [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
        [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]]
DP_B = [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0]
DP_E = [71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40]


def dopri5_adaptive(y0, k, t1=1.0, rtol=1e-4):
    # Dormand-Prince 5(4) for y' = -k y + sin(t): a `while` on the time, steps accepted when the error is small
    def f(t, y):
        return -k * y + np.sin(t)

    t, y, h = 0.0, y0, 0.1
    while t < t1:
        h = np.minimum(h, t1 - t)
        ks = []
        for i in range(7):
            yi = y
            for j in range(len(DP_A[i])):
                yi = yi + h * DP_A[i][j] * ks[j]
            ks.append(f(t + h * sum(DP_A[i]), yi))
        y_new = y + h * sum(b * kk for b, kk in zip(DP_B, ks))
        err = h * sum(e * kk for e, kk in zip(DP_E, ks))
        scale = rtol * (1.0 + np.maximum(np.abs(y), np.abs(y_new)))
        ratio = np.sqrt(np.mean((err / scale) ** 2))
        if ratio <= 1.0:
            t = t + h
            y = y_new
        h = h * np.clip(0.9 * (1.0 / (ratio + 1e-10)) ** 0.2, 0.2, 5.0)
    return y


def neural_ode_zip(params, x0, ts):
    # a neural ODE evaluated at given times: Euler-Heun between consecutive times by zip over slices
    def f(x):
        return np.tanh(x @ params["w"] + params["b"]) @ params["v"]

    x = x0
    outs = [x0]
    for t0, t1 in zip(ts[:-1], ts[1:]):
        dt = t1 - t0
        k1 = f(x)
        k2 = f(x + dt * k1)
        x = x + 0.5 * dt * (k1 + k2)
        outs.append(x)
    return np.stack(outs)


def implicit_midpoint(y, omega, dt=0.2, steps=3, newton=4):
    # implicit midpoint for a nonlinear oscillator: fixed Newton iterations with a Jacobian by jacfwd inside
    def f(z):
        return np.array([z[1], -omega ** 2 * np.sin(z[0])])

    for _ in range(steps):
        y_next = y + dt * f(y)
        for _ in range(newton):
            def residual(z):
                return z - y - dt * f(0.5 * (y + z))
            J = srcjax.jacfwd(residual)(y_next)
            y_next = y_next - np.linalg.solve(J, residual(y_next))
        y = y_next
    return y


def leapfrog_hamiltonian(q, p, mass, dt=0.1, steps=5):
    # leapfrog for H = p^2 / 2m + V(q) with V an anharmonic well, returning the energy error too
    def V(x):
        return 0.5 * np.sum(x ** 2) + 0.1 * np.sum(x ** 4)

    H0 = np.sum(p ** 2) / (2 * mass) + V(q)
    p = p - 0.5 * dt * srcjax.grad(V)(q)
    for s in range(steps):
        q = q + dt * p / mass
        if s != steps - 1:
            p = p - dt * srcjax.grad(V)(q)
    p = p - 0.5 * dt * srcjax.grad(V)(q)
    return q, np.sum(p ** 2) / (2 * mass) + V(q) - H0


# == per-example gradients and Jacobians ==============================================================================


def _net(params, x):
    return np.tanh(x @ params["w1"] + params["b1"]) @ params["w2"]


def _example_loss(params, x, y):
    return np.sum((_net(params, x) - y) ** 2)


def gradient_noise_scale(params, X, Y):
    # McCandlish et al.'s simple noise scale: per-example gradients' variance over the mean gradient's norm
    per = srcjax.vmap(srcjax.grad(_example_loss), in_axes=(None, 0, 0))(params, X, Y)
    mean_sq = sum(np.sum(np.mean(g, axis=0) ** 2) for g in per.values())
    tr_cov = sum(np.sum(np.var(g, axis=0)) for g in per.values())
    return tr_cov / mean_sq


def influence_scores(params, X, Y, x_test, y_test, damping=1.0):
    # influence of each training point: -g_test^T (H + damping)^-1 g_i with the inverse by one CG-free step
    g_test = srcjax.grad(_example_loss)(params, x_test, y_test)
    per = srcjax.vmap(srcjax.grad(_example_loss), in_axes=(None, 0, 0))(params, X, Y)
    return -sum(np.sum(per[k] * g_test[k][None], axis=tuple(range(1, per[k].ndim))) for k in per) / damping


def empirical_ntk(params, x1, x2):
    # neural_tangents.empirical_ntk_fn: J(x1) J(x2)^T summed over the leaves of a dict of parameters
    j1 = srcjax.jacrev(_net)(params, x1)
    j2 = srcjax.jacrev(_net)(params, x2)
    ntk = 0.0
    for k in j1:
        a = j1[k].reshape(x1.shape[0] * j1[k].shape[1], -1)
        b = j2[k].reshape(x2.shape[0] * j2[k].shape[1], -1)
        ntk = ntk + a @ b.T
    return ntk


def hutchinson_trace(params, x, y, probes):
    # the Hessian's trace by Rademacher probes: vmap over v of v . (H v), H v as jvp of grad
    def hvp(v):
        return srcjax.jvp(lambda p: srcjax.grad(_example_loss)(p, x, y), (params,), (v,))[1]

    def quad(v):
        hv = hvp(v)
        return sum(np.sum(v[k] * hv[k]) for k in v)

    return np.mean(srcjax.vmap(quad)(probes))


def flow_logdet_jacfwd(x, W, b):
    # a planar-then-tanh flow's log-density by brute force: log |det J| with J = jacfwd inside, slogdet
    def flow(z):
        h = z + np.tanh(z @ W + b) * 0.5
        return np.tanh(h) * 1.5

    J = srcjax.jacfwd(flow)(x)
    sign, logdet = np.linalg.slogdet(J)
    y = flow(x)
    return -0.5 * np.sum(y ** 2) + logdet


def jacobian_penalty(params, X):
    # a contractive penalty: per-example Frobenius norms of d net / d x by vmap(jacrev)
    J = srcjax.vmap(srcjax.jacrev(_net, argnums=1), in_axes=(None, 0))(params, X)
    return np.mean(np.sum(J ** 2, axis=(1, 2)))


def r1_penalty(params, real, gamma=10.0):
    # StyleGAN's R1: the squared norm of the discriminator's gradient at real samples
    def D(x):
        return np.sum(_net(params, x))

    g = srcjax.vmap(srcjax.grad(D))(real)
    return 0.5 * gamma * np.mean(np.sum(g ** 2, axis=1))


# == programs written to be vmapped ===================================================================================


def weighted_histogram(x, w, n_bins=4, lo=-2.0, hi=2.0):
    # bins from data, `h[b] += w[i]` in a Python loop (a scatter at a batched index under vmap)
    h = np.zeros(n_bins)
    idx = np.clip(((x - lo) / (hi - lo) * n_bins).astype(np.int32), 0, n_bins - 1)
    for i in range(x.shape[0]):
        h[idx[i]] += w[i]
    return h


def bubble_swaps(x):
    # two bubble-sort passes, elements swapped by tuple assignment under an `if` on data
    x = x.copy()
    n = x.shape[0]
    for _ in range(2):
        for i in range(n - 1):
            if x[i] > x[i + 1]:
                x[i], x[i + 1] = x[i + 1], x[i]
    return x


def viterbi_backtrace(log_A, log_emit, log_pi):
    # Viterbi with back-pointers, the best path written backwards by integer in-place updates
    T, S = log_emit.shape
    delta = log_pi + log_emit[0]
    bp = np.zeros((T, S), dtype=np.int32)
    for t in range(1, T):
        scores = delta[:, None] + log_A
        bp[t] = np.argmax(scores, axis=0)
        delta = np.max(scores, axis=0) + log_emit[t]
    path = np.zeros(T, dtype=np.int32)
    path[T - 1] = np.argmax(delta)
    for t in range(T - 2, -1, -1):
        path[t] = bp[t + 1, path[t + 1]]
    return path, np.max(delta)


def ring_buffer(buf, x, pos):
    # a replay buffer's write at `pos % size` (pos held in data), then the mean of the filled slots
    n = buf.shape[0]
    buf = buf.copy()
    buf[pos % n] = x
    filled = np.arange(n) <= pos
    return buf, np.sum(buf * filled[:, None]) / np.minimum(pos + 1, n)


def kmeans_inplace(X, C, n_iter=2):
    # Lloyd's iterations: labels by argmin, centroid rows written in place with `max(count, 1)`
    C = C.copy()
    K = C.shape[0]
    for _ in range(n_iter):
        d = np.sum((X[:, None, :] - C[None, :, :]) ** 2, axis=-1)
        labels = np.argmin(d, axis=1)
        for k in range(K):
            mask = (labels == k).astype(X.dtype)
            C[k] = np.sum(X * mask[:, None], axis=0) / max(np.sum(mask), 1.0)
    return C


def euclid_gcd(a, b):
    # Euclid on integer data: a `while` whose trip count differs per example
    steps = 0
    while b != 0:
        a, b = b, a % b
        steps = steps + 1
    return a, steps


def thermostat_fsm(temps, state):
    # a dict state machine stepped over readings: heater on/off with hysteresis, energy used
    s = dict(state)
    for t in range(temps.shape[0]):
        if s["on"] > 0.5:
            s["energy"] = s["energy"] + s["power"]
            if temps[t] > 21.0:
                s["on"] = s["on"] * 0.0
        else:
            if temps[t] < 19.0:
                s["on"] = s["on"] * 0.0 + 1.0
    return s


def argmax_row_update(M, v, lr=0.5):
    # a winner-take-all update: the row nearest to v moves toward it (a batched row index under vmap)
    M = M.copy()
    i = np.argmin(np.sum((M - v) ** 2, axis=1))
    M[i] = M[i] + lr * (v - M[i])
    return M


def running_extremes(x):
    # a Python loop keeping the running max and min and their positions, with `elif` on data
    hi, lo = x[0], x[0]
    ihi, ilo = 0, 0
    for i in range(1, x.shape[0]):
        if x[i] > hi:
            hi, ihi = x[i], i
        elif x[i] < lo:
            lo, ilo = x[i], i
    return hi - lo, ihi - ilo


def clipped_scatter_add(table, idx, upd):
    # embedding-gradient style scatter: rows gathered, updated and added back with .at[].add
    rows = table[idx]
    upd = np.clip(upd, -1.0, 1.0) * np.tanh(rows)
    return table.at[idx].add(upd)


def topk_inplace_mask(x, k=2):
    # keep the k largest entries: set the others to zero by repeated argmax with -inf writes
    x0 = x
    y = x.copy()
    keep = np.zeros(x.shape[0])
    for _ in range(k):
        i = np.argmax(y)
        keep[i] = 1.0
        y[i] = -np.inf
    return x0 * keep


def while_until_norm(x, tol=1e-2):
    # halve a vector until its norm is below tol, counting the steps (the count per example under vmap)
    n = 0
    while np.sqrt(np.sum(x ** 2)) > tol:
        x = 0.5 * x
        n += 1
    return x, n
