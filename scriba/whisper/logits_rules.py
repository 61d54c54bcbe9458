"""Whisper's decoding rules, as small logits processors.

The rules (suppress at begin, suppress, timestamps) act from `rules_begin`: the first token the
model chooses freely, as in openai-whisper and transformers' `WhisperTimeStampLogitsProcessor`,
or where a prefix starts, as in faster-whisper (the prefix is then text the rules read, and
nothing is suppressed "at the beginning" after it). A request may set its own suppressed tokens,
blank suppression and first-timestamp limit (`DecodingRules`, faster-whisper's options). The
language detection restricts one position to the language tokens, and the tokens after it are
forced (see prompt_layout.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from scriba.engine.logits_processors import ForceToken, LogitsProcessor, ban, index, select
from scriba.whisper.constants import TIME_PRECISION
from scriba.whisper.prompt_layout import PromptLayout


class RestrictTo(LogitsProcessor):
    """At one decoder length, keep only `token_ids` (the language tokens, for detection)."""

    order = 90

    def __init__(self, token_ids: list[int], at_length: int):
        self.token_ids = tuple(token_ids)
        self.at_length = at_length

    @classmethod
    def apply(cls, logits, rows, procs, step) -> None:
        at = select(rows, procs, lambda r, p: step.lengths[r] == p.at_length, lambda p: p.token_ids)
        for ids, group in at.items():
            r, keep = index(group, logits.device)[:, None], index(ids, logits.device)[None, :]
            kept = logits[r, keep]
            logits.index_fill_(0, r[:, 0], -math.inf)
            logits[r, keep] = kept


class SuppressAtBegin(LogitsProcessor):
    """Suppress `token_ids` at the first freely chosen token only (at decoder length `begin`)."""

    order = 70

    def __init__(self, token_ids: list[int], begin: int):
        self.token_ids = tuple(token_ids)
        self.begin = begin

    @classmethod
    def apply(cls, logits, rows, procs, step) -> None:
        for ids, group in select(
            rows, procs, lambda r, p: step.lengths[r] == p.begin, lambda p: p.token_ids
        ).items():
            ban(logits, group, ids)


class SuppressFrom(LogitsProcessor):
    """Suppress `token_ids` at every step from decoder length `begin` on."""

    order = 75

    def __init__(self, token_ids: list[int], begin: int):
        self.token_ids = tuple(token_ids)
        self.begin = begin

    @classmethod
    def apply(cls, logits, rows, procs, step) -> None:
        for ids, group in select(
            rows, procs, lambda r, p: step.lengths[r] >= p.begin, lambda p: p.token_ids
        ).items():
            ban(logits, group, ids)


class TimestampRules(LogitsProcessor):
    """Whisper's timestamp grammar: timestamps come in pairs (except right before <|endoftext|>),
    never decrease, the first token is a timestamp no later than `max_initial_index`, and a
    timestamp is forced when the timestamps' total probability beats every text token."""

    order = 80

    def __init__(self, tokens, begin: int, max_initial_index: int | None):
        self.layout = (tokens.eot, tokens.no_timestamps, tokens.timestamp_begin, max_initial_index)
        self.begin = begin

    @classmethod
    def apply(cls, logits, rows, procs, step) -> None:
        begin_of = {r: p.begin for r, p in zip(rows, procs)}
        # On a CPU one compiled pass per row; elsewhere batched torch ops (the same rules).
        rules = _timestamp_rules
        if logits.device.type == "cpu" and logits.dtype == torch.float32:
            from scriba.whisper.timestamp_rules_cpu import timestamp_rules_cpu as rules
        for layout, group in select(
            rows, procs, lambda r, p: step.lengths[r] >= p.begin, lambda p: p.layout
        ).items():
            rules(logits, group, [begin_of[r] for r in group], layout, step)


def _timestamp_rules(logits, rows: list[int], begins: list[int], layout, step) -> None:
    """The rules for `rows` (each generating from decoder index `begins[i]`), batched. Each
    row bans [0, text_end) of the text and [floor, ceiling) is what stays of the timestamps."""
    eot, no_timestamps, ts, max_initial = layout
    dev, vocab = logits.device, logits.shape[1]
    whole = rows == list(range(logits.shape[0]))  # then work on the logits in place
    r = None if whole else index(rows, dev)
    sub = logits if whole else logits[r]
    lengths = index((step.lengths[i] for i in rows), dev)
    begin = index(begins, dev)
    tokens = step.history() if whole else step.history()[r]  # [n, width], PAD past each length
    num = lengths - begin  # tokens generated after the prompt and the control tokens
    at = lambda k: tokens.gather(1, (lengths - k).clamp(min=0)[:, None])[:, 0]  # noqa: E731
    last_ts = (num >= 1) & (at(1) >= ts)
    penult_ts = (num < 2) | (at(2) >= ts)
    open_pair, closed_pair, first = last_ts & ~penult_ts, last_ts & penult_ts, num == 0
    pos = torch.arange(tokens.shape[1], device=dev)[None, :]
    latest = torch.where((tokens >= ts) & (pos >= begin[:, None]), tokens, -1).amax(dim=1)
    floor = torch.where(latest >= 0, latest + (~open_pair).long(), ts)  # never back in time
    ceiling = vocab if max_initial is None else ts + max_initial + 1
    ceiling = torch.where(closed_pair, ts, torch.where(first, ceiling, vocab))
    stamps = sub[:, ts:]
    cols = torch.arange(ts, vocab, device=dev)[None, :]
    stamps.masked_fill_((cols < floor[:, None]) | (cols >= ceiling[:, None]), -math.inf)
    sub[:, no_timestamps] = -math.inf
    # A timestamp is forced when the timestamps' total probability beats every text token:
    # compared on the logits (both sides of log_softmax shift by the same normaliser).
    text = sub[:, :ts]
    text_end = torch.where(open_pair, eot, torch.where(first, ts, 0))
    best_text = torch.where(text_end == 0, text.amax(dim=-1), sub[:, eot:ts].amax(dim=-1))
    best_text = best_text.masked_fill(first, -math.inf)
    timestamp_wins = stamps.logsumexp(dim=-1) > best_text
    # Ban [0, limit), limit in {0, eot, ts} (eot < ts): all of [0, eot) or none of it, by a
    # broadcast row mask, so that no [rows, vocab] mask is built.
    limit = torch.where(timestamp_wins, ts, text_end)
    sub[:, :eot].masked_fill_((limit > 0)[:, None], -math.inf)
    sub[:, eot:ts].masked_fill_(torch.arange(eot, ts, device=dev)[None, :] < limit[:, None], -math.inf)
    if not whole:
        logits[r] = sub


@dataclass(frozen=True)
class DecodingRules:
    """What a request suppresses and how late its first timestamp may be."""

    suppress: tuple[int, ...]  # at every step
    begin_suppress: tuple[int, ...]  # at the first step only (the blank and <|endoftext|>)
    max_initial_index: int | None  # the first timestamp's latest index (None: any)

    @classmethod
    def of(cls, tokens, options: dict) -> DecodingRules:
        """A request's rules from its audio prompt's options, as faster-whisper's: no
        `suppress_tokens` is the checkpoint's list (its non-speech tokens and the control
        tokens); -1 in a list stands for that list; the control tokens are always suppressed.
        `suppress_blank` (default True): the checkpoint's begin-suppressed tokens.
        `max_initial_timestamp` in seconds (None: no limit; absent: the checkpoint's)."""
        suppress, given = list(tokens.suppress_tokens), options.get("suppress_tokens")
        if given is not None:
            suppress = [t for t in given if t >= 0] + (suppress if -1 in given else [])
            suppress += control_tokens(tokens)
        index = tokens.max_initial_timestamp_index
        if "max_initial_timestamp" in options:
            latest = options["max_initial_timestamp"]
            index = None if latest is None else int(round(latest / TIME_PRECISION))
        begin = tuple(tokens.begin_suppress_tokens) if options.get("suppress_blank", True) else ()
        return cls(tuple(sorted(set(suppress))), begin, index)


def control_tokens(tokens) -> list[int]:
    """What Whisper never writes as text: the task, <|startoftranscript|>, <|startoflm|>,
    <|startofprev|> and <|nospeech|> (faster-whisper suppresses them whatever the list)."""
    return [
        tokens.transcribe,
        tokens.translate,
        tokens.sot,
        tokens.start_of_lm,
        tokens.start_of_prev,
        tokens.no_speech,
    ]


def build_whisper_processors(tokens, layout: PromptLayout, rules: DecodingRules) -> list[LogitsProcessor]:
    """The rules in transformers' order (begin-suppress, suppress, timestamps), then detection."""
    begin = layout.rules_begin
    processors: list[LogitsProcessor] = []
    if rules.begin_suppress:
        processors.append(SuppressAtBegin(list(rules.begin_suppress), begin))
    if rules.suppress:
        processors.append(SuppressFrom(list(rules.suppress), begin))
    if layout.timestamps:
        processors.append(TimestampRules(tokens, begin, rules.max_initial_index))
    if layout.detect_language:
        detect_at = layout.sot_index + 1
        processors.append(RestrictTo(sorted(tokens.lang_to_id.values()), detect_at))
        processors += [ForceToken(t, detect_at + 1 + i) for i, t in enumerate(layout.forced)]
    return processors
