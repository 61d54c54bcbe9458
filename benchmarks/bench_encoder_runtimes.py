"""The Whisper encoder in every CPU runtime at hand, on this host: one 30 s window, the states only
(no cross K/V), 2 threads, the fastest and median of --calls calls. Then PyTorch's matrix
products (float32 and fbgemm's int8) and attention at the encoder's shapes: the ceiling of any
encoder built from them here. Run it on a new kind of CPU (an AVX2-only one above all) to see
whether some runtime's encoder beats the one Scriba uses (whisper/openvino_encoder.py).

    python benchmarks/bench_encoder_runtimes.py [--models tiny.en,base] [--hf-models /tmp/ov]

Runtimes: OpenVINO (Scriba's graph, f32 and int8 weights with dynamic quantization);
CTranslate2 (faster-whisper's runtime, on the same CTranslate2 folders Scriba reads: int8,
float32, int8_float32); PyTorch with Scriba's int8 layers (models/quantize.py: fbgemm, each row
quantized to 7 bits; SDPA attention); ONNX Runtime on an export of the same weights, float32 and
dynamically quantized int8 weights (QInt8, QUInt8) - only with `onnx` installed (`pip install
onnx`) and --hf-models (the Hugging Face folders benchmarks/setup_field.sh exports).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from machine import cpu_name

from scriba.models.loader import resolve_model_path
from scriba.models.offline import offline_model_path
from scriba.models.registry import load_model
from scriba.whisper.encoder_graph import build_encoder_graph
from scriba.whisper.openvino_encoder import _compile, import_openvino


def timed(call, calls: int) -> tuple[float, float]:
    """(fastest, median) seconds of `calls` calls after one warm-up."""
    call()
    seconds = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return min(seconds), statistics.median(seconds)


def say(name: str, label: str, times: tuple[float, float]) -> None:
    print(
        f"{name:8s} {label:40s} {times[0] * 1000:7.1f} ms a window (median {times[1] * 1000:.1f})", flush=True
    )


def openvino(name: str, features: np.ndarray, threads: int, calls: int) -> None:
    core = import_openvino().Core()
    model, _ = load_model(resolve_model_path(name), "cpu", torch.float32)
    for label, int8, precision in [("int8 (dynamic quantization)", True, "int8"), ("f32", False, "f32")]:
        request = _compile(core, build_encoder_graph(model.model.encoder, int8), precision, threads)
        request = request.create_infer_request()
        say(name, f"OpenVINO {label}", timed(lambda r=request: r.infer([features]), calls))


def ctranslate2(name: str, features: np.ndarray, threads: int, calls: int) -> None:
    import ctranslate2 as ct2

    for compute in ("int8", "float32", "int8_float32"):
        model = ct2.models.Whisper(offline_model_path(name), device="cpu", compute_type=compute,
                                   intra_threads=threads, inter_threads=1)  # fmt: skip
        view = ct2.StorageView.from_array(features)
        say(name, f"CTranslate2 {compute}", timed(lambda m=model: m.encode(view), calls))


def torch_int8(name: str, features: np.ndarray, calls: int) -> None:
    """Scriba's torch encoder after quantize_int8 (encoder_runtime="torch"), one window."""
    from scriba import Engine
    from scriba.kernels.metadata import AttentionMetadata

    engine = Engine(name, device="cpu", quantization="int8", encoder_runtime="torch", num_kv_blocks=8)
    positions = features.shape[-1] // 2
    bounds = torch.tensor([0, positions], dtype=torch.int32)
    meta = AttentionMetadata(
        engine.runner.backend,
        num_encoder_tokens=positions,
        encoder_cu_seqlens=bounds,
        encoder_max_seqlen=positions,
    )
    x = torch.from_numpy(features)
    encoder = engine.model.model.encoder
    with torch.inference_mode():
        say(name, "PyTorch, Scriba's int8 layers (fbgemm)", timed(lambda: encoder(x, meta), calls))


class States(torch.nn.Module):
    """A transformers Whisper encoder's last hidden state, for the ONNX export."""

    def __init__(self, encoder: torch.nn.Module):
        super().__init__()
        self.encoder = encoder

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.encoder(features).last_hidden_state


def onnxruntime(name: str, hf_folder: str, features: np.ndarray, threads: int, calls: int) -> None:
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import WhisperForConditionalGeneration

    encoder = WhisperForConditionalGeneration.from_pretrained(hf_folder).model.encoder.eval()
    encoder.requires_grad_(False)
    scratch = tempfile.mkdtemp()
    plain = os.path.join(scratch, "encoder.onnx")
    wrapper = States(encoder)  # the weights a submodule's: initializers, which quantize_dynamic reads
    torch.onnx.export(wrapper, (torch.from_numpy(features),), plain, input_names=["features"],
                      opset_version=17, dynamo=False)  # fmt: skip
    variants = {"float32": plain}
    for weights in (QuantType.QInt8, QuantType.QUInt8):
        variants[f"int8 weights {weights.name}"] = os.path.join(scratch, f"{weights.name}.onnx")
        quantize_dynamic(plain, variants[f"int8 weights {weights.name}"], weight_type=weights)
    for label, path in variants.items():
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        say(
            name, f"ONNX Runtime {label}", timed(lambda s=session: s.run(None, {"features": features}), calls)
        )


def kernels(calls: int) -> None:
    """PyTorch's products at tiny.en's and base's encoder shapes, and its attention over 1,500
    positions, in GFLOP/s."""
    for rows, size, out in [(1500, 384, 1536), (1500, 1536, 384), (1500, 512, 2048), (1500, 2048, 512)]:
        x, linear = torch.randn(rows, size), torch.nn.Linear(size, out)
        int8 = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(linear), {torch.nn.Linear})
        flops = 2 * rows * size * out
        f32, i8 = timed(lambda: linear(x), calls)[0], timed(lambda: int8(x), calls)[0]
        print(f"matmul {rows}x{size}x{out}: float32 {flops / f32 / 1e9:5.0f} GFLOP/s, "
              f"int8 (fbgemm) {flops / i8 / 1e9:5.0f} GFLOP/s ({f32 / i8:.2f}x)")  # fmt: skip
    for heads in (6, 8):
        q = torch.randn(1, heads, 1500, 64)
        seconds = timed(lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q), calls)[0]
        rate = 4 * heads * 1500 * 1500 * 64 / seconds / 1e9
        print(
            f"attention, {heads} heads x 1500 x 64 (SDPA): "
            f"{rate:5.0f} GFLOP/s, {seconds * 1000:.1f} ms a layer"
        )


RUNTIMES = ("openvino", "ctranslate2", "torch", "onnxruntime", "kernels")


def run_one(runtime: str, name: str, args) -> None:
    """One runtime on one model, in this process (each runtime's threads spin between calls:
    two in one process slow each other, so main() gives each a process of its own)."""
    torch.set_num_threads(args.threads)
    if runtime == "kernels":
        return kernels(args.calls * 4)
    model, _ = load_model(resolve_model_path(name), "cpu", torch.float32)
    mel_bins = model.model.encoder.conv1.weight.shape[1]
    features = torch.randn(1, mel_bins, 3000, generator=torch.Generator().manual_seed(0)).numpy()
    if runtime == "openvino":
        openvino(name, features, args.threads, args.calls)
    elif runtime == "ctranslate2":
        ctranslate2(name, features, args.threads, args.calls)
    elif runtime == "torch":
        torch_int8(name, features, args.calls)
    elif importlib.util.find_spec("onnx") is None:
        print(f"{name:8s} ONNX Runtime: left out (pip install onnx)")
    elif args.hf_models and os.path.isdir(os.path.join(args.hf_models, f"hf-{name}")):
        onnxruntime(name, os.path.join(args.hf_models, f"hf-{name}"), features, args.threads, args.calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="tiny.en,base")
    parser.add_argument("--hf-models", default=None, help="folder of hf-<model> exports, for ONNX Runtime")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--runtime", choices=RUNTIMES, help="run this one here (else each in a process)")
    args = parser.parse_args()
    if args.runtime:
        return run_one(args.runtime, args.models, args)
    print(f"# machine: {cpu_name()}; {args.threads} threads", flush=True)
    common = ["--threads", str(args.threads), "--calls", str(args.calls)]
    common += ["--hf-models", args.hf_models] if args.hf_models else []
    jobs = [(r, m) for m in args.models.split(",") for r in RUNTIMES[:-1]] + [("kernels", "tiny.en")]
    for runtime, name in jobs:
        command = [sys.executable, __file__, "--runtime", runtime, "--models", name, *common]
        done = subprocess.run(command, capture_output=True, text=True)
        lines = [x for x in done.stdout.splitlines() if x.startswith((name, "matmul", "attention"))]
        print("\n".join(lines) or f"{name:8s} {runtime}: failed ({done.stderr.strip().splitlines()[-1:]})")


if __name__ == "__main__":
    main()
