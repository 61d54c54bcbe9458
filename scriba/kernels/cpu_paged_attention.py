"""Paged decode attention on the CPU over a bfloat16 KV cache: numba kernels.

Every decode step reads each sequence's whole context in every layer, and for Whisper that is
a cross-attention context of 1,500 positions: on a 2-core CPU the step is bound by those reads.
PyTorch's SDPA makes them at a fraction of the memory's speed (its small per-block products
bound it) and runs 3-5x slower still on a bfloat16 cache. These kernels read the cache in
place through the block tables (no gather), at half the bytes of float32 (17 contexts of 1,500
positions, 4 layers in turn on 2 cores: 1.1 ms a layer against SDPA's 2.5 ms in float32).

    scores[r, h, t] = scale * q[r, h] . k[h, slot(r, t)]   for t < length[r], -inf after
    probs = softmax(scores)                                (torch: numba's exp is scalar)
    out[r, h] = sum_t probs[r, h, t] * v[h, slot(r, t)]

A bfloat16 is the top half of a float32: it is widened by shifting its bits up 16. The
float32 mode keeps the torch path (`paged_attention.paged_decode_attention_ref`), this
kernel's oracle.
"""

from __future__ import annotations

import os
import threading

import numba
import numpy as np
import torch

from scriba.kernels.paged_attention import check_paged_args


@numba.njit(parallel=True, fastmath=True, cache=True)
def _scores_kernel(q, k, tables, lengths, block_size, scale, scores):
    """q [R, H, D] float32; k [H, slots, D] bfloat16 bits (uint16); tables [R, blocks] int32;
    lengths [R] int32; scores [R, H, >= max length] float32, written."""
    rows, heads, dim = q.shape
    for task in numba.prange(rows * heads):
        r, h = task // heads, task % heads
        n = lengths[r]
        query = q[r, h] * scale
        bits = np.empty((block_size, dim), np.uint32)
        keys = bits.view(np.float32)
        out = scores[r, h]
        for b in range((n + block_size - 1) // block_size):
            block = k[h, tables[r, b] * block_size :]
            used = min(block_size, n - b * block_size)
            for j in range(used):
                for d in range(dim):
                    bits[j, d] = np.uint32(block[j, d]) << 16
            for j in range(used):
                acc = np.float32(0.0)
                for d in range(dim):
                    acc += query[d] * keys[j, d]
                out[b * block_size + j] = acc
        out[n:] = -np.inf


@numba.njit(parallel=True, fastmath=True, cache=True)
def _weighted_sum_kernel(probs, v, tables, lengths, block_size, out):
    """probs [R, H, >= max length] float32; v [H, slots, D] bfloat16 bits; out [R, H, D]."""
    rows, heads, dim = out.shape
    for task in numba.prange(rows * heads):
        r, h = task // heads, task % heads
        n = lengths[r]
        weights = probs[r, h]
        acc = np.zeros(dim, np.float32)
        bits = np.empty(dim, np.uint32)
        value = bits.view(np.float32)
        for b in range((n + block_size - 1) // block_size):
            block = v[h, tables[r, b] * block_size :]
            for j in range(min(block_size, n - b * block_size)):
                w = weights[b * block_size + j]
                for d in range(dim):
                    bits[d] = np.uint32(block[j, d]) << 16
                for d in range(dim):
                    acc[d] += w * value[d]
        out[r, h] = acc


def paged_decode_attention_bf16(
    q: torch.Tensor,  # [seqs, heads, head_dim] float32
    kv_cache: torch.Tensor,  # [2, blocks, block_size, heads, head_dim] bfloat16, either memory order
    block_tables: torch.Tensor,  # [seqs, max_blocks] int
    seq_lens: torch.Tensor,  # [seqs] int, >= 1
    scale: float,
) -> torch.Tensor:  # [seqs, heads, head_dim] float32
    """What `paged_decode_attention_ref` computes, over a bfloat16 cache, in float32."""
    check_paged_args(q, kv_cache, block_tables, seq_lens)
    if kv_cache.dtype != torch.bfloat16 or q.dtype != torch.float32 or q.device.type != "cpu":
        raise ValueError(f"needs a CPU bfloat16 cache and float32 q, got {kv_cache.dtype} and {q.dtype}")
    seqs, heads, dim = q.shape
    block_size = kv_cache.shape[2]
    # [2, heads, slots, head_dim]: a view for both memory orders (new_kv_cache)
    bits = kv_cache.view(torch.uint16).permute(0, 3, 1, 2, 4).flatten(2, 3).numpy()
    lengths = seq_lens.to(torch.int32).numpy()
    tables = block_tables.to(torch.int32).contiguous().numpy()
    scores = torch.empty(seqs, heads, int(lengths.max()))
    out = torch.empty(seqs, heads, dim)
    # One launch at a time (engines on several threads): each already takes every core, and
    # numba's fallback pool, where there is no OpenMP, refuses launches from two threads at once.
    with _launches:
        _use_torch_threads()
        _scores_kernel(
            q.contiguous().numpy(), bits[0], tables, lengths, block_size, np.float32(scale), scores.numpy()
        )
        probs = torch.softmax(scores, dim=-1)
        _weighted_sum_kernel(probs.numpy(), bits[1], tables, lengths, block_size, out.numpy())
    return out


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
