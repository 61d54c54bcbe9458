"""Speakers on the Transcribe tab: the transcript as each speaker's turns, the speakers table
(label, the name to show, speaking time) whose names the person can edit, and the result with
those names, on the page and in the downloads."""

from __future__ import annotations

import copy

from scriba.app.ui.text import clock
from scriba.transcription.writers import labelled

HEADERS = ["speaker", "name (edit, then Rename)", "speaking time"]


def turns_text(segments) -> str:
    """One paragraph per turn: consecutive segments of a speaker after their label."""
    turns: list[tuple[str | None, list[str]]] = []
    for seg in segments:
        if turns and turns[-1][0] == seg.speaker:
            turns[-1][1].append(seg.text.strip())
        else:
            turns.append((seg.speaker, [seg.text.strip()]))
    return "\n\n".join(labelled(" ".join(texts), who) for who, texts in turns)


def speaker_rows(result) -> list[list]:
    """[label, name, speaking time] of each speaker (the name starts as the label)."""
    return [[s.name, s.name, clock(s.speaking_time)] for s in result.speakers or []]


def renamed(result, rows) -> object:
    """A copy of the result with each speaker's label replaced by the name in its row (an
    empty name keeps the label)."""
    names = {str(row[0]): (str(row[1]).strip() or str(row[0])) for row in _rows(rows)}
    copied = copy.deepcopy(result)
    for seg in copied.segments:
        seg.speaker = names.get(seg.speaker, seg.speaker)
        for w in seg.words or []:
            w.speaker = names.get(w.speaker, w.speaker)
    for s in copied.speakers or []:
        s.name = names.get(s.name, s.name)
    return copied


def _rows(rows) -> list[list]:
    """The table's rows, whether Gradio hands a list of lists or a DataFrame."""
    if hasattr(rows, "values") and hasattr(rows, "columns"):
        return rows.values.tolist()
    return list(rows or [])
