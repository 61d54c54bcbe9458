"""The engine: inputs, sequences, block manager, scheduler, model runner, sampler, outputs."""

from scriba.engine.engine import Engine
from scriba.engine.inputs import ExplicitEncoderDecoderPrompt, PromptType, TextPrompt, TokensPrompt
from scriba.engine.outputs import CompletionOutput, Logprob, RequestOutput
from scriba.engine.sampling_params import SamplingParams

__all__ = [
    "CompletionOutput",
    "Engine",
    "ExplicitEncoderDecoderPrompt",
    "Logprob",
    "PromptType",
    "RequestOutput",
    "SamplingParams",
    "TextPrompt",
    "TokensPrompt",
]
