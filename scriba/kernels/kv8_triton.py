"""The 8-bit KV cache's write on a GPU: quantize each K and V vector and store its codes and scale
in one Triton kernel, the codes those of `kv8.quantize` bit for bit.

Why one kernel: quantizing in torch first (abs, amax, two divisions, clamp, cast) put a dozen
small kernels per layer into every decode step's CUDA graph; on an H200 the fp8 step's graph
took 1.2 ms of host time to launch against the float16 step's 0.66 ms.

Why the codes are computed with integer operations: they must equal torch's round-to-nearest-even
conversions, on the GPU and in Triton's interpreter (the CPU tests). The interpreter's float to
fp8 cast is not round-to-nearest-even, so e4m3 codes are built from the float's bits here; int8
rounds by adding and subtracting 1.5 * 2**23 (exact for |x| < 2**22); both divisions are IEEE
(`div_rn`), as torch's.
"""

from __future__ import annotations

import torch

from scriba.kernels.kv8 import FP8, LARGEST, TINY
from scriba.kernels.triton_support import HAS_TRITON, next_power_of_2, tl, triton

if HAS_TRITON:
    # 1.5 * 2**23: x + ROUNDER - ROUNDER is x rounded to the nearest even integer. A constexpr:
    # compiled Triton reads no other globals (the interpreter does, so only a GPU finds this).
    ROUNDER = tl.constexpr(12582912.0)

    @triton.jit
    def _e4m3_codes(x):
        """float32 |x| <= 448 -> e4m3fn bytes (int32), rounded to nearest even as torch does."""
        bits = x.to(tl.int32, bitcast=True)
        sign = (bits >> 24) & 0x80
        magnitude = bits & 0x7FFFFFFF
        # normal codes: keep 3 of the 23 mantissa bits, rounding to even (a carry moves the
        # exponent up), then take the exponent from float32's bias (127) to e4m3's (7)
        rounded = (magnitude + 0x7FFFF + ((magnitude >> 20) & 1)) >> 20
        normal = rounded - (120 << 3)
        # below 2**-6 (float32 bits 0x3C800000) the codes are subnormal: |x| in units of 2**-9
        tiny = tl.abs(x) * 512.0
        subnormal = ((tiny + ROUNDER) - ROUNDER).to(tl.int32)
        return sign | tl.where(magnitude < 0x3C800000, subnormal, normal)

    @triton.jit
    def _quantized(x, largest, tiny, FP8_CODES: tl.constexpr):
        """x [heads, dim] float32 -> (codes as int8 [heads, dim], scales [heads])."""
        scale = tl.maximum(tl.math.div_rn(tl.max(tl.abs(x), axis=1), largest), tiny)
        scaled = tl.math.div_rn(x, scale[:, None])
        scaled = tl.minimum(tl.maximum(scaled, -largest), largest)
        if FP8_CODES:
            codes = _e4m3_codes(scaled)
        else:
            codes = ((scaled + ROUNDER) - ROUNDER).to(tl.int32)
        return codes.to(tl.int8), scale

    @triton.jit
    def _write_kv_8bit_kernel(
        k_ptr,
        v_ptr,
        cache_ptr,  # the cache's bytes, as int8
        scales_ptr,
        slot_ptr,
        stride_k_tok,
        stride_k_head,
        stride_v_tok,
        stride_v_head,
        stride_cache_kv,
        stride_scales_kv,
        heads,
        head_dim,
        largest,
        tiny,
        HEADS: tl.constexpr,
        BLOCK_D: tl.constexpr,
        FP8_CODES: tl.constexpr,
    ):
        """One program per token: its K and V vectors (every head) quantized and written at its
        slot; slot -1 (CUDA-graph padding) writes nothing."""
        token = tl.program_id(0)
        slot = tl.load(slot_ptr + token).to(tl.int64)
        head = tl.arange(0, HEADS)[:, None]
        d = tl.arange(0, BLOCK_D)[None, :]
        # (the slot broadcast as a block: Triton's interpreter takes no scalar in a mask)
        mask = (head < heads) & (d < head_dim) & ((tl.zeros([HEADS, BLOCK_D], tl.int64) + slot) >= 0)
        k = tl.load(k_ptr + token * stride_k_tok + head * stride_k_head + d, mask=mask, other=0.0)
        v = tl.load(v_ptr + token * stride_v_tok + head * stride_v_head + d, mask=mask, other=0.0)
        k_codes, k_scale = _quantized(k.to(tl.float32), largest, tiny, FP8_CODES)
        v_codes, v_scale = _quantized(v.to(tl.float32), largest, tiny, FP8_CODES)
        dst = cache_ptr + slot * heads * head_dim + head * head_dim + d  # the cache is contiguous
        tl.store(dst, k_codes, mask=mask)
        tl.store(dst + stride_cache_kv, v_codes, mask=mask)
        at = scales_ptr + slot * heads + tl.arange(0, HEADS)
        written = (tl.arange(0, HEADS) < heads) & ((tl.zeros([HEADS], tl.int64) + slot) >= 0)
        tl.store(at, k_scale, mask=written)
        tl.store(at + stride_scales_kv, v_scale, mask=written)


def write_kv_cache_8bit_triton(
    k: torch.Tensor,  # [tokens, heads, head_dim], last dim contiguous
    v: torch.Tensor,  # [tokens, heads, head_dim]
    kv_cache: torch.Tensor,  # [2, blocks, block_size, heads, head_dim] fp8 or int8, contiguous
    slot_mapping: torch.Tensor,  # [tokens] int; -1 skips the token
    scales: torch.Tensor,  # [2, blocks, block_size, heads] float32, contiguous
) -> None:
    """What `kv8.write_kv_cache_8bit_ref` writes (codes and scales), in one kernel; the caller
    (`write_kv_cache_triton`) has checked the arguments."""
    heads, dim = kv_cache.shape[3:]
    _write_kv_8bit_kernel[(k.shape[0],)](
        k,
        v,
        kv_cache.view(torch.int8),
        scales,
        slot_mapping,
        k.stride(0),
        k.stride(1),
        v.stride(0),
        v.stride(1),
        kv_cache.stride(0),
        scales.stride(0),
        heads,
        dim,
        LARGEST[kv_cache.dtype],
        TINY,
        HEADS=next_power_of_2(heads),
        BLOCK_D=next_power_of_2(dim),
        FP8_CODES=kv_cache.dtype == FP8,
    )
