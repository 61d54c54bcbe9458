"""Rows of activations as fp8 (e4m3) codes with a scale each, the left operand of an fp8 matrix
product (models/fp8_linear.py): on a GPU one Triton kernel writes each row's codes and scale (the
torch form is a dozen passes over the activations: abs, amax, division, clamp, cast); the codes are
those of `kv8.quantize`'s arithmetic done exactly (kv8_triton's rounding). Elsewhere, torch.
"""

from __future__ import annotations

import torch

from scriba.kernels.kv8 import FP8, LARGEST, TINY, quantize
from scriba.kernels.triton_support import HAS_TRITON, next_power_of_2, tl, triton

# Columns a program reads at a time: a whole row of the encoder's widest activations (5,120 wide)
# in registers spilled to local memory and ran at ~1/4 of the memory's speed (an H200's admission:
# 144 us a call, more than fp8 saved in the products). A row is read
# twice in chunks instead: for its largest |value|, then for its codes (the second read from cache).
CHUNK = 1024

if HAS_TRITON:
    from scriba.kernels.kv8_triton import _e4m3_codes

    @triton.jit
    def _quantize_rows_kernel(
        x_ptr, codes_ptr, scales_ptr, stride_x, cols, largest, tiny, CHUNK: tl.constexpr
    ):
        """One program per row: its codes (as int8 bytes) and its scale, as kv8_triton's
        _quantized (IEEE divisions, round-to-nearest-even codes) over chunks of the row."""
        row = tl.program_id(0).to(tl.int64)
        col = tl.arange(0, CHUNK)
        x_row = x_ptr + row * stride_x
        largest_seen = tl.zeros([CHUNK], dtype=tl.float32)
        for start in range(0, cols, CHUNK):
            x = tl.load(x_row + start + col, mask=start + col < cols, other=0.0).to(tl.float32)
            largest_seen = tl.maximum(largest_seen, tl.abs(x))
        scale = tl.maximum(tl.math.div_rn(tl.max(largest_seen, axis=0), largest), tiny)
        for start in range(0, cols, CHUNK):
            mask = start + col < cols
            x = tl.load(x_row + start + col, mask=mask, other=0.0).to(tl.float32)
            scaled = tl.minimum(tl.maximum(tl.math.div_rn(x, scale), -largest), largest)
            tl.store(codes_ptr + row * cols + start + col, _e4m3_codes(scaled).to(tl.int8), mask=mask)
        tl.store(scales_ptr + row, scale)


def quantize_rows_fp8(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x [rows, cols] -> (codes [rows, cols] float8_e4m3fn, scales [rows, 1] float32): each row
    divided by its largest |value| / 448. The Triton kernel on a GPU, torch elsewhere."""
    if x.is_cuda and HAS_TRITON:
        return quantize_rows_fp8_triton(x)
    codes, scales = quantize(x, FP8)
    return codes, scales[:, None]


def quantize_rows_fp8_triton(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """quantize_rows_fp8 in one kernel (its last dimension contiguous); on CPU tensors under
    Triton's interpreter (the tests)."""
    rows, cols = x.shape
    if x.stride(1) != 1:
        x = x.contiguous()
    codes = torch.empty((rows, cols), dtype=FP8, device=x.device)
    scales = torch.empty((rows, 1), dtype=torch.float32, device=x.device)
    if rows:
        _quantize_rows_kernel[(rows,)](
            x,
            codes.view(torch.int8),
            scales,
            x.stride(0),
            cols,
            LARGEST[FP8],
            TINY,
            CHUNK=min(CHUNK, next_power_of_2(cols)),
        )
    return codes, scales
