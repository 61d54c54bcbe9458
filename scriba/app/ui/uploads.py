"""The page's limits, and uploads checked the moment they arrive: an empty file, one that is not
audio or one that is too long gets a one-line message naming the file as the user named it.
User mistakes are logged as one line, never as a traceback."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time

from scriba.app.ui.text import say_duration
from scriba.media.load import AudioError, probe_duration

MAX_UPLOAD = "200mb"
MAX_AUDIO_SECONDS = 2 * 60 * 60
MAX_TEXT_CHARS = 200_000

log = logging.getLogger("scriba.ui")
KEEP_SECONDS = 60 * 60  # downloads and recordings stay this long, then are deleted
_folders: list[tuple[float, str]] = []  # this process's scratch folders, oldest first
_folders_lock = threading.Lock()


def scratch_folder(prefix: str) -> str:
    """A new temporary folder for results to download; this process's folders older than
    KEEP_SECONDS are deleted as new ones are made."""
    now = time.time()
    with _folders_lock:
        while _folders and now - _folders[0][0] > KEEP_SECONDS:
            shutil.rmtree(_folders.pop(0)[1], ignore_errors=True)
        folder = tempfile.mkdtemp(prefix=prefix)
        _folders.append((now, folder))
    return folder


def user_error(message: str):
    """A gr.Error for a user's mistake: shown on the page, one line in the log."""
    import gradio as gr

    log.info("refused: %s", message)
    return gr.Error(message, print_exception=False)


def audio_problem(path: str | None) -> str | None:
    """Why the uploaded file at `path` cannot be transcribed (one line), or None if it can. Its
    length comes from the container's header: nothing is decoded."""
    if not path:
        return "Upload or record some audio first."
    name = os.path.basename(path)  # the page keeps the user's file name
    try:
        seconds = probe_duration(path, name)
    except (AudioError, FileNotFoundError) as e:
        return f"{e}."
    if seconds is not None and seconds > MAX_AUDIO_SECONDS:
        return (
            f"{name} is {say_duration(seconds)} long; this app takes up to {say_duration(MAX_AUDIO_SECONDS)}."
        )
    return None


def check_upload(path: str | None):
    """On upload: (the audio component's value, the notice line). A bad file is taken off the
    page at once, with the reason beside it."""
    import gradio as gr

    if not path:
        return gr.update(), ""
    problem = audio_problem(path)
    if problem is None:
        return gr.update(), ""
    log.info("refused upload: %s", problem)
    gr.Warning(problem)
    return None, f"⚠️ {problem}"
