"""The offline multilingual base where users meet it: offered by default beside tiny.en when
the extra is installed, by name on the command line (`--model base`), and behind the server's
/v1/audio/translations through the official openai client."""

import json
import socket
import threading
import time

import numpy as np
import openai
import pytest
import soundfile as sf
from multilingual import clip

from scriba.app.cli.main import main
from scriba.app.server.app import ServerSettings, asgi_app
from scriba.app.server.models import ServedModels
from scriba.media.load import SAMPLE_RATE, load_audio

# Frequent English words that are not Spanish ones ("a" is both: a Spanish transcription has it)
ENGLISH = {"the", "of", "and", "to", "in", "that", "my", "you", "we", "our"}


@pytest.fixture(scope="module")
def spanish(tmp_path_factory):
    """The first 25 s of the Spanish reading (one window), as a WAV file."""
    path = tmp_path_factory.mktemp("es") / "spanish.wav"
    sf.write(path, load_audio(clip("es_")["path"])[: 25 * SAMPLE_RATE], SAMPLE_RATE)
    return str(path)


def english_share(text: str) -> float:
    words = text.lower().replace(",", " ").replace(".", " ").split()
    return sum(w in ENGLISH for w in words) / max(len(words), 1)


def test_cli_translates_spanish_with_base(spanish, capsys):
    assert main(["transcribe", spanish, "--model", "base", "--task", "translate"]) == 0
    text = capsys.readouterr().out
    assert english_share(text) > 0.15 and "Manuel" in text, text


def test_cli_json_reports_german(capsys):
    assert main(["transcribe", clip("de_")["path"], "--model", "base", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["language"] == "de" and result["language_probability"] > 0.9
    assert "Grimmelshausen" in result["text"] or "Christoffel" in result["text"]


@pytest.fixture(scope="module")
def server():
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    served = ServedModels([], None)  # no model named: the offline defaults
    config = uvicorn.Config(
        asgi_app(served, ServerSettings()), host="127.0.0.1", port=port, log_level="warning"
    )
    runner = uvicorn.Server(config)
    threading.Thread(target=runner.run, daemon=True).start()
    while not runner.started:
        time.sleep(0.05)
    yield openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="any", max_retries=0), served
    runner.should_exit = True


def test_the_server_offers_base_and_translates_with_it(server, spanish):
    client, served = server
    assert served.whisper == [None, "base"]
    assert {"whisper-1", "tiny.en", "base"} <= {m.id for m in client.models.list().data}
    for model in ("base", "whisper-1"):  # whisper-1 translates with base, not the English-only tiny.en
        with open(spanish, "rb") as f:
            v = client.audio.translations.create(model=model, file=f, response_format="verbose_json")
        assert v.task == "translate" and v.language == "spanish" and english_share(v.text) > 0.15, v.text
    with open(spanish, "rb") as f:
        text = client.audio.transcriptions.create(model="base", file=f, language="es").text
    assert "Manuel" in text and english_share(text) < 0.05
    with open(spanish, "rb") as f:
        with pytest.raises(openai.BadRequestError, match="English-only: it cannot translate"):
            client.audio.translations.create(model="tiny.en", file=f)


def test_silence_in_any_language_is_empty(server, tmp_path):
    client, _ = server
    path = tmp_path / "quiet.wav"
    sf.write(path, np.zeros(3 * SAMPLE_RATE, np.float32), SAMPLE_RATE)
    with open(path, "rb") as f:
        assert client.audio.transcriptions.create(model="base", file=f).text == ""
