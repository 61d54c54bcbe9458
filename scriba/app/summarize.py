"""summarize(): long text in, short text out, with the checkpoint's own generation settings.

Text longer than the model's input is split on sentence boundaries into pieces that fit,
the pieces are summarized together in one engine batch, and their summaries are joined in
order: nothing is silently truncated.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from scriba.app.engines import check_options, get_loop

DEFAULT_SUMMARIZER = "facebook/bart-large-cnn"
_SENTENCE_END = re.compile(r"(?<=[.!?。])\s+")


def summarize(
    text: str | Sequence[str],
    model: str = DEFAULT_SUMMARIZER,
    max_length: int | None = None,
    min_length: int | None = None,
    **engine_config,
) -> str | list[str]:
    """Summarize a text (or each text of a list). `max_length` / `min_length` count summary
    tokens as transformers does (from the decoder start); None keeps the checkpoint's values."""
    single = isinstance(text, str)
    texts = [text] if single else list(text)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"text {i} is a {type(t).__name__}, not a str")
        if not t.strip():
            raise ValueError(f"text {i} is empty: there is nothing to summarize")
    check_options(engine_config, summarize)
    loop = get_loop(model, **engine_config)
    engine = loop.engine
    if getattr(engine.model, "encodes_audio", False):
        raise ValueError(f"model {model!r} is a speech model: use scriba.transcribe()")
    if engine.tokenizer is None:
        raise ValueError(f"model {model!r} has no tokenizer files: summarize() needs one")
    params = engine.generation_defaults("summarization", **_length_overrides(engine, max_length, min_length))
    pieces = [split_to_fit(t, engine.tokenizer, engine.model.max_encoder_len) for t in texts]
    prompts = [p for ps in pieces for p in ps]
    outputs = loop.generate(prompts, [params] * len(prompts))
    summaries, k = [], 0
    for ps in pieces:
        summaries.append(" ".join(o.outputs[0].text.strip() for o in outputs[k : k + len(ps)]))
        k += len(ps)
    return summaries[0] if single else summaries


def _length_overrides(engine, max_length: int | None, min_length: int | None) -> dict:
    prompt_len = len(engine.model.default_decoder_prompt())
    overrides = {}
    if max_length is not None:
        if max_length <= prompt_len:
            raise ValueError(
                f"max_length must be more than {prompt_len} (the decoder's start tokens), got {max_length}"
            )
        overrides["max_tokens"] = max_length - prompt_len
    if min_length is not None:
        if max_length is not None and min_length > max_length:
            raise ValueError(f"min_length {min_length} is more than max_length {max_length}")
        overrides["min_tokens"] = max(0, min_length - prompt_len)
    return overrides


def split_to_fit(text: str, tokenizer, max_tokens: int) -> list[str]:
    """Pieces of whole sentences, each within `max_tokens` tokens (special tokens included);
    a sentence longer than that on its own is cut between words."""
    budget = max_tokens - 2  # <s> ... </s>
    count = lambda s: len(tokenizer(s, add_special_tokens=False)["input_ids"])  # noqa: E731
    if count(text) <= budget:
        return [text]
    units = []
    for sentence in _SENTENCE_END.split(text.strip()):
        units += _pack(sentence.split(), count, budget) if count(sentence) > budget else [sentence]
    return _pack(units, count, budget)


def _pack(units: list[str], count, budget: int) -> list[str]:
    """Join consecutive units (sentences, or words of one long sentence) with spaces into
    pieces of at most `budget` tokens."""
    pieces, current = [], ""
    for unit in units:
        candidate = f"{current} {unit}".strip()
        if current and count(candidate) > budget:
            pieces.append(current)
            current = unit
        else:
            current = candidate
    return pieces + ([current] if current else [])
