"""Map, then reduce: a text longer than the model's input is summarized piece by piece, and
while the joined piece summaries are longer than the summary asked for, they are summarized
again, level by level, until one summary fits. Every piece of every text at one level goes
to the engine as one batch."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from scriba.engine.sampling_params import SamplingParams
from scriba.summarization.pieces import split_to_fit, token_counter


@dataclass(frozen=True)
class Lengths:
    """final: the caller's settings, for a level that is one piece (its output is the summary).
    step: for a level of several pieces: at most a quarter of an input long, so that four
    piece summaries fit one input and every level has fewer pieces than the one before.
    target: tokens; joined piece summaries this short are the summary."""

    final: SamplingParams
    step: SamplingParams
    target: int

    @classmethod
    def of(cls, final: SamplingParams, max_input: int) -> Lengths:
        cap = max(1, min(final.max_tokens, max_input // 4))
        step = dataclasses.replace(final, max_tokens=cap, min_tokens=min(final.min_tokens, cap))
        return cls(final, step, final.max_tokens)


@dataclass
class Levels:
    """One text's way to its summary."""

    summary: str
    pieces: list[int]  # pieces summarized at each level
    first: list[str]  # the first level's piece summaries, in order


def summarize_levels(loop, first_pieces: list[list[str]], lengths: Lengths) -> list[Levels]:
    """`first_pieces`: each text already cut to fit the model's input (sentences, or a
    transcript's sections). Returns each text's summary, levels and first-level summaries."""
    tokenizer, max_input = loop.engine.tokenizer, loop.engine.model.max_encoder_len
    count = token_counter(tokenizer)
    pieces = [list(p) for p in first_pieces]
    found: list[Levels | None] = [None] * len(pieces)
    history: list[list[int]] = [[] for _ in pieces]
    firsts: list[list[str] | None] = [None] * len(pieces)
    while active := [i for i, f in enumerate(found) if f is None]:
        outputs = _one_level(loop, [pieces[i] for i in active], lengths)
        for i, summaries in zip(active, outputs):
            history[i].append(len(pieces[i]))
            firsts[i] = summaries if firsts[i] is None else firsts[i]
            joined = " ".join(summaries)
            if len(pieces[i]) == 1 or count(joined) <= lengths.target:
                found[i] = Levels(joined, history[i], firsts[i])
            else:
                pieces[i] = split_to_fit(joined, tokenizer, max_input)
    return found


def _one_level(loop, groups: list[list[str]], lengths: Lengths) -> list[list[str]]:
    """Every piece of every group in one engine batch; the summaries, grouped the same way."""
    prompts = [p for group in groups for p in group]
    params = [lengths.final if len(group) == 1 else lengths.step for group in groups for _ in group]
    texts = iter(o.outputs[0].text.strip() for o in loop.generate(prompts, params))
    return [[next(texts) for _ in group] for group in groups]
