"""Text cut into pieces that fit a model's input: whole sentences where they fit, words where
a sentence alone is too long. Nothing is dropped: the pieces joined by spaces are the text."""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?。])\s+")


def token_counter(tokenizer):
    """text -> its token count, special tokens left out."""
    return lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])


def split_to_fit(text: str, tokenizer, max_tokens: int) -> list[str]:
    """Pieces of whole sentences, each within `max_tokens` tokens (special tokens included);
    a sentence longer than that on its own is cut between words."""
    budget = max_tokens - 2  # <s> ... </s>
    count = token_counter(tokenizer)
    if count(text) <= budget:
        return [text]
    units = []
    for sentence in _SENTENCE_END.split(text.strip()):
        units += pack(sentence.split(), count, budget) if count(sentence) > budget else [sentence]
    return pack(units, count, budget)


def pack(units: list[str], count, budget: int) -> list[str]:
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
