"""A live transcription session: audio keeps arriving, turns are found in it (turns.py, or the
caller commits them), each turn's words are confirmed while it is spoken (live.py's local
agreement) and its final text is transcribe() of its audio. The Realtime API's WebSocket
(app/server/realtime.py) and the web app's Live tab are two faces of this one session.

Everything heavy runs on the session's own thread, in the order the caller asked (audio, commit,
clear): the caller's thread (an event loop) only queues, so a slow client never holds the
engine up, and nothing it sent is dropped. What the session finds comes back as events, through
`emit`, from that thread. Every transcription goes through the shared engine loop, so the
windows of every session and of every file request share the engine's batches.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from scriba.media.load import SAMPLE_RATE
from scriba.transcription.live import LiveTranscript
from scriba.transcription.live_updates import SHARED, UpdateSlots
from scriba.transcription.options import TranscribeOptions
from scriba.transcription.turns import SpeechStarted, SpeechStopped, TurnDetection, TurnDetector


@dataclass(frozen=True)
class TurnStarted:
    item_id: str
    audio_start_ms: int  # from the session's first sample


@dataclass(frozen=True)
class TurnStopped:
    item_id: str
    audio_end_ms: int


@dataclass(frozen=True)
class Committed:
    item_id: str
    previous_item_id: str | None


@dataclass(frozen=True)
class Delta:
    item_id: str
    text: str  # words newly confirmed


@dataclass(frozen=True)
class Tentative:
    item_id: str
    text: str  # the words heard after the confirmed ones, not yet agreed on (the Live tab's grey)


@dataclass(frozen=True)
class Completed:
    item_id: str
    transcript: str  # transcribe() of the turn's audio
    language: str | None
    seconds: float  # the turn's audio


@dataclass(frozen=True)
class Failed:
    item_id: str | None
    message: str  # one line
    code: str


@dataclass(frozen=True)
class Cleared:
    """The turn so far was dropped (input_audio_buffer.clear); nothing of it will be sent."""


Event = TurnStarted | TurnStopped | Committed | Delta | Tentative | Completed | Failed | Cleared


# A turn's final text goes ahead of every file window and partial update in the engine's queue;
# partial updates come after every other request (SamplingParams.priority: lower first).
TURN_PRIORITY, UPDATE_PRIORITY = -1, 1


class LiveSession:
    """`append(samples)` (16 kHz float32), `commit()`, `clear()`, `configure(...)`, `close()`:
    queued, done in order on the session's thread; `emit(event)` hears what they lead to."""

    def __init__(
        self,
        emit: Callable[[Event], None],
        options: TranscribeOptions | None = None,
        detection: TurnDetection | None = TurnDetection(),
        item_prefix: str = "item",
        updates: UpdateSlots = SHARED,
    ):
        self.emit = emit
        self.updates = updates  # the partial-update slots this session shares with the others
        self.options = options or TranscribeOptions()
        self.detection = detection
        self.detector = TurnDetector(detection) if detection is not None else None
        self.ids = (f"{item_prefix}_{i}" for i in itertools.count(1))
        self.buffer: list[np.ndarray] = []  # the audio since the last commit or clear
        self.buffer_start = self.received = 0  # in stream samples
        self.turn: LiveTranscript | None = None  # the turn being spoken, if any
        self.turn_start, self.item_id, self.previous_item_id = 0, None, None
        self.cancel = threading.Event()  # close(): whatever is transcribing stops at once
        self.interrupt = threading.Event()  # a turn ended: the tail's re-transcription is moot
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="scriba-live-session", daemon=True)
        self.thread.start()

    # -- the caller's side: queue and return -------------------------------------------------
    # Turns are found here, as the audio comes (32 ms frames, ~0.2 ms each): a turn's end then
    # interrupts the re-transcription under way instead of waiting behind it.
    def append(self, samples: np.ndarray) -> None:
        samples = np.asarray(samples, np.float32)
        found = self.detector.feed(samples) if self.detector is not None else []
        self.jobs.put(("append", (samples, found)))  # queued first: the session sees it once interrupted
        if any(isinstance(f, SpeechStopped) for f in found):
            self.interrupt.set()

    def commit(self) -> None:
        if self.detector is not None:  # the speech under way, if any, is a new turn from here
            self.detector.reset()
        self.jobs.put(("commit", None))
        self.interrupt.set()

    def clear(self) -> None:
        if self.detector is not None:
            self.detector.reset()
        self.jobs.put(("clear", None))
        self.interrupt.set()

    def configure(self, options: TranscribeOptions, detection: TurnDetection | None) -> None:
        if detection != (self.detector.settings if self.detector is not None else None):
            self.detector = TurnDetector(detection) if detection is not None else None
        self.jobs.put(("configure", (options, detection)))

    def close(self, wait: bool = False) -> None:
        """Stop: a transcription under way is cancelled, queued work dropped."""
        self.cancel.set()
        self.interrupt.set()
        self.jobs.put(("close", None))
        if wait:
            self.thread.join()

    # -- the session's thread ---------------------------------------------------------------
    def _run(self) -> None:
        from scriba.transcription.window_decoder import Cancelled

        try:
            while not self.cancel.is_set():
                self._do(*self.jobs.get())
                while not self.jobs.empty() and not self.cancel.is_set():  # catch up before decoding
                    self._do(*self.jobs.get())
                if self.turn is not None and not self.cancel.is_set():
                    self._confirm()
        except Cancelled:  # close() while a job ran: the session ends, nothing to report
            return
        except Exception as e:  # noqa: BLE001 - the caller hears it rather than waiting forever
            self.emit(Failed(self.item_id, f"{type(e).__name__}: {e}".splitlines()[0], "server_error"))

    def _do(self, kind: str, value) -> None:
        if kind == "append":
            self._append(*value)
        elif kind == "commit":
            self._commit_buffer()
        elif kind == "clear":
            self.buffer, self.buffer_start, self.turn = [], self.received, None
            self.emit(Cleared())
        elif kind == "configure":
            options, detection = value
            self.options = options
            if detection != self.detection:
                self.detection, self.turn = detection, None

    def _append(self, samples: np.ndarray, found: list) -> None:
        """New audio, and the starts and stops the caller's detector found in it."""
        self.buffer.append(samples)
        self.received += len(samples)
        if self.detection is None:  # the caller commits: the whole buffer is the turn
            if self.turn is None:
                self._start_turn(self.buffer_start)
            self.turn.add(samples, SAMPLE_RATE)
            return
        for event in found:
            if isinstance(event, SpeechStarted):
                self._start_turn(max(event.sample, self.buffer_start))
            elif isinstance(event, SpeechStopped) and self.turn is not None:
                self.emit(TurnStopped(self.item_id, _ms(event.sample)))
                self._finish(event.sample)
        if self.turn is not None:
            self.turn.add(self._audio(self.turn_start + self.turn.samples, self.received), SAMPLE_RATE)
        else:  # no turn: keep only what a turn starting now would take in before its speech
            self._drop_until(max(self.buffer_start, self.received - self._padding()))

    def _padding(self) -> int:
        return self.detection.prefix_padding_ms * SAMPLE_RATE // 1000 + 2 * 512  # and a frame or two

    def _start_turn(self, start: int) -> None:
        self.item_id, self.turn_start = next(self.ids), start
        self.turn = LiveTranscript(options=self.options, cancel=self.interrupt, priority=UPDATE_PRIORITY)
        self.emit(TurnStarted(self.item_id, _ms(start)))

    def _commit_buffer(self) -> None:
        """The caller commits: the buffer (from the turn's start, if one is under way) is a turn."""
        if self.received == self.buffer_start:
            message = "the input audio buffer is empty: nothing to commit"
            self.emit(Failed(None, message, "input_audio_buffer_commit_empty"))
            return
        if self.turn is None:
            self.item_id, self.turn_start = next(self.ids), self.buffer_start
        self._finish(self.received)

    def _finish(self, end: int) -> None:
        """The turn [turn_start, end) is over: committed, its rest of deltas, its final text."""
        from scriba.transcription.transcribe import transcribe

        item, audio = self.item_id, self._audio(self.turn_start, end)
        confirmed = self.turn.text()[0] if self.turn is not None else ""
        self.emit(Committed(item, self.previous_item_id))
        self.previous_item_id, self.turn = item, None
        self._drop_until(end)
        result = None
        if len(audio):
            audio_in = (audio, SAMPLE_RATE)
            result = transcribe(audio_in, self.options, cancel=self.cancel, priority=TURN_PRIORITY)
        transcript = result.text if result is not None else ""
        if transcript.startswith(confirmed) and len(transcript) > len(confirmed):
            self.emit(Delta(item, transcript[len(confirmed) :] if confirmed else transcript))
        language = result.language if result is not None else None
        self.emit(Completed(item, transcript, language, len(audio) / SAMPLE_RATE))

    def _confirm(self) -> None:
        """Transcribe the turn's unconfirmed tail again (when enough new audio came); newly
        confirmed words are a delta, once one of the shared update slots is free (live_updates.py).
        A turn's end, a commit or a clear interrupts it."""
        self.interrupt.clear()
        if not self.jobs.empty():  # something came meanwhile: it goes first
            return
        if not self.turn.due():
            return
        if not self.updates.take(self.interrupt.is_set):  # a turn's end goes first
            return
        try:
            while not self.jobs.empty() and not self.cancel.is_set():  # the audio that came meanwhile
                self._do(*self.jobs.get())
            if self.turn is not None and not self.interrupt.is_set():
                self._update()
        finally:
            self.updates.give()

    def _update(self) -> None:
        from scriba.transcription.window_decoder import Cancelled

        before = self.turn.text()[0]
        self.turn.cancel = self.interrupt
        try:
            confirmed, pending = self.turn.update()
        except Cancelled:
            if self.cancel.is_set():
                raise
            return
        if len(confirmed) > len(before):
            text = confirmed[len(before) :]
            self.emit(Delta(self.item_id, text.lstrip() if not before else text))
        self.emit(Tentative(self.item_id, pending))

    def _audio(self, start: int, end: int) -> np.ndarray:
        """Stream samples [start, end) that are still in the buffer (walked from its end: a
        turn's audio is its last pieces)."""
        pieces, at = [], self.received
        for chunk in reversed(self.buffer):
            low = at - len(chunk)
            if at <= start:
                break
            if low < end:
                pieces.append(chunk[max(start - low, 0) : min(end, at) - low])
            at = low
        return np.concatenate(pieces[::-1]) if pieces else np.zeros(0, np.float32)

    def _drop_until(self, sample: int) -> None:
        """Forget the buffer before stream sample `sample`."""
        if sample <= self.buffer_start:
            return
        self.buffer = [self._audio(sample, self.received)]
        self.buffer_start = sample


def _ms(sample: int) -> int:
    return sample * 1000 // SAMPLE_RATE
