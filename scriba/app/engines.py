"""One engine per model per process, created on first use and shared by every caller.

Callers do not drive the Engine themselves: an `EngineLoop` (engine_loop.py) owns it in a
background thread. `loop.generate(prompts, params)` may be called from any number of threads at
once; their requests join the same continuous batch, so concurrent users share engine steps.
"""

from __future__ import annotations

import importlib.util
import threading

import torch

from scriba.app.engine_loop import EngineBusy, EngineClosed, EngineLoop
from scriba.engine.engine import Engine
from scriba.models.offline import DEFAULT, installed_offline_models

__all__ = [
    "EngineBusy",
    "EngineClosed",
    "EngineLoop",
    "check_options",
    "default_whisper_models",
    "get_loop",
    "speech_config",
    "get_engine",
    "close_loops",
]

_loops: dict[tuple, "EngineLoop"] = {}
_lock = threading.Lock()


def engine_fields() -> set[str]:
    """The EngineConfig settings a caller may pass along (the model is named apart)."""
    import dataclasses

    from scriba.config import EngineConfig

    return {f.name for f in dataclasses.fields(EngineConfig)} - {"model"}


def unknown_option(name: str, known: set[str]) -> TypeError:
    """A one-line error for a misspelled option, naming the nearest known one."""
    import difflib

    close = difflib.get_close_matches(name, sorted(known), n=1)
    return TypeError(f"unknown option {name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))


def check_options(config: dict, function) -> None:
    """Engine settings passed through `function`'s **kwargs must be EngineConfig fields."""
    import inspect

    fields = engine_fields()
    for name in config:
        if name not in fields:
            own = {p for p in inspect.signature(function).parameters if p != "engine_config"}
            raise unknown_option(name, fields | own)


def default_whisper_models() -> list[str | None]:
    """The Whisper models offered when none are named: the bundled tiny.en (None), and the
    other offline models that are installed (`base`, with the multilingual extra)."""
    return [None] + [name for name in installed_offline_models() if name != DEFAULT]


def speech_config(config: dict) -> dict:
    """The engine settings a transcription runs with: on a CPU, unless a dtype or a
    quantization is asked for, int8 (models/quantize.py), and with int8 the encoder run by
    OpenVINO unless an encoder_runtime is asked for. Measured on real speech
    (benchmarks/bench_whisper.py, README: CPU modes): 1.3-1.5x float32's speed, and over the
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
    return config


def openvino_installed() -> bool:
    return importlib.util.find_spec("openvino") is not None


def get_loop(model: str | None = None, **config) -> EngineLoop:
    """The shared engine loop for `model` (None or "tiny.en": the bundled Whisper tiny.en) and
    these settings."""
    model = None if model == DEFAULT else model
    key = (model, tuple(sorted(config.items())))
    with _lock:
        loop = _loops.get(key)
        if loop is None:
            loop = _loops[key] = EngineLoop(Engine(model, **config))
        return loop


def get_engine(model: str | None = None, **config) -> Engine:
    """The shared engine itself (drive it only through its loop while others may use it)."""
    return get_loop(model, **config).engine


def close_loops(model: str | None) -> int:
    """Stop and forget every shared loop of `model` (its memory goes with it); returns how many."""
    with _lock:
        keys = [k for k in _loops if k[0] == model]
        loops = [_loops.pop(k) for k in keys]
    for loop in loops:
        loop.close()
    return len(loops)
