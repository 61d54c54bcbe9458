"""summarize(): long text in, short text out, with the checkpoint's own generation settings.

A text longer than the model's input is split on sentence boundaries into pieces that fit;
the pieces are summarized together in one engine batch and, while their joined summaries are
longer than the summary asked for, summarized again (scriba.summarization.levels): nothing is
silently truncated and `max_length` bounds the result. A transcript (a transcription result
or its JSON) is cut at segment boundaries into sections that each get a summary and a time
range, and the section summaries make the overall summary.
"""

from __future__ import annotations

from collections.abc import Sequence

from scriba.runtime.loops import acquire_loop, check_options, release_loop
from scriba.summarization import DEFAULT_SUMMARIZER
from scriba.summarization.levels import Lengths, summarize_levels
from scriba.summarization.pieces import split_to_fit
from scriba.summarization.result import Section, Summary
from scriba.summarization.sections import sections, transcript_spans

__all__ = ["DEFAULT_SUMMARIZER", "summarize", "split_to_fit"]


def summarize(
    text,
    model: str = DEFAULT_SUMMARIZER,
    max_length: int | None = None,
    min_length: int | None = None,
    **engine_config,
) -> Summary | list[Summary]:
    """Summarize a text, a transcript (scriba.transcribe()'s result, or its JSON as a dict), or
    each item of a list of them. `max_length` / `min_length` count summary tokens as
    transformers does (from the decoder start); None keeps the checkpoint's values. Returns a
    Summary: a str with `.pieces` per level and, for a transcript, `.sections`."""
    single = isinstance(text, str) or not isinstance(text, Sequence)
    items = [text] if single else list(text)
    spans = [_spans_of(item, i) for i, item in enumerate(items)]
    check_options(engine_config, summarize)
    loop = acquire_loop(model, **engine_config)  # not unloaded before the summaries are done
    try:
        found, cuts = _summarized(_summarizer(model, loop), items, spans, max_length, min_length)
    finally:
        release_loop(loop)
    summaries = [
        Summary(f.summary, f.pieces, () if cut is None else _sections(cut, f)) for f, cut in zip(found, cuts)
    ]
    return summaries[0] if single else summaries


def _spans_of(item, index: int):
    """A transcript's segment spans; None for a text; ValueError/TypeError for anything else."""
    if isinstance(item, str):
        if not item.strip():
            raise ValueError(f"text {index} is empty: there is nothing to summarize")
        return None
    spans = transcript_spans(item, index)
    if spans is None:
        raise TypeError(f"text {index} is a {type(item).__name__}, not a str or a transcript")
    if not spans:
        raise ValueError(f"transcript {index} has no text: there is nothing to summarize")
    return spans


def _sections(cut, found) -> tuple[Section, ...]:
    if len(cut) == 1:  # one section: its summary is the summary
        return (Section(cut[0][0], cut[0][1], found.summary),)
    return tuple(Section(start, end, summary) for (start, end, _), summary in zip(cut, found.first))


def _summarized(loop, items: list, spans: list, max_length, min_length) -> tuple[list, list]:
    """Each item's levels of summaries (summarize_levels) and its sections' cut, or None."""
    engine = loop.engine
    final = engine.generation_defaults("summarization", **_length_overrides(engine, max_length, min_length))
    max_input = engine.model.max_encoder_len
    cuts = [None if s is None else sections(s, engine.tokenizer, max_input) for s in spans]
    first = [
        split_to_fit(item, engine.tokenizer, max_input) if cut is None else [text for _, _, text in cut]
        for item, cut in zip(items, cuts)
    ]
    return summarize_levels(loop, first, Lengths.of(final, max_input)), cuts


def _summarizer(model, loop):
    """`loop`, checked: a text model with a tokenizer."""
    if getattr(loop.engine.model, "encodes_audio", False):
        raise ValueError(f"model {model!r} is a speech model: use scriba.transcribe()")
    if loop.engine.tokenizer is None:
        raise ValueError(f"model {model!r} has no tokenizer files: summarize() needs one")
    return loop


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
