"""The engine settings a transcription asks for, and the Whisper models it offers: the speech
policy on top of the shared loops (runtime/loops.py)."""

from __future__ import annotations

import importlib.util

import torch

from scriba.models.offline import DEFAULT, installed_offline_models


def default_whisper_models() -> list[str | None]:
    """The Whisper models offered when none are named: the bundled tiny.en (None), and the
    other offline models that are installed (`base`, with the multilingual extra)."""
    return [None] + [name for name in installed_offline_models() if name != DEFAULT]


def speech_config(config: dict) -> dict:
    """The engine settings a transcription runs with: on a CPU, unless a dtype or a
    quantization is asked for, int8 (models/quantize.py), and with int8 the encoder run by
    OpenVINO unless an encoder_runtime is asked for, and a float16 KV cache unless a
    kv_cache_dtype is. Measured on real speech
    (benchmarks/bench_whisper.py, docs/performance.md: CPU modes): 1.3-1.5x float32's speed, and over the
    dev sets' 2,000 words no higher word error rate. `dtype="float32"` is the exact mode, the
    one the transformers oracle checks token for token; the Engine itself defaults to it."""
    device = str(config.get("device") or "auto")
    if not (device == "cpu" or (device == "auto" and not torch.cuda.is_available())):
        return config
    if not config.get("quantization") and config.get("dtype", "auto") == "auto":
        config = {**config, "quantization": "int8"}
    if config.get("quantization") == "int8" and "encoder_runtime" not in config and openvino_installed():
        # The encoder through OpenVINO (bfloat16 where the CPU has it): 1.6-1.8x the int8 torch
        # encoder on an AVX-512 host (whisper/openvino_encoder.py).
        config = {**config, "encoder_runtime": "openvino"}
    if config.get("quantization") == "int8" and "kv_cache_dtype" not in config:
        # A float16 KV cache: decode reads half a float32 cache's bytes (14-20% faster on the dev
        # sets, whose error rates stay within two words of 3,872 in English and equal in the
        # multilingual set; docs/performance.md, float16 KV).
        config = {**config, "kv_cache_dtype": "float16"}
    return config


def openvino_installed() -> bool:
    return importlib.util.find_spec("openvino") is not None
