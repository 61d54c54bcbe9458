"""A window's tokens as segments (openai-whisper's rule: text between timestamp pairs), and how
much of a file's speech the segments cover."""

from __future__ import annotations

from scriba.transcription.results import Segment, WindowResult
from scriba.whisper.constants import TIME_PRECISION


def split_segments(
    result: WindowResult, offset: float, window_seconds: float, timestamp_begin: int, decode, words_of=None
) -> tuple[list[Segment], float]:
    """openai-whisper's rule: text between consecutive timestamp pairs is a segment.

    Returns the segments (times from the audio start, given the window's `offset`) and how
    far to seek (seconds): to the last closed pair, or the whole window when the output ends
    on a single timestamp or has no pair (then one segment spans the window). With
    `words_of(lo, hi)` (the Words of result.tokens[lo:hi], window times), segments get words.
    """
    tokens = result.tokens
    is_ts = [t >= timestamp_begin for t in tokens]
    pair_ends = [i for i in range(1, len(tokens)) if is_ts[i] and is_ts[i - 1]]
    single_ending = len(tokens) >= 2 and not is_ts[-2] and is_ts[-1]

    def make(lo: int, hi: int, start: float, end: float) -> Segment:
        piece = tokens[lo:hi]
        text = decode([t for t in piece if t < timestamp_begin])
        seg = Segment(
            offset + start,
            offset + end,
            text,
            piece,
            result.avg_logprob,
            result.no_speech_prob,
            result.temperature,
            result.compression_ratio,
        )
        if words_of is not None:
            seg.words = words_of(lo, hi)
            for w in seg.words:
                w.start, w.end = offset + w.start, offset + w.end
        return seg

    def seconds(token: int) -> float:
        return (token - timestamp_begin) * TIME_PRECISION

    segments: list[Segment] = []
    if pair_ends:
        cuts = pair_ends + ([len(tokens)] if single_ending else [])
        last = 0
        for cut in cuts:
            piece = tokens[last:cut]
            if len(piece) >= 2 and piece[0] >= timestamp_begin:
                segments.append(make(last, cut, seconds(piece[0]), seconds(piece[-1])))
            last = cut
        seek = window_seconds if single_ending else seconds(tokens[pair_ends[-1] - 1])
    else:
        stamps = [t for t in tokens if t >= timestamp_begin]
        end = seconds(stamps[-1]) if stamps and stamps[-1] != timestamp_begin else window_seconds
        segments.append(make(0, len(tokens), 0.0, end))
        seek = window_seconds
    segments = [s for s in segments if s.text.strip()]
    for s in segments:  # a timestamp past the audio's end is clipped to it
        s.end = min(max(s.end, s.start), offset + window_seconds)
        s.start = min(s.start, s.end)
    return segments, min(max(seek, TIME_PRECISION), window_seconds)


def segment_spans(tokens: list[int], timestamp_begin: int, eot: int, window_seconds: float) -> list[tuple]:
    """The (start, end) window seconds of the segments split_segments would make of generated
    `tokens` (text: the ids below `eot`; control tokens before the first timestamp skipped), read
    from the timestamps alone; a text not closed by a timestamp runs to the window's end; no
    pair: the whole window."""
    stamps = [i for i, t in enumerate(tokens) if t >= timestamp_begin]
    pairs = [i for i in stamps[1:] if tokens[i - 1] >= timestamp_begin]
    if not pairs:
        return [(0.0, window_seconds)]
    seconds = lambda i: (tokens[i] - timestamp_begin) * TIME_PRECISION  # noqa: E731
    spans, opened = [], stamps[0]
    for cut in pairs + [len(tokens)]:
        inside = [i for i in stamps if opened <= i < cut]
        if any(t < eot for t in tokens[opened:cut]):
            spans.append((seconds(opened), seconds(inside[-1]) if len(inside) > 1 else window_seconds))
        opened = cut
    return spans


def coverage(chunks: list[tuple[float, float]], segments: list[Segment]) -> tuple[float, float, list[str]]:
    """(seconds of speech, the fraction of it inside segments, a warning per chunk of speech
    of at least a second that no segment touches). `chunks` in seconds."""
    total = sum(e - s for s, e in chunks)
    spans = [(seg.start, seg.end) for seg in segments]
    covered, warnings = 0.0, []
    for s, e in chunks:
        inside = sum(max(0.0, min(e, b) - max(s, a)) for a, b in spans)
        covered += min(inside, e - s)
        if e - s >= 1.0 and not any(a < e and b > s for a, b in spans):
            warnings.append(f"speech at {s:.1f}-{e:.1f} s produced no text")
    return total, (covered / total if total else 1.0), warnings
