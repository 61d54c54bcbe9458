"""The first step's compiled kernels, loaded ahead of it.

On the CPU the decode attention and a model family's logits rules are numba kernels; loading them
in a fresh process (numba's own start, then each kernel from its cache) takes 0.3-0.4 s, most
of it Python under the GIL. Started when the engine is built, the loading overlaps the first
request's audio reading and encoder (which release the GIL): a cold first transcript is
0.1-0.2 s sooner (`python -m benchmarks cold-start`). Backends and request processings without
such kernels load nothing.
"""

from __future__ import annotations

import logging
import threading

logger = logging.getLogger("scriba")


def preload_kernels(runner, request_processing) -> threading.Thread:
    """Load `runner`'s backend kernels for its KV cache and `request_processing`'s logits-rule
    kernels on a thread of their own; returns it. Not a daemon: a process that exits mid-load
    must wait for it rather than abort."""

    def load() -> None:
        try:
            runner.load_kernels()
            request_processing.load_kernels(runner.device)
        except Exception as e:  # the first step then loads them itself, and says why not
            logger.warning("preloading the compiled kernels failed: %s", e)

    thread = threading.Thread(target=load, name="scriba-kernel-preload")
    thread.start()
    return thread
