"""One file being transcribed: its speech stream, the segments found so far (handed out in
order as the windows before them complete), and its language and vote."""

from __future__ import annotations

import numpy as np

from scriba.media.load import SAMPLE_RATE
from scriba.transcription.guards import drop_hallucinations
from scriba.transcription.language_vote import LanguageVote
from scriba.transcription.options import TranscribeOptions
from scriba.transcription.results import Segment, Transcription, WindowResult
from scriba.transcription.segmenting import coverage, split_segments
from scriba.transcription.speech_times import place_on_speech, speech_edges
from scriba.transcription.vad import speech_and_pauses, speech_probabilities
from scriba.transcription.window_decoder import Window, WindowDecoder
from scriba.transcription.windows import SpeechMap
from scriba.whisper.constants import WINDOW_SAMPLES


class FileTranscription:
    """One file being transcribed: its decoded stream (speech only, with VAD), segments so far
    in the file's timeline, language (and its vote while it is being detected), and the
    sequential driver's seek and context."""

    def __init__(self, wave: np.ndarray, o: TranscribeOptions, language, prompt_ids, multilingual: bool):
        """`language`: the options' language as a code (None: detect it, if `multilingual`)."""
        self.wave, self.language, self.language_probability = wave, language, None
        self.multilingual = multilingual
        # faster-whisper's multilingual=True: each window detects its own language (no vote)
        self.per_window = o.multilingual and multilingual
        self.first_window = len(wave)  # where the earliest window completed so far starts
        self.vote = LanguageVote(o.language_detection_threshold, o.language_detection_segments)
        self.clips = bool(o.clip_timestamps)
        self.vad = not self.clips and (
            len(wave) > WINDOW_SAMPLES if o.vad_filter is None else bool(o.vad_filter)
        )
        # Silero's speech probabilities: VAD's, diarization's, and where the times are placed
        self.speech_probs = speech_probabilities(wave) if o.timestamps or self.vad or o.diarize else None
        self.speech = None if self.speech_probs is None else speech_edges(self.speech_probs, len(wave))
        if self.clips:
            self.map = SpeechMap.clips(o.clip_timestamps, len(wave))
        elif self.vad:
            self.map = SpeechMap(*speech_and_pauses(wave, o.vad_parameters, self.speech_probs))
        else:
            self.map = SpeechMap.whole(len(wave))
        self.stream = self.map.stream(wave)
        self.segments: list[Segment] = []
        self.seek, self.context = 0, tuple(prompt_ids)  # the sequential driver's
        # Segments are handed out in order: those of a window wait while an earlier window of the
        # file (or its tail) is still out. `pending`: stream spans not completed yet.
        self.pending: list[tuple[int, int]] = []
        self.held: list[Segment] = []

    @property
    def detecting(self) -> bool:
        """The file's language is still to be voted on (a multilingual model, none given or
        decided, and not one language per window)."""
        return self.language is None and self.multilingual and not self.per_window

    def decide_language(self) -> None:
        self.language, self.language_probability = self.vote.outcome()

    def window(self, f: int, start: int, end: int, prev_ids) -> Window:
        language = None if self.per_window else self.language
        return Window(f, start, end, self.stream[start:end], language, tuple(prev_ids))

    def add(
        self, window: Window, result: WindowResult, decoder: WindowDecoder
    ) -> tuple[list[Segment], float]:
        """The window's complete segments, in the file's timeline; returns them (stream times
        stay in their tokens) and how far they reach (seconds)."""
        if self.per_window and window.start < self.first_window:
            # faster-whisper's multilingual file is in the first window's language, whichever
            # window the batch happens to complete first
            self.language, self.first_window = result.language, window.start
        self.language = self.language or result.language  # an English-only model's "en"
        language = result.language if self.per_window else self.language
        ts, words_of = decoder.tokens.timestamp_begin, decoder.words_of(result, language)
        new, advance = split_segments(result, window.offset, window.seconds, ts, decoder.decode, words_of)
        threshold = decoder.guards.hallucination_silence
        if threshold is not None and words_of is not None:
            span = (window.offset, window.offset + window.seconds)
            new, resume = drop_hallucinations(new, span, threshold)
            advance = advance if resume is None else min(advance, resume)
        for s in new:
            s.start, s.end = self.map.span_to_original(s.start, s.end)
            s.language = language
            if s.words:  # the segment runs from its first word to its last
                for w in s.words:
                    w.language = language
                    w.start, w.end = self.map.to_original(w.start), self.map.to_original(w.end, is_end=True)
                    w.end = max(w.end, w.start)
                s.start, s.end = s.words[0].start, s.words[-1].end
        if self.speech is not None:
            # nothing reaches past where the next window starts (the seek), into its segments
            reach = window.offset + min(advance, window.seconds)
            bounds = self.map.span_to_original(window.offset, reach, margin=0.0)
            place_on_speech(new, self.speech, bounds)
        self.segments += new
        self.held += new
        return new, advance

    def completed_by(self, window: Window, tail: tuple[int, int] | None = None) -> list[Segment]:
        """`window` is done (its unfinished `tail` still to come): returns the segments that no
        earlier window can precede any more, in order."""
        if (window.start, window.end) in self.pending:
            self.pending.remove((window.start, window.end))
        if tail is not None:
            self.pending.append(tail)
        frontier = min((a for a, _ in self.pending), default=None)
        cut = None if frontier is None else self.map.to_original(frontier / SAMPLE_RATE)
        ready, self.held = _split(self.held, lambda s: cut is None or s.start < cut)
        return sorted(ready, key=lambda s: s.start)

    def rest(self) -> list[Segment]:
        """The decoding is over: whatever is held, in order."""
        self.pending = []
        ready, self.held = sorted(self.held, key=lambda s: s.start), []
        return ready

    def finish(self, keep_words: bool) -> Transcription:
        self.rest()
        segments = sorted(self.segments, key=lambda s: s.start)
        for s in segments if not keep_words else []:
            s.words = None
        result = Transcription(
            "".join(s.text for s in segments).strip(),
            self.language,
            self.language_probability,
            len(self.wave) / SAMPLE_RATE,
            segments,
        )
        if self.vad:
            chunks = [(s / SAMPLE_RATE, e / SAMPLE_RATE) for s, e in self.map.chunks]
            result.speech_duration, result.coverage, result.warnings = coverage(chunks, segments)
        return result


def _split(items: list, test) -> tuple[list, list]:
    """(the items that pass `test`, the others), each in order."""
    passed = [test(x) for x in items]
    return [x for x, p in zip(items, passed) if p], [x for x, p in zip(items, passed) if not p]
