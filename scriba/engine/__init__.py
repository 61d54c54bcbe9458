"""The engine: inputs, sequences, block manager, scheduler, model runner, sampler, outputs.

Names are imported on first use, so the plain-Python parts (block manager, scheduler)
import without torch.
"""

import importlib

_EXPORTS = {
    "Engine": "scriba.engine.engine",
    "ExplicitEncoderDecoderPrompt": "scriba.engine.inputs",
    "PromptType": "scriba.engine.inputs",
    "TextPrompt": "scriba.engine.inputs",
    "TokensPrompt": "scriba.engine.inputs",
    "CompletionOutput": "scriba.engine.outputs",
    "Logprob": "scriba.engine.outputs",
    "RequestOutput": "scriba.engine.outputs",
    "SamplingParams": "scriba.engine.sampling_params",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'scriba.engine' has no attribute {name!r}")
