"""Whisper's decoder prompt: `[<|startofprev|> hotwords previous text] <|startoftranscript|> <|lang|>
<|task|> [<|notimestamps|>] [<|0.00|> prefix]`, and where in it each part sits.

As faster-whisper lays it out: hotwords (hint phrases) go before the previous text, and a prefix
(the text the window starts with) follows <|0.00|> when timestamps are on. The prefix then counts
as generated text for Whisper's rules (`rules_begin`), so the text after it follows the timestamp
grammar instead of starting with a forced timestamp.

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
    rules_begin: int  # where the text Whisper's rules read begins: sample_begin, or the prefix's start
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
    hotword_ids: list[int] = (),
) -> tuple[list[int], PromptLayout]:
    """The decoder prompt for one window and its layout. `tokens` is the model's WhisperTokens."""
    if task not in TASKS:
        raise ValueError(f"task must be 'transcribe' or 'translate', got {task!r}")
    if task == "translate" and not tokens.is_multilingual:
        raise ValueError("this model is English-only: it cannot translate (task='translate')")
    prompt = _context(tokens, list(hotword_ids), list(prev_ids), max_len)
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
    prefix = prefix_tokens(tokens, prefix_ids, timestamps)
    rest += prefix
    if detect:
        begin = len(prompt) + 1 + len(rest)
        layout = PromptLayout(sot_index, begin, begin - len(prefix), True, rest, timestamps)
    else:
        prompt += rest
        layout = PromptLayout(sot_index, len(prompt), len(prompt) - len(prefix), False, [], timestamps)
    return prompt, layout


def prefix_tokens(tokens, prefix_ids: list[int], timestamps: bool) -> list[int]:
    """A prefix as the prompt holds it: after <|0.00|> when timestamps are on."""
    if not prefix_ids:
        return []
    return [tokens.timestamp_begin, *prefix_ids] if timestamps else list(prefix_ids)


def _context(tokens, hotword_ids: list[int], prev_ids: list[int], max_len: int) -> list[int]:
    """`<|startofprev|> hotwords previous-text`, within half the decoder context (openai-whisper's
    share of the previous text): hotwords first, the latest previous text in what is left."""
    if not (hotword_ids or prev_ids):
        return []
    room = max_len // 2 - 1
    hot = hotword_ids[:room]
    prev = prev_ids[len(prev_ids) - (room - len(hot)) :] if room > len(hot) else []
    return [tokens.start_of_prev, *hot, *prev]
