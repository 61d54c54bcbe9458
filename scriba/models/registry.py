"""Architectures Scriba runs, keyed by the Hugging Face architecture name in config.json."""

from __future__ import annotations

import torch
from torch import nn

from scriba.models.bart import BartForConditionalGeneration, MBartForConditionalGeneration
from scriba.models.loader import iterate_checkpoint, load_weights, resolve_model_path

MODEL_REGISTRY: dict[str, type[nn.Module]] = {
    "BartForConditionalGeneration": BartForConditionalGeneration,
    "BartModel": BartForConditionalGeneration,
    "MBartForConditionalGeneration": MBartForConditionalGeneration,
}


def model_class_for(hf_config) -> type[nn.Module]:
    architectures = getattr(hf_config, "architectures", None) or []
    for arch in architectures:
        if arch in MODEL_REGISTRY:
            return MODEL_REGISTRY[arch]
    raise ValueError(
        f"unknown architecture {architectures or '(none in config.json)'}; Scriba supports: {sorted(MODEL_REGISTRY)}"
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


def load_model(model: str, device: str, dtype: torch.dtype, revision: str | None = None) -> tuple[nn.Module, str]:
    """Build the registered class for the checkpoint at `model`, load its weights strictly."""
    path, hf_config = load_hf_config(model, revision)
    cls = model_class_for(hf_config)
    with torch.device(device):
        net = cls(hf_config, load_generation_config(path))
    load_weights(net, iterate_checkpoint(path))
    return net.to(dtype=dtype).eval(), path
