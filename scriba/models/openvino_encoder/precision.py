"""Which precision the OpenVINO encoder computes in on this machine: measured once, remembered.

Where the CPU has bfloat16 dot products (AVX-512 BF16, AMX) the candidates are "bf16" and
"int8-bf16" (int8 weights with dynamically quantized activations, bfloat16 around them): on a
Zen 4 (AVX-512 BF16 and VNNI, no AMX) int8-bf16 is the faster (base 205 ms a window against
265); with AMX, bfloat16 products are fast enough that it may not be. Elsewhere, AVX2-only CPUs
among them, int8 weights with dynamically quantized activations against plain float32 depends on
the CPU (VNNI or not, how OpenVINO's kernels use its caches). Either way both candidates are
compiled and timed on one 30 s window at first use and the faster is kept. The choice is kept in
`$SCRIBA_CACHE/encoder_precision.json` (default ~/.cache/scriba), keyed by the CPU, OpenVINO's
version, the encoder's shape and the thread count: later engines compile only the chosen graph.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import time
from typing import Callable

import torch

from scriba.kernels.cpu_features import cpu_flags
from scriba.models.offline import cache_root

log = logging.getLogger(__name__)

MEASURED = ("int8", "f32")  # the candidates where bfloat16 is not native
MEASURED_BF16 = ("bf16", "int8-bf16")  # where it is
TIMED_CALLS = 3  # after one warm-up call; the fastest call counts (a busy host only adds time)


def choices_file() -> str:
    return os.path.join(cache_root(), "encoder_precision.json")


def machine_key(openvino_version: str, encoder: torch.nn.Module, num_threads: int, cross_kv: bool) -> str:
    """What the timing depends on: the CPU (name and vector extensions), the runtime, the shape."""
    vector = sorted(f for f in cpu_flags() if f.startswith(("avx", "amx", "fma", "f16c")))
    layers, d_model = len(encoder.layers), encoder.layer_norm.weight.shape[0]
    return "|".join(
        [_cpu_name(), " ".join(vector), f"openvino {openvino_version}", f"{layers}x{d_model}",
         f"{num_threads} threads", "cross K/V" if cross_kv else "states"]
    )  # fmt: skip


def remembered(key: str) -> str | None:
    """The precision chosen earlier for `key`, or None (never measured, or the file unreadable)."""
    try:
        with open(choices_file()) as f:
            choice = json.load(f).get(key, {}).get("precision")
    except (OSError, ValueError, AttributeError):
        return None
    return choice if choice in MEASURED + MEASURED_BF16 else None


def remember(key: str, precision: str, seconds: dict[str, float]) -> None:
    """Add the choice to the file (written whole to a temporary name, then renamed: two processes
    measuring at once leave one complete file). A read-only cache only costs a later re-measure."""
    path = choices_file()
    try:
        with open(path) as f:
            choices = json.load(f)
    except (OSError, ValueError):
        choices = {}
    choices = choices if isinstance(choices, dict) else {}
    choices[key] = {"precision": precision, "seconds_per_window": seconds}
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        scratch = f"{path}.{os.getpid()}"
        with open(scratch, "w") as f:
            json.dump(choices, f, indent=1)
        os.replace(scratch, path)
    except OSError as e:  # a read-only cache: the next engine measures again
        log.info("encoder precision %s not remembered: %s", precision, e)


def seconds_per_window(encoder: Callable, mel_bins: int, frames: int) -> float:
    """The fastest of TIMED_CALLS calls of `encoder` (a compiled model: numpy features in) on one
    window [1, mel_bins, frames] of noise."""
    features = torch.randn(1, mel_bins, frames, generator=torch.Generator().manual_seed(0)).numpy()
    encoder(features)  # the first call also allocates and primes the kernels
    best = float("inf")
    for _ in range(TIMED_CALLS):
        start = time.perf_counter()
        encoder(features)
        best = min(best, time.perf_counter() - start)
    return best


def fastest(build: Callable[[str], Callable], native_bf16: bool, mel_bins: int, frames: int, key: str):
    """(the chosen precision, its compiled encoder): the remembered choice for `key`, else each
    candidate (MEASURED_BF16 where the CPU computes bfloat16 natively, else MEASURED) built by
    `build(precision)` and timed."""
    candidates = MEASURED_BF16 if native_bf16 else MEASURED
    known = remembered(key)
    if known in candidates:
        return known, build(known)
    built = {precision: build(precision) for precision in candidates}
    seconds = {p: seconds_per_window(encoder, mel_bins, frames) for p, encoder in built.items()}
    chosen = min(seconds, key=seconds.get)
    remember(key, chosen, {p: round(s, 4) for p, s in seconds.items()})
    return chosen, built[chosen]


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            line = next((x for x in f if x.startswith("model name")), "")
    except OSError:
        line = ""
    return line.split(":", 1)[1].strip() if ":" in line else platform.processor() or "unknown CPU"
