"""A kernel's slow first call says what is happening (a fresh machine compiles the CPU kernels);
a quick one, a later one, or a kernel already compiled says nothing."""

import logging
import time

import scriba.kernels.compile_notice as notice
from scriba.kernels.cpu_paged_attention import launch


class Kernel:
    def __init__(self, seconds, compiled=False):
        self.seconds, self.signatures = seconds, ["(float32,)"] if compiled else []

    def __call__(self):
        time.sleep(self.seconds)
        self.signatures.append("(float32,)")


def test_a_slow_first_call_is_announced_once(caplog, monkeypatch):
    monkeypatch.setattr(notice, "_said", type(notice._said)())
    monkeypatch.setattr(notice, "NOTICE_AFTER", 0.2)
    with caplog.at_level(logging.WARNING, logger="scriba"):
        launch(Kernel(0.05), ())  # quick: loaded from the cache
        launch(Kernel(0.6, compiled=True), ())  # slow, but not its first call
        assert notice.MESSAGE not in caplog.text
        launch(Kernel(0.6), ())
        launch(Kernel(0.6), ())
    assert caplog.text.count(notice.MESSAGE) == 1
