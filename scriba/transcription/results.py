"""Transcription results: a file's text, segments and words, and one decoded window."""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, field


@dataclass
class Word:
    """One word with its time in the audio (faster-whisper's names)."""

    start: float
    end: float
    word: str  # with its leading space, as the tokenizer writes it
    probability: float  # the mean probability of its tokens
    language: str | None = None  # its segment's
    speaker: str | None = None  # with diarize=True

    def __post_init__(self) -> None:  # plain floats (they print as 0.46, not np.float64(0.46))
        self.start, self.end, self.probability = float(self.start), float(self.end), float(self.probability)


@dataclass
class Segment:
    start: float  # seconds from the start of the audio
    end: float
    text: str
    tokens: list[int]  # text and timestamp tokens of the segment
    avg_logprob: float  # of the window it came from
    no_speech_prob: float
    temperature: float = 0.0
    compression_ratio: float = 0.0
    words: list[Word] | None = None  # with word_timestamps=True
    language: str | None = None  # its window's: detected per window with multilingual=True, else the file's
    speaker: str | None = None  # with diarize=True: "SPEAKER_00", ... or a known speaker's name

    def __post_init__(self) -> None:  # plain numbers, whatever computed them
        self.start, self.end = float(self.start), float(self.end)
        self.avg_logprob, self.no_speech_prob = float(self.avg_logprob), float(self.no_speech_prob)
        self.temperature, self.compression_ratio = float(self.temperature), float(self.compression_ratio)


@dataclass
class Speaker:
    """A voice heard in the audio (diarize=True): its label and how long it spoke."""

    name: str  # "SPEAKER_00", "SPEAKER_01", ... in order of first words, or a known speaker's name
    speaking_time: float  # seconds

    def __post_init__(self) -> None:
        self.speaking_time = float(self.speaking_time)


@dataclass
class Transcription:
    text: str
    language: str | None
    language_probability: float | None  # when detected
    duration: float  # seconds of audio
    segments: list[Segment] = field(default_factory=list)
    speech_duration: float | None = None  # seconds of speech found by VAD (None: VAD off)
    coverage: float | None = None  # the fraction of that speech inside segments
    warnings: list[str] = field(default_factory=list)  # e.g. speech that produced no text
    error: str | None = None  # in a list: why this input gave no transcript (the others did)
    speakers: list[Speaker] | None = None  # with diarize=True, in order of their first words

    def to_dict(self) -> dict:
        """As plain data, its times to the millisecond (17.9, not 17.900000000000002)."""
        return _times_rounded(asdict(self))


@dataclass
class WindowResult:
    """One decoded window: its free tokens (after the control tokens, without <|endoftext|>)."""

    tokens: list[int]
    text: str
    avg_logprob: float
    no_speech_prob: float
    compression_ratio: float
    temperature: float
    language: str | None
    language_probability: float | None
    token_times: list[float] | None = None  # with word timestamps: seconds into the window
    token_probs: list[float] | None = None


TIME_FIELDS = frozenset({"start", "end", "duration", "speech_duration", "speaking_time"})


def _times_rounded(data):
    """`data` (asdict's dicts and lists) with every time field rounded to the millisecond."""
    if isinstance(data, list):
        return [_times_rounded(x) for x in data]
    if not isinstance(data, dict):
        return data
    return {k: round(v, 3) if k in TIME_FIELDS and isinstance(v, float) else _times_rounded(v)
            for k, v in data.items()}


def compression_ratio(text: str) -> float:
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0
