"""An 8-bit (e4m3) KV cache: values stored as float8_e4m3fn times a scale per block, head and
K-or-V (`scales` [2, blocks, heads] float32 beside each layer's cache).

Cross-attention blocks are written whole, once, at prefill: each (block, head) gets the scale
that maps its largest |value| to e4m3's largest, 448 (per-head scales fitted at prefill, finer
still per block). Self-attention blocks fill a token at a time, so no later value is known when
the first is written: they keep scale 1, the values clamped to e4m3's range (a decoder's K/V stay
far inside it), as vLLM's fp8 cache does without calibration. Readers dequantize (value * scale)
in float32; decode attention on this cache reads a quarter of a float32 cache's bytes.
"""

from __future__ import annotations

import torch

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0  # e4m3fn's largest finite value
TINY = 1e-12  # a block of zeros keeps a positive scale


def new_kv_scales(num_blocks: int, heads: int, device="cpu", pin_memory: bool = False) -> torch.Tensor:
    """[2, blocks, heads] of ones."""
    return torch.ones((2, num_blocks, heads), dtype=torch.float32, device=device, pin_memory=pin_memory)


def write_kv_cache_fp8_ref(
    k: torch.Tensor,  # [tokens, heads, head_dim]
    v: torch.Tensor,  # [tokens, heads, head_dim]
    kv_cache: torch.Tensor,  # [2, blocks, block_size, heads, head_dim] float8_e4m3fn
    scales: torch.Tensor,  # [2, blocks, heads] float32
    slot_mapping: torch.Tensor,  # [tokens] int
    fit: bool,
) -> None:
    """Write k and v at their slots in 8 bits. `fit`: the tokens fill their blocks whole (a
    cross-attention prefill): each block's scales are fitted to them. Else (self-attention) a
    block's first slot resets its scales to 1 and every value is clamped to the range."""
    heads, dim = kv_cache.shape[3:]
    block_size = kv_cache.shape[2]
    slots = slot_mapping.long()
    blocks = slots // block_size
    for i, x in enumerate((k, v)):
        x = x.float()
        if fit:
            peak = x.abs().amax(-1)  # [tokens, heads]
            fitted = torch.full((scales.shape[1], heads), TINY, device=x.device)
            fitted.scatter_reduce_(0, blocks[:, None].expand(-1, heads), peak / FP8_MAX, "amax")
            scales[i].index_copy_(0, blocks, fitted[blocks])
        else:  # a block whose first slot is written here is a new self-attention block
            scales[i].index_fill_(0, blocks[slots % block_size == 0], 1.0)
        stored = (x / scales[i][blocks][:, :, None]).clamp_(-FP8_MAX, FP8_MAX).to(FP8)
        # as bytes: the CPU has no index_copy for float8
        kv_cache[i].view(torch.uint8).view(-1, heads, dim).index_copy_(0, slots, stored.view(torch.uint8))


def dequantized(kv: torch.Tensor, kv_scales: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    """Blocks of a cache, [..., blocks, block_size, heads, head_dim] float8, in `dtype`, given
    their scales [..., blocks, heads]."""
    return (kv.to(torch.float32) * kv_scales[..., :, None, :, None]).to(dtype)
