"""Live transcription: jfk.flac arriving in microphone-sized chunks. Confirmed text only grows,
words show before the recording ends, and the web app's final text is transcribe() of the very
recording it received (nothing dropped)."""

import threading

import gradio as gr
import numpy as np
import paths
import soundfile as sf

import scriba
from scriba.app.ui import live_tab
from scriba.app.ui.live_tab import live_chunk, live_start, live_stop
from scriba.media.load import load_audio
from scriba.transcription.live import LiveTranscript, LiveWord, _after_confirmed, _without_repeat
from scriba.transcription.live_session import Failed, LiveSession
from scriba.transcription.options import TranscribeOptions

JFK = paths.JFK


def microphone_chunks(seconds: float):
    """jfk.flac as a browser sends it: 48 kHz int16 pieces."""
    wave = (load_audio(JFK, 48000) * 32767).astype(np.int16)
    step = int(seconds * 48000)
    return [wave[i : i + step] for i in range(0, len(wave), step)]


def words(text: str) -> list[str]:
    return [w.strip(".,?!").lower() for w in text.split()]


def test_confirmed_text_only_grows_and_agrees_with_the_whole():
    live, history = LiveTranscript(), []
    for chunk in microphone_chunks(1.0):
        live.add(chunk, 48000)
        history.append(live.update())
    history.append(live.update(force=True))
    confirmed = [c for c, _ in history]
    assert all(later.startswith(earlier) for earlier, later in zip(confirmed, confirmed[1:]))
    assert any(c or p for c, p in history[:6])  # words before the 11 s recording ends
    heard = words(" ".join(history[-1]))
    offline = words(scriba.transcribe((live.recording(), 16000)).text)
    assert offline[:4] == ["and", "so", "my", "fellow"]
    common = sum(1 for w in heard if w in offline)
    assert common >= 0.8 * len(offline), (heard, offline)


def test_a_repeated_start_is_dropped():
    done = [LiveWord(" ask", 0, 1), LiveWord(" not", 1, 2)]
    again = [LiveWord(" not", 1, 2), LiveWord(" what", 2, 3)]
    assert [w.text for w in _without_repeat(done, again)] == [" what"]
    assert _without_repeat(done, [LiveWord(" what", 2, 3)])[0].text == " what"


def test_the_new_words_of_a_whole_recording_come_after_the_confirmed_ones():
    """Untimed words of a transcription of the whole recording: past the confirmed words when
    they were heard the same, else past the last place the confirmed words' end was heard."""

    def untimed(text):
        return [LiveWord(" " + w, None, None) for w in text.split()]

    done = untimed("And so my fellow")
    assert [w.text for w in _after_confirmed(done, untimed("and so my fellow Americans ask"))] == [
        " Americans",
        " ask",
    ]
    heard = untimed("And so, uh, my fellow Americans, ask not")  # heard with a word more
    assert [w.key for w in _after_confirmed(done, heard)] == ["americans", "ask", "not"]
    assert [w.key for w in _after_confirmed(done, untimed("And so my"))] == []


def test_the_final_text_is_the_received_recording_transcribed():
    chunks = microphone_chunks(0.1)
    live_start(None, "page-a")
    for chunk in chunks:
        live_chunk((48000, chunk), None, "page-a")
    _, final, recording = live_stop("page-a")
    path = recording["value"]
    received, rate = sf.read(path)
    assert rate == 16000 and abs(len(received) / rate - sum(map(len, chunks)) / 48000) < 0.01
    assert final == scriba.transcribe(path).text
    assert "ask not what your country can do for you" in final.lower().replace(",", "")
    assert live_stop("page-a") == (gr.skip(),) * 3  # Gradio may fire stop twice: nothing changes


def test_events_in_any_order_keep_one_recording_per_page(monkeypatch):
    """Under load Gradio may run a recording's first chunks before its start event, and a chunk
    after its stop: the start keeps the session the chunks made, a late chunk is dropped, and a
    chunk well after the stop (the next recording, its start not yet run) begins a new one.
    Each page (Gradio's session hash) has its own."""
    chunk = (48000, microphone_chunks(0.5)[0])
    live_chunk(chunk, None, "page-b")  # before the start event
    first = live_tab._recordings["page-b"]
    live_start(None, "page-b")
    live_chunk(chunk, None, "page-b")
    live_chunk(chunk, None, "page-c")  # another page's recording
    assert live_tab._recordings["page-b"] is first and len(first.recorded) == 2
    _, final, _ = live_stop("page-b")
    assert final == scriba.transcribe((first.recording(), 16000)).text
    live_chunk(chunk, None, "page-b")  # the stopped recording's tail
    assert live_tab._recordings["page-b"] is first and len(first.recorded) == 2
    monkeypatch.setattr(live_tab, "LATE_CHUNK_SECONDS", 0.0)
    live_chunk(chunk, None, "page-b")  # the next recording, before its start
    fresh = live_tab._recordings["page-b"]
    assert fresh is not first and len(fresh.recorded) == 1
    live_start(None, "page-b")
    assert live_tab._recordings["page-b"] is fresh and len(live_tab._recordings["page-c"].recorded) == 1
    for page in ("page-b", "page-c"):
        live_stop(page)
    live_start(None, "page-b")  # a stopped recording is not continued
    assert live_tab._recordings["page-b"] not in (first, fresh)
    live_stop("page-b")


def test_a_session_whose_transcription_fails_says_so_and_does_not_hang():
    """An error on the session's thread is a Failed event (one line), not a silent dead thread."""
    events, done = [], threading.Event()
    emit = lambda event: (events.append(event), isinstance(event, Failed) and done.set())  # noqa: E731
    session = LiveSession(emit, TranscribeOptions(model="/no/such/model"), detection=None)
    session.append(np.zeros(16000, np.float32))
    session.commit()
    assert done.wait(60)
    failed = events[-1]
    assert failed.code == "server_error" and "/no/such/model" in failed.message
    assert "\n" not in failed.message and failed.item_id == "item_1"
    session.close(wait=True)


def test_a_turns_final_text_is_not_queued_behind_other_sessions_updates(monkeypatch):
    """A loaded engine: 48 other sessions' partial updates queued (their priority, as the
    sessions send them; the engine admits ten 30 s windows a step), then one session's turn is
    committed: its final text is admitted ahead of every update still waiting (without
    priorities, after all 48)."""
    import time

    from scriba.runtime.loops import get_loop
    from scriba.transcription.live_session import TURN_PRIORITY, UPDATE_PRIORITY, Completed

    audio = load_audio(JFK)
    loop = get_loop(None)
    scriba.transcribe(audio[:16000])  # loaded and warm
    admitted, completed = [], threading.Event()  # the priorities of the requests, in admission order
    schedule = loop.engine.scheduler.schedule

    def recording():
        out = schedule()
        admitted.extend(g.params.priority for g in out.prefills + out.encodes)
        return out

    monkeypatch.setattr(loop.engine.scheduler, "schedule", recording)
    updates = [
        threading.Thread(target=scriba.transcribe, args=(audio[: (8 + i % 4) * 16000],),
                         kwargs={"priority": UPDATE_PRIORITY})
        for i in range(48)
    ]
    for thread in updates:
        thread.start()
    deadline = time.monotonic() + 60
    while loop.pending < 48 and time.monotonic() < deadline:
        time.sleep(0.005)
    session = LiveSession(lambda e: completed.set() if isinstance(e, Completed) else None, detection=None)
    session.append(audio[: 4 * 16000])
    session.commit()
    assert completed.wait(120)
    for thread in updates:
        thread.join()
    session.close()
    assert admitted.count(UPDATE_PRIORITY) == 48
    before = admitted.index(TURN_PRIORITY)  # the turn's final text
    assert before <= 30, admitted
