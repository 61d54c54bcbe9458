"""The OpenVINO encoder (and the decoder layers' cross K/V) in each precision on this host: one
30 s window, 2 threads, the fastest and median of --calls calls; what whisper/encoder_precision.py
would choose here. Run it first on a new kind of CPU (an AVX2-only one above all).

    python benchmarks/bench_encoder_precision.py --models tiny.en,base [--groups 32,128,512]

`--groups`: also each int8 precision with its activations quantized in groups of that many
inputs (OpenVINO's DYNAMIC_QUANTIZATION_GROUP_SIZE; the defaults: int8 32, int8-bf16 128).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from machine import cpu_name

from scriba.models.loader import resolve_model_path
from scriba.models.registry import load_model
from scriba.whisper.encoder_graph import build_encoder_graph
from scriba.whisper.encoder_precision import MEASURED, MEASURED_BF16
from scriba.whisper.openvino_encoder import _compile, import_openvino, int8_weights, native_bf16

# (label, the precision compiled)
CONFIGS = [
    ("int8 (dynamic quantization)", "int8"),
    ("f32", "f32"),
    ("bf16", "bf16"),
    ("int8-bf16 (dynamic, bf16 around)", "int8-bf16"),
]


def time_config(core, encoder, projections, precision: str, threads: int, calls: int, group=None):
    graph = build_encoder_graph(encoder, int8_weights(precision), projections)
    compiled = _compile(core, graph, precision, threads, group)
    request = compiled.create_infer_request()
    x = torch.randn(1, encoder.conv1.weight.shape[1], 3000, generator=torch.Generator().manual_seed(0))
    request.infer([x.numpy()])
    seconds = []
    for _ in range(calls):
        start = time.perf_counter()
        request.infer([x.numpy()])
        seconds.append(time.perf_counter() - start)
    return min(seconds), statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="tiny.en,base")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--groups", default="", help="comma-separated group sizes to time as well")
    args = parser.parse_args()
    groups = [int(g) for g in args.groups.split(",") if g]
    ov = import_openvino()
    core = ov.Core()
    print(f"# machine: {cpu_name()}")
    print(f"OpenVINO {ov.get_version()}; native bfloat16 here: {native_bf16(core)}")
    for name in args.models.split(","):
        model, _ = load_model(resolve_model_path(name), "cpu", torch.float32)
        encoder = model.model.encoder
        projections = [layer.encoder_attn.kv_proj for layer in model.model.decoder.layers]
        fastest = {}
        for label, precision in CONFIGS:
            best, median = time_config(core, encoder, projections, precision, args.threads, args.calls)
            fastest[precision] = best
            print(f"{name:8s} {label:34s} {best * 1000:7.1f} ms a window (median {median * 1000:.1f})")
        for group in groups:
            for precision in ("int8", "int8-bf16"):
                best, median = time_config(
                    core, encoder, projections, precision, args.threads, args.calls, group
                )
                label = f"{precision}, groups of {group}"
                print(f"{name:8s} {label:34s} {best * 1000:7.1f} ms a window (median {median * 1000:.1f})")
        native = native_bf16(core)
        chosen = min(MEASURED_BF16 if native else MEASURED, key=fastest.get)
        print(f"{name:8s} chosen here: {chosen} (of {', '.join(MEASURED_BF16 if native else MEASURED)})")


if __name__ == "__main__":
    main()
