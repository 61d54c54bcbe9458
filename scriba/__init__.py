"""Scriba: a paged encoder/decoder inference engine for Whisper and BART.

Public names: transcribe, transcribe_stream, summarize, the voice library (remember_voice,
forget_voice, kept_voices), unload, loaded_models, Engine, EngineConfig, SamplingParams, the prompt
types and outputs.
They are imported on first use, so `import scriba` is quick and torch loads only when needed.
Importing changes nothing process-wide: the heap settings (engine/host_heap.py) are set where
Scriba's own programs start (the `scriba` command) and, in a host program, when an engine first
sizes its KV pool on the CPU (engine/memory.py).
"""

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "transcribe": "scriba.transcription.transcribe",
    "transcribe_stream": "scriba.transcription.stream",
    "TranscriptionInfo": "scriba.transcription.stream",
    "TranscribeOptions": "scriba.transcription.options",
    "summarize": "scriba.summarization.summarize",
    "remember_voice": "scriba.transcription.kept_voices",
    "forget_voice": "scriba.transcription.kept_voices",
    "kept_voices": "scriba.transcription.kept_voices",
    "unload": "scriba.runtime.loops",
    "loaded_models": "scriba.runtime.loops",
    "Transcription": "scriba.transcription.results",
    "Segment": "scriba.transcription.results",
    "AudioPrompt": "scriba.whisper.requests",
    "EngineConfig": "scriba.config",
    "Engine": "scriba.engine",
    "SamplingParams": "scriba.engine",
    "RequestOutput": "scriba.engine",
    "CompletionOutput": "scriba.engine",
    "Logprob": "scriba.engine",
    "PromptType": "scriba.engine",
    "TextPrompt": "scriba.engine",
    "TokensPrompt": "scriba.engine",
    "ExplicitEncoderDecoderPrompt": "scriba.engine",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'scriba' has no attribute {name!r}")
