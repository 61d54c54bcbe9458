"""Models on demand in the server (speaches' routes): GET/POST/DELETE /api/ps, /v1/models with
what is loaded, an idle model unloaded after its TTL, an unload that waits for the request using
the model, and the loads and unloads in /metrics."""

import socket
import threading
import time

import httpx
import paths
import pytest

import scriba
from scriba.app.server.app import ServerSettings, asgi_app
from scriba.app.server.models import ServedModels

KEY = "models-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def server(tiny_whispers):
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    served = ServedModels([None, tiny_whispers["multilingual"][0]], None, num_kv_blocks=400)
    app = asgi_app(served, ServerSettings(api_key=KEY), preload=False)
    runner = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=runner.run, daemon=True).start()
    while not runner.started:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", tiny_whispers["multilingual"][0]
    runner.should_exit = True


def test_models_load_and_unload_through_api_ps(server):
    url, other = server
    ps = lambda: httpx.get(url + "/api/ps", headers=AUTH).json()["models"]  # noqa: E731
    assert httpx.get(url + "/api/ps").status_code == 401  # the routes want the key, as /v1 does
    httpx.delete(url + f"/api/ps/{other}", headers=AUTH)
    assert other not in ps()
    assert httpx.post(url + f"/api/ps/{other}", headers=AUTH, timeout=120).status_code == 201
    assert other in ps() and httpx.post(url + f"/api/ps/{other}", headers=AUTH).status_code == 409
    listed = {m["id"]: m["loaded"] for m in httpx.get(url + "/v1/models", headers=AUTH).json()["data"]}
    assert listed[other] is True and set(listed) >= {"whisper-1", "tiny.en", other}
    assert httpx.delete(url + f"/api/ps/{other}", headers=AUTH, timeout=120).status_code == 204
    assert other not in ps() and httpx.delete(url + f"/api/ps/{other}", headers=AUTH).status_code == 404
    unknown = httpx.post(url + "/api/ps/openai/whisper-large-v3", headers=AUTH)
    assert unknown.status_code == 404 and "not served here" in unknown.json()["error"]["message"]
    metrics = httpx.get(url + "/metrics").text
    assert f'scriba_model_loads_total{{model="{other}"}}' in metrics
    assert f'scriba_model_unloads_total{{model="{other}"}}' in metrics


def test_an_unload_waits_for_the_request_using_the_model(server):
    url, _ = server
    answers = []

    def transcribe():
        with open(paths.ROOT + "/assets/two_speakers.ogg", "rb") as f:
            answers.append(httpx.post(url + "/v1/audio/transcriptions", headers=AUTH, files={"file": f},
                                      data={"model": "tiny.en"}, timeout=300))

    asking = threading.Thread(target=transcribe)
    asking.start()
    deadline = time.time() + 120
    loaded = lambda: httpx.get(url + "/api/ps", headers=AUTH).json()["models"]  # noqa: E731
    while "tiny.en" not in loaded() and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # its windows are decoding
    gone = httpx.delete(url + "/api/ps/tiny.en", headers=AUTH, timeout=300)
    asking.join()
    assert gone.status_code == 204 and answers[0].status_code == 200, answers[0].text
    assert "golden fortune" in answers[0].json()["text"]


def test_an_idle_model_goes_after_its_ttl(tiny_whispers):
    model = tiny_whispers["english"][0]
    served = ServedModels([model], None, ttl=0.5, num_kv_blocks=200)
    served.start()
    try:
        _goes_and_comes_back(served, model)
    finally:
        served.stop()


def _goes_and_comes_back(served, model):
    bundled = scriba.transcribe(paths.JFK)  # not served here: its engine stays
    served.loop(model)
    assert served.loaded() == [model]
    deadline = time.time() + 10
    while served.loaded() and time.time() < deadline:
        time.sleep(0.1)
    assert served.loaded() == []
    scriba.transcribe(paths.JFK, model=model, num_kv_blocks=200)  # loaded on demand, again
    assert served.loaded() == [model]
    while served.loaded() and time.time() < deadline + 10:
        time.sleep(0.1)
    assert served.loaded() == [] and "tiny.en" in scriba.loaded_models() and bundled.text


def test_a_preload_must_be_served():
    with pytest.raises(ValueError, match="--preload 'base' is not a served model"):
        ServedModels([None], None, preload=["base"])
