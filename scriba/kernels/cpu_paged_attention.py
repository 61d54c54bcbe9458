"""Paged decode attention on the CPU over a float32 or bfloat16 KV cache: a numba kernel.

Every decode step reads each sequence's whole context in every layer, and for Whisper that is
a cross-attention context of 1,500 positions: on a 2-core CPU the step is bound by those reads.
PyTorch's SDPA makes them at a fraction of the memory's speed (its small per-block products
bound it) and runs 3-5x slower still on a bfloat16 cache. This kernel reads the cache in place
through the block tables (no gather); a bfloat16 cache halves the bytes (17 contexts of 1,500
positions, 4 layers in turn on 2 AVX2 cores: 2.64 ms a layer from a float32 cache, 1.52 ms from
a bfloat16 one, against SDPA's 4.04 ms in float32 and 2.40 ms for a plain read of the float32 K
and V; benchmarks/bench_decode_attention.py). One task per (sequence, head):

    scores[t] = scale * q[r, h] . k[h, slot(r, t)]    for t < length[r]
    out[r, h] = sum_t softmax(scores)[t] * v[h, slot(r, t)]

A bfloat16 is the top half of a float32: it is widened by shifting its bits up 16. The
softmax's exp is 2^k * 2^f, a polynomial for 2^f and k put in a float's exponent bits, which
vectorizes (numba's own exp is a scalar call per element). The torch path
(`paged_attention.paged_decode_attention_ref`) is this kernel's oracle. An 8-bit (e4m3) cache is
read by its own kernel: each byte's value from a 256-entry table, each block times its scale.
"""

from __future__ import annotations

import os
import threading

import numba
import numpy as np
import torch
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from scriba.kernels.fp8_kv import FP8
from scriba.kernels.paged_attention import check_paged_args

# ln(2)^i / i!, i = 6 .. 1: 2^f's Taylor series, highest power first
_EXP2_TERMS = tuple(
    np.float32(c)
    for c in (
        1.5403530393381606e-4,
        1.3333558146428443e-3,
        9.618129107628477e-3,
        5.550410866482158e-2,
        0.2402265069591007,
        0.6931471805599453,
    )
)


@numba.njit(fastmath=True, inline="always")
def _exp2_fraction(f):
    """2^f for f in [-0.5, 0.5], to f^6: relative error under 2e-7."""
    power = np.float32(0.0)
    for c in _EXP2_TERMS:
        power = (power + c) * f
    return power + np.float32(1.0)


@numba.njit(fastmath=True, inline="always")
def _softmax_weights(scores, n):
    """exp(scores[:n] - max) in place, as 2^(whole + fraction); returns their sum."""
    top = scores[0]
    for t in range(1, n):
        top = max(top, scores[t])
    powers = np.empty(n, np.uint32)
    for t in range(n):
        x = max((scores[t] - top) * np.float32(1.4426950408889634), np.float32(-126.0))
        whole = np.floor(x + np.float32(0.5))
        scores[t] = _exp2_fraction(x - whole)
        powers[t] = np.uint32(np.int32(whole) + 127) << 23  # 2^whole as float32 bits
    scale = powers.view(np.float32)
    total = np.float32(0.0)
    for t in range(n):
        scores[t] *= scale[t]
        total += scores[t]
    return total


@intrinsic
def _as_float32(typingctx, x):
    """A cache element as a float32: a float32 as it is; a bfloat16 (its bits, a uint16) is the
    top half of a float32, widened by shifting its bits up 16 (vectorizes with the loop)."""
    if x == types.float32:
        return types.float32(x), lambda context, builder, sig, args: args[0]
    if x == types.uint16:

        def widen(context, builder, sig, args):
            i32 = ir.IntType(32)
            bits = builder.shl(builder.zext(args[0], i32), ir.Constant(i32, 16))
            return builder.bitcast(bits, ir.FloatType())

        return types.float32(x), widen
    return None


@numba.njit(fastmath=True, inline="always")
def _scores(query, k, table, n, block_size, scores):
    """scores[:n] = query . keys, the keys read block by block through `table`."""
    dim = query.shape[0]
    for b in range((n + block_size - 1) // block_size):
        block = k[table[b] * block_size :]
        for j in range(min(block_size, n - b * block_size)):
            acc = np.float32(0.0)
            for d in range(dim):
                acc += query[d] * _as_float32(block[j, d])
            scores[b * block_size + j] = acc


@numba.njit(fastmath=True, inline="always")
def _weighted_values(weights, v, table, n, block_size, acc):
    """acc += sum_t weights[t] * value t, the values read block by block through `table`."""
    dim = acc.shape[0]
    for b in range((n + block_size - 1) // block_size):
        block = v[table[b] * block_size :]
        for j in range(min(block_size, n - b * block_size)):
            w = weights[b * block_size + j]
            for d in range(dim):
                acc[d] += w * _as_float32(block[j, d])


@numba.njit(parallel=True, fastmath=True, cache=True)
def _attention_kernel(q, k, v, tables, lengths, block_size, scale, out):
    """q [R, H, D] float32; k, v [H, slots, D] float32, or bfloat16 as its bits (uint16);
    tables [R, blocks] int32; lengths [R] int32; out [R, H, D] float32, written."""
    rows, heads, dim = q.shape
    for task in numba.prange(rows * heads):
        r, h = task // heads, task % heads
        n = lengths[r]
        scores = np.empty(n, np.float32)
        _scores(q[r, h] * scale, k[h], tables[r], n, block_size, scores)
        total = _softmax_weights(scores, n)
        acc = np.zeros(dim, np.float32)
        _weighted_values(scores, v[h], tables[r], n, block_size, acc)
        for d in range(dim):
            out[r, h, d] = acc[d] / total


@numba.njit(fastmath=True, inline="always")
def _scores_fp8(query, k, table, n, block_size, block_scales, lut, scores):
    """_scores over an 8-bit cache: each key byte read through `lut` (e4m3 -> float32), each
    block's dot products times its scale."""
    dim = query.shape[0]
    for b in range((n + block_size - 1) // block_size):
        block, s = k[table[b] * block_size :], block_scales[table[b]]
        for j in range(min(block_size, n - b * block_size)):
            acc = np.float32(0.0)
            for d in range(dim):
                acc += query[d] * lut[block[j, d]]
            scores[b * block_size + j] = acc * s


@numba.njit(fastmath=True, inline="always")
def _weighted_values_fp8(weights, v, table, n, block_size, block_scales, lut, acc):
    dim = acc.shape[0]
    for b in range((n + block_size - 1) // block_size):
        block, s = v[table[b] * block_size :], block_scales[table[b]]
        for j in range(min(block_size, n - b * block_size)):
            w = weights[b * block_size + j] * s
            for d in range(dim):
                acc[d] += w * lut[block[j, d]]


@numba.njit(parallel=True, fastmath=True, cache=True)
def _attention_kernel_fp8(q, k, v, k_scales, v_scales, lut, tables, lengths, block_size, scale, out):
    """_attention_kernel over an 8-bit cache: k, v [H, slots, D] uint8 (e4m3 bits); k_scales,
    v_scales [H, blocks] float32; lut [256] float32, each e4m3 byte's value."""
    rows, heads, dim = q.shape
    for task in numba.prange(rows * heads):
        r, h = task // heads, task % heads
        n = lengths[r]
        scores = np.empty(n, np.float32)
        _scores_fp8(q[r, h] * scale, k[h], tables[r], n, block_size, k_scales[h], lut, scores)
        total = _softmax_weights(scores, n)
        acc = np.zeros(dim, np.float32)
        _weighted_values_fp8(scores, v[h], tables[r], n, block_size, v_scales[h], lut, acc)
        for d in range(dim):
            out[r, h, d] = acc[d] / total


def paged_decode_attention_cpu(
    q: torch.Tensor,  # [seqs, heads, head_dim] float32
    kv_cache: torch.Tensor,  # [2, blocks, block_size, heads, head_dim] float32, bfloat16 or fp8, either order
    block_tables: torch.Tensor,  # [seqs, max_blocks] int
    seq_lens: torch.Tensor,  # [seqs] int, >= 1
    scale: float,
    kv_scales: torch.Tensor | None = None,  # [2, blocks, heads]: an 8-bit cache's scales
) -> torch.Tensor:  # [seqs, heads, head_dim] float32
    """What `paged_decode_attention_ref` computes, over a float32, bfloat16 or 8-bit (e4m3,
    with its scales) cache, in float32."""
    check_paged_args(q, kv_cache, block_tables, seq_lens)
    if kv_cache.dtype not in CACHE_DTYPES or q.dtype != torch.float32 or q.device.type != "cpu":
        raise ValueError(
            f"needs a CPU float32, bfloat16 or fp8 cache and float32 q, got {kv_cache.dtype} and {q.dtype}"
        )
    if (kv_cache.dtype == FP8) != (kv_scales is not None):
        raise ValueError("an fp8 cache is read with its scales, and only an fp8 cache has scales")
    out = torch.empty(q.shape)
    args = _kernel_args(q, kv_cache, block_tables, seq_lens, scale, out)
    # One launch at a time (engines on several threads): each already takes every core, and
    # numba's fallback pool, where there is no OpenMP, refuses launches from two threads at once.
    with _launches:
        _use_torch_threads()
        if kv_scales is None:
            _attention_kernel(*args)
        else:
            q_np, k, v, *rest = args
            per_head = [kv_scales[i].t().contiguous().numpy() for i in (0, 1)]  # [heads, blocks]
            _attention_kernel_fp8(q_np, k, v, *per_head, _fp8_values(), *rest)
    return out


def _fp8_values() -> np.ndarray:
    """[256] float32: the value of each e4m3fn byte (the two NaN codes as 0: never written)."""
    global _LUT
    if _LUT is None:
        values = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(FP8).float()
        _LUT = torch.nan_to_num(values, nan=0.0).numpy()
    return _LUT


_LUT = None


def _kernel_args(q, kv_cache, block_tables, seq_lens, scale: float, out) -> tuple:
    """The kernel's arguments as numpy views of the tensors (no copies but q's and the ints')."""
    # [2, heads, slots, head_dim]: a view for both memory orders (new_kv_cache)
    cache = kv_cache.view(CACHE_DTYPES[kv_cache.dtype]).permute(0, 3, 1, 2, 4).flatten(2, 3).numpy()
    lengths = seq_lens.to(torch.int32).numpy()
    tables = block_tables.to(torch.int32).contiguous().numpy()
    block_size = kv_cache.shape[2]
    return (
        q.contiguous().numpy(),
        cache[0],
        cache[1],
        tables,
        lengths,
        block_size,
        np.float32(scale),
        out.numpy(),
    )


CACHE_DTYPES = {
    torch.float32: torch.float32,
    torch.bfloat16: torch.uint16,
    FP8: torch.uint8,
}  # -> what numba reads


_launches = threading.Lock()
_threads_started = False


def _use_torch_threads() -> None:
    """numba's kernels run on as many threads as torch's ops. Its OpenMP pool is a second one
    beside torch's: its workers are started sleeping between kernels (OMP_WAIT_POLICY=PASSIVE,
    read when the pool starts; torch's own pool started earlier and keeps its setting), not
    spinning on the cores torch's next ops need."""
    global _threads_started
    if not _threads_started:
        before = os.environ.get("OMP_WAIT_POLICY")
        os.environ["OMP_WAIT_POLICY"] = before or "PASSIVE"
        try:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)  # starts the pool
        finally:
            if before is None:
                del os.environ["OMP_WAIT_POLICY"]
        _threads_started = True
    numba.set_num_threads(max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS)))
