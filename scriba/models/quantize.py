"""int8 weights with dynamic int8 activations for a model's Linear layers and its logits, on the CPU.

Every `nn.Linear` (encoder and decoder projections, feed-forward layers) becomes a
`RowScaledLinear` around PyTorch's quantized Linear: weights stored as int8 with one scale per
output channel, activations quantized per call with one scale per row (so a request's result
does not depend on its batch), products in fbgemm's int8 kernels. The output projection
(a tied embedding, not a Linear) gets its own quantized copy, `model.quantized_head`, which
`compute_logits` uses; the embedding itself stays in float32 for the token lookup. A model
loaded from an int8 checkpoint (`model.int8_weights`, see models/loader.gather_int8) keeps the
checkpoint's own int8 weights and per-row scales instead of requantizing its float weights.

Why PyTorch's own quantized Linear: measured on this project's 2-core AVX2 CPU (torch 2.13),
it runs tiny.en's encoder GEMM [12000, 384] x [384, 1536] in 87 ms (float32: 119 ms) and its
output projection [24, 384] x [384, 51864] in 5.7 ms (float32: 22.7 ms); torchao 0.18's
Int8DynamicActivationInt8WeightConfig, eager, took 2911 ms and 190 ms for the same products.
PyTorch has deprecated these modules in favour of torchao; revisit when torchao's CPU path
is fast without torch.compile.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn
from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

from scriba.models.cpu_features import native_bfloat16

QUANTIZATIONS = ("int8",)


def quantize_int8(model: nn.Module, weight_only_decoder: bool | None = None) -> nn.Module:
    """Quantize `model` (on the CPU, float32) in place; returns it. `weight_only_decoder`: the
    decoder's Linear layers, but the cross-attention K/V projection (1,500 encoder rows a
    window), as WeightOnlyInt8Linear; None: where the CPU computes bfloat16 natively."""
    checkpoint = model.int8_weights
    weight, bias = model.output_projection()
    head_name = next((n for n, p in model.named_parameters() if p is weight), None)
    with warnings.catch_warnings():  # the deprecation notice of torch.ao's quantized modules
        warnings.simplefilter("ignore")
        linears = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Linear)]
        for name, linear in linears:
            int8 = checkpoint.get(f"{name}.weight")
            _replace(model, name, RowScaledLinear(_dynamic_linear(linear.weight, int8), linear.bias))
        model.quantized_head = RowScaledLinear(_dynamic_linear(weight, checkpoint.get(head_name)), bias)
    model.int8_weights = {}  # the int8 copies now live in the quantized modules
    if native_bfloat16() if weight_only_decoder is None else weight_only_decoder:
        for name, module in list(model.model.decoder.named_modules()):
            if isinstance(module, RowScaledLinear) and not name.endswith("encoder_attn.kv_proj"):
                _replace(model.model.decoder, name, WeightOnlyInt8Linear(module))
    return model


def _dynamic_linear(weight: torch.Tensor, int8: tuple | None = None) -> DynamicLinear:
    """PyTorch's dynamic int8 Linear (no bias) of `weight` [out, in]: a checkpoint's own int8
    weight and per-row scale (rows are int8 / scale) where given, else the float weight
    quantized per output channel as `quantize_dynamic` does. One prepack either way."""
    from torch.ao.quantization import per_channel_dynamic_qconfig

    out_features, in_features = weight.shape
    if int8 is not None:
        q, scale = int8
        zero = torch.zeros(q.shape[0], dtype=torch.long)
        qweight = torch._make_per_channel_quantized_tensor(q, 1.0 / scale.double(), zero, 0)
    else:
        observer = per_channel_dynamic_qconfig.weight()
        observer(weight.detach().float())
        scales, zeros = observer.calculate_qparams()
        qweight = torch.quantize_per_channel(weight.detach().float(), scales.double(), zeros, 0, torch.qint8)
    linear = DynamicLinear(in_features, out_features, bias_=False, dtype=torch.qint8)
    linear.set_weight_bias(qweight, None)
    return linear


class RowScaledLinear(nn.Module):
    """An int8 Linear whose activations are quantized row by row, as CTranslate2 does.

    PyTorch's dynamic Linear quantizes its whole input [rows, in] with one scale, so each row's
    rounding depends on the other rows (in the engine: on the other requests of the step), and
    one loud row coarsens them all: on the dev set that cost 0.025 WER. Here each row is divided
    by its max |x| and quantized at a fixed scale: 7 bits, [-1, 1] -> [1, 127] (fbgemm's
    reduce_range: 8-bit activations overflow its int16 pair sums on CPUs without VNNI); the
    int8 product is scaled back by the row's max.
    """

    SCALE, ZERO_POINT = 1.0 / 63, 64  # q = round(x * 63) + 64: -1 -> 1, +1 -> 127

    def __init__(self, linear: DynamicLinear, bias: torch.Tensor | None = None):
        """`linear`'s bias, if it has one, moves out of its packed weight (one more prepack);
        or `bias` is given apart."""
        super().__init__()
        weight, own_bias = linear._weight_bias()
        if own_bias is not None:
            linear.set_weight_bias(weight, None)
            bias = own_bias
        self.linear = linear  # holds the packed int8 weight
        self.packed = linear._packed_params._packed_params
        self.register_buffer("bias", None if bias is None else bias.detach())
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def weight(self) -> torch.Tensor:  # the quantized weight [out, in]
        return self.linear.weight()

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., in] -> [..., out]
        flat = x if x.dim() == 2 else x.reshape(-1, self.in_features)
        peak = flat.abs().amax(1, keepdim=True).clamp_min_(1e-30)  # [rows, 1]
        out = _int8_linear(flat / peak, self.SCALE, self.ZERO_POINT, self.packed)
        out = out.mul_(peak) if self.bias is None else torch.addcmul(self.bias, out, peak, out=out)
        return out if x.dim() == 2 else out.view(*x.shape[:-1], self.out_features)


class WeightOnlyInt8Linear(nn.Module):
    """An int8 Linear whose activations stay in bfloat16: the same int8 weights and per-channel
    scales as the RowScaledLinear it replaces, one PyTorch op (`_weight_int8pack_mm`, the int8
    weight-only kernel gpt-fast decodes with), float32 out.

    Why, for the decoder on CPUs with bfloat16 dot products: a decode step has a few rows and
    its weights are cold (the step's cross-attention K/V and the output projection pass through
    the cache between two uses of a layer). Measured on a 2-core AVX-512 BF16 Zen 4, one row,
    cache flushed: 46-53 us for tiny.en's decoder products against RowScaledLinear's 178-235
    (fbgemm quantizes, packs and dequantizes around its product). It costs ~9 us a row, so the
    encoder-side K/V projection (1,500 rows) keeps fbgemm. Each row's result is the same whatever
    rows share the call (checked bit for bit): a request's text does not depend on its batch.
    """

    def __init__(self, linear: RowScaledLinear):
        super().__init__()
        weight = linear.weight()  # per-channel quantized [out, in]
        self.register_buffer("int8_weight", weight.int_repr().contiguous())
        # The kernel's scales must be bfloat16 like its input: it gets ones, and the checkpoint's
        # float32 scales are applied to its output, so they stay exact.
        self.register_buffer("scales", weight.q_per_channel_scales().float())
        self.register_buffer("ones", torch.ones(weight.shape[0], dtype=torch.bfloat16))
        self.register_buffer("bias", linear.bias)
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def weight(self) -> torch.Tensor:  # the quantized weight [out, in], as RowScaledLinear's
        zero = torch.zeros(self.out_features, dtype=torch.long)
        return torch._make_per_channel_quantized_tensor(self.int8_weight, self.scales.double(), zero, 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., in] float32 -> [..., out] float32
        flat = x.reshape(-1, self.in_features).to(torch.bfloat16)
        out = torch._weight_int8pack_mm(flat, self.int8_weight, self.ones).float()
        out = out.mul_(self.scales) if self.bias is None else torch.addcmul(self.bias, out, self.scales)
        return out.view(*x.shape[:-1], self.out_features)


# int8 activations at a given scale and zero point, int8 weights, float32 out (fbgemm)
_int8_linear = torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32


def _replace(model: nn.Module, name: str, module: nn.Module) -> None:
    parent, _, attr = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, attr, module)
