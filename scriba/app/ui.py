"""The Gradio web app: a Transcribe tab and a Summarize tab over the shared engines.

Launched by `scriba ui` and by the top-level app.py (the Hugging Face Space). Inputs are
bounded (upload size, audio duration, text length) with clear messages; it binds to
127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import os
import tempfile

from scriba.app.summarize import DEFAULT_SUMMARIZER, summarize
from scriba.app.transcribe import transcribe
from scriba.app.writers import write_transcript
from scriba.engine.audio import SAMPLE_RATE, AudioError, load_audio

MAX_UPLOAD = "200mb"
MAX_AUDIO_SECONDS = 2 * 60 * 60
MAX_TEXT_CHARS = 200_000
LANGUAGES = [
    "auto",
    "en",
    "de",
    "fr",
    "es",
    "it",
    "pt",
    "nl",
    "ja",
    "zh",
    "ru",
    "ko",
    "ar",
    "hi",
    "pl",
    "tr",
    "sv",
    "uk",
]


# The UI's precision choices, as engine options (README: CPU modes).
PRECISIONS = {"float32": {}, "bfloat16": {"dtype": "bfloat16"}, "int8": {"quantization": "int8"}}


def clock(seconds: float) -> str:
    """A time for people: m:ss.s, or h:mm:ss.s from an hour on."""
    tenths = round(max(seconds, 0.0) * 10)
    hours, tenths = divmod(tenths, 36000)
    minutes, tenths = divmod(tenths, 600)
    text = (
        f"{minutes:02d}:{tenths // 10:02d}.{tenths % 10}"
        if hours
        else f"{minutes}:{tenths // 10:02d}.{tenths % 10}"
    )
    return f"{hours}:{text}" if hours else text


PARAGRAPH_PAUSE = 2.0  # seconds of silence between segments that start a new paragraph


def paragraphs(segments) -> str:
    """The transcript with a blank line wherever the speaker paused for PARAGRAPH_PAUSE."""
    out, previous_end = "", None
    for seg in segments:
        if previous_end is not None:
            out += "\n\n" if seg.start - previous_end >= PARAGRAPH_PAUSE else " "
        out += seg.text.strip()
        previous_end = seg.end
    return out


def say_duration(seconds: float) -> str:
    return f"{seconds:.0f} seconds" if seconds < 120 else f"{seconds / 60:.0f} minutes"


def run_transcription(
    audio_path, model, language, task, timestamps, precision="float32", word_timestamps=False, progress=None
):
    """Gradio handler: (detected language, text, segment rows, subtitle files, word rows). `precision`:
    "float32", "bfloat16" or "int8" (int8 Linear layers on the CPU: faster; README: CPU
    modes). Gradio passes `progress` (tracking transcribe's tqdm bar over the windows)."""
    import gradio as gr

    if not audio_path:
        raise gr.Error("Upload or record some audio first.")
    try:
        samples = load_audio(audio_path)
    except (AudioError, FileNotFoundError) as e:
        raise gr.Error(f"Cannot read this audio: {e}") from None
    seconds = len(samples) / SAMPLE_RATE
    if seconds > MAX_AUDIO_SECONDS:
        raise gr.Error(
            f"The audio is {say_duration(seconds)} long; "
            f"this app takes up to {say_duration(MAX_AUDIO_SECONDS)}."
        )
    try:
        result = transcribe(
            (samples, SAMPLE_RATE),
            model=(model or "").strip() or None,
            language=None if language == "auto" else language,
            task=task,
            timestamps=bool(timestamps),
            word_timestamps=bool(word_timestamps),
            progress=progress is not None,
            **PRECISIONS.get(precision, {}),
        )
    except (OSError, ValueError) as e:
        raise gr.Error(str(e).splitlines()[0]) from None
    folder = tempfile.mkdtemp(prefix="scriba-")
    stem = os.path.splitext(os.path.basename(audio_path))[0] or "transcript"
    files = [write_transcript(result, fmt, folder, stem) for fmt in ("srt", "vtt", "json")]
    rows = [[clock(s.start), clock(s.end), s.text.strip()] for s in result.segments]
    words = [
        [clock(w.start), clock(w.end), w.word.strip(), round(w.probability, 2)]
        for s in result.segments
        for w in s.words or []
    ]
    detected = result.language or "?"
    if result.language_probability is not None:
        detected += f" ({result.language_probability:.0%})"
    return detected, paragraphs(result.segments) if timestamps else result.text, rows, files, words


def run_summary(text, upload, model, max_length, min_length):
    import gradio as gr

    if upload:
        with open(upload, encoding="utf-8", errors="replace") as f:
            text = f.read()
    text = (text or "").strip()
    if not text:
        raise gr.Error("Paste or upload some text first.")
    if len(text) > MAX_TEXT_CHARS:
        raise gr.Error(f"The text has {len(text):,} characters; this app takes up to {MAX_TEXT_CHARS:,}.")
    if min_length and max_length and min_length > max_length:
        raise gr.Error("The minimum length is more than the maximum length.")
    try:
        return summarize(
            text,
            model=(model or "").strip() or DEFAULT_SUMMARIZER,
            max_length=int(max_length) or None,
            min_length=int(min_length) or None,
        )
    except (OSError, ValueError) as e:
        raise gr.Error(str(e).splitlines()[0]) from None


def _transcription_options(gr, whisper_model: str | None) -> list:
    """The Transcribe tab's choices, in run_transcription's order after the audio."""
    with gr.Row():
        model = gr.Textbox(
            value=whisper_model or "", label="Whisper model", placeholder="empty: the bundled tiny.en"
        )
        language = gr.Dropdown(LANGUAGES, value="auto", label="Language")
        task = gr.Radio(["transcribe", "translate"], value="transcribe", label="Task")
        timestamps = gr.Checkbox(value=True, label="Timestamps")
        precision = gr.Radio(list(PRECISIONS), value="float32", label="Precision (int8: CPU, faster)")
        word_timestamps = gr.Checkbox(value=False, label="Word timestamps")
    return [model, language, task, timestamps, precision, word_timestamps]


def build_ui(whisper_model: str | None = None, summarizer: str = DEFAULT_SUMMARIZER):
    import gradio as gr

    with gr.Blocks(title="Scriba") as demo:
        gr.Markdown("# Scriba\nSpeech in, text out (Whisper); long text in, short text out (BART).")
        with gr.Tab("Transcribe"):
            audio = gr.Audio(sources=["upload", "microphone"], type="filepath", label="Audio")
            options = _transcription_options(gr, whisper_model)
            go = gr.Button("Transcribe", variant="primary", elem_id="transcribe-button")
            detected = gr.Textbox(label="Detected language", interactive=False)
            transcript = gr.Textbox(label="Transcript", lines=6, interactive=False, elem_id="transcript")
            segments = gr.Dataframe(headers=["start", "end", "text"], label="Segments", interactive=False)
            words = gr.Dataframe(
                headers=["start", "end", "word", "probability"], label="Words (with word timestamps)"
            )
            subtitles = gr.File(label="Subtitles and JSON (SRT, VTT, JSON)", file_count="multiple")
            to_summary = gr.Button("Summarize this transcript", elem_id="summarize-transcript-button")
            transcript_summary = gr.Textbox(
                label="Summary of the transcript", interactive=False, elem_id="transcript-summary"
            )
        with gr.Tab("Summarize"):
            text = gr.Textbox(label="Text", lines=10, elem_id="summary-input")
            upload = gr.File(label="or a .txt file", file_types=[".txt"], type="filepath")
            with gr.Row():
                summarizer_box = gr.Textbox(value=summarizer, label="Model")
                max_length = gr.Slider(0, 512, value=0, step=1, label="Max length (0: the model's)")
                min_length = gr.Slider(0, 256, value=0, step=1, label="Min length (0: the model's)")
            summarize_btn = gr.Button("Summarize", variant="primary", elem_id="summarize-button")
            summary = gr.Textbox(label="Summary", lines=6, interactive=False, elem_id="summary")

        def transcribe_with_progress(audio_path, *chosen, progress=gr.Progress(track_tqdm=True)):
            return run_transcription(audio_path, *chosen, progress)

        go.click(
            transcribe_with_progress,
            [audio, *options],
            [detected, transcript, segments, subtitles, words],
            api_name="transcribe",
        )
        # The transcript is summarized with the model chosen on the Summarize tab.
        to_summary.click(
            lambda t, m: run_summary(t, None, m, 0, 0), [transcript, summarizer_box], [transcript_summary]
        )
        summarize_btn.click(
            run_summary,
            [text, upload, summarizer_box, max_length, min_length],
            [summary],
            api_name="summarize",
        )
    # Several requests run at once; their windows join the shared engines' batches.
    return demo.queue(default_concurrency_limit=4)


def launch(
    host: str = "127.0.0.1",
    port: int = 7860,
    share: bool = False,
    whisper_model: str | None = None,
    summarizer: str = DEFAULT_SUMMARIZER,
    **kwargs,
):
    demo = build_ui(whisper_model, summarizer)
    return demo.launch(server_name=host, server_port=port, share=share, max_file_size=MAX_UPLOAD, **kwargs)
