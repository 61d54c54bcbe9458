"""Transcripts as documents people hand on: Word (docx), one self-contained HTML page, Markdown.

A document reads as a conversation, not as cues: consecutive segments of one speaker make one
paragraph, headed by the speaker's label and, when asked (`times`), the time it starts; a pause
of PARAGRAPH_PAUSE seconds starts a new paragraph too. The HTML page is what noScribe writes for
the same readers: it opens in a browser, in Word and in qualitative-analysis tools (MAXQDA,
ATLAS.ti). The .docx is written by python-docx.
"""

from __future__ import annotations

import html
import io
import re
from dataclasses import dataclass

from scriba.transcription.results import Transcription

PARAGRAPH_PAUSE = 3.0  # seconds of silence that start a new paragraph of the same speaker
DOCUMENTS = ("docx", "html", "md")


@dataclass(frozen=True)
class Paragraph:
    speaker: str | None
    start: float  # seconds
    end: float
    text: str


def paragraphs(result: Transcription) -> list[Paragraph]:
    """The transcript's segments joined into paragraphs: one per speaker's turn, split at pauses."""
    found: list[Paragraph] = []
    for s in result.segments:
        text = s.text.strip()
        if not text:
            continue
        last = found[-1] if found else None
        if last is not None and last.speaker == s.speaker and s.start - last.end < PARAGRAPH_PAUSE:
            found[-1] = Paragraph(last.speaker, last.start, max(last.end, s.end), f"{last.text} {text}")
        else:
            found.append(Paragraph(s.speaker, s.start, s.end, text))
    return found


def clock(seconds: float) -> str:
    """hh:mm:ss, as a document shows a paragraph's start."""
    whole = int(max(seconds, 0.0))
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>#|])")


def _md(text: str) -> str:
    """Text as Markdown shows it literally (its marks escaped)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def to_markdown(result: Transcription, times: bool = False, title: str = "Transcript") -> str:
    """`# title`, then a paragraph per turn: **speaker** [hh:mm:ss]: text."""
    lines = [f"# {_md(title)}", ""]
    for p in paragraphs(result):
        time = f"[{clock(p.start)}]" if times else ""
        head = f"**{_md(p.speaker)}** {time}".rstrip() + ": " if p.speaker else time + " " * bool(time)
        lines += [head + _md(p.text), ""]
    return "\n".join(lines)


_STYLE = (
    "body{font-family:Georgia,serif;max-width:46em;margin:2em auto;padding:0 1em;line-height:1.55}"
    ".speaker{font-weight:bold}.time{color:#666;font-family:monospace;font-size:.9em}"
)


def to_html(result: Transcription, times: bool = False, title: str = "Transcript") -> str:
    """One self-contained page (its style inline): a <p class="turn"> per paragraph, the speaker
    and time in spans of their own, the language on <html>."""
    out = [
        "<!DOCTYPE html>",
        f'<html lang="{html.escape(result.language or "und")}">',
        '<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>",
        f"<body><h1>{html.escape(title)}</h1>",
    ]
    for p in paragraphs(result):
        head = f'<span class="speaker">{html.escape(p.speaker)}</span> ' if p.speaker else ""
        head += f'<span class="time">[{clock(p.start)}]</span> ' if times else ""
        out.append(f'<p class="turn">{head}{html.escape(p.text)}</p>')
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def to_docx(result: Transcription, times: bool = False, title: str = "Transcript") -> bytes:
    """A Word document: the title as its heading and core title, a paragraph per turn with the
    speaker in bold and the time in grey."""
    from docx import Document
    from docx.shared import RGBColor

    doc = Document()
    doc.core_properties.title = title
    doc.add_heading(title, level=1)
    for p in paragraphs(result):
        para = doc.add_paragraph()
        if p.speaker:
            para.add_run(p.speaker).bold = True
            para.add_run(" ")
        if times:
            para.add_run(f"[{clock(p.start)}]").font.color.rgb = RGBColor(0x66, 0x66, 0x66)
            para.add_run(" ")
        para.add_run(p.text)
    buffer = io.BytesIO()
    doc.save(buffer)
    return buffer.getvalue()


_RENDERERS = {"docx": to_docx, "html": to_html, "md": to_markdown}


def render_document(result: Transcription, fmt: str, times: bool = False, title: str = "Transcript") -> bytes:
    """docx, html or md as the file's bytes."""
    made = _RENDERERS[fmt](result, times, title)
    return made if isinstance(made, bytes) else made.encode("utf-8")
