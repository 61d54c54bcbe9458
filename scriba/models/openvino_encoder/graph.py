"""Whisper's encoder as an OpenVINO model, built op by op from the model's own parameters (no
tracing: building takes ~0.1 s, tracing 2+ s): log-mel features in, the states (or every decoder
layer's cross-attention K/V of them) out. Variants: with a silent window's values
(cached_padding.py) it encodes only a window's leading positions and fills the rest from
them; as a probe it also returns every layer's self-attention keys and values."""

from __future__ import annotations

import numpy as np
import torch

from scriba.models.openvino_encoder.cached_padding import SilentWindow


def build_encoder_graph(
    encoder: torch.nn.Module,
    int8_weights: bool,
    cross_kv: list | None = None,
    silent: SilentWindow | None = None,
    probe: bool = False,
):
    """The OpenVINO model of a Scriba WhisperEncoder (float weights: build it before int8
    quantization replaces them), its output the states [B * P, d_model], or with `cross_kv`
    (Linears d_model -> 2 * d_model) their products, one output each. With `silent`, its
    features are a window's first 2 * n + 2 frames: positions 0..n-1 are encoded, the others
    taken from `silent`, the outputs as large as without. `probe` adds each layer's keys and
    values [B, P, d_model] after the outputs."""
    from openvino import Model, PartialShape, Type
    from openvino import opset13 as op

    conv1, conv2 = encoder.conv1, encoder.conv2
    features = op.parameter(PartialShape([-1, conv1.weight.shape[1], -1]), Type.f32, name="features")
    hidden = _conv_gelu(op, features, conv1, stride=1)
    hidden = _conv_gelu(op, hidden, conv2, stride=2)  # [B, d, P]
    hidden = op.transpose(hidden, _const(op, np.array([0, 2, 1], np.int64)))  # [B, P, d]
    positions = _const(op, encoder.embed_positions.weight)
    if silent is not None:  # the last position is dropped: its convolution sees past the frames
        hidden = _rows(op, hidden, _const(op, np.array([0], np.int64)), _const(op, np.array([-1], np.int64)))
        positions = _rows(op, positions, _const(op, np.array([0], np.int64)), _length(op, hidden), axis=0)
    hidden = op.add(hidden, positions)
    if silent is not None:  # the encoded positions' count and the windows', as [1] int64 nodes
        encoded, windows = _length(op, hidden), _length(op, hidden, axis=0)
    layer_kv = []
    for i, layer in enumerate(encoder.layers):
        tails = None if silent is None else [_tail(op, x, encoded, windows) for x in silent.layer_kv[i]]
        hidden, kv = _encoder_layer(op, hidden, layer, int8_weights, tails)
        layer_kv += kv
    hidden = _layer_norm(op, hidden, encoder.layer_norm)
    outputs = [_linear(op, hidden, linear, int8_weights) for linear in cross_kv] if cross_kv else [hidden]
    if silent is not None:
        outputs = [
            op.concat([out, _tail(op, rows, encoded, windows)], 1)
            for out, rows in zip(outputs, silent.outputs)
        ]
    widths = (
        [linear.weight.shape[0] for linear in cross_kv] if cross_kv else [encoder.layer_norm.weight.shape[0]]
    )
    outputs = [
        op.reshape(out, _const(op, np.array([-1, w], np.int64)), False) for out, w in zip(outputs, widths)
    ]
    results = [out.output(0) for out in outputs] + (layer_kv if probe else [])
    return Model(results, [features], "whisper_encoder")


def _encoder_layer(op, hidden, layer, int8_weights: bool, tails: list | None):
    """(the layer's output [B, n, d], [its keys, its values] [B, n, d]); `tails`: the keys and
    values [B, P - n, d] of the positions past n, attended to after the layer's own."""
    attn = layer.self_attn
    heads, head_dim = attn.attn.num_heads, attn.attn.head_dim
    qkv = _linear(op, _layer_norm(op, hidden, layer.self_attn_layer_norm), attn.qkv_proj, int8_weights)
    split = op.split(qkv, _const(op, np.array(-1, np.int64)), 3)
    q, k, v = (split.output(i) for i in range(3))
    own_kv = [k, v]
    if tails is not None:
        k, v = (op.concat([x, tail], 1) for x, tail in zip((k, v), tails))
    to_heads = _const(op, np.array([0, 0, heads, head_dim], np.int64))
    swap = _const(op, np.array([0, 2, 1, 3], np.int64))
    q, k, v = (op.transpose(op.reshape(x, to_heads, True), swap) for x in (q, k, v))
    scale = _const(op, np.array(attn.attn.scale, np.float32))
    context = op.scaled_dot_product_attention(q, k, v, scale=scale, causal=False)  # [B, H, n, D]
    merged = op.reshape(op.transpose(context, swap), _const(op, np.array([0, 0, -1], np.int64)), True)
    hidden = op.add(hidden, _linear(op, merged, attn.out_proj, int8_weights))
    ffn = _linear(op, _layer_norm(op, hidden, layer.final_layer_norm), layer.fc1, int8_weights)
    ffn = _linear(op, op.gelu(ffn, "erf"), layer.fc2, int8_weights)
    return op.add(hidden, ffn), own_kv


def _length(op, x, axis: int = 1):
    """x's size along `axis`, as a [1] int64 node."""
    return op.gather(
        op.shape_of(x), _const(op, np.array([axis], np.int64)), _const(op, np.array(0, np.int64))
    )


def _rows(op, x, start, stop, axis: int = 1):
    return op.slice(
        x, start, stop, _const(op, np.array([1], np.int64)), _const(op, np.array([axis], np.int64))
    )


def _tail(op, rows: np.ndarray, encoded, windows):
    """rows [P, width] from position n (`encoded`, [1] int64) on, for each of the `windows` ([1]
    int64) windows: [B, P - n, width]."""
    end = _const(op, np.array([rows.shape[0]], np.int64))
    tail = op.unsqueeze(_rows(op, _const(op, rows), encoded, end, axis=0), _const(op, np.array(0)))
    shape = op.concat([windows, _const(op, np.array([1, 1], np.int64))], 0)  # [B, 1, 1]
    return op.broadcast(tail, shape, broadcast_spec="BIDIRECTIONAL")


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
