"""A model family's request processing: what the engine core does not know about models.

The core (engine, scheduler, sequences, block manager, runner, sampler) runs any
encoder/decoder model on token ids or features. What a family adds lives here and in its
subclass, found through models/registry.py: the prompt forms it accepts and how they become
inputs (text models: tokenize and the decoder-prompt hooks; speech models: audio, features,
their decoder prompt), its extra logits processors, the prompt log-prob it asks for, and what its outputs
say beyond tokens (`annotate`). `process` touches no engine state, so input work (audio
decoding, features) runs in the caller's thread, never in the engine's step loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scriba.engine.inputs import EncoderDecoderInputs, InputLimits, PromptReader, PromptType
from scriba.engine.logits_processors import LogitsProcessor, build_processors
from scriba.engine.outputs import Annotations, PromptLogprobQuery
from scriba.engine.sampling_params import SamplingParams
from scriba.models.registry import REQUEST_PROCESSING, named


@dataclass
class PreparedRequest:
    """A prompt and its params, checked and ready for `Engine.add_request`."""

    inputs: EncoderDecoderInputs
    params: SamplingParams
    processors: list[LogitsProcessor]
    beam_begin: int  # decoder index from which beam scores count tokens as generated
    prompt_logprob_query: PromptLogprobQuery | None = None


class RequestProcessing:
    """Text models: a prompt is text or token ids for the encoder."""

    def __init__(self, model: Any, tokenizer: Any, eos_token_ids: list[int]):
        self.model = model
        self.eos_token_ids = eos_token_ids
        limits = InputLimits(model.vocab_size, model.max_encoder_len, model.max_decoder_len)
        self.inputs = PromptReader(tokenizer, model, limits)

    def prepare(self, prompt: PromptType, params: SamplingParams | None = None) -> PreparedRequest:
        """Validate and process one request; a bad one raises ValueError (or TypeError)."""
        params = params or SamplingParams()
        inputs = self.read_prompt(prompt)
        vocab = self.model.vocab_size
        bad = [t for t in params.token_ids_to_check() if not 0 <= t < vocab]
        if bad:
            raise ValueError(f"sampling params name token ids outside the vocabulary [0, {vocab}): {bad}")
        prompt_len = len(inputs.decoder_token_ids)
        processors = build_processors(params, [] if params.ignore_eos else self.eos_token_ids, prompt_len)
        # Beam scores count tokens from where transformers' prompt ends: a forced <BOS> counts
        # as generated.
        return PreparedRequest(inputs, params, processors, prompt_len - inputs.num_forced_prompt_tokens)

    def read_prompt(self, prompt: PromptType) -> EncoderDecoderInputs:
        return self.inputs.read(prompt)

    def load_kernels(self, device) -> None:
        """Load the compiled kernels of the family's own logits rules for logits (float32) on
        this device (a torch.device) ahead of the first step (engine/kernel_preload.py); none here."""

    def annotate(
        self, inputs: EncoderDecoderInputs, seq: Any, prompt_logprob: float | None
    ) -> Annotations | None:
        """`RequestOutput.annotations` of a request whose first sequence is `seq` and whose
        prompt_logprob_query read `prompt_logprob`: what the model says beyond tokens (text
        models: nothing)."""
        return None


def request_processing_for(model: Any, tokenizer: Any, eos_token_ids: list[int]) -> RequestProcessing:
    where = REQUEST_PROCESSING.get(getattr(model.config, "model_type", None))
    cls = RequestProcessing if where is None else named(where)
    return cls(model, tokenizer, eos_token_ids)
