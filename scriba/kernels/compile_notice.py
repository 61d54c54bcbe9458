"""A line on stderr when a kernel's first call takes a while: on a fresh machine the CPU path's
numba kernels are compiled for this CPU on their first use (seconds to tens of seconds on two
cores) before numba's cache keeps them; a user should not wait on a silent terminal."""

from __future__ import annotations

import contextlib
import logging
import os
import threading

logger = logging.getLogger("scriba")
NOTICE_AFTER = 1.0  # seconds a first call may take unannounced (loading from numba's cache: ~0.1 s)
MESSAGE = "compiling the CPU kernels for this machine: the first run only, numba's cache keeps them"
_said = threading.Event()


@contextlib.contextmanager
def compile_notice(first_call: bool):
    """Around a kernel's call: when it is the kernel's first in this process and it takes over
    NOTICE_AFTER seconds, MESSAGE is logged (once per process, at warning level: shown by default)."""
    if not first_call or _said.is_set():
        yield
        return
    timer = threading.Timer(NOTICE_AFTER, _say)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def compiles(kernel) -> bool:
    """Whether calling a numba `kernel` now compiles it: nothing compiled in this process and
    nothing in numba's cache for it (a kernel numba does not cache: nothing compiled yet)."""
    if getattr(kernel, "signatures", None):
        return False
    try:
        return not os.path.exists(kernel._cache._cache_file._index_path)
    except AttributeError:
        return True


def _say() -> None:
    if not _said.is_set():
        _said.set()
        logger.warning(MESSAGE)
