"""How results read on the page: clock times, paragraphs, durations, the language line."""

from __future__ import annotations

from scriba.models.whisper.language_names import LANGUAGES

PARAGRAPH_PAUSE = 2.0  # seconds of silence between segments that start a new paragraph
# A paragraph this long ends at its next sentence end even without a pause (a talk without
# 2 s pauses would otherwise be one block of thousands of characters).
PARAGRAPH_CHARS = 600


def clock(seconds: float) -> str:
    """A time for people: m:ss.s, or h:mm:ss.s from an hour on."""
    tenths = round(max(seconds, 0.0) * 10)
    hours, tenths = divmod(tenths, 36000)
    minutes, tenths = divmod(tenths, 600)
    if hours:
        return f"{hours}:{minutes:02d}:{tenths // 10:02d}.{tenths % 10}"
    return f"{minutes}:{tenths // 10:02d}.{tenths % 10}"


def seconds_of(clock_text: str) -> float:
    """clock()'s text back to seconds ('1:02:05.5' -> 3725.5)."""
    parts = [float(p) for p in str(clock_text).split(":")]
    return sum(p * 60**k for k, p in enumerate(reversed(parts)))


def paragraphs(segments) -> str:
    """The transcript with a blank line wherever the speaker paused for PARAGRAPH_PAUSE, or
    where a paragraph of PARAGRAPH_CHARS has reached the end of a sentence."""
    out, previous_end, length = "", None, 0
    for seg in segments:
        text = seg.text.strip()
        if previous_end is not None:
            long_enough = length >= PARAGRAPH_CHARS and out.rstrip().endswith((".", "?", "!"))
            new = seg.start - previous_end >= PARAGRAPH_PAUSE or long_enough
            out, length = (out + "\n\n", 0) if new else (out + " ", length + 1)
        out += text
        length += len(text)
        previous_end = seg.end
    return out


def say_duration(seconds: float) -> str:
    return f"{seconds:.0f} seconds" if seconds < 120 else f"{seconds / 60:.0f} minutes"


def language_name(code: str | None) -> str:
    return LANGUAGES.get(code or "", code or "unknown").title()


def language_line(language: str | None, probability: float | None, multilingual: bool) -> str:
    """'detected: German (0.97)' only when the model detected it; else what was used and why."""
    name = language_name(language)
    if probability is not None:
        return f"detected: {name} ({probability:.2f})"
    return f"{name} (English-only model)" if not multilingual else f"{name} (as chosen)"
