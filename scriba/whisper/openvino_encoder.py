"""Whisper's encoder executed by OpenVINO's CPU runtime: log-mel features in, encoder states out.

The encoder is a pure function of the log-mel (no cache, no scheduling), so a graph runtime
may run it while the paged engine keeps generating. The graph is built here, op by op, from the
model's own parameters (no tracing: building takes ~0.1 s, tracing 2+ s), and compiled for the
host by what OpenVINO reports it can do:
  - "bf16" where the CPU has bfloat16 dot products (AVX-512 BF16, AMX): float weights,
    bfloat16 arithmetic (tiny.en, one 30 s window, 2 cores of an AVX-512 Zen 4:
    ~105 ms against 186 ms for Scriba's int8 torch encoder; 0.8% relative error in the states);
  - "int8": int8 weights (per output channel) with activations quantized on the fly by
    OpenVINO's dynamic quantization, float32 arithmetic around them;
  - "f32": float weights and float32 arithmetic (the graph checked against the torch encoder to
    float32 rounding).
Elsewhere int8 or f32, whichever is faster on the machine: measured once, remembered
(whisper/encoder_precision.py).
OpenVINO is used because it is the CPU runtime made for exactly this (oneDNN's brgemm kernels,
a fused attention op, bfloat16 and VNNI where the CPU has them, ARM too).
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from scriba.kernels.cpu_features import native_bfloat16
from scriba.whisper.encoder_precision import fastest, machine_key

PRECISIONS = ("bf16", "int8", "f32")


def import_openvino():
    """openvino, imported without its usage telemetry: `import openvino` sends an analytics event
    over the network unless the user has opted out (openvino-telemetry, a dependency of the
    wheel). Scriba uses the runtime only and sends nothing: with the telemetry module marked
    missing, OpenVINO falls back to its own no-op stub."""
    sys.modules.setdefault("openvino_telemetry", None)
    import openvino

    return openvino


def native_bf16(core) -> bool:
    """OpenVINO's CPU plugin computes in bfloat16 natively here (and the kernels' choices are not
    capped below it: kernels/cpu_features.py)."""
    return "BF16" in core.get_property("CPU", "OPTIMIZATION_CAPABILITIES") and native_bfloat16()


class OpenVINOEncoder:
    """Callable: features [num_windows, mel_bins, frames] (float32) -> a list of float32 outputs:
    [the states [num_windows * positions, d_model]], as WhisperEncoder.forward; or, built with
    the decoder's cross-attention K/V projections (`cross_kv`), each decoder layer's K/V of those
    states [num_windows * positions, 2 * d_model] in the same graph, so the runtime that makes
    the states also makes the 1,500-row products of every decoder layer from them (tiny.en: 4
    projections of 1,500 x 384 -> 768 a window, 10+ ms in PyTorch's int8 layers on 2 cores).
    Without a `precision`, the host's (whisper/encoder_precision.py: bf16 where native, else the
    faster of int8 and f32, measured once per machine)."""

    def __init__(
        self,
        encoder: torch.nn.Module,
        num_threads: int,
        precision: str | None = None,
        cross_kv: list[torch.nn.Linear] | None = None,
    ):
        if precision is not None and precision not in PRECISIONS:
            raise ValueError(f"OpenVINO encoder precision must be one of {PRECISIONS}, got {precision!r}")
        ov = import_openvino()
        core = ov.Core()

        def build(chosen: str):
            return _compile(
                core, build_encoder_graph(encoder, chosen == "int8", cross_kv), chosen, num_threads
            )

        if precision is not None:
            self.precision, self.compiled = precision, build(precision)
        else:
            key = machine_key(ov.get_version(), encoder, num_threads, bool(cross_kv))
            mel_bins, frames = encoder.conv1.weight.shape[1], 2 * encoder.embed_positions.weight.shape[0]
            self.precision, self.compiled = fastest(build, native_bf16(core), mel_bins, frames, key)
        self.request = self.compiled.create_infer_request()  # the engine's one thread uses it
        self.projects_cross_kv = bool(cross_kv)

    def __call__(self, features: torch.Tensor) -> list[torch.Tensor]:
        """The outputs are views of the request's own buffers (no copy of tiny.en's 18 MB of K/V),
        valid until the next call: the engine writes them to its cache within the same step."""
        x = features.detach().to(torch.float32).contiguous().numpy()
        outputs = self.request.infer([x], share_outputs=True)
        return [torch.from_numpy(outputs[i]) for i in range(len(self.compiled.outputs))]


def _compile(core, graph, precision: str, num_threads: int):
    settings = {
        "INFERENCE_PRECISION_HINT": "bf16" if precision == "bf16" else "f32",
        # OpenVINO's default group size (32) for the int8 weights' dynamic quantization
        "DYNAMIC_QUANTIZATION_GROUP_SIZE": 32 if precision == "int8" else 0,
        "INFERENCE_NUM_THREADS": num_threads,
        "PERFORMANCE_HINT": "LATENCY",
    }
    return core.compile_model(graph, "CPU", settings)


def build_encoder_graph(encoder: torch.nn.Module, int8_weights: bool, cross_kv: list | None = None):
    """The OpenVINO model of a Scriba WhisperEncoder (float weights: build it before int8
    quantization replaces them), its output the states [B * P, d_model], or with `cross_kv`
    (Linears d_model -> 2 * d_model) their products, one output each."""
    ov = import_openvino()
    from openvino import opset13 as op

    conv1, conv2 = encoder.conv1, encoder.conv2
    mel_bins = conv1.weight.shape[1]
    features = op.parameter(ov.PartialShape([-1, mel_bins, -1]), ov.Type.f32, name="features")
    hidden = _conv_gelu(op, features, conv1, stride=1)
    hidden = _conv_gelu(op, hidden, conv2, stride=2)  # [B, d, P]
    hidden = op.transpose(hidden, _const(op, np.array([0, 2, 1], np.int64)))  # [B, P, d]
    hidden = op.add(hidden, _const(op, encoder.embed_positions.weight))
    for layer in encoder.layers:
        hidden = _encoder_layer(op, hidden, layer, int8_weights)
    hidden = _layer_norm(op, hidden, encoder.layer_norm)
    d_model = encoder.layer_norm.weight.shape[0]
    out = op.reshape(hidden, _const(op, np.array([-1, d_model], np.int64)), False)  # [B * P, d]
    outputs = [_linear(op, out, linear, int8_weights) for linear in cross_kv] if cross_kv else [out]
    return ov.Model(outputs, [features], "whisper_encoder")


def _encoder_layer(op, hidden, layer, int8_weights: bool):
    attn = layer.self_attn
    heads, head_dim = attn.attn.num_heads, attn.attn.head_dim
    qkv = _linear(op, _layer_norm(op, hidden, layer.self_attn_layer_norm), attn.qkv_proj, int8_weights)
    split = op.split(qkv, _const(op, np.array(-1, np.int64)), 3)
    to_heads = _const(op, np.array([0, 0, heads, head_dim], np.int64))
    swap = _const(op, np.array([0, 2, 1, 3], np.int64))
    q, k, v = (op.transpose(op.reshape(split.output(i), to_heads, True), swap) for i in range(3))
    scale = _const(op, np.array(attn.attn.scale, np.float32))
    context = op.scaled_dot_product_attention(q, k, v, scale=scale, causal=False)  # [B, H, P, D]
    merged = op.reshape(op.transpose(context, swap), _const(op, np.array([0, 0, -1], np.int64)), True)
    hidden = op.add(hidden, _linear(op, merged, attn.out_proj, int8_weights))
    ffn = _linear(op, _layer_norm(op, hidden, layer.final_layer_norm), layer.fc1, int8_weights)
    ffn = _linear(op, op.gelu(ffn, "erf"), layer.fc2, int8_weights)
    return op.add(hidden, ffn)


def _conv_gelu(op, x, conv: torch.nn.Conv1d, stride: int):
    (pad,) = conv.padding
    y = op.convolution(x, _const(op, conv.weight), [stride], [pad], [pad], [1])
    return op.gelu(op.add(y, _const(op, conv.bias.detach().view(1, -1, 1))), "erf")


def _layer_norm(op, x, norm: torch.nn.LayerNorm):
    axis = _const(op, np.array([-1], np.int64))
    normed = op.mvn(x, axis, True, float(norm.eps), "inside_sqrt")
    return op.add(op.multiply(normed, _const(op, norm.weight)), _const(op, norm.bias))


def _linear(op, x, linear: torch.nn.Linear, int8_weights: bool):
    """x @ W^T + b. With int8_weights: W as int8 [out, in] times a float scale per output row,
    the pattern OpenVINO keeps compressed and multiplies with dynamically quantized inputs."""
    weight = linear.weight.detach().float()
    if int8_weights:
        scale = weight.abs().amax(1, keepdim=True).clamp_min(1e-30) / 127
        q = _const(op, torch.round(weight / scale).to(torch.int8))
        weight_node = op.multiply(op.convert(q, "f32"), _const(op, scale))
    else:
        weight_node = _const(op, weight)
    y = op.matmul(x, weight_node, False, True)
    return y if linear.bias is None else op.add(y, _const(op, linear.bias))


def _const(op, value):
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    return op.constant(np.require(value, requirements="C"))  # keeps a scalar 0-d
