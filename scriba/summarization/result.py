"""What summarize() returns: the summary, how many pieces each level summarized, and for a
transcript its sections with their time ranges."""

from __future__ import annotations

from dataclasses import dataclass


def hms(seconds: float) -> str:
    """00:12:30: a time in a recording, to the second."""
    whole = int(round(max(seconds, 0.0)))
    return f"{whole // 3600:02d}:{whole // 60 % 60:02d}:{whole % 60:02d}"


@dataclass(frozen=True)
class Section:
    """One stretch of a transcript and its summary; sections follow each other without gaps."""

    start: float  # seconds from the start of the recording
    end: float
    summary: str

    @property
    def time_range(self) -> str:
        return f"{hms(self.start)}–{hms(self.end)}"

    def to_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "time_range": self.time_range, "summary": self.summary}


class Summary(str):
    """The summary text (a str: it prints, compares and serializes as the text) with

    pieces    inputs summarized at each level: (12, 2, 1) is twelve pieces of the text, their
              joined summaries summarized as two pieces, those as one; (1,) for a short text
    sections  a transcript's sections in order, each with its own summary; () for a text
    """

    pieces: tuple[int, ...]
    sections: tuple[Section, ...]

    def __new__(cls, text: str, pieces=(1,), sections=()):
        summary = super().__new__(cls, text)
        summary.pieces, summary.sections = tuple(pieces), tuple(sections)
        return summary

    @property
    def levels(self) -> int:
        return len(self.pieces)

    def to_dict(self) -> dict:
        return {
            "summary": str(self),
            "levels": self.levels,
            "pieces": list(self.pieces),
            "sections": [s.to_dict() for s in self.sections],
        }
