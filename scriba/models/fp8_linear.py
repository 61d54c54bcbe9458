"""An audio model's encoder products in fp8 (EngineConfig.encoder_quantization="fp8"), for a GPU's
fp8 tensor cores.

On an H100 an admission's device time is mostly the encoder's matrix products (whisper-large-v3's
shape, waves of 10 windows: 0.82 s of 1.54), and e4m3 products run
at twice float16's rate there. The encoder's feed-forward layers (FP8_LAYERS) become `Fp8Linear`s:
weights as e4m3 codes with a scale per output channel, activations quantized on each call with a
scale per row (computed on the device: no host sync, CUDA graphs capture it; a row's codes do not
depend on its batch), the product by torch._scaled_mm. The decoder stays in the compute dtype.
On the CPU the same arithmetic runs (torch._scaled_mm has a CPU kernel): for the tests, and to
measure the precision on real weights.
"""

from __future__ import annotations

import functools

import torch
from torch import nn

from scriba.kernels.fp8_rows import quantize_rows_fp8
from scriba.kernels.kv8 import FP8, quantize
from scriba.models.quantize import _replace

ENCODER_QUANTIZATIONS = ("fp8",)
# Which of the encoder's products: the feed-forward ones, 2/3 of its layers' product FLOPs. Every
# e4m3 product errs by a few percent (3 mantissa bits on both sides); the attention projections and
# the cross K/V projections err more downstream (base, jfk's window, the cross K/V's relative error:
# fc1 and fc2 in fp8 4.0%, with qkv_proj too 7.4%, everything 10.3%; WER over dev_speech's 24 short
# clips 0.0584 in float32, 0.0657 with everything in fp8).
FP8_LAYERS = ("fc1", "fc2")


class Fp8Linear(nn.Module):
    """x [..., in] -> x W^T + b [..., out] in x's dtype, W as e4m3 codes times a scale per output
    channel, x quantized per row."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        codes, scales = quantize(linear.weight.detach(), FP8)  # [out, in], [out]
        self.register_buffer("weight_t", codes.t())  # [in, out], column-major (as _scaled_mm takes it)
        self.register_buffer("weight_scales", scales[None, :].contiguous())  # [1, out] float32
        self.out_features = linear.out_features
        # the product's dtype, probed here once; the bias kept in it (an epilogue of the product)
        self.product_dtype = product_dtype(linear.weight.device.type, linear.weight.dtype)
        bias = None if linear.bias is None else linear.bias.detach().to(self.product_dtype)
        self.register_buffer("bias", bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        codes, scales = quantize_rows_fp8(x.reshape(-1, x.shape[-1]))
        out = torch._scaled_mm(
            codes,
            self.weight_t,
            scale_a=scales,
            scale_b=self.weight_scales,
            bias=self.bias,
            out_dtype=self.product_dtype,
        )
        return out.to(x.dtype).view(*x.shape[:-1], self.out_features)


@functools.cache
def product_dtype(device_type: str, dtype: torch.dtype) -> torch.dtype:
    """The output dtype torch._scaled_mm gives with row-wise scales and a bias: `dtype` where it
    can, else bfloat16 (some CUDA builds' row-wise kernels write bfloat16 only). Probed once, on a
    tiny product, when the layers are built (never inside a CUDA-graph capture)."""
    a = torch.zeros((16, 16), dtype=FP8, device=device_type)
    b = torch.zeros((16, 16), dtype=FP8, device=device_type).t()
    ones = torch.ones((16, 1), device=device_type), torch.ones((1, 16), device=device_type)
    try:
        torch._scaled_mm(
            a,
            b,
            scale_a=ones[0],
            scale_b=ones[1],
            bias=torch.zeros(16, dtype=dtype, device=device_type),
            out_dtype=dtype,
        )
        return dtype
    except (RuntimeError, NotImplementedError):
        return torch.bfloat16


def quantize_encoder_fp8(model: nn.Module) -> nn.Module:
    """`model`'s encoder feed-forward layers (fc1, fc2) as Fp8Linear, in place; returns it."""
    names = [n for n, m in model.named_modules() if isinstance(m, nn.Linear)]
    for name in names:
        if name.startswith("model.encoder.") and name.endswith(FP8_LAYERS):
            _replace(model, name, Fp8Linear(model.get_submodule(name)))
    return model
