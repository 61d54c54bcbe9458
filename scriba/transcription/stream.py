"""transcribe_stream(): segments as their windows finish, in order, with what is known up front.

faster-whisper's convention, `segments, info = model.transcribe(path)`: `info` (language,
its probability, duration) is ready when the call returns; `segments` is a generator that
decodes as it is read, each segment yielded once no earlier window of the file is still
decoding. The windows decode in the engine's shared batch all along; reading slowly does not
slow them, and a generator closed early cancels what is still in flight.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from scriba.media.load import SAMPLE_RATE, is_audio_pair
from scriba.transcription.driver import Event, LanguageFound, SegmentsReady
from scriba.transcription.options import TranscribeOptions
from scriba.transcription.results import Segment
from scriba.transcription.transcribe import Job, begin


@dataclass(frozen=True)
class TranscriptionInfo:
    language: str | None  # as a code ("de"); None when no window held speech
    language_probability: float | None  # when detected
    duration: float  # seconds of audio


def transcribe_stream(
    audio, options: TranscribeOptions | None = None, *, progress=False, on_segments=None, cancel=None, **given
) -> tuple[SegmentStream, TranscriptionInfo]:
    """One audio input and what transcribe() takes. Returns (segments, info): the language is
    found before this returns (for a multilingual model without `language`, the first speech
    windows are decoded for it), the rest as `segments` is read. `list(segments)` are
    transcribe()'s segments."""
    if isinstance(audio, (list, tuple)) and not is_audio_pair(audio):
        raise TypeError("transcribe_stream() takes one audio input; use transcribe() for a list")
    o = TranscribeOptions.build(options, **given)
    job = begin([audio], True, o, progress, cancel, streaming=True)
    file, events = job.files[0], iter(job.events)
    early: list[Segment] = []  # segments that came before the language (none, in practice)
    for event in events:
        if isinstance(event, SegmentsReady):
            early += event.segments
        elif isinstance(event, LanguageFound):
            break
    language = file.language or (None if job.decoder.tokens.is_multilingual else "en")
    info = TranscriptionInfo(language, file.language_probability, len(file.wave) / SAMPLE_RATE)
    return SegmentStream(events, early, job, o.word_timestamps, on_segments), info


class SegmentStream(Iterator[Segment]):
    """The segments as their windows finish; once read to the end, `transcription` is what
    transcribe() returns for the file (with its VAD coverage and warnings). `close()` early
    cancels the windows in flight."""

    def __init__(self, events: Iterator[Event], early: list[Segment], job: Job, words, heard):
        self.transcription = None
        self._events = events
        self._segments = self._read(early, job, words, heard)

    def __next__(self) -> Segment:
        return next(self._segments)

    def close(self) -> None:
        self._segments.close()
        self._events.close()  # abandoned early: the windows in flight are cancelled

    def _read(self, early: list[Segment], job: Job, words: bool, heard) -> Iterator[Segment]:
        """Each event's segments as it comes; at the end, the file's transcription (with
        diarize=True, its speakers: the segments yielded before carry none)."""
        batches = [early] if early else []
        diarize = job.options.diarize
        for batch in _chain(batches, self._events):
            if heard is not None:
                heard(0, batch)
            for segment in batch:
                if not words:  # aligned only for hallucination_silence_threshold, as transcribe() does
                    segment = replace(segment, words=None) if diarize else segment
                    segment.words = None
                yield segment
        self.transcription = job.finish(job.files[0])


def _chain(first: list[list[Segment]], events: Iterator[Event]) -> Iterator[list[Segment]]:
    yield from first
    for event in events:
        if isinstance(event, SegmentsReady):
            yield event.segments
