"""A decode step of a pre-norm decoder stack in one numba call, over int8 weights and the paged
caches, on the CPU.

Why: a lone request's decode step is one row through every layer. In PyTorch that is ~16 ops a
layer (projections, layer norms, the KV write, two attention kernels, residuals) and each costs
its dispatch, and the numba attention's thread pool wakes beside torch's twice a layer: tiny.en's
four layers took 4-5 ms a step against ~1.3 ms of memory to read (8 MB of int8 weights, 18 MB
of float32 cross K/V). Here the whole stack is one call from Python, its products and attention
the parallel kernels below and cpu_paged_attention's, on one thread pool: every product is a
matrix-vector loop over int8 weights in float32 (exact up to summation order: no activation
rounding, so closer to the float model than the int8 layers it stands for), attention reads the
cache in place through the block tables like cpu_paged_attention's kernel.

Per layer l, for each row r (one decode token):

    h += out(attend_self(qkv(LN1(h))));  h += cross_out(attend_cross(cross_q(LN2(h))))
    h += fc2(act(fc1(LN3(h))));  and the stack's final LN at the end

The weights come stacked by kind over layers (models/decoder_step.NumbaDecoderStep), the caches
as one [2, H, slots, D] array per layer (float32, float16 or bfloat16 as their bits, or int8 codes
with [slots, H] scales per K and V).
"""

from __future__ import annotations

import math
import platform

import numba
import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic, overload

from scriba.kernels.cpu_paged_attention import attend, attention_kernel, attention_kernel_8bit, narrow
from scriba.kernels.cpu_vnni import CHUNK, vnni_matvec, vnni_matvec_serial

GELU, RELU = 0, 1  # the activations the step knows (EncoderDecoderLayer.activation_fn)
SERIAL_PRODUCT = 150_000  # weights x rows up to which a VNNI product runs on one thread (tiny.en 384 x 384)
SERIAL_ATTENTION = 4096  # (row, head, position) reads up to which attention runs on one thread


@numba.njit(parallel=True, fastmath=True, cache=True)
def int8_matvec(w, scales, bias, x, out):
    """out [R, out] = (x @ w.T) * scales + bias for a few rows x [R, in] float32, w [out, in] int8:
    each of the step's products and its logits (tiny.en's 51,864 x 384 codes), in parallel over
    chunks of output features, each weight row read once for every row of x."""
    rows, size = x.shape
    n_out = w.shape[0]
    for c in numba.prange((n_out + CHUNK - 1) // CHUNK):
        for o in range(c * CHUNK, min(n_out, c * CHUNK + CHUNK)):
            for r in range(rows):
                acc = np.float32(0.0)
                for i in range(size):
                    acc += np.float32(w[o, i]) * x[r, i]
                out[r, o] = acc * scales[o] + bias[o]


@numba.njit(fastmath=True)
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


@numba.njit(fastmath=True)
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
    """kv [2, R, H, D] float32 -> cache [2, H, slots, D] at each row's slot: float32, or float16
    or bfloat16 as their bits, rounded as torch rounds (cpu_paged_attention.narrow)."""
    like = cache[0, 0, 0, 0]
    for i in range(2):
        for r in range(slots.shape[0]):
            for h in range(kv.shape[2]):
                for d in range(kv.shape[3]):
                    cache[i, h, slots[r], d] = narrow(kv[i, r, h, d], like)


_X86 = platform.machine().lower() in ("x86_64", "amd64")
if _X86:
    llvm.initialize_native_asmparser()  # numba's JIT reads inline assembly only with it


@intrinsic
def _divide(typingctx, a, b):
    """a / b in float32, rounded as IEEE division. numba compiles the functions a fast-math
    parallel kernel calls with its flags, every fdiv included, and LLVM then turns x / s into
    x * (1 / s), a last bit off now and then; on x86-64 the division is SSE's divss in inline
    assembly, which no flag reaches (elsewhere a plain fdiv)."""
    if a != types.float32 or b != types.float32:
        return None

    def build(context, builder, sig, args):
        if not _X86:
            return builder.fdiv(*args)
        f32 = ir.FloatType()
        return builder.asm(ir.FunctionType(f32, [f32, f32]), "divss $2, $0", "=x,0,x", args, False)

    return types.float32(a, b), build


@numba.njit
def _write_int8(kv, slots, cache, scales):
    """kv [2, R, H, D] float32 -> int8 codes in cache [2, H, slots, D] and each vector's scale in
    scales [2, slots, H]: kv8.quantize's arithmetic (largest |value| at 127, round half to even,
    IEEE division), so the codes and scales equal the torch path's."""
    for i in range(2):
        for r in range(slots.shape[0]):
            for h in range(kv.shape[2]):
                x = kv[i, r, h]
                scale = max(_divide(np.max(np.abs(x)), np.float32(127.0)), np.float32(1e-12))
                for d in range(x.shape[0]):
                    code = min(max(np.rint(_divide(x[d], scale)), np.float32(-127.0)), np.float32(127.0))
                    cache[i, h, slots[r], d] = np.int8(code)
                scales[i, slots[r], h] = scale


def _write(kv, slots, cache, scales):
    """Typed by the overload below: the write for the cache's dtype."""


@overload(_write)
def _write_for(kv, slots, cache, scales):
    if cache.dtype == types.int8:
        return lambda kv, slots, cache, scales: _write_int8(kv, slots, cache, scales)
    return lambda kv, slots, cache, scales: _write_float(kv, slots, cache)


def _attend(q, cache, scales, tables, lengths, block_size, scale, out):
    """Typed by the overload below: cpu_paged_attention's kernel for the cache's dtype (only
    that one compiles)."""


@overload(_attend)
def _attend_for(q, cache, scales, tables, lengths, block_size, scale, out):
    if cache.dtype == types.int8:

        def attend_8bit(q, cache, scales, tables, lengths, block_size, scale, out):
            k, v, ks, vs = cache[0], cache[1], scales[0], scales[1]
            attention_kernel_8bit(q, k, v, ks, vs, tables, lengths, block_size, scale, out)

        return attend_8bit

    def attend_float(q, cache, scales, tables, lengths, block_size, scale, out):
        if q.shape[1] * lengths.sum() <= SERIAL_ATTENTION:  # a short self-attention context
            attend(q, cache[0], cache[1], tables, lengths, block_size, scale, out)  # here: serial
        else:
            attention_kernel(q, cache[0], cache[1], tables, lengths, block_size, scale, out)

    return attend_float


def _product(w, scales, bias, sums, x, out):
    """Typed by the overload below: out = x @ w.T * scales + bias, by VNNI over x's int8 codes
    where the step was given the weights' code sums (int32, cpu_vnni), else in float32."""


@overload(_product)
def _product_for(w, scales, bias, sums, x, out):
    if sums.dtype == types.int32:

        def vnni(w, scales, bias, sums, x, out):
            if w.size * x.shape[0] <= SERIAL_PRODUCT:
                vnni_matvec_serial(w, sums, scales, bias, x, out)
            else:
                vnni_matvec(w, sums, scales, bias, x, out)

        return vnni
    return lambda w, scales, bias, sums, x, out: int8_matvec(w, scales, bias, x, out)


@numba.njit(fastmath=True)
def _add_linear(w, scales, bias, sums, x, tmp, hidden):
    """hidden += x @ w.T * scales + bias (the product into tmp)."""
    _product(w, scales, bias, sums, x, tmp)
    for r in range(hidden.shape[0]):
        for i in range(hidden.shape[1]):
            hidden[r, i] += tmp[r, i]


def scratch(rows: int, dim: int, heads: int, ffn_dim: int) -> tuple:
    """The step's work buffers for `rows` rows: (x, tmp, tmp as heads, qkv, q, kv, attn, attn as
    rows). Made here, views included, because numba's reshape compiles its error messages
    (seconds of a first run) and a step need not allocate."""
    tmp = np.empty((rows, dim), np.float32)
    attn = np.empty((rows, heads, dim // heads), np.float32)
    x, qkv, q = np.empty_like(tmp), np.empty((rows, 3 * dim), np.float32), np.empty_like(attn)
    kv = np.empty((2, *attn.shape), np.float32)
    ffn = np.empty((rows, ffn_dim), np.float32)
    return x, tmp, tmp.reshape(attn.shape), qkv, q, kv, attn, attn.reshape(rows, dim), ffn


@numba.njit(fastmath=True, cache=True)
def decoder_step(
    hidden,
    work,
    norms,
    final_norm,
    weights,
    scales,
    biases,
    sums,
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
    work: scratch(R, ...); norms [L, 3, 2, D] (gamma, beta of the self, cross and final layer
    norms); weights, scales, biases: tuples of 6 (QKV, OUT, CROSS_Q, CROSS_OUT, FC1, FC2) [L, out,
    in] int8, [L, out], [L, out] float32; caches: L arrays [2, H, slots, D]; cache_scales: L
    arrays [2, slots, H] (an int8 cache) or [2, 0, 0]. The step is serial; its products and
    attention are the parallel kernels it calls (each compiled once, whatever calls it)."""
    rows, dim = hidden.shape
    x, tmp, tmp_heads, qkv, q, kv, attn, attn_rows, ffn = work
    heads, head_dim = q.shape[1], q.shape[2]
    w_qkv, w_out, w_cross_q, w_cross_out, w_fc1, w_fc2 = weights  # unpacked once: static indexing
    s_qkv, s_out, s_cross_q, s_cross_out, s_fc1, s_fc2 = scales
    b_qkv, b_out, b_cross_q, b_cross_out, b_fc1, b_fc2 = biases
    n_qkv, n_out, n_cross_q, n_cross_out, n_fc1, n_fc2 = sums
    for layer in range(norms.shape[0]):
        cache, cache_scale = caches[layer], cache_scales[layer]
        _layer_norm(hidden, norms[layer, 0, 0], norms[layer, 0, 1], eps, x)
        _product(w_qkv[layer], s_qkv[layer], b_qkv[layer], n_qkv[layer], x, qkv)
        for r in range(rows):
            for h in range(heads):
                for d in range(head_dim):
                    q[r, h, d] = qkv[r, h * head_dim + d]
                    kv[0, r, h, d] = qkv[r, dim + h * head_dim + d]
                    kv[1, r, h, d] = qkv[r, 2 * dim + h * head_dim + d]
        _write(kv, slots, cache, cache_scale)
        _attend(q, cache, cache_scale, self_tables, self_lens, block_size, scale, attn)
        _add_linear(w_out[layer], s_out[layer], b_out[layer], n_out[layer], attn_rows, tmp, hidden)
        _layer_norm(hidden, norms[layer, 1, 0], norms[layer, 1, 1], eps, x)
        _product(w_cross_q[layer], s_cross_q[layer], b_cross_q[layer], n_cross_q[layer], x, tmp)
        _attend(tmp_heads, cache, cache_scale, cross_tables, cross_lens, block_size, scale, attn)
        cross_out = (w_cross_out[layer], s_cross_out[layer], b_cross_out[layer], n_cross_out[layer])
        _add_linear(*cross_out, attn_rows, tmp, hidden)
        _layer_norm(hidden, norms[layer, 2, 0], norms[layer, 2, 1], eps, x)
        _product(w_fc1[layer], s_fc1[layer], b_fc1[layer], n_fc1[layer], x, ffn)
        _activate(ffn, act)
        _add_linear(w_fc2[layer], s_fc2[layer], b_fc2[layer], n_fc2[layer], ffn, tmp, hidden)
    _layer_norm(hidden, final_norm[0], final_norm[1], eps, x)
    for r in range(rows):
        for i in range(dim):
            hidden[r, i] = x[r, i]
