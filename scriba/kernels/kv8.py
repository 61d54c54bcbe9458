"""An 8-bit KV cache: each cached K or V vector (one token, one head) stored as 8-bit codes
times a scale of its own (`scales` [2, blocks, block_size, heads] float32 beside each layer's
cache): e4m3 floats (kv_cache_dtype="fp8", float8_e4m3fn, the vector's largest |value| at
448) or int8 (kv_cache_dtype="int8", symmetric, the largest at 127); or 4-bit codes
two a byte (PACKED4, symmetric, the largest at 7): a vector's first half in the low nibbles of its
head_dim / 2 bytes, its second half in the high ones, each code + 8, so that a reader unpacks two
contiguous halves. Why 4 bits: a GPU's batched decode step is bound by reading every sequence's
cross K/V; this halves the 8-bit bytes read again. kv_cache_dtype="int4" keeps only the cross K/V
so (`packed_view`: the first half of each block's bytes of an int8 cache), the self-attention's in
int8: 4-bit self K/V cost base 0.017 WER on short clips, 4-bit cross K/V 0.0025
(benchmarks/measure_cross_kv_bits.py), and the self K/V are a small part of a step's reads.

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
PACKED4 = torch.uint8  # the 4-bit cache's bytes, two codes each
QUANTIZED_DTYPES = (FP8, torch.int8, PACKED4)
LARGEST = {FP8: 448.0, torch.int8: 127.0, PACKED4: 7.0}  # the code a vector's largest |value| maps to
TINY = 1e-12  # a vector of zeros keeps a positive scale


def is_quantized(dtype: torch.dtype) -> bool:
    """Whether a cache of this dtype holds codes with a scale per vector (this module's)."""
    return dtype in QUANTIZED_DTYPES


def stored_dim(head_dim: int, dtype: torch.dtype) -> int:
    """The cache's last dimension for vectors of head_dim: half of it when packed."""
    if dtype != PACKED4:
        return head_dim
    if head_dim % 2:
        raise ValueError(f"a 4-bit cache packs two codes a byte: head_dim must be even, got {head_dim}")
    return head_dim // 2


def storage_dtype(dtype: torch.dtype) -> torch.dtype:
    """What an engine allocates for a cache of `dtype`: int8 under PACKED4 (kv_cache_dtype="int4"),
    whose cross-attention reads the 4-bit `packed_view`."""
    return torch.int8 if dtype == PACKED4 else dtype


def packed_view(cache: torch.Tensor) -> torch.Tensor:
    """[2, blocks, block_size, heads, head_dim] int8 (new_kv_cache's: block- or head-major) ->
    [2, blocks, block_size, heads, head_dim / 2] PACKED4 in the first half of each block's bytes:
    the strides that step inside a block are halved. Why a block's half, not each vector's: a GPU
    reads memory in 64-byte pieces, so Whisper's 32-byte vectors 64 bytes apart cost the 8-bit
    cache's reads (an H200: 378 us a layer at batch 256, fp8's 316; benchmarks/NOTES.md)."""
    kv, block, token, head, _ = cache.stride()
    inside = [s // 2 if s < block else s for s in (token, head)]
    shape = (*cache.shape[:-1], stored_dim(cache.shape[-1], PACKED4))
    return cache.view(PACKED4).as_strided(shape, (kv, block, *inside, 1), cache.storage_offset())


def view_for(cache: torch.Tensor, dtype: torch.dtype, cross: bool) -> torch.Tensor:
    """The view of a layer's cache (allocated as storage_dtype(dtype)) that its self- or
    cross-attention reads: under PACKED4 the cross-attention's packed_view, else the cache."""
    return packed_view(cache) if cross and dtype == PACKED4 else cache


def head_dim_of(kv_cache: torch.Tensor) -> int:
    """The vectors' head_dim of a cache [..., stored_dim]."""
    return kv_cache.shape[-1] * (2 if kv_cache.dtype == PACKED4 else 1)


def pack4(codes: torch.Tensor) -> torch.Tensor:
    """int8 codes in [-7, 7] [..., head_dim] -> bytes [..., head_dim / 2] (PACKED4)."""
    low, high = (codes.to(torch.int16) + 8).chunk(2, dim=-1)
    return (low | (high << 4)).to(PACKED4)


def unpack4(packed: torch.Tensor) -> torch.Tensor:
    """bytes [..., head_dim / 2] (PACKED4) -> int8 codes [..., head_dim]."""
    as_int = packed.to(torch.int16)
    return (torch.cat([as_int & 15, as_int >> 4], dim=-1) - 8).to(torch.int8)


def new_kv_scales(
    num_blocks: int, block_size: int, heads: int, device="cpu", pin_memory: bool = False, halves: int = 2
):
    """[2, blocks, block_size, heads] float32 ones ([1, ...] with halves=1)."""
    shape = (halves, num_blocks, block_size, heads)
    return torch.ones(shape, dtype=torch.float32, device=device, pin_memory=pin_memory)


def quantize(x: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """x [..., head_dim] -> (codes in `dtype` [..., head_dim], scales float32 [...]): each
    vector divided by its scale, its largest |value| / LARGEST, and rounded (to nearest)."""
    x = x.float()
    scale = (x.abs().amax(-1) / LARGEST[dtype]).clamp_min_(TINY)
    scaled = x / scale[..., None]
    if dtype in (torch.int8, PACKED4):  # (4-bit codes as int8; pack4 makes the bytes)
        return scaled.round_().clamp_(-LARGEST[dtype], LARGEST[dtype]).to(torch.int8), scale
    return scaled.clamp_(-LARGEST[dtype], LARGEST[dtype]).to(dtype), scale


def write_kv_cache_8bit_ref(
    k: torch.Tensor,  # [tokens, heads, head_dim]
    v: torch.Tensor,  # [tokens, heads, head_dim]
    kv_cache: torch.Tensor,  # [2, blocks, block_size, heads, stored_dim] quantized
    scales: torch.Tensor,  # [2, blocks, block_size, heads] float32
    slot_mapping: torch.Tensor,  # [tokens] int
) -> None:
    """Quantize k and v vector by vector and write codes and scales at their slots."""
    heads, dim = kv_cache.shape[3:]
    slots = slot_mapping.long()
    for i, x in enumerate((k, v)):
        codes, scale = quantize(x, kv_cache.dtype)
        if kv_cache.dtype == PACKED4:
            codes = pack4(codes)
        # as bytes (the CPU has no index_put for float8), by block and offset (packed_view's blocks
        # lie further apart than their tokens' stride)
        block, offset = slots.div(kv_cache.shape[2], rounding_mode="floor"), slots % kv_cache.shape[2]
        kv_cache[i].view(torch.int8)[block, offset] = codes.view(torch.int8)
        scales[i].view(-1, heads).index_copy_(0, slots, scale)


def dequantized(kv: torch.Tensor, kv_scales: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    """Blocks of a quantized cache, [..., blocks, block_size, heads, stored_dim], in `dtype` as
    [..., head_dim], given their scales [..., blocks, block_size, heads]."""
    if kv.dtype == PACKED4:
        kv = unpack4(kv)
    return (kv.to(torch.float32) * kv_scales[..., None]).to(dtype)
