"""The Summarize tab (and the Transcribe tab's "Summarize this transcript"): the configured
summarizer only; when it is not on this machine and cannot be downloaded, the buttons are off
and one sentence says how to get it."""

from __future__ import annotations

import json
import os

from scriba.app.ui import uploads
from scriba.app.ui.choices import Summarizer
from scriba.summarization.result import hms
from scriba.summarization.summarize import summarize


def run_summary(text, upload, model, max_length, min_length):
    """Gradio handler: the summary of the pasted text or the uploaded .txt file."""
    if upload:
        with open(upload, encoding="utf-8", errors="replace") as f:
            text = f.read()
    text = (text or "").strip()
    if not text:
        raise uploads.user_error("Paste or upload some text first.")
    if len(text) > uploads.MAX_TEXT_CHARS:
        raise uploads.user_error(
            f"The text has {len(text):,} characters; this app takes up to {uploads.MAX_TEXT_CHARS:,}."
        )
    if min_length and max_length and min_length > max_length:
        raise uploads.user_error("The minimum length is more than the maximum length.")
    try:
        return summarize(
            text, model=model, max_length=int(max_length) or None, min_length=int(min_length) or None
        )
    except (OSError, ValueError) as e:
        raise uploads.user_error(str(e).splitlines()[0]) from None


def run_transcript_summary(downloads, model):
    """Gradio handler for "Summarize this transcript": reads the transcript's JSON download and
    returns (the summary, its section rows [start, end, summary], the downloads with the JSON
    now carrying the summary and its sections)."""
    import gradio as gr

    paths = [getattr(d, "name", d) for d in downloads or []]
    found = [p for p in paths if str(p).endswith(".json")]
    if not found:
        raise uploads.user_error("Transcribe something first.")
    with open(found[0], encoding="utf-8") as f:
        transcript = json.load(f)
    if not "".join(s.get("text", "") for s in transcript.get("segments", [])).strip():
        raise uploads.user_error("The transcript has no text to summarize.")
    try:
        summary = summarize(transcript, model=model)
    except (OSError, ValueError) as e:
        raise uploads.user_error(str(e).splitlines()[0]) from None
    transcript["summary"] = summary.to_dict()
    path = os.path.join(uploads.scratch_folder("scriba-"), os.path.basename(found[0]))
    with open(path, "w", encoding="utf-8") as f:
        json.dump(transcript, f, ensure_ascii=False, indent=2)
    rows = [[hms(s.start), hms(s.end), s.summary] for s in summary.sections]
    files = [path if p == found[0] else p for p in paths]
    return str(summary), gr.update(value=rows, visible=True), files


def build_transcript_summary(gr):
    """The Transcribe tab's summary: the button, why it is off (when it is), the summary, its
    sections (click: play)."""
    button = gr.Button("Summarize this transcript", elem_id="summarize-transcript-button", interactive=False)
    why_not = gr.Markdown("", elem_id="transcript-summary-notice")
    summary = gr.Textbox(label="Summary of the transcript", interactive=False, elem_id="transcript-summary")
    sections = gr.Dataframe(
        headers=["start", "end", "summary"],
        label="Sections (click one to play from there)",
        interactive=False,
        elem_id="summary-sections",
        visible=False,
    )
    return button, why_not, summary, sections


def summarizer_state(summarizer: Summarizer):
    """(notice, Summarize button, Summarize-this-transcript button, why that one is off) as
    the page loads."""
    import gradio as gr

    on, notice = summarizer.available, summarizer.notice()
    why_not = "" if on else f"Summaries are off here. {notice}"
    return notice, gr.update(interactive=on), gr.update(interactive=on), why_not


def build_summarize_tab(gr, summarizer: Summarizer):
    """The tab's components; returns (notice, Summarize button, the model's State)."""
    notice = gr.Markdown(f"Summarizer **{summarizer.model}**: checking…", elem_id="summarizer-notice")
    text = gr.Textbox(label="Text", lines=10, elem_id="summary-input")
    upload = gr.File(label="or a .txt file", file_types=[".txt"], type="filepath")
    with gr.Row():
        max_length = gr.Slider(0, 512, value=0, step=1, label="Max length (0: the model's)")
        min_length = gr.Slider(0, 256, value=0, step=1, label="Min length (0: the model's)")
    button = gr.Button("Summarize", variant="primary", elem_id="summarize-button", interactive=False)
    summary = gr.Textbox(label="Summary", lines=6, interactive=False, elem_id="summary", buttons=["copy"])
    model = gr.State(summarizer.model)
    button.click(run_summary, [text, upload, model, max_length, min_length], [summary], api_name="summarize")
    return notice, button, model
