"""The Transcribe tab: audio in; a language line, the transcript in paragraphs (in turns, with
speakers), a segments table that seeks the player, a word view, the speakers (named on the
page), and TXT/SRT/VTT/JSON downloads out."""

from __future__ import annotations

import os
import threading

from scriba.app.ui import uploads
from scriba.app.ui.advanced import advanced_options, subtitle_choice
from scriba.app.ui.choices import describe_model, model_arg, whisper_facts
from scriba.app.ui.speakers_view import named_rows, renamed, speaker_rows, speaker_speech, turns_text
from scriba.app.ui.text import clock, language_line, paragraphs, seconds_of
from scriba.media.load import SAMPLE_RATE, AudioError, load_audio
from scriba.transcription.options import TranscribeOptions
from scriba.transcription.stream import transcribe_stream
from scriba.transcription.window_decoder import Cancelled
from scriba.transcription.writers import FORMATS, write_transcript

# The precision choices, as engine options (docs/performance.md: CPU modes).
PRECISIONS = {
    "int8": {"quantization": "int8"},
    "float32": {"dtype": "float32"},
    "bfloat16": {"dtype": "bfloat16"},
}
PRECISION_INFO = "Fast: about 1.5x the exact speed on a CPU, the same words on our test speech."


def precision_choices() -> list[tuple[str, str]]:
    """(what the page says, the PRECISIONS key): in words, not number formats; bfloat16 only
    where a GPU computes in it (a CPU emulates it slowly)."""
    import torch

    choices = [("Fast", "int8"), ("Exact (slower)", "float32")]
    return choices + ([("Half precision (GPU)", "bfloat16")] if torch.cuda.is_available() else [])


def run_transcription(
    audio_path,
    model,
    language,
    task,
    timestamps,
    precision="int8",
    word_timestamps=False,
    diarize=False,
    num_speakers=0,
    progress=None,
    advanced=None,
):
    """Gradio handler: (language line, transcript, segment rows, download files, word rows,
    speaker rows, the result). `diarize`: who spoke when (`num_speakers` of them; 0: found);
    `progress` (Gradio's) gets the stages and the windows as they finish; `advanced`: the
    advanced options' values (advanced.NAMES' order; None: their defaults)."""
    *_, last = stream_transcription(
        audio_path, model, language, task, timestamps, precision, word_timestamps, diarize, num_speakers,
        progress, advanced,
    )
    return last


def stream_transcription(
    audio_path,
    model,
    language,
    task,
    timestamps,
    precision="int8",
    word_timestamps=False,
    diarize=False,
    num_speakers=0,
    progress=None,
    advanced=None,
):
    """The page's outputs as segments arrive (the transcript and its rows grow, in order), then
    the whole result with its downloads and words; closing it early stops the decoding."""
    samples = _read_upload(audio_path)
    cancel, gone = threading.Event(), page_gone_check()

    def report(p):  # heard every 0.5 s while windows decode
        if gone():
            cancel.set()
        if progress is not None:
            progress(p.fraction, desc=str(p))

    try:
        subtitles = subtitle_choice(advanced)
        options = TranscribeOptions(
            model=model_arg((model or "").strip()),
            language=None if language in (None, "", "auto") else language,
            task=task,
            timestamps=bool(timestamps),
            word_timestamps=bool(word_timestamps) or not subtitles.is_plain,  # subtitle lines need words
            diarize=bool(diarize),
            num_speakers=int(num_speakers) if diarize and num_speakers else None,
            engine=PRECISIONS.get(precision, {}),
            **(advanced_options(advanced) if advanced is not None else {}),
        )
        segments, info = transcribe_stream((samples, SAMPLE_RATE), options, progress=report, cancel=cancel)
        multilingual, heard = whisper_facts(model).multilingual, []
        for segment in segments:
            heard.append(segment)
            yield _partial(info, heard, multilingual, timestamps)
    except (OSError, ValueError) as e:
        raise uploads.user_error(str(e).splitlines()[0]) from None
    except Cancelled:
        uploads.log.info("the page went away: its transcription was stopped")
        raise uploads.user_error("Stopped: the page went away.") from None
    yield _show(segments.transcription, (audio_path, timestamps, subtitles), multilingual, word_timestamps)


def segment_row(segment) -> list:
    """A row of the segments table: start, end, speaker, language, text."""
    start, end = clock(segment.start), clock(segment.end)
    return [start, end, segment.speaker or "", segment.language or "", segment.text.strip()]


def _read_upload(audio_path) -> object:
    problem = uploads.audio_problem(audio_path)
    if problem is not None:
        raise uploads.user_error(problem)
    try:  # errors name the file as the user did: the page keeps the upload's own name
        return load_audio(audio_path, name=os.path.basename(audio_path))
    except (AudioError, FileNotFoundError) as e:
        raise uploads.user_error(f"{e}.") from None


def _partial(info, heard: list, multilingual: bool, timestamps: bool) -> tuple:
    """The outputs while decoding: the text and rows so far; downloads and words unchanged."""
    import gradio as gr

    text = paragraphs(heard) if timestamps else "".join(s.text for s in heard).strip()
    rows = [segment_row(s) for s in heard]
    line = language_line(info.language, info.language_probability, multilingual)
    return line, text, rows, gr.update(), gr.update(), gr.update(), None


def _show(result, how: tuple, multilingual: bool, word_timestamps: bool) -> tuple:
    """The result for the page: language line, text, segment rows, downloads, word rows,
    speaker rows (the last three as updates: shown only when there is something in them), and
    the result with `how` it is shown (audio path, timestamps, SubtitleOptions), kept by the page
    for renaming its speakers."""
    import gradio as gr

    audio_path, timestamps, subtitles = how

    words = [
        [clock(w.start), clock(w.end), w.speaker or "", w.word.strip(), round(w.probability, 2)]
        for s in result.segments
        for w in s.words or []
    ]
    return (
        language_line(result.language, result.language_probability, multilingual),
        _text(result, timestamps),
        [segment_row(s) for s in result.segments],
        gr.update(value=_downloads(result, audio_path, subtitles), visible=True),
        gr.update(value=words, visible=bool(word_timestamps)),
        gr.update(value=speaker_rows(result), visible=result.speakers is not None),
        (result, how),
    )


def _text(result, timestamps: bool) -> str:
    if result.speakers is not None:
        return turns_text(result.segments)
    return paragraphs(result.segments) if timestamps else result.text


def rename_speakers(kept, rows):
    """Gradio handler for "Rename speakers": the transcript, segment rows and downloads with
    the names in the speakers table."""
    import gradio as gr

    if not kept:
        raise uploads.user_error("Transcribe something with speakers first.")
    result, (audio_path, timestamps, subtitles) = kept
    named = renamed(result, rows)
    return (
        _text(named, timestamps),
        [segment_row(s) for s in named.segments],
        gr.update(value=_downloads(named, audio_path, subtitles), visible=True),
    )


def remember_voices(kept, rows) -> str:
    """Gradio handler for "Remember these voices": each speaker given a name in the table has
    their voice kept under it (added to a voice already kept under that name)."""
    from scriba.speakers.voice_library import VoiceLibrary
    from scriba.transcription.kept_voices import remember_voice

    if not kept:
        raise uploads.user_error("Transcribe something with speakers first.")
    result, (audio_path, _, _) = kept
    named = named_rows(rows)
    if not named:
        raise uploads.user_error("Type a speaker's name in the table first: that name is the one kept.")
    wave, library, said = load_audio(audio_path), VoiceLibrary(), []
    for label, name in named.items():
        try:
            voice = remember_voice(name, [speaker_speech(result, wave, label)], extend=True, library=library)
        except ValueError as e:
            raise uploads.user_error(f"{name}'s voice was not kept: {e}") from None
        said.append(f"{voice.name} ({voice.seconds:.0f} s of speech)")
    return "Kept the voices of " + ", ".join(said) + ": the next recordings name them."


def _downloads(result, audio_path: str, subtitles=None) -> list[str]:
    """Every format's file; the SRT and VTT lines cut by `subtitles` (SubtitleOptions)."""
    folder = uploads.scratch_folder("scriba-")
    stem = os.path.splitext(os.path.basename(audio_path))[0] or "transcript"
    return [write_transcript(result, fmt, folder, stem, subtitles) for fmt in FORMATS]


def follow_model(choice: str):
    """The status line, languages and tasks for the chosen Whisper model (loading it)."""
    import gradio as gr

    try:
        facts = whisper_facts(choice)
    except (OSError, ValueError) as e:
        return f"⚠️ {str(e).splitlines()[0]}", gr.update(), gr.update()
    language = gr.update(choices=facts.languages, value=facts.languages[0][1], interactive=facts.multilingual)
    # An English-only model only transcribes: no choice to show (the status line says so).
    task = gr.update(
        choices=facts.tasks, value="transcribe", visible=facts.multilingual, info="translate: into English"
    )
    return describe_model(choice, facts), language, task


def seek_to_segment(event):
    """A click on a segment row: the player jumps to where it starts."""
    import gradio as gr

    row = event.row_value if event is not None else None
    if not row:
        return gr.update()
    return gr.update(playback_position=seconds_of(row[0]))


def page_gone_check():
    """A function telling whether the page that started this Gradio event has gone away
    (closed, reloaded): Gradio marks the event's job not alive then. Outside an event: never."""
    try:
        from gradio.context import LocalContext

        blocks, event_id = LocalContext.blocks.get(None), LocalContext.event_id.get(None)
    except ImportError:
        return lambda: False
    if blocks is None or event_id is None:
        return lambda: False

    def gone() -> bool:
        jobs = [job for batch in blocks._queue.active_jobs if batch for job in batch if job._id == event_id]
        return bool(jobs) and not jobs[0].alive

    return gone
