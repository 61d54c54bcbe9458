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


# A table of at least this many consecutive blocks is read in place; shorter or scattered
# tables are gathered together and attended in one batched call.
MIN_BLOCKS_IN_PLACE = 8


def paged_decode_attention_ref(
    q: torch.Tensor,  # [seqs, heads, head_dim]
    kv_cache: torch.Tensor,  # [2, blocks, block_size, heads, head_dim]
    block_tables: torch.Tensor,  # [seqs, max_blocks] int
    seq_lens: torch.Tensor,  # [seqs] int, >= 1
    scale: float,
) -> torch.Tensor:  # [seqs, heads, head_dim]
    """Long tables of consecutive blocks (cross-attention tables are allocated as runs) are
    read as slices of the cache, one sequence at a time, with no copy. The other sequences'
    blocks are gathered into one padded batch, masked by length."""
    check_paged_args(q, kv_cache, block_tables, seq_lens)
    block_size = kv_cache.shape[2]
    out = torch.empty_like(q)
    gathered: list[int] = []
    for i, (table, n) in enumerate(zip(block_tables.tolist(), seq_lens.tolist())):
        blocks = table[: -(-n // block_size)]
        first = blocks[0]
        if len(blocks) >= MIN_BLOCKS_IN_PLACE and blocks == list(range(first, first + len(blocks))):
            out[i] = _attend_slice(q[i], kv_cache[:, first : first + len(blocks)], n, scale)
        else:
            gathered.append(i)
    if gathered:
        index = torch.tensor(gathered, device=q.device)
        out[index] = _attend_gathered(q[index], kv_cache, block_tables[index], seq_lens[index], scale)
    return out


def _attend_slice(q: torch.Tensor, kv: torch.Tensor, n: int, scale: float) -> torch.Tensor:
    """q [heads, dim] over the first n positions of kv [2, blocks, block_size, heads, dim]."""
    heads, dim = q.shape
    k = kv[0].reshape(-1, heads, dim)[:n].transpose(0, 1)[None]  # [1, heads, n, dim]
    v = kv[1].reshape(-1, heads, dim)[:n].transpose(0, 1)[None]
    return F.scaled_dot_product_attention(q[None, :, None, :], k, v, scale=scale)[0, :, 0, :]


def _attend_gathered(q, kv_cache, block_tables, seq_lens, scale) -> torch.Tensor:
    num_seqs, heads, dim = q.shape
    max_blocks = int(seq_lens.max().item() + kv_cache.shape[2] - 1) // kv_cache.shape[2]
    index = block_tables[:, :max_blocks].flatten().long()
    shape = (num_seqs, -1, heads, dim)
    k = kv_cache[0].index_select(0, index).view(shape).transpose(1, 2)  # [seqs, heads, len, dim]
    v = kv_cache[1].index_select(0, index).view(shape).transpose(1, 2)
    mask = torch.arange(k.shape[2], device=q.device)[None, :] < seq_lens[:, None]
    return F.scaled_dot_product_attention(q[:, :, None, :], k, v, attn_mask=mask[:, None, None, :], scale=scale)[:, :, 0, :]
