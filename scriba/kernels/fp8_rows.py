"""Rows of activations as fp8 (e4m3) codes with a scale each, the left operand of an fp8 matrix
product (models/fp8_linear.py): on a GPU one Triton kernel reads each row once and writes its codes
and scale (the torch form is a dozen passes over the activations: abs, amax, division, clamp,
cast); the codes are `kv8.quantize`'s bit for bit (kv8_triton's rounding). Elsewhere, torch.
"""

from __future__ import annotations

import torch

from scriba.kernels.kv8 import FP8, LARGEST, TINY, quantize
from scriba.kernels.triton_support import HAS_TRITON, next_power_of_2, tl, triton

if HAS_TRITON:
    from scriba.kernels.kv8_triton import _quantized

    @triton.jit
    def _quantize_rows_kernel(
        x_ptr, codes_ptr, scales_ptr, stride_x, cols, largest, tiny, BLOCK: tl.constexpr
    ):
        """One program per row: its codes (as int8 bytes) and its scale."""
        row = tl.program_id(0).to(tl.int64)
        col = tl.arange(0, BLOCK)[None, :]
        mask = col < cols
        x = tl.load(x_ptr + row * stride_x + col, mask=mask, other=0.0).to(tl.float32)
        codes, scale = _quantized(x, largest, tiny, True)  # [1, BLOCK], [1]
        tl.store(codes_ptr + row * cols + col, codes, mask=mask)
        tl.store(scales_ptr + row + tl.arange(0, 1), scale)


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
            BLOCK=next_power_of_2(cols),
        )
    return codes, scales
