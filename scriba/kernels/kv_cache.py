"""Writing K/V into the paged KV cache by slot (the torch reference and the Triton kernel); the
cache's allocation and its block copies and swaps are the engine's (engine/kv_pools.py).

A layer's cache is one tensor [2, num_blocks, block_size, heads, head_dim] (K then V); the
self- and cross-attention of a decoder layer share it, since a block belongs to one table.
Slot s is block s // block_size, offset s % block_size.

That is the cache's shape; its memory order is either the same (what the Triton kernels take)
or head-major (`kv_pools.new_kv_cache(head_major=True)`, the torch path's): stored as [2, heads, blocks,
block_size, head_dim] and viewed in the common shape, so every op indexes it alike. A run of
consecutive blocks is then, per head, one contiguous [positions, head_dim] matrix: on a 2-core
CPU, SDPA over 16 cross-attention contexts of 1,500 positions reads them 1.7x faster (1.67 vs
2.90 ms a layer) than with the heads interleaved.
"""

from __future__ import annotations

import torch

from scriba.kernels.kv8_triton import write_kv_cache_8bit_triton
from scriba.kernels.triton_support import HAS_TRITON, next_power_of_2, require_triton, tl, triton


def check_write_args(
    k: torch.Tensor, v: torch.Tensor, kv_cache: torch.Tensor, slot_mapping: torch.Tensor
) -> None:
    if kv_cache.dim() != 5 or kv_cache.shape[0] != 2:
        raise ValueError(
            f"kv_cache must be [2, blocks, block_size, heads, head_dim], got {tuple(kv_cache.shape)}"
        )
    if k.shape != v.shape or k.shape[1:] != (kv_cache.shape[3], kv_cache.shape[4]):
        raise ValueError(f"k/v {tuple(k.shape)} do not fit cache {tuple(kv_cache.shape)}")
    if slot_mapping.shape != (k.shape[0],):
        raise ValueError(f"slot_mapping must be [{k.shape[0]}], got {tuple(slot_mapping.shape)}")


def write_kv_cache_ref(
    k: torch.Tensor,  # [tokens, heads, head_dim]
    v: torch.Tensor,  # [tokens, heads, head_dim]
    kv_cache: torch.Tensor,  # [2, blocks, block_size, heads, head_dim]
    slot_mapping: torch.Tensor,  # [tokens] int
) -> None:
    """Writes k and v at their slots, rounded to the cache's dtype (a bfloat16 cache under
    float32 compute)."""
    check_write_args(k, v, kv_cache, slot_mapping)
    heads, dim = kv_cache.shape[3:]
    slots = slot_mapping.long()
    kv_cache[0].view(-1, heads, dim).index_copy_(0, slots, k.to(kv_cache.dtype))
    kv_cache[1].view(-1, heads, dim).index_copy_(0, slots, v.to(kv_cache.dtype))


if HAS_TRITON:

    @triton.jit
    def _write_kv_kernel(
        k_ptr,
        v_ptr,
        cache_ptr,
        slot_ptr,
        num_tokens,
        stride_k_tok,
        stride_k_head,
        stride_v_tok,
        stride_v_head,
        stride_cache_kv,
        head_dim,
        heads_x_dim,
        TOKENS: tl.constexpr,
        BLOCK_HD: tl.constexpr,
    ):
        """Each program copies TOKENS tokens' K and V rows (all heads) to their cache slots.
        Slot -1 is padding (CUDA-graph batches) and writes nothing."""
        token = tl.program_id(0) * TOKENS + tl.arange(0, TOKENS)
        slot = tl.load(slot_ptr + token, mask=token < num_tokens, other=-1).to(tl.int64)
        i = tl.arange(0, BLOCK_HD)
        head, d = i // head_dim, i % head_dim
        mask = (slot[:, None] >= 0) & (i[None, :] < heads_x_dim)
        k = tl.load(k_ptr + token[:, None] * stride_k_tok + (head * stride_k_head + d)[None, :], mask=mask)
        v = tl.load(v_ptr + token[:, None] * stride_v_tok + (head * stride_v_head + d)[None, :], mask=mask)
        # the cache is contiguous: a slot is heads * dim
        dst = cache_ptr + slot[:, None] * heads_x_dim + i[None, :]
        tl.store(dst, k, mask=mask)
        tl.store(dst + stride_cache_kv, v, mask=mask)


def write_kv_cache_triton(
    k: torch.Tensor,  # [tokens, heads, head_dim], last dim contiguous
    v: torch.Tensor,  # [tokens, heads, head_dim]
    kv_cache: torch.Tensor,  # [2, blocks, block_size, heads, head_dim], contiguous
    slot_mapping: torch.Tensor,  # [tokens] int; -1 skips the token
    scales: torch.Tensor | None = None,  # [2, blocks, block_size, heads] float32: an 8-bit cache's (kv8.py)
) -> None:
    """The Triton version of `write_kv_cache_ref` and `kv8.write_kv_cache_8bit_ref` (which it is
    tested against); an 8-bit cache is quantized and written by kv8_triton.py's one kernel."""
    check_write_args(k, v, kv_cache, slot_mapping)
    require_triton(kv_cache.device)
    if k.stride(-1) != 1 or v.stride(-1) != 1:
        raise ValueError("k and v must be contiguous in head_dim")
    if not kv_cache.is_contiguous():
        raise ValueError("kv_cache must be contiguous")
    if (k.dtype != kv_cache.dtype or v.dtype != kv_cache.dtype) and scales is None:
        raise ValueError(f"k/v dtype {k.dtype} differs from the cache's {kv_cache.dtype}")
    if scales is not None and not scales.is_contiguous():
        raise ValueError("scales must be contiguous")
    if k.shape[0] == 0:
        return
    if scales is not None:
        return write_kv_cache_8bit_triton(k, v, kv_cache, slot_mapping, scales)
    heads, dim = kv_cache.shape[3:]
    block_hd = next_power_of_2(heads * dim)
    tokens = max(1, min(16, 8192 // block_hd))  # rows per program: 4 for Whisper large's 1280
    _write_kv_kernel[(triton.cdiv(k.shape[0], tokens),)](
        k,
        v,
        kv_cache,
        slot_mapping,
        k.shape[0],
        k.stride(0),
        k.stride(1),
        v.stride(0),
        v.stride(1),
        kv_cache.stride(0),
        dim,
        heads * dim,
        TOKENS=tokens,
        BLOCK_HD=block_hd,
    )
