"""Paged decode attention: one query token per sequence over its block table. Torch reference."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def check_paged_args(q: torch.Tensor, kv_cache: torch.Tensor, block_tables: torch.Tensor, seq_lens: torch.Tensor) -> None:
    if q.dim() != 3:
        raise ValueError(f"q must be [seqs, heads, head_dim], got {tuple(q.shape)}")
    if kv_cache.dim() != 5 or kv_cache.shape[0] != 2 or kv_cache.shape[3:] != q.shape[1:]:
        raise ValueError(f"kv_cache {tuple(kv_cache.shape)} does not fit q {tuple(q.shape)}")
    if block_tables.dim() != 2 or block_tables.shape[0] != q.shape[0] or seq_lens.shape != (q.shape[0],):
        raise ValueError(f"block_tables {tuple(block_tables.shape)} / seq_lens {tuple(seq_lens.shape)} do not match {q.shape[0]} seqs")


def paged_decode_attention_ref(
    q: torch.Tensor,  # [seqs, heads, head_dim]
    kv_cache: torch.Tensor,  # [2, blocks, block_size, heads, head_dim]
    block_tables: torch.Tensor,  # [seqs, max_blocks] int
    seq_lens: torch.Tensor,  # [seqs] int, >= 1
    scale: float,
) -> torch.Tensor:  # [seqs, heads, head_dim]
    check_paged_args(q, kv_cache, block_tables, seq_lens)
    num_seqs, heads, dim = q.shape
    block_size = kv_cache.shape[2]
    max_len = block_tables.shape[1] * block_size
    # Gather each sequence's blocks into [seqs, max_len, heads, dim]; mask the tail by length.
    k = kv_cache[0][block_tables.long()].view(num_seqs, max_len, heads, dim).transpose(1, 2)
    v = kv_cache[1][block_tables.long()].view(num_seqs, max_len, heads, dim).transpose(1, 2)
    mask = torch.arange(max_len, device=q.device)[None, :] < seq_lens[:, None]
    out = F.scaled_dot_product_attention(q[:, :, None, :], k, v, attn_mask=mask[:, None, None, :], scale=scale)
    return out[:, :, 0, :]
