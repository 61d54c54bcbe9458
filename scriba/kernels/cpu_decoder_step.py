"""A decode step of a pre-norm decoder stack in one numba call, over int8 weights and the paged
caches, on the CPU.

Why: a lone request's decode step is one row through every layer. In PyTorch that is ~16 ops a
layer (projections, layer norms, the KV write, two attention kernels, residuals) and each costs
its dispatch, and the numba attention's thread pool wakes beside torch's twice a layer: tiny.en's
four layers took 4-5 ms a step against ~1.3 ms of memory to read (8 MB of int8 weights, 18 MB
of float32 cross K/V). Here the whole stack is one call on one thread pool: every product is a
matrix-vector loop over int8 weights in float32 (exact up to summation order: no activation
rounding, so closer to the float model than the int8 layers it stands for), attention reads the
cache in place through the block tables like cpu_paged_attention's kernel.

Per layer l, for each row r (one decode token):

    h += out(attend_self(qkv(LN1(h))));  h += cross_out(attend_cross(cross_q(LN2(h))))
    h += fc2(act(fc1(LN3(h))));  and the stack's final LN at the end

The weights come stacked by kind over layers (DecoderWeights), the caches as one [2, H, slots, D]
array per layer (float32, or int8 codes with [slots, H] scales per K and V).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from scriba.kernels.cpu_paged_attention import attend, attend_8bit

GELU, RELU = 0, 1  # the activations the step knows (EncoderDecoderLayer.activation_fn)
_CHUNK = 32  # output features per task of a product: a task reads 32 weight rows


@numba.njit(fastmath=True, inline="always")
def _linear(w, scales, bias, x, out):
    """out[r] = (w @ x[r]) * scales + bias: w [out, in] int8, x [R, in] float32, in parallel
    over chunks of output features (each weight row read once for every row of x)."""
    rows, size = x.shape
    n_out = w.shape[0]
    for c in numba.prange((n_out + _CHUNK - 1) // _CHUNK):
        for o in range(c * _CHUNK, min(n_out, c * _CHUNK + _CHUNK)):
            for r in range(rows):
                acc = np.float32(0.0)
                for i in range(size):
                    acc += np.float32(w[o, i]) * x[r, i]
                out[r, o] = acc * scales[o] + bias[o]


@numba.njit(fastmath=True, inline="always")
def _layer_norm(h, gamma, beta, eps, out):
    """out[r] = LN(h[r]) over the last axis, float32."""
    rows, size = h.shape
    for r in range(rows):
        mean = np.float32(0.0)
        for i in range(size):
            mean += h[r, i]
        mean /= size
        var = np.float32(0.0)
        for i in range(size):
            var += (h[r, i] - mean) ** 2
        inv = np.float32(1.0) / np.sqrt(var / size + eps)
        for i in range(size):
            out[r, i] = (h[r, i] - mean) * inv * gamma[i] + beta[i]


@numba.njit(fastmath=True, inline="always")
def _activate(x, kind):
    rows, size = x.shape
    for r in range(rows):
        for i in range(size):
            v = x[r, i]
            if kind == GELU:
                x[r, i] = (
                    np.float32(0.5) * v * (np.float32(1.0) + math.erf(v * np.float32(0.7071067811865476)))
                )
            else:
                x[r, i] = max(v, np.float32(0.0))


@numba.njit
def _write_float(kv, slots, cache):
    """kv [2, R, H, D] float32 -> cache [2, H, slots, D] at each row's slot."""
    for i in range(2):
        for r in range(slots.shape[0]):
            for h in range(kv.shape[2]):
                cache[i, h, slots[r]] = kv[i, r, h]


@numba.njit
def _write_int8(kv, slots, cache, scales):
    """kv [2, R, H, D] float32 -> int8 codes in cache [2, H, slots, D] and each vector's scale in
    scales [2, slots, H]: kv8.quantize's arithmetic (largest |value| at 127, round half to even),
    without fastmath, so the codes equal the torch path's."""
    for i in range(2):
        for r in range(slots.shape[0]):
            for h in range(kv.shape[2]):
                x = kv[i, r, h]
                scale = max(np.max(np.abs(x)) / np.float32(127.0), np.float32(1e-12))
                for d in range(x.shape[0]):
                    code = min(max(np.rint(x[d] / scale), np.float32(-127.0)), np.float32(127.0))
                    cache[i, h, slots[r], d] = np.int8(code)
                scales[i, slots[r], h] = scale


@numba.njit(fastmath=True, inline="always")
def _attend_either(q, cache, scales, tables, lengths, block_size, scale, out):
    """Attention over a float cache (scales of shape [2, 0, 0]) or an int8 one."""
    if scales.shape[1]:
        attend_8bit(q, cache[0], cache[1], scales[0], scales[1], tables, lengths, block_size, scale, out)
    else:
        attend(q, cache[0], cache[1], tables, lengths, block_size, scale, out)


@numba.njit(fastmath=True, inline="always")
def _add_linear(weights, scales, biases, kind, layer, x, tmp, hidden):
    """hidden += linear `kind` of `layer` applied to x."""
    _linear(weights[kind][layer], scales[kind][layer], biases[kind][layer], x, tmp)
    for r in range(hidden.shape[0]):
        for i in range(hidden.shape[1]):
            hidden[r, i] += tmp[r, i]


QKV, OUT, CROSS_Q, CROSS_OUT, FC1, FC2 = range(6)  # the order of DecoderWeights' tuples


@numba.njit(parallel=True, fastmath=True, cache=True)
def decoder_step(
    hidden,
    norms,
    final_norm,
    weights,
    scales,
    biases,
    eps,
    act,
    caches,
    cache_scales,
    slots,
    self_tables,
    self_lens,
    cross_tables,
    cross_lens,
    block_size,
    scale,
):
    """hidden [R, D] float32 in place: the embedded tokens in, the final layer norm's output out.
    norms [L, 3, 2, D] (gamma, beta of the self, cross and final layer norms); weights, scales,
    biases: tuples of 6 (QKV .. FC2) [L, out, in] int8, [L, out], [L, out] float32; caches: L
    arrays [2, H, slots, D]; cache_scales: L arrays [2, slots, H] (an int8 cache) or [2, 0, 0]."""
    rows, dim = hidden.shape
    heads = caches[0].shape[1]
    head_dim = dim // heads
    x = np.empty((rows, dim), np.float32)
    tmp = np.empty((rows, dim), np.float32)
    qkv = np.empty((rows, 3 * dim), np.float32)
    q = np.empty((rows, heads, head_dim), np.float32)
    kv = np.empty((2, rows, heads, head_dim), np.float32)
    attn = np.empty((rows, heads, head_dim), np.float32)
    ffn = np.empty((rows, weights[FC1].shape[1]), np.float32)
    for layer in range(norms.shape[0]):
        cache, cache_scale = caches[layer], cache_scales[layer]
        _layer_norm(hidden, norms[layer, 0, 0], norms[layer, 0, 1], eps, x)
        _linear(weights[QKV][layer], scales[QKV][layer], biases[QKV][layer], x, qkv)
        for r in range(rows):
            for h in range(heads):
                for d in range(head_dim):
                    q[r, h, d] = qkv[r, h * head_dim + d]
                    kv[0, r, h, d] = qkv[r, dim + h * head_dim + d]
                    kv[1, r, h, d] = qkv[r, 2 * dim + h * head_dim + d]
        if cache_scale.shape[1]:
            _write_int8(kv, slots, cache, cache_scale)
        else:
            _write_float(kv, slots, cache)
        _attend_either(q, cache, cache_scale, self_tables, self_lens, block_size, scale, attn)
        _add_linear(weights, scales, biases, OUT, layer, attn.reshape(rows, dim), tmp, hidden)
        _layer_norm(hidden, norms[layer, 1, 0], norms[layer, 1, 1], eps, x)
        _linear(weights[CROSS_Q][layer], scales[CROSS_Q][layer], biases[CROSS_Q][layer], x, tmp)
        _attend_either(
            tmp.reshape(rows, heads, head_dim),
            cache,
            cache_scale,
            cross_tables,
            cross_lens,
            block_size,
            scale,
            attn,
        )
        _add_linear(weights, scales, biases, CROSS_OUT, layer, attn.reshape(rows, dim), tmp, hidden)
        _layer_norm(hidden, norms[layer, 2, 0], norms[layer, 2, 1], eps, x)
        _linear(weights[FC1][layer], scales[FC1][layer], biases[FC1][layer], x, ffn)
        _activate(ffn, act)
        _add_linear(weights, scales, biases, FC2, layer, ffn, tmp, hidden)
    _layer_norm(hidden, final_norm[0], final_norm[1], eps, x)
    hidden[:] = x


@numba.njit(parallel=True, fastmath=True, cache=True)
def int8_matvec(w, scales, bias, x, out):
    """out [R, out] = (x @ w.T) * scales + bias for a few rows x [R, in] float32, w int8: the
    logits of a decode step (tiny.en's 51,864 x 384 codes read once for all rows)."""
    _linear(w, scales, bias, x, out)
