"""The Live tab: the microphone transcribed while the user speaks (live.py's local agreement:
confirmed words in black, the unconfirmed tail in grey); when the recording stops, the final
text is the whole recording transcribed, and the recording itself can be downloaded."""

from __future__ import annotations

import copy
import html
import os
import threading

from scriba.app.ui.choices import model_arg
from scriba.app.ui.uploads import scratch_folder
from scriba.transcription.live import LiveTranscript
from scriba.transcription.options import TranscribeOptions

STREAM_EVERY = 0.5  # how often the page sends microphone audio (the browser may send 0.1 s chunks)


def live_html(confirmed: str, pending: str) -> str:
    return (
        f'<p class="live-text"><span class="confirmed">{html.escape(confirmed)}</span> '
        f'<span class="pending" style="opacity:0.5">{html.escape(pending)}</span></p>'
    )


class LiveSession:
    """One page's recording. Chunks arrive every 0.1 s and their handler must return at once
    (the browser drops chunks while one is pending), so transcribing runs in a thread of its
    own and each chunk shows the latest text."""

    def __init__(self, model):
        self.live = LiveTranscript(options=TranscribeOptions(model=model_arg(model)))
        self.lock = threading.Lock()
        self.worker: threading.Thread | None = None
        self.shown = ("", "")

    def add(self, samples, rate) -> str:
        with self.lock:
            self.live.add(samples, rate)
            if self.worker is None or not self.worker.is_alive():
                self.worker = threading.Thread(target=self._update, daemon=True)
                self.worker.start()
        return live_html(*self.shown)

    def _update(self) -> None:
        with self.lock:  # a snapshot of the recording so far; chunks keep arriving meanwhile
            snapshot = copy.copy(self.live)
            snapshot.audio = list(self.live.audio)
        shown = snapshot.update()
        with self.lock:  # keep the newly arrived audio, take the new text
            snapshot.audio, snapshot.samples = self.live.audio, self.live.samples
            self.live, self.shown = snapshot, shown

    def stop(self) -> LiveTranscript:
        if self.worker is not None:
            self.worker.join()
        return self.live


def live_start(model):
    """Recording starts: a fresh session (in the page's State)."""
    import gradio as gr

    return LiveSession(model), live_html("", ""), "", gr.update(value=None, visible=False)


def live_chunk(chunk, session: LiveSession | None):
    """A chunk of microphone audio: (rate, samples) as Gradio streams it."""
    session = session or LiveSession(None)
    if chunk is None:
        return live_html(*session.shown), session
    rate, samples = chunk
    return session.add(samples, rate), session


def live_stop(session: LiveSession | None):
    """Recording ends: (live text, final transcript, the recording as a WAV file, State). The
    final text is transcribe() of that very WAV file."""
    import gradio as gr
    import soundfile as sf

    from scriba.media.load import SAMPLE_RATE
    from scriba.transcription.transcribe import transcribe

    live = session.stop() if session is not None else None
    if live is None or live.samples == 0:
        return live_html("", ""), "", None, None
    path = os.path.join(scratch_folder("scriba-live-"), "recording.wav")
    sf.write(path, live.recording(), SAMPLE_RATE, subtype="PCM_16")
    final = transcribe(path, live.options).text
    return live_html(final, ""), final, gr.update(value=path, visible=True), None


def build_live_tab(gr, model_box) -> None:
    gr.Markdown("Speak: words appear as you talk (grey until confirmed); stop for the final text.")
    mic = gr.Audio(
        sources=["microphone"], streaming=True, type="numpy", label="Microphone", elem_id="live-mic"
    )
    text = gr.HTML(live_html("", ""), elem_id="live-text")
    final = gr.Textbox(label="Final transcript", interactive=False, elem_id="live-final", buttons=["copy"])
    recording = gr.File(
        label="The recording (WAV)", interactive=False, elem_id="live-recording", visible=False
    )
    state = gr.State(None)
    mic.start_recording(live_start, [model_box], [state, text, final, recording])
    mic.stream(
        live_chunk,
        [mic, state],
        [text, state],
        stream_every=STREAM_EVERY,
        time_limit=600,
        concurrency_limit=None,
        show_progress="hidden",
    )
    mic.stop_recording(live_stop, [state], [text, final, recording, state])
