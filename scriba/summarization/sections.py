"""A transcript cut into sections for summarizing: consecutive segments, as many as fit the
model's input, so each section has one summary and a time range. Sections follow each other
without gaps: each ends where the next begins (the pause between them goes to the first)."""

from __future__ import annotations

from scriba.summarization.pieces import split_to_fit, token_counter

Span = tuple[float, float, str]  # start, end (seconds), text


def transcript_spans(transcript, index: int = 0) -> list[Span] | None:
    """(start, end, text) of each segment with text, for a transcription result or its JSON
    (a dict with "segments"); None when `transcript` is neither. A diarized segment's text
    follows its speaker ("SPEAKER_00: ..."), so the summary can say who said what."""
    if isinstance(transcript, dict):
        if not isinstance(transcript.get("segments"), list):
            return None
        try:
            segments = [
                (float(s["start"]), float(s["end"]), str(s["text"]), s.get("speaker"))
                for s in transcript["segments"]
            ]
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ValueError(f"transcript {index}: each segment needs start, end and text") from None
    elif hasattr(transcript, "segments"):
        segments = [(s.start, s.end, s.text, getattr(s, "speaker", None)) for s in transcript.segments]
    else:
        return None
    return [(start, end, _said(text.strip(), who)) for start, end, text, who in segments if text.strip()]


def _said(text: str, speaker) -> str:
    return f"{speaker}: {text}" if speaker else text


def sections(spans: list[Span], tokenizer, max_input: int) -> list[Span]:
    """Consecutive segments joined while they fit `max_input` tokens (special tokens
    included); a segment too long on its own is cut between sentences or words, its time
    shared out by characters."""
    budget, count = max_input - 2, token_counter(tokenizer)
    out: list[Span] = []
    for span in (part for s in spans for part in _fitting(s, tokenizer, max_input)):
        if out and count(f"{out[-1][2]} {span[2]}") <= budget:
            out[-1] = (out[-1][0], span[1], f"{out[-1][2]} {span[2]}")
        else:
            out.append(span)
    # No gaps: each section runs until the next one starts.
    return [(s[0], out[i + 1][0] if i + 1 < len(out) else s[1], s[2]) for i, s in enumerate(out)]


def _fitting(span: Span, tokenizer, max_input: int) -> list[Span]:
    start, end, text = span
    parts = split_to_fit(text, tokenizer, max_input)
    if len(parts) == 1:
        return [span]
    total, done, out = sum(len(p) for p in parts), 0, []
    for part in parts:
        a = start + (end - start) * done / total
        done += len(part)
        out.append((a, start + (end - start) * done / total, part))
    return out
