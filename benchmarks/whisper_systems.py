"""The systems that bench_whisper.py compares, each a callable: list of audio paths -> texts."""

from __future__ import annotations

import os

import torch

import scriba
from scriba.media.load import load_audio
from scriba.models.offline import offline_model_path
from scriba.models.registry import default_model_path
from scriba.whisper.checkpoint_config import transformers_configs
from scriba.whisper.ctranslate2 import load_ctranslate2_whisper

SCRIBA_MODES = {
    "default": {},  # on this CPU: int8, the encoder in OpenVINO (scriba.runtime.loops.speech_config)
    "int8-torch-encoder": {"encoder_runtime": "torch"},  # the int8 default before OpenVINO's encoder
    "float32": {"dtype": "float32"},  # the exact mode
    "bfloat16": {"dtype": "bfloat16"},
    "int8": {"quantization": "int8"},
    # the default with the KV cache in bfloat16 (the numba kernel), not float32 (SDPA)
    "bfloat16-KV": {"kv_cache_dtype": "bfloat16"},
    # the default with the KV cache in float16 (10 bits of mantissa; F16C widens it in the kernels)
    "float16-KV": {"kv_cache_dtype": "float16"},
    # the default with a lone request's decode steps in the torch modules, not the numba step
    "torch-decoder": {"decoder_runtime": "torch"},
    # the default with an 8-bit KV cache, a scale per cached vector (kernels/kv8.py): e4m3, int8
    "fp8-KV": {"kv_cache_dtype": "fp8"},
    "int8-KV": {"kv_cache_dtype": "int8"},
}


def scriba_systems(
    modes: list[str], model: str | None = None, sequential: bool = False, language: str | None = None
) -> dict:
    """Scriba in each mode through `scriba.transcribe` (all files in one call: their windows
    share engine steps), batched windows; with `sequential`, also mode="sequential"."""
    systems = {}
    for kind in ("batched", "sequential") if sequential else ("batched",):
        for mode in modes:
            name = f"Scriba {mode}" + (" sequential" if kind == "sequential" else "")
            options = dict(SCRIBA_MODES[mode], mode=kind, model=model, language=language)
            systems[name] = lambda files, o=options: [t.text for t in scriba.transcribe(files, **o)]
    return systems


def faster_whisper_systems(
    threads: int, model: str | None = None, compute_types=("int8", "float32"), language: str | None = "en"
) -> dict:
    """faster-whisper, one file at a time and batched (its BatchedInferencePipeline), on the
    same weights (`model`: an offline name; None: tiny.en); {} if not installed."""
    try:
        from faster_whisper import BatchedInferencePipeline, WhisperModel
    except ImportError:
        print("faster-whisper is not installed (pip install -e '.[bench]'): its rows are left out")
        return {}
    folder = offline_model_path(model or "tiny.en")
    systems = {}
    for compute_type in compute_types:
        model = WhisperModel(folder, device="cpu", compute_type=compute_type, cpu_threads=threads)
        batched = BatchedInferencePipeline(model)

        def one_by_one(files, m=model):
            return [
                "".join(s.text for s in m.transcribe(f, beam_size=1, language=language)[0]) for f in files
            ]

        def in_batches(files, b=batched):
            return [
                "".join(s.text for s in b.transcribe(f, beam_size=1, language=language)[0]) for f in files
            ]

        systems[f"faster-whisper {compute_type}"] = one_by_one
        systems[f"faster-whisper {compute_type} batched"] = in_batches
    return systems


def transformers_system(long_form: bool) -> dict:
    """transformers' WhisperForConditionalGeneration (sdpa, float32) on the same weights."""
    from transformers import WhisperFeatureExtractor, WhisperForConditionalGeneration, WhisperTokenizerFast

    folder = default_model_path()
    state_dict, *configs = load_ctranslate2_whisper(folder)
    config, generation_config = transformers_configs(*configs)
    config._attn_implementation = "sdpa"
    model = WhisperForConditionalGeneration(config)
    model.load_state_dict({k: v.float() for k, v in state_dict.items()}, strict=False)
    model.generation_config = generation_config
    model.eval()
    tokenizer = WhisperTokenizerFast(tokenizer_file=os.path.join(folder, "tokenizer.json"))
    extractor = WhisperFeatureExtractor(feature_size=config.num_mel_bins)

    def run(files):
        audio = [load_audio(f) for f in files]
        if long_form:  # whole recordings: generate() runs its sequential long-form loop
            inputs = extractor(
                audio,
                sampling_rate=16000,
                truncation=False,
                padding="longest",
                return_attention_mask=True,
                return_tensors="np",
            )
            kwargs = {"attention_mask": torch.from_numpy(inputs.attention_mask)}
        else:
            inputs, kwargs = extractor(audio, sampling_rate=16000, return_tensors="np"), {}
        with torch.inference_mode():
            ids = model.generate(torch.from_numpy(inputs.input_features), return_timestamps=True, **kwargs)
        return tokenizer.batch_decode(ids, skip_special_tokens=True)

    return {"transformers float32": run}
