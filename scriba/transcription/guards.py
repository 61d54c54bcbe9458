"""openai-whisper's guards on a window's output: when to retry it at the next temperature, when
it is silence, what previous text the next window gets, and which segments are hallucinations
in silence (hallucination_silence_threshold)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from scriba.transcription.options import APPEND, COMPRESSION_RATIO, LOGPROB, NO_SPEECH, PREPEND
from scriba.transcription.results import Segment, WindowResult, Word


@dataclass(frozen=True)
class Guards:
    """openai-whisper's thresholds: retry a window at the next temperature when its text is too
    repetitive or too unlikely; drop it as silence when no-speech is likely and its text unlikely."""

    compression_ratio: float | None = COMPRESSION_RATIO
    logprob: float | None = LOGPROB
    no_speech: float | None = NO_SPEECH
    hallucination_silence: float | None = None  # seconds: see drop_hallucinations
    max_conditioning_temperature: float = 0.5  # above it, the prompt is reset

    @classmethod
    def from_options(cls, o) -> Guards:
        """The thresholds of a TranscribeOptions."""
        return cls(
            o.compression_ratio_threshold,
            o.logprob_threshold,
            o.no_speech_threshold,
            o.hallucination_silence_threshold,
            o.prompt_reset_on_temperature,
        )

    def too_repetitive(self, r: WindowResult) -> bool:
        return self.compression_ratio is not None and r.compression_ratio > self.compression_ratio

    def needs_fallback(self, r: WindowResult) -> bool:
        too_repetitive = self.too_repetitive(r)
        too_unlikely = self.logprob is not None and r.avg_logprob < self.logprob
        return (too_repetitive or too_unlikely) and not self._silence(r, too_unlikely)

    def pick(self, tried: list[WindowResult]) -> WindowResult:
        """A window's result when every temperature failed (`tried`, in order): faster-whisper's
        pick, the likeliest (best average log-prob) of those not too repetitive, else of all,
        with the last temperature, so the next window's previous text is reset as after it.
        openai-whisper keeps the last, sampled at the highest temperature: often invented text,
        and a translation fails the log-prob guard at every temperature more often than not."""
        plausible = [r for r in tried if not self.too_repetitive(r)]
        best = max(plausible or tried, key=lambda r: r.avg_logprob)
        return replace(best, temperature=tried[-1].temperature)

    def is_no_speech(self, r: WindowResult) -> bool:
        return self._silence(r, self.logprob is None or r.avg_logprob <= self.logprob)

    def _silence(self, r: WindowResult, unlikely: bool) -> bool:
        return self.no_speech is not None and r.no_speech_prob > self.no_speech and unlikely

    def next_context(self, context: list[int], new: list[Segment], r: WindowResult, condition: bool):
        """The previous text for the next window: grows, or resets after a high temperature."""
        if condition and r.temperature <= self.max_conditioning_temperature:
            return context + [t for s in new for t in s.tokens]
        return []


def word_anomaly(word: Word) -> float:
    """openai-whisper's score of a word that looks invented: improbable, or too short or long."""
    duration = word.end - word.start
    score = 1.0 if word.probability < 0.15 else 0.0
    if duration < 0.133:
        score += (0.133 - duration) * 15
    if duration > 2.0:
        score += duration - 2.0
    return score


def is_anomaly(segment: Segment | None) -> bool:
    if segment is None or not segment.words:
        return False
    words = [w for w in segment.words if w.word.strip() not in PREPEND + APPEND][:8]
    score = sum(word_anomaly(w) for w in words)
    return score >= 3 or score + 0.01 >= len(words)


def drop_hallucinations(
    segments: list[Segment], window: tuple[float, float], threshold: float
) -> tuple[list[Segment], float | None]:
    """openai-whisper's hallucination_silence_threshold over one window's segments (with words,
    times in seconds, `window` its (start, end)): an anomalous segment with more than
    `threshold` seconds of silence (or another anomaly, or the window's edge) on both sides is
    dropped with everything after it. Returns the segments kept and, when some were dropped,
    where in the window (seconds) decoding should resume; else None."""
    start, end = window
    first = next((s for s in segments if s.words), None)
    if is_anomaly(first) and first.start - start > threshold:  # leading silence, then an invention
        return [], first.start - start
    last_end = start
    for i, seg in enumerate(segments):
        if not seg.words:
            continue
        if is_anomaly(seg):
            after = next((s for s in segments[i + 1 :] if s.words), None)
            next_start = after.words[0].start if after is not None else end
            before_quiet = seg.start - last_end > threshold or seg.start - start < 2.0
            after_quiet = next_start - seg.end > threshold or is_anomaly(after) or end - seg.end < 2.0
            if before_quiet and after_quiet:
                return segments[:i], max(1.0, seg.start - start)
        last_end = seg.end
    return segments, None
