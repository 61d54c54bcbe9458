"""The Live tab: the microphone transcribed while the user speaks, through the same live session
as the server's Realtime API (transcription/live_session.py: words confirmed by local agreement in
black, the unconfirmed tail in grey); when the recording stops, the final text is the whole
recording transcribed, and the recording itself can be downloaded."""

import html
import os
import threading
import time

import numpy as np

from scriba.app.ui.choices import model_arg
from scriba.app.ui.uploads import scratch_folder
from scriba.media.load import SAMPLE_RATE, load_audio
from scriba.transcription.live_session import Delta, LiveSession, Tentative
from scriba.transcription.options import TranscribeOptions
from scriba.transcription.transcribe import transcribe

STREAM_EVERY = 0.5  # how often the page sends microphone audio (the browser may send 0.1 s chunks)


def live_html(confirmed: str, pending: str) -> str:
    return (
        f'<p class="live-text"><span class="confirmed">{html.escape(confirmed)}</span> '
        f'<span class="pending" style="opacity:0.5">{html.escape(pending)}</span></p>'
    )


class LiveTab:
    """One page's recording, on the Realtime API's code path: a LiveSession without turn detection
    (the recording is one turn). Its deltas (confirmed words) and tentative words are what the
    page shows. Chunks arrive every 0.1 s and must be answered at once (the browser drops chunks
    while one is pending): the session's own thread transcribes, each chunk shows the latest
    text. When the recording stops the session is closed, its work under way cancelled, and the
    final text is transcribe() of the recording, in the caller's thread: it waits on no other."""

    def __init__(self, model):
        self.confirmed, self.pending = "", ""
        self.recorded: list[np.ndarray] = []
        self.options = TranscribeOptions(model=model_arg(model))
        self.session = LiveSession(self._heard, self.options, detection=None)
        self.stopped_at: float | None = None  # time.monotonic() of stop()

    def _heard(self, event) -> None:  # on the session's thread
        if isinstance(event, Delta):
            self.confirmed += event.text
        elif isinstance(event, Tentative):
            self.pending = event.text

    def add(self, samples, rate) -> str:
        audio = load_audio((np.asarray(samples), int(rate)))
        if audio.size:
            self.recorded.append(audio)
            self.session.append(audio)
        return self.html()

    def html(self) -> str:
        return live_html(self.confirmed.strip(), self.pending)

    def recording(self) -> np.ndarray:
        return np.concatenate(self.recorded) if self.recorded else np.zeros(0, np.float32)

    def stop(self) -> str:
        """The recording's final text: transcribe() of all of it ("" for none)."""
        self.stopped_at = self.stopped_at or time.monotonic()
        self.session.close()
        if not self.recorded:
            return ""
        return transcribe((self.recording(), SAMPLE_RATE), self.options).text


# A page's recording lives here, keyed by the page (Gradio's session hash), not in a gr.State:
# under load Gradio ran a recording's first stream chunks before its start event, and the
# stream's State is its own copy, so a State-held session could differ between the start, the
# chunks and the stop (the stop then found an empty recording and the final text never came).
# Events may come in any order: the first chunks before the start (which keeps the session they
# made), a chunk after the stop (dropped), the stop twice (the second changes nothing).
LATE_CHUNK_SECONDS = 2.0
FORGET_SECONDS = 600.0  # a stopped recording older than this is dropped when another page starts
_recordings: dict[str, LiveTab] = {}
_lock = threading.Lock()


def _running(page: str, model) -> tuple[LiveTab, bool]:
    """(the page's recording, whether it runs): made here if the page has none; a stopped one
    (not running) while its late chunks may still come."""
    with _lock:
        session = _recordings.get(page)
        if session is not None and session.stopped_at is not None:
            if time.monotonic() - session.stopped_at < LATE_CHUNK_SECONDS:
                return session, False
            session = None
        if session is None:
            session = _recordings[page] = LiveTab(model)
        return session, True


def live_start(model, page: str):
    """Recording starts: a fresh session for the page, unless its first chunks came first and
    made it. Returns (live text, final transcript, recording file)."""
    import gradio as gr

    with _lock:
        now = time.monotonic()
        for key, old in list(_recordings.items()):
            if old.stopped_at is not None and (key == page or now - old.stopped_at > FORGET_SECONDS):
                del _recordings[key]
    session, _ = _running(page, model)
    return session.html(), "", gr.update(value=None, visible=False)


def live_chunk(chunk, model, page: str) -> str:
    """A chunk of microphone audio: (rate, samples) as Gradio streams it. Returns the live text."""
    session, running = _running(page, model)
    if not running or chunk is None:  # a late chunk of the stopped recording is dropped
        return session.html()
    rate, samples = chunk
    return session.add(samples, rate)


def live_stop(page: str):
    """Recording ends: (live text, final transcript, the recording as a WAV file). The final text
    is transcribe() of the recording, which the WAV holds as it was heard (float samples:
    transcribing the file gives the same text). A stop without a running recording (the first
    stop took it) changes nothing: it must not blank the final text the first one showed."""
    import gradio as gr
    import soundfile as sf

    with _lock:
        session = _recordings.get(page)
        if session is None or session.stopped_at is not None:
            return gr.skip(), gr.skip(), gr.skip()
        session.stopped_at = time.monotonic()  # taken: a second stop, or late chunks, see it
    final = session.stop()
    if not session.recorded:
        return live_html("", ""), "", None
    path = os.path.join(scratch_folder("scriba-live-"), "recording.wav")
    sf.write(path, session.recording(), SAMPLE_RATE, subtype="FLOAT")
    return live_html(final, ""), final, gr.update(value=path, visible=True)


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

    def start(model, request: gr.Request):
        return live_start(model, request.session_hash)

    def chunk(audio, model, request: gr.Request):
        return live_chunk(audio, model, request.session_hash)

    def stop(request: gr.Request):
        return live_stop(request.session_hash)

    mic.start_recording(start, [model_box], [text, final, recording])
    mic.stream(
        chunk,
        [mic, model_box],
        [text],
        stream_every=STREAM_EVERY,
        time_limit=600,
        concurrency_limit=None,
        show_progress="hidden",
    )
    mic.stop_recording(stop, None, [text, final, recording])
