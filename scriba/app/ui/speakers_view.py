"""Speakers on the Transcribe tab: the transcript as each speaker's turns, the speakers table
(label, the name to show, speaking time) whose names the person can edit, and the result with
those names, on the page and in the downloads; "Remember these voices" keeps the named
speakers' voices in the voice library, so that the next recordings name them too."""

from __future__ import annotations

import copy

import numpy as np

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


VOICE_SECONDS = 60.0  # of a speaker's segments read for their voice at most


def named_rows(rows) -> dict[str, str]:
    """label -> the person's name, for each row given a name of its own (not a SPEAKER_ label)."""
    named = {}
    for row in _rows(rows):
        label, name = str(row[0]), str(row[1]).strip()
        if name and name != label and not name.startswith("SPEAKER_"):
            named[label] = name
    return named


def speaker_speech(result, wave: np.ndarray, label: str, rate: int = 16000) -> np.ndarray:
    """The samples of `label`'s segments in `wave`, joined (VOICE_SECONDS at most)."""
    pieces, total = [], 0
    for seg in result.segments:
        if seg.speaker == label and total < VOICE_SECONDS * rate:
            piece = wave[int(seg.start * rate) : int(seg.end * rate)]
            pieces.append(piece[: int(VOICE_SECONDS * rate) - total])
            total += len(pieces[-1])
    return np.concatenate(pieces) if pieces else np.zeros(0, np.float32)


def _rows(rows) -> list[list]:
    """The table's rows, whether Gradio hands a list of lists or a DataFrame."""
    if hasattr(rows, "values") and hasattr(rows, "columns"):
        return rows.values.tolist()
    return list(rows or [])
