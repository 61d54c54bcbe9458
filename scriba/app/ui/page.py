"""The page: Transcribe, Live and Summarize tabs over the shared engines, and `launch`.

The first Whisper model on the list loads as the app starts; the page says when it is ready.
It binds to 127.0.0.1 unless told otherwise, and offers only the models it was started with.
"""

from __future__ import annotations

import gradio as gr

from scriba.app.ui import uploads
from scriba.app.ui.advanced import build_advanced
from scriba.app.ui.choices import BUNDLED, Summarizer, preload
from scriba.app.ui.live_tab import build_live_tab
from scriba.app.ui.summarize_tab import (
    build_summarize_tab,
    build_transcript_summary,
    run_transcript_summary,
    summarizer_state,
)
from scriba.app.ui.speakers_view import HEADERS
from scriba.app.ui.transcribe_tab import (
    PRECISION_INFO,
    follow_model,
    precision_choices,
    remember_voices,
    rename_speakers,
    seek_to_segment,
    stream_transcription,
)
from scriba.models.offline import offered_models
from scriba.summarization import DEFAULT_SUMMARIZER

# After a segment click has moved the player: play from there (the player's own Play button).
PLAY_JS = "() => { document.querySelector('#audio button[aria-label=\"Play\"]')?.click(); }"


def whisper_choices(whisper_model) -> list[str]:
    """The models the page offers: one or several (a str or a list); None is the bundled tiny.en
    and the other offline models installed (`base`)."""
    models = whisper_model if isinstance(whisper_model, (list, tuple)) else [whisper_model]
    if not [m for m in models if m]:
        models = offered_models()
    return [m or BUNDLED for m in models]


# A phone's width (420 px) holds two of these side by side; a row of more wraps instead of
# squeezing their labels.
WIDE = 180


def _options(models: list[str]) -> list:
    """The Transcribe tab's choices, in run_transcription's order after the audio."""
    with gr.Row():
        model = gr.Dropdown(
            models, value=models[0], label="Whisper model", elem_id="model-choice", min_width=WIDE
        )
        language = gr.Dropdown(
            [("Auto-detect", "auto")], value="auto", label="Language", elem_id="language", interactive=False,
            min_width=WIDE,
        )
        # Shown for a multilingual model only (follow_model): an English-only one only transcribes.
        task = gr.Radio(["transcribe"], value="transcribe", label="Task", elem_id="task", visible=False)
        timestamps = gr.Checkbox(value=True, label="Timestamps", min_width=WIDE)
        precision = gr.Radio(
            precision_choices(), value="int8", label="Speed", elem_id="precision", info=PRECISION_INFO
        )
        word_timestamps = gr.Checkbox(value=False, label="Word timestamps", min_width=WIDE)
    with gr.Row():
        diarize = gr.Checkbox(value=False, label="Speakers", info="who spoke when", elem_id="diarize")
        num_speakers = gr.Number(
            value=0, precision=0, minimum=0, label="How many speakers", info="0: find out",
            elem_id="num-speakers",
        )
    return [model, language, task, timestamps, precision, word_timestamps, diarize, num_speakers]


def _results() -> dict:
    return dict(
        language=gr.Textbox(label="Detected language", interactive=False, elem_id="language-line"),
        transcript=gr.Textbox(
            label="Transcript", lines=8, interactive=False, elem_id="transcript", buttons=["copy"]
        ),
        segments=gr.Dataframe(
            headers=["start", "end", "speaker", "language", "text"],
            label="Segments (click one to play from there)",
            interactive=False,
            elem_id="segments",
        ),
        words=gr.Dataframe(
            headers=["start", "end", "speaker", "word", "probability"],
            label="Words (with word timestamps)",
            interactive=False,
            elem_id="words",
            visible=False,
        ),
        speakers=gr.Dataframe(
            headers=HEADERS,
            label="Speakers (type a name, then Rename: the transcript and downloads follow)",
            interactive=True,
            elem_id="speakers",
            visible=False,
        ),
        rename=gr.Button("Rename speakers", elem_id="rename-speakers"),
        remember=gr.Button("Remember these voices", elem_id="remember-voices"),
        remembered=gr.Markdown("", elem_id="remembered-voices"),
        kept=gr.State(None),  # the last result, for renaming its speakers
        downloads=gr.File(
            label="Downloads (TXT, SRT, VTT, TSV, LRC, JSON)",
            file_count="multiple",
            interactive=False,
            elem_id="downloads",
            visible=False,
        ),
    )


def build_ui(whisper_model=None, summarizer: str = DEFAULT_SUMMARIZER, summarizer_setting: str | None = None):
    """`summarizer_setting`: how the person running this page picks another summarizer (the
    page's hint when the configured one is missing); None names the CLI's flag."""
    models = whisper_choices(whisper_model)
    preload(models[0])
    summary_model = Summarizer(summarizer, *([summarizer_setting] if summarizer_setting else []))
    # Gradio's own copies of uploads and results are deleted after an hour too.
    keep = uploads.KEEP_SECONDS
    with gr.Blocks(title="Scriba", delete_cache=(keep, keep)) as demo:
        gr.Markdown("# Scriba\nSpeech in, text out (Whisper); long text in, short text out (BART).")
        status = gr.Markdown(f"Loading Whisper {models[0]}…", elem_id="model-status")
        with gr.Tab("Transcribe"):
            audio = gr.Audio(
                sources=["upload", "microphone"], type="filepath", label="Audio", elem_id="audio"
            )
            notice = gr.Markdown("", elem_id="upload-notice")
            options = _options(models)
            advanced = build_advanced(gr)
            go = gr.Button("Transcribe", variant="primary", elem_id="transcribe-button")
            out = _results()
            to_summary, why_not, transcript_summary, sections = build_transcript_summary(gr)
        with gr.Tab("Live"):
            build_live_tab(gr, options[0])
        with gr.Tab("Summarize"):
            summary_notice, summarize_button, summary_model_state = build_summarize_tab(gr, summary_model)

        model_box, language, task = options[:3]
        demo.load(follow_model, [model_box], [status, language, task])
        model_box.change(follow_model, [model_box], [status, language, task])
        demo.load(
            lambda: summarizer_state(summary_model),
            None,
            [summary_notice, summarize_button, to_summary, why_not],
        )
        audio.upload(uploads.check_upload, [audio], [audio, notice])
        _transcribe_on_click(go, audio, options, advanced, out)
        out["segments"].select(_seek, None, [audio]).then(None, js=PLAY_JS)
        _rename_on_click(out)
        # The transcript is summarized with the configured summarizer, section by section.
        to_summary.click(
            run_transcript_summary,
            [out["downloads"], summary_model_state],
            [transcript_summary, sections, out["downloads"]],
        )
        sections.select(_seek, None, [audio]).then(None, js=PLAY_JS)
    # Several requests run at once; their windows join the shared engines' batches.
    return demo.queue(default_concurrency_limit=4)


def _transcribe_on_click(go, audio, options: list, advanced: list, out: dict) -> None:
    """The Transcribe button: the page's outputs as the segments come, then the whole result."""

    def transcribe_with_progress(audio_path, *chosen, progress=gr.Progress()):
        basic, extra = chosen[: len(options)], chosen[len(options) :]
        yield from stream_transcription(audio_path, *basic, progress=progress, advanced=list(extra))

    outputs = [out["language"], out["transcript"], out["segments"], out["downloads"], out["words"]]
    outputs += [out["speakers"], out["kept"]]
    # One progress bar, over the language line: the transcript stays readable as it grows
    # (Gradio draws one over every output otherwise).
    go.click(
        transcribe_with_progress,
        [audio, *options, *advanced],
        outputs,
        api_name="transcribe",
        show_progress_on=[out["language"]],
    )


def _rename_on_click(out: dict) -> None:
    """"Rename speakers": the transcript, segments and downloads with the table's names."""
    renamed = [out["transcript"], out["segments"], out["downloads"]]
    out["rename"].click(rename_speakers, [out["kept"], out["speakers"]], renamed)
    out["remember"].click(remember_voices, [out["kept"], out["speakers"]], [out["remembered"]])


def _seek(event: gr.SelectData):  # Gradio passes the click by this annotation
    return seek_to_segment(event)


def launch(
    host: str = "127.0.0.1",
    port: int = 7860,
    share: bool = False,
    whisper_model=None,
    summarizer: str = DEFAULT_SUMMARIZER,
    summarizer_setting: str | None = None,
    **kwargs,
):
    demo = build_ui(whisper_model, summarizer, summarizer_setting)
    return demo.launch(
        server_name=host, server_port=port, share=share, max_file_size=uploads.MAX_UPLOAD, **kwargs
    )
