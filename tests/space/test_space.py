"""The Hugging Face Space: requirements.txt is pyproject.toml's dependencies, and the Space starts
and transcribes in an environment built the way a Space builds it (a fresh venv with only CPU torch,
gradio and requirements.txt), not in the test environment, which has every extra installed."""

import os
import pathlib
import socket
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from space_requirements import space_requirements  # noqa: E402


def test_requirements_are_pyprojects_dependencies():
    written = (ROOT / "requirements.txt").read_text()
    assert written == space_requirements(), "requirements.txt drifted: run python tools/space_requirements.py"
    assert "numba>=" in written and "gradio>=" in written  # (the server's extra is not the Space's)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def space_python(tmp_path_factory) -> str:
    venv = tmp_path_factory.mktemp("space") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    # --no-compile: byte-compiling every installed module took half the 107 s here; the app
    # compiles only what it imports, at its start (as a Space does on its first run).
    pip = [python, "-m", "pip", "install", "--quiet", "--no-compile"]
    install = [*pip, "torch==2.13.0", "gradio", "-r", "requirements.txt"]
    subprocess.run(install, cwd=ROOT, check=True, timeout=900)
    return python


def _wait_for(url_port: int, process: subprocess.Popen, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, f"app.py exited with {process.returncode}"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", url_port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(f"app.py did not listen within {seconds} s")


def test_the_space_starts_and_transcribes_jfk(space_python, tmp_path):
    from gradio_client import Client, handle_file

    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(port), HF_HUB_OFFLINE="1")
    log = tmp_path / "app.log"  # a file, not a pipe: an unread pipe would block the app once full
    with open(log, "w") as out:
        app = subprocess.Popen(
            [space_python, "app.py"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        _wait_for(port, app, 240)
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        jfk = handle_file(str(ROOT / "assets" / "jfk.flac"))
        language, transcript, *_ = client.predict(jfk, api_name="/transcribe")
        hints = client.predict(api_name="/lambda")  # the Summarize tab's notice, and the Transcribe tab's
        hint = " ".join(hints) if isinstance(hints, (list, tuple)) else hints
    except Exception as e:  # the app's own log says what went wrong inside it
        raise AssertionError(f"{e}\napp.py said:\n{log.read_text()[-4000:]}") from e
    finally:
        if app.poll() is None:
            app.terminate()
            app.wait(timeout=30)
    assert "english" in language.lower()
    assert "ask not what your country can do for you" in transcript.lower()
    assert hint.count("SCRIBA_SUMMARIZER") == (2 if isinstance(hints, (list, tuple)) else 1)
    assert "--summarizer" not in hint and "Summaries are off" in hint
