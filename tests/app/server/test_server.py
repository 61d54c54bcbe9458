"""The OpenAI-compatible server, through the official `openai` client on localhost: every
response format, words and segments, translations, streamed deltas that join to the final text,
bad uploads answered 4xx in OpenAI's error shape while the server keeps serving."""

import socket
import threading
import time

import httpx
import numpy as np
import openai
import paths
import pytest

import scriba
from scriba.app.server.app import ServerSettings, asgi_app
from scriba.app.server.models import ServedModels
from scriba.transcription.subtitles import SubtitleOptions
from scriba.transcription.writers import format_transcript

JFK = paths.JFK
KEY = "test-key"


@pytest.fixture(scope="module")
def server(tiny_whispers, tiny_bart):
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    served = ServedModels([None, tiny_whispers["multilingual"][0]], tiny_bart[0])
    settings = ServerSettings(api_key=KEY, max_upload_bytes=8 * 2**20, max_audio_seconds=600)
    config = uvicorn.Config(asgi_app(served, settings), host="127.0.0.1", port=port, log_level="warning")
    runner = uvicorn.Server(config)
    threading.Thread(target=runner.run, daemon=True).start()
    while not runner.started:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", served
    runner.should_exit = True


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server[0] + "/v1", api_key=KEY, max_retries=0)


def test_every_response_format(client):
    offline = scriba.transcribe(JFK)
    with open(JFK, "rb") as f:
        text = client.audio.transcriptions.create(model="whisper-1", file=f)
    assert text.text == offline.text
    for fmt, starts in [("text", offline.text), ("srt", "1\n00:00:00,000 --> "), ("vtt", "WEBVTT")]:
        with open(JFK, "rb") as f:
            body = client.audio.transcriptions.create(model="tiny.en", file=f, response_format=fmt)
        assert body.startswith(starts), (fmt, body)


def test_subtitle_lines_tsv_and_lrc_as_the_writers_write_them(client, server):
    lines = SubtitleOptions(max_line_width=24, max_line_count=2)
    highlight = SubtitleOptions(highlight_words=True)
    words, plain = scriba.transcribe(JFK, word_timestamps=True), scriba.transcribe(JFK)
    cases = [("srt", {"max_line_width": 24, "max_line_count": 2}, lines, words),
             ("vtt", {"highlight_words": "true"}, highlight, words),
             ("tsv", {}, None, plain), ("lrc", {}, None, plain)]
    for fmt, fields, subtitles, offline in cases:
        with open(JFK, "rb") as f:
            body = client.audio.transcriptions.create(model="tiny.en", file=f, response_format=fmt,
                                                      extra_body=fields)
        assert body == format_transcript(offline, fmt, subtitles), fmt
    with open(JFK, "rb") as f:
        bad = httpx.post(server[0] + "/v1/audio/transcriptions", headers={"Authorization": f"Bearer {KEY}"},
                         files={"file": f}, data={"response_format": "json", "max_line_width": "20"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "max_line_width"
    assert "applies to response_format srt and vtt" in bad.json()["error"]["message"]


def test_verbose_json_with_words_and_segments(client):
    with open(JFK, "rb") as f:
        v = client.audio.transcriptions.create(
            model="whisper-1",
            file=f,
            response_format="verbose_json",
            timestamp_granularities=["word", "segment"],
        )
    assert v.language == "english" and v.duration == pytest.approx(11.0) and "fellow Americans" in v.text
    assert [w.word for w in v.words[:5]] == ["And", "so", "my", "fellow", "Americans"]
    assert v.segments and v.segments[0].start == 0 and v.segments[-1].end <= 11.1
    first = v.segments[0]
    assert first.tokens and first.avg_logprob < 0 and 0 <= first.no_speech_prob <= 1 and first.id == 0


def test_translations(client, tiny_whispers):
    model = tiny_whispers["multilingual"][0]
    with open(JFK, "rb") as f:
        v = client.audio.translations.create(model=model, file=f, response_format="verbose_json")
    assert v.task == "translate" and v.duration == pytest.approx(11.0)
    with open(JFK, "rb") as f:  # whisper-1 translates with the first served model that can
        v = client.audio.translations.create(model="whisper-1", file=f, response_format="verbose_json")
    assert v.task == "translate" and v.duration == pytest.approx(11.0)
    with open(JFK, "rb") as f:
        with pytest.raises(openai.BadRequestError, match="English-only: it cannot translate"):
            client.audio.translations.create(model="tiny.en", file=f)


def test_streamed_deltas_join_to_the_final_text(client, tmp_path):
    import numpy as np
    import soundfile as sf

    from scriba.media.load import load_audio

    long = tmp_path / "three_times.flac"
    jfk = load_audio(JFK)
    sf.write(long, np.concatenate([jfk, np.zeros(48000, np.float32)] * 3), 16000)
    with open(long, "rb") as f:
        events = list(client.audio.transcriptions.create(model="whisper-1", file=f, stream=True))
    deltas = [e.delta for e in events if e.type == "transcript.text.delta"]
    done = [e for e in events if e.type == "transcript.text.done"]
    assert len(deltas) >= 2 and len(done) == 1 and events[-1].type == "transcript.text.done"
    assert "".join(deltas) == done[0].text and done[0].text.count("fellow Americans") == 3


def test_bad_requests_get_openai_errors_and_the_server_keeps_serving(server, client, tmp_path):
    empty, notes, big = tmp_path / "empty.wav", tmp_path / "notes.mp3", tmp_path / "big.wav"
    empty.write_bytes(b"")
    notes.write_text("not audio")
    big.write_bytes(b"\0" * (9 * 2**20))
    cases = [
        (empty, {}, openai.BadRequestError, "empty.wav is an empty file"),
        (notes, {}, openai.APIStatusError, "not an audio file"),
        (big, {}, openai.APIStatusError, "over the upload limit"),
        (JFK, {"language": "xx"}, openai.BadRequestError, "unknown language 'xx'"),
        (JFK, {"model": "openai/whisper-large-v3"}, openai.NotFoundError, "served: whisper-1, "),
    ]
    for path, extra, error, message in cases:
        with open(path, "rb") as f:
            with pytest.raises(error, match=message) as caught:
                client.audio.transcriptions.create(file=f, **{"model": "whisper-1", **extra})
        body = caught.value.body
        assert set(body) == {"message", "type", "param", "code"}, body
    status = {"empty.wav": 400, "notes.mp3": 415, "big.wav": 413}
    for name, code in status.items():
        with open(tmp_path / name, "rb") as f:
            r = httpx.post(
                server[0] + "/v1/audio/transcriptions",
                files={"file": (name, f)},
                headers={"Authorization": f"Bearer {KEY}"},
            )
        assert r.status_code == code and r.json()["error"]["param"] == "file"
    unauthorized = httpx.get(server[0] + "/v1/models")
    assert unauthorized.status_code == 401 and unauthorized.json()["error"]["type"] == "authentication_error"
    with open(JFK, "rb") as f:
        assert "fellow Americans" in client.audio.transcriptions.create(model="whisper-1", file=f).text


def test_extension_fields_are_transcribe_options(server, client):
    """faster-whisper's options as extra form fields (the openai client's extra_body): the same
    transcript as scriba.transcribe() with them; a field that does not parse, or a bad value,
    is a 400 naming it."""
    extra = {
        "prefix": "And so, my dear",
        "hotwords": "country, ask",
        "clip_timestamps": "0,9",
        "suppress_tokens": "-1,1499",
    }
    with open(JFK, "rb") as f:
        v = client.audio.transcriptions.create(
            model="whisper-1", file=f, response_format="verbose_json", extra_body=extra
        )
    expected = scriba.transcribe(
        JFK,
        prefix="And so, my dear",
        hotwords="country, ask",
        clip_timestamps="0,9",
        suppress_tokens=[-1, 1499],
    )
    assert v.text == expected.text and v.text.startswith("And so, my dear") and "country" not in v.text
    assert [s["language"] for s in v.model_dump()["segments"]] == ["english"] * len(expected.segments)
    for fields, param in [
        ({"max_new_tokens": "many"}, "max_new_tokens"),
        ({"max_new_tokens": "0"}, "max_new_tokens"),
        ({"multilingual": "maybe"}, "multilingual"),
        ({"clip_timestamps": "5,1"}, "clip_timestamps"),
    ]:
        with open(JFK, "rb") as f, pytest.raises(openai.BadRequestError) as caught:
            client.audio.transcriptions.create(model="whisper-1", file=f, extra_body=fields)
        assert caught.value.body["param"] == param, caught.value.body


def test_models_health_metrics_and_summaries(server, client, tiny_bart):
    url, served = server
    ids = [m.id for m in client.models.list().data]
    assert ids[0] == "whisper-1" and "tiny.en" in ids and tiny_bart[0] in ids
    assert httpx.get(url + "/health").json() == {"status": "ok"}
    text = "The cat sat on the mat. It was happy. " * 3

    def summary_of(**lengths):
        answer = httpx.post(
            url + "/v1/summaries", json={"input": text, **lengths}, headers={"Authorization": f"Bearer {KEY}"}
        ).json()
        assert answer["object"] == "summary" and answer["model"] == tiny_bart[0]
        return answer["summary"]

    # The summary is summarize()'s for the same text and lengths; max_length reaches the model.
    short, longer = summary_of(max_length=6), summary_of(max_length=40, min_length=30)
    assert short == scriba.summarize(text, tiny_bart[0], max_length=6, **served.engine_config)
    assert longer == scriba.summarize(
        text, tiny_bart[0], max_length=40, min_length=30, **served.engine_config
    )
    assert short and len(short) < len(longer)  # (at least 30 tokens against at most 6)
    metrics = httpx.get(url + "/metrics").text
    for name in (
        "scriba_requests_total",
        "scriba_queue_depth",
        "scriba_kv_blocks_free",
        "scriba_generated_tokens",
    ):
        assert name in metrics, name
    assert 'scriba_requests_total{path="/v1/summaries",status="200"}' in metrics
    assert "scriba_request_seconds_bucket" in metrics


def test_a_client_that_hangs_up_frees_its_blocks(server, tmp_path):
    """Its blocks free at once, and its transcription (frames holding the audio) is freed when
    dropped, not left in a reference cycle for a full garbage collection to find."""
    import gc
    import types

    import numpy as np
    import soundfile as sf

    from scriba.media.load import load_audio

    url, served = server
    manager = served.loop(None).engine.block_manager
    long = tmp_path / "long.flac"
    # 9.3 minutes (under the 10-minute limit; 8 kHz keeps it under the 8 MB one): more decoding
    # than the 2.5 s before the hang-up even on a fast AMX host, so the blocks are still held then
    wave = np.concatenate([load_audio(JFK), np.zeros(48000, np.float32)] * 40)[::2]
    sf.write(long, wave, 8000)
    gc.collect()
    gc.disable()
    try:
        with open(long, "rb") as f:
            with pytest.raises(httpx.ReadTimeout):
                httpx.post(
                    url + "/v1/audio/transcriptions",
                    files={"file": ("long.flac", f)},
                    headers={"Authorization": f"Bearer {KEY}"},
                    timeout=httpx.Timeout(30, read=2.5),
                )
        hung_up = time.time()
        assert manager.num_free() < manager.num_total()  # still decoding for the gone client
        loop = served.loop(None)
        # both at once: between two windows every block can be free while the next still waits
        while (manager.num_free() < manager.num_total() or loop.pending) and time.time() < hung_up + 6:
            time.sleep(0.05)
        assert manager.num_free() == manager.num_total(), time.time() - hung_up
        assert loop.pending == 0
        time.sleep(0.5)  # the request's handler sees its job end
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        cyclic = {o.f_code.co_name for o in gc.garbage if isinstance(o, types.FrameType)}
        assert not cyclic & {"_run", "transcribe", "begin", "load_audio"}, cyclic
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def test_a_cancelled_request_cancels_its_transcription(server, tmp_path, caplog):
    """Ray Serve's proxy cancels the request's task when its client goes (no disconnect message
    reaches the app): the transcription stops too, and its expected Cancelled is not logged."""
    import asyncio

    import soundfile as sf

    from scriba.app.server import audio_api
    from scriba.media.load import load_audio
    from scriba.transcription.options import TranscribeOptions

    _, served = server
    manager = served.loop(None).engine.block_manager
    long = tmp_path / "long.flac"
    sf.write(long, np.concatenate([load_audio(JFK), np.zeros(48000, np.float32)] * 24), 16000)

    class StillConnected:
        async def is_disconnected(self):
            return False

    async def cancelled_while_decoding():
        options = TranscribeOptions(model=None)
        task = asyncio.create_task(audio_api._run(StillConnected(), str(long), "long.flac", options))
        deadline = time.time() + 120  # a busy host may take seconds to read the file and find speech
        while manager.num_free() == manager.num_total():  # until its windows hold KV blocks
            assert not task.done() and time.time() < deadline, "the transcription never decoded"
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.time()

    cancelled = asyncio.run(cancelled_while_decoding())
    while manager.num_free() < manager.num_total() and time.time() < cancelled + 6:
        time.sleep(0.05)
    assert manager.num_free() == manager.num_total(), time.time() - cancelled
    assert "exception was never retrieved" not in caplog.text


def test_only_served_models_and_the_least_recently_used_engine_goes(tiny_whispers):
    from scriba.app.server.errors import APIError
    from scriba.runtime.loops import stats

    english, multilingual = tiny_whispers["english"][0], tiny_whispers["multilingual"][0]
    served = ServedModels([english, multilingual], None, max_loaded=1, num_kv_blocks=300)
    assert served.resolve("whisper-1", "whisper") == english
    assert served.resolve("whisper-1", "whisper", "translate") == multilingual
    with pytest.raises(APIError, match="not served here"):
        served.resolve("openai/whisper-large-v3", "whisper")
    first = served.loop(english)
    assert first.generate(
        [{"audio": (np.zeros(16000, np.float32), 16000)}], [scriba.SamplingParams(max_tokens=2)]
    )
    served.loop(multilingual)  # the English model's engine is closed and forgotten
    assert english not in [loop.model for loop in stats()] and not first._thread.is_alive()
    assert served.loop(english) is not first
