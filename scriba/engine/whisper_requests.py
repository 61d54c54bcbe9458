"""Whisper's request processing: audio prompts, the decoder-prompt plan, its rules and probe.

An audio prompt is decoded and turned into log-mel features here, in `process`, which runs in
the caller's thread (see request_processing.py). The decoder prompt is planned from the
options (whisper_decoding.py); the request gets Whisper's logits processors, and the
no-speech probability at <|startoftranscript|> is probed at prefill. Outputs report the
language, given or detected.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scriba.engine.inputs import AUDIO_OPTIONS, EncoderDecoderInputs, PromptType, is_audio_prompt
from scriba.engine.request_processing import ProcessedRequest, RequestProcessing
from scriba.engine.sampling_params import SamplingParams
from scriba.engine.whisper_decoding import build_whisper_processors, plan_decoder_prompt, spoken_language


class WhisperRequestProcessing(RequestProcessing):
    def process(self, prompt: PromptType, params: SamplingParams | None = None) -> ProcessedRequest:
        request = super().process(prompt, params)
        inputs, tokens = request.inputs, self.model.tokens
        plan = inputs.audio_plan
        if plan is not None:
            request.processors += build_whisper_processors(tokens, plan)
            # Whisper's detected language and forced control tokens are chosen greedily (one
            # sequence) before the beams start, and do not count as generated.
            request.beam_begin = plan.sample_begin
        if tokens.sot in inputs.decoder_token_ids:
            request.probe = (inputs.decoder_token_ids.index(tokens.sot), tokens.no_speech)
        return request

    def process_prompt(self, prompt: PromptType) -> EncoderDecoderInputs:
        if not is_audio_prompt(prompt):
            raise ValueError("this model transcribes audio: give {'audio': ...}")
        explicit = "encoder_prompt" in prompt
        options = prompt["encoder_prompt"] if explicit else prompt
        allowed = {"audio", "input_features"} if explicit else AUDIO_OPTIONS
        unknown = set(options) - allowed
        if unknown:
            raise ValueError(f"unknown keys in audio prompt: {sorted(unknown)} (allowed: {sorted(allowed)})")
        features, seconds = self._features(options)
        limits = self.inputs.limits
        inputs = EncoderDecoderInputs([], [], encoder_features=features, audio_seconds=seconds)
        inputs.num_encoder_positions = limits.max_encoder_len
        if explicit and prompt.get("decoder_prompt") is not None:
            decoder = prompt["decoder_prompt"]
            inputs.decoder_prompt, ids = self.inputs.tokenize(decoder, "decoder", add_special_tokens=False)
            inputs.decoder_token_ids = self.model.prepare_decoder_prompt(ids)
        else:
            inputs.decoder_token_ids, inputs.audio_plan = self._plan(options)
        self.inputs.check(inputs.decoder_token_ids, "decoder", limits.max_decoder_len)
        return inputs

    def _plan(self, options: dict):
        timestamps = options.get("timestamps", False)
        if not isinstance(timestamps, bool):
            raise ValueError(f"timestamps must be True or False, got {timestamps!r}")
        prev = self.inputs.text_ids(options.get("prompt"), "prompt", leading_space=True)
        prefix = self.inputs.text_ids(options.get("prefix"), "prefix", leading_space=True)
        language, task = options.get("language"), options.get("task", "transcribe")
        max_len = self.inputs.limits.max_decoder_len
        return plan_decoder_prompt(self.model.tokens, language, task, timestamps, prev, prefix, max_len)

    def _features(self, options: dict) -> tuple[np.ndarray, float | None]:
        from scriba.engine.audio import SAMPLE_RATE, WINDOW_SECONDS, load_audio, log_mel

        mels, frames = self.model.num_mel_bins, self.model.num_frames
        if "input_features" in options:
            features = np.asarray(options["input_features"], dtype=np.float32)
            if features.shape != (mels, frames):
                raise ValueError(f"input_features must have shape ({mels}, {frames}), got {features.shape}")
            return features, None
        samples = load_audio(options.get("audio"))
        seconds = len(samples) / SAMPLE_RATE
        if seconds > WINDOW_SECONDS + 1e-6:
            raise ValueError(
                f"audio is {seconds:.1f} s long; one request holds up to {WINDOW_SECONDS} s: "
                "use scriba.transcribe() for long audio"
            )
        return log_mel([samples], mels, frames)[0], seconds

    def annotate(self, inputs: EncoderDecoderInputs, seq: Any) -> dict[str, Any]:
        language, probability = spoken_language(self.model.tokens, inputs, seq)
        return {"language": language, "language_probability": probability}
