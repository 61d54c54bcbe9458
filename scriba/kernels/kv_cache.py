"""The paged KV cache: writing K/V by slot, copying blocks (copy-on-write), swapping.

A layer's cache is one tensor [2, num_blocks, block_size, heads, head_dim] (K then V); the
self- and cross-attention of a decoder layer share it, since a block belongs to one table.
Slot s is block s // block_size, offset s % block_size.
"""

from __future__ import annotations

import torch


def check_write_args(k: torch.Tensor, v: torch.Tensor, kv_cache: torch.Tensor, slot_mapping: torch.Tensor) -> None:
    if kv_cache.dim() != 5 or kv_cache.shape[0] != 2:
        raise ValueError(f"kv_cache must be [2, blocks, block_size, heads, head_dim], got {tuple(kv_cache.shape)}")
    if k.shape != v.shape or k.shape[1:] != kv_cache.shape[3:]:
        raise ValueError(f"k/v {tuple(k.shape)} do not fit cache {tuple(kv_cache.shape)}")
    if slot_mapping.shape != (k.shape[0],):
        raise ValueError(f"slot_mapping must be [{k.shape[0]}], got {tuple(slot_mapping.shape)}")


def write_kv_cache_ref(
    k: torch.Tensor,  # [tokens, heads, head_dim]
    v: torch.Tensor,  # [tokens, heads, head_dim]
    kv_cache: torch.Tensor,  # [2, blocks, block_size, heads, head_dim]
    slot_mapping: torch.Tensor,  # [tokens] int
) -> None:
    check_write_args(k, v, kv_cache, slot_mapping)
    heads, dim = kv_cache.shape[3:]
    slots = slot_mapping.long()
    kv_cache[0].view(-1, heads, dim).index_copy_(0, slots, k)
    kv_cache[1].view(-1, heads, dim).index_copy_(0, slots, v)


def copy_blocks(kv_caches: list[torch.Tensor], pairs: list[tuple[int, int]]) -> None:
    """Copy whole blocks src -> dst within each layer's cache (copy-on-write)."""
    if not pairs:
        return
    src = torch.tensor([s for s, _ in pairs], device=kv_caches[0].device)
    dst = torch.tensor([d for _, d in pairs], device=kv_caches[0].device)
    for cache in kv_caches:
        cache[:, dst] = cache[:, src]


def swap_blocks(src_caches: list[torch.Tensor], dst_caches: list[torch.Tensor], pairs: list[tuple[int, int]]) -> None:
    """Copy blocks between two pools (device <-> cpu), layer by layer."""
    if not pairs:
        return
    src = torch.tensor([s for s, _ in pairs], device=src_caches[0].device)
    dst = torch.tensor([d for _, d in pairs], device=dst_caches[0].device)
    for s, d in zip(src_caches, dst_caches):
        d[:, dst] = s[:, src].to(d.device)
