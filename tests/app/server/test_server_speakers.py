"""Speakers through the OpenAI-compatible server and the official `openai` client: diarized_json
in OpenAI's shape, speakers named from reference clips sent as data URLs, speakers in
verbose_json and the text formats, the streamed segment events, and bad requests answered 400
while the server keeps serving."""

import base64
import json
import socket
import threading
import time

import httpx
import openai
import paths
import pytest
import soundfile as sf
from speakers import REFERENCES, clip, conversation, speaker_at

from scriba.app.server.app import ServerSettings, asgi_app
from scriba.app.server.models import ServedModels

KEY = "test-key"


@pytest.fixture(scope="module")
def server():
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = ServerSettings(api_key=KEY, max_upload_bytes=8 * 2**20, max_audio_seconds=600)
    app = asgi_app(ServedModels([None], None), settings)
    runner = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=runner.run, daemon=True).start()
    while not runner.started:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    runner.should_exit = True


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server + "/v1", api_key=KEY, max_retries=0)


@pytest.fixture(scope="module")
def talk(tmp_path_factory):
    wave, reference = conversation()
    path = tmp_path_factory.mktemp("talk") / "talk.wav"
    sf.write(path, wave, 16000)
    return path, reference


def data_url(name: str) -> str:
    with open(clip(name), "rb") as f:
        return "data:audio/ogg;base64," + base64.b64encode(f.read()).decode()


def agreement(segments, reference, mapping) -> float:
    scored = [(speaker_at(reference, (s.start + s.end) / 2), s.speaker) for s in segments]
    scored = [(truth, who) for truth, who in scored if truth]
    return sum(mapping.get(who) == truth for truth, who in scored) / len(scored)


def test_diarized_json_in_openai_s_shape(client, talk):
    path, reference = talk
    with open(path, "rb") as f:
        d = client.audio.transcriptions.create(model="whisper-1", file=f, response_format="diarized_json")
    assert type(d).__name__ == "TranscriptionDiarized" and d.task == "transcribe"
    assert d.segments[0].speaker == "A" and {s.speaker for s in d.segments} == {"A", "B"}
    assert all(s.type == "transcript.text.segment" and s.id == f"seg_{i}" for i, s in enumerate(d.segments))
    assert agreement(d.segments, reference, {"A": "ljspeech", "B": "librispeech_61"}) >= 0.95
    assert d.usage.type == "duration" and d.usage.seconds == pytest.approx(d.duration)


def test_known_speakers_name_the_voices(client, talk):
    path, reference = talk
    with open(path, "rb") as f:
        d = client.audio.transcriptions.create(
            model="whisper-1",
            file=f,
            response_format="diarized_json",
            known_speaker_names=["Sam", "Linda"],
            known_speaker_references=[
                data_url(REFERENCES["librispeech_61"]), data_url(REFERENCES["ljspeech"])
            ],
        )
    assert {s.speaker for s in d.segments} == {"Linda", "Sam"}
    assert agreement(d.segments, reference, {"Linda": "ljspeech", "Sam": "librispeech_61"}) >= 0.95


def test_the_voice_library_names_the_voices_unless_the_request_says_not(client, talk, monkeypatch, tmp_path):
    import scriba

    path, reference = talk
    monkeypatch.setenv("SCRIBA_DATA", str(tmp_path))
    scriba.remember_voice("Linda", clip(REFERENCES["ljspeech"]))
    for extra, mapping in [({}, {"Linda": "ljspeech", "A": "librispeech_61"}),
                           ({"use_voice_library": "false"}, {"A": "ljspeech", "B": "librispeech_61"})]:
        with open(path, "rb") as f:
            d = client.audio.transcriptions.create(
                model="whisper-1", file=f, response_format="diarized_json", extra_body=extra
            )
        assert {s.speaker for s in d.segments} == set(mapping)
        assert agreement(d.segments, reference, mapping) >= 0.95


def test_speakers_in_verbose_json_and_the_text_formats(client, talk):
    path, reference = talk
    with open(path, "rb") as f:
        v = client.audio.transcriptions.create(
            model="whisper-1",
            file=f,
            response_format="verbose_json",
            timestamp_granularities=["word", "segment"],
            extra_body={"diarize": "true", "num_speakers": "2"},
        ).model_dump()
    assert [p["speaker"] for p in v["speakers"]] == ["SPEAKER_00", "SPEAKER_01"]
    assert {s["speaker"] for s in v["segments"]} == {"SPEAKER_00", "SPEAKER_01"}
    assert all(w["speaker"] in ("SPEAKER_00", "SPEAKER_01") for w in v["words"])
    for fmt, first in [("text", "[SPEAKER_00]: "), ("srt", "1\n00:00:00,000 --> "), ("vtt", "WEBVTT")]:
        with open(path, "rb") as f:
            body = client.audio.transcriptions.create(
                model="whisper-1", file=f, response_format=fmt, extra_body={"diarize": "true"}
            )
        assert body.startswith(first) and "[SPEAKER_01]: " in body, (fmt, body)


def test_the_stream_ends_with_the_labelled_segments(server, talk):
    path, reference = talk
    with open(path, "rb") as f:
        r = httpx.post(
            server + "/v1/audio/transcriptions",
            files={"file": ("talk.wav", f)},
            data={"model": "whisper-1", "response_format": "diarized_json", "stream": "true"},
            headers={"Authorization": f"Bearer {KEY}"},
            timeout=120,
        )
    events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "transcript.text.delta" and kinds[-1] == "transcript.text.done"
    segments = [e for e in events if e["type"] == "transcript.text.segment"]
    assert segments and {s["speaker"] for s in segments} == {"A", "B"}
    assert "".join(s["text"] for s in segments).strip() == events[-1]["text"]


@pytest.mark.parametrize("fields, param, message", [
    ({"known_speaker_names[]": ["Sam", "Linda"],
      "known_speaker_references[]": ["data:audio/ogg;base64,AAAA"]},
     "known_speaker_names[]", "2 known_speaker_names[] but 1 known_speaker_references[]"),
    ({"known_speaker_names[]": ["Sam"], "known_speaker_references[]": ["https://example.com/sam.wav"]},
     "known_speaker_references[]", "known_speaker_references[0] must be a data URL"),
    ({"known_speaker_names[]": ["Sam"],
      "known_speaker_references[]": ["data:audio/wav;base64," + base64.b64encode(b"no audio here").decode()]},
     "known_speaker_references[]", "known speaker 'Sam': the reference clip is not usable"),
    ({"num_speakers": "0", "diarize": "true"}, "num_speakers",
     "num_speakers must be a whole number of at least 1"),
    ({"min_speakers": "3", "max_speakers": "2"}, "min_speakers",
     "min_speakers (3) is more than max_speakers (2)"),
    ({"num_speakers": "two"}, "num_speakers", "num_speakers must be a whole number, got 'two'"),
    ({"use_voice_library": "maybe"}, "use_voice_library", "use_voice_library must be true or false, got"),
])
def test_bad_speaker_requests_are_400s_and_the_server_keeps_serving(server, client, fields, param, message):
    with open(paths.JFK, "rb") as f:
        r = httpx.post(
            server + "/v1/audio/transcriptions",
            files={"file": ("jfk.flac", f)},
            data={"model": "whisper-1", "response_format": "diarized_json", **fields},
            headers={"Authorization": f"Bearer {KEY}"},
            timeout=60,
        )
    error = r.json()["error"]
    assert r.status_code == 400 and error["param"] == param and error["message"].startswith(message), error
    with open(paths.JFK, "rb") as f:
        assert "fellow Americans" in client.audio.transcriptions.create(model="whisper-1", file=f).text


def test_openai_s_letters_count_the_unnamed_voices_only():
    from scriba.app.server.speakers_api import letter

    order = ["Linda", "SPEAKER_00", "SPEAKER_01"] + [f"SPEAKER_{i:02d}" for i in range(2, 30)]
    assert [letter(n, order) for n in order[:4]] == ["Linda", "A", "B", "C"]
    assert letter("SPEAKER_26", order) == "AA" and letter(None, order) is None
