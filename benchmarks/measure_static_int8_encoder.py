"""A design measured and not adopted (issue 42, AVX2-only hosts): the OpenVINO encoder graph
quantized statically to int8 by NNCF (int8 activations too, calibrated on real speech), against
the graphs the engine chooses between (f32; int8 weights with dynamic quantization). One window,
2 threads, the fastest and median of 7 calls, and the relative error of the outputs (the states'
cross K/V of every decoder layer) against f32 on 4 held-out clips.

NNCF is not a Scriba dependency: install it beside the test install (`pip install nncf`, or
`pip install --target DIR --no-deps nncf` and its missing pure-Python requirements with
PYTHONPATH=DIR, so it does not replace torch or openvino).

    python benchmarks/measure_static_int8_encoder.py --model tiny.en [--alpha 0.5] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import glob
import statistics
import time

import nncf
import numpy as np
import torch
from nncf.quantization.advanced_parameters import (
    AdvancedQuantizationParameters,
    AdvancedSmoothQuantParameters,
)

from scriba.media.load import load_audio
from scriba.models.loader import resolve_model_path
from scriba.models.registry import load_model
from scriba.whisper.encoder_graph import build_encoder_graph
from scriba.whisper.log_mel import log_mel
from scriba.whisper.openvino_encoder import _compile, import_openvino

WINDOW = 16000 * 30


def windows(data: str, mel_bins: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(calibration, test) log-mel windows [1, mel_bins, 3000]: short clips and 30 s of a reading."""
    clips = sorted(glob.glob(f"{data}/dev_speech/short/*.flac"))
    mel = lambda wave: log_mel([wave[:WINDOW]], mel_bins).astype(np.float32)  # noqa: E731
    reading = load_audio(glob.glob(f"{data}/dev_longform/*.flac")[0])
    calibration = [mel(load_audio(f)) for f in clips[::3][:12]]
    calibration += [mel(reading[i * WINDOW :]) for i in range(4)]
    return calibration, [mel(load_audio(f)) for f in clips[1::7][:4]]


def timed(compiled, x: np.ndarray, calls: int = 7) -> tuple[float, float]:
    request = compiled.create_infer_request()
    request.infer([x])
    seconds = []
    for _ in range(calls):
        start = time.perf_counter()
        request.infer([x])
        seconds.append(time.perf_counter() - start)
    return min(seconds) * 1e3, statistics.median(seconds) * 1e3


def outputs(compiled, tests: list[np.ndarray]) -> list[np.ndarray]:
    request = compiled.create_infer_request()
    return [np.array(out) for x in tests for out in request.infer([x]).values()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--alpha", type=float, default=0.5, help="SmoothQuant's alpha (-1: off)")
    parser.add_argument("--data", default="../shared/data")
    args = parser.parse_args()
    core = import_openvino().Core()
    model, _ = load_model(resolve_model_path(args.model), "cpu", torch.float32)
    encoder = model.model.encoder
    projections = [layer.encoder_attn.kv_proj for layer in model.model.decoder.layers]
    calibration, tests = windows(args.data, encoder.conv1.weight.shape[1])
    f32 = _compile(core, build_encoder_graph(encoder, False, projections), "f32", 2)
    reference = outputs(f32, tests)

    def report(label: str, compiled) -> None:
        errors = [
            np.linalg.norm(a - b) / np.linalg.norm(b) for a, b in zip(outputs(compiled, tests), reference)
        ]
        best, median = timed(compiled, tests[0])
        print(
            f"{args.model} {label:34s} {best:7.1f} ms (median {median:.1f}); "
            f"relative error max {max(errors):.3f}"
        )

    report("f32", f32)
    report(
        "int8 weights, dynamic quantization",
        _compile(core, build_encoder_graph(encoder, True, projections), "int8", 2),
    )
    smooth = AdvancedSmoothQuantParameters(matmul=args.alpha)
    quantized = nncf.quantize(
        build_encoder_graph(encoder, False, projections),
        nncf.Dataset(calibration),
        model_type=nncf.ModelType.TRANSFORMER,
        subset_size=len(calibration),
        advanced_parameters=AdvancedQuantizationParameters(smooth_quant_alphas=smooth),
    )
    report(f"static int8 (SmoothQuant {args.alpha})", _compile(core, quantized, "f32", 2))


if __name__ == "__main__":
    main()
