"""One engine per model per process, created on first use and shared by every caller.

An Engine is driven by one thread at a time: `using(engine)` is the lock callers hold while
they run requests through it (calls from many threads take turns; batching them together
in one background loop is the next step).
"""

from __future__ import annotations

import threading

from scriba.engine.engine import Engine

_engines: dict[tuple, Engine] = {}
_locks: dict[int, threading.Lock] = {}
_lock = threading.Lock()


def get_engine(model: str | None = None, **config) -> Engine:
    """The shared engine for `model` (None: the bundled Whisper tiny.en) and these settings."""
    key = (model, tuple(sorted(config.items())))
    with _lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = Engine(model, **config)
        return engine


def using(engine: Engine) -> threading.Lock:
    with _lock:
        return _locks.setdefault(id(engine), threading.Lock())
