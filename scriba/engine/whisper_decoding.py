"""Whisper's decoder prompt and decoding rules, as small logits processors.

The decoder prompt is `[<|startofprev|> previous text] <|startoftranscript|> <|lang|> <|task|>
[<|notimestamps|>] [prefix]`. With no language given (multilingual checkpoints), the prompt
stops after <|startoftranscript|>: the first generated token is restricted to the language
tokens (the detection, in the same pass as the transcription), and the task / timestamp /
prefix tokens are then forced. The rules (suppress at begin, suppress, timestamps) act from
`sample_begin`, the first token the model chooses freely, as in openai-whisper and
transformers' `WhisperTimeStampLogitsProcessor`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from scriba.engine.logits_processors import ForceToken, LogitsProcessor

TASKS = ("transcribe", "translate")


@dataclass
class AudioPlan:
    """How a Whisper request's decoder sequence is laid out (indices into the decoder tokens)."""

    sot_index: int  # <|startoftranscript|>: its logits give the no-speech probability
    sample_begin: int  # the first freely chosen token
    detect_language: bool  # the token at sot_index + 1 is generated, restricted to languages
    forced: list[int]  # tokens forced after the detected language (task, notimestamps, prefix)
    timestamps: bool


def language_code(language: str, tokens) -> str:
    """'en', 'English' or 'english' -> 'en'; a clear error for anything the model lacks."""
    from transformers.models.whisper.tokenization_whisper import LANGUAGES, TO_LANGUAGE_CODE

    if not isinstance(language, str):
        raise ValueError(f"language must be a string like 'en' or None to detect it, got {language!r}")
    code = language.strip().lower()
    code = TO_LANGUAGE_CODE.get(code, code)
    if not tokens.is_multilingual:
        if code != "en":
            raise ValueError(f"this model is English-only: it cannot transcribe language {language!r}")
        return code
    if code not in tokens.lang_to_id:
        known = ", ".join(sorted(tokens.lang_to_id))
        hint = f" ({LANGUAGES[code].title()} is not among this model's languages)" if code in LANGUAGES else ""
        raise ValueError(f"unknown language {language!r}{hint}; use one of: {known}")
    return code


def plan_decoder_prompt(tokens, language: str | None, task: str, timestamps: bool, prev_ids: list[int], prefix_ids: list[int], max_len: int) -> tuple[list[int], AudioPlan]:
    """The decoder prompt and plan for one window. `tokens` is the model's WhisperTokens."""
    if task not in TASKS:
        raise ValueError(f"task must be 'transcribe' or 'translate', got {task!r}")
    if task == "translate" and not tokens.is_multilingual:
        raise ValueError("this model is English-only: it cannot translate (task='translate')")
    prompt: list[int] = []
    if prev_ids:  # openai-whisper keeps the last half-context of previous text
        prompt = [tokens.start_of_prev, *prev_ids[-(max_len // 2 - 1) :]]
    sot_index = len(prompt)
    prompt.append(tokens.sot)
    rest: list[int] = []
    detect = False
    if tokens.is_multilingual:
        if language is None:
            detect = True
        else:
            prompt.append(tokens.lang_to_id[language_code(language, tokens)])
        rest.append(tokens.translate if task == "translate" else tokens.transcribe)
    elif language is not None:
        language_code(language, tokens)  # checks it is English
    if not timestamps:
        rest.append(tokens.no_timestamps)
    rest += prefix_ids
    if detect:
        plan = AudioPlan(sot_index, len(prompt) + 1 + len(rest), True, rest, timestamps)
    else:
        prompt += rest
        plan = AudioPlan(sot_index, len(prompt), False, [], timestamps)
    return prompt, plan


class RestrictTo:
    """At one decoder length, keep only `token_ids` (the language tokens, for detection)."""

    def __init__(self, token_ids: list[int], at_length: int):
        self.token_ids = token_ids
        self.at_length = at_length

    def __call__(self, token_ids: list[int], num_generated: int, logits: torch.Tensor) -> torch.Tensor:
        if len(token_ids) == self.at_length:
            keep = logits[self.token_ids].clone()
            logits.fill_(-math.inf)
            logits[self.token_ids] = keep
        return logits


class SuppressFrom:
    """Suppress `token_ids` at every step from `begin` on (only at `begin` with `only_at_begin`)."""

    def __init__(self, token_ids: list[int], begin: int, only_at_begin: bool = False):
        self.token_ids = token_ids
        self.begin = begin
        self.only_at_begin = only_at_begin

    def __call__(self, token_ids: list[int], num_generated: int, logits: torch.Tensor) -> torch.Tensor:
        n = len(token_ids)
        if n == self.begin or (n > self.begin and not self.only_at_begin):
            logits[self.token_ids] = -math.inf
        return logits


class TimestampRules:
    """Whisper's timestamp grammar: timestamps come in pairs (except right before <|endoftext|>),
    never decrease, the first token is a timestamp no later than `max_initial_index`, and a
    timestamp is forced when the timestamps' total probability beats every text token."""

    def __init__(self, tokens, begin: int):
        self.eot = tokens.eot
        self.no_timestamps = tokens.no_timestamps
        self.timestamp_begin = tokens.timestamp_begin
        self.max_initial_index = tokens.max_initial_timestamp_index
        self.begin = begin

    def __call__(self, token_ids: list[int], num_generated: int, logits: torch.Tensor) -> torch.Tensor:
        if len(token_ids) < self.begin:
            return logits
        ts = self.timestamp_begin
        logits[self.no_timestamps] = -math.inf
        seq = token_ids[self.begin :]
        last_was_ts = len(seq) >= 1 and seq[-1] >= ts
        penultimate_was_ts = len(seq) < 2 or seq[-2] >= ts
        if last_was_ts:
            if penultimate_was_ts:  # a pair just closed: text (or eot) next
                logits[ts:] = -math.inf
            else:  # an open pair: a timestamp or eot next
                logits[: self.eot] = -math.inf
        stamps = [t for t in seq if t >= ts]
        if stamps:  # never go back in time; after a closed pair, strictly forward
            lowest = stamps[-1] if last_was_ts and not penultimate_was_ts else stamps[-1] + 1
            logits[ts:lowest] = -math.inf
        if not seq:
            logits[:ts] = -math.inf
            if self.max_initial_index is not None:
                logits[ts + self.max_initial_index + 1 :] = -math.inf
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        if logprobs[ts:].logsumexp(dim=-1) > logprobs[:ts].max():
            logits[:ts] = -math.inf
        return logits


def build_whisper_processors(tokens, plan: AudioPlan) -> list[LogitsProcessor]:
    """The rules in transformers' order (begin-suppress, suppress, timestamps), then detection."""
    begin = plan.sample_begin
    processors: list[LogitsProcessor] = []
    if tokens.begin_suppress_tokens:
        processors.append(SuppressFrom(tokens.begin_suppress_tokens, begin, only_at_begin=True))
    if tokens.suppress_tokens:
        processors.append(SuppressFrom(tokens.suppress_tokens, begin))
    if plan.timestamps:
        processors.append(TimestampRules(tokens, begin))
    if plan.detect_language:
        detect_at = plan.sot_index + 1
        processors.append(RestrictTo(sorted(tokens.lang_to_id.values()), detect_at))
        processors += [ForceToken(t, detect_at + 1 + i) for i, t in enumerate(plan.forced)]
    return processors


def spoken_language(tokens, inputs, seq) -> tuple[str | None, float | None]:
    """(language code, its probability among the languages when detected) of a request."""
    id_to_lang = {i: code for code, i in tokens.lang_to_id.items()}
    if not tokens.is_multilingual:
        return "en", None
    plan = inputs.audio_plan
    if plan is not None and plan.detect_language:
        index = plan.sot_index + 1
        if len(seq.token_ids) <= index:
            return None, None
        return id_to_lang.get(seq.token_ids[index]), math.exp(seq.token_logprobs[index - seq.prompt_len])
    found = [id_to_lang[t] for t in inputs.decoder_token_ids if t in id_to_lang]
    return (found[0] if found else None), None
