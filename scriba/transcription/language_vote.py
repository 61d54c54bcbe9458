"""Which language a file is in, from its first speech windows (faster-whisper's rule).

Each window decoded without a language reports the language it detected and that language's
probability. The first window whose probability is above the threshold decides; when none is
and `max_windows` windows have voted (or the file has no more speech), the language most
windows chose wins (the earliest on a tie), with the highest probability it had.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

THRESHOLD = 0.5  # faster-whisper's language_detection_threshold
MAX_WINDOWS = 3  # speech windows asked at most; faster-whisper's language_detection_segments is 1


@dataclass
class LanguageVote:
    threshold: float = THRESHOLD
    max_windows: int = MAX_WINDOWS
    entries: list = field(default_factory=list)  # (window, result) of the windows that voted

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"language_detection_threshold must be in [0, 1], got {self.threshold!r}")
        if not isinstance(self.max_windows, int) or self.max_windows < 1:
            raise ValueError(
                f"language_detection_segments must be a positive integer, got {self.max_windows!r}"
            )

    def add(self, window, result) -> None:
        self.entries.append((window, result))

    @property
    def decided(self) -> bool:
        """Enough windows have voted (more would not change the outcome's rule)."""
        return bool(self.entries) and (
            self._probability(self.entries[-1]) > self.threshold or len(self.entries) >= self.max_windows
        )

    def outcome(self) -> tuple[str | None, float | None]:
        """(language, probability) by the rule above; (None, None) when no window voted."""
        votes = [(r.language, self._probability((w, r))) for w, r in self.entries if r.language]
        if not votes:
            return None, None
        for language, probability in votes:
            if probability > self.threshold:
                return language, probability
        counts = Counter(language for language, _ in votes)
        winner = max(counts, key=lambda language: counts[language])  # the first of the most chosen
        return winner, max(p for language, p in votes if language == winner)

    @staticmethod
    def _probability(entry) -> float:
        probability = entry[1].language_probability
        return 0.0 if probability is None else probability
