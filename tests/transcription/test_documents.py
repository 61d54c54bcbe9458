"""Documents read back by their readers: python-docx opens the .docx, Python's HTML parser reads the
page, and each finds every segment's text and speaker, in order, with the times when asked."""

import io
from html.parser import HTMLParser

import docx

from scriba.transcription.documents import PARAGRAPH_PAUSE, clock, paragraphs
from scriba.transcription.results import Segment, Transcription
from scriba.transcription.writers import FORMATS, format_transcript, transcript_bytes

SPOKEN = [  # (start, end, speaker, text): Diane twice in a row, then a long pause in Sheila's turn
    (0.5, 2.0, "Diane", " This is Diane in New Jersey."),
    (2.1, 4.0, "Diane", " I grew up there."),
    (4.6, 6.2, "Sheila", " And I'm Sheila, in Texas <and> *proud* of it."),
    (6.2 + PARAGRAPH_PAUSE + 0.5, 3725.0, "Sheila", " Still here & talking."),
    (3726.0, 3727.0, "Diane", " Bye."),
]


def _transcript(speakers=True) -> Transcription:
    segments = [
        Segment(a, b, text, [], -0.2, 0.01, speaker=who if speakers else None) for a, b, who, text in SPOKEN
    ]
    return Transcription("".join(t for *_, t in SPOKEN).strip(), "en", None, 3727.0, segments)


TURNS = [  # the paragraphs people read: (speaker, start, text)
    ("Diane", 0.5, "This is Diane in New Jersey. I grew up there."),
    ("Sheila", 4.6, "And I'm Sheila, in Texas <and> *proud* of it."),
    ("Sheila", 6.2 + PARAGRAPH_PAUSE + 0.5, "Still here & talking."),
    ("Diane", 3726.0, "Bye."),
]


def test_paragraphs_are_turns_split_at_long_pauses():
    assert [(p.speaker, p.start, p.text) for p in paragraphs(_transcript())] == TURNS
    assert clock(3726.0) == "01:02:06"


def test_docx_holds_every_turn_with_its_speaker_and_time():
    for times in (False, True):
        made = transcript_bytes(_transcript(), "docx", times=times, title="call")
        document = docx.Document(io.BytesIO(made))
        body = [p for p in document.paragraphs if p.style.name != "Heading 1"]
        assert document.core_properties.title == "call" and document.paragraphs[0].text == "call"
        expected = [f"{who} [{clock(at)}] {text}" if times else f"{who} {text}" for who, at, text in TURNS]
        assert [p.text for p in body] == expected
        assert all(p.runs[0].bold and p.runs[0].text == who for p, (who, *_) in zip(body, TURNS))


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.turns, self.where, self.lang = [], None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.lang = attrs.get("lang", self.lang) if tag == "html" else self.lang
        if tag == "p" and attrs.get("class") == "turn":
            self.turns.append({"speaker": "", "time": "", "text": ""})
        self.where = attrs.get("class", "text") if self.turns and tag == "span" else "text"

    def handle_endtag(self, tag):
        self.where = "text"

    def handle_data(self, data):
        if self.turns:
            self.turns[-1][self.where] += data


def test_html_is_one_page_that_holds_every_turn():
    for times in (False, True):
        page = _Page()
        page.feed(format_transcript(_transcript(), "html", times=times))
        got = [(t["speaker"], t["time"], t["text"].strip()) for t in page.turns]
        assert got == [(who, f"[{clock(at)}]" if times else "", text) for who, at, text in TURNS]
        assert page.lang == "en"
    assert "<script" not in format_transcript(_transcript(), "html") and "http" not in format_transcript(
        _transcript(), "html"
    )  # self-contained: nothing fetched


def test_markdown_keeps_the_text_literal_and_plain_without_speakers():
    md = format_transcript(_transcript(), "md", times=True)
    assert "**Diane** [00:00:00]: This is Diane in New Jersey. I grew up there.\n" in md
    assert r"Texas \<and\> \*proud\* of it." in md
    plain = format_transcript(_transcript(speakers=False), "md")
    first, second = plain.split("\n")[2], plain.split("\n")[4]  # without speakers, the long pause splits
    assert first.startswith("This is Diane in New Jersey. I grew up there. And I'm Sheila")
    assert second == "Still here & talking. Bye."
    assert {"docx", "html", "md"} <= set(FORMATS)
