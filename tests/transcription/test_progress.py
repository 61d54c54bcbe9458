"""Progress as transcribe() reports it: stages in order, a count that only grows, and windows
counted in part while they decode (the bar moves before the end)."""

import numpy as np
import paths

import scriba
from scriba.media.load import load_audio
from scriba.transcription.progress import ENCODED_SHARE, Progress, TqdmBar, window_fraction

JFK = paths.JFK
TS = 50363  # tiny.en's <|0.00|>


def test_progress_text_and_fraction():
    assert str(Progress("loading model")) == "loading model"
    assert str(Progress("transcribing", 2.6, 11)) == "transcribing window 3 of 11"
    assert str(Progress("transcribing", 11, 11)) == "transcribing window 11 of 11"
    assert Progress("transcribing", 2.75, 11).fraction == 0.25
    assert Progress("done").fraction == 1.0 and Progress("reading audio").fraction == 0.0


def test_a_running_window_counts_as_far_as_its_last_timestamp():
    assert window_fraction([], TS, 30.0) == ENCODED_SHARE  # encoded, no text yet
    assert window_fraction([TS, 300, 301, TS + 750], TS, 30.0) == ENCODED_SHARE + (1 - ENCODED_SHARE) * 0.5
    assert window_fraction([TS + 1500, 7], TS, 30.0) == 0.99  # never done until it finishes


def test_transcribe_reports_stages_and_growing_counts():
    jfk = load_audio(JFK)
    gap = np.zeros(3 * 16000, np.float32)
    audio = np.concatenate([jfk, gap] * 5)  # 70 s: five windows, cut in the pauses
    events = []
    # float32: the slower mode, so that windows are seen in part (reports come every 0.5 s)
    result = scriba.transcribe((audio, 16000), progress=events.append, dtype="float32")
    stages = [e.stage for e in events]
    assert stages[:4] == ["loading model", "reading audio", "finding speech", "transcribing"]
    assert stages[-1] == "done" and set(stages[4:-1]) == {"transcribing"}
    counts = [e.done for e in events if e.stage == "transcribing"]
    assert counts == sorted(counts)  # never goes back
    totals = {e.total for e in events[4:-1]}
    assert totals == {5}
    assert any(0 < e.fraction < 1 and e.done % 1 for e in events[4:-1])  # windows counted in part
    assert events[-1].done == 5 and result.text.count("fellow Americans") == 5


def test_the_cli_bar_follows_the_reports(capsys):
    bar = TqdmBar()
    bar(Progress("loading model"))
    bar(Progress("transcribing", 2.5, 10))
    assert bar.bar.n == 2.5 and bar.bar.total == 10 and "window 3 of 10" in bar.bar.desc
    bar(Progress("done", 10, 10))
    assert bar.bar.n == 10 and "done" in bar.bar.desc
