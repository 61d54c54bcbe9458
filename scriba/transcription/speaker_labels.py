"""Speakers in a transcript (diarize=True): who spoke when (scriba.speakers), each word labelled
with its speaker, each segment split where its speaker changes, and the speakers listed with
their speaking time.

The speech the voices are read from is Silero's (the probabilities transcription already
computed, read with tighter pauses and padding than decoding wants); the labels are
SPEAKER_00, SPEAKER_01, ... in the order their first words come, or a known speaker's name.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from scriba.speakers.assign import speakers_of
from scriba.speakers.diarize import Diarization, diarize
from scriba.transcription.results import Segment, Speaker, Transcription
from scriba.transcription.vad import chunks_of, speech_probabilities
from scriba.transcription.vad_options import VadOptions

# Speech for voices: pauses of 0.3 s split turns; 0.2 s of padding keeps word edges.
SPEECH = VadOptions(min_silence_duration_ms=300, speech_pad_ms=200)
BLIP_SECONDS = 0.5  # one word this short, between two words of one other speaker, is theirs


def find_speakers(wave: np.ndarray, o, probs=None, voices=None, encoder=None) -> Diarization:
    """Who spoke when in `wave`. `probs`: Silero's speech probabilities of it, when transcription
    computed them; `voices`: name -> voice (kept_voices.speaker_voices); `encoder`:
    speaker_encoder(o.speaker_model)."""
    probs = speech_probabilities(wave) if probs is None else probs
    spans = chunks_of(probs, len(wave), SPEECH)
    return diarize(wave, spans, o.num_speakers, o.min_speakers, o.max_speakers, voices, encoder)


def changes_inside(found: Diarization, start: float, end: float, margin: float = 0.0) -> bool:
    """Whether the speaker changes between `start` and `end` (seconds): its words need times.
    Turns that overlap the span by `margin` seconds or less are not counted."""
    inside = [t.speaker for t in found.turns if min(t.end, end) - max(t.start, start) > margin]
    return len(set(inside)) > 1


def label_speakers(result: Transcription, found: Diarization, split_tokens=None) -> None:
    """Labels `result`'s segments and words with their speakers (in place): a segment with words
    word by word, split where its speaker changes; one without (its window held one speaker)
    as a whole. Lists the result's speakers. `split_tokens(tokens, words)`: the token ids of a
    segment's first words and of the rest (token_splitter)."""
    worded = [s for s in result.segments if s.words]
    words = [w for s in worded for w in s.words]
    for w, who in zip(words, _smoothed(words, speakers_of(_heads(words), found.turns))):
        w.speaker = who
    bare = [s for s in result.segments if not s.words]
    for s, who in zip(bare, speakers_of(_spans(bare), found.turns)):
        s.speaker = who
    result.segments = [part for s in result.segments for part in _split(s, split_tokens)]
    _number(result, found)


def _heads(words) -> np.ndarray:
    """The first half of each word: aligned word ends run on into the pause after them."""
    return np.array([(w.start, (w.start + w.end) / 2) for w in words], dtype=np.float64).reshape(-1, 2)


def _spans(items) -> np.ndarray:
    return np.array([(x.start, x.end) for x in items], dtype=np.float64).reshape(-1, 2)


def _smoothed(words, who: list) -> list:
    """A lone short word between two of another speaker's words takes their speaker (a turn's
    edge a few hundredths of a second off)."""
    who = list(who)
    for i in range(1, len(words) - 1):
        lone = who[i - 1] == who[i + 1] != who[i]
        if lone and words[i].end - words[i].start < BLIP_SECONDS:
            who[i] = who[i - 1]
    return who


def _split(segment: Segment, split_tokens) -> list[Segment]:
    """The segment, or its parts where the speaker changes between its words."""
    words = segment.words or []
    if not words:
        return [segment]
    cuts = [i for i in range(1, len(words)) if words[i].speaker != words[i - 1].speaker]
    segment.speaker = words[0].speaker
    if not cuts:
        return [segment]
    parts, rest, tokens, done = [], segment, list(segment.tokens), 0
    for cut in cuts + [len(words)]:
        part = words[done:cut]
        if cut < len(words) and split_tokens is not None:
            head, tokens = split_tokens(tokens, part)
        else:
            head = tokens
        parts.append(replace(rest, start=part[0].start, end=part[-1].end, text="".join(w.word for w in part),
                             tokens=head, words=part, speaker=part[0].speaker))
        done = cut
    return parts


def _number(result: Transcription, found: Diarization) -> None:
    """Unnamed voices renumbered in the order their first words (or segments) come; the
    speakers listed with their speaking time (the turns' length)."""
    time: dict[str, float] = {}
    for t in found.turns:
        time[t.speaker] = time.get(t.speaker, 0.0) + t.end - t.start
    order = [s.speaker for s in result.segments if s.speaker] + list(time)
    order = list(dict.fromkeys(order))
    unnamed = [n for n in order if n.startswith("SPEAKER_")]
    rename = {n: f"SPEAKER_{unnamed.index(n):02d}" for n in unnamed}
    for s in result.segments:
        s.speaker = rename.get(s.speaker, s.speaker)
        for w in s.words or []:
            w.speaker = rename.get(w.speaker, w.speaker)
    result.speakers = [Speaker(rename.get(n, n), round(time.get(n, 0.0), 2)) for n in order]


def token_splitter(decode, timestamp_begin: int):
    """split_tokens for label_speakers: (the tokens of `words`, at the start of `tokens`; the
    rest). The cut is the first where the text tokens decode to the words' text; a leading
    timestamp stays with the first part, a trailing one with the rest."""

    def split(tokens: list[int], words) -> tuple[list[int], list[int]]:
        target = "".join(w.word for w in words)
        lead = 1 if tokens and tokens[0] >= timestamp_begin else 0
        text = [t for t in tokens[lead:] if t < timestamp_begin]
        cut = next((k for k in range(1, len(text) + 1) if decode(text[:k]) == target), None)
        if cut is None:  # a character across tokens: cut in proportion to the text
            cut = round(len(text) * len(target) / max(len(decode(text)), 1))
        at = lead + _position_of(tokens[lead:], cut, timestamp_begin)
        return tokens[:at], tokens[at:]

    return split


def _position_of(tokens: list[int], text_count: int, timestamp_begin: int) -> int:
    """The index in `tokens` just after its `text_count`-th text token."""
    seen = 0
    for i, t in enumerate(tokens):
        if seen == text_count:
            return i
        seen += t < timestamp_begin
    return len(tokens)
