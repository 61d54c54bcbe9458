"""Whisper's encoder executed by OpenVINO's CPU runtime: log-mel features in, encoder states out.

The encoder is a pure function of the log-mel (no cache, no scheduling), so a graph runtime
may run it while the paged engine keeps generating. The graph (models/openvino_encoder/graph.py) is
compiled for the host by what OpenVINO reports it can do:
  - "bf16" where the CPU has bfloat16 dot products (AVX-512 BF16, AMX): float weights,
    bfloat16 arithmetic (tiny.en, one 30 s window, 2 cores of an AVX-512 Zen 4:
    ~105 ms against 186 ms for Scriba's int8 torch encoder; 0.8% relative error in the states);
  - "int8": int8 weights (per output channel) with activations quantized on the fly by
    OpenVINO's dynamic quantization, float32 arithmetic around them;
  - "int8-bf16": the same int8 products, their activations quantized in groups of
    INT8_BF16_GROUP inputs, with bfloat16 arithmetic around them (attention, norms): on a
    Zen 4 (bfloat16 dot products and VNNI, no AMX) faster than bf16 (base, one window, 205 ms
    against 265; 6% relative error in the cross K/V against bf16's 3%, the same WER);
  - "f32": float weights and float32 arithmetic (the graph checked against the torch encoder to
    float32 rounding).
Which one a machine gets is measured once and remembered (models/openvino_encoder/precision.py): bf16
or int8-bf16 where bfloat16 is native, elsewhere int8 or f32. With `cached_padding`, a window
that is mostly padding is encoded at the cost of its audio (models/openvino_encoder/cached_padding.py).
OpenVINO is used because it is the CPU runtime made for exactly this (oneDNN's brgemm kernels,
a fused attention op, bfloat16 and VNNI where the CPU has them, ARM too).
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from scriba.kernels.cpu_features import native_bfloat16
from scriba.models.openvino_encoder.cached_padding import SILENCE_LEVEL, SilentWindow, positions_to_encode
from scriba.models.openvino_encoder.graph import build_encoder_graph
from scriba.models.openvino_encoder.precision import fastest, machine_key
from scriba.models.openvino_encoder.silent_window import (
    load_silent_window,
    save_silent_window,
    silent_window_key,
)

PRECISIONS = ("bf16", "int8-bf16", "int8", "f32")
# Inputs per dynamically quantized activation group under "int8-bf16". Measured on a Zen 4 (base,
# one window): 32 -> 245 ms, 64 -> 222, 128 -> 205, 256 -> 203, 512 -> 209; tiny.en fastest at 128.
# Under "int8" (float32 arithmetic), OpenVINO's default of 32.
INT8_BF16_GROUP = 128


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
    Without a `precision`, the host's (models/openvino_encoder/precision.py: the faster of bf16 and
    int8-bf16 where bfloat16 is native, else of int8 and f32, measured once per machine)."""

    def __init__(
        self,
        encoder: torch.nn.Module,
        num_threads: int,
        precision: str | None = None,
        cross_kv: list[torch.nn.Linear] | None = None,
        cached_padding: bool = False,
    ):
        if precision is not None and precision not in PRECISIONS:
            raise ValueError(f"OpenVINO encoder precision must be one of {PRECISIONS}, got {precision!r}")
        ov = import_openvino()
        core = ov.Core()

        def build(chosen: str):
            return _compile(
                core, build_encoder_graph(encoder, int8_weights(chosen), cross_kv), chosen, num_threads
            )

        if precision is not None:
            self.precision, self.compiled = precision, build(precision)
        else:
            key = machine_key(ov.get_version(), encoder, num_threads, bool(cross_kv))
            mel_bins, frames = encoder.conv1.weight.shape[1], 2 * encoder.embed_positions.weight.shape[0]
            self.precision, self.compiled = fastest(build, native_bf16(core), mel_bins, frames, key)
        self.request = self.compiled.create_infer_request()  # the engine's one thread uses it
        self.projects_cross_kv = bool(cross_kv)
        self.max_positions = encoder.embed_positions.weight.shape[0]
        self.padded_request = None
        if cached_padding:
            silent = silent_window(core, encoder, cross_kv, num_threads, ov.get_version())
            graph = build_encoder_graph(encoder, int8_weights(self.precision), cross_kv, silent)
            self.padded_request = _compile(core, graph, self.precision, num_threads).create_infer_request()

    def __call__(self, features: torch.Tensor) -> list[torch.Tensor]:
        """The outputs are views of the request's own buffers (no copy of tiny.en's 18 MB of K/V),
        valid until the next call: the engine writes them to its cache within the same step. With
        the padding cached, the windows that reach as far (cached_padding.py) are encoded
        together, and a batch of several such groups is gathered into new tensors."""
        if self.padded_request is None:
            return _infer(self.request, features)
        per_window = positions_to_encode(features, self.max_positions)
        groups: dict[int | None, list[int]] = {}
        for window, positions in enumerate(per_window):
            groups.setdefault(positions, []).append(window)
        if len(groups) == 1:
            return self._encode_group(features, per_window[0])
        gathered: list[torch.Tensor] = []
        for positions, windows in groups.items():
            for i, out in enumerate(self._encode_group(features[windows], positions)):
                out = out.view(len(windows), -1, out.shape[-1])  # [windows, positions, width]
                if len(gathered) == i:
                    gathered.append(out.new_empty(len(per_window), *out.shape[1:]))
                gathered[i][windows] = out
        return [out.flatten(0, 1) for out in gathered]

    def _encode_group(self, features: torch.Tensor, positions: int | None) -> list[torch.Tensor]:
        if positions is None:
            return _infer(self.request, features)
        return self.encode_leading(features, positions)

    def encode_leading(self, features: torch.Tensor, positions: int) -> list[torch.Tensor]:
        """The outputs for `features` [B, mel_bins, frames] with only the first `positions`
        positions encoded, the rest the silent window's (models/openvino_encoder/cached_padding.py)."""
        return _infer(self.padded_request, features[:, :, : 2 * positions + 2])


def silent_window(
    core, encoder: torch.nn.Module, cross_kv: list | None, num_threads: int, version: str
) -> SilentWindow:
    """The encoder's values for one window of silence (SILENCE_LEVEL in every bin), in float32:
    stored on disk the first time (models/openvino_encoder/silent_window.py)."""
    key = silent_window_key(version, [encoder, *(cross_kv or [])])
    window = load_silent_window(key)
    if window is None:
        window = _encode_silent_window(core, encoder, cross_kv, num_threads)
        save_silent_window(key, window)
    return window


def _encode_silent_window(core, encoder: torch.nn.Module, cross_kv: list | None, num_threads: int):
    probe = _compile(core, build_encoder_graph(encoder, False, cross_kv, probe=True), "f32", num_threads)
    mel_bins, frames = encoder.conv1.weight.shape[1], 2 * encoder.embed_positions.weight.shape[0]
    silence = np.full((1, mel_bins, frames), SILENCE_LEVEL, np.float32)
    result = probe.create_infer_request().infer([silence])
    values = [np.array(result[i]) for i in range(len(probe.outputs))]
    num_outputs = len(cross_kv) if cross_kv else 1
    outputs, kv = values[:num_outputs], [v[0] for v in values[num_outputs:]]
    return SilentWindow(list(zip(kv[0::2], kv[1::2])), outputs)


def _infer(request, features: torch.Tensor) -> list[torch.Tensor]:
    x = features.detach().to(torch.float32).contiguous().numpy()
    outputs = request.infer([x], share_outputs=True)
    return [torch.from_numpy(outputs[i]) for i in range(len(request.model_outputs))]


def int8_weights(precision: str) -> bool:
    return precision.startswith("int8")


def _compile(core, graph, precision: str, num_threads: int, group: int | None = None):
    """`group`: inputs per dynamically quantized activation group of an int8 precision, when not
    its default (to measure another group size)."""
    groups = {"int8": 32, "int8-bf16": INT8_BF16_GROUP}
    settings = {
        "INFERENCE_PRECISION_HINT": "bf16" if precision.endswith("bf16") else "f32",
        # the int8 weights' activations quantized on the fly, in groups of this many inputs
        "DYNAMIC_QUANTIZATION_GROUP_SIZE": groups.get(precision, 0) if group is None else group,
        "INFERENCE_NUM_THREADS": num_threads,
        "PERFORMANCE_HINT": "LATENCY",
    }
    return core.compile_model(graph, "CPU", settings)
