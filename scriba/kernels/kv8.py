"""An 8-bit KV cache: each cached K or V vector (one token, one head) stored as 8-bit codes
times a scale of its own (`scales` [2, blocks, block_size, heads] float32 beside each layer's
cache): e4m3 floats (kv_cache_dtype="fp8", float8_e4m3fn, the vector's largest |value| at
448) or int8 (kv_cache_dtype="int8", symmetric, the largest at 127).

Why a scale per vector, not per block or head: a self-attention block fills a token at a time,
so no block-wide scale can be known when its first token is written; per vector, every write
(a cross-attention prefill of 1,500 positions, a decode step's one token) is quantized on its
own, and a block read back is the same wherever it moved (copies and swaps carry the scales).
The scales cost 4 bytes per 64 (Whisper's head_dim). Readers dequantize (code * scale) in
float32; decode attention then reads a quarter of a float32 cache's bytes.
"""

from __future__ import annotations

import torch

FP8 = torch.float8_e4m3fn
QUANTIZED_DTYPES = (FP8, torch.int8)
LARGEST = {FP8: 448.0, torch.int8: 127.0}  # the code a vector's largest |value| maps to
TINY = 1e-12  # a vector of zeros keeps a positive scale


def is_quantized(dtype: torch.dtype) -> bool:
    """Whether a cache of this dtype holds codes with a scale per vector (this module's)."""
    return dtype in QUANTIZED_DTYPES


def new_kv_scales(
    num_blocks: int, block_size: int, heads: int, device="cpu", pin_memory: bool = False
):
    """[2, blocks, block_size, heads] float32 ones."""
    shape = (2, num_blocks, block_size, heads)
    return torch.ones(shape, dtype=torch.float32, device=device, pin_memory=pin_memory)


def quantize(x: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """x [..., head_dim] -> (codes in `dtype` [..., head_dim], scales float32 [...]): each
    vector divided by its scale, its largest |value| / LARGEST, and rounded (to nearest)."""
    x = x.float()
    scale = (x.abs().amax(-1) / LARGEST[dtype]).clamp_min_(TINY)
    scaled = x / scale[..., None]
    if dtype == torch.int8:
        return scaled.round_().clamp_(-LARGEST[dtype], LARGEST[dtype]).to(torch.int8), scale
    return scaled.clamp_(-LARGEST[dtype], LARGEST[dtype]).to(dtype), scale


def write_kv_cache_8bit_ref(
    k: torch.Tensor,  # [tokens, heads, head_dim]
    v: torch.Tensor,  # [tokens, heads, head_dim]
    kv_cache: torch.Tensor,  # [2, blocks, block_size, heads, head_dim] quantized
    scales: torch.Tensor,  # [2, blocks, block_size, heads] float32
    slot_mapping: torch.Tensor,  # [tokens] int
) -> None:
    """Quantize k and v vector by vector and write codes and scales at their slots."""
    heads, dim = kv_cache.shape[3:]
    slots = slot_mapping.long()
    for i, x in enumerate((k, v)):
        codes, scale = quantize(x, kv_cache.dtype)
        # as bytes (the CPU has no index_put for float8), by block and offset (a head-major cache's
        # blocks are not one stride apart)
        block, offset = slots.div(kv_cache.shape[2], rounding_mode="floor"), slots % kv_cache.shape[2]
        kv_cache[i].view(torch.int8)[block, offset] = codes.view(torch.int8)
        scales[i].view(-1, heads).index_copy_(0, slots, scale)


def dequantized(kv: torch.Tensor, kv_scales: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    """Blocks of a quantized cache, [..., blocks, block_size, heads, head_dim], in `dtype`, given
    their scales [..., blocks, block_size, heads]."""
    return (kv.to(torch.float32) * kv_scales[..., None]).to(dtype)
