"""Whisper's request processing: audio prompts, the decoder prompt, its rules, the no-speech log-prob.

An audio prompt is decoded and turned into log-mel features here, in `process`, which runs in
the caller's thread (see engine/request_processing.py). The decoder prompt is built from the
options (prompt_layout.py); the request gets Whisper's logits processors (logits_rules.py), and
the log-prob of <|nospeech|> after <|startoftranscript|> is read at prefill (a prompt log-prob). Outputs carry
`WhisperAnnotations`: the language, given or detected, and that no-speech probability.

Audio prompts (see `AudioPrompt`):
    {"audio": A, "language": None | "en" | ..., "task": "transcribe", "timestamps": False,
     "prompt": previous text, "prefix": text, "hotwords": text,
     "suppress_tokens": [ids, -1 the checkpoint's], "suppress_blank": True,
     "max_initial_timestamp": seconds | None,
     "padding": "audio" | "mel"}                        the decoder prompt is built from the options
    {"encoder_prompt": {"audio": A}, "decoder_prompt": Q}  Q used as given
A is a path, bytes, a file object, (float array, sample_rate), or "input_features" replaces
"audio" with precomputed log-mel features [mel_bins, frames].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from scriba.engine.inputs import EncoderDecoderInputs, PromptType, is_audio_prompt
from scriba.engine.outputs import Annotations, PromptLogprobQuery
from scriba.engine.request_processing import PreparedRequest, RequestProcessing
from scriba.engine.sampling_params import SamplingParams
from scriba.whisper.languages import spoken_language
from scriba.whisper.logits_rules import DecodingRules, build_whisper_processors
from scriba.whisper.prompt_layout import PromptLayout, build_decoder_prompt


class AudioPrompt(TypedDict, total=False):
    audio: Any
    input_features: Any
    language: str | None
    task: str
    timestamps: bool
    prompt: str | list[int]
    prefix: str | list[int]
    hotwords: str | list[int]
    suppress_tokens: list[int] | None
    suppress_blank: bool
    max_initial_timestamp: float | None
    padding: str  # a window under 30 s filled with silent "audio" or "mel" zeros (log_mel.py)


AUDIO_OPTIONS = set(AudioPrompt.__annotations__)


@dataclass
class WhisperAnnotations(Annotations):
    """What a Whisper request's outputs say beyond their tokens (`RequestOutput.annotations`)."""

    language: str | None  # given or detected (None until the detected one is generated)
    language_probability: float | None  # among the languages, when detected
    no_speech_prob: float | None  # of <|nospeech|> at <|startoftranscript|>
    control_tokens: int = 0  # generated before the text: the detected <|lang|> and what is forced after it


@dataclass
class WhisperPlan:
    """A request's Whisper-specific data (`EncoderDecoderInputs.model_data`): how its decoder
    prompt is laid out and the rules it decodes under."""

    layout: PromptLayout
    rules: DecodingRules


def decoding_rules(tokens, vocab_size: int, options: dict) -> DecodingRules:
    """The request's DecodingRules, its options checked (one-line errors)."""
    suppress = options.get("suppress_tokens")
    if suppress is not None and not (
        isinstance(suppress, (list, tuple))
        and all(isinstance(t, int) and not isinstance(t, bool) for t in suppress)
        and all(t == -1 or 0 <= t < vocab_size for t in suppress)
    ):
        raise ValueError(
            f"suppress_tokens must be a list of token ids (-1: the model's default set), got {suppress!r}"
        )
    if not isinstance(options.get("suppress_blank", True), bool):
        raise ValueError(f"suppress_blank must be True or False, got {options['suppress_blank']!r}")
    latest = options.get("max_initial_timestamp")
    if latest is not None and (
        isinstance(latest, bool) or not isinstance(latest, (int, float)) or latest < 0
    ):
        raise ValueError(f"max_initial_timestamp must be seconds >= 0 or None, got {latest!r}")
    return DecodingRules.of(tokens, options)


class WhisperRequestProcessing(RequestProcessing):
    def prepare(self, prompt: PromptType, params: SamplingParams | None = None) -> PreparedRequest:
        request = super().prepare(prompt, params)
        inputs, tokens = request.inputs, self.model.tokens
        plan = inputs.model_data
        if plan is not None:
            layout = plan.layout
            request.processors += build_whisper_processors(tokens, layout, plan.rules)
            # Whisper's detected language and forced control tokens are chosen greedily (one
            # sequence) before the beams start, and do not count as generated.
            request.beam_begin = layout.sample_begin
        if tokens.sot in inputs.decoder_token_ids:
            sot = inputs.decoder_token_ids.index(tokens.sot)
            request.prompt_logprob_query = PromptLogprobQuery(sot, tokens.no_speech)
        return request

    def load_kernels(self, device) -> None:
        if device.type == "cpu":  # the timestamp rules' compiled pass (logits_rules.py)
            from scriba.whisper.timestamp_rules_cpu import load_kernel

            load_kernel()

    def read_prompt(self, prompt: PromptType) -> EncoderDecoderInputs:
        if not is_audio_prompt(prompt):
            raise ValueError("this model transcribes audio: give {'audio': ...}")
        explicit = "encoder_prompt" in prompt
        options = prompt["encoder_prompt"] if explicit else prompt
        allowed = {"audio", "input_features"} if explicit else AUDIO_OPTIONS
        unknown = set(options) - allowed
        if unknown:
            raise ValueError(f"unknown keys in audio prompt: {sorted(unknown)} (allowed: {sorted(allowed)})")
        limits = self.inputs.limits
        inputs = EncoderDecoderInputs([], [], encoder_features=self._features(options))
        inputs.num_encoder_positions = limits.max_encoder_len
        if explicit and prompt.get("decoder_prompt") is not None:
            decoder = prompt["decoder_prompt"]
            inputs.decoder_prompt, ids = self.inputs.tokenize(decoder, "decoder", add_special_tokens=False)
            inputs.decoder_token_ids = self.model.prepare_decoder_prompt(ids)
        else:
            inputs.decoder_token_ids, layout = self._decoder_prompt(options)
            inputs.model_data = WhisperPlan(
                layout, decoding_rules(self.model.tokens, self.model.vocab_size, options)
            )
        self.inputs.check(inputs.decoder_token_ids, "decoder", limits.max_decoder_len)
        return inputs

    def _decoder_prompt(self, options: dict):
        timestamps = options.get("timestamps", False)
        if not isinstance(timestamps, bool):
            raise ValueError(f"timestamps must be True or False, got {timestamps!r}")
        prev = self.inputs.text_ids(options.get("prompt"), "prompt", leading_space=True)
        prefix = self.inputs.text_ids(options.get("prefix"), "prefix", leading_space=True)
        hotwords = self.inputs.text_ids(options.get("hotwords"), "hotwords", leading_space=True)
        language, task = options.get("language"), options.get("task", "transcribe")
        max_len = self.inputs.limits.max_decoder_len
        return build_decoder_prompt(
            self.model.tokens, language, task, timestamps, prev, prefix, max_len, hotwords
        )

    def _features(self, options: dict) -> np.ndarray:
        from scriba.media.load import load_audio
        from scriba.whisper.constants import SAMPLE_RATE, WINDOW_SECONDS
        from scriba.whisper.log_mel import MEL_PADDINGS, log_mel

        padding = options.get("padding", "audio")
        if padding not in MEL_PADDINGS:
            raise ValueError(f"padding must be one of {MEL_PADDINGS}, got {padding!r}")
        mels, frames = self.model.num_mel_bins, self.model.num_frames
        if "input_features" in options:
            features = np.asarray(options["input_features"], dtype=np.float32)
            if features.shape != (mels, frames):
                raise ValueError(f"input_features must have shape ({mels}, {frames}), got {features.shape}")
            return features
        samples = load_audio(options.get("audio"))
        seconds = len(samples) / SAMPLE_RATE
        if seconds > WINDOW_SECONDS + 1e-6:
            raise ValueError(
                f"audio is {seconds:.1f} s long; one request holds up to {WINDOW_SECONDS} s: "
                "use scriba.transcribe() for long audio"
            )
        return log_mel([samples], mels, frames, padding)[0]

    def annotate(
        self, inputs: EncoderDecoderInputs, seq: Any, prompt_logprob: float | None
    ) -> WhisperAnnotations:
        plan = inputs.model_data
        layout = plan.layout if plan is not None else None
        language, probability = spoken_language(self.model.tokens, inputs.decoder_token_ids, layout, seq)
        control = layout.sample_begin - len(inputs.decoder_token_ids) if layout is not None else 0
        no_speech = None if prompt_logprob is None else math.exp(prompt_logprob)
        return WhisperAnnotations(language, probability, no_speech, control)
