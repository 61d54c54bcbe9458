"""Live transcription of audio that keeps arriving (a microphone), in the spirit of
whisper_streaming's local agreement: the recording's unconfirmed tail is transcribed again as
audio arrives; a word two transcriptions in a row agree on is confirmed and never changes; the
audio buffer drops what lies before a confirmed word once it grows long. When the recording
ends, the web app's final text is `transcribe()` of the whole recording, so it equals
transcribing the same recording afterwards.
"""

from __future__ import annotations

import string
import threading
from dataclasses import dataclass, field

import numpy as np

from scriba.media.load import SAMPLE_RATE, load_audio
from scriba.transcription.options import TranscribeOptions

MIN_NEW_SECONDS = 1.0  # transcribe again once this much new audio has arrived
MAX_BUFFER_SECONDS = 15.0  # past this, the buffer drops audio before the last confirmed word


@dataclass
class LiveWord:
    text: str
    start: float  # seconds into the recording
    end: float

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
        prompt = "".join(w.text for w in self.confirmed[-40:]).strip() or None
        options = TranscribeOptions.build(
            self.options, word_timestamps=True, vad_filter=False, initial_prompt=prompt
        )
        result = transcribe((tail, SAMPLE_RATE), options, cancel=self.cancel, priority=self.priority)
        offset = self.buffer_start / SAMPLE_RATE
        done = self.confirmed[-1].end if self.confirmed else 0.0
        words = [LiveWord(w.word, offset + w.start, offset + w.end) for s in result.segments for w in s.words]
        words = [w for w in words if w.start >= done - 0.1]  # the tail may hear confirmed words again
        return _without_repeat(self.confirmed, words)

    def _trim_buffer(self) -> None:
        if self.confirmed and self.samples - self.buffer_start > MAX_BUFFER_SECONDS * SAMPLE_RATE:
            self.buffer_start = max(self.buffer_start, int(self.confirmed[-1].end * SAMPLE_RATE))


def _without_repeat(confirmed: list[LiveWord], words: list[LiveWord], longest: int = 5) -> list[LiveWord]:
    """Drop a run of words at the start of `words` that repeats the end of `confirmed`."""
    for n in range(min(longest, len(confirmed), len(words)), 0, -1):
        if [w.key for w in confirmed[-n:]] == [w.key for w in words[:n]]:
            return words[n:]
    return words
