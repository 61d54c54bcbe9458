"""Live transcription of audio that keeps arriving (a microphone), in the spirit of
whisper_streaming's local agreement: the recording's unconfirmed tail is transcribed again as
audio arrives; a word two transcriptions in a row agree on is confirmed and never changes; the
audio buffer drops what lies before a confirmed word once it grows long. When the recording
ends, the web app's final text is `transcribe()` of the whole recording, so it equals
transcribing the same recording afterwards.

While the buffer still holds the whole recording, a transcription hears every confirmed word
again, in order: the new words are those after them, and no word needs a time (the alignment
pass, a third of a short update's cost, is skipped). Once the buffer may soon drop audio, words
come with their times, which say where it may cut and which words of a cut buffer are new.
"""

from __future__ import annotations

import re
import string
import threading
from dataclasses import dataclass, field

import numpy as np

from scriba.media.load import SAMPLE_RATE, load_audio
from scriba.transcription.options import TranscribeOptions

MIN_NEW_SECONDS = 1.0  # transcribe again once this much new audio has arrived
MAX_BUFFER_SECONDS = 15.0  # past this, the buffer drops audio before the last confirmed word
TIMED_AFTER_SECONDS = 10.0  # a longer buffer is transcribed with word times (it may be cut soon)


@dataclass
class LiveWord:
    text: str
    start: float | None  # seconds into the recording (None: transcribed without word times)
    end: float | None

    @property
    def key(self) -> str:  # what two transcriptions must agree on
        return self.text.strip().lower().strip(string.punctuation + "¿¡…“”‘’")


@dataclass
class LiveTranscript:
    options: TranscribeOptions = field(default_factory=TranscribeOptions)  # model, language, ...
    audio: list[np.ndarray] = field(default_factory=list)
    samples: int = 0
    buffer_start: int = 0  # where the transcribed tail starts (samples)
    transcribed_to: int = 0  # how much audio the last transcription saw (samples)
    confirmed: list[LiveWord] = field(default_factory=list)
    pending: list[LiveWord] = field(default_factory=list)  # the last transcription's unconfirmed words
    cancel: threading.Event | None = None  # set: a transcription under way stops (transcribe()'s)
    priority: int = 0  # its transcriptions' place in the engine's queue (SamplingParams.priority)

    def add(self, samples: np.ndarray, rate: int) -> None:
        """Append a chunk of the recording (any rate, mono or with channels, int or float)."""
        if np.asarray(samples).size:
            chunk = load_audio((np.asarray(samples), int(rate)))
            self.audio.append(chunk)
            self.samples += len(chunk)

    def recording(self) -> np.ndarray:
        return np.concatenate(self.audio) if self.audio else np.zeros(0, np.float32)

    def text(self) -> tuple[str, str]:
        """(confirmed text, unconfirmed text)."""
        return "".join(w.text for w in self.confirmed).strip(), "".join(w.text for w in self.pending).strip()

    def due(self) -> bool:
        """Enough new audio arrived since the last transcription for another."""
        return self.samples - self.transcribed_to >= MIN_NEW_SECONDS * SAMPLE_RATE

    def update(self, force: bool = False) -> tuple[str, str]:
        """Transcribe the tail again if enough new audio arrived; confirm what two runs agree on."""
        if not force and not self.due():
            return self.text()
        self.transcribed_to = self.samples
        heard = self._transcribe_tail()
        agreed = 0
        while agreed < min(len(heard), len(self.pending)) and heard[agreed].key == self.pending[agreed].key:
            agreed += 1
        self.confirmed += heard[:agreed]
        self.pending = heard[agreed:]
        self._trim_buffer()
        return self.text()

    def _transcribe_tail(self) -> list[LiveWord]:
        from scriba.transcription.transcribe import transcribe

        tail = self.recording()[self.buffer_start :]
        if tail.size == 0:
            return []
        whole = self.buffer_start == 0  # the tail holds every confirmed word
        timed = not whole or len(tail) >= TIMED_AFTER_SECONDS * SAMPLE_RATE
        prompt = None if whole else "".join(w.text for w in self.confirmed[-40:]).strip() or None
        options = TranscribeOptions.build(
            self.options, word_timestamps=timed, vad_filter=False, initial_prompt=prompt
        )
        result = transcribe((tail, SAMPLE_RATE), options, cancel=self.cancel, priority=self.priority)
        if whole:
            return _after_confirmed(self.confirmed, _words_of(result, 0.0, timed))
        done = self.confirmed[-1].end if self.confirmed else 0.0
        words = _words_of(result, self.buffer_start / SAMPLE_RATE, timed)
        words = [w for w in words if w.start >= done - 0.1]  # the tail may hear confirmed words again
        return _without_repeat(self.confirmed, words)

    def _trim_buffer(self) -> None:
        if not self.confirmed or self.confirmed[-1].end is None:
            return
        if self.samples - self.buffer_start > MAX_BUFFER_SECONDS * SAMPLE_RATE:
            self.buffer_start = max(self.buffer_start, int(self.confirmed[-1].end * SAMPLE_RATE))


def _words_of(result, offset: float, timed: bool) -> list[LiveWord]:
    """A transcription's words, timed from `offset` seconds (or untimed: each segment's text
    split where a word starts)."""
    if timed:
        return [LiveWord(w.word, offset + w.start, offset + w.end) for s in result.segments for w in s.words]
    return [LiveWord(text, None, None) for s in result.segments for text in re.findall(r"\s*\S+", s.text)]


def _after_confirmed(confirmed: list[LiveWord], heard: list[LiveWord], longest: int = 3) -> list[LiveWord]:
    """The words of a transcription of the whole recording that come after the confirmed ones:
    past as many words as are confirmed when it heard those the same, else past the last place
    it heard the confirmed words' end (a word or more heard differently)."""
    n = len(confirmed)
    if [w.key for w in heard[:n]] == [w.key for w in confirmed]:
        return heard[n:]
    for m in range(min(longest, n), 0, -1):
        end = [w.key for w in confirmed[-m:]]
        for i in range(len(heard) - m, -1, -1):
            if [w.key for w in heard[i : i + m]] == end:
                return heard[i + m :]
    return heard[n:]


def _without_repeat(confirmed: list[LiveWord], words: list[LiveWord], longest: int = 5) -> list[LiveWord]:
    """Drop a run of words at the start of `words` that repeats the end of `confirmed`."""
    for n in range(min(longest, len(confirmed), len(words)), 0, -1):
        if [w.key for w in confirmed[-n:]] == [w.key for w in words[:n]]:
            return words[n:]
    return words
