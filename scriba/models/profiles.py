"""The defaults a model runs with on a machine, chosen once (config.resolve_config) for every
surface: a profile per kind of model and device.

- "cpu-speech" (an audio model on the CPU, unless a dtype or a quantization is asked for): int8
  weights and activations (models/quantize.py), the encoder run by OpenVINO (bfloat16 where the CPU
  has bfloat16 dot products; models/openvino_encoder/runtime.py) and a float16 KV cache. On real speech
  it is several times float32's speed at the same word error rate (docs/performance.md).
  `dtype="float32"` asks for the exact mode, token for token transformers' output.
- "cpu" (a text model on the CPU) and "gpu": EngineConfig's own defaults.
"""

from __future__ import annotations

import importlib.util

CPU_SPEECH = "cpu-speech"


def profile_name(model: str | None, device: str, given: dict) -> str:
    """The profile `model` runs with on `device` ("auto": a GPU if torch sees one)."""
    import torch

    if device.startswith("cuda") or (device == "auto" and torch.cuda.is_available()):
        return "gpu"
    if given.get("dtype", "auto") not in ("auto", "float32"):
        return "cpu"
    return CPU_SPEECH if encodes_audio(model, given.get("revision")) else "cpu"


def profile_defaults(model: str | None, given: dict) -> dict:
    """The profile's settings that `given` (the options asked for) leaves open."""
    if profile_name(model, str(given.get("device", "auto")), given) != CPU_SPEECH:
        return {}
    defaults = {}
    if given.get("quantization") is None and given.get("dtype", "auto") == "auto":
        defaults["quantization"] = "int8"
    if (given.get("quantization") or defaults.get("quantization")) == "int8":
        if openvino_installed() and given.get("encoder_quantization") is None:
            defaults["encoder_runtime"] = "openvino"
        defaults["kv_cache_dtype"] = "float16"
    return defaults


def encodes_audio(model: str | None, revision: str | None = None) -> bool:
    """Whether the checkpoint's encoder reads audio, from its config alone (no weights read)."""
    from scriba.models.loader import is_ctranslate2_folder, resolve_model_path
    from scriba.models.registry import load_hf_config, model_class_for

    if model is None:
        return True  # the bundled tiny.en
    path = resolve_model_path(model, revision)
    if is_ctranslate2_folder(path):
        return True  # the CTranslate2 folders Scriba reads are Whisper's
    return model_class_for(load_hf_config(path)[1]).encodes_audio


def openvino_installed() -> bool:
    return importlib.util.find_spec("openvino") is not None
