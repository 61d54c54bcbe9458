"""Subtitle cues with openai-whisper's line control: `max_line_width`, `max_line_count`,
`max_words_per_line` and `highlight_words` mean what they mean in its writers (whisper/utils.py),
and the same segments and words give the same cues. Without words, a cue per segment.

Beyond openai-whisper: a diarized transcript's cue starts where its speaker changes, and its text
comes after the speaker's label.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scriba.transcription.results import Segment, Word

LONG_PAUSE = 3.0  # seconds between words that start a new cue when lines are packed across segments
UNLIMITED = 1000  # openai-whisper's stand-in for a limit not given
# A cue whose words were given no time of their own (a word aligned to a point) still shows for this
# long: a player skips a cue of no length, and its words with it.
MIN_CUE_SECONDS = 0.2


@dataclass(frozen=True)
class SubtitleOptions:
    """How cues are cut from words (each None: no limit). `max_line_width` characters a line,
    `max_line_count` lines a cue (both given: lines run across segments, and a pause of 3 s
    starts a cue; otherwise every segment starts a cue), `max_words_per_line` words a line;
    `highlight_words`: a cue per word with that word underlined (<u>)."""

    max_line_width: int | None = None
    max_line_count: int | None = None
    max_words_per_line: int | None = None
    highlight_words: bool = False

    def __post_init__(self) -> None:
        for name in ("max_line_width", "max_line_count", "max_words_per_line"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")

    @property
    def is_plain(self) -> bool:
        return self == SubtitleOptions()


def labelled(text: str, speaker: str | None) -> str:
    """The text after its speaker's label, as WhisperX writes it: `[SPEAKER_00]: text`."""
    return text if speaker is None else f"[{speaker}]: {text}"


WORD_CUES = SubtitleOptions(max_words_per_line=1)  # a cue per word


def cues(segments: list[Segment], options: SubtitleOptions | None = None) -> list[tuple[float, float, str]]:
    """(start, end, text) of each cue: from the words when every segment has them, else a cue
    per segment; the text after its speaker's label when diarized."""
    options = options or SubtitleOptions()
    if not segments or any(s.words is None for s in segments):
        return well_formed([(s.start, s.end, labelled(s.text.strip(), s.speaker)) for s in segments])
    out = []
    for cue in _packed(segments, options):
        texts = [text for _, text in cue]
        speaker = cue[0][0].speaker
        if not options.highlight_words:
            out.append((cue[0][0].start, cue[-1][0].end, labelled("".join(texts), speaker)))
            continue
        out += [(a, b, labelled(text, speaker)) for a, b, text in _highlighted(cue, texts)]
    return well_formed(out)


def well_formed(cues_: list[tuple[float, float, str]], after: float = 0.0) -> list[tuple[float, float, str]]:
    """The cues in order with their times to the millisecond, none with empty text, each starting
    no earlier than the cue before it ends, and none of no length (it shows for MIN_CUE_SECONDS).
    `after`: where the cue before these ended, so that cues made a segment at a time come out as
    those of the whole transcript. Cues that are already so come out unchanged."""
    out, last = [], _millis(after)
    for a, b, text in cues_:
        if not text.strip():
            continue
        start = max(_millis(a), last)
        end = _millis(b) if _millis(b) > start else start + _millis(MIN_CUE_SECONDS)
        out.append((start / 1000.0, end / 1000.0, text))
        last = end
    return out


def _packed(segments: list[Segment], o: SubtitleOptions) -> list[list[tuple[Word, str]]]:
    """The cues as lists of (word, its text as written: a leading space, or a line break)."""
    keep_segments = o.max_line_count is None or o.max_line_width is None
    width = o.max_line_width or UNLIMITED
    per_line = o.max_words_per_line or UNLIMITED
    done: list[list[tuple[Word, str]]] = []
    cue: list[tuple[Word, str]] = []
    line_len, line_count = 0, 1
    last = next((w.start for s in segments for w in s.words), segments[0].start)
    for segment in segments:
        for first in range(0, len(segment.words), per_line):
            for i, word in enumerate(segment.words[first : first + per_line]):
                text = word.word
                long_pause = not keep_segments and word.start - last > LONG_PAUSE
                has_room = line_len + len(text) <= width
                new_speaker = bool(cue) and cue[-1][0].speaker != word.speaker
                cue_break = (i == 0 and bool(cue) and keep_segments) or new_speaker
                if line_len > 0 and has_room and not long_pause and not cue_break:
                    line_len += len(text)
                else:
                    text = text.strip()
                    full = o.max_line_count is not None and (long_pause or line_count >= o.max_line_count)
                    if (cue and full) or cue_break:
                        done.append(cue)
                        cue, line_count = [], 1
                    elif line_len > 0:
                        line_count += 1
                        text = "\n" + text
                    line_len = len(text.strip())
                cue.append((word, text))
                last = word.start
    return done + ([cue] if cue else [])


def _highlighted(cue: list[tuple[Word, str]], texts: list[str]) -> list[tuple[float, float, str]]:
    """openai-whisper's highlight_words: the cue's text once per word with that word underlined,
    the gaps between words (to the millisecond) shown without."""
    whole = "".join(texts)
    out, last = [], cue[0][0].start
    for i, (word, _) in enumerate(cue):
        if _millis(last) != _millis(word.start):
            out.append((last, word.start, whole))
        marked = [re.sub(r"^(\s*)(.*)$", r"\1<u>\2</u>", t) if j == i else t for j, t in enumerate(texts)]
        out.append((word.start, word.end, "".join(marked)))
        last = word.end
    return out


def _millis(seconds: float) -> int:
    return round(seconds * 1000.0)
