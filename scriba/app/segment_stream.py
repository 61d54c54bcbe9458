"""transcribe_stream(): segments as their windows finish, in order, with what is known up front.

faster-whisper's convention, `segments, info = model.transcribe(path)`: `info` (language,
its probability, duration) is ready when the call returns; `segments` is a generator that
decodes as it is read, each segment yielded once no earlier window of the file is still
decoding. The windows decode in the engine's shared batch all along; reading slowly does not
slow them, and a generator closed early cancels what is still in flight.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from scriba.app.segments import Segment
from scriba.app.transcribe import Callbacks, begin
from scriba.app.transcribe_options import TranscribeOptions
from scriba.media.load import SAMPLE_RATE, is_audio_pair

_OVER = object()  # what next() gives when the rounds are over (each round yields None)


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
    ready: deque[Segment] = deque()

    def heard(index: int, segments: list[Segment]) -> None:
        ready.extend(segments)
        if on_segments is not None:
            on_segments(index, segments)

    run = begin([audio], True, o, Callbacks(progress, heard, cancel))
    file = run.files[0]
    rounds, over = iter(run.rounds), False
    while file.detecting(run.decoder) and not over:  # decode until the language vote is decided
        over = next(rounds, _OVER) is _OVER
    language = file.language or (None if run.decoder.tokens.is_multilingual else "en")
    info = TranscriptionInfo(language, file.language_probability, len(file.wave) / SAMPLE_RATE)
    return SegmentStream(rounds, ready, file, o.word_timestamps), info


class SegmentStream(Iterator[Segment]):
    """The segments as their windows finish; once read to the end, `transcription` is what
    transcribe() returns for the file (with its VAD coverage and warnings). `close()` early
    cancels the windows in flight."""

    def __init__(self, rounds: Iterator[None], ready: deque, file, words: bool):
        self.transcription = None
        self._segments = self._read(rounds, ready, file, words)

    def __next__(self) -> Segment:
        return next(self._segments)

    def close(self) -> None:
        self._segments.close()

    def _read(self, rounds: Iterator[None], ready: deque, file, words: bool) -> Iterator[Segment]:
        """What each round of finished windows made ready; at the end, whatever was held."""
        try:
            for _ in rounds:
                yield from _drain(ready, words)
            file.flush()
            yield from _drain(ready, words)
            self.transcription = file.finish(words)
        finally:
            close = getattr(rounds, "close", None)
            if close is not None:  # abandoned early: the windows in flight are cancelled
                close()


def _drain(ready: deque, words: bool) -> Iterator[Segment]:
    while ready:
        segment = ready.popleft()
        if not words:  # aligned only for hallucination_silence_threshold, as transcribe() does
            segment.words = None
        yield segment
