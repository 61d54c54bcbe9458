"""The decoder's float32 products on the CPU with their weights laid out once, for oneDNN.

PyTorch's CPU float32 `linear` (MKL's sgemm) copies the whole weight into its blocked layout at
every call; at a decode step's few rows that copy is most of the product. oneDNN, through
PyTorch's own mkldnn ops, multiplies by a weight kept in its layout, made once here. Measured on
the 2-core AVX2 Zen 3 host (torch 2.13, one call, best of 20): [4, 1024] x [1024, 1024] 0.62-0.70
ms against 0.42-0.47 ms; [16, 1024] x [1024, 4096] 5.1 against 3.5; the logits [4, 1024] x [1024,
50264] 63 against 30; but small layers lose (its call costs ~0.1 ms more). The results differ
from sgemm's by the order of summation
only. The encoder's products (hundreds of rows a call) gain nothing and keep sgemm, and so does
the cross-attention K/V projection (the encoder's rows, once a request).

Used where the engine computes in float32 on the CPU without quantization (`packs`).
"""

from __future__ import annotations

import torch
from torch import nn


class PackedLinear(nn.Module):
    """y = x @ weight.T + bias, the weight [out, in] held in oneDNN's layout."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None):
        super().__init__()
        self.out_features = weight.shape[0]
        self.weight = weight.detach().float().to_mkldnn()
        self.bias = None if bias is None else bias.detach().float().to_mkldnn()

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., in] float32 -> [..., out]
        rows = x.reshape(-1, x.shape[-1]).contiguous().to_mkldnn()
        y = torch._C._nn.mkldnn_linear(rows, self.weight, self.bias).to_dense()
        return y.reshape(*x.shape[:-1], self.out_features)


def packs(device: str, dtype: torch.dtype, quantization: str | None) -> bool:
    """Whether the engine's model gets packed decoder products (float32 on the CPU, no quantization)."""
    return (
        device == "cpu"
        and dtype == torch.float32
        and quantization is None
        and torch.backends.mkldnn.is_available()
    )


def worth_packing(linear: nn.Linear) -> bool:
    """oneDNN's call costs ~0.1 ms more than sgemm's: packing pays from ~1M weights with 1,024
    inputs (1,024 x 1,024 at 4 rows: 1.33x); 768 x 768 lost 11%, tiny.en's 384-wide layers 13-70%."""
    return linear.in_features >= 1024 and linear.weight.numel() >= 1 << 20


def pack_decoder(model: nn.Module) -> nn.Module:
    """Replace the decoder's large Linear layers (`worth_packing`; never its cross-attention K/V
    projection) with PackedLinears, and give the logits a packed copy of the output projection
    (`model.packed_head`, 1.14-2.7x at 1-64 rows; a tied embedding stays as it is for the token
    lookup). In place."""
    for name, linear in [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Linear)]:
        decoder = name.startswith("model.decoder.") and not name.endswith("encoder_attn.kv_proj")
        if decoder and worth_packing(linear):
            parent, _, attr = name.rpartition(".")
            setattr(model.get_submodule(parent), attr, PackedLinear(linear.weight, linear.bias))
    weight, bias = model.output_projection()
    model.packed_head = PackedLinear(weight, bias)
    return model
