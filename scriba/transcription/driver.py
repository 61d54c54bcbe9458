"""The long-form loop: which windows are decoded, in which order, and what each result becomes.

One driver owns the queue, the retries, the language and the order in which segments come out;
the window decoder only decodes (window_decoder.py), the policy is pure (windows.py, guards.py,
segmenting.py). Two plans:
- "batched" (the default): every window of every file is queued at once, packed from speech
  chunks and cut only in pauses. A window whose text runs past its last complete timestamp
  pair is not truncated: its tail is queued as a new window from that timestamp, conditioned
  on the text before it, into the same running batch.
- "sequential": openai-whisper's algorithm: each window starts where the last complete segment
  ended and is conditioned on the text so far; several files advance together.
Both retry a window at higher temperatures when its output looks wrong (compression ratio >
2.4 or average log-prob < -1), skip windows that hold no speech, and detect the language once
per file, from its first speech windows (language_vote.py). `run` yields what a caller hears,
in order: each file's language once it is known, and its segments once no earlier window of
the file is still decoding.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, replace

from scriba.media.load import SAMPLE_RATE
from scriba.whisper.constants import TIME_PRECISION
from scriba.transcription.file import FileTranscription
from scriba.transcription.results import Segment, WindowResult
from scriba.transcription.vad import speech_chunks
from scriba.transcription.window_decoder import Window, WindowDecoder
from scriba.transcription.windows import (
    FILL_SAMPLES,
    is_silent,
    pack_windows,
    quiet_cut_windows,
    sequential_window,
    tail_window,
)


@dataclass(frozen=True)
class LanguageFound:
    """File `file`'s language is known (None: no window of it held speech)."""

    file: int
    language: str | None
    probability: float | None


@dataclass(frozen=True)
class SegmentsReady:
    """Segments of file `file`, in order, that no earlier window of the file can precede."""

    file: int
    segments: list[Segment]


Event = LanguageFound | SegmentsReady


def run(
    decoder: WindowDecoder,
    files: list[FileTranscription],
    mode: str,
    condition: bool,
    streaming: bool = False,
) -> Iterator[Event]:
    """Decode `files` to the end (`mode` "batched" or "sequential"; `condition`: each window
    gets the text before it as its prompt; `streaming`: someone reads the segments as they
    come, so the first comes early), yielding events as they happen."""
    plan = Batched(decoder, files, condition) if mode == "batched" else Sequential(decoder, files, condition)
    told: set[int] = set()
    queue = WindowQueue(decoder, plan.start(), streaming)
    yield from _languages(files, told)
    results = decoder.results()
    try:
        for window, result in results:
            if decoder.can_retry(window, result):  # at the next temperature, or filled for its language
                queue.put_first([decoder.retry(window, result)])
                continue
            result = decoder.settled(window, result)
            follow, ready = plan.on_result(window, result)
            queue.put_first(follow)
            yield from _languages(files, told)
            if ready:
                yield SegmentsReady(window.file, ready)
    finally:  # closed early: the windows in flight are cancelled now
        results.close()
    for f, file in enumerate(files):
        if f not in told:
            file.decide_language()
        rest = file.rest()
        if rest:
            yield SegmentsReady(f, rest)
    yield from _languages(files, told, final=True)


class WindowQueue:
    """Windows go to the decoder in file order, at most the decoder's `windows_in_flight` at
    once. When someone reads the segments as they come (`streaming`), fewer are in flight (the
    earlier windows decode ahead: the text grows as the file goes) and the first window decodes
    alone: its segments come after one window's time, not after a whole batch's (the dev
    long-form recording: the first segment at 24% of the call instead of 73%). What follows a
    finished window (its retry, its tail, the windows held for the language vote) goes before
    the windows not yet started: it is earlier in its file."""

    def __init__(self, decoder: WindowDecoder, windows: list[Window], streaming: bool = False):
        if streaming:
            decoder.streaming()
        self.decoder, self.waiting, self.first_alone = decoder, deque(windows), streaming
        self.limit = decoder.windows_in_flight
        self._fill()

    def put_first(self, windows: list[Window]) -> None:
        self.waiting.extendleft(reversed(windows))
        self._fill()

    def _fill(self) -> None:
        alone = self.first_alone and self.decoder.finished == 0
        room = (1 if alone else self.limit) - len(self.decoder.inflight)
        if room > 0 and self.waiting:
            self.decoder.submit([self.waiting.popleft() for _ in range(min(room, len(self.waiting)))])
        self.decoder.not_submitted = len(self.waiting)


def _languages(files: list[FileTranscription], told: set[int], final: bool = False) -> Iterator[Event]:
    """LanguageFound for each file whose language is now known and not yet told."""
    for f, file in enumerate(files):
        if f not in told and (final or not file.detecting):
            told.add(f)
            yield LanguageFound(f, file.language, file.language_probability)


class Batched:
    """Every window at once, except in a file whose language is to be detected: its first
    speech windows go first, one at a time until the vote is decided, and the rest follow
    with the language found."""

    def __init__(self, decoder: WindowDecoder, files: list[FileTranscription], condition: bool):
        self.decoder, self.files, self.condition = decoder, files, condition
        self.guards = decoder.guards
        self.waiting: dict[int, list[Window]] = {}  # windows held until the file's language is found

    def start(self) -> list[Window]:
        first: list[Window] = []
        for f, file in enumerate(self.files):
            if file.vad:
                bounds = pack_windows(
                    file.map.bounds(), breaks=set(file.map.region_ends()), fill=FILL_SAMPLES
                )
            elif file.clips:  # each clip alone, cut in pauses as a whole file is
                clips = file.map.bounds()
                bounds = [(a + s, a + e) for a, b in clips for s, e in quiet_cut_windows(file.stream[a:b])]
            else:
                bounds = quiet_cut_windows(file.stream)
            windows = [file.window(f, s, e, file.context) for s, e in bounds]
            windows = [w for w in windows if not is_silent(w.samples)]
            file.pending = [(w.start, w.end) for w in windows]
            first += windows[:1] if file.detecting else windows
            self.waiting[f] = windows[1:] if file.detecting else []
        return first

    def on_result(self, window: Window, result: WindowResult) -> tuple[list[Window], list[Segment]]:
        """(the windows to decode next, the file's segments now ready)."""
        file = self.files[window.file]
        no_speech = self.guards.is_no_speech(result)
        if not file.detecting:
            return ([], file.completed_by(window)) if no_speech else self._place(window, result)
        ready = file.completed_by(window) if no_speech else []
        if not no_speech:
            file.vote.add(window, result)
        waiting = self.waiting[window.file]
        if waiting and not file.vote.decided:  # the next speech window, still detecting
            return [waiting.pop(0)], ready
        file.decide_language()
        follow: list[Window] = []
        for voter, voted in file.vote.entries:
            if voted.language == file.language:
                more, completed = self._place(voter, voted)
                follow, ready = follow + more, ready + completed
            else:  # decoded in another language: again, in the file's
                follow.append(replace(voter, language=file.language, attempt=0, failed=()))
        self.waiting[window.file] = []
        return follow + [replace(w, language=file.language) for w in waiting], sorted(ready, key=_start)

    def _place(self, window: Window, result: WindowResult) -> tuple[list[Window], list[Segment]]:
        """A window in the file's language: its segments; its unfinished tail, if any, is next."""
        file = self.files[window.file]
        new, advance = file.add(window, result, self.decoder)
        resume = None
        if new and advance >= window.seconds:
            resume = _resume_point(file, window, result, new[-1], self.decoder.tokens.timestamp_begin)
        tail = tail_window(window.start, window.end, advance if resume is None else resume)
        ready = file.completed_by(window, tail)
        if tail is None:
            return [], ready
        prev = self.guards.next_context(list(window.prev_ids), new, result, self.condition)
        return [file.window(window.file, *tail, () if resume is not None else prev)], ready


# A batched window is cut at a pause, often where the voice changes, and a small model tends to
# stop its text at the change: it ends on a timestamp well before the window's end (as if the
# rest were silence), or closes a short sentence with a timestamp far past it (skipping what
# followed). openai-whisper's loop would drop the rest of the window; here, when speech is left,
# the rest is decoded again from where the text stopped, without the previous text (which led
# the model to follow the voice before the change).
RESUME_SECONDS = 1.5  # speech left after the text, at least, to decode again
SKIP_SECONDS = 8.0  # a last segment claiming this long ...
SLOWEST_CHARS_PER_SECOND = 4.0  # ... for text this slow skipped speech
USUAL_CHARS_PER_SECOND = 12.0  # where such text would end


def _resume_point(file, window: Window, result: WindowResult, last: Segment, timestamp_begin: int):
    """Seconds into the window where its text stopped short of speech left after it, or None."""
    tokens = result.tokens
    if not tokens or tokens[-1] < timestamp_begin:
        return None
    stamps = [t for t in tokens[:-1] if t >= timestamp_begin]
    start = (stamps[-1] - timestamp_begin) * TIME_PRECISION if stamps else 0.0
    stopped = (tokens[-1] - timestamp_begin) * TIME_PRECISION
    chars = len(last.text.strip())
    if stopped - start >= SKIP_SECONDS and chars < SLOWEST_CHARS_PER_SECOND * (stopped - start):
        stopped = start + chars / USUAL_CHARS_PER_SECOND
        last.end = max(last.start, file.map.to_original(window.offset + stopped, is_end=True))
    if stopped < 1.0 or window.seconds - stopped < RESUME_SECONDS:
        return None
    rest = window.samples[int(stopped * SAMPLE_RATE) :]
    return stopped if file.vad or speech_chunks(rest) else None


class Sequential:
    """openai-whisper's loop, for every file at once: each file has one window in flight."""

    def __init__(self, decoder: WindowDecoder, files: list[FileTranscription], condition: bool):
        self.decoder, self.files, self.condition = decoder, files, condition
        self.guards = decoder.guards

    def start(self) -> list[Window]:
        return [w for f in range(len(self.files)) for w in self._next_window(f)]

    def on_result(self, window: Window, result: WindowResult) -> tuple[list[Window], list[Segment]]:
        """(the next window of the file, if any; the segments this window added)."""
        file = self.files[window.file]
        if file.detecting:
            return self._vote(window, result)
        if self.guards.is_no_speech(result):
            file.seek = window.end
            return self._next_window(window.file), []
        new, advance = file.add(window, result, self.decoder)
        file.seek = window.start + max(1, round(advance * SAMPLE_RATE))
        file.context = tuple(self.guards.next_context(list(file.context), new, result, self.condition))
        return self._next_window(window.file), file.completed_by(window)  # in order: one window at a time

    def _vote(self, window: Window, result: WindowResult) -> tuple[list[Window], list[Segment]]:
        """A window that voted on the language: the next one votes too, until the vote is
        decided; then decoding starts again from the first voter (kept if in the language)."""
        file = self.files[window.file]
        if not self.guards.is_no_speech(result):
            file.vote.add(window, result)
        file.seek = window.end
        more = [] if file.vote.decided else self._next_window(window.file)
        if more:
            return more, []
        file.decide_language()
        if file.language is None:  # no window held speech
            return [], []
        voter, voted = file.vote.entries[0]
        file.seek = voter.start
        if voted.language == file.language:
            return self.on_result(voter, voted)
        return self._next_window(window.file), []

    def _next_window(self, f: int) -> list[Window]:
        file = self.files[f]
        region_ends = file.map.region_ends()
        while file.seek < len(file.stream):
            start, end = sequential_window(file.seek, region_ends)
            if not is_silent(file.stream[start:end]):
                return [file.window(f, start, end, file.context)]
            file.seek = end
        return []


def _start(segment: Segment) -> float:
    return segment.start
