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
    """Sequence by sequence: a table of consecutive blocks is read as a slice of the cache
    (no copy: the usual case for cross-attention tables, allocated as runs); any other
    table's blocks are gathered first."""
    check_paged_args(q, kv_cache, block_tables, seq_lens)
    heads, dim = q.shape[1:]
    block_size = kv_cache.shape[2]
    out = torch.empty_like(q)
    for i, (table, n) in enumerate(zip(block_tables.tolist(), seq_lens.tolist())):
        blocks = table[: -(-n // block_size)]
        first = blocks[0]
        if blocks == list(range(first, first + len(blocks))):
            k, v = kv_cache[0, first : first + len(blocks)], kv_cache[1, first : first + len(blocks)]
        else:
            index = torch.tensor(blocks, device=q.device)
            k, v = kv_cache[0].index_select(0, index), kv_cache[1].index_select(0, index)
        k = k.reshape(-1, heads, dim)[:n].transpose(0, 1)  # [heads, n, dim]
        v = v.reshape(-1, heads, dim)[:n].transpose(0, 1)
        out[i] = F.scaled_dot_product_attention(q[i, :, None, :], k, v, scale=scale)[:, 0, :]
    return out
