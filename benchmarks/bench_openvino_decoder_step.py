"""One decode step of tiny.en's decoder (4 layers and the logits) as one OpenVINO graph, its
self and cross K/V passed in as inputs: is a graph runtime over explicit K/V the way to a cheaper
single-request step (issue 42)? Random K/V of a 30-token prefix and 1,500 encoder positions; the
inputs shared with OpenVINO (no copy). Compare with `python benchmarks/bench_step.py` and the
engine's own step (benchmarks/NOTES.md, 2026-11-26).

    python benchmarks/bench_openvino_decoder_step.py --precision bf16 --int8 --threads 2
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from scriba import Engine
from scriba.whisper.encoder_graph import _const, _layer_norm, _linear
from scriba.whisper.openvino_encoder import import_openvino


def build(ov, op, dec, int8: bool, cross_type):
    """(model): inputs hidden [B, 1, d] and per layer self K, V [B, H, T, D], cross K, V
    [B, H, P, D]; outputs logits [B, 1, vocab] and each layer's new K, V [B, H, 1, D]."""
    heads, head_dim = dec.layers[0].self_attn.attn.num_heads, dec.layers[0].self_attn.attn.head_dim
    d = heads * head_dim
    hidden = op.parameter(ov.PartialShape([-1, 1, d]), ov.Type.f32, name="hidden")
    params, outs = [hidden], []
    swap = _const(op, np.array([0, 2, 1, 3], np.int64))
    to_heads = _const(op, np.array([0, 0, heads, head_dim], np.int64))
    merge = _const(op, np.array([0, 0, -1], np.int64))
    kv_shape = ov.PartialShape([-1, heads, -1, head_dim])
    x = hidden
    for i, layer in enumerate(dec.layers):
        sk, sv = (op.parameter(kv_shape, ov.Type.f32, name=f"self_{n}{i}") for n in "kv")
        ck, cv = (op.parameter(kv_shape, cross_type, name=f"cross_{n}{i}") for n in "kv")
        params += [sk, sv, ck, cv]
        attn = layer.self_attn
        qkv = _linear(op, _layer_norm(op, x, layer.self_attn_layer_norm), attn.qkv_proj, int8)
        split = op.split(qkv, _const(op, np.array(-1, np.int64)), 3)
        q, k, v = (op.transpose(op.reshape(split.output(j), to_heads, True), swap) for j in range(3))
        outs += [k, v]
        scale = _const(op, np.array(attn.attn.scale, np.float32))
        ctx = op.scaled_dot_product_attention(q, op.concat([sk, k], 2), op.concat([sv, v], 2), scale=scale)
        x = op.add(x, _linear(op, op.reshape(op.transpose(ctx, swap), merge, True), attn.out_proj, int8))
        cross = layer.encoder_attn
        qc = _linear(op, _layer_norm(op, x, layer.encoder_attn_layer_norm), cross.q_proj, int8)
        qc = op.transpose(op.reshape(qc, to_heads, True), swap)
        ctx = op.scaled_dot_product_attention(qc, op.convert(ck, "f32"), op.convert(cv, "f32"), scale=scale)
        x = op.add(x, _linear(op, op.reshape(op.transpose(ctx, swap), merge, True), cross.out_proj, int8))
        ffn = _linear(op, _layer_norm(op, x, layer.final_layer_norm), layer.fc1, int8)
        x = op.add(x, _linear(op, op.gelu(ffn, "erf"), layer.fc2, int8))
    head = torch.nn.Linear(d, dec.embed_tokens.weight.shape[0], bias=False)
    head.weight = dec.embed_tokens.weight  # Whisper's tied output projection
    logits = _linear(op, _layer_norm(op, x, dec.layer_norm), head, int8)
    return ov.Model([logits, *outs], params, "decoder_step")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precision", choices=["bf16", "f32"], default="bf16")
    parser.add_argument("--int8", action="store_true", help="int8 weights (OpenVINO's dynamic quantization)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cross", choices=["f32", "f16"], default="f32", help="the cross K/V inputs' type")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    ov = import_openvino()
    from openvino import opset13 as op

    dec = Engine().runner.model.model.decoder  # tiny.en's float32 weights
    cross_type, cross_np = (ov.Type.f16, np.float16) if args.cross == "f16" else (ov.Type.f32, np.float32)
    settings = {
        "INFERENCE_PRECISION_HINT": args.precision,
        "INFERENCE_NUM_THREADS": args.threads,
        "PERFORMANCE_HINT": "LATENCY",
        "DYNAMIC_QUANTIZATION_GROUP_SIZE": 32 if args.int8 else 0,
    }
    request = ov.Core().compile_model(build(ov, op, dec, args.int8, cross_type), "CPU", settings)
    request = request.create_infer_request()
    heads, head_dim = dec.layers[0].self_attn.attn.num_heads, dec.layers[0].self_attn.attn.head_dim
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((args.batch, 1, heads * head_dim), np.float32)]
    for _ in dec.layers:
        inputs += [rng.standard_normal((args.batch, heads, 30, head_dim), np.float32) for _ in "kv"]
        inputs += [rng.standard_normal((args.batch, heads, 1500, head_dim)).astype(cross_np) for _ in "kv"]
    times = []
    for i in range(args.steps + 20):
        start = time.perf_counter()
        request.infer(inputs, share_inputs=True, share_outputs=True)
        if i >= 20:  # after a warm-up
            times.append(time.perf_counter() - start)
    print(
        f"OpenVINO decoder step, {args.precision}, int8 weights "
        f"{args.int8}, {args.threads} threads, cross K/V "
        f"{args.cross}, batch {args.batch}: median {statistics.median(times) * 1e3:.2f} ms, "
        f"min {min(times) * 1e3:.2f} ms"
    )


if __name__ == "__main__":
    main()
