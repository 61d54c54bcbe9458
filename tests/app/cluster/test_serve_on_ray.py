"""`scriba serve --ray`: the OpenAI-compatible server as a Ray Serve deployment (2 replicas on a
local Ray), answering the official `openai` client as the plain server does."""

from __future__ import annotations

import http.client
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import paths
import pytest
from openai import OpenAI

import scriba

JFK = paths.JFK


def free_port() -> int:
    """A free port below the kernel's ephemeral range (32768 up), from which Ray's own servers
    take theirs as it starts: an ephemeral one could be taken by Ray before Serve binds it."""
    for port in random.Random().sample(range(20000, 30000), 200):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 20000-29999")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    port = free_port()
    command = [sys.executable, "-m", "scriba.app.cli.main", "serve", "--ray", "--replicas", "2"]
    command += ["--port", str(port), "--api-key", "k"]
    log = open(tmp_path_factory.mktemp("serve") / "log", "w+")  # a file: a full pipe would stall it
    # Started with SIGINT ignored, as a shell's background job is: Ctrl-C must still stop it.
    ignore_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # noqa: E731
    process = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, text=True, preexec_fn=ignore_sigint
    )
    deadline = time.monotonic() + 240
    while True:
        assert process.poll() is None, open(log.name).read()[-3000:]
        assert time.monotonic() < deadline, "the deployment did not come up"
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
            break
        except (OSError, http.client.HTTPException):  # not up yet
            time.sleep(0.5)
    yield port, process
    process.send_signal(signal.SIGINT)
    # Ray stops two replicas (and its own processes) in well under a minute on a quiet machine;
    # with the other test worker busy on the same two cores it has taken over one.
    assert process.wait(timeout=180) == 130, open(log.name).read()[-3000:]  # "scriba: interrupted"
    log.close()


def test_the_deployment_answers_the_openai_client(served):
    port, _ = served
    client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
    want = scriba.transcribe(JFK)
    for _ in range(4):  # several requests: the proxy spreads them over the replicas
        with open(JFK, "rb") as f:
            got = client.audio.transcriptions.create(
                model="whisper-1", file=f, response_format="verbose_json"
            )
        assert got.text == want.text
        assert [s.text for s in got.segments] == [s.text for s in want.segments]
    # No --model: the offline defaults, tiny.en and (the tests install the multilingual extra) base.
    assert {m.id for m in client.models.list()} == {"whisper-1", "tiny.en", "base"}


def test_errors_keep_openais_shape_through_the_proxy(served, tmp_path):
    port, _ = served
    import openai

    wrong_key = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="nope", max_retries=0)
    with open(JFK, "rb") as f, pytest.raises(openai.AuthenticationError):
        wrong_key.audio.transcriptions.create(model="whisper-1", file=f)
    client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
    bad = tmp_path / "notes.wav"
    bad.write_bytes(b"not audio")
    with open(bad, "rb") as f, pytest.raises(openai.APIStatusError, match="not an audio file") as error:
        client.audio.transcriptions.create(model="whisper-1", file=f)
    assert error.value.status_code == 415 and error.value.body["code"] == "invalid_file"
