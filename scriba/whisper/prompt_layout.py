"""Whisper's decoder prompt: `[<|startofprev|> previous text] <|startoftranscript|> <|lang|> <|task|>
[<|notimestamps|>] [prefix]`, and where in it each part sits.

With no language given (multilingual checkpoints), the prompt stops after
<|startoftranscript|>: the first generated token is restricted to the language tokens (the
detection, in the same pass as the transcription), and the task / timestamp / prefix tokens
are then forced (logits_rules.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from scriba.whisper.languages import language_code

TASKS = ("transcribe", "translate")


@dataclass
class PromptLayout:
    """How a Whisper request's decoder sequence is laid out (indices into the decoder tokens)."""

    sot_index: int  # <|startoftranscript|>: its logits give the no-speech probability
    sample_begin: int  # the first freely chosen token
    detect_language: bool  # the token at sot_index + 1 is generated, restricted to languages
    forced: list[int]  # tokens forced after the detected language (task, notimestamps, prefix)
    timestamps: bool


def build_decoder_prompt(
    tokens,
    language: str | None,
    task: str,
    timestamps: bool,
    prev_ids: list[int],
    prefix_ids: list[int],
    max_len: int,
) -> tuple[list[int], PromptLayout]:
    """The decoder prompt for one window and its layout. `tokens` is the model's WhisperTokens."""
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
        layout = PromptLayout(sot_index, len(prompt) + 1 + len(rest), True, rest, timestamps)
    else:
        prompt += rest
        layout = PromptLayout(sot_index, len(prompt), False, [], timestamps)
    return prompt, layout
